//! One-operator models: for kernels of today's TFLM whose arena the
//! analyzer knows and no example model runs (or not on that type), a small
//! valid model that runs the kernel alone (float32; int8 too where the
//! kernel's Prepare reads the type, and for most kernels that only move
//! elements; SOFTMAX on int16). They are kept in `firmware/models/ops/` (equal to what
//! [`operator_models`] writes; a test checks) with a models file that gives
//! each an input and its answer, so that a test holds the prediction to
//! TFLM's figures on the Cortex-M7.

use harness::model::tflite::{
    self, Extras, Field, Model, Operator, OperatorCode, Quantization, Subgraph, Tensor, BATCH_MATMUL_OPTIONS, FLOAT32,
    INT16, INT8, RESOURCE, VAR_HANDLE,
};

use Field::{Byte, Float, Int};

/// The shape of most models' input (and output).
const SHAPE: [i32; 2] = [1, 4];

/// `TensorType` codes of the constants the models hold.
const INT32: u8 = 2;
const BOOL: u8 = 6;

/// An input of the operator: the graph's input, a constant tensor, a
/// variable (a float32 state of this shape, kept between inferences), or an
/// optional input left out.
#[derive(Debug, Clone)]
enum Operand {
    Input,
    /// Its tensor (named and given its buffer when written) and bytes.
    Constant(Tensor, Vec<u8>),
    Variable(&'static [i32]),
    Absent,
}

/// An int32 constant (axes, paddings, permutations, sizes, indices).
fn int32s(shape: &[i32], values: &[i32]) -> Operand {
    let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Operand::Constant(Tensor::plain("", shape, INT32, 0), data)
}

fn floats(shape: &[i32], values: &[f32]) -> Operand {
    let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Operand::Constant(Tensor::plain("", shape, FLOAT32, 0), data)
}

fn bools(shape: &[i32], values: &[bool]) -> Operand {
    Operand::Constant(Tensor::plain("", shape, BOOL, 0), values.iter().map(|&b| u8::from(b)).collect())
}

/// An int8 constant with one scale (zero point 0), given as levels.
fn int8s(shape: &[i32], scale: f32, levels: &[i8]) -> Operand {
    let quantization = Quantization { scale: vec![scale], zero_point: vec![0], dimension: 0 };
    let data = levels.iter().map(|&l| l as u8).collect();
    Operand::Constant(Tensor { quantization, ..Tensor::plain("", shape, INT8, 0) }, data)
}

/// A model of one operator of builtin `code`: the graph's input, of shape
/// `input`, and constants are its `operands`; its outputs have the shapes
/// `outputs`, and all are the graph's. Input and outputs are of the types
/// `kinds` (input, outputs); an int8 or int16 one has the (scale, zero
/// point) of `quantized` (input, outputs). Its options table, of type
/// `options.0`, has the fields `options.1` (vtable field, value); the rest
/// are each kernel's defaults.
#[derive(Clone)]
struct OneOperator<'a> {
    code: i32,
    input: &'a [i32],
    operands: Vec<Operand>,
    outputs: Vec<&'a [i32]>,
    kinds: [u8; 2],
    quantized: Option<[(f32, i64); 2]>,
    options: (u8, Vec<(u16, Field)>),
    /// A batched matrix product's `adj_x` and `adj_y`.
    adjoint: Option<[bool; 2]>,
}

impl OneOperator<'_> {
    /// `code` on float32 tensors of [`SHAPE`], taking the input `operands`
    /// times, its output of shape `output`.
    fn float(code: i32, operands: usize, output: &[i32]) -> OneOperator<'_> {
        OneOperator {
            code,
            input: &SHAPE,
            operands: vec![Operand::Input; operands],
            outputs: vec![output],
            kinds: [FLOAT32; 2],
            quantized: None,
            options: (0, vec![]),
            adjoint: None,
        }
    }

    /// The same operator with its float32 input and outputs int8, quantized
    /// as `quantized` (input, outputs).
    fn int8(self, quantized: [(f32, i64); 2]) -> Self {
        let kinds = self.kinds.map(|kind| if kind == FLOAT32 { INT8 } else { kind });
        OneOperator { kinds, quantized: Some(quantized), ..self }
    }

    fn write(&self) -> Vec<u8> {
        let tensor = |name: &str, shape: &[i32], kind: u8, i: usize| match self.quantized {
            Some(q) if kind == INT8 || kind == INT16 => Tensor {
                quantization: Quantization { scale: vec![q[i].0], zero_point: vec![q[i].1], dimension: 0 },
                ..Tensor::plain(name, shape, kind, 0)
            },
            _ => Tensor::plain(name, shape, kind, 0),
        };
        let mut tensors = vec![tensor("input", self.input, self.kinds[0], 0)];
        for (i, shape) in self.outputs.iter().enumerate() {
            let name = if i == 0 { "output".to_owned() } else { format!("output{i}") };
            tensors.push(tensor(&name, shape, self.kinds[1], 1));
        }
        let outputs: Vec<i32> = (1..tensors.len() as i32).collect();
        let mut buffers = vec![0];
        let mut extras = Extras::default();
        if !self.options.1.is_empty() {
            extras.options.insert(0, self.options.1.clone());
        }
        let inputs = self
            .operands
            .iter()
            .map(|operand| match operand {
                Operand::Input => 0,
                Operand::Constant(tensor, bytes) => {
                    let buffer = buffers.len();
                    let name = format!("constant{buffer}");
                    tensors.push(Tensor { name, buffer: buffer as u32, ..tensor.clone() });
                    buffers.push(bytes.len());
                    extras.buffers.insert(buffer, bytes.clone());
                    tensors.len() as i32 - 1
                }
                Operand::Variable(shape) => {
                    let name = format!("state{}", tensors.len());
                    tensors.push(Tensor { is_variable: true, ..Tensor::plain(&name, shape, FLOAT32, 0) });
                    tensors.len() as i32 - 1
                }
                Operand::Absent => -1,
            })
            .collect();
        let model = Model {
            version: 3,
            description: Some(format!(
                "hilmem one-operator model: {}",
                harness::tflm::bundled::builtin_name(self.code)
            )),
            metadata: vec![],
            operator_codes: vec![OperatorCode { builtin: self.code, custom: None, version: 1 }],
            subgraphs: vec![Subgraph {
                tensors,
                inputs: vec![0],
                outputs: outputs.clone(),
                operators: vec![Operator {
                    opcode_index: 0,
                    inputs,
                    outputs,
                    options: self.options.0,
                    window: None,
                    adjoint: self.adjoint,
                    variable: None,
                }],
            }],
            buffers,
            offline_plan: None,
        };
        tflite::write_with(&model, &extras)
    }
}

/// The resource-variable operators, which run only together: a handle
/// (VAR_HANDLE, shared name `state`, no container) to which the input is
/// assigned (ASSIGN_VARIABLE) and which is read back (READ_VARIABLE) as the
/// output, float32 of [`SHAPE`].
fn resource_variable() -> Vec<u8> {
    let tensors = vec![
        Tensor::plain("input", &SHAPE, FLOAT32, 0),
        Tensor::plain("handle", &[], RESOURCE, 0),
        Tensor::plain("output", &SHAPE, FLOAT32, 0),
    ];
    let operators =
        vec![Operator::handle(0, 1, "state"), Operator::plain(1, &[1, 0], &[]), Operator::plain(2, &[1], &[2])];
    let model = Model {
        description: Some("hilmem one-operator model: VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE".into()),
        ..Model::of_builtins(
            &[VAR_HANDLE, 144, 143],
            Subgraph { tensors, inputs: vec![0], outputs: vec![2], operators },
        )
    };
    tflite::write(&model)
}

/// Each one-operator model, by its file's stem. Unary operators take the
/// input once; binary ones (MUL, SUB, DIV, FLOOR_DIV, FLOOR_MOD, MAXIMUM,
/// MINIMUM, SQUARED_DIFFERENCE, PRELU, whose alpha is the input,
/// CONCATENATION, along axis 0, and ADD_N) twice. Operators that read
/// constant inputs (paddings, axes, a permutation, sizes, indices, a
/// shape, a condition) have them as constant tensors, with values chosen
/// so that the answer tells the operator's work from the input's;
/// comparisons compare the input with a constant, and logical operators
/// take a bool input and a constant. MUL's
/// int8 model squares in steps of 1/64 into steps of 1/32; LOGISTIC's and
/// LOG_SOFTMAX's int8 outputs have the scale and zero point their kernels
/// require (1/256 and -128; 16/256 and 127).
pub fn operator_models() -> Vec<(String, Vec<u8>)> {
    let float = |stem, code, operands| (stem, OneOperator::float(code, operands, &SHAPE).write());
    let int8 =
        |stem, code, operands, quantized| (stem, OneOperator::float(code, operands, &SHAPE).int8(quantized).write());
    let on = |code, input, operands, outputs| OneOperator {
        input,
        operands,
        outputs,
        ..OneOperator::float(code, 0, &SHAPE)
    };
    let with = |stem, code, input, operands, outputs| (stem, on(code, input, operands, outputs).write());
    let int8_with = |stem, code, input, operands, outputs, quantized| {
        (stem, on(code, input, operands, outputs).int8(quantized).write())
    };
    let arg = |code| OneOperator {
        operands: vec![Operand::Input, int32s(&[1], &[1])],
        kinds: [FLOAT32, INT32],
        ..OneOperator::float(code, 0, &[1])
    };
    let boolean = |stem, code, kinds, operand: Option<Operand>| {
        let operands = [Some(Operand::Input), operand].into_iter().flatten().collect();
        (stem, OneOperator { operands, kinds, ..OneOperator::float(code, 0, &SHAPE) }.write())
    };
    let optioned =
        |code, input, outputs, options| OneOperator { input, outputs, options, ..OneOperator::float(code, 1, &SHAPE) };
    let matmul_of = |adjoint| OneOperator {
        input: &[2, 2],
        outputs: vec![&[2, 2]],
        options: (BATCH_MATMUL_OPTIONS, vec![]),
        adjoint: Some(adjoint),
        ..OneOperator::float(126, 2, &SHAPE)
    };
    let matmul = |stem, adjoint| (stem, matmul_of(adjoint).write());
    let lstm = || {
        let (weight, bias) = (|w| floats(&[1, 1], &[w]), || floats(&[1], &[0.0]));
        let mut operands = vec![Operand::Input, weight(1.0), weight(-20.0), weight(1.0), weight(1.0)];
        operands.extend([weight(0.0), weight(0.0), weight(0.0), weight(0.0)]);
        operands.extend(vec![Operand::Absent; 3]);
        operands.extend([bias(), bias(), bias(), bias()]);
        operands.extend(vec![Operand::Absent; 2]);
        operands.extend([Operand::Variable(&[1, 1]), Operand::Variable(&[1, 1])]);
        operands.extend(vec![Operand::Absent; 4]);
        operands
    };
    // The same on a batch of 2, 3 cells and 2 inputs (the input weights 1,
    // the forget gate's -20), with an input gate or, with `cifg`, without
    // one (its weights and bias absent: the gate is the forget gate's
    // complement).
    let lstm_batch = |cifg: bool| {
        let weight = |w: f32| floats(&[3, 2], &[w; 6]);
        let (recurrent, bias) = (|| floats(&[3, 3], &[0.0; 9]), || floats(&[3], &[0.0; 3]));
        let gate = |operand: Operand| if cifg { Operand::Absent } else { operand };
        let mut operands = vec![Operand::Input, gate(weight(1.0)), weight(-20.0), weight(1.0), weight(1.0)];
        operands.extend([gate(recurrent()), recurrent(), recurrent(), recurrent()]);
        operands.extend(vec![Operand::Absent; 3]);
        operands.extend([gate(bias()), bias(), bias(), bias()]);
        operands.extend(vec![Operand::Absent; 2]);
        operands.extend([Operand::Variable(&[2, 3]), Operand::Variable(&[2, 3])]);
        operands.extend(vec![Operand::Absent; 4]);
        operands
    };
    let lstm_batch_of = |operands| {
        OneOperator {
            input: &[2, 1, 2],
            operands,
            outputs: vec![&[2, 1, 3]],
            options: (71, vec![(0, Byte(4))]),
            ..OneOperator::float(44, 0, &SHAPE)
        }
        .write()
    };
    let against = || Some(floats(&SHAPE, &[4.0, 2.0, 1.0, 3.0]));
    let input = || Operand::Input;
    let last_axis = || int32s(&[1], &[1]);
    let pad_one_each_side = || int32s(&[2, 2], &[0, 0, 1, 1]);
    let block = || int32s(&[2], &[2, 2]);
    let no_crops = || int32s(&[2, 2], &[0; 4]);
    let one = || int8s(&SHAPE, 1.0 / 16.0, &[16; 4]);
    let (sixteenth, eighth) = ((1.0 / 16.0, 0), (1.0 / 8.0, 0));
    // The kernels that only move elements (their Prepare does nothing of
    // its own for int8), each as a float32 model and as an int8 one with
    // input and output at scale 1/16.
    let moving = [
        ("mirror_pad", on(100, &SHAPE, vec![input(), pad_one_each_side()], vec![&[1, 6]])),
        ("transpose", on(39, &[2, 2], vec![input(), int32s(&[2], &[1, 0])], vec![&[2, 2]])),
        ("expand_dims", on(70, &SHAPE, vec![input(), int32s(&[1], &[0])], vec![&[1, 1, 4]])),
        ("gather", on(36, &[4], vec![input(), int32s(&[2], &[3, 0])], vec![&[2]])),
        ("gather_nd", on(107, &[2, 2], vec![input(), int32s(&[1, 1], &[1])], vec![&[1, 2]])),
        ("slice", on(65, &SHAPE, vec![input(), int32s(&[2], &[0, 1]), int32s(&[2], &[1, 2])], vec![&[1, 2]])),
        ("resize_nearest_neighbor", on(97, &[1, 2, 2, 1], vec![input(), int32s(&[2], &[4, 4])], vec![&[1, 4, 4, 1]])),
        ("broadcast_to", on(130, &SHAPE, vec![input(), int32s(&[2], &[2, 4])], vec![&[2, 4]])),
        ("reverse_v2", on(105, &SHAPE, vec![input(), last_axis()], vec![&SHAPE])),
        ("batch_to_space_nd", on(37, &[4, 1, 1, 1], vec![input(), block(), no_crops()], vec![&[1, 2, 2, 1]])),
        ("space_to_batch_nd", on(38, &[1, 2, 2, 1], vec![input(), block(), no_crops()], vec![&[4, 1, 1, 1]])),
        ("reduce_min", on(89, &SHAPE, vec![input(), last_axis()], vec![&[1]])),
        ("split", on(49, &SHAPE, vec![int32s(&[], &[1]), input()], vec![&[1, 2], &[1, 2]])),
        ("split_v", on(102, &SHAPE, vec![input(), int32s(&[2], &[3, 1]), int32s(&[], &[1])], vec![&[1, 3], &[1, 1]])),
        ("squeeze", OneOperator::float(43, 1, &[4])),
        // UnpackOptions: num 2 (axis 0); DepthToSpace- and SpaceToDepthOptions:
        // block_size 2.
        ("unpack", optioned(88, &[2, 2], vec![&[2], &[2]], (64, vec![(0, Int(2))]))),
        ("depth_to_space", optioned(5, &[1, 1, 1, 4], vec![&[1, 2, 2, 1]], (94, vec![(0, Int(2))]))),
        ("space_to_depth", optioned(26, &[1, 2, 2, 1], vec![&[1, 1, 1, 4]], (19, vec![(0, Int(2))]))),
        ("arg_max", arg(56)),
        ("arg_min", arg(79)),
        ("embedding_lookup", on(7, &[4, 1], vec![int32s(&[2], &[3, 0]), input()], vec![&[2, 1]])),
        ("resize_bilinear", on(23, &[1, 2, 2, 1], vec![input(), int32s(&[2], &[4, 4])], vec![&[1, 4, 4, 1]])),
        ("fill", on(94, &[], vec![int32s(&[2], &[1, 4]), input()], vec![&SHAPE])),
    ];
    let moved = moving.into_iter().flat_map(|(stem, op)| {
        [(format!("{stem}_float"), op.clone().write()), (format!("{stem}_int8"), op.int8([sixteenth; 2]).write())]
    });
    let models = vec![
        int8("mul_int8", 18, 2, [(1.0 / 64.0, 0), (1.0 / 32.0, 0)]),
        float("mul_float", 18, 2),
        int8("logistic_int8", 14, 1, [(1.0 / 16.0, 0), (1.0 / 256.0, -128)]),
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
        ("concatenation_float", OneOperator::float(2, 2, &[2, 4]).write()),
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
        with("pad_float", 34, &SHAPE, vec![input(), pad_one_each_side()], vec![&[1, 6]]),
        with("padv2_float", 60, &SHAPE, vec![input(), pad_one_each_side(), floats(&[], &[-1.0])], vec![&[1, 6]]),
        with(
            "dynamic_update_slice_float",
            151,
            &SHAPE,
            vec![input(), floats(&[1, 2], &[9.0, 9.0]), int32s(&[2], &[0, 1])],
            vec![&SHAPE],
        ),
        with(
            "select_v2_float",
            123,
            &SHAPE,
            vec![bools(&SHAPE, &[true, false, true, false]), input(), floats(&SHAPE, &[-1.0; 4])],
            vec![&SHAPE],
        ),
        with("sum_float", 74, &SHAPE, vec![input(), last_axis()], vec![&[1]]),
        with("reduce_max_float", 82, &SHAPE, vec![input(), last_axis()], vec![&[1]]),
        with("cumsum_float", 128, &SHAPE, vec![input(), int32s(&[], &[1])], vec![&SHAPE]),
        (
            "cumsum_int8",
            OneOperator { operands: vec![input(), int32s(&[], &[1])], ..OneOperator::float(128, 0, &SHAPE) }
                .int8([(1.0 / 16.0, 0), (1.0 / 8.0, 0)])
                .write(),
        ),
        boolean("equal_float", 71, [FLOAT32, BOOL], against()),
        boolean("not_equal_float", 72, [FLOAT32, BOOL], against()),
        boolean("greater_float", 61, [FLOAT32, BOOL], against()),
        boolean("greater_equal_float", 62, [FLOAT32, BOOL], against()),
        boolean("less_float", 58, [FLOAT32, BOOL], against()),
        boolean("less_equal_float", 63, [FLOAT32, BOOL], against()),
        boolean("logical_and_bool", 86, [BOOL; 2], Some(bools(&SHAPE, &[false, true, false, true]))),
        boolean("logical_or_bool", 84, [BOOL; 2], Some(bools(&SHAPE, &[false, true, false, false]))),
        boolean("logical_not_bool", 87, [BOOL; 2], None),
        (
            "reduce_all_bool",
            OneOperator { operands: vec![input(), last_axis()], kinds: [BOOL; 2], ..OneOperator::float(140, 0, &[1]) }
                .write(),
        ),
        // Pool2DOptions: stride and filter 2 by 2.
        (
            "l2_pool_2d_float",
            optioned(
                12,
                &[1, 2, 2, 1],
                vec![&[1, 1, 1, 1]],
                (5, vec![(1, Int(2)), (2, Int(2)), (3, Int(2)), (4, Int(2))]),
            )
            .write(),
        ),
        (
            "broadcast_args_int32",
            OneOperator {
                input: &[2],
                operands: vec![input(), int32s(&[2], &[2, 1])],
                kinds: [INT32; 2],
                ..OneOperator::float(145, 0, &[2])
            }
            .write(),
        ),
        // TRANSPOSE_CONV: output shape, a 1x1 filter that doubles, the input;
        // TransposeConvOptions: stride 1 by 1.
        (
            "transpose_conv_float",
            OneOperator {
                input: &[1, 2, 2, 1],
                operands: vec![int32s(&[4], &[1, 2, 2, 1]), floats(&[1, 1, 1, 1], &[2.0]), input()],
                options: (49, vec![(1, Int(1)), (2, Int(1))]),
                ..OneOperator::float(67, 0, &[1, 2, 2, 1])
            }
            .write(),
        ),
        (
            "transpose_conv_int8",
            OneOperator {
                input: &[1, 2, 2, 1],
                operands: vec![int32s(&[4], &[1, 2, 2, 1]), int8s(&[1, 1, 1, 1], 1.0 / 32.0, &[64]), input()],
                options: (49, vec![(1, Int(1)), (2, Int(1))]),
                ..OneOperator::float(67, 0, &[1, 2, 2, 1])
            }
            .int8([(1.0 / 16.0, 0), (1.0 / 8.0, 0)])
            .write(),
        ),
        float("log_softmax_float", 50, 1),
        int8("log_softmax_int8", 50, 1, [(1.0 / 16.0, 0), (16.0 / 256.0, 127)]),
        float("add_n_float", 106, 2),
        int8("add_n_int8", 106, 2, [(1.0 / 16.0, 0), (1.0 / 8.0, 0)]),
        // int8 paths of kernels whose float models are above: a constant
        // operand of 1.0 (0.5 for PRELU's alpha, 2.0 for DIV's divisor, the
        // comparisons' constant as for float), the input and output scales
        // each kernel requires (TANH's and L2_NORMALIZATION's output 1/128).
        int8_with("sub_int8", 41, &SHAPE, vec![input(), one()], vec![&SHAPE], [sixteenth, eighth]),
        int8_with("squared_difference_int8", 99, &SHAPE, vec![input(), one()], vec![&SHAPE], [sixteenth, eighth]),
        int8_with("maximum_int8", 55, &SHAPE, vec![input(), one()], vec![&SHAPE], [sixteenth; 2]),
        int8_with("minimum_int8", 57, &SHAPE, vec![input(), one()], vec![&SHAPE], [sixteenth; 2]),
        int8_with(
            "prelu_int8",
            54,
            &SHAPE,
            vec![input(), int8s(&SHAPE, 1.0 / 16.0, &[8; 4])],
            vec![&SHAPE],
            [sixteenth; 2],
        ),
        int8_with(
            "div_int8",
            42,
            &SHAPE,
            vec![input(), int8s(&SHAPE, 1.0 / 16.0, &[32; 4])],
            vec![&SHAPE],
            [sixteenth; 2],
        ),
        int8("relu_int8", 19, 1, [sixteenth; 2]),
        int8("relu6_int8", 21, 1, [sixteenth; 2]),
        int8("leaky_relu_int8", 98, 1, [sixteenth; 2]),
        int8("hard_swish_int8", 117, 1, [sixteenth; 2]),
        int8("tanh_int8", 28, 1, [sixteenth, (1.0 / 128.0, 0)]),
        int8("elu_int8", 111, 1, [sixteenth; 2]),
        int8("abs_int8", 101, 1, [sixteenth; 2]),
        int8("rsqrt_int8", 76, 1, [sixteenth, (1.0 / 64.0, 0)]),
        int8("l2_normalization_int8", 11, 1, [sixteenth, (1.0 / 128.0, 0)]),
        int8_with("concatenation_int8", 2, &SHAPE, vec![input(), input()], vec![&[2, 4]], [sixteenth; 2]),
        int8_with("pad_int8", 34, &SHAPE, vec![input(), pad_one_each_side()], vec![&[1, 6]], [sixteenth; 2]),
        int8_with("sum_int8", 74, &SHAPE, vec![input(), last_axis()], vec![&[1]], [sixteenth, (0.25, 0)]),
        int8_with("reduce_max_int8", 82, &SHAPE, vec![input(), last_axis()], vec![&[1]], [sixteenth; 2]),
        // The kernels with a constant of the input's type: PADV2's pad value
        // -1, SELECT_V2's other choice -1, DYNAMIC_UPDATE_SLICE's update 7
        // (9 does not fit int8 at scale 1/16), at the input's scale.
        int8_with(
            "padv2_int8",
            60,
            &SHAPE,
            vec![input(), pad_one_each_side(), int8s(&[], 1.0 / 16.0, &[-16])],
            vec![&[1, 6]],
            [sixteenth; 2],
        ),
        int8_with(
            "select_v2_int8",
            123,
            &SHAPE,
            vec![bools(&SHAPE, &[true, false, true, false]), input(), int8s(&SHAPE, 1.0 / 16.0, &[-16; 4])],
            vec![&SHAPE],
            [sixteenth; 2],
        ),
        int8_with(
            "dynamic_update_slice_int8",
            151,
            &SHAPE,
            vec![input(), int8s(&[1, 2], 1.0 / 16.0, &[112, 112]), int32s(&[2], &[0, 1])],
            vec![&SHAPE],
            [sixteenth; 2],
        ),
        // BATCH_MATMUL of the input `[2,2]` with itself: `x·x` (the kernel
        // copies the right operand transposed), `x·xᵀ` (adj_y: no copy) and
        // `xᵀ·x` (adj_x: both copied); int8 with output scale 1/4.
        matmul("batch_matmul_float", [false, false]),
        matmul("batch_matmul_adj_y_float", [false, true]),
        matmul("batch_matmul_adj_x_float", [true, false]),
        ("batch_matmul_int8", matmul_of([false, false]).int8([sixteenth, (0.25, 0)]).write()),
        // UNIDIRECTIONAL_SEQUENCE_LSTM: one step of one unit on the input
        // `[1,1,1]` (batch, time, input), its input weights 1 but the forget
        // gate's -20 (so that the cell forgets and every frame answers
        // alike), recurrent weights and biases 0, without peepholes,
        // projection or layer norms, its two states variables;
        // UnidirectionalSequenceLSTMOptions: the cell's activation TANH
        // (TFLM asserts one).
        (
            "unidirectional_sequence_lstm_float",
            OneOperator {
                input: &[1, 1, 1],
                operands: lstm(),
                outputs: vec![&[1, 1, 1]],
                options: (71, vec![(0, Byte(4))]),
                ..OneOperator::float(44, 0, &SHAPE)
            }
            .write(),
        ),
        ("unidirectional_sequence_lstm_batch_float", lstm_batch_of(lstm_batch(false))),
        ("unidirectional_sequence_lstm_cifg_float", lstm_batch_of(lstm_batch(true))),
        // SOFTMAX (SoftmaxOptions: beta 1) with an int16 output, at the
        // scales and zero points the kernel requires: from int16 (output
        // 1/32768), for which its Prepare builds two lookup tables, and from
        // int8 (output 1/65536, zero point -32768), for which it builds none.
        (
            "softmax_int16",
            OneOperator {
                kinds: [INT16; 2],
                quantized: Some([(1.0 / 1024.0, 0), (1.0 / 32768.0, 0)]),
                options: (9, vec![(0, Float(1.0))]),
                ..OneOperator::float(25, 1, &SHAPE)
            }
            .write(),
        ),
        (
            "softmax_int8_int16",
            OneOperator {
                kinds: [INT8, INT16],
                quantized: Some([sixteenth, (1.0 / 65536.0, -32768)]),
                options: (9, vec![(0, Float(1.0))]),
                ..OneOperator::float(25, 1, &SHAPE)
            }
            .write(),
        ),
        ("resource_variable_float", resource_variable()),
        (
            "greater_int8",
            OneOperator {
                operands: vec![input(), int8s(&SHAPE, 1.0 / 16.0, &[64, 32, 16, 48])],
                kinds: [INT8, BOOL],
                quantized: Some([sixteenth; 2]),
                ..OneOperator::float(61, 0, &SHAPE)
            }
            .write(),
        ),
    ];
    models.into_iter().map(|(stem, bytes)| (stem.to_owned(), bytes)).chain(moved).collect()
}
