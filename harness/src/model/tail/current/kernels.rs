//! What each kernel of today's TFLM allocates, as read from its source: the
//! tables of the reference kernels, of CMSIS-NN's and of the 2023
//! generation's where they differ, and which operators the prediction
//! does not know.

use crate::model::tail::cmsis_nn::{self, KernelPath};
use crate::model::tail::{layout, private, Layout};
use crate::model::tflite::{self, Model, Operator, OperatorCode, FLOAT32, INT8, VAR_HANDLE};
use crate::tflm::bundled;
use crate::tflm::tree::Generation;

use super::variables::variables;
use super::{ASSIGN_VARIABLE, READ_VARIABLE, SELECT_V2, UNIDIRECTIONAL_SEQUENCE_LSTM};

/// What `Prepare` allocates, beyond what `Init` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prepare {
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
    pub(super) const fn op_data(self) -> Option<Layout> {
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
    pub(super) prepare: Prepare,
    pub(super) copies_output_dims: bool,
}

pub(super) const fn kernel(code: i32, options: Option<Layout>, op_data: Option<Layout>, prepare: Prepare) -> Kernel {
    Kernel { code, options, op_data, prepare, copies_output_dims: false }
}

/// `kernel`, whose `Prepare` copies its output's dims first.
pub(super) const fn copying_output_dims(kernel: Kernel) -> Kernel {
    Kernel { copies_output_dims: true, ..kernel }
}

/// A kernel whose parser, `Init` and `Prepare` allocate nothing in the arena.
pub(super) const fn allocates_nothing(code: i32) -> Kernel {
    kernel(code, None, None, Prepare::Nothing)
}

pub(super) const ADD_PARAMS: Layout = layout("TfLiteAddParams", 2, 1);
pub(super) const POOL_PARAMS: Layout = layout("TfLitePoolParams", 40, 4);
pub(super) const CONV_PARAMS: Layout = layout("TfLiteConvParams", 28, 4);
pub(super) const DEPTHWISE_CONV_PARAMS: Layout = layout("TfLiteDepthwiseConvParams", 28, 4);
pub(super) const SOFTMAX_PARAMS: Layout = layout("TfLiteSoftmaxParams", 4, 4);
pub(super) const SVDF_PARAMS: Layout = layout("TfLiteSVDFParams", 8, 4);
pub(super) const FULLY_CONNECTED_PARAMS: Layout = layout("TfLiteFullyConnectedParams", 5, 1);
pub(super) const OP_DATA_FULLY_CONNECTED: Layout = layout("tflite::OpDataFullyConnected", 48, 4);
pub(super) const OP_DATA_CONV: Layout = layout("tflite::OpDataConv", 56, 4);
pub(super) const OP_DATA_POOLING: Layout = layout("tflite::OpDataPooling", 32, 4);
pub(super) const LEAKY_RELU_PARAMS: Layout = layout("TfLiteLeakyReluParams", 4, 4);
pub(super) const REDUCER_PARAMS: Layout = layout("TfLiteReducerParams", 1, 1);
pub(super) const OP_DATA_REDUCE: Layout = layout("tflite::OpDataReduce", 44, 4);
pub(super) const CONCATENATION_PARAMS: Layout = layout("TfLiteConcatenationParams", 8, 4);
pub(super) const CONCATENATION_OP_DATA: Layout =
    private("tensorflow/lite/micro/kernels/concatenation.cc", "tflite::OpData", 24, 4);
pub(super) const COMPARISON_OP_DATA: Layout =
    private("tensorflow/lite/micro/kernels/comparisons.cc", "tflite::OpData", 32, 4);
/// PAD's and PADV2's (`kernels/pad.h`).
pub(super) const PAD_OP_DATA: Layout = layout("tflite::OpData", 56, 4);
pub(super) const OP_DATA_ABS_RSQRT: Layout =
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
pub(super) const fn cmsis_nn_kernels(path: cmsis_nn::Path) -> [Kernel; 8] {
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
pub(super) static CMSIS_NN_KERNELS: [[Kernel; 8]; 3] = [
    cmsis_nn_kernels(cmsis_nn::Path::Scalar),
    cmsis_nn_kernels(cmsis_nn::Path::Dsp),
    cmsis_nn_kernels(cmsis_nn::Path::Mve),
];

/// Why the prediction does not know a kernel: it runs other subgraphs.
pub(super) const OTHER_SUBGRAPHS: &str = "it runs other subgraphs; the prediction covers one";

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
pub(super) const OP_DATA_REDUCE_2023: Layout = layout("tflite::OpDataReduce", 40, 4);
pub(super) const CONCATENATION_OP_DATA_2023: Layout =
    private("tensorflow/lite/micro/kernels/concatenation.cc", "tflite::ops::micro::concatenation::OpData", 24, 4);
pub(super) const COMPARISON_OP_DATA_2023: Layout =
    private("tensorflow/lite/micro/kernels/comparisons.cc", "tflite::ops::micro::comparisons::OpData", 32, 4);
pub(super) const OP_DATA_ABS_RSQRT_2023: Layout =
    private("tensorflow/lite/micro/kernels/elementwise.cc", "tflite::ops::micro::elementwise::OpDataAbsRsqrt", 20, 4);
pub(super) const TANH_OP_DATA_2023: Layout =
    private("tensorflow/lite/micro/kernels/tanh.cc", "tflite::ops::micro::activations::OpData", 16, 4);
pub(super) const PAD_OP_DATA_2023: Layout = private("tensorflow/lite/micro/kernels/pad.cc", "tflite::OpData", 56, 4);

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

/// The known kernel of an operator code among `tflm`'s `kernels` (none for
/// a custom operator, for a CMSIS-NN kernel the prediction does not know on
/// that code path, or for one the 2023 generation lacks or is not
/// predicted in).
pub(super) fn kernel_of(code: &OperatorCode, kernels: KernelPath, tflm: Generation) -> Option<&'static Kernel> {
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

/// Why the UNIDIRECTIONAL_SEQUENCE_LSTMs of `model`'s first subgraph are
/// not predicted on `tflm`, if they are not: today's kernel loads only the
/// LSTM with every gate's weights and biases and without peepholes or
/// projection (`LstmTensors` in `lstm_eval.cc` fails its Prepare on any
/// other); the 2023 generation's is predicted for a float input only.
pub(super) fn lstm_unpredicted(model: &Model, tflm: Generation) -> Option<String> {
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
pub(super) fn temporaries(
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
