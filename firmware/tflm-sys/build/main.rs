//! Compiles TensorFlow Lite for Microcontrollers from source and the C shim over it.
//!
//! The TFLM tree comes from the `tfmicro` 0.1.0 source archive that cargo unpacks
//! (never built as a crate), or from `HILMEM_TFLM_DIR`: a tflite-micro checkout
//! with its third-party downloads, a tree made by TFLM's `create_tflm_tree.py`,
//! or a directory laid out like that archive's `submodules/tensorflow`. What is
//! compiled and with which flags depends on the tree's generation (the `tflm-tree` crate).
//!
//! The harness says which kernels (`HILMEM_TFLM_KERNELS`: `reference` or
//! `cmsis-nn`) and, on bare metal, for which core (`HILMEM_TFLM_ARCH`,
//! TFLM's `TARGET_ARCH`): TFLM, CMSIS-NN and the shim are compiled with that
//! core's flags as TFLM's own Cortex-M build gives them, not with the cc
//! crate's defaults for the Rust target.
//!
//! The harness's build configuration (`HILMEM_BUILD_CONFIG`) holds
//! `hilmem_ops.h`, the op resolver with exactly the model's operators, which
//! the shim includes, and `hilmem_kernels.txt`, the registrations of those
//! operators' kernels: of TFLM's kernels only those are compiled.
//!
//! Each compiled object depends only on its source, the tree's headers, the
//! compiler and the flags, so when `HILMEM_TFLM_CACHE` names a directory the
//! objects are kept there under a key of those inputs and shared by every
//! firmware build that uses the same toolchain; a build compiles only the
//! objects no earlier build left there, and archives its own `libtflm.a`.
//! A CMSIS-NN build links from the reference library of its core the objects
//! of the sources that preprocess to the same text in both.
//! The shim is cached the same way, keyed also by the model's resolver; the
//! TFLM headers it includes first are precompiled once per flag set (a
//! shim is compiled per model resolver, and those headers were most of its
//! compile time), which leaves its object as it is without them.

mod files;
mod library;
mod shim;

use std::env;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use tflm_tree::{needed_kernels, tflm_tree, Kernels, Tree};

use files::read;
use library::{archive, compile_tflm, configured, library_dir, Reference};
use shim::{compile_shim, SHIM_HEADER};

/// What went wrong, as the user reads it: the tree, the step and the file.
pub(crate) type Failure = String;

fn main() {
    // A failure ends the script with an error, not a panic: cargo shows what
    // the script printed, this line last.
    if let Err(failure) = build() {
        eprintln!("error: {failure}");
        std::process::exit(1);
    }
}

/// A variable cargo or the harness sets for the build script.
pub(crate) fn var(name: &str, why: &str) -> Result<String, Failure> {
    env::var(name).map_err(|_| format!("{name} is not set: {why}"))
}

pub(crate) fn build() -> Result<(), Failure> {
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_DIR");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_CACHE");
    println!("cargo:rerun-if-env-changed=HILMEM_BUILD_CONFIG");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_KERNELS");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_ARCH");
    println!("cargo:rerun-if-changed=shim/shim.cc");
    println!("cargo:rerun-if-changed={SHIM_HEADER}");

    let bare_metal = var("CARGO_CFG_TARGET_OS", "cargo sets it")? == "none";
    let kernels = match env::var("HILMEM_TFLM_KERNELS") {
        Ok(name) => Kernels::named(&name).ok_or(format!("HILMEM_TFLM_KERNELS: `{name}` is not a kernel set"))?,
        Err(_) => Kernels::Reference,
    };
    let arch = match bare_metal {
        true => Some(var("HILMEM_TFLM_ARCH", "the harness names the board's core")?),
        false => None,
    };
    let tree = tflm_tree(kernels, arch.as_deref())?;
    let includes = tree.include_dirs();
    let config = PathBuf::from(var("HILMEM_BUILD_CONFIG", "the harness generates the op resolver per model")?);
    let generated = |name: &str| -> Result<PathBuf, Failure> {
        let path = config.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        match path.is_file() {
            true => Ok(path),
            false => Err(format!("{} is missing: the harness writes it with the model's operators", path.display())),
        }
    };
    let ops = generated("hilmem_ops.h")?;
    let registrations: Vec<String> =
        String::from_utf8_lossy(&read(&generated("hilmem_kernels.txt")?)?).lines().map(str::to_owned).collect();

    let kernels = needed_kernels(&tree, &registrations)?;
    let out_dir = PathBuf::from(var("OUT_DIR", "cargo sets it")?);
    // A build script runs in its package's folder: a relative (or empty)
    // cache would fill the source tree with objects.
    let cache = match env::var_os("HILMEM_TFLM_CACHE").map(PathBuf::from) {
        None => out_dir.clone(),
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => {
            return Err(format!("HILMEM_TFLM_CACHE is `{}`: it must name a folder by its absolute path", dir.display()))
        }
    };
    let objects_dir = library_dir(&cache, &tree, &includes)?;
    let reference = match tree.kernels_set {
        Kernels::CmsisNn => Reference::of(&tree, arch.as_deref(), &cache)?,
        Kernels::Reference => None,
    };
    let started = Instant::now();
    let (objects, compiled) = compile_tflm(&tree, &includes, &kernels, &objects_dir, reference.as_ref())?;
    if compiled > 0 {
        let configuration = objects_dir.file_name().unwrap_or_default().to_string_lossy();
        let name = format!(
            "{configuration} ({} objects; {}, {}, {})",
            compiled,
            tree.root.display(),
            tree.kernels_set.name(),
            arch.as_deref().unwrap_or("host")
        );
        note_timing("tflm-library", &name, started.elapsed().as_secs_f64());
    }
    archive(&tree, &includes, &out_dir.join("libtflm.a"), &objects)?;
    let recording = env::var_os("CARGO_FEATURE_RECORDING").is_some();
    if recording && !tree.generation.todays_allocator() {
        return Err(format!(
            "TFLM's recording allocator is built on a TFLM of today's allocator only (from late 2022); {} is not one",
            tree.root.display()
        ));
    }
    let shim = compile_shim(&tree, &includes, &ops, (bare_metal, recording), &objects_dir)?;
    archive(&tree, &includes, &out_dir.join("libtflm_shim.a"), &[shim])?;
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static=tflm");
    println!("cargo:rustc-link-lib=static=tflm_shim");

    if bare_metal {
        link_newlib(&tool(&tree, configured(cc::Build::new(), &tree, &includes)?.try_get_compiler())?)?;
    } else {
        println!("cargo:rustc-link-lib=stdc++");
    }
    Ok(())
}

/// Appends an event to the timings log the harness names
/// (`HILMEM_TIMINGS_LOG`, in its `timings` module's shape: one JSON line),
/// if it names one. Not a reason to build again: cargo is not told of it.
fn note_timing(kind: &str, name: &str, seconds: f64) {
    let Some(log) = env::var_os("HILMEM_TIMINGS_LOG") else { return };
    let quoted = |text: &str| {
        let escaped: String = text
            .chars()
            .map(|c| match c {
                '"' | '\\' => format!("\\{c}"),
                c if c.is_control() => format!("\\u{:04x}", c as u32),
                c => c.to_string(),
            })
            .collect();
        format!("\"{escaped}\"")
    };
    let line = format!("{{\"kind\":{},\"name\":{},\"seconds\":{seconds}}}\n", quoted(kind), quoted(name));
    if let Ok(mut file) = fs::OpenOptions::new().create(true).append(true).open(log) {
        let _ = file.write_all(line.as_bytes());
    }
}

/// A tool of `build`'s, or the error that names the tree it was for.
pub(crate) fn tool<T>(tree: &Tree, found: Result<T, cc::Error>) -> Result<T, Failure> {
    found.map_err(|e| format!("{}: no compiler for its library: {e}", tree.root.display()))
}

/// The directory of the harness's build configuration, where `ops` is.
pub(crate) fn config_dir(ops: &Path) -> PathBuf {
    ops.parent().map_or_else(PathBuf::new, Path::to_owned)
}

/// Newlib's libm and libc_nano and libgcc, from the multilib directory that
/// matches this target's flags.
pub(crate) fn link_newlib(compiler: &cc::Tool) -> Result<(), Failure> {
    let ask = |what: &str| -> Result<PathBuf, Failure> {
        let out = Command::new(compiler.path())
            .args(compiler.args())
            .arg(format!("-print-{what}"))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", compiler.path().display()))?;
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let (libm, libgcc) = (ask("file-name=libm.a")?, ask("libgcc-file-name")?);
    let (Some(libm_dir), Some(libgcc_dir)) = (libm.parent().filter(|_| libm.is_absolute()), libgcc.parent()) else {
        return Err(format!(
            "{} has no newlib (libm.a not found); install libnewlib-arm-none-eabi",
            compiler.path().display()
        ));
    };
    println!("cargo:rustc-link-search=native={}", libm_dir.display());
    println!("cargo:rustc-link-search=native={}", libgcc_dir.display());
    println!("cargo:rustc-link-lib=static=m");
    println!("cargo:rustc-link-lib=static=c_nano");
    println!("cargo:rustc-link-lib=static=gcc");
    Ok(())
}
