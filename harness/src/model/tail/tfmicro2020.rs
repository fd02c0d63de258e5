//! The tail of the bundled TFLM (May 2020), for 32-bit Arm.
//!
//! In allocation order: the allocator itself; one `TfLiteTensor` per tensor;
//! per quantized tensor its `TfLiteAffineQuantization`, zero points and
//! scales; one `NodeAndRegistration` per operator; each operator's parsed
//! options; the kernels' persistent data (at `Init`, then `Prepare`); the
//! handles of scratch buffers; variable tensors.
//!
//! While it plans, TFLM also needs room it gives back: an `AllocationInfo`
//! per tensor below the tail and its planner's working arrays above the head,
//! so the least arena it accepts can exceed head plus tail ([`least_arena`]).

use super::{layout, Layout, LeastArena, Tail};
use crate::model::planner::BUFFER_ALIGNMENT;
use crate::model::tflite::{Model, ReadError, INT8};

const ALLOCATOR: Layout = layout("tflite::SimpleMemoryAllocator", 20, 4);
const TENSOR: Layout = layout("TfLiteTensor", 64, 4);
const AFFINE_QUANTIZATION: Layout = layout("TfLiteAffineQuantization", 12, 4);
const NODE_AND_REGISTRATION: Layout = layout("tflite::NodeAndRegistration", 40, 4);
const SCRATCH_HANDLE: Layout = layout("tflite::internal::ScratchBufferHandle", 12, 4);
const ALLOCATION_INFO: Layout = layout("tflite::AllocationInfo", 20, 4);
/// `GreedyMemoryPlanner::per_buffer_size()`: its requirement, two sort
/// arrays, a list entry and an offset per buffer.
const PLANNER_BYTES_PER_BUFFER: usize = 36;

/// The options struct `ParseOpData` allocates for each registered builtin
/// operator that has one (builtin code, type).
pub const OPTIONS: &[(i32, Layout)] = &[
    (0, layout("TfLiteAddParams", 4, 4)),
    (1, layout("TfLitePoolParams", 40, 4)),
    (2, layout("TfLiteConcatenationParams", 8, 4)),
    (3, layout("TfLiteConvParams", 24, 4)),
    (4, layout("TfLiteDepthwiseConvParams", 28, 4)),
    (9, layout("TfLiteFullyConnectedParams", 12, 4)),
    (11, layout("TfLiteL2NormParams", 4, 4)),
    (17, layout("TfLitePoolParams", 40, 4)),
    (18, layout("TfLiteMulParams", 4, 4)),
    (22, layout("TfLiteReshapeParams", 36, 4)),
    (25, layout("TfLiteSoftmaxParams", 4, 4)),
    (27, layout("TfLiteSVDFParams", 12, 4)),
    (40, layout("TfLiteReducerParams", 1, 1)),
    (41, layout("TfLiteSubParams", 4, 4)),
    (45, layout("TfLiteStridedSliceParams", 20, 4)),
    (49, layout("TfLiteSplitParams", 4, 4)),
    (56, layout("TfLiteArgMaxParams", 4, 4)),
    (79, layout("TfLiteArgMinParams", 4, 4)),
    (83, layout("TfLitePackParams", 8, 4)),
    (88, layout("TfLiteUnpackParams", 8, 4)),
    (97, layout("TfLiteResizeNearestNeighborParams", 2, 1)),
];

/// The kernels whose `Init` allocates their `OpData` persistently (builtin
/// code, type), 16-byte aligned.
pub const OP_DATA: &[(i32, Layout)] = &[
    (3, layout("tflite::ops::micro::conv::OpData", 40, 4)),
    (4, layout("tflite::ops::micro::depthwise_conv::OpData", 40, 4)),
    (6, layout("tflite::ops::micro::dequantize::OpData", 8, 4)),
    (9, layout("tflite::ops::micro::fully_connected::OpData", 20, 4)),
    (27, layout("tflite::ops::micro::svdf::OpData", 24, 4)),
    (114, layout("tflite::ops::micro::quantize::OpData", 8, 4)),
];

/// Every layout the prediction uses, for the test that compiles them.
pub fn layouts() -> Vec<Layout> {
    [ALLOCATOR, TENSOR, AFFINE_QUANTIZATION, NODE_AND_REGISTRATION, SCRATCH_HANDLE, ALLOCATION_INFO]
        .into_iter()
        .chain(OPTIONS.iter().chain(OP_DATA).map(|&(_, l)| l))
        .collect()
}

/// The one kernel of the bundled TFLM that asks for scratch buffers.
pub(crate) const SVDF: i32 = 27;
const CONV_2D: i32 = 3;
const DEPTHWISE_CONV_2D: i32 = 4;

/// The persistent tail of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prediction {
    /// What TFLM reports as its tail usage.
    pub bytes: usize,
    /// The tail when TFLM plans the head: everything but the variables.
    pub before_variables: usize,
    /// Entries of the planner's `AllocationInfo` array: tensors and scratch
    /// buffers.
    pub allocation_infos: usize,
}

/// The least arena TFLM's `AllocateTensors` accepts, given the planned head
/// and the number of buffers it plans: the larger of what stays (head and
/// tail) and what planning borrows, rounded up to the 16 bytes hilmem's
/// arena sizes come in.
pub fn least_arena(tail: &Prediction, head: usize, planned: usize) -> LeastArena {
    let mut planning = Tail(tail.before_variables);
    planning.place(ALLOCATION_INFO, tail.allocation_infos);
    let planner = PLANNER_BYTES_PER_BUFFER * planned;
    let (bytes, set_by) = if planning.0 + planner > head + tail.bytes {
        let infos = planning.0 - tail.before_variables;
        (
            planning.0 + planner,
            format!(
                "planning: {infos} B of AllocationInfo and {planner} B of the planner's arrays, beside a {}-byte tail",
                tail.before_variables
            ),
        )
    } else {
        (head + tail.bytes, format!("what stays: a {head}-byte head and a {}-byte tail", tail.bytes))
    };
    LeastArena { bytes: bytes.next_multiple_of(BUFFER_ALIGNMENT), set_by }
}

/// The persistent tail TFLM allocates for `model`'s first subgraph.
pub fn predict(model: &Model) -> Result<Prediction, ReadError> {
    let err = |why: String| ReadError { at: "tail", why };
    let sg = model.subgraphs.first().ok_or_else(|| err("the model has no subgraph".into()))?;
    let builtin = |op: &crate::model::tflite::Operator| {
        let code = &model.operator_codes[op.opcode_index as usize];
        code.custom.is_none().then_some(code.builtin)
    };
    let find = |table: &[(i32, Layout)], code| table.iter().find(|(c, _)| *c == code).map(|&(_, l)| l);
    let mut tail = Tail::default();
    let mut scratch_buffers = 0;
    tail.place(ALLOCATOR, 1);
    tail.place(TENSOR, sg.tensors.len());
    for t in &sg.tensors {
        let channels = t.quantization.channels();
        if channels > 0 {
            tail.place(AFFINE_QUANTIZATION, 1);
            tail.alloc(4 * (1 + channels), 4); // TfLiteIntArray of zero points
            tail.alloc(4 * (1 + channels), 4); // TfLiteFloatArray of scales
        }
    }
    tail.place(NODE_AND_REGISTRATION, sg.operators.len());
    for op in &sg.operators {
        if let Some(options) = builtin(op).and_then(|code| find(OPTIONS, code)) {
            tail.place(options, 1);
        }
    }
    for op in &sg.operators {
        if let Some(data) = builtin(op).and_then(|code| find(OP_DATA, code)) {
            tail.alloc(data.bytes, BUFFER_ALIGNMENT);
        }
    }
    for op in &sg.operators {
        let tensor = |i: usize| op.inputs.get(i).and_then(|&t| sg.tensors.get(usize::try_from(t).ok()?));
        match builtin(op) {
            // Per-channel output multipliers and shifts, one per channel of
            // the filter's quantized dimension (0 for conv, 3 for depthwise).
            Some(code @ (CONV_2D | DEPTHWISE_CONV_2D)) => {
                let dim = if code == CONV_2D { 0 } else { 3 };
                let filter = tensor(1).ok_or_else(|| err("a convolution has no filter".into()))?;
                let n = filter.shape.get(dim).copied().unwrap_or(0);
                let n = usize::try_from(n).map_err(|_| err(format!("filter `{}` has {n} channels", filter.name)))?;
                tail.alloc(4 * n, BUFFER_ALIGNMENT);
                tail.alloc(4 * n, BUFFER_ALIGNMENT);
            }
            // One scratch buffer (two for int8); their handles live here,
            // the buffers in the planned head.
            Some(SVDF) => {
                let buffers = if tensor(0).is_some_and(|t| t.kind == INT8) { 2 } else { 1 };
                tail.place(SCRATCH_HANDLE, buffers);
                scratch_buffers += buffers;
            }
            _ => {}
        }
    }
    let before_variables = tail.0;
    for t in sg.tensors.iter().filter(|t| t.is_variable) {
        let bytes = t.bytes().ok_or_else(|| err(format!("variable `{}` has a type of unknown size", t.name)))?;
        tail.alloc(bytes, BUFFER_ALIGNMENT);
    }
    Ok(Prediction { bytes: tail.0, before_variables, allocation_infos: sg.tensors.len() + scratch_buffers })
}
