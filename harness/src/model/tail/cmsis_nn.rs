//! What ARM's CMSIS-NN kernels allocate in the arena, as TFLM's
//! `kernels/cmsis_nn/` builds them: the code path CMSIS-NN compiles for a
//! core (its feature macros: `__ARM_FEATURE_MVE`, `__ARM_FEATURE_DSP`)
//! decides the size of the scratch buffers its kernels request.

use crate::model::tflite::{Model, Tensor, INT16, INT8};

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
    pub fn of(kernels: crate::model::tree::Kernels, arch: Option<&str>) -> KernelPath {
        match (kernels, arch) {
            (crate::model::tree::Kernels::CmsisNn, Some(arch)) => KernelPath::CmsisNn(Path::of(arch)),
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

/// Why CMSIS-NN's kernels of `model` on `path` are not predicted, where
/// a kernel takes a branch of its `Prepare` the prediction does not model:
/// FULLY_CONNECTED with an int16 input, with a filter or bias that is not
/// constant, or on its 1x1-convolution path (an output of more than two
/// dimensions whose depth of accumulation is a multiple of 4).
pub fn unmodelled(model: &Model, path: Path) -> Option<String> {
    let sg = model.subgraphs.first()?;
    let tensor = |i: Option<&i32>| i.and_then(|&i| usize::try_from(i).ok()).and_then(|i| sg.tensors.get(i));
    let constant = |t: &Tensor| model.buffers.get(t.buffer as usize).is_some_and(|&len| len > 0);
    for (step, op) in sg.operators.iter().enumerate() {
        let Some(code) = model.operator_codes.get(op.opcode_index as usize) else { continue };
        if code.custom.is_some() || code.builtin != FULLY_CONNECTED {
            continue;
        }
        let (input, filter, bias, output) =
            (tensor(op.inputs.first()), tensor(op.inputs.get(1)), tensor(op.inputs.get(2)), tensor(op.outputs.first()));
        let (Some(input), Some(filter), Some(output)) = (input, filter, output) else { continue };
        let depth = filter.shape.last().copied().unwrap_or(0);
        let why = if input.kind == INT16 {
            Some("its int16 input")
        } else if !constant(filter) || bias.is_some_and(|b| !constant(b)) {
            Some("a filter or bias computed at run time")
        } else if input.kind == INT8 && filter.kind == INT8 && output.shape.len() > 2 && depth % 4 == 0 {
            Some("its 1x1-convolution path")
        } else {
            None
        };
        if let Some(why) = why {
            return Some(format!(
                "CMSIS-NN's FULLY_CONNECTED ({}) at step {step} takes a branch the prediction does not model ({why})",
                path.name()
            ));
        }
    }
    None
}

const FULLY_CONNECTED: i32 = 9;
