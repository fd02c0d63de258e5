//! A TFLM tree: where it is, what it holds and how its library is compiled.

use std::path::{Path, PathBuf};
use std::{env, fs};

use crate::make::{make_settings, Make, DEFAULT_ARCH};
use crate::{cpu_flags, Api, Generation, Kernels};

/// How a tree's library is compiled: C and C++ flags (with the defines).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Flags {
    pub c: Vec<String>,
    pub cxx: Vec<String>,
}

/// The bundled 2020 tree, as hilmem has always built it (`-fno-short-enums`
/// is kept so its figures stay comparable with earlier baselines).
fn flags_2020() -> Flags {
    let common = ["-ffunction-sections", "-fdata-sections", "-fno-short-enums"];
    let defines =
        ["-DTF_LITE_STATIC_MEMORY", "-DTF_LITE_MCU_DEBUG_LOG", "-DNDEBUG", "-DGEMMLOWP_ALLOW_SLOW_SCALAR_FALLBACK"];
    let cxx = ["-std=c++11", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics", "-fno-use-cxa-atexit"];
    let strings = |parts: &[&[&str]]| parts.concat().into_iter().map(str::to_owned).collect();
    Flags { c: strings(&[&common, &defines]), cxx: strings(&[&common, &defines, &cxx]) }
}

/// A TFLM source tree.
#[derive(Debug, Clone)]
pub struct Tree {
    pub root: PathBuf,
    pub generation: Generation,
    pub api: Api,
    /// Where the third-party headers are: a checkout's
    /// `tensorflow/lite/micro/tools/make/downloads`, or a created tree's
    /// `third_party`.
    pub third_party: PathBuf,
    /// The library's sources: the interpreter and its support, and the
    /// kernels (which TFLM's own build compiles for speed). The platform's
    /// `debug_log.cc` is left out (the shim is the platform), and so are
    /// TFLM's own tests and their helpers where its Makefile lists them with
    /// the library.
    pub core: Vec<PathBuf>,
    pub kernels: Vec<PathBuf>,
    /// Listed by the Makefile but not in the tree (a trimmed checkout): no
    /// image can use them; [`needed_kernels`] names them when a model's
    /// kernel is not found.
    pub absent: Vec<PathBuf>,
    pub flags: Flags,
    /// The kernels it is built with; for CMSIS-NN, the library's C sources
    /// (compiled as kernels are) and the include directories it adds.
    pub kernels_set: Kernels,
    pub third_party_kernels: Vec<PathBuf>,
    pub kernel_includes: Vec<PathBuf>,
    /// The core's flags ([`cpu_flags`]); none for a host.
    pub cpu: Vec<String>,
}

impl Tree {
    /// The tree at `root`: a tflite-micro checkout with its downloads, a tree
    /// made by `create_tflm_tree.py`, or a directory laid out like the
    /// `tfmicro` archive's `submodules/tensorflow`; read for its reference
    /// kernels on no particular core.
    pub fn at(root: &Path) -> Result<Tree, String> {
        Tree::built(root, Kernels::Reference, None)
    }

    /// The tree at `root` as it is compiled with `kernels` for the core
    /// `arch` (TFLM's `TARGET_ARCH`; None for a host). CMSIS-NN needs a
    /// core, a tree with TFLM's CMSIS-NN kernels and their Makefile, and the
    /// downloads that Makefile names.
    pub fn built(root: &Path, kernels: Kernels, arch: Option<&str>) -> Result<Tree, String> {
        let micro = root.join("tensorflow/lite/micro");
        if !micro.is_dir() {
            return Err(format!("{} is not a TFLM tree: it has no tensorflow/lite/micro/", root.display()));
        }
        let api = Api::of(root).map_err(|why| format!("{}: a TFLM tree hilmem cannot build: {why}", root.display()))?;
        let generation = api.generation(root);
        let downloads = micro.join("tools/make/downloads");
        let created = root.join("third_party");
        let third_party = if created.join("flatbuffers/include").is_dir() { created } else { downloads };
        let makefile = micro.join("tools/make/Makefile");
        let needs_kissfft =
            generation != Generation::Tfmicro2020 && fs::read_to_string(&makefile).is_ok_and(|m| m.contains("kissfft"));
        let missing: Vec<&str> = ["flatbuffers/include", "gemmlowp", "ruy"]
            .into_iter()
            .chain(needs_kissfft.then_some("kissfft"))
            .filter(|lib| !third_party.join(lib).is_dir())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{}: the TFLM tree lacks its third-party libraries ({} not under {}); fetch them with \
                 `make -f tensorflow/lite/micro/tools/make/Makefile third_party_downloads` in the tree",
                root.display(),
                missing.join(", "),
                third_party.display()
            ));
        }
        let cpu = match arch {
            Some(arch) => cpu_flags(arch).map_err(|why| format!("{}: {why}", root.display()))?,
            None => Vec::new(),
        };
        let cmsis_nn = kernels == Kernels::CmsisNn;
        if cmsis_nn {
            let refusal = if arch.is_none() {
                Some("CMSIS-NN's kernels are built for a Cortex-M core, not for a host".to_owned())
            } else if generation == Generation::Tfmicro2020 {
                Some(
                    "hilmem builds CMSIS-NN's kernels from a tflite-micro checkout, not from the 2020 archive"
                        .to_owned(),
                )
            } else if !micro.join("kernels/cmsis_nn").is_dir() || !makefile.is_file() {
                Some("the tree has no CMSIS-NN kernels (tensorflow/lite/micro/kernels/cmsis_nn) or no Makefile to build them with".to_owned())
            } else {
                None
            };
            if let Some(why) = refusal {
                return Err(format!("{}: kernels = \"cmsis-nn\": {why}", root.display()));
            }
        }
        let mut lacking = Vec::new();
        let (mut third_party_kernels, mut kernel_includes) = (Vec::new(), Vec::new());
        let (core, kernels_list, flags) = if generation == Generation::Tfmicro2020 {
            let (core, kernels) = sources_2020(root).map_err(|why| format!("{}: {why}", root.display()))?;
            (core, kernels, flags_2020())
        } else if makefile.is_file() {
            let settings = make_settings(kernels, arch.unwrap_or(DEFAULT_ARCH));
            let make = Make::read(root, &makefile, &settings)
                .map_err(|why| format!("{}: cannot read its Makefile: {why}", root.display()))?;
            let sources = |name: &str| {
                let list = make.list(name).map_err(|why| format!("{}: {why}", root.display()))?;
                Ok::<_, String>(list.into_iter().map(|s| root.join(s)).collect::<Vec<_>>())
            };
            if cmsis_nn {
                let absent: Vec<String> = ["CMSIS_PATH", "CMSIS_NN_PATH"]
                    .iter()
                    .map(|name| make.get(name).unwrap_or_default())
                    .filter(|dir| dir.is_empty() || !root.join(dir).is_dir())
                    .collect();
                if !absent.is_empty() {
                    return Err(format!(
                        "{}: kernels = \"cmsis-nn\": the tree lacks CMSIS-NN's downloads ({}); fetch them with \
                         `make -f tensorflow/lite/micro/tools/make/Makefile OPTIMIZED_KERNEL_DIR=cmsis_nn \
                         third_party_downloads` in the tree",
                        root.display(),
                        absent.join(", ")
                    ));
                }
                third_party_kernels = sources("THIRD_PARTY_KERNEL_CC_SRCS")?;
                kernel_includes = make.includes(root)?;
            }
            lacking = make.missing_downloads()?;
            let flags = |name: &str| make.flags(name).map_err(|why| format!("{}: {why}", root.display()));
            let flags = Flags { c: flags("CCFLAGS")?, cxx: flags("CXXFLAGS")? };
            (sources("MICROLITE_CC_SRCS")?, sources("MICROLITE_CC_KERNEL_SRCS")?, flags)
        } else if let Some(created) = created_tree(root, &third_party) {
            created.map_err(|why| format!("{}: {why}", root.display()))?
        } else {
            return Err(format!(
                "{}: no tensorflow/lite/micro/tools/make/Makefile to list the library's sources, and no \
                 third_party/ of a tree made by create_tflm_tree.py",
                root.display()
            ));
        };
        let mut tree = Tree {
            root: root.to_owned(),
            generation,
            api,
            third_party,
            core,
            kernels: kernels_list,
            absent: Vec::new(),
            flags,
            kernels_set: kernels,
            third_party_kernels,
            kernel_includes,
            cpu,
        };
        let left_out = |p: &PathBuf| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            p.ends_with("tensorflow/lite/micro/debug_log.cc")
                || TEST_HELPERS.contains(&name)
                || name.ends_with("_test.cc")
        };
        // A source named twice, by one list or by two (from 2021-04 to
        // 2021-07 the Makefile appends the kernels to the library's
        // sources), is compiled once, as make builds one object for it: as
        // a kernel, where the kernels' list names it.
        for list in [&mut tree.core, &mut tree.kernels] {
            list.retain(|p| !left_out(p));
            list.sort();
            list.dedup();
        }
        let kernels: std::collections::BTreeSet<&PathBuf> = tree.kernels.iter().collect();
        tree.core.retain(|p| !kernels.contains(p));
        let missing_core: Vec<String> = tree
            .core
            .iter()
            .filter(|p| !p.is_file())
            .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
            .collect();
        if !missing_core.is_empty() {
            return Err(format!(
                "{}: the Makefile lists sources of the library that are not in the tree: {}",
                root.display(),
                missing_core.join(", ")
            ));
        }
        // What the tree would need and does not hold, said before anything
        // is compiled: third-party files (a download left out) and TFLM's
        // own headers (a trimmed tree).
        lacking.extend(tree.unresolved_includes());
        if !lacking.is_empty() {
            return Err(format!(
                "{}: the TFLM tree lacks files that its Makefile lists as third-party headers or that its \
                 interpreter's and resolver's headers include: {}; fetch the downloads with \
                 `make -f tensorflow/lite/micro/tools/make/Makefile third_party_downloads` in the tree, and use \
                 a whole checkout",
                root.display(),
                lacking.join(", ")
            ));
        }
        let (kernels, absent) = tree.kernels.drain(..).partition(|p| p.is_file());
        (tree.kernels, tree.absent) = (kernels, absent);
        Ok(tree)
    }

    /// The headers of TFLM's own (under `tensorflow/` or `signal/`) that the
    /// shim's TFLM headers include, directly or through other headers, and
    /// that no include directory holds.
    fn unresolved_includes(&self) -> Vec<String> {
        let mut missing = self.includes(&self.api.included(&self.root), true).missing;
        missing.sort();
        missing
    }

    /// What `files` include (`#include "..."` lines, read without the
    /// preprocessor), directly or, when `deep`, through the headers they
    /// include: the files found (beside the includer or in an include
    /// directory), and the names of TFLM's own headers (under `tensorflow/`
    /// or `signal/`) that none holds; a third-party library's optional
    /// includes are not TFLM's and not counted.
    pub(crate) fn includes(&self, files: &[PathBuf], deep: bool) -> Included {
        let dirs = self.include_dirs();
        let mut queue = files.to_vec();
        let mut found = Included::default();
        while let Some(file) = queue.pop() {
            let Ok(text) = fs::read_to_string(&file) else { continue };
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix("#include") else { continue };
                let Some(name) = rest.trim().strip_prefix('"').and_then(|r| r.split('"').next()) else { continue };
                let here = file.parent().map(|p| p.join(name));
                let tflms = name.starts_with("tensorflow/") || name.starts_with("signal/");
                match here.into_iter().chain(dirs.iter().map(|d| d.join(name))).find(|p| p.is_file()) {
                    Some(header) if found.files.insert(header.clone()) && deep => queue.push(header),
                    Some(_) => {}
                    None if tflms && !found.missing.iter().any(|m| m == name) => found.missing.push(name.to_owned()),
                    None => {}
                }
            }
        }
        found
    }

    pub fn include_dirs(&self) -> Vec<PathBuf> {
        let lib = |name: &str| self.third_party.join(name);
        let mut dirs = vec![self.root.clone(), lib("flatbuffers/include"), lib("gemmlowp"), lib("ruy")];
        if lib("kissfft").is_dir() && self.generation != Generation::Tfmicro2020 {
            dirs.push(lib("kissfft"));
        }
        for dir in &self.kernel_includes {
            if !dirs.contains(dir) {
                dirs.push(dir.clone());
            }
        }
        dirs
    }

    /// Every header of the tree and of its third-party libraries.
    pub fn headers(&self) -> Result<Vec<PathBuf>, String> {
        let tensorflow = self.root.join("tensorflow");
        let mut headers = walk(&tensorflow, &["h", "hpp"])?;
        if !self.third_party.starts_with(&tensorflow) {
            headers.extend(walk(&self.third_party, &["h", "hpp"])?);
        }
        Ok(headers)
    }
}

/// What a set of sources includes: [`Tree::includes`].
#[derive(Default)]
pub(crate) struct Included {
    pub(crate) files: std::collections::BTreeSet<PathBuf>,
    pub(crate) missing: Vec<String>,
}

/// A library's core sources, its kernels and its flags.
type Library = (Vec<PathBuf>, Vec<PathBuf>, Flags);

/// A tree made by `create_tflm_tree.py` without its Makefile holds only
/// the library: every source in `tensorflow/` (and `signal/`) is compiled,
/// the kernels apart.
fn created_tree(root: &Path, third_party: &Path) -> Option<Result<Library, String>> {
    if !third_party.ends_with("third_party") {
        return None;
    }
    let mut all = match walk(&root.join("tensorflow"), SOURCES) {
        Ok(all) => all,
        Err(why) => return Some(Err(why)),
    };
    if root.join("signal").is_dir() {
        match walk(&root.join("signal"), SOURCES) {
            Ok(signal) => all.extend(signal),
            Err(why) => return Some(Err(why)),
        }
    }
    let examples = root.join("tensorflow/lite/micro/examples");
    all.retain(|p| !p.starts_with(&examples) && !p.to_string_lossy().ends_with("_test.cc"));
    let kernels = root.join("tensorflow/lite/micro/kernels");
    let (kernels, core) = all.into_iter().partition(|p| p.starts_with(&kernels) || p.starts_with(root.join("signal")));
    Some(Ok((core, kernels, flags_current_default())))
}

/// The flags of TFLM's Cortex-M build for a tree that does not carry its
/// Makefile (a created tree): those of today's.
fn flags_current_default() -> Flags {
    let common = [
        "-fno-unwind-tables",
        "-fno-asynchronous-unwind-tables",
        "-ffunction-sections",
        "-fdata-sections",
        "-DTF_LITE_STATIC_MEMORY",
        "-DTF_LITE_DISABLE_X86_NEON",
        "-DKERNELS_OPTIMIZED_FOR_SPEED",
        "-DTF_LITE_MCU_DEBUG_LOG",
        "-fomit-frame-pointer",
        "-funsigned-char",
    ];
    let strings = |parts: &[&[&str]]| parts.concat().into_iter().map(str::to_owned).collect();
    Flags {
        c: strings(&[&common, &["-std=c17"]]),
        cxx: strings(&[&["-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics"], &common, &["-std=c++17"]]),
    }
}

/// Support for TFLM's own tests, which its Makefile lists with the library.
const TEST_HELPERS: [&str; 5] = [
    "test_helpers.cc",
    "test_helper_custom_ops.cc",
    "fake_micro_context.cc",
    "mock_micro_graph.cc",
    "kernel_runner.cc",
];

/// `.cc` and `.c` files directly in `dir`.
fn sources_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?.path();
        if has_extension(&path, SOURCES) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

const SOURCES: &[&str] = &["cc", "c"];

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| extensions.contains(&e))
}

fn sources_2020(root: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
    let lite = root.join("tensorflow/lite");
    let kept = |p: &PathBuf| p.extension().is_some_and(|e| e == "cc") && !p.to_string_lossy().ends_with("_test.cc");
    let mut core = sources_in(&lite.join("micro"))?;
    core.extend(sources_in(&lite.join("micro/memory_planner"))?);
    core.retain(kept);
    for file in [
        "c/common.c",
        "core/api/error_reporter.cc",
        "core/api/flatbuffer_conversions.cc",
        "core/api/op_resolver.cc",
        "core/api/tensor_utils.cc",
        "kernels/internal/quantization_util.cc",
        "kernels/kernel_util.cc",
    ] {
        core.push(lite.join(file));
    }
    let kernels = sources_in(&lite.join("micro/kernels"))?.into_iter().filter(kept).collect();
    Ok((core, kernels))
}

/// Every file below `dir` with one of `extensions`, in path order.
pub fn walk(dir: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>, String> {
    fn collect(dir: &Path, extensions: &[&str], found: &mut Vec<PathBuf>) -> Result<(), String> {
        let unreadable = |e: std::io::Error| format!("cannot read {}: {e}", dir.display());
        for entry in fs::read_dir(dir).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            let path = entry.path();
            // The listing says what an entry is; only a link costs a look.
            if entry.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink() && path.is_dir()) {
                collect(&path, extensions, found)?;
            } else if has_extension(&path, extensions) {
                found.push(path);
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    collect(dir, extensions, &mut found)?;
    found.sort();
    Ok(found)
}

/// A file's path, and its length and modification time where it has them.
pub fn file_stamp(file: &Path) -> (PathBuf, Option<(u64, Option<std::time::SystemTime>)>) {
    (file.to_owned(), fs::metadata(file).ok().map(|meta| (meta.len(), meta.modified().ok())))
}

/// The TFLM tree (`HILMEM_TFLM_DIR`, or the bundled one) as it is compiled
/// with `kernels` for the core `arch`.
pub fn tflm_tree(kernels: Kernels, arch: Option<&str>) -> Result<Tree, String> {
    let root = match env::var_os("HILMEM_TFLM_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => bundled_root().map_err(|registry| unpack_bundled(&registry))?,
    };
    Tree::built(&root, kernels, arch)
}

/// What to do when the bundled archive is not unpacked under `registry`.
fn unpack_bundled(registry: &Path) -> String {
    format!(
        "the TFLM source archive tfmicro-0.1.0 is not unpacked under {}; \
         run `cargo fetch --manifest-path firmware/Cargo.toml` or set HILMEM_TFLM_DIR",
        registry.display()
    )
}

/// The tfmicro 0.1.0 archive cargo unpacked with the firmware's dependencies.
pub fn bundled_tree() -> Tree {
    let root = bundled_root().unwrap_or_else(|registry| panic!("{}", unpack_bundled(&registry)));
    Tree::at(&root).unwrap_or_else(|e| panic!("{e}"))
}

/// Where cargo unpacked the tfmicro 0.1.0 archive's TFLM tree; the registry
/// directory searched when it has not.
pub fn bundled_root() -> Result<PathBuf, PathBuf> {
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("neither CARGO_HOME nor HOME is set");
    let registry = cargo_home.join("registry/src");
    let found = fs::read_dir(&registry).ok().and_then(|entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("tfmicro-0.1.0/submodules/tensorflow"))
            .find(|p| p.join("tensorflow/lite/micro/micro_interpreter.h").exists())
    });
    found.ok_or(registry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    /// A source the Makefile lists twice, by one list or by two (the
    /// window of 2021-04 to 2021-07 appends the kernels to the library's
    /// sources), is in the tree once, as a kernel.
    #[test]
    fn a_source_named_twice_is_compiled_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_todays_api(root);
        for lib in ["flatbuffers/include", "gemmlowp", "ruy"] {
            fs::create_dir_all(root.join("third_party").join(lib)).unwrap();
        }
        let kernels = "tensorflow/lite/micro/kernels";
        for file in ["tensorflow/lite/micro/micro_interpreter.cc", &format!("{kernels}/conv.cc")] {
            write(root, file, "");
        }
        write(
            root,
            "tensorflow/lite/micro/tools/make/Makefile",
            &format!(
                "MICROLITE_CC_KERNEL_SRCS := {kernels}/conv.cc {kernels}/conv.cc\n\
                 MICROLITE_CC_SRCS := tensorflow/lite/micro/micro_interpreter.cc\n\
                 MICROLITE_CC_SRCS += $(MICROLITE_CC_KERNEL_SRCS)\n\
                 THIRD_PARTY_CC_HDRS :=\nTHIRD_PARTY_CC_HDRS_BASE :=\n"
            ),
        );
        let tree = Tree::at(root).unwrap();
        assert_eq!(tree.core, [root.join("tensorflow/lite/micro/micro_interpreter.cc")]);
        assert_eq!(tree.kernels, [root.join(kernels).join("conv.cc")]);
    }
}
