//! What a TFLM source tree is, read from the tree itself before anything is
//! built: where it is ([`Tree`], [`tflm_tree`]), the API its headers
//! declare ([`api`]: what the shim is compiled for) and its generation
//! (what the analyzer predicts), its sources and flags as its own Makefile
//! lists them ([`make`]: a GNU make evaluator for TFLM's Makefiles), and
//! the kernel sources a model's operators need ([`selection`]).
//!
//! The firmware's build script (`tflm-sys`) compiles TFLM with it, and
//! hilmem's harness reads trees with it, so both sides agree on what a tree
//! is. No date or commit is known here.

pub mod api;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod make;
pub mod selection;
mod tree;

use std::fmt;
use std::path::Path;

pub use api::{Api, ArenaAllocator};
pub use make::{third_party_fetches, Fetch};
pub use selection::needed_kernels;
pub use tree::{bundled_root, bundled_tree, file_stamp, tflm_tree, walk, Flags, Tree};

use make::{make_settings, unquoted, Make};

/// The allocator models hilmem's analyzer has: the TFLM of the 2020 archive,
/// and today's (an allocator that takes its memory planner, allocates from a
/// `SingleArenaBufferAllocator` created without an `ErrorReporter` and can
/// say how much of the tail its own objects take), before and after the interpreter handed out evaluation
/// tensors. A tree of the years between the two builds and runs; the
/// analyzer does not predict its arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// TFLM of May 2020, as the `tfmicro` 0.1.0 archive bundles it:
    /// `kernels/all_ops_resolver.h`, an allocator that owns its planner.
    Tfmicro2020,
    /// Neither: a tree from the years between (an allocator over a
    /// `SimpleMemoryAllocator`, or created with an `ErrorReporter` as until
    /// 2022-08, or without `GetDefaultTailUsage`).
    Between,
    /// Today's allocator, with an interpreter that hands out no tensor by
    /// index (no `GetTensor`): TFLM from late 2022 to mid 2023, its kernels
    /// those of their time.
    Tflm2023,
    /// Today's allocator: `MicroAllocator::GetDefaultTailUsage`, evaluation
    /// tensors the interpreter hands out (`GetTensor`), a planner given.
    Current,
}

impl Generation {
    /// Whether its allocator is today's, which hilmem's firmware can build
    /// over TFLM's recording allocator and the analyzer predicts.
    pub fn todays_allocator(self) -> bool {
        matches!(self, Generation::Tflm2023 | Generation::Current)
    }
}

/// The kernels TFLM is built with: its reference kernels, or ARM's CMSIS-NN
/// (what TFLM's Makefile builds for `OPTIMIZED_KERNEL_DIR=cmsis_nn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Kernels {
    #[default]
    Reference,
    CmsisNn,
}

impl Kernels {
    pub const ALL: [Kernels; 2] = [Kernels::Reference, Kernels::CmsisNn];

    /// How settings, records and reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Kernels::Reference => "reference",
            Kernels::CmsisNn => "cmsis-nn",
        }
    }

    /// The kernel set [`Kernels::name`] names.
    pub fn named(name: &str) -> Option<Kernels> {
        Kernels::ALL.into_iter().find(|k| k.name() == name)
    }

    /// TFLM's `OPTIMIZED_KERNEL_DIR` for it.
    fn optimized_kernel_dir(self) -> &'static str {
        match self {
            Kernels::Reference => "",
            Kernels::CmsisNn => "cmsis_nn",
        }
    }
}

/// The `-m` options and device defines the Makefile of the tree at `root`
/// gives the core `arch` (shell quoting removed): what [`cpu_flags`] must
/// equal, which the harness's tests check.
pub fn cpu_flags_in_makefile(root: &Path, arch: &str) -> Result<Vec<String>, String> {
    let makefile = root.join("tensorflow/lite/micro/tools/make/Makefile");
    let make = Make::read(root, &makefile, &make_settings(Kernels::Reference, arch))?;
    let device = ["-DCPU_", "-DARMC", "-DCMSIS_DEVICE", "-DARM_MODEL_USE_PMU"];
    Ok(make
        .list("CXXFLAGS")?
        .iter()
        .map(|f| unquoted(f))
        .filter(|f| f.starts_with("-m") || device.iter().any(|d| f.starts_with(d)))
        .collect())
}

/// TFLM's name for a core (its Makefile's `TARGET_ARCH` for the generic
/// Cortex-M target) given the board's CPU and whether its Rust target passes
/// floats in FPU registers; an error names a combination TFLM's build has no
/// name for.
pub fn target_arch(cpu: &str, hard_float: bool) -> Result<String, String> {
    Ok(match (cpu, hard_float) {
        ("cortex-m0" | "cortex-m0plus" | "cortex-m3", false) => cpu.to_owned(),
        ("cortex-m4" | "cortex-m7", true) => format!("{cpu}+fp"),
        ("cortex-m4" | "cortex-m7", false) | ("cortex-m33" | "cortex-m55" | "cortex-m85", true) => cpu.to_owned(),
        ("cortex-m55", false) => "cortex-m55+nofp".to_owned(),
        _ => {
            return Err(format!(
                "TFLM's Cortex-M build has no {} {cpu}",
                if hard_float { "hard-float" } else { "soft-float" }
            ))
        }
    })
}

/// The compiler flags TFLM's generic Cortex-M build gives the core
/// `arch` with the GNU toolchain (`targets/cortex_m_generic_makefile.inc`):
/// the `-m` options and the device defines. Every tree is compiled with
/// them, the 2020 one too, which has no such Makefile; a test keeps them
/// equal to what the current tree's Makefile gives.
pub fn cpu_flags(arch: &str) -> Result<Vec<String>, String> {
    let (core, gcc_arch, float) = match arch {
        "cortex-m0" => ("M0", arch, "soft"),
        "cortex-m0plus" => ("M0plus", arch, "soft"),
        "cortex-m3" => ("M3", arch, "soft"),
        "cortex-m4" => ("M4", "cortex-m4+nofp", "soft"),
        "cortex-m4+fp" => ("M4", "cortex-m4", "hard"),
        "cortex-m7" => ("M7", "cortex-m7+nofp", "soft"),
        "cortex-m7+fp" => ("M7", "cortex-m7", "hard"),
        "cortex-m33" => ("M33", arch, "hard"),
        "cortex-m55" => ("M55", arch, "hard"),
        "cortex-m55+nofp" => ("M55", arch, "softfp"),
        "cortex-m85" => ("M85", arch, "hard"),
        _ => return Err(format!("`{arch}` is not a core TFLM's Cortex-M build knows")),
    };
    // TFLM's rules give the no-FPU M4 and M7 an FPU option they do not use.
    let fpu = if matches!(arch, "cortex-m4" | "cortex-m7") { "fpv4-sp-d16" } else { "auto" };
    let mut flags = vec![
        format!("-mcpu={gcc_arch}"),
        format!("-mfpu={fpu}"),
        "-mthumb".to_owned(),
        format!("-mfloat-abi={float}"),
        "-mlittle-endian".to_owned(),
        format!("-DCPU_{core}=1"),
        format!("-DCMSIS_DEVICE_ARM_CORTEX_M_XX_HEADER_FILE=\"ARMC{core}.h\""),
        format!("-DARMC{core}"),
    ];
    if matches!(core, "M55" | "M85") {
        flags.push("-DARM_MODEL_USE_PMU_COUNTERS".to_owned());
    }
    Ok(flags)
}

impl Generation {
    /// How records, reports and the analysis name it.
    pub fn name(self) -> &'static str {
        match self {
            Generation::Tfmicro2020 => "2020",
            Generation::Between => "between",
            Generation::Tflm2023 => "2023",
            Generation::Current => "current",
        }
    }

    /// The generation [`Generation::name`] names.
    pub fn named(name: &str) -> Option<Generation> {
        [Generation::Tfmicro2020, Generation::Between, Generation::Tflm2023, Generation::Current]
            .into_iter()
            .find(|g| g.name() == name)
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
