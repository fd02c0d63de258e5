//! The tail of today's TFLM (tflite-micro from 2022 on), for 32-bit Arm, as
//! hilmem's firmware builds the interpreter: the arena allocator, the
//! planner (greedy or linear) and `MicroAllocator` in the arena, where
//! `MicroInterpreter(model, resolver, arena, size)` puts them.
//!
//! In allocation order (`micro_allocator.cc`, `micro_interpreter.cc`): those
//! three objects; at `AllocateTensors` the builtin-data allocator, one
//! `SubgraphAllocations`, a `TfLiteEvalTensor` per tensor and a
//! `NodeAndRegistration` per operator; each operator's parsed options; what
//! the kernels allocate at `Init` (their `OpData`) and then at `Prepare`
//! (per-channel arrays, lookup tables), 16-byte aligned; the handles of the
//! scratch buffers kernels requested; variable tensors; and last the input
//! and output `TfLiteTensor`s the interpreter keeps, each with its
//! quantization.
//!
//! What a kernel allocates is read from its source, so the prediction knows
//! the kernels listed in [`KERNELS`], and for the 2023 generation (the same
//! allocator, kernels of their time) those of [`KERNELS_2023`] where they
//! differ; for a model with any other operator it makes none and names the
//! operator.

use std::collections::BTreeMap;

use super::cmsis_nn::{self, KernelPath};
use super::{layout, private, Layout, LeastArena, Tail};
use crate::model::planner::{Planner, Scratch, BUFFER_ALIGNMENT};
use crate::model::tflite::{
    self, Model, Operator, OperatorCode, ReadError, Tensor, FLOAT32, INT16, INT4, INT8, VAR_HANDLE,
};
use crate::tflm::bundled;
use crate::tflm::tree::Generation;

const ARENA_ALLOCATOR: Layout = layout("tflite::SingleArenaBufferAllocator", 36, 4);
const PLANNER: Layout = layout("tflite::GreedyMemoryPlanner", 44, 4);
const LINEAR_PLANNER: Layout = layout("tflite::LinearMemoryPlanner", 4108, 4);
const MICRO_ALLOCATOR: Layout = layout("tflite::MicroAllocator", 36, 4);
const RECORDING_ARENA_ALLOCATOR: Layout = layout("tflite::RecordingSingleArenaBufferAllocator", 52, 4);
const RECORDING_MICRO_ALLOCATOR: Layout = layout("tflite::RecordingMicroAllocator", 124, 4);
const BUILTIN_DATA_ALLOCATOR: Layout =
    private("tensorflow/lite/micro/micro_allocator.cc", "tflite::MicroBuiltinDataAllocator", 8, 4);
const SUBGRAPH_ALLOCATIONS: Layout = layout("tflite::SubgraphAllocations", 8, 4);
const EVAL_TENSOR: Layout = layout("TfLiteEvalTensor", 12, 4);
const NODE_AND_REGISTRATION: Layout = layout("tflite::NodeAndRegistration", 32, 4);
const TENSOR: Layout = layout("TfLiteTensor", 32, 4);
const AFFINE_QUANTIZATION: Layout = layout("TfLiteAffineQuantization", 12, 4);
const SCRATCH_HANDLE: Layout = layout("tflite::ScratchBufferHandle", 4, 4);
const RESOURCE_VARIABLES: Layout = layout("tflite::MicroResourceVariables", 12, 4);
const RESOURCE_VARIABLE: Layout = layout("tflite::MicroResourceVariables::MicroResourceVariable", 20, 4);
/// A variable of 2023, before its default value.
const RESOURCE_VARIABLE_2023: Layout = layout("tflite::MicroResourceVariables::MicroResourceVariable", 16, 4);
/// What `AllocateTensors` borrows from the head while it prepares and
/// plans: a kernel's scratch-buffer request, the planner's entry per tensor
/// and scratch buffer, and the two structs the greedy planner keeps per
/// buffer (beside three `int`s).
const SCRATCH_REQUEST: Layout = layout("tflite::internal::ScratchBufferRequest", 12, 4);
const ALLOCATION_INFO: Layout = layout("tflite::AllocationInfo", 24, 4);
const BUFFER_REQUIREMENTS: Layout = layout("tflite::GreedyMemoryPlanner::BufferRequirements", 16, 4);
const LIST_ENTRY: Layout = layout("tflite::GreedyMemoryPlanner::ListEntry", 12, 4);
/// `kMaxScratchBuffersPerOp`: the requests the head keeps room for beyond
/// those made, for the next kernel.
const REQUESTS_AHEAD: usize = 12;
/// `GreedyMemoryPlanner::per_buffer_size()`: its requirement, two sorted
/// `int`s, a list entry and an offset per buffer.
const GREEDY_BYTES_PER_BUFFER: usize = BUFFER_REQUIREMENTS.bytes + 3 * 4 + LIST_ENTRY.bytes;

/// The builtin codes of the resource-variable operators besides VAR_HANDLE,
/// of the LSTM, and of SELECT_V2.
const READ_VARIABLE: i32 = 143;
const ASSIGN_VARIABLE: i32 = 144;
const UNIDIRECTIONAL_SEQUENCE_LSTM: i32 = 44;
const SELECT_V2: i32 = 123;

/// What `Prepare` allocates, beyond what `Init` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prepare {
    Nothing,
    /// A multiplier and a shift per output channel, the channels being this
    /// dimension of the filter (input 1); a scratch buffer to unpack an
    /// int4 filter.
    PerChannel {
        dim: usize,
    },
    /// As `PerChannel`, for a quantized input whose filter has more than one
    /// scale, one per scale.
    PerChannelWhenQuantized,
    /// Two lookup tables of 513 int16 for an int16 input.
    Int16Tables,
    /// Scratch buffers: an int32 accumulator per output element for an
    /// integer input when the kernel sums (MEAN, SUM), then, with
    /// `indices`, an int per input dimension and per axis.
    Reduce {
        sums: bool,
        indices: bool,
    },
    /// Two scratch buffers of an int per input dimension (MIRROR_PAD).
    DimensionIndices,
    /// Its `OpData`, allocated at `Prepare` rather than `Init`.
    OpData(Layout),
    /// Its `OpData`, allocated at `Prepare` for an int8 input only.
    OpDataForInt8(Layout),
    /// ADD_N: for an int8 output its `OpData`; then a scratch buffer of a
    /// pointer per input.
    AddN(Layout),
    /// SVDF's scratch buffers (see `svdf_scratch`).
    Svdf,
    /// UNIDIRECTIONAL_SEQUENCE_LSTM: four scratch buffers of batch × state
    /// elements (the output state's, input 18) of the cell state's type
    /// (input 19).
    Lstm,
    /// UNIDIRECTIONAL_SEQUENCE_LSTM of 2023, for a float input: one scratch
    /// buffer of the gates' values, batch × cells (the cell state's
    /// elements, input 19) × 4 gates (3 without input-to-input weights,
    /// input 1: CIFG) floats.
    Lstm2023,
    /// BATCH_MATMUL: for an int8 or int16 input its quantization data; for
    /// each operand its kernel transposes (the left one with `adj_x`, the
    /// right one without `adj_y`), a `TfLiteEvalTensor`, its dims and a copy
    /// of its data.
    BatchMatMul(Layout),
    /// TRANSPOSE_CONV: a multiplier and a shift per output channel (the
    /// filter's dimension 0) for every type; a scratch accumulator per
    /// output element, int32 for an int8 input and int64 for int16; and for
    /// int16 with an int16 bias, the bias converted to int64.
    TransposeConv,
    /// FULLY_CONNECTED of 2023: a scratch buffer to unpack an int4 filter,
    /// no per-channel data.
    UnpacksInt4,
    /// CONCATENATION of 2023: for an int8 input, its inputs' scales and
    /// zero points, 4 bytes per input each.
    InputQuantization,
    /// What CMSIS-NN's kernel allocates on this code path (see
    /// [`cmsis_nn::prepare`]).
    CmsisNn(cmsis_nn::Path),
    /// ASSIGN_VARIABLE: the first assignment to a variable allocates its
    /// buffer, of the assigned value's (input 1's) bytes.
    AssignVariable,
}

impl Prepare {
    /// The kernel's own struct it allocates (an `OpData`, BATCH_MATMUL's
    /// quantization data), if any.
    const fn op_data(self) -> Option<Layout> {
        match self {
            Prepare::OpData(l) | Prepare::OpDataForInt8(l) | Prepare::AddN(l) | Prepare::BatchMatMul(l) => Some(l),
            _ => None,
        }
    }
}

/// A kernel of the reference set: its builtin code, the options struct its
/// parser allocates, the `OpData` its `Init` allocates, and its `Prepare`,
/// which may first copy its output's dims into the arena to rewrite them
/// (`CreateWritableTensorDimsWithCopy`: a `TfLiteIntArray` of the output's
/// rank).
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    pub code: i32,
    pub options: Option<Layout>,
    pub op_data: Option<Layout>,
    prepare: Prepare,
    copies_output_dims: bool,
}

const fn kernel(code: i32, options: Option<Layout>, op_data: Option<Layout>, prepare: Prepare) -> Kernel {
    Kernel { code, options, op_data, prepare, copies_output_dims: false }
}

/// `kernel`, whose `Prepare` copies its output's dims first.
const fn copying_output_dims(kernel: Kernel) -> Kernel {
    Kernel { copies_output_dims: true, ..kernel }
}

/// A kernel whose parser, `Init` and `Prepare` allocate nothing in the arena.
const fn allocates_nothing(code: i32) -> Kernel {
    kernel(code, None, None, Prepare::Nothing)
}

const ADD_PARAMS: Layout = layout("TfLiteAddParams", 2, 1);
const POOL_PARAMS: Layout = layout("TfLitePoolParams", 40, 4);
const CONV_PARAMS: Layout = layout("TfLiteConvParams", 28, 4);
const DEPTHWISE_CONV_PARAMS: Layout = layout("TfLiteDepthwiseConvParams", 28, 4);
const SOFTMAX_PARAMS: Layout = layout("TfLiteSoftmaxParams", 4, 4);
const SVDF_PARAMS: Layout = layout("TfLiteSVDFParams", 8, 4);
const FULLY_CONNECTED_PARAMS: Layout = layout("TfLiteFullyConnectedParams", 5, 1);
const OP_DATA_FULLY_CONNECTED: Layout = layout("tflite::OpDataFullyConnected", 48, 4);
const OP_DATA_CONV: Layout = layout("tflite::OpDataConv", 56, 4);
const OP_DATA_POOLING: Layout = layout("tflite::OpDataPooling", 32, 4);
const LEAKY_RELU_PARAMS: Layout = layout("TfLiteLeakyReluParams", 4, 4);
const REDUCER_PARAMS: Layout = layout("TfLiteReducerParams", 1, 1);
const OP_DATA_REDUCE: Layout = layout("tflite::OpDataReduce", 44, 4);
const CONCATENATION_PARAMS: Layout = layout("TfLiteConcatenationParams", 8, 4);
const CONCATENATION_OP_DATA: Layout =
    private("tensorflow/lite/micro/kernels/concatenation.cc", "tflite::OpData", 24, 4);
const COMPARISON_OP_DATA: Layout = private("tensorflow/lite/micro/kernels/comparisons.cc", "tflite::OpData", 32, 4);
/// PAD's and PADV2's (`kernels/pad.h`).
const PAD_OP_DATA: Layout = layout("tflite::OpData", 56, 4);
const OP_DATA_ABS_RSQRT: Layout =
    private("tensorflow/lite/micro/kernels/elementwise.cc", "tflite::OpDataAbsRsqrt", 28, 4);

/// The kernels whose allocations the prediction knows.
pub const KERNELS: &[Kernel] = &[
    kernel(0, Some(ADD_PARAMS), Some(layout("tflite::OpDataAdd", 60, 4)), Prepare::Nothing),
    kernel(1, Some(POOL_PARAMS), Some(OP_DATA_POOLING), Prepare::Nothing),
    kernel(2, Some(CONCATENATION_PARAMS), Some(CONCATENATION_OP_DATA), Prepare::Nothing),
    kernel(3, Some(CONV_PARAMS), Some(OP_DATA_CONV), Prepare::PerChannel { dim: 0 }),
    kernel(4, Some(DEPTHWISE_CONV_PARAMS), Some(OP_DATA_CONV), Prepare::PerChannel { dim: 3 }),
    // DEPTH_TO_SPACE
    copying_output_dims(kernel(5, Some(layout("TfLiteDepthToSpaceParams", 4, 4)), None, Prepare::Nothing)),
    kernel(6, None, Some(layout("tflite::DequantizeOpData", 32, 8)), Prepare::Nothing),
    // EMBEDDING_LOOKUP
    copying_output_dims(kernel(
        7,
        None,
        None,
        Prepare::OpData(private("tensorflow/lite/micro/kernels/embedding_lookup.cc", "tflite::OpData", 8, 4)),
    )),
    allocates_nothing(8), // FLOOR
    kernel(9, Some(FULLY_CONNECTED_PARAMS), Some(OP_DATA_FULLY_CONNECTED), Prepare::PerChannelWhenQuantized),
    kernel(
        11,
        Some(layout("TfLiteL2NormParams", 1, 1)),
        Some(layout("tflite::L2NormalizationParams", 4, 4)),
        Prepare::Nothing,
    ),
    // L2_POOL_2D
    copying_output_dims(kernel(12, Some(POOL_PARAMS), None, Prepare::Nothing)),
    kernel(14, None, Some(layout("tflite::OpDataLogistic", 16, 4)), Prepare::Nothing),
    kernel(17, Some(POOL_PARAMS), Some(OP_DATA_POOLING), Prepare::Nothing),
    kernel(18, Some(layout("TfLiteMulParams", 1, 1)), Some(layout("tflite::OpDataMul", 36, 4)), Prepare::Nothing),
    kernel(19, None, Some(layout("tflite::ReluOpData", 28, 4)), Prepare::Nothing),
    kernel(21, None, Some(layout("tflite::Relu6OpData", 8, 4)), Prepare::Nothing),
    kernel(22, Some(layout("TfLiteReshapeParams", 36, 4)), None, Prepare::Nothing),
    kernel(23, Some(layout("TfLiteResizeBilinearParams", 2, 1)), None, Prepare::Nothing),
    kernel(25, Some(SOFTMAX_PARAMS), Some(layout("tflite::SoftmaxParams", 56, 8)), Prepare::Int16Tables),
    // SPACE_TO_DEPTH
    copying_output_dims(kernel(26, Some(layout("TfLiteSpaceToDepthParams", 4, 4)), None, Prepare::Nothing)),
    kernel(27, Some(SVDF_PARAMS), Some(layout("tflite::OpDataSvdf", 36, 4)), Prepare::Svdf),
    kernel(28, None, Some(private("tensorflow/lite/micro/kernels/tanh.cc", "tflite::OpData", 16, 4)), Prepare::Nothing),
    kernel(34, None, Some(PAD_OP_DATA), Prepare::Nothing),
    copying_output_dims(kernel(36, Some(layout("TfLiteGatherParams", 8, 4)), None, Prepare::Nothing)),
    allocates_nothing(37), // BATCH_TO_SPACE_ND
    kernel(
        38,
        None,
        Some(private("tensorflow/lite/micro/kernels/space_to_batch_nd.cc", "tflite::SpaceToBatchParams", 4, 4)),
        Prepare::Nothing,
    ),
    allocates_nothing(39), // TRANSPOSE
    kernel(40, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE), Prepare::Reduce { sums: true, indices: true }),
    kernel(41, Some(layout("TfLiteSubParams", 2, 1)), Some(layout("tflite::OpDataSub", 52, 4)), Prepare::Nothing),
    kernel(
        42,
        Some(layout("TfLiteDivParams", 1, 1)),
        Some(private("tensorflow/lite/micro/kernels/div.cc", "tflite::OpDataDiv", 28, 4)),
        Prepare::Nothing,
    ),
    kernel(43, Some(layout("TfLiteSqueezeParams", 36, 4)), None, Prepare::Nothing),
    kernel(
        44,
        Some(layout("TfLiteUnidirectionalSequenceLSTMParams", 16, 4)),
        Some(layout("tflite::OpDataLSTM", 688, 8)),
        Prepare::Lstm,
    ),
    kernel(
        45,
        Some(layout("TfLiteStridedSliceParams", 24, 4)),
        Some(layout("tflite::StridedSliceParams", 84, 4)),
        Prepare::Nothing,
    ),
    allocates_nothing(47), // EXP
    kernel(49, Some(layout("TfLiteSplitParams", 4, 4)), None, Prepare::Nothing),
    // LOG_SOFTMAX
    kernel(
        50,
        None,
        None,
        Prepare::OpDataForInt8(private(
            "tensorflow/lite/micro/kernels/log_softmax.cc",
            "tflite::LogSoftmaxOpData",
            28,
            4,
        )),
    ),
    kernel(53, Some(layout("TfLiteCastParams", 2, 1)), None, Prepare::Nothing),
    kernel(54, None, Some(layout("tflite::PreluParams", 28, 4)), Prepare::Nothing),
    allocates_nothing(55), // MAXIMUM
    kernel(56, Some(layout("TfLiteArgMaxParams", 1, 1)), None, Prepare::Nothing),
    allocates_nothing(57), // MINIMUM
    // LESS
    kernel(58, None, Some(COMPARISON_OP_DATA), Prepare::Nothing),
    allocates_nothing(59), // NEG
    kernel(60, None, Some(PAD_OP_DATA), Prepare::Nothing),
    // GREATER, GREATER_EQUAL, LESS_EQUAL
    kernel(61, None, Some(COMPARISON_OP_DATA), Prepare::Nothing),
    kernel(62, None, Some(COMPARISON_OP_DATA), Prepare::Nothing),
    kernel(63, None, Some(COMPARISON_OP_DATA), Prepare::Nothing),
    allocates_nothing(65), // SLICE
    allocates_nothing(66), // SIN
    kernel(
        67,
        Some(layout("TfLiteTransposeConvParams", 16, 4)),
        Some(private("tensorflow/lite/micro/kernels/transpose_conv.cc", "tflite::OpData", 72, 4)),
        Prepare::TransposeConv,
    ),
    allocates_nothing(70), // EXPAND_DIMS
    // EQUAL, NOT_EQUAL
    kernel(71, None, Some(COMPARISON_OP_DATA), Prepare::Nothing),
    kernel(72, None, Some(COMPARISON_OP_DATA), Prepare::Nothing),
    allocates_nothing(73), // LOG
    kernel(74, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE), Prepare::Reduce { sums: true, indices: true }),
    allocates_nothing(75), // SQRT
    // RSQRT
    kernel(76, None, Some(OP_DATA_ABS_RSQRT), Prepare::Nothing),
    kernel(77, Some(layout("TfLiteShapeParams", 1, 1)), None, Prepare::Nothing),
    kernel(79, Some(layout("TfLiteArgMinParams", 1, 1)), None, Prepare::Nothing),
    kernel(82, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE), Prepare::Reduce { sums: false, indices: true }),
    kernel(83, Some(layout("TfLitePackParams", 8, 4)), None, Prepare::Nothing),
    allocates_nothing(84), // LOGICAL_OR
    allocates_nothing(86), // LOGICAL_AND
    allocates_nothing(87), // LOGICAL_NOT
    kernel(88, Some(layout("TfLiteUnpackParams", 8, 4)), None, Prepare::Nothing),
    kernel(89, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE), Prepare::Reduce { sums: false, indices: true }),
    allocates_nothing(90), // FLOOR_DIV
    allocates_nothing(92), // SQUARE
    allocates_nothing(93), // ZEROS_LIKE
    allocates_nothing(94), // FILL
    allocates_nothing(95), // FLOOR_MOD
    kernel(97, Some(layout("TfLiteResizeNearestNeighborParams", 2, 1)), None, Prepare::Nothing),
    kernel(98, Some(LEAKY_RELU_PARAMS), Some(layout("tflite::LeakyReluOpData", 24, 4)), Prepare::Nothing),
    kernel(
        99,
        None,
        Some(private("tensorflow/lite/micro/kernels/squared_difference.cc", "tflite::OpData", 112, 8)),
        Prepare::Nothing,
    ),
    kernel(
        100,
        Some(layout("TfLiteMirrorPaddingParams", 1, 1)),
        Some(private("tensorflow/lite/micro/kernels/mirror_pad.cc", "tflite::OpDataMirrorPad", 20, 4)),
        Prepare::DimensionIndices,
    ),
    // ABS
    kernel(101, None, Some(OP_DATA_ABS_RSQRT), Prepare::Nothing),
    kernel(102, Some(layout("TfLiteSplitVParams", 4, 4)), None, Prepare::Nothing),
    allocates_nothing(104), // CEIL
    allocates_nothing(105), // REVERSE_V2
    // ADD_N
    kernel(106, None, None, Prepare::AddN(private("tensorflow/lite/micro/kernels/add_n.cc", "tflite::OpData", 40, 4))),
    // GATHER_ND
    copying_output_dims(allocates_nothing(107)),
    allocates_nothing(108), // COS
    kernel(
        111,
        None,
        Some(private("tensorflow/lite/micro/kernels/elu.cc", "tflite::OpData", 256, 1)),
        Prepare::Nothing,
    ),
    kernel(114, None, Some(layout("tflite::OpDataQuantizeReference", 32, 8)), Prepare::Nothing),
    allocates_nothing(116), // ROUND
    kernel(117, None, Some(layout("tflite::HardSwishParams", 20, 4)), Prepare::Nothing),
    // SELECT_V2
    kernel(
        123,
        None,
        Some(private("tensorflow/lite/micro/kernels/select.cc", "tflite::OpData", 1, 1)),
        Prepare::Nothing,
    ),
    kernel(
        128,
        Some(layout("TfLiteCumsumParams", 2, 1)),
        None,
        Prepare::OpDataForInt8(private("tensorflow/lite/micro/kernels/cumsum.cc", "tflite::OpData", 36, 4)),
    ),
    copying_output_dims(kernel(
        126,
        Some(layout("TfLiteBatchMatMulParams", 3, 1)),
        Some(layout("tflite::OpDataBatchMatmul", 16, 4)),
        Prepare::BatchMatMul(layout("tflite::QuantizationOpDataBatchMatmul", 28, 4)),
    )),
    allocates_nothing(130), // BROADCAST_TO
    kernel(140, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE), Prepare::Reduce { sums: false, indices: true }),
    allocates_nothing(145), // BROADCAST_ARGS
    allocates_nothing(151), // DYNAMIC_UPDATE_SLICE
    // Resource variables: the handle's id (its `OpData`, the data of its
    // output tensor, which TFLM therefore does not plan), a variable's
    // buffer at its first assignment.
    kernel(
        VAR_HANDLE,
        Some(layout("TfLiteVarHandleParams", 8, 4)),
        Some(private("tensorflow/lite/micro/kernels/var_handle.cc", "tflite::OpData", 4, 4)),
        Prepare::Nothing,
    ),
    allocates_nothing(READ_VARIABLE),
    kernel(ASSIGN_VARIABLE, None, None, Prepare::AssignVariable),
];

/// CMSIS-NN's kernels whose allocations the prediction knows, on each
/// code path: their options are the reference kernels', their `OpData`
/// (private to each `kernels/cmsis_nn/*.cc`) the reference one and what
/// CMSIS-NN adds: a scratch buffer's index for CONV_2D, DEPTHWISE_CONV_2D
/// and the poolings; two buffer indices, the kernel sums' pointer and
/// three dimensions for FULLY_CONNECTED; the number and size of rows for
/// SOFTMAX; a scratch index and the kernel sums' pointer for SVDF. ADD's is
/// the reference one's size.
const fn cmsis_nn_kernels(path: cmsis_nn::Path) -> [Kernel; 8] {
    let conv = layout("tflite::OpData (cmsis_nn/conv.cc)", 60, 4);
    let pooling = layout("tflite::OpData (cmsis_nn/pooling.cc)", 36, 4);
    let cmsis_nn = Prepare::CmsisNn(path);
    [
        kernel(0, Some(ADD_PARAMS), Some(layout("tflite::OpData (cmsis_nn/add.cc)", 60, 4)), Prepare::Nothing),
        kernel(1, Some(POOL_PARAMS), Some(pooling), cmsis_nn),
        kernel(3, Some(CONV_PARAMS), Some(conv), cmsis_nn),
        kernel(4, Some(DEPTHWISE_CONV_PARAMS), Some(conv), cmsis_nn),
        kernel(
            9,
            Some(FULLY_CONNECTED_PARAMS),
            Some(layout("tflite::OpData (cmsis_nn/fully_connected.cc)", 72, 4)),
            cmsis_nn,
        ),
        kernel(17, Some(POOL_PARAMS), Some(pooling), Prepare::Nothing),
        kernel(25, Some(SOFTMAX_PARAMS), Some(layout("tflite::CMSISNNSoftmaxParams", 64, 8)), Prepare::Nothing),
        kernel(27, Some(SVDF_PARAMS), Some(layout("tflite::CmsisNnOpDataSvdf", 40, 4)), cmsis_nn),
    ]
}
static CMSIS_NN_KERNELS: [[Kernel; 8]; 3] = [
    cmsis_nn_kernels(cmsis_nn::Path::Scalar),
    cmsis_nn_kernels(cmsis_nn::Path::Dsp),
    cmsis_nn_kernels(cmsis_nn::Path::Mve),
];

/// Why the prediction does not know a kernel: it runs other subgraphs.
const OTHER_SUBGRAPHS: &str = "it runs other subgraphs; the prediction covers one";

/// Every builtin operator today's `MicroMutableOpResolver` registers
/// (tflite-micro 90b983c) whose kernel is not in [`KERNELS`], and why. A
/// test holds a checkout's resolver to the two lists, so a kernel TFLM adds
/// is named until it is in one of them.
pub const NOT_PREDICTED: &[(&str, &str)] =
    &[("CALL_ONCE", OTHER_SUBGRAPHS), ("IF", OTHER_SUBGRAPHS), ("WHILE", OTHER_SUBGRAPHS)];

/// The reference kernels of the 2023 generation that allocate otherwise
/// than today's, read from tflite-micro 0c425da36 (2023-01-13): smaller
/// options for CONV_2D, FULLY_CONNECTED and STRIDED_SLICE; other `OpData`
/// (several then in namespaces of their own); no per-channel data
/// for FULLY_CONNECTED; the inputs' quantization for an int8
/// CONCATENATION; MEAN and SUM without index buffers; GATHER_ND without a
/// copy of its output's dims.
pub const KERNELS_2023: &[Kernel] = &[
    kernel(2, Some(CONCATENATION_PARAMS), Some(CONCATENATION_OP_DATA_2023), Prepare::InputQuantization),
    kernel(3, Some(layout("TfLiteConvParams", 24, 4)), Some(OP_DATA_CONV), Prepare::PerChannel { dim: 0 }),
    kernel(
        9,
        Some(layout("TfLiteFullyConnectedParams", 4, 1)),
        Some(layout("tflite::OpDataFullyConnected", 36, 4)),
        Prepare::UnpacksInt4,
    ),
    kernel(21, None, Some(layout("tflite::Relu6OpData", 2, 1)), Prepare::Nothing),
    kernel(28, None, Some(TANH_OP_DATA_2023), Prepare::Nothing),
    kernel(34, None, Some(PAD_OP_DATA_2023), Prepare::Nothing),
    kernel(40, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE_2023), Prepare::Reduce { sums: true, indices: false }),
    kernel(
        44,
        Some(layout("TfLiteUnidirectionalSequenceLSTMParams", 16, 4)),
        Some(private(
            "tensorflow/lite/micro/kernels/unidirectional_sequence_lstm.cc",
            "tflite::UnidirectionalSequenceLstmOpData",
            384,
            4,
        )),
        Prepare::Lstm2023,
    ),
    kernel(
        45,
        Some(layout("TfLiteStridedSliceParams", 20, 4)),
        Some(layout("tflite::StridedSliceParams", 84, 4)),
        Prepare::Nothing,
    ),
    kernel(58, None, Some(COMPARISON_OP_DATA_2023), Prepare::Nothing),
    kernel(60, None, Some(PAD_OP_DATA_2023), Prepare::Nothing),
    kernel(61, None, Some(COMPARISON_OP_DATA_2023), Prepare::Nothing),
    kernel(62, None, Some(COMPARISON_OP_DATA_2023), Prepare::Nothing),
    kernel(63, None, Some(COMPARISON_OP_DATA_2023), Prepare::Nothing),
    kernel(71, None, Some(COMPARISON_OP_DATA_2023), Prepare::Nothing),
    kernel(72, None, Some(COMPARISON_OP_DATA_2023), Prepare::Nothing),
    kernel(74, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE_2023), Prepare::Reduce { sums: true, indices: false }),
    kernel(76, None, Some(OP_DATA_ABS_RSQRT_2023), Prepare::Nothing),
    kernel(82, Some(REDUCER_PARAMS), Some(OP_DATA_REDUCE_2023), Prepare::Reduce { sums: false, indices: true }),
    kernel(101, None, Some(OP_DATA_ABS_RSQRT_2023), Prepare::Nothing),
    allocates_nothing(107), // GATHER_ND
    kernel(
        123,
        None,
        Some(private("tensorflow/lite/micro/kernels/select.cc", "tflite::OpData", 2, 1)),
        Prepare::Nothing,
    ),
];
const OP_DATA_REDUCE_2023: Layout = layout("tflite::OpDataReduce", 40, 4);
const CONCATENATION_OP_DATA_2023: Layout =
    private("tensorflow/lite/micro/kernels/concatenation.cc", "tflite::ops::micro::concatenation::OpData", 24, 4);
const COMPARISON_OP_DATA_2023: Layout =
    private("tensorflow/lite/micro/kernels/comparisons.cc", "tflite::ops::micro::comparisons::OpData", 32, 4);
const OP_DATA_ABS_RSQRT_2023: Layout =
    private("tensorflow/lite/micro/kernels/elementwise.cc", "tflite::ops::micro::elementwise::OpDataAbsRsqrt", 20, 4);
const TANH_OP_DATA_2023: Layout =
    private("tensorflow/lite/micro/kernels/tanh.cc", "tflite::ops::micro::activations::OpData", 16, 4);
const PAD_OP_DATA_2023: Layout = private("tensorflow/lite/micro/kernels/pad.cc", "tflite::OpData", 56, 4);

/// Today's kernels the 2023 generation does not have: EMBEDDING_LOOKUP,
/// REDUCE_MIN, REVERSE_V2, BATCH_MATMUL, REDUCE_ALL, DYNAMIC_UPDATE_SLICE
/// (a test holds a 2023 checkout's resolver to it).
pub const ABSENT_2023: &[i32] = &[7, 89, 105, 126, 140, 151];

/// Every builtin operator the 2023 generation's resolver registers
/// (tflite-micro 0c425da36) whose kernel the prediction does not know, and
/// why.
pub const NOT_PREDICTED_2023: &[(&str, &str)] =
    &[("CALL_ONCE", OTHER_SUBGRAPHS), ("IF", OTHER_SUBGRAPHS), ("WHILE", OTHER_SUBGRAPHS)];

/// The operators `tflm`'s resolver registers that the prediction does not
/// know, and why.
pub fn not_predicted_operators(tflm: Generation) -> &'static [(&'static str, &'static str)] {
    match tflm {
        Generation::Tflm2023 => NOT_PREDICTED_2023,
        _ => NOT_PREDICTED,
    }
}

/// Whether the prediction knows the kernel of builtin `code` in `tflm`
/// with `kernels`: the reference kernel's, or CMSIS-NN's where CMSIS-NN has
/// its own (whose model-dependent branches it may still name).
pub fn knows(code: i32, kernels: KernelPath, tflm: Generation) -> bool {
    kernel_of(&OperatorCode { builtin: code, custom: None, version: 1 }, kernels, tflm).is_some()
}

/// The headers that declare every type of the prediction but those private
/// to a source ([`Layout::private_to`]), for the test that compiles them.
pub const DECLARED_IN: &[&str] = &[
    "tensorflow/lite/micro/micro_allocation_info.h",
    "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h",
    "tensorflow/lite/micro/memory_planner/linear_memory_planner.h",
    "tensorflow/lite/micro/recording_micro_allocator.h",
    "tensorflow/lite/micro/micro_resource_variable.h",
    "tensorflow/lite/micro/kernels/activations.h",
    "tensorflow/lite/micro/kernels/add.h",
    "tensorflow/lite/micro/kernels/batch_matmul.h",
    "tensorflow/lite/micro/kernels/conv.h",
    "tensorflow/lite/micro/kernels/dequantize.h",
    "tensorflow/lite/micro/kernels/fully_connected.h",
    "tensorflow/lite/micro/kernels/hard_swish.h",
    "tensorflow/lite/micro/kernels/leaky_relu.h",
    "tensorflow/lite/micro/kernels/logistic.h",
    "tensorflow/lite/micro/kernels/lstm_shared.h",
    "tensorflow/lite/micro/kernels/mul.h",
    "tensorflow/lite/micro/kernels/pad.h",
    "tensorflow/lite/micro/kernels/pooling.h",
    "tensorflow/lite/micro/kernels/prelu.h",
    "tensorflow/lite/micro/kernels/quantize.h",
    "tensorflow/lite/micro/kernels/reduce.h",
    "tensorflow/lite/micro/kernels/softmax.h",
    "tensorflow/lite/micro/kernels/strided_slice.h",
    "tensorflow/lite/micro/kernels/sub.h",
    "tensorflow/lite/micro/kernels/svdf.h",
];

/// The headers of [`DECLARED_IN`] a tree of `tflm` has (the 2023
/// generation's strided slice keeps its parameters in its source, and it has
/// no BATCH_MATMUL).
pub fn declared_in(tflm: Generation) -> Vec<&'static str> {
    let since_2023 = ["tensorflow/lite/micro/kernels/batch_matmul.h", "tensorflow/lite/micro/kernels/strided_slice.h"];
    DECLARED_IN.iter().copied().filter(|h| tflm != Generation::Tflm2023 || !since_2023.contains(h)).collect()
}

/// Every layout the prediction for `tflm` uses, for the test that compiles
/// them.
pub fn layouts(tflm: Generation) -> Vec<Layout> {
    let variable = if tflm == Generation::Tflm2023 { RESOURCE_VARIABLE_2023 } else { RESOURCE_VARIABLE };
    let kernels = KERNELS.iter().filter_map(|k| {
        kernel_of(&OperatorCode { builtin: k.code, custom: None, version: 1 }, KernelPath::Reference, tflm)
    });
    [
        ARENA_ALLOCATOR,
        PLANNER,
        LINEAR_PLANNER,
        MICRO_ALLOCATOR,
        RECORDING_ARENA_ALLOCATOR,
        RECORDING_MICRO_ALLOCATOR,
        BUILTIN_DATA_ALLOCATOR,
        SUBGRAPH_ALLOCATIONS,
        EVAL_TENSOR,
        NODE_AND_REGISTRATION,
        TENSOR,
        AFFINE_QUANTIZATION,
        SCRATCH_HANDLE,
        RESOURCE_VARIABLES,
        variable,
        SCRATCH_REQUEST,
        ALLOCATION_INFO,
        BUFFER_REQUIREMENTS,
        LIST_ENTRY,
    ]
    .into_iter()
    .chain(kernels.flat_map(|k| k.options.into_iter().chain(k.op_data).chain(k.prepare.op_data())))
    .collect()
}

/// `LUTSize<int16_t>()`: entries of each int16 softmax table.
const INT16_TABLE_ENTRIES: usize = 513;

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
    fn bytes(&self) -> usize {
        self.requests_head + self.temporaries + self.tail
    }
}

/// The tail as TFLM's recording allocator would account for it.
#[derive(Default)]
struct Recorder {
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

/// The known kernel of an operator code among `tflm`'s `kernels` (none for
/// a custom operator, for a CMSIS-NN kernel the prediction does not know on
/// that code path, or for one the 2023 generation lacks or is not
/// predicted in).
fn kernel_of(code: &OperatorCode, kernels: KernelPath, tflm: Generation) -> Option<&'static Kernel> {
    if code.custom.is_some() {
        return None;
    }
    let today = || KERNELS.iter().find(|k| k.code == code.builtin);
    match (kernels, tflm) {
        (KernelPath::CmsisNn(_), Generation::Tflm2023) => None,
        (KernelPath::CmsisNn(path), _) if cmsis_nn::SPECIALIZED.contains(&code.builtin) => {
            CMSIS_NN_KERNELS[path as usize].iter().find(|k| k.code == code.builtin)
        }
        (_, Generation::Tflm2023) => {
            let name = bundled::builtin_name(code.builtin);
            if ABSENT_2023.contains(&code.builtin) || NOT_PREDICTED_2023.iter().any(|(n, _)| *n == name) {
                return None;
            }
            KERNELS_2023.iter().find(|k| k.code == code.builtin).or_else(today)
        }
        _ => today(),
    }
}

/// Why no prediction is made for `model` with `tflm`'s `kernels`, when
/// there is a reason.
pub fn not_predicted(model: &Model, kernels: KernelPath, tflm: Generation) -> Option<String> {
    if model.subgraphs.len() > 1 {
        return Some(format!("the model has {} subgraphs; the prediction covers one", model.subgraphs.len()));
    }
    if tflm == Generation::Tflm2023 && kernels != KernelPath::Reference {
        return Some("the table of the 2023 generation holds TFLM's reference kernels only".into());
    }
    if let Some(why) = lstm_unpredicted(model, tflm) {
        return Some(why);
    }
    if let KernelPath::CmsisNn(path) = kernels {
        if let Some(why) = cmsis_nn::unmodelled(model, path) {
            return Some(why);
        }
    }
    if let Err(why) = variables(model) {
        return Some(why);
    }
    let mut unknown: Vec<String> = Vec::new();
    for code in model.operator_codes.iter().filter(|c| kernel_of(c, kernels, tflm).is_none()) {
        let name = code.custom.clone().unwrap_or_else(|| bundled::builtin_name(code.builtin).to_owned());
        let name = match kernels {
            KernelPath::CmsisNn(path) if cmsis_nn::SPECIALIZED.contains(&code.builtin) => {
                format!("CMSIS-NN's {name} ({})", path.name())
            }
            _ => name,
        };
        if !unknown.contains(&name) {
            unknown.push(name);
        }
    }
    (!unknown.is_empty()).then(|| {
        format!("what the kernels of {} allocate in the arena is not known to the prediction", unknown.join(", "))
    })
}

/// A model's resource variables as TFLM's `MicroResourceVariables` numbers
/// them: the variable each handle tensor (a VAR_HANDLE's output) names,
/// handles of the same container and shared name being one variable (a
/// handle without a container names any container's), and how many handles
/// there are (hilmem's firmware makes room for a variable per handle).
struct Variables {
    of_handle: BTreeMap<i32, usize>,
    handles: usize,
}

/// Why the UNIDIRECTIONAL_SEQUENCE_LSTMs of `model`'s first subgraph are
/// not predicted on `tflm`, if they are not: today's kernel loads only the
/// LSTM with every gate's weights and biases and without peepholes or
/// projection (`LstmTensors` in `lstm_eval.cc` fails its Prepare on any
/// other); the 2023 generation's is predicted for a float input only.
fn lstm_unpredicted(model: &Model, tflm: Generation) -> Option<String> {
    let sg = model.subgraphs.first()?;
    let lstms = sg.operators.iter().filter(|op| {
        let code = model.operator_codes.get(op.opcode_index as usize).filter(|c| c.custom.is_none());
        code.is_some_and(|c| c.builtin == UNIDIRECTIONAL_SEQUENCE_LSTM)
    });
    let given = |op: &Operator, i: usize| op.inputs.get(i).is_some_and(|&t| t >= 0);
    for op in lstms {
        if tflm == Generation::Tflm2023 {
            let input = op.inputs.first().and_then(|&t| usize::try_from(t).ok()).and_then(|t| sg.tensors.get(t));
            if input.is_none_or(|t| t.kind != FLOAT32) {
                return Some(
                    "the 2023 generation's UNIDIRECTIONAL_SEQUENCE_LSTM is predicted for a float input only (its \
                     integer path's allocations are not in the table)"
                        .into(),
                );
            }
        } else if (1..=8).chain(12..=15).any(|i| !given(op, i)) || (9..=11).chain(16..=17).any(|i| given(op, i)) {
            return Some(
                "today's UNIDIRECTIONAL_SEQUENCE_LSTM kernel loads only an LSTM with every gate's weights and \
                 biases and no peephole or projection, and fails at Prepare on this one (CIFG, peepholes or a \
                 projection)"
                    .into(),
            );
        }
    }
    None
}

/// The resource variables of `model`'s first subgraph, or why TFLM's
/// allocation for them cannot be told from the model file.
fn variables(model: &Model) -> Result<Variables, String> {
    let mut named: Vec<[Option<String>; 2]> = Vec::new();
    let mut of_handle = BTreeMap::new();
    let mut handles = 0;
    for (step, op) in model.subgraphs.first().map_or(&[][..], |sg| &sg.operators).iter().enumerate() {
        let code = model.operator_codes.get(op.opcode_index as usize).filter(|c| c.custom.is_none());
        match code.map(|c| c.builtin) {
            Some(VAR_HANDLE) => {
                handles += 1;
                let [container, shared_name] = op.variable.clone().unwrap_or_default();
                if shared_name.is_none() {
                    return Err(format!("the VAR_HANDLE at step {step} has no shared name, which TFLM compares"));
                }
                let same = |[c, s]: &[Option<String>; 2]| (container.is_none() || container == *c) && shared_name == *s;
                let id = named.iter().position(same).unwrap_or_else(|| {
                    named.push([container, shared_name]);
                    named.len() - 1
                });
                of_handle.extend(op.outputs.iter().map(|&o| (o, id)));
            }
            // Its Prepare allocates the variable only when the handle's id
            // is known by then: a VAR_HANDLE before it has set it.
            Some(ASSIGN_VARIABLE) => {
                let handle = op.inputs.first().copied().unwrap_or(-1);
                if !of_handle.contains_key(&handle) {
                    return Err(format!(
                        "the ASSIGN_VARIABLE at step {step} takes its resource from tensor {handle}, which no \
                         VAR_HANDLE before it gives"
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(Variables { of_handle, handles })
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
fn replay(
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
                for bytes in super::svdf_scratch(data, filters, output).map_err(err)? {
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
fn temporary_bytes(t: &Tensor) -> usize {
    let channels = t.quantization.channels();
    TENSOR.bytes + if channels > 0 { AFFINE_QUANTIZATION.bytes + 4 * (1 + channels) } else { 0 }
}

/// Why `model`'s least arena on a TFLM of `tflm` is not where
/// `AllocateTensors` stops accepting it: a kernel that takes temporary
/// tensors in `Eval` too (2023's SELECT_V2), whose `Invoke` needs room of
/// its own. None where it is.
pub fn least_set_by_eval(model: &Model, tflm: Generation) -> Option<&'static str> {
    let select_v2 = model.operator_codes.iter().any(|c| c.builtin == SELECT_V2);
    (tflm == Generation::Tflm2023 && select_v2).then_some(
        "the 2023 generation's SELECT_V2 takes temporary tensors in Eval too, so the least arena is where Invoke \
         runs, which is measured, not predicted",
    )
}

/// Whether the table of the temporaries `Prepare` takes has the kernel of
/// `code` (so its least arena can be predicted).
pub fn prepare_read(code: i32, kernels: KernelPath, tflm: Generation) -> bool {
    temporaries(code, kernels, tflm, &Operator::default(), &tflite::Subgraph::default()).is_some()
}

/// The temporary tensors the `Prepare` of `op`'s kernel takes, as read from
/// its source, as indices of the subgraph's tensors. A tensor taken twice
/// counts twice (a convolution takes its tensors again once it has
/// allocated its per-channel data): TFLM gives them all back only once the
/// node is prepared. An optional input left out is not taken. None for a
/// kernel not in the table.
fn temporaries(
    code: i32,
    kernels: KernelPath,
    tflm: Generation,
    op: &Operator,
    sg: &tflite::Subgraph,
) -> Option<Vec<usize>> {
    let i = |i: usize| op.inputs.get(i).and_then(|&t| usize::try_from(t).ok());
    let o = |i: usize| op.outputs.get(i).and_then(|&t| usize::try_from(t).ok());
    let every_input_from = |from: usize| (from..op.inputs.len()).map(i).collect::<Vec<_>>();
    let kind = |t: Option<usize>| t.and_then(|t| sg.tensors.get(t)).map(|t| t.kind);
    let cmsis_nn = matches!(kernels, KernelPath::CmsisNn(_));
    let taken: Vec<Option<usize>> = match code {
        // The element-wise binaries and the others that take two inputs and
        // the output.
        0 | 7 | 18 | 23 | 36 | 39 | 41 | 42 | 54 | 70 | 90 | 94 | 95 | 97 | 99 | 100 | 105 | 107 | 126 | 128 | 130
        | 145 => vec![i(0), i(1), o(0)],
        // Three inputs (PAD's third only where given) and the output.
        34 | 60 | 65 | 123 | 151 => vec![i(0), i(1), i(2), o(0)],
        45 => vec![i(0), i(1), i(2), i(3), o(0)],
        // CMSIS-NN's AVERAGE_POOL_2D: the reference `PoolingPrepare`, then
        // its own.
        1 if cmsis_nn => vec![i(0), o(0), i(0), o(0)],
        // The input and the output.
        1 | 5 | 6 | 11 | 12 | 14 | 17 | 19 | 22 | 25 | 26 | 37 | 38 | 43 | 47 | 50 | 53 | 66 | 73 | 75 | 76 | 87
        | 92 | 93 | 98 | 101 | 104 | 108 | 111 | 114 | 116 | 117 => vec![i(0), o(0)],
        // RELU6, SPLIT (its axis), READ_VARIABLE (the handle).
        21 | 49 | READ_VARIABLE => vec![i(0)],
        ASSIGN_VARIABLE => vec![i(1)],
        // SPLIT_V: its axis.
        102 => vec![i(2)],
        // The comparisons: both inputs.
        58 | 61 | 62 | 63 | 71 | 72 => vec![i(0), i(1)],
        // CONCATENATION: the first input and the output, then every input;
        // in 2023 the output again and, for int8, every input once more.
        2 if tflm == Generation::Tflm2023 => {
            let again = if kind(i(0)) == Some(INT8) { every_input_from(0) } else { vec![] };
            [vec![i(0), o(0)], every_input_from(0), vec![o(0)], again].concat()
        }
        2 => [vec![i(0), o(0)], every_input_from(0)].concat(),
        // CONV_2D, DEPTHWISE_CONV_2D: the output, input and filter (CMSIS-NN:
        // in another order), then the input, filter, bias and output again.
        3 | 4 => vec![o(0), i(0), i(1), i(0), i(1), i(2), o(0)],
        9 => vec![i(0), i(1), i(2), o(0)],
        27 => vec![i(0), i(1), i(2), i(3), i(4), o(0)],
        28 => vec![i(0), i(0), o(0)],
        // The reductions: input, output and axis, and again in
        // `PrepareSimple`, where the output only for an int8 input.
        40 | 74 | 82 | 89 | 140 => {
            let int8 = kind(i(0)) == Some(INT8);
            vec![i(0), o(0), i(1), i(0), i(1), if int8 { o(0) } else { None }]
        }
        // TRANSPOSE_CONV: the output, input and filter, then for an integer
        // input those again with the bias.
        67 => {
            let again = if kind(i(2)) == Some(FLOAT32) { vec![] } else { vec![i(2), i(1), i(3), o(0)] };
            [vec![o(0), i(2), i(1)], again].concat()
        }
        // ADD_N: the first input and the output, then every other input.
        106 => [vec![i(0), o(0)], every_input_from(1)].concat(),
        // UNIDIRECTIONAL_SEQUENCE_LSTM of 2023 (float): each given input of
        // the first twenty, the input-to-input weights twice, the output,
        // and with layer normalisation its four coefficients (the forget
        // gate's twice).
        UNIDIRECTIONAL_SEQUENCE_LSTM if tflm == Generation::Tflm2023 => {
            let layer_norm = op.inputs.len() == 24 && i(21).is_some();
            let mut taken = vec![if op.inputs.len() == 24 { i(21) } else { None }, i(0), i(4), i(8)];
            taken.extend((1..=3).chain(5..=7).chain(9..=17).map(i));
            if layer_norm {
                taken.extend((20..=23).map(i));
            }
            taken.extend([o(0), i(18), i(19), i(1)]);
            taken
        }
        // Today's: each of its 24 inputs given, and the output.
        UNIDIRECTIONAL_SEQUENCE_LSTM => [(0..24).map(i).collect(), vec![o(0)]].concat(),
        8 | 55 | 56 | 57 | 59 | 77 | 79 | 83 | 84 | 86 | 88 | VAR_HANDLE => vec![],
        _ => return None,
    };
    Some(taken.into_iter().flatten().collect())
}

/// The least arena today's allocator accepts for a model of `tensors`
/// tensors whose tail is `tail`, planned into a head of `head` bytes from
/// `planned` buffers with `planner`: the highest of what stays (head and
/// tail) and of what it borrows beside the tail standing then, with nothing
/// handed out over memory still held: each kernel's `Prepare` (its
/// temporaries above the head of scratch-buffer requests), the planner's
/// `AllocationInfo` array (which the variables, allocated while it is
/// held, must clear in today's TFLM) and the greedy planner's arrays in
/// what remains, 16-byte aligned.
pub fn least_arena(tail: &Prediction, tensors: usize, planned: usize, head: usize, planner: Planner) -> LeastArena {
    let b = &tail.borrowing;
    let requests = SCRATCH_REQUEST.bytes * (b.requests + REQUESTS_AHEAD);
    // One subgraph's offset into the entries, then the entries.
    let entries = ALLOCATION_INFO.bytes * (tensors + b.requests);
    let info_end = requests + 4 + entries;
    let planner_bytes = match planner {
        Planner::Greedy | Planner::Offline => GREEDY_BYTES_PER_BUFFER * planned,
        Planner::Linear => 0,
    };
    let (info_aligned, tail_aligned) =
        (info_end.next_multiple_of(BUFFER_ALIGNMENT), b.planning_tail.next_multiple_of(BUFFER_ALIGNMENT));
    let planning = format!(
        "planning: {requests} B of scratch-buffer requests, 4 B of subgraph offsets and {entries} B of \
         AllocationInfo ({info_aligned} B aligned), then {planner_bytes} B of the planner's arrays, beside a {}-byte \
         tail ({tail_aligned} B aligned)",
        b.planning_tail
    );
    let mut candidates = vec![
        (head + tail.bytes, format!("what stays: a {head}-byte head and a {}-byte tail", tail.bytes)),
        (info_aligned + planner_bytes + tail_aligned, planning),
    ];
    if let Some(p) = b.prepare {
        candidates.push((
            p.bytes(),
            format!(
                "the Prepare of operator {}: {} B of scratch-buffer requests and {} B of temporary tensors, beside a \
                 {}-byte tail",
                p.step, p.requests_head, p.temporaries, p.tail
            ),
        ));
    }
    // The first of the highest: what stays, where it ties.
    let (bytes, set_by) = candidates.into_iter().rev().max_by_key(|(bytes, _)| *bytes).expect("candidates");
    LeastArena { bytes: bytes.next_multiple_of(BUFFER_ALIGNMENT), set_by }
}

/// Output channels of a filter: its dimension `dim`.
fn channels(filter: &Tensor, dim: usize) -> Result<usize, ReadError> {
    let channels = filter.shape.get(dim).copied().unwrap_or(0);
    usize::try_from(channels).map_err(|_| ReadError { at: "tail", why: format!("filter `{}`", filter.name) })
}

/// Elements of a tensor a kernel sizes a buffer by.
fn elements(t: &Tensor) -> Result<usize, ReadError> {
    t.elements().ok_or_else(|| ReadError { at: "tail", why: format!("tensor `{}` has shape {:?}", t.name, t.shape) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tflite::{Subgraph, RESOURCE};

    /// Two handles named `first` and `second` (shared names; no
    /// container), the input assigned through each (through `assign_from`
    /// as the first assignment's handle), the first read back.
    fn two_handles(first: &str, second: &str, assign_from: i32) -> Model {
        let tensors = vec![
            Tensor::plain("input", &[1, 4], FLOAT32, 0),
            Tensor::plain("first", &[], RESOURCE, 0),
            Tensor::plain("second", &[], RESOURCE, 0),
            Tensor::plain("output", &[1, 4], FLOAT32, 0),
        ];
        let operators = vec![
            Operator::handle(0, 1, first),
            Operator::handle(0, 2, second),
            Operator::plain(1, &[assign_from, 0], &[]),
            Operator::plain(1, &[2, 0], &[]),
            Operator::plain(2, &[1], &[3]),
        ];
        let subgraph = Subgraph { tensors, inputs: vec![0], outputs: vec![3], operators };
        Model::of_builtins(&[VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE], subgraph)
    }

    fn tail(model: &Model) -> usize {
        predict(model, Allocator::Plain, Planner::Greedy, KernelPath::Reference, Generation::Current).unwrap().bytes
    }

    #[test]
    fn handles_of_one_shared_name_are_one_variable_with_one_buffer() {
        let (one, two) = (two_handles("state", "state", 1), two_handles("state", "other", 1));
        assert_eq!(not_predicted(&one, KernelPath::Reference, Generation::Current), None);
        // The second variable's buffer: the input's 16 bytes.
        assert_eq!(tail(&two) - tail(&one), 16);
    }

    #[test]
    fn an_assignment_through_a_handle_no_var_handle_gives_is_not_predicted() {
        let why = not_predicted(&two_handles("state", "state", 0), KernelPath::Reference, Generation::Current).unwrap();
        assert!(why.contains("ASSIGN_VARIABLE at step 2 takes its resource from tensor 0"), "{why}");
    }

    #[test]
    fn a_handle_without_a_shared_name_is_not_predicted() {
        let mut model = two_handles("state", "state", 1);
        model.subgraphs[0].operators[1].variable = Some([Some("here".into()), None]);
        let why = not_predicted(&model, KernelPath::Reference, Generation::Current).unwrap();
        assert!(why.contains("VAR_HANDLE at step 1 has no shared name"), "{why}");
    }
}
