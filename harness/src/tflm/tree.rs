//! What a TFLM source tree is: where it is, the API its headers declare
//! (which the shim is compiled for), its generation (what the analyzer
//! predicts), its sources and flags as its own Makefile lists them. The firmware's build script includes the same file, so both sides
//! agree on what a tree is.

#![allow(dead_code)] // the build script uses all of it, the harness part

use std::fmt;
use std::path::{Path, PathBuf};
use std::{env, fs};

include!("../../../firmware/tflm-sys/tree.rs");

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

/// The headers of a tree that declares today's API, each in the file
/// today's TFLM has it in.
#[cfg(test)]
pub fn write_todays_api(root: &Path) {
    let micro = "tensorflow/lite/micro";
    for (file, text) in [
        (
            "micro_interpreter.h",
            "#define TFLITE_SCHEMA_VERSION (3)\nclass MicroInterpreter {\n  TfLiteEvalTensor* GetTensor(int);\n};\n",
        ),
        ("micro_mutable_op_resolver.h", "template <unsigned int N>\nclass MicroMutableOpResolver : public R {};\n"),
        ("debug_log.h", "void DebugLog(const char* format, va_list args);\n"),
        ("micro_log.h", "void MicroPrintf(const char* format, ...);\n"),
        (
            "micro_allocator.h",
            "class MicroAllocator {\n static MicroAllocator* Create(SingleArenaBufferAllocator* memory_allocator,\n\
             \x20     MicroMemoryPlanner* memory_planner);\n static size_t GetDefaultTailUsage(bool);\n};\n",
        ),
        (
            "arena_allocator/single_arena_buffer_allocator.h",
            "class SingleArenaBufferAllocator : public INonPersistentBufferAllocator {\n\
             \x20 static SingleArenaBufferAllocator* Create(uint8_t* buffer_head, size_t buffer_size);\n\
             \x20 uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment) override;\n\
             \x20 size_t GetNonPersistentUsedBytes() const override;\n};\n",
        ),
        ("memory_helpers.h", "uint8_t* AlignPointerUp(uint8_t* data, size_t alignment);\n"),
        ("micro_arena_constants.h", "constexpr int MicroArenaBufferAlignment() { return 16; }\n"),
        ("memory_planner/greedy_memory_planner.h", "class GreedyMemoryPlanner : public MicroMemoryPlanner {};\n"),
    ] {
        let path = root.join(micro).join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let schema = root.join("tensorflow/lite/schema/schema_generated.h");
    fs::create_dir_all(schema.parent().unwrap()).unwrap();
    fs::write(schema, "inline bool VerifyModelBuffer(flatbuffers::Verifier &verifier) {}\n").unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let file = root.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }

    /// The idioms of TFLM's Makefiles over the years, read as make reads
    /// them for the Cortex-M build.
    #[test]
    fn a_makefile_is_read_as_make_reads_it_for_one_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in ["tensorflow/lite/micro/a.cc", "tensorflow/lite/micro/a_test.cc", "tensorflow/lite/micro/b.cc"] {
            write(root, file, "");
        }
        for file in ["tensorflow/lite/c/common.c", "tensorflow/lite/core/api/x.cc", "tensorflow/lite/experimental/e.cc"]
        {
            write(root, file, "");
        }
        write(root, "tensorflow/lite/micro/tools/make/downloads/lib/l.cc", "");
        write(
            root,
            "tensorflow/lite/micro/tools/make/Makefile",
            "TENSORFLOW_ROOT :=\n\
             HOST_OS := $(shell uname -s)\n\
             TARGET := $(HOST_OS)\n\
             include $(MAKEFILE_DIR)/more.inc\n\
             # a comment\n\
             LATE = $(LATER) \\\n  two\n\
             LATER := one\n\
             DEFAULTED ?= kept\n\
             DEFAULTED ?= not\n\
             ifeq ($(TARGET), $(HOST_OS))\n  HOSTED := yes\nelse\n  HOSTED := no\nendif\n\
             ifeq ($(TARGET_ARCH), cortex-m0)\n  CORE := M0\nelse ifeq ($(TARGET_ARCH), cortex-m7)\n  CORE := M7\nelse\n  $(error unknown)\nendif\n\
             ifneq ($(OPTIMIZED_KERNEL_DIR),)\n  KERNELS := optimized\nendif\n\
             ADDITIONAL_DEFINES := -D$(shell echo $(OPTIMIZE_FOR) | tr [a-z] [A-Z])\n\
             TFL_CC_SRCS := $(shell find $(TENSORFLOW_ROOT)tensorflow -type d \\( -path tensorflow/lite/experimental -o -path tensorflow/lite/micro \\) -prune -false -o -name \"*.cc\" -o -name \"*.c\")\n\
             MICROLITE_CC_BASE_SRCS := $(wildcard tensorflow/lite/micro/*.cc) $(TFL_CC_SRCS)\n\
             MICROLITE_CC_SRCS := $(filter-out $(MICROLITE_TEST_SRCS), $(MICROLITE_CC_BASE_SRCS))\n\
             MICROLITE_CC_SRCS := $(call substitute_specialized_implementations,$(MICROLITE_CC_SRCS),$(TARGET))\n\
             MICROLITE_TEST_SRCS := $(filter-out tensorflow/lite/micro/a_test.cc, $(MICROLITE_TEST_SRCS))\n\
             CXXFLAGS := -std=c++17 -fno-rtti -Wall -Ifoo -O2 -mthumb -DCPU_$(CORE)=1 -DKEEP $(ADDITIONAL_DEFINES)\n\
             \tCXXFLAGS := $(recipe lines are not assignments)\n\
             UNKNOWN := $(shell uname -m)\n",
        );
        write(
            root,
            "tensorflow/lite/micro/tools/make/more.inc",
            "MICROLITE_TEST_SRCS := tensorflow/lite/micro/a_test.cc\n",
        );
        let settings = [
            ("MAKEFILE_DIR", "tensorflow/lite/micro/tools/make"),
            ("TARGET", "cortex_m_generic"),
            ("TARGET_ARCH", "cortex-m7"),
            ("OPTIMIZED_KERNEL_DIR", ""),
            ("OPTIMIZE_FOR", "kernels_optimized_for_speed"),
        ];
        let make = Make::read(root, &root.join("tensorflow/lite/micro/tools/make/Makefile"), &settings).unwrap();
        let words = |name: &str| make.list(name).unwrap().join(" ");
        // The configuration's TARGET stands; a conditional on an unknown
        // (HOST_OS) takes neither branch.
        assert_eq!(words("TARGET"), "cortex_m_generic");
        assert_eq!(words("HOSTED"), "");
        assert_eq!((words("CORE"), words("KERNELS")), ("M7".into(), "".into()));
        assert_eq!((words("LATE"), words("DEFAULTED")), ("one two".into(), "kept".into()));
        // The library's sources as make lists them where it builds the
        // library: tests left out as they were then, no walk into
        // experimental/, micro/ or the downloads.
        assert_eq!(
            words("MICROLITE_CC_SRCS"),
            "tensorflow/lite/micro/a.cc tensorflow/lite/micro/b.cc tensorflow/lite/c/common.c tensorflow/lite/core/api/x.cc"
        );
        assert_eq!(
            make.flags("CXXFLAGS").unwrap(),
            ["-std=c++17", "-fno-rtti", "-DKEEP", "-DKERNELS_OPTIMIZED_FOR_SPEED"]
        );
        let unknown = make.list("UNKNOWN").unwrap_err();
        assert!(unknown.contains("UNKNOWN") && unknown.contains("$(shell uname -m)"), "{unknown}");
    }

    /// `OPTIMIZED_KERNEL_DIR=cmsis_nn` read as make reads it: each kernel of
    /// the optimized directory replaces the reference one of the same name,
    /// the library's sources and include directories come from its
    /// `ext_libs` file, quoted includes are unquoted; without the downloads
    /// the download script's answer is unknown and the tree is refused,
    /// naming them.
    #[test]
    fn an_optimized_kernel_directory_specializes_the_kernels() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let make = "tensorflow/lite/micro/tools/make";
        for file in ["tensorflow/lite/micro/kernels/conv.cc", "tensorflow/lite/micro/kernels/add.cc"] {
            write(root, file, "");
        }
        write(root, "tensorflow/lite/micro/kernels/cmsis_nn/conv.cc", "");
        write(
            root,
            &format!("{make}/Makefile"),
            "DOWNLOADS_DIR := $(MAKEFILE_DIR)/downloads\n\
             MICROLITE_CC_KERNEL_SRCS := tensorflow/lite/micro/kernels/add.cc tensorflow/lite/micro/kernels/conv.cc\n\
             CORE = M7\n\
             ARM_CPU := \"ARMC$(CORE)\"\n\
             INCLUDES := -I. -I$(DOWNLOADS_DIR)/cmsis/Device/$(ARM_CPU)/Include\n\
             ifneq ($(OPTIMIZED_KERNEL_DIR),)\n\
             \x20 include $(MAKEFILE_DIR)/ext_libs/$(OPTIMIZED_KERNEL_DIR).inc\n\
             \x20 MICROLITE_CC_KERNEL_SRCS := $(shell python3 $(MAKEFILE_DIR)/specialize_files.py \\\n\
             \x20   --base_files \"$(MICROLITE_CC_KERNEL_SRCS)\" \\\n\
             \x20   --specialize_directory tensorflow/lite/micro/kernels/$(OPTIMIZED_KERNEL_DIR))\n\
             endif\n",
        );
        write(
            root,
            &format!("{make}/ext_libs/cmsis_nn.inc"),
            "CMSIS_PATH := $(DOWNLOADS_DIR)/cmsis\n\
             DOWNLOAD_RESULT := $(shell $(MAKEFILE_DIR)/ext_libs/cmsis_download.sh ${DOWNLOADS_DIR} ${TENSORFLOW_ROOT})\n\
             ifneq ($(DOWNLOAD_RESULT), SUCCESS)\n  $(error no CMSIS)\nendif\n\
             SOURCES := $(shell find $(CMSIS_PATH)/Source -name \"*.c\")\n\
             INCLUDES += -I$(CMSIS_PATH)/Include\n",
        );
        let settings = make_settings(Kernels::CmsisNn, "cortex-m7+fp");
        let read = || Make::read(root, &root.join(make).join("Makefile"), &settings).unwrap();
        assert_eq!(
            read().list("MICROLITE_CC_KERNEL_SRCS").unwrap(),
            ["tensorflow/lite/micro/kernels/add.cc", "tensorflow/lite/micro/kernels/cmsis_nn/conv.cc"]
        );
        let unknown = read().list("DOWNLOAD_RESULT").unwrap_err();
        assert!(unknown.contains("cmsis_download.sh"), "{unknown}");
        assert_eq!(read().list("SOURCES").unwrap(), Vec::<String>::new(), "find of a missing directory");
        write(root, &format!("{make}/downloads/cmsis/Source/a/arm_x.c"), "");
        for dir in ["Include", "Device/ARMCM7/Include"] {
            fs::create_dir_all(root.join(make).join("downloads/cmsis").join(dir)).unwrap();
        }
        let make_read = read();
        assert_eq!(make_read.list("DOWNLOAD_RESULT").unwrap(), ["SUCCESS"]);
        assert_eq!(make_read.list("SOURCES").unwrap(), [format!("{make}/downloads/cmsis/Source/a/arm_x.c")]);
        let downloads = root.join(make).join("downloads/cmsis");
        assert_eq!(
            make_read.includes(root).unwrap(),
            [downloads.join("Device/ARMCM7/Include"), downloads.join("Include")]
        );
        assert_eq!(unquoted("-DX=\\\"\"ARMCM7\".h\\\""), "-DX=\"ARMCM7.h\"");
    }

    /// Of the kernel sources, an image compiles those that register its
    /// operators and the helpers that implement a header they reach,
    /// directly, through other headers or through another such helper; a
    /// helper whose header cannot be told is compiled.
    #[test]
    fn only_the_helpers_the_models_kernels_reach_are_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let kernels = "tensorflow/lite/micro/kernels";
        let reference = "tensorflow/lite/kernels/internal/reference/pooling.h";
        let include = |header: &str| format!("#include \"{kernels}/{header}\"\n");
        let register = |op: &str| format!("TFLMRegistration Register_{op}() {{ return {{}}; }}\n");
        let files = [
            ("conv.cc", include("conv.h") + &include("kernel_util.h") + &register("CONV_2D")),
            ("conv.h", include("padding.h")),
            ("padding.h", String::new()),
            ("conv_common.cc", include("conv.h") + &include("tensor_helper.h")),
            ("tensor_helper.h", String::new()),
            ("tensor_helper.cc", include("tensor_helper.h")),
            ("kernel_util.h", String::new()),
            ("kernel_util.cc", include("kernel_util.h")),
            ("depthwise_conv.h", String::new()),
            ("depthwise_conv.cc", include("depthwise_conv.h") + &include("conv.h") + &register("DEPTHWISE_CONV_2D")),
            ("depthwise_conv_common.cc", include("depthwise_conv.h") + &include("kernel_util.h")),
            ("lstm_eval.h", String::new()),
            ("lstm_eval_common.cc", include("lstm_eval.h") + &include("kernel_util.h")),
            ("no_header.cc", include("kernel_util.h")),
            // Its header is the one beside it, not the reference kernel's.
            ("pooling.h", String::new()),
            ("pooling.cc", include("pooling.h") + &register("AVERAGE_POOL_2D")),
            ("pooling_common.cc", format!("#include \"{reference}\"\n") + &include("pooling.h")),
        ];
        for (name, text) in &files {
            write(root, &format!("{kernels}/{name}"), text);
        }
        write(root, reference, "");
        let tree = Tree {
            root: root.to_owned(),
            generation: Generation::Current,
            api: Api::default(),
            third_party: root.join("third_party"),
            core: Vec::new(),
            kernels: files
                .iter()
                .filter(|(n, _)| n.ends_with(".cc"))
                .map(|(n, _)| root.join(kernels).join(n))
                .collect(),
            absent: Vec::new(),
            flags: Flags { c: Vec::new(), cxx: Vec::new() },
            kernels_set: Kernels::Reference,
            third_party_kernels: Vec::new(),
            kernel_includes: Vec::new(),
            cpu: Vec::new(),
        };
        let needed = |ops: &[&str]| {
            let registrations: Vec<String> = ops.iter().map(|op| format!("Register_{op}")).collect();
            let found = needed_kernels(&tree, &registrations).unwrap();
            let mut names: Vec<String> =
                found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
            names.sort();
            names
        };
        assert_eq!(
            needed(&["CONV_2D"]),
            ["conv.cc", "conv_common.cc", "kernel_util.cc", "no_header.cc", "tensor_helper.cc"]
        );
        assert_eq!(
            needed(&["DEPTHWISE_CONV_2D"]),
            [
                "conv_common.cc",
                "depthwise_conv.cc",
                "depthwise_conv_common.cc",
                "kernel_util.cc",
                "no_header.cc",
                "tensor_helper.cc"
            ]
        );
        assert_eq!(needed(&["AVERAGE_POOL_2D"]), ["kernel_util.cc", "no_header.cc", "pooling.cc", "pooling_common.cc"]);
        let unknown = needed_kernels(&tree, &["Register_ADD".to_owned()]).unwrap_err();
        assert!(unknown.contains("defines Register_ADD"), "{unknown}");
    }

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
