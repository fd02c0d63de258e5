//! A reader for `.tflite` flatbuffers that trusts nothing: every offset, length
//! and table is checked against the buffer before it is followed, so a
//! truncated, corrupt or hostile file is an error, never a panic or an
//! out-of-bounds read. It reads what hilmem needs: the schema version, the
//! description and metadata, the operator codes (with versions), each
//! subgraph's tensors (with their quantization) and operators, and the sizes
//! of the buffers. [`write`] is its inverse, for synthetic models.

mod offline;
mod write;
pub use offline::{with_offline_plan, OFFLINE_PLAN};
pub use write::{write, write_with, Extras, Field};

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// Where in the model the reader was.
    pub at: &'static str,
    pub why: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.why)
    }
}

impl std::error::Error for ReadError {}

/// Longest vector the reader accepts; a model with more elements than bytes
/// is corrupt anyway.
const MAX_VECTOR: usize = 1 << 24;

#[derive(Clone, Copy)]
struct Buf<'a> {
    data: &'a [u8],
    at: &'static str,
}

impl<'a> Buf<'a> {
    fn err(&self, why: impl Into<String>) -> ReadError {
        ReadError { at: self.at, why: why.into() }
    }

    fn bytes(&self, pos: usize, len: usize) -> Result<&'a [u8], ReadError> {
        pos.checked_add(len).and_then(|end| self.data.get(pos..end)).ok_or_else(|| {
            self.err(format!("{len} bytes at offset {pos} are past the end ({} bytes)", self.data.len()))
        })
    }

    fn u8(&self, pos: usize) -> Result<u8, ReadError> {
        Ok(self.bytes(pos, 1)?[0])
    }

    fn u16(&self, pos: usize) -> Result<u16, ReadError> {
        Ok(u16::from_le_bytes(self.bytes(pos, 2)?.try_into().unwrap()))
    }

    fn u32(&self, pos: usize) -> Result<u32, ReadError> {
        Ok(u32::from_le_bytes(self.bytes(pos, 4)?.try_into().unwrap()))
    }

    fn i32(&self, pos: usize) -> Result<i32, ReadError> {
        Ok(self.u32(pos)? as i32)
    }

    /// Follows the unsigned offset stored at `pos`.
    fn follow(&self, pos: usize) -> Result<usize, ReadError> {
        let offset = self.u32(pos)? as usize;
        let target = pos.checked_add(offset).ok_or_else(|| self.err("offset overflows"))?;
        if target >= self.data.len() {
            return Err(self.err(format!("offset at {pos} points past the end")));
        }
        Ok(target)
    }

    fn at(self, at: &'static str) -> Buf<'a> {
        Buf { at, ..self }
    }
}

/// A table: its position and its vtable, both checked.
#[derive(Clone, Copy)]
struct Table<'a> {
    buf: Buf<'a>,
    pos: usize,
    vtable: usize,
    vtable_len: usize,
}

impl<'a> Table<'a> {
    fn at(buf: Buf<'a>, pos: usize) -> Result<Table<'a>, ReadError> {
        if !pos.is_multiple_of(4) {
            return Err(buf.err(format!("table at {pos} is not 4-byte aligned")));
        }
        let soffset = buf.i32(pos)? as i64;
        let vtable = pos as i64 - soffset;
        if vtable < 0 || !(vtable as usize).is_multiple_of(2) {
            return Err(buf.err(format!("table at {pos} has a bad vtable offset")));
        }
        let vtable = vtable as usize;
        let vtable_len = buf.u16(vtable)? as usize;
        let table_len = buf.u16(vtable + 2)? as usize;
        if vtable_len < 4 || !vtable_len.is_multiple_of(2) {
            return Err(buf.err(format!("vtable at {vtable} has a bad size {vtable_len}")));
        }
        buf.bytes(vtable, vtable_len)?;
        buf.bytes(pos, table_len.max(4))?;
        Ok(Table { buf, pos, vtable, vtable_len })
    }

    /// Position of field `index`, if present.
    fn field(&self, index: usize) -> Result<Option<usize>, ReadError> {
        let entry = 4 + 2 * index;
        if entry + 2 > self.vtable_len {
            return Ok(None);
        }
        match self.buf.u16(self.vtable + entry)? as usize {
            0 => Ok(None),
            offset => Ok(Some(self.pos + offset)),
        }
    }

    fn scalar_u8(&self, index: usize, default: u8) -> Result<u8, ReadError> {
        self.field(index)?.map_or(Ok(default), |p| self.buf.u8(p))
    }

    fn scalar_i32(&self, index: usize, default: i32) -> Result<i32, ReadError> {
        self.field(index)?.map_or(Ok(default), |p| self.buf.i32(p))
    }

    fn scalar_u32(&self, index: usize, default: u32) -> Result<u32, ReadError> {
        self.field(index)?.map_or(Ok(default), |p| self.buf.u32(p))
    }

    /// A vector field: (position of the first element, length), checked to
    /// fit `element` bytes per element.
    fn vector(&self, index: usize, element: usize) -> Result<Option<(usize, usize)>, ReadError> {
        let Some(field) = self.field(index)? else { return Ok(None) };
        let start = self.buf.follow(field)?;
        let len = self.buf.u32(start)? as usize;
        if len > MAX_VECTOR {
            return Err(self.buf.err(format!("vector of {len} elements")));
        }
        self.buf.bytes(start + 4, len * element)?;
        Ok(Some((start + 4, len)))
    }

    fn tables(&self, index: usize) -> Result<Vec<Table<'a>>, ReadError> {
        let Some((first, len)) = self.vector(index, 4)? else { return Ok(Vec::new()) };
        (0..len).map(|i| Table::at(self.buf, self.buf.follow(first + 4 * i)?)).collect()
    }

    fn i32s(&self, index: usize) -> Result<Vec<i32>, ReadError> {
        let Some((first, len)) = self.vector(index, 4)? else { return Ok(Vec::new()) };
        (0..len).map(|i| self.buf.i32(first + 4 * i)).collect()
    }

    fn f32s(&self, index: usize) -> Result<Vec<f32>, ReadError> {
        Ok(self.i32s(index)?.into_iter().map(|v| f32::from_bits(v as u32)).collect())
    }

    fn i64s(&self, index: usize) -> Result<Vec<i64>, ReadError> {
        let Some((first, len)) = self.vector(index, 8)? else { return Ok(Vec::new()) };
        (0..len).map(|i| Ok(i64::from_le_bytes(self.buf.bytes(first + 8 * i, 8)?.try_into().unwrap()))).collect()
    }

    fn table(&self, index: usize) -> Result<Option<Table<'a>>, ReadError> {
        self.field(index)?.map(|p| Table::at(self.buf, self.buf.follow(p)?)).transpose()
    }

    fn string(&self, index: usize) -> Result<Option<String>, ReadError> {
        let Some((first, len)) = self.vector(index, 1)? else { return Ok(None) };
        Ok(Some(String::from_utf8_lossy(self.buf.bytes(first, len)?).into_owned()))
    }
}

/// A model's operator code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorCode {
    pub builtin: i32,
    pub custom: Option<String>,
    pub version: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub shape: Vec<i32>,
    /// `TensorType` code (0 float32, 2 int32, 3 uint8, 9 int8, ...).
    pub kind: u8,
    pub buffer: u32,
    pub is_variable: bool,
    pub quantization: Quantization,
}

/// A tensor's quantization parameters (empty when it has none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Quantization {
    pub scale: Vec<f32>,
    pub zero_point: Vec<i64>,
    pub dimension: i32,
}

impl Quantization {
    /// The channels TFLM copies into the arena: the scale count, when both
    /// scales and zero points are present.
    pub fn channels(&self) -> usize {
        if self.scale.is_empty() || self.zero_point.is_empty() {
            0
        } else {
            self.scale.len()
        }
    }
}

/// `TensorType` codes the analyzer tells apart.
pub const FLOAT32: u8 = 0;
pub const INT16: u8 = 7;
pub const INT8: u8 = 9;
pub const INT4: u8 = 17;
/// A resource handle's (an int32 id that its kernel holds).
pub const RESOURCE: u8 = 13;

impl Tensor {
    /// A tensor that is not variable and has no quantization, for the
    /// models hilmem writes.
    pub fn plain(name: &str, shape: &[i32], kind: u8, buffer: u32) -> Tensor {
        Tensor {
            name: name.into(),
            shape: shape.to_vec(),
            kind,
            buffer,
            is_variable: false,
            quantization: Quantization::default(),
        }
    }

    /// Elements of the tensor (1 for a scalar; None for a negative or
    /// overflowing shape).
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
    }

    /// Bytes of one element (None for a type TFLM cannot size).
    pub fn element_bytes(&self) -> Option<usize> {
        match self.kind {
            4 | 8 | 10 => Some(8),    // int64, complex64, float64
            0 | 2 => Some(4),         // float32, int32
            1 | 7 => Some(2),         // float16, int16
            3 | 5 | 6 | 9 => Some(1), // uint8, string, bool, int8
            _ => None,
        }
    }

    /// Bytes of the tensor's data (None for a type TFLM cannot size).
    pub fn bytes(&self) -> Option<usize> {
        self.elements()?.checked_mul(self.element_bytes()?)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Operator {
    pub opcode_index: u32,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    /// The type of its builtin options table (0: none); the reader keeps
    /// only the type, and the writer writes a table of that type with every
    /// option at its default.
    pub options: u8,
    /// The window of a convolution (`Conv2DOptions`,
    /// `DepthwiseConv2DOptions`), which sizes CMSIS-NN's scratch buffers.
    pub window: Option<Window>,
    /// Whether a batched matrix product takes its operands transposed
    /// (`BatchMatMulOptions`: `adj_x`, `adj_y`), which decides what its
    /// kernel copies into the arena.
    pub adjoint: Option<[bool; 2]>,
    /// The variable a resource handle names (`VarHandleOptions`: container
    /// and shared name, each where given), which decides whether two
    /// handles are one variable.
    pub variable: Option<[Option<String>; 2]>,
}

/// How a convolution slides over its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// `SAME` padding (else `VALID`).
    pub same: bool,
    /// Height and width.
    pub stride: [i32; 2],
    pub dilation: [i32; 2],
}

/// The builtin options types that are a convolution's: `Conv2DOptions`
/// and `DepthwiseConv2DOptions`.
pub const CONV_OPTIONS: u8 = 1;
pub const DEPTHWISE_CONV_OPTIONS: u8 = 2;
/// The builtin options type of a batched matrix product, whose fields 0
/// and 1 are `adj_x` and `adj_y`.
pub const BATCH_MATMUL_OPTIONS: u8 = 101;
/// The builtin code of a resource handle: its output tensor's data is the
/// kernel's own (the variable's id).
pub const VAR_HANDLE: i32 = 142;
/// The builtin options type of a resource handle (`VAR_HANDLE`), whose
/// fields 0 and 1 are the strings `container` and `shared_name`.
pub const VAR_HANDLE_OPTIONS: u8 = 111;

impl Window {
    /// The vtable fields of the options table of type `options` that hold
    /// padding, stride width and height, and dilation width and height.
    pub fn fields(options: u8) -> Option<[usize; 5]> {
        match options {
            CONV_OPTIONS => Some([0, 1, 2, 4, 5]),
            DEPTHWISE_CONV_OPTIONS => Some([0, 1, 2, 5, 6]),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subgraph {
    pub tensors: Vec<Tensor>,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub operators: Vec<Operator>,
}

/// What hilmem reads of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub version: u32,
    pub description: Option<String>,
    /// Name and buffer index of each metadata entry.
    pub metadata: Vec<(String, u32)>,
    pub operator_codes: Vec<OperatorCode>,
    pub subgraphs: Vec<Subgraph>,
    /// Bytes of data in each buffer (0 for a buffer tensors fill at run time).
    pub buffers: Vec<usize>,
    /// The offline memory plan in the [`OFFLINE_PLAN`] metadata, if the
    /// model has one: an arena offset per tensor, -1 where TFLM plans.
    pub offline_plan: Option<Vec<i32>>,
}

impl Model {
    /// A model of `subgraph` alone, whose operators are of the builtin
    /// `codes` (version 1) and whose tensors are all filled at run time, for
    /// the models hilmem writes.
    pub fn of_builtins(codes: &[i32], subgraph: Subgraph) -> Model {
        Model {
            version: 3,
            description: None,
            metadata: vec![],
            operator_codes: codes.iter().map(|&builtin| OperatorCode { builtin, custom: None, version: 1 }).collect(),
            subgraphs: vec![subgraph],
            buffers: vec![0],
            offline_plan: None,
        }
    }
}

impl Operator {
    /// An operator without options, for the models hilmem writes.
    pub fn plain(opcode_index: u32, inputs: &[i32], outputs: &[i32]) -> Operator {
        Operator {
            opcode_index,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            options: 0,
            window: None,
            adjoint: None,
            variable: None,
        }
    }

    /// A resource handle (VAR_HANDLE, at `opcode_index`) whose `output`
    /// names the variable `shared_name`, in no container.
    pub fn handle(opcode_index: u32, output: i32, shared_name: &str) -> Operator {
        Operator {
            options: VAR_HANDLE_OPTIONS,
            variable: Some([None, Some(shared_name.to_owned())]),
            ..Operator::plain(opcode_index, &[], &[output])
        }
    }
}

/// Reads and checks a `.tflite` flatbuffer.
pub fn read(data: &[u8]) -> Result<Model, ReadError> {
    let buf = Buf { data, at: "file" };
    if data.len() < 8 {
        return Err(buf.err(format!("{} bytes is too short", data.len())));
    }
    if &data[4..8] != b"TFL3" {
        return Err(buf.err("the file identifier is not `TFL3`"));
    }
    let model = Table::at(buf.at("model"), buf.follow(0)?)?;
    let version = model.scalar_u32(0, 0)?;
    let operator_codes = model
        .tables(1)?
        .into_iter()
        .map(|t| {
            // Converters since TensorFlow 2.4 put codes above 127 in field 3
            // and 127 in the old byte field; TFLite takes the larger.
            Ok(OperatorCode {
                builtin: i32::from(t.scalar_u8(0, 0)? as i8).max(t.scalar_i32(3, 0)?),
                custom: t.string(1)?,
                version: t.scalar_i32(2, 1)?,
            })
        })
        .collect::<Result<Vec<_>, ReadError>>()?;
    let subgraphs = model
        .tables(2)?
        .into_iter()
        .map(|sg| {
            let sg = Table { buf: sg.buf.at("subgraph"), ..sg };
            let tensors = sg
                .tables(0)?
                .into_iter()
                .map(|t| {
                    Ok(Tensor {
                        shape: t.i32s(0)?,
                        kind: t.scalar_u8(1, 0)?,
                        buffer: t.scalar_u32(2, 0)?,
                        name: t.string(3)?.unwrap_or_default(),
                        is_variable: t.scalar_u8(5, 0)? != 0,
                        quantization: match t.table(4)? {
                            None => Quantization::default(),
                            Some(q) => Quantization {
                                scale: q.f32s(2)?,
                                zero_point: q.i64s(3)?,
                                dimension: q.scalar_i32(6, 0)?,
                            },
                        },
                    })
                })
                .collect::<Result<Vec<_>, ReadError>>()?;
            let operators = sg
                .tables(3)?
                .into_iter()
                .map(|op| {
                    let options = op.scalar_u8(3, 0)?;
                    let window = match (Window::fields(options), op.table(4)?) {
                        (Some([padding, stride_w, stride_h, dilation_w, dilation_h]), Some(o)) => Some(Window {
                            same: o.scalar_u8(padding, 0)? == 0,
                            stride: [o.scalar_i32(stride_h, 0)?, o.scalar_i32(stride_w, 0)?],
                            dilation: [o.scalar_i32(dilation_h, 1)?, o.scalar_i32(dilation_w, 1)?],
                        }),
                        _ => None,
                    };
                    let adjoint = match (options, op.table(4)?) {
                        (BATCH_MATMUL_OPTIONS, Some(o)) => Some([o.scalar_u8(0, 0)? != 0, o.scalar_u8(1, 0)? != 0]),
                        _ => None,
                    };
                    let variable = match (options, op.table(4)?) {
                        (VAR_HANDLE_OPTIONS, Some(o)) => Some([o.string(0)?, o.string(1)?]),
                        _ => None,
                    };
                    Ok(Operator {
                        opcode_index: op.scalar_u32(0, 0)?,
                        inputs: op.i32s(1)?,
                        outputs: op.i32s(2)?,
                        options,
                        window,
                        adjoint,
                        variable,
                    })
                })
                .collect::<Result<Vec<_>, ReadError>>()?;
            Ok(Subgraph { tensors, inputs: sg.i32s(1)?, outputs: sg.i32s(2)?, operators })
        })
        .collect::<Result<Vec<_>, ReadError>>()?;
    let description = model.string(3)?;
    let metadata = model
        .tables(6)?
        .iter()
        .map(|m| Ok((m.string(0)?.unwrap_or_default(), m.scalar_u32(1, 0)?)))
        .collect::<Result<Vec<_>, ReadError>>()?;
    let data = model.tables(4)?.iter().map(|b| b.vector(0, 1)).collect::<Result<Vec<_>, ReadError>>()?;
    let buffers: Vec<usize> = data.iter().map(|d| d.map_or(0, |(_, len)| len)).collect();

    // References between tables must land.
    let invalid = |why: String| ReadError { at: "model", why };
    for (s, sg) in subgraphs.iter().enumerate() {
        let tensor_ok = |i: &i32| *i == -1 || (*i >= 0 && (*i as usize) < sg.tensors.len());
        for op in &sg.operators {
            if op.opcode_index as usize >= operator_codes.len() {
                return Err(invalid(format!("subgraph {s}: operator code {} does not exist", op.opcode_index)));
            }
            if !op.inputs.iter().chain(&op.outputs).all(tensor_ok) {
                return Err(invalid(format!("subgraph {s}: an operator names a tensor that does not exist")));
            }
        }
        if !sg.inputs.iter().chain(&sg.outputs).all(tensor_ok) {
            return Err(invalid(format!("subgraph {s}: an input or output tensor does not exist")));
        }
        if let Some(t) = sg.tensors.iter().find(|t| t.buffer as usize >= buffers.len().max(1)) {
            return Err(invalid(format!("tensor `{}` names buffer {} of {}", t.name, t.buffer, buffers.len())));
        }
    }
    if let Some((name, buffer)) = metadata.iter().find(|(_, b)| *b as usize >= buffers.len()) {
        return Err(invalid(format!("metadata `{name}` names buffer {buffer} of {}", buffers.len())));
    }
    let offline_plan = match metadata.iter().find(|(name, _)| name == OFFLINE_PLAN) {
        None => None,
        Some(&(_, b)) => {
            let (start, len) = data[b as usize].unwrap_or((0, 0));
            let buf = buf.at("offline plan");
            let words = (0..len / 4).map(|i| buf.i32(start + 4 * i)).collect::<Result<Vec<i32>, _>>()?;
            match words.get(2) {
                Some(&count) if len % 4 == 0 && usize::try_from(count).is_ok_and(|c| c == words.len() - 3) => {
                    Some(words[3..].to_vec())
                }
                _ => {
                    return Err(buf.err(format!(
                        "metadata `{OFFLINE_PLAN}` (buffer {b}, {len} bytes) is not a version, a subgraph, \
                         a count and that many offsets"
                    )))
                }
            }
        }
    };
    Ok(Model { version, description, metadata, operator_codes, subgraphs, buffers, offline_plan })
}

/// Name of a `TensorType` code.
pub fn type_name(kind: u8) -> &'static str {
    match kind {
        0 => "float32",
        1 => "float16",
        2 => "int32",
        3 => "uint8",
        4 => "int64",
        5 => "string",
        6 => "bool",
        7 => "int16",
        8 => "complex64",
        9 => "int8",
        10 => "float64",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLES: [&str; 4] =
        ["hello_world.tflite", "micro_speech.tflite", "magic_wand.tflite", "person_detection_grayscale.tflite"];

    fn example(name: &str) -> Vec<u8> {
        std::fs::read(crate::Workspace::from_source().root().join("firmware/models").join(name)).unwrap()
    }

    #[test]
    fn the_example_models_read_and_run_on_the_bundled_tflm() {
        let person = read(&example("person_detection_grayscale.tflite")).unwrap();
        assert_eq!(person.version, 3);
        let sg = &person.subgraphs[0];
        let input = &sg.tensors[sg.inputs[0] as usize];
        assert_eq!(input.shape, [1, 96, 96, 1]);
        assert_eq!(input.kind, 3, "uint8");
        let ops: Vec<String> =
            person.operator_codes.iter().map(|c| crate::tflm::bundled::builtin_name(c.builtin)).collect();
        assert!(ops.contains(&"DEPTHWISE_CONV_2D".to_owned()) && ops.contains(&"CONV_2D".to_owned()), "{ops:?}");
        for name in EXAMPLES {
            let model = read(&example(name)).unwrap();
            assert!(!model.subgraphs[0].operators.is_empty());
        }
        let hello = read(&example("hello_world.tflite")).unwrap();
        assert_eq!(hello.subgraphs[0].tensors[hello.subgraphs[0].inputs[0] as usize].shape, [1, 1]);
    }

    /// The writer (the `flatbuffers` crate's builder) and this reader agree:
    /// every example model, written again, reads back unchanged.
    #[test]
    fn what_the_writer_writes_reads_back_unchanged() {
        for name in EXAMPLES {
            let model = read(&example(name)).unwrap();
            assert_eq!(read(&write(&model)).unwrap(), model, "{name}");
        }
        let magic = read(&example("magic_wand.tflite")).unwrap();
        let quantized = magic.subgraphs[0].tensors.iter().filter(|t| t.quantization.channels() > 0).count();
        let person = read(&example("person_detection_grayscale.tflite")).unwrap();
        let per_tensor = person.subgraphs[0].tensors.iter().all(|t| t.quantization.channels() == 1);
        assert_eq!((quantized, per_tensor), (0, true), "magic_wand is float, person_detection uint8 per tensor");
    }

    #[test]
    fn codes_above_127_are_read_from_the_new_field() {
        let model = Model {
            version: 3,
            description: Some("converted by a current converter".into()),
            metadata: vec![("min_runtime_version".into(), 0)],
            operator_codes: vec![OperatorCode { builtin: 150, custom: None, version: 1 }],
            subgraphs: vec![],
            buffers: vec![16],
            offline_plan: None,
        };
        let bytes = write(&model);
        assert_eq!(read(&bytes).unwrap(), model);
    }
}
