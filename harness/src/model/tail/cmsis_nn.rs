//! What ARM's CMSIS-NN kernels allocate in the arena, as TFLM's
//! `kernels/cmsis_nn/` builds them: the code path CMSIS-NN compiles for a
//! core (its feature macros: `__ARM_FEATURE_MVE`, `__ARM_FEATURE_DSP`)
//! decides the size of the scratch buffers its kernels request.

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

/// The CMSIS-NN kernel of `code` on `path`, where the prediction knows it.
pub fn kernel(code: i32, path: Path) -> Option<&'static super::current::Kernel> {
    let _ = (code, path);
    None
}
