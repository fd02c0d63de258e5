//! The tail replayed as TFLM allocates it for one model: the objects,
//! each operator's parsed options and its kernel's allocations, the
//! variables and the tensors the interpreter keeps; and what `Prepare`
//! borrows beside it.

use std::collections::BTreeMap;

use crate::model::planner::{Planner, Scratch, BUFFER_ALIGNMENT};
use crate::model::tail::cmsis_nn::{self, KernelPath};
use crate::model::tail::{Layout, Tail};
use crate::model::tflite::{Model, ReadError, Tensor, FLOAT32, INT16, INT4, INT8};
use crate::tflm::tree::Generation;

use super::kernels::{kernel_of, temporaries, Prepare};
use super::variables::variables;
use super::{
    AFFINE_QUANTIZATION, ARENA_ALLOCATOR, BUILTIN_DATA_ALLOCATOR, EVAL_TENSOR, LINEAR_PLANNER, MICRO_ALLOCATOR,
    NODE_AND_REGISTRATION, PLANNER, RECORDING_ARENA_ALLOCATOR, RECORDING_MICRO_ALLOCATOR, REQUESTS_AHEAD,
    RESOURCE_VARIABLE, RESOURCE_VARIABLES, RESOURCE_VARIABLE_2023, SCRATCH_HANDLE, SCRATCH_REQUEST,
    SUBGRAPH_ALLOCATIONS, TENSOR,
};

/// `LUTSize<int16_t>()`: entries of each int16 softmax table.
pub(super) const INT16_TABLE_ENTRIES: usize = 513;

/// Which allocator hilmem's firmware builds the interpreter over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocator {
    /// TFLM's own: what every measurement runs on.
    Plain,
    /// TFLM's recording allocator, for its breakdown of the arena: larger
    /// objects, the same allocations after them.
    Recording,
}

impl Allocator {
    /// The objects at the arena's end before the model's allocations, with
    /// `planner`'s object (the offline plan is the greedy planner's input).
    fn objects(self, planner: Planner) -> [Layout; 3] {
        let planner = match planner {
            Planner::Greedy | Planner::Offline => PLANNER,
            Planner::Linear => LINEAR_PLANNER,
        };
        match self {
            Allocator::Plain => [ARENA_ALLOCATOR, planner, MICRO_ALLOCATOR],
            Allocator::Recording => [RECORDING_ARENA_ALLOCATOR, planner, RECORDING_MICRO_ALLOCATOR],
        }
    }
}

/// Allocations of one of TFLM's recorded types, as its recording allocator
/// counts them: bytes taken with alignment, bytes asked for, and how many
/// (an array of nodes or tensors counts each element).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocations {
    pub used: usize,
    pub requested: usize,
    pub count: usize,
}

/// The tail, the scratch buffers the plan must hold beside the tensors, and
/// the tail by TFLM's recorded allocation type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// What TFLM reports as its tail usage.
    pub bytes: usize,
    pub scratch: Vec<Scratch>,
    /// By the names the firmware prints the recording allocator's types
    /// under; what TFLM does not record (its allocator objects, operator
    /// options, scratch handles) is in `bytes` only.
    pub recorded: BTreeMap<&'static str, Allocations>,
    /// What `AllocateTensors` borrows on the way (see [`least_arena`]).
    pub borrowing: Borrowing,
}

/// The points of `AllocateTensors` where it borrows room beside the tail
/// then standing: the temporary tensors each kernel's `Prepare` holds above
/// the head of scratch-buffer requests, and the planner's arrays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Borrowing {
    /// The operator whose `Prepare` reaches highest.
    pub prepare: Option<PrepareHigh>,
    /// Scratch buffers requested by all kernels.
    pub requests: usize,
    /// The tail while it plans (with the variables).
    pub planning_tail: usize,
}

/// One operator's `Prepare`: its step, the head of requests made before
/// it, its temporaries' bytes, and the tail once it is prepared (what it
/// allocates must stay clear of its temporaries, which it holds to the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareHigh {
    pub step: usize,
    pub requests_head: usize,
    pub temporaries: usize,
    pub tail: usize,
}

impl PrepareHigh {
    pub(super) fn bytes(&self) -> usize {
        self.requests_head + self.temporaries + self.tail
    }
}

/// The tail as TFLM's recording allocator would account for it.
#[derive(Default)]
pub(super) struct Recorder {
    tail: Tail,
    recorded: BTreeMap<&'static str, Allocations>,
}

impl Recorder {
    /// One allocation of `bytes` holding `count` things, recorded under
    /// `kind` when TFLM records it.
    fn alloc(&mut self, kind: Option<&'static str>, bytes: usize, align: usize, count: usize) {
        let before = self.tail.0;
        self.tail.alloc(bytes, align);
        if let Some(kind) = kind {
            let a = self.recorded.entry(kind).or_default();
            a.used += self.tail.0 - before;
            a.requested += bytes;
            a.count += count;
        }
    }

    fn place(&mut self, kind: Option<&'static str>, l: Layout, count: usize) {
        self.alloc(kind, l.bytes * count, l.align, count);
    }

    /// A kernel's (or the interpreter's) `AllocatePersistentBuffer`.
    fn persistent_buffer(&mut self, bytes: usize) {
        self.alloc(Some("persistent_buffers"), bytes, BUFFER_ALIGNMENT, 1);
    }
}

/// The persistent tail a TFLM of generation `tflm` (today's allocator)
/// allocates for `model` over `allocator` with `kernels`, whose operators
/// all have a kernel the prediction knows (see [`not_predicted`]).
pub fn predict(
    model: &Model,
    allocator: Allocator,
    planner: Planner,
    kernels: KernelPath,
    tflm: Generation,
) -> Result<Prediction, ReadError> {
    let mut tail = Recorder::default();
    for object in allocator.objects(planner) {
        tail.place(None, object, 1);
    }
    replay(model, tail, kernels, tflm)
}

/// The tail once `model` has joined an arena whose allocator already holds
/// `before` bytes of other models' tail (TFLM's multi-tenant allocation):
/// its allocations follow on from there, and the allocator's objects are
/// not made again.
pub fn predict_joining(
    model: &Model,
    before: usize,
    kernels: KernelPath,
    tflm: Generation,
) -> Result<Prediction, ReadError> {
    replay(model, Recorder { tail: Tail(before), recorded: BTreeMap::new() }, kernels, tflm)
}

/// `model`'s allocations with `tflm`'s `kernels`, from where `tail` stands.
pub(super) fn replay(
    model: &Model,
    mut tail: Recorder,
    kernel_path: KernelPath,
    tflm: Generation,
) -> Result<Prediction, ReadError> {
    let err = |why: String| ReadError { at: "tail", why };
    let sg = model.subgraphs.first().ok_or_else(|| err("the model has no subgraph".into()))?;
    let tensor = |i: i32| usize::try_from(i).ok().and_then(|i| sg.tensors.get(i));
    let mut kernels = Vec::with_capacity(sg.operators.len());
    for op in &sg.operators {
        let code = model.operator_codes.get(op.opcode_index as usize);
        let kernel = code.and_then(|c| kernel_of(c, kernel_path, tflm));
        kernels.push(kernel.ok_or_else(|| err(format!("no known kernel for operator code {code:?}")))?);
    }
    // The firmware's resource variables, made over the allocator before the
    // interpreter: the object, then room for a variable per handle.
    let variables = variables(model).map_err(err)?;
    if variables.handles > 0 {
        tail.persistent_buffer(RESOURCE_VARIABLES.bytes);
        let variable = if tflm == Generation::Tflm2023 { RESOURCE_VARIABLE_2023 } else { RESOURCE_VARIABLE };
        tail.persistent_buffer(variable.bytes * variables.handles);
    }
    let mut assigned = std::collections::BTreeSet::new();
    for object in [BUILTIN_DATA_ALLOCATOR, SUBGRAPH_ALLOCATIONS] {
        tail.place(None, object, 1);
    }
    tail.place(Some("eval_tensors"), EVAL_TENSOR, sg.tensors.len());
    tail.place(Some("node_and_registrations"), NODE_AND_REGISTRATION, sg.operators.len());
    for options in kernels.iter().filter_map(|k| k.options) {
        tail.place(None, options, 1);
    }
    for op_data in kernels.iter().filter_map(|k| k.op_data) {
        tail.persistent_buffer(op_data.bytes);
    }
    let mut scratch = Vec::new();
    let mut prepare: Option<PrepareHigh> = None;
    for (step, (op, kernel)) in sg.operators.iter().zip(&kernels).enumerate() {
        let input = |i: usize| op.inputs.get(i).and_then(|&t| tensor(t));
        let output = op.outputs.first().and_then(|&t| tensor(t));
        let missing = |what: &str| err(format!("operator {step} has no {what}"));
        let requests_before = scratch.len();
        let mut request = |bytes: usize| scratch.push(Scratch { step: step as i32, bytes });
        if kernel.copies_output_dims {
            tail.persistent_buffer(4 + 4 * output.ok_or_else(|| missing("output"))?.shape.len());
        }
        let mut per_channel = |channels: usize| {
            tail.persistent_buffer(4 * channels);
            tail.persistent_buffer(4 * channels);
        };
        match kernel.prepare {
            Prepare::Nothing => {}
            Prepare::PerChannel { dim } => {
                let filter = input(1).ok_or_else(|| missing("filter"))?;
                per_channel(channels(filter, dim)?);
                if filter.kind == INT4 {
                    request(elements(filter)?);
                }
            }
            Prepare::PerChannelWhenQuantized => {
                let (input, filter) =
                    (input(0).ok_or_else(|| missing("input"))?, input(1).ok_or_else(|| missing("filter"))?);
                if input.kind != FLOAT32 && filter.quantization.scale.len() > 1 {
                    per_channel(filter.quantization.scale.len());
                }
                if filter.kind == INT4 {
                    request(elements(filter)?);
                }
            }
            Prepare::CmsisNn(path) => {
                let prepared = cmsis_nn::prepare(model, op, path).map_err(|why| err(format!("step {step}: {why}")))?;
                for bytes in prepared.persistent {
                    tail.persistent_buffer(bytes);
                }
                for bytes in prepared.scratch {
                    request(bytes);
                }
            }
            Prepare::Int16Tables => {
                if input(0).ok_or_else(|| missing("input"))?.kind == INT16 {
                    tail.persistent_buffer(2 * INT16_TABLE_ENTRIES);
                    tail.persistent_buffer(2 * INT16_TABLE_ENTRIES);
                }
            }
            Prepare::Reduce { sums, indices } => {
                let data = input(0).ok_or_else(|| missing("input"))?;
                let axis = input(1).ok_or_else(|| missing("axis"))?;
                if sums && data.kind != FLOAT32 {
                    request(4 * elements(output.ok_or_else(|| missing("output"))?)?);
                }
                if indices {
                    request(4 * data.shape.len());
                    request(4 * elements(axis)?);
                }
            }
            Prepare::UnpacksInt4 => {
                let filter = input(1).ok_or_else(|| missing("filter"))?;
                if filter.kind == INT4 {
                    request(elements(filter)?);
                }
            }
            Prepare::InputQuantization => {
                if input(0).ok_or_else(|| missing("input"))?.kind == INT8 {
                    tail.persistent_buffer(4 * op.inputs.len());
                    tail.persistent_buffer(4 * op.inputs.len());
                }
            }
            Prepare::DimensionIndices => {
                let rank = input(0).ok_or_else(|| missing("input"))?.shape.len();
                request(4 * rank);
                request(4 * rank);
            }
            Prepare::OpData(op_data) => tail.persistent_buffer(op_data.bytes),
            Prepare::OpDataForInt8(op_data) => {
                if input(0).ok_or_else(|| missing("input"))?.kind == INT8 {
                    tail.persistent_buffer(op_data.bytes);
                }
            }
            Prepare::AddN(op_data) => {
                if output.ok_or_else(|| missing("output"))?.kind == INT8 {
                    tail.persistent_buffer(op_data.bytes);
                }
                request(4 * op.inputs.len());
            }
            Prepare::TransposeConv => {
                let (filter, data) =
                    (input(1).ok_or_else(|| missing("filter"))?, input(2).ok_or_else(|| missing("input"))?);
                per_channel(channels(filter, 0)?);
                let outputs = elements(output.ok_or_else(|| missing("output"))?)?;
                match data.kind {
                    INT8 => request(4 * outputs),
                    INT16 => {
                        request(8 * outputs);
                        if let Some(bias) = input(3).filter(|b| b.kind == INT16) {
                            request(8 * elements(bias)?);
                        }
                    }
                    _ => {}
                }
            }
            Prepare::BatchMatMul(quantization) => {
                let (lhs, rhs) = (input(0).ok_or_else(|| missing("lhs"))?, input(1).ok_or_else(|| missing("rhs"))?);
                if matches!(lhs.kind, INT8 | INT16) {
                    tail.persistent_buffer(quantization.bytes);
                }
                let [adj_x, adj_y] = op.adjoint.unwrap_or_default();
                for operand in [adj_x.then_some(lhs), (!adj_y).then_some(rhs)].into_iter().flatten() {
                    let bytes = operand.bytes().ok_or_else(|| err(format!("step {step}: `{}`", operand.name)))?;
                    tail.persistent_buffer(EVAL_TENSOR.bytes);
                    tail.persistent_buffer(4 + 4 * operand.shape.len());
                    tail.persistent_buffer(bytes);
                }
            }
            Prepare::Lstm => {
                let (state, cell) = (
                    input(18).ok_or_else(|| missing("output state"))?,
                    input(19).ok_or_else(|| missing("cell state"))?,
                );
                let size =
                    cell.element_bytes().ok_or_else(|| err(format!("step {step}: cell state `{}`", cell.name)))?;
                for _ in 0..4 {
                    request(elements(state)? * size);
                }
            }
            Prepare::Lstm2023 => {
                let cell = input(19).ok_or_else(|| missing("cell state"))?;
                let gates = if input(1).is_some() { 4 } else { 3 };
                request(elements(cell)? * gates * 4);
            }
            Prepare::AssignVariable => {
                let handle = op.inputs.first().and_then(|h| variables.of_handle.get(h));
                if assigned.insert(*handle.ok_or_else(|| missing("resource handle"))?) {
                    let value = input(1).ok_or_else(|| missing("value"))?;
                    let bytes = value.bytes().ok_or_else(|| err(format!("step {step}: value `{}`", value.name)))?;
                    tail.persistent_buffer(bytes);
                }
            }
            Prepare::Svdf => {
                let (data, filters) =
                    (input(0).ok_or_else(|| missing("input"))?, input(1).ok_or_else(|| missing("feature weights"))?);
                let output = output.ok_or_else(|| missing("output"))?;
                for bytes in crate::model::tail::svdf_scratch(data, filters, output).map_err(err)? {
                    request(bytes);
                }
            }
        }
        // The node's temporaries, taken above the head of requests made
        // before it, held until it is prepared: whatever it allocates at
        // `Prepare` must stay clear of them.
        let taken = temporaries(kernel.code, kernel_path, tflm, op, sg).ok_or_else(|| {
            err(format!("step {step}: the temporaries of operator code {} are not known", kernel.code))
        })?;
        let high = PrepareHigh {
            step,
            requests_head: SCRATCH_REQUEST.bytes * (requests_before + REQUESTS_AHEAD),
            temporaries: taken.iter().map(|&t| temporary_bytes(&sg.tensors[t])).sum(),
            tail: tail.tail.0,
        };
        if prepare.is_none_or(|p| high.bytes() > p.bytes()) {
            prepare = Some(high);
        }
    }
    if !scratch.is_empty() {
        tail.place(None, SCRATCH_HANDLE, scratch.len());
    }
    for t in sg.tensors.iter().filter(|t| t.is_variable) {
        let bytes = t.bytes().ok_or_else(|| err(format!("variable `{}` has a type of unknown size", t.name)))?;
        tail.alloc(Some("variables"), bytes, BUFFER_ALIGNMENT, 1);
    }
    let borrowing = Borrowing { prepare, requests: scratch.len(), planning_tail: tail.tail.0 };
    // The interpreter's own TfLiteTensors: an array of pointers, then each
    // tensor with its quantization (the zero points copied as ints).
    for ends in [&sg.inputs, &sg.outputs] {
        tail.persistent_buffer(4 * ends.len());
        for &i in ends.iter() {
            let t = tensor(i).ok_or_else(|| err(format!("the graph names tensor {i}, which it does not have")))?;
            tail.place(Some("persistent_tensors"), TENSOR, 1);
            let channels = t.quantization.channels();
            if channels > 0 {
                tail.place(Some("quantization"), AFFINE_QUANTIZATION, 1);
                tail.alloc(Some("quantization"), 4 * (1 + channels), 4, 1);
            }
        }
    }
    Ok(Prediction { bytes: tail.tail.0, scratch, recorded: tail.recorded, borrowing })
}

/// A temporary `TfLiteTensor` of `t`, in the head: the struct, and for a
/// quantized tensor its quantization and zero points (the scales are read
/// from the model).
pub(super) fn temporary_bytes(t: &Tensor) -> usize {
    let channels = t.quantization.channels();
    TENSOR.bytes + if channels > 0 { AFFINE_QUANTIZATION.bytes + 4 * (1 + channels) } else { 0 }
}

/// Output channels of a filter: its dimension `dim`.
pub(super) fn channels(filter: &Tensor, dim: usize) -> Result<usize, ReadError> {
    let channels = filter.shape.get(dim).copied().unwrap_or(0);
    usize::try_from(channels).map_err(|_| ReadError { at: "tail", why: format!("filter `{}`", filter.name) })
}

/// Elements of a tensor a kernel sizes a buffer by.
pub(super) fn elements(t: &Tensor) -> Result<usize, ReadError> {
    t.elements().ok_or_else(|| ReadError { at: "tail", why: format!("tensor `{}` has shape {:?}", t.name, t.shape) })
}
