//! A tree written from nothing that declares today's API, for tests that
//! read trees.

use std::fs;
use std::path::Path;

/// The headers of a tree that declares today's API, each in the file
/// today's TFLM has it in.
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

/// Writes `text` to `path` under `root`, making its folders.
pub fn write(root: &Path, path: &str, text: &str) {
    let file = root.join(path);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, text).unwrap();
}
