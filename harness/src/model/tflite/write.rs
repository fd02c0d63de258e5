//! Writes a [`Model`] as a `.tflite` flatbuffer with the `flatbuffers`
//! crate's builder: the synthetic models of the analyzer's tests and
//! benchmark, and an independent check of the reader (what one writes, the
//! other must read back unchanged). Buffers are written zero-filled, but
//! for the offline plan's and those whose bytes the caller gives
//! ([`Extras`], with option fields the reader does not keep).

use std::collections::BTreeMap;

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use super::{offline, Model, Quantization, Subgraph, Tensor, Window, OFFLINE_PLAN};

/// The vtable slot of field `index`.
const fn slot(index: u16) -> u16 {
    4 + 2 * index
}

pub fn write(model: &Model) -> Vec<u8> {
    write_with(model, &Extras::default())
}

/// What a model holds beyond what the reader keeps, for [`write_with`].
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// The bytes of buffers by index (a constant tensor's values), each as
    /// long as the model says its buffer is.
    pub buffers: BTreeMap<usize, Vec<u8>>,
    /// Fields of operators' options tables, by the operator's index in the
    /// first subgraph: (vtable field, value), for options other than a
    /// window's (a count, a block or filter size, an activation).
    pub options: BTreeMap<usize, Vec<(u16, Field)>>,
}

/// An option field's value, as wide as the schema declares the field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field {
    Int(i32),
    /// A byte: a bool, or an enum such as an activation.
    Byte(u8),
    /// A float, such as SOFTMAX's beta.
    Float(f32),
}

/// As [`write`], with `extras`.
pub fn write_with(model: &Model, extras: &Extras) -> Vec<u8> {
    let mut fb = FlatBufferBuilder::new();
    let codes: Vec<_> = model
        .operator_codes
        .iter()
        .map(|code| {
            let custom = code.custom.as_deref().map(|c| fb.create_string(c));
            let t = fb.start_table();
            fb.push_slot_always(slot(0), code.builtin.min(127) as i8);
            if let Some(custom) = custom {
                fb.push_slot_always(slot(1), custom);
            }
            fb.push_slot(slot(2), code.version, 1);
            fb.push_slot(slot(3), code.builtin, 0);
            fb.end_table(t)
        })
        .collect();
    let codes = fb.create_vector(&codes);
    let none = BTreeMap::new();
    let subgraphs: Vec<_> = model
        .subgraphs
        .iter()
        .enumerate()
        .map(|(i, sg)| subgraph(&mut fb, sg, if i == 0 { &extras.options } else { &none }))
        .collect();
    let subgraphs = fb.create_vector(&subgraphs);
    let description = model.description.as_deref().map(|d| fb.create_string(d));
    let plan = model.metadata.iter().find(|(name, _)| name == OFFLINE_PLAN).map(|&(_, b)| b as usize);
    let buffers: Vec<_> = model
        .buffers
        .iter()
        .enumerate()
        .map(|(b, &len)| {
            let bytes = match (&model.offline_plan, plan, extras.buffers.get(&b)) {
                (Some(offsets), Some(p), _) if p == b => offline::encode(offsets),
                (_, _, Some(bytes)) => {
                    assert_eq!(bytes.len(), len, "the data given for buffer {b}");
                    bytes.clone()
                }
                _ => vec![0u8; len],
            };
            let data = (!bytes.is_empty()).then(|| fb.create_vector(&bytes));
            let t = fb.start_table();
            if let Some(data) = data {
                fb.push_slot_always(slot(0), data);
            }
            fb.end_table(t)
        })
        .collect();
    let buffers = fb.create_vector(&buffers);
    let metadata: Vec<_> = model
        .metadata
        .iter()
        .map(|(name, buffer)| {
            let name = fb.create_string(name);
            let t = fb.start_table();
            fb.push_slot_always(slot(0), name);
            fb.push_slot(slot(1), *buffer, 0);
            fb.end_table(t)
        })
        .collect();
    let metadata = fb.create_vector(&metadata);
    let root = fb.start_table();
    fb.push_slot(slot(0), model.version, 0);
    fb.push_slot_always(slot(1), codes);
    fb.push_slot_always(slot(2), subgraphs);
    if let Some(description) = description {
        fb.push_slot_always(slot(3), description);
    }
    fb.push_slot_always(slot(4), buffers);
    fb.push_slot_always(slot(6), metadata);
    let root = fb.end_table(root);
    fb.finish(root, Some("TFL3"));
    fb.finished_data().to_vec()
}

fn subgraph<'a>(
    fb: &mut FlatBufferBuilder<'a>,
    sg: &Subgraph,
    option_fields: &BTreeMap<usize, Vec<(u16, Field)>>,
) -> WIPOffset<flatbuffers::TableFinishedWIPOffset> {
    let tensors: Vec<_> = sg.tensors.iter().map(|t| tensor(fb, t)).collect();
    let tensors = fb.create_vector(&tensors);
    let inputs = fb.create_vector(&sg.inputs);
    let outputs = fb.create_vector(&sg.outputs);
    let operators: Vec<_> = sg
        .operators
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let inputs = fb.create_vector(&op.inputs);
            let outputs = fb.create_vector(&op.outputs);
            let names = op.variable.as_ref().map(|names| names.clone().map(|n| n.map(|n| fb.create_string(&n))));
            let options = (op.options != 0).then(|| {
                let t = fb.start_table();
                for (field, name) in names.iter().flatten().enumerate() {
                    if let Some(name) = name {
                        fb.push_slot_always(slot(field as u16), *name);
                    }
                }
                if let (Some(w), Some([padding, stride_w, stride_h, dilation_w, dilation_h])) =
                    (op.window, Window::fields(op.options))
                {
                    let field = |i: usize| slot(i as u16);
                    fb.push_slot_always(field(padding), u8::from(!w.same));
                    fb.push_slot_always(field(stride_w), w.stride[1]);
                    fb.push_slot_always(field(stride_h), w.stride[0]);
                    fb.push_slot_always(field(dilation_w), w.dilation[1]);
                    fb.push_slot_always(field(dilation_h), w.dilation[0]);
                }
                if let Some(adjoint) = op.adjoint {
                    fb.push_slot_always(slot(0), u8::from(adjoint[0]));
                    fb.push_slot_always(slot(1), u8::from(adjoint[1]));
                }
                for &(field, value) in option_fields.get(&i).into_iter().flatten() {
                    match value {
                        Field::Int(value) => fb.push_slot_always(slot(field), value),
                        Field::Byte(value) => fb.push_slot_always(slot(field), value),
                        Field::Float(value) => fb.push_slot_always(slot(field), value),
                    }
                }
                fb.end_table(t)
            });
            let t = fb.start_table();
            fb.push_slot(slot(0), op.opcode_index, 0);
            fb.push_slot_always(slot(1), inputs);
            fb.push_slot_always(slot(2), outputs);
            if let Some(options) = options {
                fb.push_slot_always(slot(3), op.options);
                fb.push_slot_always(slot(4), options);
            }
            fb.end_table(t)
        })
        .collect();
    let operators = fb.create_vector(&operators);
    let t = fb.start_table();
    fb.push_slot_always(slot(0), tensors);
    fb.push_slot_always(slot(1), inputs);
    fb.push_slot_always(slot(2), outputs);
    fb.push_slot_always(slot(3), operators);
    fb.end_table(t)
}

fn tensor<'a>(fb: &mut FlatBufferBuilder<'a>, t: &Tensor) -> WIPOffset<flatbuffers::TableFinishedWIPOffset> {
    let shape = fb.create_vector(&t.shape);
    let name = fb.create_string(&t.name);
    let quantization = (t.quantization != Quantization::default()).then(|| {
        let scale = fb.create_vector(&t.quantization.scale);
        let zero_point = fb.create_vector(&t.quantization.zero_point);
        let q = fb.start_table();
        fb.push_slot_always(slot(2), scale);
        fb.push_slot_always(slot(3), zero_point);
        fb.push_slot(slot(6), t.quantization.dimension, 0);
        fb.end_table(q)
    });
    let table = fb.start_table();
    fb.push_slot_always(slot(0), shape);
    fb.push_slot(slot(1), t.kind, 0);
    fb.push_slot(slot(2), t.buffer, 0);
    fb.push_slot_always(slot(3), name);
    if let Some(q) = quantization {
        fb.push_slot_always(slot(4), q);
    }
    fb.push_slot(slot(5), t.is_variable, false);
    fb.end_table(table)
}
