//! Compiles TensorFlow Lite for Microcontrollers from source and the C shim over it.
//!
//! The TFLM tree comes from the `tfmicro` 0.1.0 source archive that cargo unpacks
//! (never built as a crate), or from `HILMEM_TFLM_DIR`: a tflite-micro checkout
//! with its third-party downloads, a tree made by TFLM's `create_tflm_tree.py`,
//! or a directory laid out like that archive's `submodules/tensorflow`. What is
//! compiled and with which flags depends on the tree's generation (`tree.rs`).
//!
//! The shim includes `hilmem_ops.h` from the harness's build configuration: the
//! op resolver with exactly the model's operators.
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
    println!("cargo:rerun-if-env-changed=HILMEM_BUILD_CONFIG");
    println!("cargo:rerun-if-changed=shim/shim.cc");
    println!("cargo:rerun-if-changed=tree.rs");

    let tree = tflm_tree();
    let flags = tree.flags();
    let includes = tree.include_dirs();
    let bare_metal = env::var("CARGO_CFG_TARGET_OS").unwrap() == "none";
    let (core, kernels) = tree.sources();

    let mut key = DefaultHasher::new();
    env::var("TARGET").unwrap().hash(&mut key);
    env::var("OPT_LEVEL").unwrap().hash(&mut key);
    (tree.generation, flags.cxx, flags.common, flags.defines).hash(&mut key);
    for file in core.iter().chain(&kernels) {
        file.hash(&mut key);
        let meta = fs::metadata(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        (meta.len(), meta.modified().ok()).hash(&mut key);
    }
    let compiler = configured(cc::Build::new(), &tree, &includes).get_compiler();
    compiler.path().hash(&mut key);
    compiler.args().hash(&mut key);
    let key = format!("tflm-{:016x}", key.finish());

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let lib_dir = match env::var_os("HILMEM_TFLM_CACHE") {
        Some(cache) => PathBuf::from(cache).join(&key),
        None => out_dir.join(&key),
    };
    if !lib_dir.join("libtflm.a").exists() {
        compile_tflm(&tree, &includes, &core, &kernels, &lib_dir);
    }
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=tflm");
    if lib_dir.join("libtflm_c.a").exists() {
        println!("cargo:rustc-link-lib=static=tflm_c");
    }

    // The shim, with the op resolver the harness generated for the model.
    let config = env::var_os("HILMEM_BUILD_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("HILMEM_BUILD_CONFIG is not set: the harness generates the op resolver per model"));
    let ops = config.join("hilmem_ops.h");
    println!("cargo:rerun-if-changed={}", ops.display());
    if !ops.is_file() {
        panic!("{} is missing: the harness writes it with the model's operators", ops.display());
    }
    let mut shim = configured(cc::Build::new(), &tree, &includes);
    shim.cpp(true).file("shim/shim.cc").include(&config);
    for flag in flags.cxx {
        shim.flag(flag);
    }
    if bare_metal {
        shim.define("HILMEM_BARE_METAL", None);
    }
    if tree.generation == Generation::Current {
        shim.define("HILMEM_TFLM_CURRENT", None);
    }
    shim.compile("tflm_shim");

    if bare_metal {
        link_newlib(&compiler);
    } else {
        println!("cargo:rustc-link-lib=stdc++");
    }
}

/// A build with the tree's includes, flags and defines.
fn configured(mut build: cc::Build, tree: &Tree, includes: &[PathBuf]) -> cc::Build {
    build.includes(includes).flag("-w").warnings(false);
    // Source paths end up in the image (TFLM's error messages quote
    // __FILE__): make them independent of where the tree lives, so the same
    // sources give the same image on every machine.
    build.flag(format!("-ffile-prefix-map={}=tflm", tree.root.display()));
    build.flag(format!("-ffile-prefix-map={}=tflm-sys", env::var("CARGO_MANIFEST_DIR").unwrap()));
    let flags = tree.flags();
    for flag in flags.common {
        build.flag(flag);
    }
    for define in flags.defines {
        build.define(define, None);
    }
    build
}

/// Builds `libtflm.a` (the C++ sources, in path order; kernels at `-O2` on a
/// current tree, as TFLM's own build compiles them) and `libtflm_c.a` (C
/// sources, if any) in a scratch directory and renames it into place, so a
/// cache entry is either complete or absent.
fn compile_tflm(tree: &Tree, includes: &[PathBuf], core: &[PathBuf], kernels: &[PathBuf], lib_dir: &Path) {
    let parent = lib_dir.parent().unwrap();
    fs::create_dir_all(parent).unwrap();
    let scratch =
        parent.join(format!("{}.partial-{}", lib_dir.file_name().unwrap().to_str().unwrap(), std::process::id()));
    let _ = fs::remove_dir_all(&scratch);

    let is_c = |p: &&PathBuf| p.extension().is_some_and(|e| e == "c");
    let c_sources: Vec<&PathBuf> = core.iter().filter(is_c).collect();
    if !c_sources.is_empty() {
        let mut c = configured(cc::Build::new(), tree, includes);
        c.files(c_sources).out_dir(&scratch).cargo_metadata(false);
        c.compile("tflm_c");
    }

    let kernel_opt = (tree.generation == Generation::Current).then_some(2);
    let mut objects: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (sources, opt) in [(core, None), (kernels, kernel_opt)] {
        let sources: Vec<&PathBuf> = sources.iter().filter(|p| !is_c(p)).collect();
        let mut cxx = configured(cc::Build::new(), tree, includes);
        cxx.cpp(true).files(&sources).out_dir(scratch.join("obj")).cargo_metadata(false);
        if let Some(level) = opt {
            cxx.opt_level(level);
        }
        for flag in tree.flags().cxx {
            cxx.flag(flag);
        }
        objects.extend(sources.into_iter().cloned().zip(cxx.compile_intermediates()));
    }
    objects.sort();
    let archive = scratch.join("libtflm.a");
    let status = configured(cc::Build::new(), tree, includes)
        .get_archiver()
        .arg("crs")
        .arg(&archive)
        .args(objects.iter().map(|(_, object)| object))
        .status()
        .expect("cannot run the archiver");
    assert!(status.success(), "the archiver failed on {}", archive.display());
    fs::remove_dir_all(scratch.join("obj")).unwrap();

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
