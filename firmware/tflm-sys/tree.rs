// Where the TFLM tree is and how it is compiled, in one place: `build.rs`
// uses it, and hilmem's analyzer tests compile TFLM's types with it to check
// the sizes the arena prediction assumes. Needs `std::{env, fs}` and
// `std::path::{Path, PathBuf}` in scope.

/// C++ only.
pub const CXX_FLAGS: &[&str] =
    &["-std=c++11", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics", "-fno-use-cxa-atexit"];
/// C and C++.
pub const COMMON_FLAGS: &[&str] = &["-ffunction-sections", "-fdata-sections", "-fno-short-enums"];
pub const DEFINES: &[&str] =
    &["TF_LITE_STATIC_MEMORY", "TF_LITE_MCU_DEBUG_LOG", "NDEBUG", "GEMMLOWP_ALLOW_SLOW_SCALAR_FALLBACK"];

/// The TFLM tree: `HILMEM_TFLM_DIR`, or the tfmicro 0.1.0 archive cargo unpacked.
pub fn tflm_root() -> PathBuf {
    if let Some(dir) = env::var_os("HILMEM_TFLM_DIR") {
        let dir = PathBuf::from(dir);
        if !dir.join("tensorflow/lite/micro/micro_interpreter.h").exists() {
            panic!("HILMEM_TFLM_DIR={} does not hold tensorflow/lite/micro/micro_interpreter.h", dir.display());
        }
        return dir;
    }
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
    found.unwrap_or_else(|| {
        panic!(
            "the TFLM source archive tfmicro-0.1.0 is not unpacked under {}; \
             run `cargo fetch --manifest-path firmware/Cargo.toml` or set HILMEM_TFLM_DIR",
            registry.display()
        )
    })
}

pub fn include_dirs(root: &Path) -> Vec<PathBuf> {
    let downloads = root.join("tensorflow/lite/micro/tools/make/downloads");
    vec![root.to_path_buf(), downloads.join("flatbuffers/include"), downloads.join("gemmlowp"), downloads.join("ruy")]
}
