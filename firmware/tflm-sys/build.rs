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

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use tflm_tree::{file_stamp, needed_kernels, tflm_tree, Generation, Kernels, Tree};

/// What went wrong, as the user reads it: the tree, the step and the file.
type Failure = String;

fn main() {
    // A failure ends the script with an error, not a panic: cargo shows what
    // the script printed, this line last.
    if let Err(failure) = build() {
        eprintln!("error: {failure}");
        std::process::exit(1);
    }
}

/// A variable cargo or the harness sets for the build script.
fn var(name: &str, why: &str) -> Result<String, Failure> {
    env::var(name).map_err(|_| format!("{name} is not set: {why}"))
}

fn build() -> Result<(), Failure> {
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
    let cache = env::var_os("HILMEM_TFLM_CACHE").map_or_else(|| out_dir.clone(), PathBuf::from);
    let objects_dir = library_dir(&cache, &tree, &includes)?;
    let reference = match tree.kernels_set {
        Kernels::CmsisNn => Reference::of(&tree, arch.as_deref(), &cache)?,
        Kernels::Reference => None,
    };
    let objects = compile_tflm(&tree, &includes, &kernels, &objects_dir, reference.as_ref())?;
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

/// A tool of `build`'s, or the error that names the tree it was for.
fn tool<T>(tree: &Tree, found: Result<T, cc::Error>) -> Result<T, Failure> {
    found.map_err(|e| format!("{}: no compiler for its library: {e}", tree.root.display()))
}

/// The directory in `cache` of the objects compiled from `tree`.
fn library_dir(cache: &Path, tree: &Tree, includes: &[PathBuf]) -> Result<PathBuf, Failure> {
    let compiler = tool(tree, configured(cc::Build::new(), tree, includes)?.try_get_compiler())?;
    Ok(cache.join(format!("tflm-{:016x}", toolchain_key(tree, &compiler)?)))
}

/// What every object compiled from `tree` depends on besides its own
/// source: the target, the compiler and its flags, and the tree's headers.
/// (A CMSIS-NN library's directory holds links to its reference library's
/// objects since [`Reference`]; one made before is not used.)
fn toolchain_key(tree: &Tree, compiler: &cc::Tool) -> Result<u64, Failure> {
    let mut key = DefaultHasher::new();
    if tree.kernels_set == Kernels::CmsisNn {
        "linked from the reference library".hash(&mut key);
    }
    var("TARGET", "cargo sets it")?.hash(&mut key);
    var("OPT_LEVEL", "cargo sets it")?.hash(&mut key);
    (tree.generation, &tree.api, &tree.flags, tree.kernels_set, &tree.cpu).hash(&mut key);
    compiler.path().hash(&mut key);
    compiler.args().hash(&mut key);
    for header in tree.headers().map_err(|why| format!("{}: {why}", tree.root.display()))? {
        file_stamp(&header).hash(&mut key);
    }
    Ok(key.finish())
}

/// A build with the tree's includes, flags and defines, for its core: on
/// bare metal the core's flags replace the cc crate's defaults for the Rust
/// target (which name an architecture, not the core).
fn configured(mut build: cc::Build, tree: &Tree, includes: &[PathBuf]) -> Result<cc::Build, Failure> {
    build.includes(includes).flag("-w").warnings(false);
    if tree.cpu.is_empty() {
        // On the host the cargo profile's debug info would add `-g`, which
        // no figure reads and which costs an eighth of each compile; the
        // frame pointer that comes with it stays, so the code is the same.
        build.debug(false).force_frame_pointer(true);
    } else {
        build.no_default_flags(true);
        for flag in &tree.cpu {
            build.flag(flag);
        }
    }
    // Source paths end up in the image (TFLM's error messages quote
    // __FILE__): make them independent of where the tree lives, so the same
    // sources give the same image on every machine.
    build.flag(format!("-ffile-prefix-map={}=tflm", tree.root.display()));
    build.flag(format!("-ffile-prefix-map={}=tflm-sys", var("CARGO_MANIFEST_DIR", "cargo sets it")?));
    Ok(build)
}

/// The shim compiled against `tree` with the model's resolver (`ops`), for
/// bare metal or not and over the recording allocator or not (`build`): an
/// object in `objects_dir` under a key of the shim's and the resolver's
/// text, so switching back to a model built before compiles nothing.
fn compile_shim(
    tree: &Tree,
    includes: &[PathBuf],
    ops: &Path,
    build: (bool, bool),
    objects_dir: &Path,
) -> Result<PathBuf, Failure> {
    let (bare_metal, recording) = build;
    let source = PathBuf::from("shim/shim.cc");
    let mut key = DefaultHasher::new();
    (read(&source)?, read(Path::new(SHIM_HEADER))?, read(ops)?, bare_metal, recording).hash(&mut key);
    let object = objects_dir.join(format!("shim-{:016x}.o", key.finish()));
    if !object.exists() {
        let mut shim = build_for(tree, includes, true, None)?;
        if bare_metal {
            shim.define("HILMEM_BARE_METAL", None);
        }
        for define in tree.api.defines() {
            let (name, value) = define.split_once('=').map_or((define.as_str(), None), |(n, v)| (n, Some(v)));
            shim.define(name, value);
        }
        if recording {
            shim.define("HILMEM_TFLM_RECORDING", None);
        }
        let header = precompiled_header(tree, &mut shim, objects_dir)?;
        shim.flag("-include").flag(header.display().to_string()).include(config_dir(ops));
        let scratch = objects_dir.join(format!("partial-shim-{}", std::process::id()));
        compile_to(tree, "the shim over its API", shim, &[(source, object.clone())], &scratch)?;
    }
    Ok(object)
}

/// The directory of the harness's build configuration, where `ops` is.
fn config_dir(ops: &Path) -> PathBuf {
    ops.parent().map_or_else(PathBuf::new, Path::to_owned)
}

/// The TFLM headers the shim includes first (`shim/shim_tflm.h`).
const SHIM_HEADER: &str = "shim/shim_tflm.h";

/// A copy of [`SHIM_HEADER`] beside its precompiled form, made with the
/// shim's flags (`shim`, to which it adds the flag that names the copy's
/// directory as the header's own in the object), in `objects_dir` under a
/// key of the header's text and those flags: every shim compiled with the
/// same flags (one per model resolver) includes it first. The header then
/// costs its parse once per toolchain and variant, not once per model; the
/// object is the one compiled without it, since `shim.cc` includes the
/// same header first (its guard makes that a no-op).
fn precompiled_header(tree: &Tree, shim: &mut cc::Build, objects_dir: &Path) -> Result<PathBuf, Failure> {
    let text = read(Path::new(SHIM_HEADER))?;
    let compiler = tool(tree, shim.try_get_compiler())?;
    let mut key = DefaultHasher::new();
    (&text, compiler.args()).hash(&mut key);
    let dir = objects_dir.join(format!("pch-{:016x}", key.finish()));
    shim.flag(format!("-ffile-prefix-map={}=tflm-sys/shim", dir.display()));
    let header = dir.join("shim_tflm.h");
    let precompiled = dir.join("shim_tflm.h.gch");
    if !precompiled.exists() {
        create_dir(&dir)?;
        // Made under names of this process's, then renamed: builds that
        // make the same header side by side each leave a whole one.
        let partial = |path: &Path| path.with_extension(format!("partial-{}", std::process::id()));
        fs::write(partial(&header), &text).map_err(|e| format!("cannot write {}: {e}", header.display()))?;
        rename(&partial(&header), &header)?;
        let compiler = tool(tree, shim.try_get_compiler())?;
        let output = compiler
            .to_command()
            .args(["-x", "c++-header"])
            .arg(&header)
            .arg("-o")
            .arg(partial(&precompiled))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", compiler.path().display()))?;
        if !output.status.success() {
            return Err(format!(
                "{}: precompiling the shim's TFLM headers ({SHIM_HEADER}) failed:\n{}",
                tree.root.display(),
                String::from_utf8_lossy(&output.stderr).trim_end()
            ));
        }
        rename(&partial(&precompiled), &precompiled)?;
    }
    Ok(header)
}

fn read(file: &Path) -> Result<Vec<u8>, Failure> {
    fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
}

fn create_dir(dir: &Path) -> Result<(), Failure> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

fn rename(from: &Path, to: &Path) -> Result<(), Failure> {
    fs::rename(from, to).map_err(|e| format!("cannot store {} as {}: {e}", from.display(), to.display()))
}

/// A static library of `objects`, in their order.
fn archive(tree: &Tree, includes: &[PathBuf], library: &Path, objects: &[PathBuf]) -> Result<(), Failure> {
    let _ = fs::remove_file(library);
    let mut archiver = tool(tree, configured(cc::Build::new(), tree, includes)?.try_get_archiver())?;
    let output = archiver
        .arg("crs")
        .arg(library)
        .args(objects)
        .output()
        .map_err(|e| format!("cannot run the archiver for {}: {e}", library.display()))?;
    match output.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{}: archiving {} failed:\n{}",
            tree.root.display(),
            library.display(),
            String::from_utf8_lossy(&output.stderr).trim_end()
        )),
    }
}

/// The objects of the tree's core sources, of `kernels` and of the kernel
/// library's (CMSIS-NN's) sources in `objects_dir`, in source path order,
/// compiled here if missing (see [`compiled_as`]), or linked from the
/// `reference` library where it has the same object. CMSIS-NN is compiled
/// whole, as TFLM's Makefile compiles it (113 C files, seconds); the link
/// keeps only the functions the model's kernels call.
fn compile_tflm(
    tree: &Tree,
    includes: &[PathBuf],
    kernels: &[PathBuf],
    objects_dir: &Path,
    reference: Option<&Reference>,
) -> Result<Vec<PathBuf>, Failure> {
    // Builds that share the cache (the standard and the recording image of
    // a run are built side by side) compile its missing objects one at a
    // time: the second finds them made.
    let _lock = locked(objects_dir)?;
    let mut sources: Vec<&PathBuf> = tree.core.iter().chain(kernels).chain(&tree.third_party_kernels).collect();
    sources.sort();
    let objects: Vec<PathBuf> = sources.iter().map(|s| objects_dir.join(object_name(s))).collect();
    let mut missing: BTreeMap<How, Vec<Job>> = BTreeMap::new();
    for (source, object) in sources.into_iter().zip(&objects).filter(|(_, o)| !o.exists()) {
        missing.entry(compiled_as(tree, source)).or_default().push((source.clone(), object.clone()));
    }
    let scratch = objects_dir.join(format!("partial-{}", std::process::id()));
    for (how, jobs) in missing {
        let build = library_build(tree, includes, how)?;
        let jobs = match reference {
            Some(reference) => reference.share(&build, how, jobs)?,
            None => jobs,
        };
        if !jobs.is_empty() {
            compile_to(tree, "its library", build, &jobs, &scratch)?;
        }
    }
    Ok(objects)
}

/// A source and the object it is compiled to.
type Job = (PathBuf, PathBuf);

/// How a source is compiled: as C++ or not, and at which optimisation level.
type How = (bool, Option<u32>);

/// How `tree`'s library compiles `source`: as C++ or not, and at which
/// optimisation level (None: the cargo profile's). Kernels and the kernel
/// library are compiled at `-O2` on a tree newer than 2020, as TFLM's own
/// build compiles them (its `KERNEL_` and `THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL`).
fn compiled_as(tree: &Tree, source: &PathBuf) -> How {
    let cpp = source.extension().is_none_or(|e| e != "c");
    let kernel = tree.kernels.contains(source) || tree.third_party_kernels.contains(source);
    let opt = (kernel && tree.generation != Generation::Tfmicro2020).then_some(2);
    (cpp, opt)
}

/// An object's file name: its source's, under a key of that source's path,
/// size and time. (The directory says the rest: [`toolchain_key`].)
fn object_name(source: &Path) -> String {
    let mut key = DefaultHasher::new();
    file_stamp(source).hash(&mut key);
    let stem = source.file_stem().map_or_else(Default::default, |s| s.to_string_lossy());
    format!("{stem}-{:016x}.o", key.finish())
}

/// `dir`, created if missing, held by this build until the lock returned
/// is dropped.
fn locked(dir: &Path) -> Result<fs::File, Failure> {
    create_dir(dir)?;
    let path = dir.join(".lock");
    let lock = fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    lock.lock().map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    Ok(lock)
}

/// The reference library of a CMSIS-NN build's tree and core. Most of
/// TFLM's sources (all but the kernels CMSIS-NN replaces and the few that
/// test `CMSIS_NN`) preprocess to the same text in both builds; compiled
/// with the same flags, such a source is the same object, which a CMSIS-NN
/// library links from the reference library's directory rather than
/// compiling it again (61 of the 73 C++ objects of the example models'
/// library on each core; the others are CMSIS-NN's six kernels, their
/// reference helpers and the profiler).
struct Reference {
    tree: Tree,
    includes: Vec<PathBuf>,
    dir: PathBuf,
}

impl Reference {
    /// The reference library of `tree`'s root for the core `arch`, in the
    /// cache directory `cache`; None if the tree cannot be built so.
    fn of(tree: &Tree, arch: Option<&str>, cache: &Path) -> Result<Option<Reference>, Failure> {
        let Ok(tree) = Tree::built(&tree.root, Kernels::Reference, arch) else { return Ok(None) };
        let includes = tree.include_dirs();
        let dir = library_dir(cache, &tree, &includes)?;
        Ok(Some(Reference { tree, includes, dir }))
    }

    /// Of `jobs` (sources and their objects, to be compiled by `build`, as
    /// `how`: [`compiled_as`]), links those this library compiles to the same object, from
    /// this library's directory, compiling there what it lacks; returns the
    /// others. A source is the same object where this library compiles it
    /// the same way, with the same compiler and flags, and the preprocessor
    /// makes the same text of it with each library's defines and include
    /// directories.
    fn share(&self, build: &cc::Build, how: How, jobs: Vec<Job>) -> Result<Vec<Job>, Failure> {
        let theirs = library_build(&self.tree, &self.includes, how)?;
        if compiled_args(build) != compiled_args(&theirs) {
            return Ok(jobs);
        }
        let in_library = |s: &PathBuf| {
            (self.tree.core.contains(s) || self.tree.kernels.contains(s)) && compiled_as(&self.tree, s) == how
        };
        let text = |build: &cc::Build, source: &PathBuf| build.clone().file(source).try_expand().ok();
        let same = |(source, _): &Job| {
            in_library(source) && text(build, source).is_some_and(|ours| text(&theirs, source) == Some(ours))
        };
        // A preprocessing is a few percent of a compile; side by side.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let verdicts: Vec<bool> = std::thread::scope(|s| {
            let chunks: Vec<_> = jobs
                .chunks(jobs.len().div_ceil(threads).max(1))
                .map(|chunk| (chunk.len(), s.spawn(move || chunk.iter().map(same).collect::<Vec<_>>())))
                .collect();
            // A chunk whose thread failed shares nothing: its sources are
            // compiled here.
            chunks.into_iter().flat_map(|(len, c)| c.join().unwrap_or_else(|_| vec![false; len])).collect()
        });
        let (shared, own): (Vec<_>, Vec<_>) = jobs.into_iter().zip(verdicts).partition(|(_, same)| *same);
        if !shared.is_empty() {
            let _lock = locked(&self.dir)?;
            let theirs_of = |source: &PathBuf| self.dir.join(object_name(source));
            let missing: Vec<Job> =
                shared.iter().map(|((s, _), _)| (s.clone(), theirs_of(s))).filter(|(_, o)| !o.exists()).collect();
            if !missing.is_empty() {
                let scratch = self.dir.join(format!("partial-{}", std::process::id()));
                compile_to(&self.tree, "its reference library", theirs, &missing, &scratch)?;
            }
            for ((source, object), _) in &shared {
                fs::hard_link(theirs_of(source), object)
                    .map_err(|e| format!("cannot link {} as {}: {e}", theirs_of(source).display(), object.display()))?;
            }
        }
        Ok(own.into_iter().map(|(job, _)| job).collect())
    }
}

/// What `build` gives the compiler besides the preprocessor's defines and
/// include directories: the compiler, and the flags that make the object.
fn compiled_args(build: &cc::Build) -> Vec<std::ffi::OsString> {
    let compiler = build.get_compiler();
    let mut kept = vec![compiler.path().as_os_str().to_owned()];
    let mut args = compiler.args().iter();
    while let Some(arg) = args.next() {
        if arg == "-I" {
            args.next();
        } else if !arg.to_string_lossy().starts_with("-D") {
            kept.push(arg.clone());
        }
    }
    kept
}

/// A build of the tree's C++ (with its C++ flags), or of its C (with its C
/// flags), at optimisation level `opt` (default: the cargo profile's).
fn build_for(tree: &Tree, includes: &[PathBuf], cpp: bool, opt: Option<u32>) -> Result<cc::Build, Failure> {
    let mut build = configured(cc::Build::new(), tree, includes)?;
    build.cpp(cpp);
    // Without the cc crate's defaults the level is not added for us.
    let level = match opt {
        Some(level) => level.to_string(),
        None => var("OPT_LEVEL", "cargo sets it")?,
    };
    build.flag(format!("-O{}", if level == "z" { "s" } else { &level }));
    for flag in if cpp { &tree.flags.cxx } else { &tree.flags.c } {
        build.flag(flag);
    }
    Ok(build)
}

/// A build of the tree's library sources compiled `how` ([`compiled_as`]):
/// [`build_for`], and C++ with `<limits>` included first (the trees of
/// 2021-04 to 2021-05 use std::numeric_limits in micro_utils.h without
/// including it, which the GCC of their time gave through <algorithm> and
/// today's does not; a standard header included first changes no code).
fn library_build(tree: &Tree, includes: &[PathBuf], how: How) -> Result<cc::Build, Failure> {
    let mut build = build_for(tree, includes, how.0, how.1)?;
    if how.0 {
        build.flag("-include").flag("limits");
    }
    Ok(build)
}

/// Compiles each source of `jobs` to its object, as part of `what` of
/// `tree`: in `scratch`, then renamed into place, so an object in the cache
/// is complete or absent. A failure names the tree, the part and the
/// compiler's command, which names the source.
fn compile_to(tree: &Tree, what: &str, mut build: cc::Build, jobs: &[Job], scratch: &Path) -> Result<(), Failure> {
    build.files(jobs.iter().map(|(source, _)| source)).out_dir(scratch).cargo_metadata(false);
    let compiled = build.try_compile_intermediates().map_err(|e| {
        let sources = match jobs {
            [(source, _)] => source.strip_prefix(&tree.root).unwrap_or(source).display().to_string(),
            _ => format!("{} sources", jobs.len()),
        };
        format!("{}: compiling {sources} of {what} failed: {e}", tree.root.display())
    })?;
    for ((_, object), compiled) in jobs.iter().zip(compiled) {
        rename(&compiled, object)?;
    }
    let _ = fs::remove_dir_all(scratch);
    Ok(())
}

/// Newlib's libm and libc_nano and libgcc, from the multilib directory that
/// matches this target's flags.
fn link_newlib(compiler: &cc::Tool) -> Result<(), Failure> {
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
