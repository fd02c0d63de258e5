//! Compiles TensorFlow Lite for Microcontrollers from source and the C shim over it.
//!
//! The TFLM tree comes from the `tfmicro` 0.1.0 source archive that cargo unpacks
//! (never built as a crate), or from `HILMEM_TFLM_DIR`: a directory laid out like
//! that archive's `submodules/tensorflow` (it holds `tensorflow/lite/micro`).
//!
//! The compiled library depends only on the tree, the compiler and the flags, so
//! when `HILMEM_TFLM_CACHE` names a directory it is kept there under a key of those
//! inputs and shared by every firmware build that uses the same toolchain.

use std::collections::hash_map::DefaultHasher;
use std::env;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

include!("tree.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_DIR");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_CACHE");
    println!("cargo:rerun-if-changed=shim/shim.cc");
    println!("cargo:rerun-if-changed=tree.rs");

    let root = tflm_root();
    let includes = include_dirs(&root);
    let bare_metal = env::var("CARGO_CFG_TARGET_OS").unwrap() == "none";

    let mut sources = cxx_sources(&root);
    sources.sort();
    let c_source = root.join("tensorflow/lite/c/common.c");

    let mut key = DefaultHasher::new();
    env::var("TARGET").unwrap().hash(&mut key);
    env::var("OPT_LEVEL").unwrap().hash(&mut key);
    (CXX_FLAGS, COMMON_FLAGS, DEFINES).hash(&mut key);
    for file in sources.iter().chain(std::iter::once(&c_source)) {
        file.hash(&mut key);
        let meta = fs::metadata(file).unwrap();
        (meta.len(), meta.modified().ok()).hash(&mut key);
    }
    let compiler = configured(cc::Build::new(), &includes).get_compiler();
    compiler.path().hash(&mut key);
    compiler.args().hash(&mut key);
    let key = format!("tflm-{:016x}", key.finish());

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let lib_dir = match env::var_os("HILMEM_TFLM_CACHE") {
        Some(cache) => PathBuf::from(cache).join(&key),
        None => out_dir.join(&key),
    };
    if !lib_dir.join("libtflm.a").exists() {
        compile_tflm(&includes, &sources, &c_source, &lib_dir);
    }
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=tflm");
    println!("cargo:rustc-link-lib=static=tflm_c");

    let mut shim = configured(cc::Build::new(), &includes);
    shim.cpp(true).file("shim/shim.cc");
    for flag in CXX_FLAGS {
        shim.flag(flag);
    }
    if bare_metal {
        shim.define("HILMEM_BARE_METAL", None);
    }
    shim.compile("tflm_shim");

    if bare_metal {
        link_newlib(&compiler);
    } else {
        println!("cargo:rustc-link-lib=stdc++");
    }
}

/// The TFLM tree: the override, or the unpacked `tfmicro` archive.
fn configured(mut build: cc::Build, includes: &[PathBuf]) -> cc::Build {
    build.includes(includes).flag("-w").warnings(false);
    // Source paths end up in the image (TFLM's error messages quote
    // __FILE__): make them independent of where the tree lives, so the same
    // sources give the same image on every machine.
    build.flag(format!("-ffile-prefix-map={}=tflm", includes[0].display()));
    build.flag(format!("-ffile-prefix-map={}=tflm-sys", env::var("CARGO_MANIFEST_DIR").unwrap()));
    for flag in COMMON_FLAGS {
        build.flag(flag);
    }
    for define in DEFINES {
        build.define(define, None);
    }
    build
}

/// The C++ sources that make up the interpreter, its kernels and planners.
fn cxx_sources(root: &Path) -> Vec<PathBuf> {
    let lite = root.join("tensorflow/lite");
    let mut files = Vec::new();
    for dir in ["micro", "micro/kernels", "micro/memory_planner"] {
        for entry in fs::read_dir(lite.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let excluded = name.ends_with("_test.cc") || name == "debug_log.cc" || name == "test_helpers.cc";
            if name.ends_with(".cc") && !excluded {
                files.push(path);
            }
        }
    }
    for file in [
        "core/api/error_reporter.cc",
        "core/api/flatbuffer_conversions.cc",
        "core/api/op_resolver.cc",
        "core/api/tensor_utils.cc",
        "kernels/internal/quantization_util.cc",
        "kernels/kernel_util.cc",
    ] {
        files.push(lite.join(file));
    }
    files
}

/// Builds `libtflm.a` (C++) and `libtflm_c.a` (C) in a scratch directory and renames it into place, so a
/// cache entry is either complete or absent.
fn compile_tflm(includes: &[PathBuf], sources: &[PathBuf], c_source: &Path, lib_dir: &Path) {
    let parent = lib_dir.parent().unwrap();
    fs::create_dir_all(parent).unwrap();
    let scratch =
        parent.join(format!("{}.partial-{}", lib_dir.file_name().unwrap().to_str().unwrap(), std::process::id()));
    let _ = fs::remove_dir_all(&scratch);

    let mut c = configured(cc::Build::new(), includes);
    c.file(c_source).out_dir(&scratch).cargo_metadata(false);
    c.compile("tflm_c");

    let mut cxx = configured(cc::Build::new(), includes);
    cxx.cpp(true).files(sources).out_dir(&scratch).cargo_metadata(false);
    for flag in CXX_FLAGS {
        cxx.flag(flag);
    }
    cxx.compile("tflm");

    if fs::rename(&scratch, lib_dir).is_err() {
        // Another build finished the same entry first; theirs is as good as ours.
        assert!(lib_dir.join("libtflm.a").exists(), "cannot store {}", lib_dir.display());
        let _ = fs::remove_dir_all(&scratch);
    }
}

/// Newlib's libm and libc_nano and libgcc, from the multilib directory that
/// matches this target's flags.
fn link_newlib(compiler: &cc::Tool) {
    let ask = |what: &str| -> PathBuf {
        let out = Command::new(compiler.path())
            .args(compiler.args())
            .arg(format!("-print-{what}"))
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.path().display()));
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    };
    let libm = ask("file-name=libm.a");
    if !libm.is_absolute() {
        panic!("{} has no newlib (libm.a not found); install libnewlib-arm-none-eabi", compiler.path().display());
    }
    let libgcc = ask("libgcc-file-name");
    println!("cargo:rustc-link-search=native={}", libm.parent().unwrap().display());
    println!("cargo:rustc-link-search=native={}", libgcc.parent().unwrap().display());
    println!("cargo:rustc-link-lib=static=m");
    println!("cargo:rustc-link-lib=static=c_nano");
    println!("cargo:rustc-link-lib=static=gcc");
}
