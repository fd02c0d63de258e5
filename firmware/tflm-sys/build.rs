//! Compiles TensorFlow Lite for Microcontrollers from source and the C shim over it.
//!
//! The TFLM tree comes from the `tfmicro` 0.1.0 source archive that cargo unpacks
//! (never built as a crate), or from `HILMEM_TFLM_DIR`: a tflite-micro checkout
//! with its third-party downloads, a tree made by TFLM's `create_tflm_tree.py`,
//! or a directory laid out like that archive's `submodules/tensorflow`. What is
//! compiled and with which flags depends on the tree's generation (`tree.rs`).
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

include!("tree.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_DIR");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_CACHE");
    println!("cargo:rerun-if-env-changed=HILMEM_BUILD_CONFIG");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_KERNELS");
    println!("cargo:rerun-if-env-changed=HILMEM_TFLM_ARCH");
    println!("cargo:rerun-if-changed=shim/shim.cc");
    println!("cargo:rerun-if-changed={SHIM_HEADER}");
    println!("cargo:rerun-if-changed=tree.rs");

    let bare_metal = env::var("CARGO_CFG_TARGET_OS").unwrap() == "none";
    let kernels = env::var("HILMEM_TFLM_KERNELS").map_or(Kernels::Reference, |name| {
        Kernels::named(&name).unwrap_or_else(|| panic!("HILMEM_TFLM_KERNELS: `{name}` is not a kernel set"))
    });
    let arch = bare_metal.then(|| {
        env::var("HILMEM_TFLM_ARCH").expect("HILMEM_TFLM_ARCH is not set: the harness names the board's core")
    });
    let tree = tflm_tree(kernels, arch.as_deref());
    let includes = tree.include_dirs();
    let config = env::var_os("HILMEM_BUILD_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("HILMEM_BUILD_CONFIG is not set: the harness generates the op resolver per model"));
    let generated = |name: &str| -> PathBuf {
        let path = config.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        if !path.is_file() {
            panic!("{} is missing: the harness writes it with the model's operators", path.display());
        }
        path
    };
    let ops = generated("hilmem_ops.h");
    let registrations: Vec<String> =
        fs::read_to_string(generated("hilmem_kernels.txt")).unwrap().lines().map(str::to_owned).collect();

    let kernels = needed_kernels(&tree, &registrations).unwrap_or_else(|e| panic!("{e}"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let cache = env::var_os("HILMEM_TFLM_CACHE").map_or_else(|| out_dir.clone(), PathBuf::from);
    let objects_dir = library_dir(&cache, &tree, &includes);
    let reference = match tree.kernels_set {
        Kernels::CmsisNn => Reference::of(&tree, arch.as_deref(), &cache),
        Kernels::Reference => None,
    };
    let objects = compile_tflm(&tree, &includes, &kernels, &objects_dir, reference.as_ref());
    archive(&tree, &includes, &out_dir.join("libtflm.a"), &objects);
    let recording = env::var_os("CARGO_FEATURE_RECORDING").is_some();
    if recording && !tree.generation.todays_allocator() {
        panic!(
            "TFLM's recording allocator is built on a TFLM of today's allocator only (from late 2022); {} is not one",
            tree.root.display()
        );
    }
    let shim = compile_shim(&tree, &includes, &ops, (bare_metal, recording), &objects_dir);
    archive(&tree, &includes, &out_dir.join("libtflm_shim.a"), &[shim]);
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static=tflm");
    println!("cargo:rustc-link-lib=static=tflm_shim");

    if bare_metal {
        link_newlib(&configured(cc::Build::new(), &tree, &includes).get_compiler());
    } else {
        println!("cargo:rustc-link-lib=stdc++");
    }
}

/// The directory in `cache` of the objects compiled from `tree`.
fn library_dir(cache: &Path, tree: &Tree, includes: &[PathBuf]) -> PathBuf {
    let compiler = configured(cc::Build::new(), tree, includes).get_compiler();
    cache.join(format!("tflm-{:016x}", toolchain_key(tree, &compiler)))
}

/// What every object compiled from `tree` depends on besides its own
/// source: the target, the compiler and its flags, and the tree's headers.
/// (A CMSIS-NN library's directory holds links to its reference library's
/// objects since [`Reference`]; one made before is not used.)
fn toolchain_key(tree: &Tree, compiler: &cc::Tool) -> u64 {
    let mut key = DefaultHasher::new();
    if tree.kernels_set == Kernels::CmsisNn {
        "linked from the reference library".hash(&mut key);
    }
    env::var("TARGET").unwrap().hash(&mut key);
    env::var("OPT_LEVEL").unwrap().hash(&mut key);
    (tree.generation, tree.api, &tree.flags, tree.kernels_set, &tree.cpu).hash(&mut key);
    compiler.path().hash(&mut key);
    compiler.args().hash(&mut key);
    for header in tree.headers() {
        file_stamp(&header).hash(&mut key);
    }
    key.finish()
}

/// A build with the tree's includes, flags and defines, for its core: on
/// bare metal the core's flags replace the cc crate's defaults for the Rust
/// target (which name an architecture, not the core).
fn configured(mut build: cc::Build, tree: &Tree, includes: &[PathBuf]) -> cc::Build {
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
    build.flag(format!("-ffile-prefix-map={}=tflm-sys", env::var("CARGO_MANIFEST_DIR").unwrap()));
    build
}

/// The shim compiled against `tree` with the model's resolver (`ops`), for
/// bare metal or not and over the recording allocator or not (`build`): an
/// object in `objects_dir` under a key of the shim's and the resolver's
/// text, so switching back to a model built before compiles nothing.
fn compile_shim(tree: &Tree, includes: &[PathBuf], ops: &Path, build: (bool, bool), objects_dir: &Path) -> PathBuf {
    let (bare_metal, recording) = build;
    let source = PathBuf::from("shim/shim.cc");
    let mut key = DefaultHasher::new();
    (read(&source), read(Path::new(SHIM_HEADER)), read(ops), bare_metal, recording).hash(&mut key);
    let object = objects_dir.join(format!("shim-{:016x}.o", key.finish()));
    if !object.exists() {
        let mut shim = build_for(tree, includes, true, None);
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
        let header = precompiled_header(&mut shim, objects_dir);
        shim.flag("-include").flag(header.display().to_string()).include(ops.parent().unwrap());
        compile_to(
            shim,
            &[(source, object.clone())],
            &objects_dir.join(format!("partial-shim-{}", std::process::id())),
        );
    }
    object
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
fn precompiled_header(shim: &mut cc::Build, objects_dir: &Path) -> PathBuf {
    let text = read(Path::new(SHIM_HEADER));
    let mut key = DefaultHasher::new();
    (&text, shim.get_compiler().args()).hash(&mut key);
    let dir = objects_dir.join(format!("pch-{:016x}", key.finish()));
    shim.flag(format!("-ffile-prefix-map={}=tflm-sys/shim", dir.display()));
    let header = dir.join("shim_tflm.h");
    let precompiled = dir.join("shim_tflm.h.gch");
    if !precompiled.exists() {
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        // Made under names of this process's, then renamed: builds that
        // make the same header side by side each leave a whole one.
        let partial = |path: &Path| path.with_extension(format!("partial-{}", std::process::id()));
        fs::write(partial(&header), &text).unwrap_or_else(|e| panic!("cannot write {}: {e}", header.display()));
        fs::rename(partial(&header), &header).unwrap_or_else(|e| panic!("cannot store {}: {e}", header.display()));
        let status = shim
            .get_compiler()
            .to_command()
            .args(["-x", "c++-header"])
            .arg(&header)
            .arg("-o")
            .arg(partial(&precompiled))
            .status()
            .unwrap_or_else(|e| panic!("cannot run the compiler on {}: {e}", header.display()));
        assert!(status.success(), "the compiler failed on {}", header.display());
        fs::rename(partial(&precompiled), &precompiled)
            .unwrap_or_else(|e| panic!("cannot store {}: {e}", precompiled.display()));
    }
    header
}

fn read(file: &Path) -> Vec<u8> {
    fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()))
}

/// A static library of `objects`, in their order.
fn archive(tree: &Tree, includes: &[PathBuf], library: &Path, objects: &[PathBuf]) {
    let _ = fs::remove_file(library);
    let status = configured(cc::Build::new(), tree, includes)
        .get_archiver()
        .arg("crs")
        .arg(library)
        .args(objects)
        .status()
        .expect("cannot run the archiver");
    assert!(status.success(), "the archiver failed on {}", library.display());
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
) -> Vec<PathBuf> {
    // Builds that share the cache (the standard and the recording image of
    // a run are built side by side) compile its missing objects one at a
    // time: the second finds them made.
    let _lock = locked(objects_dir);
    let mut sources: Vec<&PathBuf> = tree.core.iter().chain(kernels).chain(&tree.third_party_kernels).collect();
    sources.sort();
    let objects: Vec<PathBuf> = sources.iter().map(|s| objects_dir.join(object_name(s))).collect();
    let mut missing: BTreeMap<How, Vec<Job>> = BTreeMap::new();
    for (source, object) in sources.into_iter().zip(&objects).filter(|(_, o)| !o.exists()) {
        missing.entry(compiled_as(tree, source)).or_default().push((source.clone(), object.clone()));
    }
    let scratch = objects_dir.join(format!("partial-{}", std::process::id()));
    for ((cpp, opt), jobs) in missing {
        let build = build_for(tree, includes, cpp, opt);
        let jobs = match reference {
            Some(reference) => reference.share(&build, (cpp, opt), jobs),
            None => jobs,
        };
        if !jobs.is_empty() {
            compile_to(build, &jobs, &scratch);
        }
    }
    objects
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
    format!("{}-{:016x}.o", source.file_stem().unwrap().to_str().unwrap(), key.finish())
}

/// `dir`, created if missing, held by this build until the lock returned
/// is dropped.
fn locked(dir: &Path) -> fs::File {
    fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let path = dir.join(".lock");
    let lock = fs::File::create(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    lock.lock().unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    lock
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
    fn of(tree: &Tree, arch: Option<&str>, cache: &Path) -> Option<Reference> {
        let tree = Tree::built(&tree.root, Kernels::Reference, arch).ok()?;
        let includes = tree.include_dirs();
        let dir = library_dir(cache, &tree, &includes);
        Some(Reference { tree, includes, dir })
    }

    /// Of `jobs` (sources and their objects, to be compiled by `build`, as
    /// `how`: [`compiled_as`]), links those this library compiles to the same object, from
    /// this library's directory, compiling there what it lacks; returns the
    /// others. A source is the same object where this library compiles it
    /// the same way, with the same compiler and flags, and the preprocessor
    /// makes the same text of it with each library's defines and include
    /// directories.
    fn share(&self, build: &cc::Build, how: How, jobs: Vec<Job>) -> Vec<Job> {
        let theirs = build_for(&self.tree, &self.includes, how.0, how.1);
        if compiled_args(build) != compiled_args(&theirs) {
            return jobs;
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
                .map(|chunk| s.spawn(move || chunk.iter().map(same).collect::<Vec<_>>()))
                .collect();
            chunks.into_iter().flat_map(|c| c.join().unwrap()).collect()
        });
        let (shared, own): (Vec<_>, Vec<_>) = jobs.into_iter().zip(verdicts).partition(|(_, same)| *same);
        if !shared.is_empty() {
            let _lock = locked(&self.dir);
            let theirs_of = |source: &PathBuf| self.dir.join(object_name(source));
            let missing: Vec<Job> =
                shared.iter().map(|((s, _), _)| (s.clone(), theirs_of(s))).filter(|(_, o)| !o.exists()).collect();
            if !missing.is_empty() {
                compile_to(theirs, &missing, &self.dir.join(format!("partial-{}", std::process::id())));
            }
            for ((source, object), _) in &shared {
                fs::hard_link(theirs_of(source), object).unwrap_or_else(|e| {
                    panic!("cannot link {} as {}: {e}", theirs_of(source).display(), object.display())
                });
            }
        }
        own.into_iter().map(|(job, _)| job).collect()
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
fn build_for(tree: &Tree, includes: &[PathBuf], cpp: bool, opt: Option<u32>) -> cc::Build {
    let mut build = configured(cc::Build::new(), tree, includes);
    build.cpp(cpp);
    // Without the cc crate's defaults the level is not added for us.
    let level = opt.map_or_else(|| env::var("OPT_LEVEL").unwrap(), |l| l.to_string());
    build.flag(format!("-O{}", if level == "z" { "s" } else { &level }));
    for flag in if cpp { &tree.flags.cxx } else { &tree.flags.c } {
        build.flag(flag);
    }
    build
}

/// Compiles each source of `jobs` to its object: in `scratch`, then renamed
/// into place, so an object in the cache is complete or absent.
fn compile_to(mut build: cc::Build, jobs: &[Job], scratch: &Path) {
    build.files(jobs.iter().map(|(source, _)| source)).out_dir(scratch).cargo_metadata(false);
    for ((_, object), compiled) in jobs.iter().zip(build.compile_intermediates()) {
        fs::rename(&compiled, object)
            .unwrap_or_else(|e| panic!("cannot store {} as {}: {e}", compiled.display(), object.display()));
    }
    let _ = fs::remove_dir_all(scratch);
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
