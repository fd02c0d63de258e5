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

use super::cmsis_nn::KernelPath;
use super::{layout, private, Layout};
use crate::model::tflite::OperatorCode;
use crate::tflm::tree::Generation;

mod kernels;
mod least;
mod replay;
mod variables;

use kernels::{kernel_of, KERNELS};
pub use kernels::{
    knows, least_set_by_eval, not_predicted, not_predicted_operators, prepare_read, ABSENT_2023, NOT_PREDICTED,
};
pub use least::least_arena;
pub use replay::{predict, predict_joining, Allocator, Prediction};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::planner::Planner;
    use crate::model::tflite::{Model, Operator, Subgraph, Tensor, FLOAT32, RESOURCE, VAR_HANDLE};
    use crate::tflm::tree::Generation;

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
