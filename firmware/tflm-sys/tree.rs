// Where the TFLM tree is, which generation it is, what of it is compiled and
// with which flags, in one place: `build.rs` uses it, and hilmem's analyzer
// tests compile TFLM's types with it to check the sizes the arena prediction
// assumes. Needs `std::{env, fs}` and `std::path::{Path, PathBuf}` in scope.

/// The two APIs the shim speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// TFLM of May 2020, as the `tfmicro` 0.1.0 archive bundles it:
    /// `AllOpsResolver`, `DebugLog(const char*)`, an error reporter.
    Tfmicro2020,
    /// tflite-micro from 2022 on: `MicroMutableOpResolver` only,
    /// `DebugLog(const char* format, va_list)`, `MicroPrintf`.
    Current,
}

/// How one generation is compiled.
pub struct Flags {
    /// C++ only.
    pub cxx: &'static [&'static str],
    /// C and C++.
    pub common: &'static [&'static str],
    pub defines: &'static [&'static str],
}

/// The bundled 2020 tree, as hilmem has always built it (`-fno-short-enums`
/// is kept so its figures stay comparable with earlier baselines).
pub const FLAGS_2020: Flags = Flags {
    cxx: &["-std=c++11", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics", "-fno-use-cxa-atexit"],
    common: &["-ffunction-sections", "-fdata-sections", "-fno-short-enums"],
    defines: &["TF_LITE_STATIC_MEMORY", "TF_LITE_MCU_DEBUG_LOG", "NDEBUG", "GEMMLOWP_ALLOW_SLOW_SCALAR_FALLBACK"],
};

/// A current tree, with the flags of TFLM's own Cortex-M build
/// (`targets/cortex_m_generic_makefile.inc`), so the figures are those a
/// user's firmware gets: no ABI-changing flag of hilmem's own.
pub const FLAGS_CURRENT: Flags = Flags {
    cxx: &[
        "-std=c++17",
        "-fno-rtti",
        "-fno-exceptions",
        "-fno-threadsafe-statics",
        "-fno-unwind-tables",
        "-fno-asynchronous-unwind-tables",
    ],
    common: &["-ffunction-sections", "-fdata-sections", "-funsigned-char", "-fomit-frame-pointer"],
    defines: &["TF_LITE_STATIC_MEMORY", "TF_LITE_DISABLE_X86_NEON", "TF_LITE_MCU_DEBUG_LOG", "KERNELS_OPTIMIZED_FOR_SPEED"],
};

/// A TFLM source tree.
#[derive(Debug, Clone)]
pub struct Tree {
    pub root: PathBuf,
    pub generation: Generation,
    /// Where the third-party headers are: a checkout's
    /// `tensorflow/lite/micro/tools/make/downloads`, or a created tree's
    /// `third_party`.
    pub third_party: PathBuf,
}

impl Tree {
    /// The tree at `root`: a tflite-micro checkout with its downloads, a tree
    /// made by `create_tflm_tree.py`, or a directory laid out like the
    /// `tfmicro` archive's `submodules/tensorflow`.
    pub fn at(root: &Path) -> Result<Tree, String> {
        let micro = root.join("tensorflow/lite/micro");
        if !micro.join("micro_interpreter.h").is_file() {
            return Err(format!(
                "{} is not a TFLM tree: it does not hold tensorflow/lite/micro/micro_interpreter.h",
                root.display()
            ));
        }
        let generation = if micro.join("kernels/all_ops_resolver.h").is_file() {
            Generation::Tfmicro2020
        } else if micro.join("micro_log.h").is_file() {
            Generation::Current
        } else {
            return Err(format!(
                "{}: a TFLM tree of neither known generation (no kernels/all_ops_resolver.h as in 2020, no micro_log.h as today)",
                root.display()
            ));
        };
        let downloads = micro.join("tools/make/downloads");
        let created = root.join("third_party");
        let third_party = if created.join("flatbuffers/include").is_dir() { created } else { downloads };
        let missing: Vec<&str> = ["flatbuffers/include", "gemmlowp", "ruy"]
            .into_iter()
            .chain((generation == Generation::Current).then_some("kissfft"))
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
        Ok(Tree { root: root.to_owned(), generation, third_party })
    }

    pub fn flags(&self) -> &'static Flags {
        match self.generation {
            Generation::Tfmicro2020 => &FLAGS_2020,
            Generation::Current => &FLAGS_CURRENT,
        }
    }

    pub fn include_dirs(&self) -> Vec<PathBuf> {
        let lib = |name: &str| self.third_party.join(name);
        let mut dirs = vec![self.root.clone(), lib("flatbuffers/include"), lib("gemmlowp"), lib("ruy")];
        if self.generation == Generation::Current {
            dirs.push(lib("kissfft"));
        }
        dirs
    }

    /// Every header of the tree and of its third-party libraries.
    pub fn headers(&self) -> Vec<PathBuf> {
        let tensorflow = self.root.join("tensorflow");
        let mut headers = walk(&tensorflow, &["h", "hpp"]);
        if !self.third_party.starts_with(&tensorflow) {
            headers.extend(walk(&self.third_party, &["h", "hpp"]));
        }
        headers
    }

    /// The library's sources: the interpreter and its support (`core`), and
    /// the kernels, which TFLM's own build compiles for speed. The
    /// platform's `debug_log.cc` is left out (the shim is the platform), and
    /// so are the helpers of TFLM's own tests that its Makefile lists with
    /// the library.
    pub fn sources(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let mut sources = match self.generation {
            Generation::Tfmicro2020 => sources_2020(&self.root),
            Generation::Current => sources_current(&self.root),
        };
        let left_out = |p: &PathBuf| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            p.ends_with("tensorflow/lite/micro/debug_log.cc") || TEST_HELPERS.contains(&name)
        };
        for list in [&mut sources.0, &mut sources.1] {
            list.retain(|p| !left_out(p));
            list.sort();
        }
        sources
    }
}

/// The kernel sources an image needs: those that define one of
/// `registrations` (`Register_CONV_2D`, ...), and every kernel source that
/// defines none (the helpers the kernels share). TFLM's archive would leave
/// the other kernels out of the link anyway; not compiling them is what
/// keeps a build on a new tree short. A registration no kernel defines is an
/// error.
pub fn needed_kernels(kernels: &[PathBuf], registrations: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut defined: Vec<String> = Vec::new();
    let mut needed = Vec::new();
    for file in kernels {
        let text = fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let defines = registrations_defined(&text);
        if defines.is_empty() || defines.iter().any(|r| registrations.contains(r)) {
            needed.push(file.clone());
        }
        defined.extend(defines);
    }
    let missing: Vec<&str> = registrations.iter().filter(|r| !defined.contains(r)).map(String::as_str).collect();
    if !missing.is_empty() {
        return Err(format!("no kernel source of the TFLM tree defines {}", missing.join(", ")));
    }
    Ok(needed)
}

/// The `Register_X` functions a source file defines (`Register_X() {`).
fn registrations_defined(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("Register_") {
        let rest = &text[at..];
        let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let after = rest[name_len..].trim_start();
        let Some(after) = after.strip_prefix('(') else { continue };
        let Some(after) = after.trim_start().strip_prefix(')') else { continue };
        let name = &rest[..name_len];
        if after.trim_start().starts_with('{') && !found.iter().any(|f| f == name) {
            found.push(name.to_owned());
        }
    }
    found
}

/// Support for TFLM's own tests, which its Makefile lists with the library.
const TEST_HELPERS: [&str; 5] =
    ["test_helpers.cc", "test_helper_custom_ops.cc", "fake_micro_context.cc", "mock_micro_graph.cc", "kernel_runner.cc"];

/// `.cc` and `.c` files directly in `dir`.
fn sources_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| has_extension(p, SOURCES))
        .collect();
    files.sort();
    files
}

const SOURCES: &[&str] = &["cc", "c"];

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| extensions.contains(&e))
}

fn sources_2020(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let lite = root.join("tensorflow/lite");
    let kept = |p: &PathBuf| {
        let name = p.file_name().unwrap().to_str().unwrap();
        p.extension().is_some_and(|e| e == "cc") && !name.ends_with("_test.cc")
    };
    let mut core: Vec<PathBuf> =
        ["micro", "micro/memory_planner"].iter().flat_map(|d| sources_in(&lite.join(d))).filter(kept).collect();
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
    let kernels = sources_in(&lite.join("micro/kernels")).into_iter().filter(kept).collect();
    (core, kernels)
}

/// What TFLM's Makefile lists for its library (`list_library_sources`),
/// derived from its `sources.inc` without running make: in a checkout,
/// `MICROLITE_CC_BASE_SRCS` less `MICROLITE_TEST_SRCS` and the benchmarks,
/// and `MICROLITE_CC_KERNEL_SRCS`. A tree made by `create_tflm_tree.py` holds
/// only the library, so everything in it is compiled.
fn sources_current(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let micro = root.join("tensorflow/lite/micro");
    let listed = fs::read_to_string(micro.join("tools/make/sources.inc")).ok();
    let block = |text: &str, name: &str| -> Vec<PathBuf> {
        let start = format!("{name} := \\");
        let mut lines = text.lines().skip_while(|l| l.trim_end() != start).skip(1);
        let mut files = Vec::new();
        while let Some(line) = lines.next().map(str::trim).filter(|l| !l.is_empty()) {
            let path = line.trim_end_matches('\\').trim().trim_start_matches("$(TENSORFLOW_ROOT)");
            files.push(root.join(path));
        }
        files
    };
    let tflite: Vec<PathBuf> = walk(&root.join("tensorflow"), SOURCES)
        .into_iter()
        .filter(|p| !p.starts_with(root.join("tensorflow/lite/experimental")) && !p.starts_with(&micro))
        .filter(|p| !p.ends_with("tensorflow/lite/array.cc"))
        .collect();
    match listed {
        Some(text) => {
            let tests = block(&text, "MICROLITE_TEST_SRCS");
            let mut core: Vec<PathBuf> = ["", "arena_allocator", "memory_planner", "tflite_bridge"]
                .iter()
                .flat_map(|d| sources_in(&micro.join(d)))
                .filter(|p| !tests.contains(p) && !p.to_str().unwrap().ends_with("benchmark.cc"))
                .collect();
            core.extend(tflite);
            (core, block(&text, "MICROLITE_CC_KERNEL_SRCS"))
        }
        None => {
            let all: Vec<PathBuf> = walk(&micro, SOURCES).into_iter().filter(|p| !p.to_str().unwrap().ends_with("_test.cc")).collect();
            let (kernels, mut core): (Vec<PathBuf>, Vec<PathBuf>) =
                all.into_iter().partition(|p| p.starts_with(micro.join("kernels")));
            core.extend(tflite);
            (core, kernels)
        }
    }
}

/// Every file below `dir` with one of `extensions`, in path order.
fn walk(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path, extensions));
        } else if has_extension(&path, extensions) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The TFLM tree: `HILMEM_TFLM_DIR`, or the bundled one.
pub fn tflm_tree() -> Tree {
    match env::var_os("HILMEM_TFLM_DIR") {
        Some(dir) => Tree::at(Path::new(&dir)).unwrap_or_else(|e| panic!("HILMEM_TFLM_DIR: {e}")),
        None => bundled_tree(),
    }
}

/// The tfmicro 0.1.0 archive cargo unpacked with the firmware's dependencies.
pub fn bundled_tree() -> Tree {
    let root = bundled_root().unwrap_or_else(|registry| {
        panic!(
            "the TFLM source archive tfmicro-0.1.0 is not unpacked under {}; \
             run `cargo fetch --manifest-path firmware/Cargo.toml` or set HILMEM_TFLM_DIR",
            registry.display()
        )
    });
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
