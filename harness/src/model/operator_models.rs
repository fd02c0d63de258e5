//! One-operator models: for kernels of today's TFLM whose arena the
//! analyzer knows and no example model runs, a small valid model that runs
//! the kernel alone (float32; int8 too where the kernel's int8 path is its
//! own). They are kept in `firmware/models/ops/` (equal to what
//! [`operator_models`] writes; a test checks) with a models file that gives
//! each an input and its answer, so that a test holds the prediction to
//! TFLM's figures on the Cortex-M7.

use crate::model::tflite::{self, Model, Operator, OperatorCode, Quantization, Subgraph, Tensor, FLOAT32, INT8};

/// The shape of every model's input (and output, but SQUEEZE's).
const SHAPE: [i32; 2] = [1, 4];

/// One operator of builtin `code` from the graph's input (fed to each of
/// its `operands`) to its output of shape `output`; int8 with the (scale,
/// zero point) of input and output given, else float32. Operator options
/// are left out: each kernel's defaults.
fn one_operator(code: i32, operands: usize, quantized: Option<[(f32, i64); 2]>, output: &[i32]) -> Vec<u8> {
    let tensor = |name: &str, shape: &[i32], i: usize| match quantized {
        Some(q) => Tensor {
            quantization: Quantization { scale: vec![q[i].0], zero_point: vec![q[i].1], dimension: 0 },
            ..Tensor::plain(name, shape, INT8, 0)
        },
        None => Tensor::plain(name, shape, FLOAT32, 0),
    };
    tflite::write(&Model {
        version: 3,
        description: Some(format!("hilmem one-operator model: {}", tflite::builtin_name(code))),
        metadata: vec![],
        operator_codes: vec![OperatorCode { builtin: code, custom: None, version: 1 }],
        subgraphs: vec![Subgraph {
            tensors: vec![tensor("input", &SHAPE, 0), tensor("output", output, 1)],
            inputs: vec![0],
            outputs: vec![1],
            operators: vec![Operator {
                opcode_index: 0,
                inputs: vec![0; operands],
                outputs: vec![1],
                options: 0,
                window: None,
            }],
        }],
        buffers: vec![0],
        offline_plan: None,
    })
}

/// Each one-operator model, by its file's stem: unary operators take the
/// input once, binary ones (MUL, SUB, DIV, FLOOR_DIV, FLOOR_MOD, MAXIMUM,
/// MINIMUM, SQUARED_DIFFERENCE, PRELU, whose alpha is the input, and
/// CONCATENATION, along axis 0) twice. MUL's int8
/// model squares in steps of 1/64 into steps of 1/32; LOGISTIC's int8 output
/// has the scale and zero point its kernel requires (1/256, -128).
pub fn operator_models() -> Vec<(&'static str, Vec<u8>)> {
    let float = |stem, code, operands| (stem, one_operator(code, operands, None, &SHAPE));
    vec![
        ("mul_int8", one_operator(18, 2, Some([(1.0 / 64.0, 0), (1.0 / 32.0, 0)]), &SHAPE)),
        float("mul_float", 18, 2),
        ("logistic_int8", one_operator(14, 1, Some([(1.0 / 16.0, 0), (1.0 / 256.0, -128)]), &SHAPE)),
        float("logistic_float", 14, 1),
        float("sub_float", 41, 2),
        float("div_float", 42, 2),
        float("floor_div_float", 90, 2),
        float("floor_mod_float", 95, 2),
        float("prelu_float", 54, 2),
        float("abs_float", 101, 1),
        float("rsqrt_float", 76, 1),
        float("l2_normalization_float", 11, 1),
        float("cast_float", 53, 1),
        float("tanh_float", 28, 1),
        float("elu_float", 111, 1),
        float("squared_difference_float", 99, 2),
        ("concatenation_float", one_operator(2, 2, None, &[2, 4])),
        float("maximum_float", 55, 2),
        float("minimum_float", 57, 2),
        float("relu_float", 19, 1),
        float("relu6_float", 21, 1),
        float("hard_swish_float", 117, 1),
        float("leaky_relu_float", 98, 1),
        float("floor_float", 8, 1),
        float("ceil_float", 104, 1),
        float("round_float", 116, 1),
        float("neg_float", 59, 1),
        float("exp_float", 47, 1),
        float("log_float", 73, 1),
        float("sin_float", 66, 1),
        float("cos_float", 108, 1),
        float("sqrt_float", 75, 1),
        float("square_float", 92, 1),
        float("zeros_like_float", 93, 1),
        ("squeeze_float", one_operator(43, 1, None, &[4])),
    ]
}
