//! What ARM's CMSIS-NN kernels allocate in the arena, as TFLM's
//! `kernels/cmsis_nn/` builds them: the code path CMSIS-NN compiles for a
//! core (its feature macros: `__ARM_FEATURE_MVE`, `__ARM_FEATURE_DSP`)
//! decides the size of the scratch buffers its kernels request.

use crate::model::tflite::{Model, Operator, Tensor, Window, FLOAT32, INT16, INT4, INT8};

/// The code path CMSIS-NN compiles for a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Neither DSP nor MVE (Cortex-M0, M0+, M3, an M33 without DSP).
    Scalar,
    /// The DSP extension (Cortex-M4, M7, M33).
    Dsp,
    /// The M-profile vector extension, Helium (Cortex-M55, M85).
    Mve,
}

impl Path {
    /// The path compiled for TFLM's core `arch` (its `TARGET_ARCH`).
    pub fn of(arch: &str) -> Path {
        let core = arch.split('+').next().unwrap_or(arch);
        match core {
            "cortex-m55" | "cortex-m85" => Path::Mve,
            "cortex-m4" | "cortex-m7" => Path::Dsp,
            "cortex-m33" if !arch.contains("+nodsp") => Path::Dsp,
            _ => Path::Scalar,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Path::Scalar => "no DSP, no MVE",
            Path::Dsp => "DSP",
            Path::Mve => "MVE",
        }
    }
}

/// The kernels an image runs: TFLM's reference kernels, or CMSIS-NN's on
/// one code path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelPath {
    #[default]
    Reference,
    CmsisNn(Path),
}

impl KernelPath {
    /// The kernels `kernels` compiled for the core `arch` (None: a host,
    /// which builds the reference kernels only).
    pub fn of(kernels: crate::tflm::tree::Kernels, arch: Option<&str>) -> KernelPath {
        match (kernels, arch) {
            (crate::tflm::tree::Kernels::CmsisNn, Some(arch)) => KernelPath::CmsisNn(Path::of(arch)),
            _ => KernelPath::Reference,
        }
    }

    /// How the analysis names it: `reference`, `cmsis-nn (DSP)`.
    pub fn name(self) -> String {
        match self {
            KernelPath::Reference => "reference".to_owned(),
            KernelPath::CmsisNn(path) => format!("cmsis-nn ({})", path.name()),
        }
    }
}

/// The builtin operators whose reference kernel TFLM's `kernels/cmsis_nn/`
/// replaces (ADD, AVERAGE_POOL_2D, CONV_2D, DEPTHWISE_CONV_2D,
/// FULLY_CONNECTED, MAX_POOL_2D, MUL, SOFTMAX, SVDF, MAXIMUM, MINIMUM, PAD,
/// TRANSPOSE, TRANSPOSE_CONV, BATCH_MATMUL, UNIDIRECTIONAL_SEQUENCE_LSTM).
pub const SPECIALIZED: &[i32] = &[0, 1, 3, 4, 9, 17, 18, 25, 27, 34, 39, 55, 57, 67, 126, 44];

/// What a CMSIS-NN kernel's `Prepare` allocates for one node, in its order:
/// persistent buffers in the tail, and scratch buffers it requests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    pub persistent: Vec<usize>,
    pub scratch: Vec<usize>,
}

/// What CMSIS-NN's kernel for the operator `op` of `model` (the first
/// subgraph's) allocates at `Prepare` on `path`, read from
/// `kernels/cmsis_nn/*.cc` and CMSIS-NN's `*_get_buffer_size` functions as
/// arm-none-eabi-gcc compiles them; Err names a branch the prediction does
/// not model, or what the model lacks.
pub fn prepare(model: &Model, op: &Operator, path: Path) -> Result<Prepared, String> {
    let sg = model.subgraphs.first().ok_or("the model has no subgraph")?;
    let code = model.operator_codes.get(op.opcode_index as usize).map_or(-1, |c| c.builtin);
    let name = crate::tflm::bundled::builtin_name(code);
    let tensor = |i: Option<&i32>, what: &str| {
        i.and_then(|&i| usize::try_from(i).ok())
            .and_then(|i| sg.tensors.get(i))
            .ok_or_else(|| format!("{name} has no {what}"))
    };
    let (input, output) = (tensor(op.inputs.first(), "input")?, tensor(op.outputs.first(), "output")?);
    let unmodelled = |why: &str| {
        Err(format!("CMSIS-NN's {name} ({}) takes a branch the prediction does not model ({why})", path.name()))
    };
    let quantized = input.kind == INT8 || input.kind == INT16;
    let mut p = Prepared::default();
    match code {
        CONV_2D | DEPTHWISE_CONV_2D => {
            let filter = tensor(op.inputs.get(1), "filter")?;
            let window = op.window.ok_or_else(|| format!("{name} has no options"))?;
            let conv = Conv::of(input, filter, output, window)?;
            let depthwise = code == DEPTHWISE_CONV_2D;
            if quantized {
                let channels = filter.shape.get(if depthwise { 3 } else { 0 }).copied().unwrap_or(0);
                let channels = usize::try_from(channels).map_err(|_| format!("{name}'s filter has no channels"))?;
                p.persistent.extend([4 * channels, 4 * channels]);
            }
            let bytes = match (depthwise, input.kind, filter.kind) {
                (_, INT8, INT4) => return unmodelled("its int4 filter"),
                (false, INT16, _) => return unmodelled("its int16 input"),
                (false, INT8, _) => conv.buffer(path),
                (true, INT8, _) => match conv.depthwise_buffer(path) {
                    Some(bytes) => bytes,
                    None => {
                        return unmodelled("one input channel on a row: its size depends on a stride TFLM leaves unset")
                    }
                },
                _ => 0,
            };
            p.scratch.extend((bytes > 0).then_some(bytes as usize));
        }
        AVERAGE_POOL_2D if quantized && path == Path::Dsp => {
            let depth = output.shape.get(3).and_then(|&d| usize::try_from(d).ok()).unwrap_or(0);
            p.scratch.extend((depth > 0).then_some(4 * depth));
        }
        FULLY_CONNECTED => {
            let filter = tensor(op.inputs.get(1), "filter")?;
            let bias = op.inputs.get(2).filter(|&&i| i >= 0).map(|i| tensor(Some(i), "bias")).transpose()?;
            let constant = |t: &Tensor| model.buffers.get(t.buffer as usize).is_some_and(|&len| len > 0);
            let depth = filter.shape.last().copied().unwrap_or(0);
            if input.kind == INT16 {
                return unmodelled("its int16 input");
            } else if !constant(filter) || bias.is_some_and(|b| !constant(b)) {
                return unmodelled("a filter or bias computed at run time");
            } else if input.kind == INT8 && filter.kind == INT8 && output.shape.len() > 2 && depth % 4 == 0 {
                return unmodelled("its 1x1-convolution path");
            }
            if input.kind != FLOAT32 && filter.quantization.scale.len() > 1 {
                let channels = filter.quantization.scale.len();
                p.persistent.extend([4 * channels, 4 * channels]);
            }
            // `arm_fully_connected_s8_get_buffer_size`: on the MVE path the
            // kernel sums, kept in the tail (`KERNELS_OPTIMIZED_FOR_SPEED`).
            if path == Path::Mve && input.kind == INT8 && filter.kind == INT8 {
                let channels = output.shape.last().and_then(|&d| usize::try_from(d).ok()).unwrap_or(0);
                p.persistent.push(4 * channels);
            }
        }
        SVDF => {
            let filters = tensor(op.inputs.get(1), "feature weights")?;
            p.scratch = super::svdf_scratch(input, filters, output)?;
            // `arm_svdf_s8_get_buffer_size`: the kernel sums, on MVE.
            if path == Path::Mve && input.kind == INT8 {
                let filters = filters.shape.first().and_then(|&d| usize::try_from(d).ok()).unwrap_or(0);
                p.persistent.push(4 * filters);
            }
        }
        _ => {}
    }
    Ok(p)
}

/// The first of `model`'s operators whose CMSIS-NN kernel on `path` takes a
/// branch the prediction does not model, and why.
pub fn unmodelled(model: &Model, path: Path) -> Option<String> {
    let sg = model.subgraphs.first()?;
    sg.operators.iter().enumerate().find_map(|(step, op)| {
        let code = model.operator_codes.get(op.opcode_index as usize)?;
        if code.custom.is_some() || !SPECIALIZED.contains(&code.builtin) {
            return None;
        }
        prepare(model, op, path).err().map(|why| format!("{why}, at step {step}"))
    })
}

/// A convolution as CMSIS-NN's buffer-size functions see it: NHWC input
/// and output, the filter's height, width and channels, and the window
/// with the padding TFLM computes (`ComputePaddingHeightWidth`), each pair
/// height then width.
#[derive(Debug, Clone, Copy)]
struct Conv {
    input: [i64; 4],
    filter: [i64; 3],
    output: [i64; 4],
    pad: [i64; 2],
    stride: [i64; 2],
    dilation: [i64; 2],
}

impl Conv {
    fn of(input: &Tensor, filter: &Tensor, output: &Tensor, w: Window) -> Result<Conv, String> {
        let nhwc = |t: &Tensor| match t.shape[..] {
            [n, h, w, c] => Ok([n, h, w, c].map(i64::from)),
            _ => Err(format!("tensor `{}` has shape {:?}, not NHWC", t.name, t.shape)),
        };
        let (input, f, output) = (nhwc(input)?, nhwc(filter)?, nhwc(output)?);
        let filter = [f[1], f[2], f[3]];
        let stride = w.stride.map(i64::from);
        let dilation = w.dilation.map(i64::from);
        if stride.iter().chain(&dilation).any(|&s| s <= 0) {
            return Err(format!("a stride of {:?} or dilation of {:?}", w.stride, w.dilation));
        }
        let pad = [0, 1].map(|d| {
            let (size, s) = (input[1 + d], stride[d]);
            let effective = (filter[d] - 1) * dilation[d] + 1;
            let out = if w.same { (size + s - 1) / s } else { (size + s - effective) / s };
            ((out - 1) * s + effective - size).max(0) / 2
        });
        Ok(Conv { input, filter, output, pad, stride, dilation })
    }

    /// `arm_nn_is_convolve_1x1`.
    fn is_1x1(&self) -> bool {
        self.pad == [0, 0] && self.filter[..2] == [1, 1] && self.dilation == [1, 1] && self.input[3] == self.filter[2]
    }

    /// `arm_nn_is_convolve_1_x_n`, without its stride test.
    fn is_1_x_n_but_stride(&self) -> bool {
        self.input[1] == 1 && self.dilation[1] == 1 && self.filter[0] == 1 && self.input[3] == self.filter[2]
    }

    /// `arm_convolve_s8_get_buffer_size` on `path`: the im2col columns.
    fn im2col(&self, path: Path) -> i64 {
        let columns = self.filter[0] * self.filter[1] * self.input[3];
        match path {
            Path::Mve => 4 * 16 * ((columns + 15) / 16),
            _ => 2 * 2 * ((columns + 3) / 4 * 4),
        }
    }

    /// `arm_convolve_wrapper_s8_get_buffer_size` on `path` (the 1x1
    /// convolution's buffer is ARM Compiler's only).
    fn buffer(&self, path: Path) -> i64 {
        if self.is_1x1() {
            0
        } else if self.is_1_x_n_but_stride() && (self.stride[1] * self.input[3]) % 4 == 0 && path == Path::Mve {
            self.one_by_n_mve()
        } else {
            self.im2col(path)
        }
    }

    /// `arm_convolve_1_x_n_s8_get_buffer_size_mve`.
    fn one_by_n_mve(&self) -> i64 {
        let (input_x, pad_x, kernel_x, output_x, stride_x, c) =
            (self.input[2], self.pad[1], self.filter[1], self.output[2], self.stride[1], self.input[3]);
        let asym_pad = (output_x - 1) * stride_x + kernel_x - input_x;
        let asym_pad = asym_pad % 2;
        let right = if pad_x + asym_pad != 0 { ((pad_x + asym_pad + stride_x - 1) / stride_x).max(1) } else { 0 };
        let left = if pad_x != 0 { ((pad_x + stride_x - 1) / stride_x).max(1) } else { 0 };
        let no_pad = (output_x - (right + left)).max(0);
        if right + no_pad + left != output_x {
            return self.im2col(Path::Mve);
        }
        let pad_left = pad_x * c;
        let pad_right = if asym_pad != 0 { right * c } else { pad_left };
        let left_elements = kernel_x * c;
        (left_elements + pad_left).max(left_elements - c + pad_right)
    }

    /// `arm_depthwise_conv_wrapper_s8_get_buffer_size` on `path`; None
    /// where MVE turns a depthwise convolution of one input channel into a
    /// convolution whose buffer depends on the stride, which TFLM's
    /// `Prepare` does not set.
    fn depthwise_buffer(&self, path: Path) -> Option<i64> {
        let ([n, _, _, in_c], out_c, [h, w, _]) = (self.input, self.output[3], self.filter);
        if path == Path::Mve && in_c == 1 && out_c > 1 {
            let conv = Conv { filter: [h, w, 1], ..*self };
            let buffer = if conv.is_1x1() {
                0
            } else if conv.is_1_x_n_but_stride() {
                return None;
            } else {
                conv.im2col(Path::Mve)
            };
            return Some(buffer + out_c * h * w);
        }
        if in_c != out_c || n != 1 || self.dilation != [1, 1] {
            return Some(0);
        }
        Some(match path {
            Path::Scalar | Path::Dsp if [h, w] == [3, 3] && self.pad.iter().all(|&p| p <= 1) => 0,
            Path::Scalar => 0,
            Path::Dsp => 2 * in_c * h * w,
            Path::Mve => 4 * CH_IN_BLOCK_MVE * h * w,
        })
    }
}

/// `CH_IN_BLOCK_MVE`: input channels of a block of MVE's depthwise kernel.
const CH_IN_BLOCK_MVE: i64 = 124;

const AVERAGE_POOL_2D: i32 = 1;
const CONV_2D: i32 = 3;
const DEPTHWISE_CONV_2D: i32 = 4;
const FULLY_CONNECTED: i32 = 9;
const SVDF: i32 = 27;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tflite::{OperatorCode, Subgraph};

    /// A model of one DEPTHWISE_CONV_2D over a row of `width` samples of
    /// one channel, making `channels` with a 1x3 filter of `filter` type.
    fn depthwise_row(width: i32, channels: i32, filter: u8) -> Model {
        let tensor = Tensor::plain;
        Model {
            version: 3,
            description: None,
            metadata: Vec::new(),
            operator_codes: vec![OperatorCode { builtin: DEPTHWISE_CONV_2D, custom: None, version: 1 }],
            subgraphs: vec![Subgraph {
                tensors: vec![
                    tensor("input", &[1, 1, width, 1], INT8, 0),
                    tensor("filter", &[1, 1, 3, channels], filter, 1),
                    tensor("output", &[1, 1, width - 2, channels], INT8, 0),
                ],
                inputs: vec![0],
                outputs: vec![2],
                operators: vec![Operator {
                    opcode_index: 0,
                    inputs: vec![0, 1],
                    outputs: vec![2],
                    options: crate::model::tflite::DEPTHWISE_CONV_OPTIONS,
                    window: Some(Window { same: false, stride: [1, 1], dilation: [1, 1] }),
                    adjoint: None,
                    variable: None,
                }],
            }],
            buffers: vec![0, 3 * channels as usize],
            offline_plan: None,
        }
    }

    #[test]
    fn a_branch_whose_buffer_the_model_does_not_decide_is_named_not_guessed() {
        // On MVE a depthwise convolution of one input channel becomes a
        // convolution, and over a single row its buffer depends on a stride
        // TFLM's Prepare leaves unset.
        let model = depthwise_row(16, 8, INT8);
        let why = unmodelled(&model, Path::Mve).unwrap();
        assert!(why.contains("DEPTHWISE_CONV_2D (MVE)") && why.contains("stride"), "{why}");
        // The other paths do not convert it: no buffer, per-channel data only.
        for path in [Path::Scalar, Path::Dsp] {
            assert_eq!(unmodelled(&model, path), None);
            let prepared = prepare(&model, &model.subgraphs[0].operators[0], path).unwrap();
            assert_eq!(prepared, Prepared { persistent: vec![32, 32], scratch: vec![] });
        }
        // An int4 filter takes CMSIS-NN's s4 kernels, which are not modelled.
        let why = unmodelled(&depthwise_row(16, 8, INT4), Path::Dsp).unwrap();
        assert!(why.contains("int4 filter"), "{why}");
    }
}
