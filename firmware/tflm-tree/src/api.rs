//! The parts of TFLM's API that changed over its history, found by what a
//! tree's headers declare.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{walk, Generation};

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
                    && rest
                        .trim_start()
                        .strip_prefix(name)
                        .is_some_and(|a| a.is_empty() || a.starts_with([' ', '\t', '(']))
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
    pub(crate) fn of(root: &Path) -> Result<Api, String> {
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
        for optional in
            ["HM_LINEAR_PLANNER_H", "HM_RECORDING_ALLOCATOR_H", "HM_RESOURCE_VARIABLES_H", "HM_SCHEMA_UTILS_H"]
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
    pub(crate) fn included(&self, root: &Path) -> Vec<PathBuf> {
        self.headers.iter().map(|(_, header)| root.join(header)).collect()
    }

    /// The analyzer's model for a tree of this API.
    pub(crate) fn generation(&self, root: &Path) -> Generation {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    /// The API is read from what the headers declare, each part on its
    /// own and wherever its header lives: a tree that mixes them as no TFLM
    /// did, or moves a header, is still read part by part; one that lacks a
    /// part is refused naming it.
    #[test]
    fn the_api_is_what_the_headers_declare() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let micro = "tensorflow/lite/micro";
        write_todays_api(root);
        let api = Api::of(root).unwrap();
        let headers = |api: &Api| -> Vec<String> { api.headers.iter().map(|(d, h)| format!("{d}={h}")).collect() };
        assert_eq!(
            api.defines()[..7],
            [
                "HM_DEBUG_LOG_VA_LIST",
                "HM_PLANNER_GIVEN",
                "HM_DEFAULT_TAIL_USAGE",
                "HM_EVAL_TENSORS",
                "HM_ARENA_PERSISTENT_BUFFER",
                "HM_ARENA_PERSISTENT_USAGE",
                "HM_ARENA_ALLOCATOR=SingleArenaBufferAllocator",
            ]
        );
        assert_eq!(api.generation(root), Generation::Current);
        assert!(headers(&api).contains(&format!("HM_ARENA_CONSTANTS_H={micro}/micro_arena_constants.h")));
        assert_eq!(api.defines()[7], format!("HM_INTERPRETER_H=\"{micro}/micro_interpreter.h\""));

        // The window of 2022-04 to 2022-07: the arena allocator under its
        // earlier name in a folder of its own, created with a reporter, and
        // no arena constants (the alignment is the allocator's source's).
        fs::remove_file(root.join(micro).join("arena_allocator/single_arena_buffer_allocator.h")).unwrap();
        fs::remove_file(root.join(micro).join("micro_arena_constants.h")).unwrap();
        write(
            root,
            &format!("{micro}/arena_allocator/simple_memory_allocator.h"),
            "class SimpleMemoryAllocator : public INonPersistentBufferAllocator {\n\
             \x20 static SimpleMemoryAllocator* Create(ErrorReporter* error_reporter,\n\
             \x20     uint8_t* buffer_head, size_t buffer_size);\n\
             \x20 uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment);\n\
             \x20 size_t GetNonPersistentUsedBytes() const;\n};\n",
        );
        write(
            root,
            &format!("{micro}/micro_allocator.h"),
            "class SimpleMemoryAllocator;\nclass MicroAllocator {\n\
             \x20 static MicroAllocator* Create(SimpleMemoryAllocator* memory_allocator,\n\
             \x20     MicroMemoryPlanner* memory_planner, ErrorReporter* error_reporter);\n\
             \x20 static size_t GetDefaultTailUsage(bool is_memory_planner_given);\n};\n",
        );
        let err = Api::of(root).unwrap_err();
        assert_eq!(
            err,
            "it says the arena's alignment neither by a function MicroArenaBufferAlignment nor as kBufferAlignment \
             in its allocator's source"
        );
        write(root, &format!("{micro}/micro_allocator.cc"), "constexpr int kBufferAlignment = 16;");
        let err = Api::of(root).unwrap_err();
        assert_eq!(
            err,
            "no header under tensorflow/ declares class MicroErrorReporter (its arena allocator is created with an \
             ErrorReporter*)"
        );
        write(root, &format!("{micro}/logging/reporter.h"), "class MicroErrorReporter : public ErrorReporter {};");
        let api = Api::of(root).unwrap();
        let arena = api.arena.clone().unwrap();
        assert_eq!(
            (arena.class.as_str(), arena.create_with_reporter, arena.persistent_buffer, arena.persistent_usage),
            ("SimpleMemoryAllocator", true, true, true)
        );
        assert!(api.defines().contains(&"HM_BUFFER_ALIGNMENT=16".to_owned()));
        assert!(
            headers(&api).contains(&format!("HM_ARENA_ALLOCATOR_H={micro}/arena_allocator/simple_memory_allocator.h"))
        );
        assert!(headers(&api).contains(&format!("HM_ERROR_REPORTER_H={micro}/logging/reporter.h")));
        assert_eq!(api.generation(root), Generation::Between, "the arena allocator under its earlier name");

        // A class forward-declared only is not declared.
        write(root, &format!("{micro}/arena_allocator/simple_memory_allocator.h"), "class SimpleMemoryAllocator;\n");
        let err = Api::of(root).unwrap_err();
        assert_eq!(
            err,
            "no header under tensorflow/ declares class SimpleMemoryAllocator (MicroAllocator::Create takes a \
             SimpleMemoryAllocator*)"
        );
    }

    /// Where two headers declare the same name (a tool's copy of TFLite's
    /// schema beside TFLM's headers), the one the interpreter's includes
    /// reach is the library's.
    #[test]
    fn the_header_the_interpreter_reaches_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_todays_api(root);
        let copy = "tensorflow/lite/micro/python/tool/schema_copy.h";
        write(root, copy, "inline bool VerifyModelBuffer(flatbuffers::Verifier &verifier) {}\n");
        let schema = |api: &Api| api.headers.iter().find(|(d, _)| *d == "HM_SCHEMA_H").unwrap().1.clone();
        assert_eq!(schema(&Api::of(root).unwrap()), copy, "without an include, TFLM's own folder first");
        let interpreter = root.join("tensorflow/lite/micro/micro_interpreter.h");
        let text = fs::read_to_string(&interpreter).unwrap();
        fs::write(&interpreter, format!("#include \"tensorflow/lite/micro/x.h\"\n{text}")).unwrap();
        write(root, "tensorflow/lite/micro/x.h", "#include \"tensorflow/lite/schema/schema_generated.h\"\n");
        assert_eq!(schema(&Api::of(root).unwrap()), "tensorflow/lite/schema/schema_generated.h");
    }

    /// What each kind of declaration is, and what it is not.
    #[test]
    fn a_declaration_is_told_from_a_use() {
        let class = Declares::Class("MicroAllocator");
        assert!(class.within("class MicroAllocator {"));
        assert!(class.within("  class MicroAllocator final : public Base {"));
        assert!(class.within("class MicroAllocator\n    : public Base {"));
        assert!(!class.within("class MicroAllocator;"));
        assert!(!class.within("class MicroAllocatorTest {"));
        assert!(!class.within("// class MicroAllocator {"));
        let function = Declares::Function("MicroPrintf");
        assert!(function.within("void MicroPrintf(const char* format, ...);"));
        assert!(function.within("extern \"C\" void MicroPrintf(const char* s);"));
        assert!(!function.within("void VMicroPrintf(const char* format, va_list args);"));
        assert!(!function.within("  MicroPrintf(\"%d\", x);"));
        assert!(!function.within("  return MicroPrintf(x);"));
        assert!(!function.within("  x = MicroPrintf(x);"));
        assert!(!function.within("#define MicroPrintf(...) Unused(__VA_ARGS__)"));
        assert!(!function.within("// void MicroPrintf(const char* format, ...);"));
        let constant = Declares::Function("MicroArenaBufferAlignment");
        assert!(constant.within("constexpr int MicroArenaBufferAlignment() { return 16; }"));
        assert!(!constant.within("        bytes_to_allocate, MicroArenaBufferAlignment());"));
        let schema = Declares::Macro("TFLITE_SCHEMA_VERSION");
        assert!(schema.within("#define TFLITE_SCHEMA_VERSION (3)"));
        assert!(!schema.within("#define TFLITE_SCHEMA_VERSION_OLD (2)"));
        assert!(!schema.within("#ifdef TFLITE_SCHEMA_VERSION"));
        assert_eq!(
            parameter_lists(
                "static MicroAllocator* Create(\n   uint8_t* arena,\n size_t size);",
                "MicroAllocator* Create"
            ),
            ["uint8_t* arena, size_t size"]
        );
    }
}
