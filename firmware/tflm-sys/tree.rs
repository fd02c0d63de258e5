// Where the TFLM tree is, what API it declares, what of it is compiled and
// with which flags, in one place: `build.rs` uses it, and hilmem's harness
// reads trees with it (before anything is built) and compiles TFLM's types
// with it to check the sizes the arena prediction assumes. Needs
// `std::{env, fs}` and `std::path::{Path, PathBuf}` in scope.
//
// Everything is read from the tree itself: its headers say which API the
// shim speaks, its Makefile which sources make the library and with which
// flags TFLM's own Cortex-M build compiles them. No date or commit is known
// here.

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

/// The parts of TFLM's API that changed over its history, each found by
/// what the tree's headers declare (a class, a function, a macro, a
/// signature), wherever under `tensorflow/` they live: never by a path
/// known in advance. The shim includes the header that declares each part
/// it uses and is compiled for the signatures found.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Api {
    /// The header of each part the shim includes (relative to the tree),
    /// under the shim's macro for it ([`PARTS`]).
    pub headers: Vec<(&'static str, String)>,
    /// `DebugLog(const char* format, va_list args)` (else `DebugLog(const
    /// char* s)`).
    pub debug_log_va_list: bool,
    /// The interpreter and the allocator take an `ErrorReporter*`.
    pub error_reporter: bool,
    /// The arena allocator `MicroAllocator::Create` takes, where it takes
    /// one (TFLM from 2021 on): the shim then builds it and the allocator
    /// itself, in the interpreter's order, and reads head and tail from it.
    pub arena: Option<ArenaAllocator>,
    /// `MicroAllocator::Create` takes a memory planner: the shim can give it
    /// the linear planner and share the allocator.
    pub planner_given: bool,
    /// `MicroAllocator::GetDefaultTailUsage` exists.
    pub default_tail_usage: bool,
    /// `MicroInterpreter::GetTensor` hands out evaluation tensors.
    pub eval_tensors: bool,
    /// `MicroInterpreter::tensor(size_t)` hands out any tensor (2020).
    pub tensor_by_index: bool,
    /// Where no header declares `MicroArenaBufferAlignment`, the
    /// `kBufferAlignment` of the allocator's source (else 0).
    pub buffer_alignment: u32,
}

/// The class that allocates from the arena's two ends, as its header
/// declares it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArenaAllocator {
    /// `SingleArenaBufferAllocator`, named `SimpleMemoryAllocator` until
    /// 2022-07.
    pub class: String,
    /// Its `Create` takes an `ErrorReporter*` and no plain arena.
    pub create_with_reporter: bool,
    /// It allocates the tail with `AllocatePersistentBuffer` (else
    /// `AllocateFromTail`).
    pub persistent_buffer: bool,
    /// It says its use as `GetNonPersistentUsedBytes` and
    /// `GetPersistentUsedBytes` (else `GetHeadUsedBytes` and
    /// `GetTailUsedBytes`).
    pub persistent_usage: bool,
}

/// What a header declares, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Declares<'a> {
    /// `class NAME` or `struct NAME` with its body (not a forward
    /// declaration).
    Class(&'a str),
    /// A function `NAME(` after its return type.
    Function(&'a str),
    /// `#define NAME`.
    Macro(&'a str),
}

impl Declares<'_> {
    /// Whether `text` (a header) declares it.
    fn within(self, text: &str) -> bool {
        text.lines().map(str::trim).any(|line| match self {
            Declares::Class(name) => {
                let Some(rest) = line.strip_prefix("class ").or_else(|| line.strip_prefix("struct ")) else {
                    return false;
                };
                rest.trim_start().strip_prefix(name).is_some_and(|after| {
                    let after = after.trim();
                    after.is_empty() || after.starts_with([':', '{']) || after.starts_with("final")
                })
            }
            Declares::Function(name) => {
                !line.starts_with("//") && !line.starts_with('#') && !line.starts_with('*') && {
                    line.match_indices(&format!("{name}(")).any(|(at, _)| {
                        let before = &line[..at];
                        let word = before.trim_end().rsplit([' ', '*', '&']).next().unwrap_or_default();
                        before.ends_with([' ', '*', '&'])
                            && word != "return"
                            && before.trim().chars().all(|c| c.is_ascii_alphanumeric() || " _*&:<>\"".contains(c))
                    })
                }
            }
            Declares::Macro(name) => line.strip_prefix("#define").is_some_and(|rest| {
                rest.starts_with([' ', '\t'])
                    && rest.trim_start().strip_prefix(name).is_some_and(|a| a.is_empty() || a.starts_with([' ', '\t', '(']))
            }),
        })
    }
}

impl std::fmt::Display for Declares<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Declares::Class(name) => write!(f, "class {name}"),
            Declares::Function(name) => write!(f, "function {name}"),
            Declares::Macro(name) => write!(f, "macro {name}"),
        }
    }
}

/// The headers the shim includes, by its macro for each and what the
/// header declares. Which a tree must have depends on its API
/// ([`Api::of`]); the arena allocator's (`HM_ARENA_ALLOCATOR_H`) is the
/// one that declares the class `MicroAllocator::Create` takes.
const PARTS: [(&str, Declares<'static>); 16] = [
    ("HM_INTERPRETER_H", Declares::Class("MicroInterpreter")),
    ("HM_OP_RESOLVER_H", Declares::Class("MicroMutableOpResolver")),
    ("HM_SCHEMA_H", Declares::Function("VerifyModelBuffer")),
    ("HM_SCHEMA_VERSION_H", Declares::Macro("TFLITE_SCHEMA_VERSION")),
    ("HM_DEBUG_LOG_H", Declares::Function("DebugLog")),
    ("HM_PRINTF_H", Declares::Function("MicroPrintf")),
    ("HM_ERROR_REPORTER_H", Declares::Class("MicroErrorReporter")),
    ("HM_REGISTRATIONS_H", Declares::Function("Register_FULLY_CONNECTED")),
    ("HM_ALLOCATOR_H", Declares::Class("MicroAllocator")),
    ("HM_MEMORY_HELPERS_H", Declares::Function("AlignPointerUp")),
    ("HM_ARENA_CONSTANTS_H", Declares::Function("MicroArenaBufferAlignment")),
    ("HM_GREEDY_PLANNER_H", Declares::Class("GreedyMemoryPlanner")),
    ("HM_LINEAR_PLANNER_H", Declares::Class("LinearMemoryPlanner")),
    ("HM_RECORDING_ALLOCATOR_H", Declares::Class("RecordingMicroAllocator")),
    ("HM_RESOURCE_VARIABLES_H", Declares::Class("MicroResourceVariables")),
    ("HM_SCHEMA_UTILS_H", Declares::Function("GetBuiltinCode")),
];

/// The headers of a tree the shim could include: every `.h` under
/// `tensorflow/` but the examples and the build tools (and the downloads
/// under them), with its text; TFLM's own (under `tensorflow/lite/micro/`)
/// first, then TFLite's, shallowest first in each.
struct Headers(Vec<(String, String)>);

impl Headers {
    fn read(root: &Path) -> Result<Headers, String> {
        let micro = root.join("tensorflow/lite/micro");
        let left_out = [micro.join("tools"), micro.join("examples")];
        let mut headers = Vec::new();
        for path in walk(&root.join("tensorflow"), &["h"])? {
            if left_out.iter().any(|dir| path.starts_with(dir)) {
                continue;
            }
            let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let relative = path.strip_prefix(root).unwrap_or(&path).display().to_string();
            headers.push((relative, text));
        }
        headers.sort_by_key(|(path, _)| {
            (!path.starts_with("tensorflow/lite/micro/"), path.matches('/').count(), path.clone())
        });
        Ok(Headers(headers))
    }

    /// The header that declares `what` (the first, in their order, where
    /// several do): its path and text.
    fn declaring(&self, what: Declares) -> Option<(&str, &str)> {
        self.0.iter().find(|(_, text)| what.within(text)).map(|(path, text)| (path.as_str(), text.as_str()))
    }

    /// Puts first, in their order, the headers `header` includes, directly
    /// or through others (by their paths from the tree's root): where a
    /// name is declared twice (TFLite's schema, say, and a tool's copy of
    /// it), the library's own declaration is the one its interpreter
    /// reaches.
    fn reached_from(&mut self, header: &str) {
        let mut reached = std::collections::BTreeSet::from([header.to_owned()]);
        let mut queue = vec![header.to_owned()];
        while let Some(path) = queue.pop() {
            let Some((_, text)) = self.0.iter().find(|(p, _)| *p == path) else { continue };
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix("#include") else { continue };
                let Some(name) = rest.trim().strip_prefix('"').and_then(|r| r.split('"').next()) else { continue };
                if self.0.iter().any(|(p, _)| p == name) && reached.insert(name.to_owned()) {
                    queue.push(name.to_owned());
                }
            }
        }
        self.0.sort_by_key(|(path, _)| !reached.contains(path));
    }
}

/// The parts of the API [`Api::of`] has found so far, and the headers it
/// looks in.
struct Found<'h> {
    headers: &'h Headers,
    parts: Vec<(&'static str, String)>,
}

impl<'h> Found<'h> {
    /// The text of the header that declares `what`, kept as the shim's
    /// `define`; an error that says `why` the shim needs it where none
    /// does and it is required.
    fn part(&mut self, define: &'static str, what: Declares, why: Option<&str>) -> Result<Option<&'h str>, String> {
        match (self.headers.declaring(what), why) {
            (Some((path, text)), _) => {
                self.parts.push((define, path.to_owned()));
                Ok(Some(text))
            }
            (None, Some(why)) => Err(format!("no header under tensorflow/ declares {what} ({why})")),
            (None, None) => Ok(None),
        }
    }

    /// [`Found::part`] for one of [`PARTS`].
    fn known(&mut self, define: &'static str, why: Option<&str>) -> Result<Option<&'h str>, String> {
        let (_, what) = PARTS.iter().find(|(d, _)| *d == define).expect("one of PARTS");
        self.part(define, *what, why)
    }
}

/// The parameter lists of every `NAME(` in `text`, whitespace squeezed.
fn parameter_lists(text: &str, name: &str) -> Vec<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ").replace("( ", "(");
    text.match_indices(&format!("{name}("))
        .filter_map(|(at, m)| text[at + m.len()..].split(')').next().map(str::to_owned))
        .collect()
}

impl Api {
    /// The API the headers of the tree at `root` declare; an error names
    /// what the tree lacks.
    fn of(root: &Path) -> Result<Api, String> {
        let mut headers = Headers::read(root)?;
        let interpreter = Declares::Class("MicroInterpreter");
        if let Some((path, _)) = headers.declaring(interpreter) {
            let path = path.to_owned();
            headers.reached_from(&path);
        }
        let mut found = Found { headers: &headers, parts: Vec::new() };
        let interpreter = found.known("HM_INTERPRETER_H", Some("the interpreter"))?.unwrap_or_default();
        found.known("HM_OP_RESOLVER_H", Some("the op resolver the shim fills"))?;
        found.known("HM_SCHEMA_H", Some("the model schema's verifier"))?;
        found.known("HM_SCHEMA_VERSION_H", Some("the schema version models are checked against"))?;
        let debug_log = found.known("HM_DEBUG_LOG_H", Some("the platform's logging hook the shim defines"))?;
        let error_reporter = interpreter.contains("ErrorReporter* error_reporter");
        let allocator = found.known("HM_ALLOCATOR_H", Some("the interpreter's allocator"))?.unwrap_or_default();
        let allocator_source = found.parts.last().map(|(_, h)| root.join(h).with_extension("cc"));
        // The arena allocator: the class the allocator's `Create` takes, if
        // one does.
        let creates = parameter_lists(allocator, "MicroAllocator* Create");
        let taken = creates.iter().find_map(|params| {
            let class = params.split('*').next().unwrap_or_default().trim();
            (!class.is_empty() && class != "uint8_t").then_some((class, params))
        });
        let mut api = Api {
            debug_log_va_list: parameter_lists(debug_log.unwrap_or_default(), "DebugLog")
                .iter()
                .any(|p| p.contains("va_list")),
            error_reporter,
            default_tail_usage: allocator.contains("GetDefaultTailUsage"),
            eval_tensors: interpreter.contains("TfLiteEvalTensor* GetTensor("),
            tensor_by_index: interpreter.contains("TfLiteTensor* tensor(size_t"),
            ..Api::default()
        };
        if let Some((class, params)) = taken {
            let why = format!("MicroAllocator::Create takes a {class}*");
            let text = found.part("HM_ARENA_ALLOCATOR_H", Declares::Class(class), Some(&why))?.unwrap_or_default();
            let creates = parameter_lists(text, "Create");
            api.arena = Some(ArenaAllocator {
                class: class.to_owned(),
                create_with_reporter: !creates.iter().any(|p| p.starts_with("uint8_t*"))
                    && creates.iter().any(|p| p.starts_with("ErrorReporter*")),
                persistent_buffer: Declares::Function("AllocatePersistentBuffer").within(text),
                persistent_usage: Declares::Function("GetNonPersistentUsedBytes").within(text),
            });
            api.planner_given = params.contains("MicroMemoryPlanner*");
            found.known("HM_PRINTF_H", Some("the shim prints the arena's head and tail with it"))?;
            found.known("HM_MEMORY_HELPERS_H", Some("the shim aligns the arena as the interpreter does"))?;
            if found.known("HM_ARENA_CONSTANTS_H", None)?.is_none() {
                let source = allocator_source.and_then(|s| fs::read_to_string(s).ok()).unwrap_or_default();
                let value = source.split("kBufferAlignment = ").nth(1).and_then(|rest| rest.split(';').next());
                api.buffer_alignment = value.and_then(|v| v.trim().parse().ok()).ok_or(
                    "it says the arena's alignment neither by a function MicroArenaBufferAlignment nor as \
                     kBufferAlignment in its allocator's source",
                )?;
            }
            if api.planner_given {
                found.known("HM_GREEDY_PLANNER_H", Some("its allocator is given its planner"))?;
            }
        } else {
            found.known("HM_REGISTRATIONS_H", Some("the op resolver registers the kernels' functions"))?;
        }
        if error_reporter {
            found.known("HM_ERROR_REPORTER_H", Some("its interpreter takes an ErrorReporter*"))?;
        } else if api.arena.as_ref().is_some_and(|a| a.create_with_reporter) {
            found.known("HM_ERROR_REPORTER_H", Some("its arena allocator is created with an ErrorReporter*"))?;
        }
        for optional in ["HM_LINEAR_PLANNER_H", "HM_RECORDING_ALLOCATOR_H", "HM_RESOURCE_VARIABLES_H", "HM_SCHEMA_UTILS_H"]
        {
            found.known(optional, None)?;
        }
        api.headers = found.parts;
        Ok(api)
    }

    /// The shim's defines for this API (`NAME` or `NAME=VALUE`).
    pub fn defines(&self) -> Vec<String> {
        let arena = self.arena.as_ref();
        let mut defines: Vec<String> = [
            (self.debug_log_va_list, "HM_DEBUG_LOG_VA_LIST"),
            (self.error_reporter, "HM_ERROR_REPORTER"),
            (self.planner_given, "HM_PLANNER_GIVEN"),
            (self.default_tail_usage, "HM_DEFAULT_TAIL_USAGE"),
            (self.eval_tensors, "HM_EVAL_TENSORS"),
            (self.tensor_by_index, "HM_TENSOR_BY_INDEX"),
            (arena.is_some_and(|a| a.create_with_reporter), "HM_ARENA_CREATE_WITH_REPORTER"),
            (arena.is_some_and(|a| a.persistent_buffer), "HM_ARENA_PERSISTENT_BUFFER"),
            (arena.is_some_and(|a| a.persistent_usage), "HM_ARENA_PERSISTENT_USAGE"),
        ]
        .into_iter()
        .filter(|(has, _)| *has)
        .map(|(_, define)| define.to_owned())
        .collect();
        if let Some(arena) = arena {
            defines.push(format!("HM_ARENA_ALLOCATOR={}", arena.class));
        }
        if self.buffer_alignment > 0 {
            defines.push(format!("HM_BUFFER_ALIGNMENT={}", self.buffer_alignment));
        }
        defines.extend(self.headers.iter().map(|(define, header)| format!("{define}=\"{header}\"")));
        defines
    }

    /// The headers the shim includes.
    fn included(&self, root: &Path) -> Vec<PathBuf> {
        self.headers.iter().map(|(_, header)| root.join(header)).collect()
    }

    /// The analyzer's model for a tree of this API.
    fn generation(&self, root: &Path) -> Generation {
        let todays_arena =
            self.arena.as_ref().is_some_and(|a| a.class == "SingleArenaBufferAllocator" && !a.create_with_reporter);
        if root.join("tensorflow/lite/micro/kernels/all_ops_resolver.h").is_file() {
            Generation::Tfmicro2020
        } else if self.planner_given && self.default_tail_usage && todays_arena {
            if self.eval_tensors {
                Generation::Current
            } else {
                Generation::Tflm2023
            }
        } else {
            Generation::Between
        }
    }
}

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
    fn includes(&self, files: &[PathBuf], deep: bool) -> Included {
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
struct Included {
    files: std::collections::BTreeSet<PathBuf>,
    missing: Vec<String>,
}

/// The configuration the Makefile is read for: TFLM's generic Cortex-M
/// target with the GNU toolchain, a default build, for the core `arch` and
/// the kernel set. (The core's `-m` flags and device defines are
/// [`cpu_flags`]'s; the target's specialized files, its `debug_log.cc` and
/// `micro_time.cc`, are left for the library's own.)
fn make_settings(kernels: Kernels, arch: &str) -> Vec<(&'static str, String)> {
    [
        ("TENSORFLOW_ROOT", ""),
        ("MAKEFILE_DIR", "tensorflow/lite/micro/tools/make"),
        ("TARGET", "cortex_m_generic"),
        ("TARGET_ARCH", arch),
        ("TOOLCHAIN", "gcc"),
        ("BUILD_TYPE", "default"),
        ("OPTIMIZED_KERNEL_DIR", kernels.optimized_kernel_dir()),
        ("CO_PROCESSOR", ""),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect()
}

/// The core a tree is read for when it is compiled for a host.
const DEFAULT_ARCH: &str = "cortex-m7+fp";

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

/// The variables of a TFLM Makefile as make sets them for one
/// configuration: the assignments (`:=`, `=`, `+=`, `?=`) in the branches of
/// the conditionals that configuration takes, through the files the
/// Makefile includes. What only a program could tell (`$(shell ...)` beyond
/// the two idioms TFLM's Makefiles use to list and name things, `$(call
/// ...)`) is unknown, and a conditional on something unknown takes neither
/// branch; a variable whose value is unknown is an error when asked for.
struct Make<'a> {
    root: &'a Path,
    vars: std::collections::HashMap<String, Value>,
    /// The configuration's variables, set as on make's command line: the
    /// Makefile's own assignments to them do not count.
    fixed: Vec<&'a str>,
    /// The downloads its branches make, in order: the scripts it runs as it
    /// is read, and the rules its `add_third_party_download` calls add.
    fetches: std::cell::RefCell<Vec<Fetch>>,
}

/// A third-party download a TFLM Makefile makes: a download script it runs
/// (`$(shell $(MAKEFILE_DIR)/NAME_download.sh ARGS)`), or a rule of its
/// `add_third_party_download` (`$(DOWNLOAD_SCRIPT) URL MD5 DIR ACTION
/// PARAM`), as the program and the words make gives the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// Relative to the tree.
    pub script: String,
    pub args: Vec<String>,
}

/// The third-party downloads the Makefile of the tree at `root` makes for
/// TFLM's generic Cortex-M build with its reference kernels: the download
/// scripts it runs as it is read, in order, then the rules of its
/// `THIRD_PARTY_DOWNLOADS` (`URL!MD5!DIR!ACTION!PARAM`, each run as
/// `$(DOWNLOAD_SCRIPT)` with those words), quotes removed as the shell
/// removes them.
pub fn third_party_fetches(root: &Path) -> Result<Vec<Fetch>, String> {
    let makefile = root.join("tensorflow/lite/micro/tools/make/Makefile");
    let make = Make::read(root, &makefile, &make_settings(Kernels::Reference, DEFAULT_ARCH))?;
    let mut fetches = make.fetches.borrow().clone();
    let script = make.get("DOWNLOAD_SCRIPT")?;
    for rule in make.list("THIRD_PARTY_DOWNLOADS")? {
        let args = rule.split('!').filter(|w| !w.is_empty()).map(unquoted).collect();
        fetches.push(Fetch { script: script.clone(), args });
    }
    Ok(fetches)
}

#[derive(Debug, Clone)]
enum Value {
    /// Expanded when assigned (`:=`).
    Simple(Result<String, String>),
    /// Expanded when used (`=`).
    Recursive(String),
}

/// One open conditional: whether its current branch is taken (None: not
/// known), and whether an earlier branch was.
struct Branch {
    taken: Option<bool>,
    done: Option<bool>,
}

impl<'a> Make<'a> {
    fn read<V: AsRef<str>>(root: &'a Path, makefile: &Path, settings: &[(&'a str, V)]) -> Result<Make<'a>, String> {
        let vars = settings.iter().map(|(k, v)| (k.to_string(), Value::Simple(Ok(v.as_ref().to_owned())))).collect();
        let mut make = Make {
            root,
            vars,
            fixed: settings.iter().map(|(k, _)| *k).collect(),
            fetches: Default::default(),
        };
        make.include(makefile, 0)?;
        Ok(make)
    }

    fn include(&mut self, file: &Path, depth: usize) -> Result<(), String> {
        if depth > 8 {
            return Err(format!("{}: includes nest too deep", file.display()));
        }
        let text = fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
        let mut branches: Vec<Branch> = Vec::new();
        // The macro being defined (`define NAME` ... `endef`): its name, where
        // the branch is taken, and its lines.
        let mut defining: Option<(Option<String>, Vec<&str>)> = None;
        for raw in joined.lines() {
            if let Some((name, body)) = defining.as_mut() {
                if raw.trim() != "endef" {
                    body.push(raw);
                    continue;
                }
                if let Some(name) = name.take() {
                    self.vars.insert(name, Value::Recursive(body.join("\n")));
                }
                defining = None;
                continue;
            }
            if raw.starts_with('\t') {
                continue; // a recipe
            }
            let line = match raw.find('#') {
                Some(at) if !raw[..at].ends_with('\\') => &raw[..at],
                _ => raw,
            }
            .trim();
            let word = line.split_whitespace().next().unwrap_or_default();
            let active = branches.iter().all(|b| b.taken == Some(true));
            match word {
                "define" => {
                    let name = line["define".len()..].trim().trim_end_matches('=').trim().to_owned();
                    defining = Some((active.then_some(name), Vec::new()));
                }
                "ifeq" | "ifneq" | "ifdef" | "ifndef" => {
                    let taken = if active { condition(self, line) } else { Some(false) };
                    branches.push(Branch { taken, done: taken });
                }
                "else" => {
                    let outer =
                        branches.len() <= 1 || branches[..branches.len() - 1].iter().all(|b| b.taken == Some(true));
                    let rest = line["else".len()..].trim();
                    let Some(branch) = branches.last_mut() else { continue };
                    let taken = match branch.done {
                        _ if !outer => Some(false),
                        Some(true) => Some(false),
                        None => None,
                        Some(false) if rest.is_empty() => Some(true),
                        Some(false) => condition(self, rest),
                    };
                    branch.done = match (branch.done, taken) {
                        (Some(true), _) | (_, Some(true)) => Some(true),
                        (None, _) | (_, None) => None,
                        _ => Some(false),
                    };
                    branch.taken = taken;
                }
                "endif" => {
                    branches.pop();
                }
                "include" | "-include" | "sinclude" if active => {
                    let paths = self.expand(&line[word.len()..]).unwrap_or_default();
                    for path in paths.split_whitespace() {
                        let path = self.root.join(path);
                        if path.is_file() {
                            self.include(&path, depth + 1)?;
                        }
                    }
                }
                _ if active && line.starts_with("$(eval $(call add_third_party_download,") => {
                    self.eval_download(line)?
                }
                _ if active => self.assign(line),
                _ => {}
            }
        }
        Ok(())
    }

    /// `$(eval $(call add_third_party_download,...))`: the assignment the
    /// macro makes, made. (The one `eval` hilmem evaluates: how TFLM's
    /// Makefiles list the third-party downloads of their rules.)
    fn eval_download(&mut self, line: &str) -> Result<(), String> {
        let text = self.expand(line["$(eval ".len()..].strip_suffix(')').unwrap_or_default())?;
        for line in text.lines() {
            self.assign(line.trim());
        }
        Ok(())
    }

    /// `VAR op value`, where op is `:=`, `::=`, `=`, `+=` or `?=`; anything
    /// else (a rule, a function called for its effect) is not an assignment.
    fn assign(&mut self, line: &str) {
        let line = line.strip_prefix("override ").or_else(|| line.strip_prefix("export ")).unwrap_or(line);
        let name_len =
            line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')).unwrap_or(line.len());
        let (name, rest) = line.split_at(name_len);
        let rest = rest.trim_start();
        let (op, value) = match ["::=", ":=", "+=", "?=", "="].iter().find(|op| rest.starts_with(**op)) {
            Some(op) if !name.is_empty() && !self.fixed.contains(&name) => (*op, rest[op.len()..].trim()),
            _ => return,
        };
        let value = match op {
            "=" => Value::Recursive(value.to_owned()),
            "?=" if self.vars.contains_key(name) => return,
            "?=" => Value::Recursive(value.to_owned()),
            "+=" => match self.vars.get(name).cloned() {
                Some(Value::Recursive(old)) => Value::Recursive(format!("{old} {value}")),
                Some(Value::Simple(old)) => {
                    Value::Simple(old.and_then(|old| Ok(format!("{old} {}", self.expand(value)?))))
                }
                None => Value::Recursive(value.to_owned()),
            },
            _ => Value::Simple(self.expand(value)),
        };
        self.vars.insert(name.to_owned(), value);
    }

    fn get(&self, name: &str) -> Result<String, String> {
        match self.vars.get(name) {
            None => Ok(String::new()),
            Some(Value::Simple(value)) => value.clone(),
            Some(Value::Recursive(text)) => self.expand(text),
        }
    }

    /// The words of variable `name`, which must be known.
    fn list(&self, name: &str) -> Result<Vec<String>, String> {
        let value = self.get(name).map_err(|why| format!("the Makefile's {name} cannot be read: {why}"))?;
        Ok(value.split_whitespace().map(str::to_owned).collect())
    }

    /// The third-party headers the Makefile lists (`THIRD_PARTY_CC_HDRS`,
    /// or `THIRD_PARTY_CC_HDRS_BASE` under the downloads where it has that)
    /// that the tree does not hold, relative to the tree.
    fn missing_downloads(&self) -> Result<Vec<String>, String> {
        let downloads = "tensorflow/lite/micro/tools/make/downloads";
        let headers = self.list("THIRD_PARTY_CC_HDRS")?.into_iter().filter(|h| !h.starts_with("third_party/"));
        let base = self.list("THIRD_PARTY_CC_HDRS_BASE")?.into_iter().map(|h| format!("{downloads}/{h}"));
        Ok(headers.chain(base).filter(|h| !self.root.join(h).exists()).collect())
    }

    /// The include directories the Makefile adds under its downloads
    /// (`INCLUDES`, `-I` words unquoted as the shell would) that exist.
    fn includes(&self, root: &Path) -> Result<Vec<PathBuf>, String> {
        let downloads = root.join("tensorflow/lite/micro/tools/make/downloads");
        Ok(self
            .list("INCLUDES")?
            .iter()
            .filter_map(|word| unquoted(word).strip_prefix("-I").map(|dir| root.join(dir)))
            .filter(|dir| dir.starts_with(&downloads) && dir.is_dir())
            .collect())
    }

    /// The flags of `name` (CXXFLAGS, CCFLAGS) that decide what the compiled
    /// objects are: the language standard, `-f` code generation options and
    /// the defines; not warnings, include paths, dependency files,
    /// optimisation (hilmem sets it as TFLM's rules do) or the `-m` target
    /// options and the core's device defines (the board sets those).
    fn flags(&self, name: &str) -> Result<Vec<String>, String> {
        let device = ["-DCPU_", "-DARMCM", "-DCMSIS_DEVICE", "-DARM_MODEL_USE_PMU"];
        Ok(self
            .list(name)?
            .into_iter()
            .filter(|f| f.starts_with("-std=") || f.starts_with("-f") || f.starts_with("-D"))
            .filter(|f| {
                !f.starts_with("-fmessage-length") && !f.contains('"') && !device.iter().any(|d| f.starts_with(d))
            })
            .collect())
    }

    /// `text` with its variable references and function calls expanded.
    fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            match after.chars().next() {
                Some('$') => {
                    out.push('$');
                    rest = &after[1..];
                }
                Some(open @ ('(' | '{')) => {
                    let close = if open == '(' { ')' } else { '}' };
                    let end = matching(after, open, close).ok_or_else(|| format!("unbalanced `{text}`"))?;
                    out.push_str(&self.call(&after[1..end])?);
                    rest = &after[end + 1..];
                }
                Some(c) => {
                    out.push_str(&self.get(&c.to_string())?);
                    rest = &after[c.len_utf8()..];
                }
                None => rest = "",
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The inside of one `$(...)`: a variable or a function.
    fn call(&self, inner: &str) -> Result<String, String> {
        let (function, args) = match inner.split_once(|c: char| c.is_whitespace()) {
            Some((f, args)) if !f.contains('$') => (f, args.trim_start()),
            _ => return self.get(self.expand(inner)?.trim()),
        };
        let args_list = || -> Result<Vec<String>, String> { split_args(args).iter().map(|a| self.expand(a)).collect() };
        let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        Ok(match function {
            "wildcard" => {
                self.expand(args)?.split_whitespace().flat_map(|p| wildcard(self.root, p)).collect::<Vec<_>>().join(" ")
            }
            "filter" | "filter-out" => {
                let a = args_list()?;
                let (patterns, list) =
                    (words(a.first().map_or("", String::as_str)), words(a.get(1).map_or("", String::as_str)));
                let keep = function == "filter";
                list.into_iter()
                    .filter(|w| patterns.iter().any(|p| pattern_match(p, w)) == keep)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "findstring" => {
                let a = args_list()?;
                let (find, within) = (a.first().cloned().unwrap_or_default(), a.get(1).cloned().unwrap_or_default());
                if within.contains(&find) {
                    find
                } else {
                    String::new()
                }
            }
            "sort" => {
                let mut w = words(&self.expand(args)?);
                w.sort();
                w.dedup();
                w.join(" ")
            }
            "strip" => words(&self.expand(args)?).join(" "),
            "addprefix" | "addsuffix" => {
                let a = args_list()?;
                let (fix, list) = (a.first().cloned().unwrap_or_default(), words(a.get(1).map_or("", String::as_str)));
                list.iter()
                    .map(|w| if function == "addprefix" { format!("{fix}{w}") } else { format!("{w}{fix}") })
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "subst" => {
                let a = args_list()?;
                a.get(2).cloned().unwrap_or_default().replace(a[0].as_str(), a.get(1).map_or("", String::as_str))
            }
            "patsubst" => {
                let a = args_list()?;
                let (from, to) = (a.first().cloned().unwrap_or_default(), a.get(1).cloned().unwrap_or_default());
                words(a.get(2).map_or("", String::as_str))
                    .iter()
                    .map(|w| patsubst(&from, &to, w))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "call" if args.starts_with("substitute_specialized_implementations,") => {
                let a = split_args(args);
                let (base, dir) = (a.get(1).map_or("", String::as_str), a.get(2).map_or("", String::as_str));
                self.specialized(&self.expand(base)?, self.expand(dir)?.trim())
            }
            "call" => {
                // A macro of the Makefile's own (`define`): its text with the
                // arguments as `$(1)`, `$(2)`, ..., expanded.
                let a = split_args(args);
                let name = self.expand(a.first().map_or("", String::as_str))?;
                let Some(Value::Recursive(body)) = self.vars.get(name.trim()) else {
                    return Err(format!("`$(call {args})`: `{}` is no macro hilmem knows", name.trim()));
                };
                let mut text = body.clone();
                for n in (1..10).rev() {
                    let arg = a.get(n).map(|arg| self.expand(arg)).transpose()?.unwrap_or_default();
                    text = text.replace(&format!("$({n})"), &arg);
                }
                self.expand(&text)?
            }
            "shell" if args.contains("specialize_files.py") => {
                let base = args.split("--base_files").nth(1).and_then(|rest| rest.split('"').nth(1));
                let base = base.ok_or_else(|| format!("`$(shell {args})`: no --base_files \"...\""))?;
                let dir = args.split("--specialize_directory").nth(1).unwrap_or_default();
                self.specialized(&self.expand(base)?, self.expand(dir)?.trim())
            }
            "shell" => self.shell(&self.expand(args)?)?,
            "info" | "warning" | "error" | "eval" => String::new(),
            _ => return Err(format!("`$({function} ...)` is not something hilmem can evaluate")),
        })
    }

    /// What TFLM's `specialize_files.py` makes of `base` (file paths) and
    /// `dir`: each file replaced by `dir`'s file of the same name where it
    /// has one. Only an optimized kernel directory (under `kernels/`)
    /// specializes: a platform's files (its `debug_log.cc`, its
    /// `micro_time.cc`) are the shim's and the board's business, and the
    /// library's own sources stand.
    fn specialized(&self, base: &str, dir: &str) -> String {
        let dir = dir.trim_end_matches('/');
        let kernels = dir.starts_with("tensorflow/lite/micro/kernels/") && self.root.join(dir).is_dir();
        base.split_whitespace()
            .map(|file| match file.rsplit('/').next() {
                Some(name) if kernels && self.root.join(dir).join(name).is_file() => format!("{dir}/{name}"),
                _ => file.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The two commands TFLM's Makefiles run to make a list or a name: `find
    /// DIR -type d \( -path A -o -path B \) -prune -false -o -name "*.cc" ...`
    /// (every source below DIR outside the pruned directories), and `echo X
    /// | tr [a-z] [A-Z]`.
    fn shell(&self, command: &str) -> Result<String, String> {
        let words: Vec<&str> = command.split_whitespace().collect();
        if let ["echo", word, "|", "tr", "[a-z]", "[A-Z]"] = words.as_slice() {
            return Ok(word.to_uppercase());
        }
        let unknown = || format!("`$(shell {command})` is not something hilmem can evaluate");
        // The scripts that check an optimized kernel directory and fetch a
        // library answer SUCCESS when the directory is there (a download
        // hilmem never makes: without it the answer is unknown).
        if let [script, dir, ..] = words.as_slice() {
            let downloaded = script
                .rsplit('/')
                .next()
                .and_then(|name| name.strip_suffix("_download.sh"))
                .map(|lib| self.root.join(dir).join(lib));
            if downloaded.is_some() {
                let args = words[1..].iter().map(|w| (*w).to_owned()).collect();
                self.fetches.borrow_mut().push(Fetch { script: (*script).to_owned(), args });
            }
            let checked = script.ends_with("/check_optimized_kernel_dir.sh").then(|| self.root.join(dir));
            if let Some(dir) = downloaded.or(checked) {
                return if dir.is_dir() { Ok("SUCCESS".to_owned()) } else { Err(unknown()) };
            }
        }
        let ["find", dir, rest @ ..] = words.as_slice() else { return Err(unknown()) };
        let mut pruned = Vec::new();
        let mut extensions = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            match rest[i] {
                "-path" => pruned.push(self.root.join(rest.get(i + 1).ok_or_else(unknown)?)),
                "-name" => {
                    let name = rest.get(i + 1).ok_or_else(unknown)?.trim_matches('"');
                    extensions.push(name.strip_prefix("*.").ok_or_else(unknown)?.to_owned());
                }
                "-type" | "-maxdepth" => i += 1,
                "\\(" | "\\)" | "-o" | "-prune" | "-false" | "d" => {}
                _ => return Err(unknown()),
            }
            i += if matches!(rest[i], "-path" | "-name") { 2 } else { 1 };
        }
        let extensions: Vec<&str> = extensions.iter().map(String::as_str).collect();
        // `find` of a directory that is not there finds nothing.
        let dir = self.root.join(dir);
        let found = if dir.is_dir() { walk(&dir, &extensions)? } else { Vec::new() };
        Ok(found
            .iter()
            .filter(|p| !pruned.iter().any(|d| p.starts_with(d)))
            .map(|p| p.strip_prefix(self.root).unwrap_or(p).display().to_string())
            .collect::<Vec<_>>()
            .join(" "))
    }
}

/// Whether the conditional on `line` (`ifeq (a,b)`, `ifneq "a" "b"`,
/// `ifdef V`, `ifndef V`) holds; None when it depends on something unknown.
fn condition(make: &Make, line: &str) -> Option<bool> {
    let (word, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim();
    match word {
        "ifdef" | "ifndef" => {
            let set = !make.get(rest).ok()?.trim().is_empty();
            Some(set == (word == "ifdef"))
        }
        "ifeq" | "ifneq" => {
            let (a, b) = if let Some(inner) = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
                let args = split_args(inner);
                (args.first()?.clone(), args.get(1)?.clone())
            } else {
                let quoted: Vec<&str> = rest.split(['"', '\'']).map(str::trim).filter(|s| !s.is_empty()).collect();
                (quoted.first()?.to_string(), quoted.get(1).unwrap_or(&"").to_string())
            };
            let (a, b) = (make.expand(&a).ok()?, make.expand(&b).ok()?);
            Some((a.trim() == b.trim()) == (word == "ifeq"))
        }
        _ => None,
    }
}

/// A word as the shell passes it on: quotes removed, `\x` taken as `x`
/// (`-D"ARMCM7"` is `-DARMCM7`; `-DX=\"ARMCM7.h\"` is `-DX="ARMCM7.h"`).
fn unquoted(word: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None | Some('"'), '\\') => out.extend(chars.next()),
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            _ => out.push(c),
        }
    }
    out
}

/// The position of the bracket that closes the one `text` starts with.
fn matching(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// A function's arguments: split at the commas outside brackets.
fn split_args(text: &str) -> Vec<String> {
    let mut args = vec![String::new()];
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        args.last_mut().unwrap().push(c);
    }
    args
}

/// Whether `word` matches make's `pattern` (one `%` at most).
fn pattern_match(pattern: &str, word: &str) -> bool {
    match pattern.split_once('%') {
        Some((pre, post)) => word.len() >= pre.len() + post.len() && word.starts_with(pre) && word.ends_with(post),
        None => pattern == word,
    }
}

fn patsubst(from: &str, to: &str, word: &str) -> String {
    match from.split_once('%') {
        Some((pre, post)) if pattern_match(from, word) => {
            to.replacen('%', &word[pre.len()..word.len() - post.len()], 1)
        }
        None if from == word => to.to_owned(),
        _ => word.to_owned(),
    }
}

/// The files `pattern` (relative to `root`, `*` in its last part only)
/// names, in path order.
fn wildcard(root: &Path, pattern: &str) -> Vec<String> {
    let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    if !name.contains('*') {
        return if root.join(pattern).exists() { vec![pattern.to_owned()] } else { Vec::new() };
    }
    let (pre, post) = name.split_once('*').unwrap();
    let mut found: Vec<String> = fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post))
        .map(|n| if dir.is_empty() { n } else { format!("{dir}/{n}") })
        .collect();
    found.sort();
    found
}

/// The kernel sources an image needs: those of `tree` that define one of
/// `registrations` (`Register_CONV_2D`, ...), and the helpers among the
/// kernel sources (those that define none, like `conv_common.cc`) that
/// implement a header those include, directly or through other headers or
/// helpers (`conv.h`: its header is the one beside it under its own name,
/// or under its name without `_common`; a helper without one is always
/// compiled). TFLM's archive would leave the rest out of the link anyway;
/// not compiling them is what keeps a build on a new tree short, and a
/// helper wrongly left out is an undefined symbol at the link, never a
/// different image. A registration no kernel defines is an error, which
/// names the tree and counts the kernel sources its Makefile lists that it
/// lacks.
pub fn needed_kernels(tree: &Tree, registrations: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut defined: Vec<String> = Vec::new();
    let mut needed = Vec::new();
    let mut helpers = Vec::new();
    for file in &tree.kernels {
        let text = fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let defines = registrations_defined(&text);
        if defines.is_empty() {
            helpers.push(file.clone());
        } else if defines.iter().any(|r| registrations.contains(r)) {
            needed.push(file.clone());
        }
        defined.extend(defines);
    }
    let missing: Vec<&str> = registrations.iter().filter(|r| !defined.contains(r)).map(String::as_str).collect();
    if !missing.is_empty() {
        let absent = match tree.absent.len() {
            0 => String::new(),
            n => format!(" (its Makefile lists {n} kernel sources the tree does not hold)"),
        };
        return Err(format!(
            "{}: no kernel source of the TFLM tree defines {}{absent}",
            tree.root.display(),
            missing.join(", ")
        ));
    }
    let mut pending: Vec<(PathBuf, Option<PathBuf>)> = helpers
        .into_iter()
        .map(|helper| {
            let own = own_header(&helper);
            (helper, own)
        })
        .collect();
    let mut included = tree.includes(&needed, true).files;
    loop {
        let (now, later): (Vec<_>, Vec<_>) =
            pending.into_iter().partition(|(_, own)| own.as_ref().is_none_or(|h| included.contains(h)));
        if now.is_empty() {
            return Ok(needed);
        }
        let now: Vec<PathBuf> = now.into_iter().map(|(helper, _)| helper).collect();
        included.extend(tree.includes(&now, true).files);
        needed.extend(now);
        pending = later;
    }
}

/// The header a kernel helper implements: the one beside it under its
/// own name, or under its name without `_common` (`conv_common.cc`
/// implements `conv.h`; not `reference/conv.h`, which it also includes).
fn own_header(helper: &Path) -> Option<PathBuf> {
    let stem = helper.file_stem()?.to_str()?;
    let names = [stem, stem.strip_suffix("_common").unwrap_or(stem)];
    names.iter().map(|name| helper.with_file_name(format!("{name}.h"))).find(|h| h.is_file())
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
