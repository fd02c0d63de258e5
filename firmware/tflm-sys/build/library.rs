//! TFLM's library: each source compiled once per toolchain into the
//! cache, linked from the reference library where a CMSIS-NN build has the
//! same object, archived per build.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use tflm_tree::{file_stamp, Generation, Kernels, Tree};

use crate::files::{locked, rename};
use crate::{tool, var, Failure};

/// The directory in `cache` of the objects compiled from `tree`.
pub(crate) fn library_dir(cache: &Path, tree: &Tree, includes: &[PathBuf]) -> Result<PathBuf, Failure> {
    let compiler = tool(tree, configured(cc::Build::new(), tree, includes)?.try_get_compiler())?;
    Ok(cache.join(format!("tflm-{:016x}", toolchain_key(tree, &compiler)?)))
}

/// What every object compiled from `tree` depends on besides its own
/// source: the target, the compiler and its flags, and the tree's headers.
/// (A CMSIS-NN library's directory holds links to its reference library's
/// objects since [`Reference`]; one made before is not used.)
pub(crate) fn toolchain_key(tree: &Tree, compiler: &cc::Tool) -> Result<u64, Failure> {
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
pub(crate) fn configured(mut build: cc::Build, tree: &Tree, includes: &[PathBuf]) -> Result<cc::Build, Failure> {
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

/// A static library of `objects`, in their order.
pub(crate) fn archive(tree: &Tree, includes: &[PathBuf], library: &Path, objects: &[PathBuf]) -> Result<(), Failure> {
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
pub(crate) fn compile_tflm(
    tree: &Tree,
    includes: &[PathBuf],
    kernels: &[PathBuf],
    objects_dir: &Path,
    reference: Option<&Reference>,
) -> Result<(Vec<PathBuf>, usize), Failure> {
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
    let mut compiled = 0;
    for (how, jobs) in missing {
        let build = library_build(tree, includes, how)?;
        let jobs = match reference {
            Some(reference) => reference.share(&build, how, jobs)?,
            None => jobs,
        };
        if !jobs.is_empty() {
            compile_to(tree, "its library", build, &jobs, &scratch)?;
            compiled += jobs.len();
        }
    }
    Ok((objects, compiled))
}

/// A source and the object it is compiled to.
pub(crate) type Job = (PathBuf, PathBuf);

/// How a source is compiled: as C++ or not, and at which optimisation level.
pub(crate) type How = (bool, Option<u32>);

/// How `tree`'s library compiles `source`: as C++ or not, and at which
/// optimisation level (None: the cargo profile's). Kernels and the kernel
/// library are compiled at `-O2` on a tree newer than 2020, as TFLM's own
/// build compiles them (its `KERNEL_` and `THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL`).
pub(crate) fn compiled_as(tree: &Tree, source: &PathBuf) -> How {
    let cpp = source.extension().is_none_or(|e| e != "c");
    let kernel = tree.kernels.contains(source) || tree.third_party_kernels.contains(source);
    let opt = (kernel && tree.generation != Generation::Tfmicro2020).then_some(2);
    (cpp, opt)
}

/// An object's file name: its source's, under a key of that source's path,
/// size and time. (The directory says the rest: [`toolchain_key`].)
pub(crate) fn object_name(source: &Path) -> String {
    let mut key = DefaultHasher::new();
    file_stamp(source).hash(&mut key);
    let stem = source.file_stem().map_or_else(Default::default, |s| s.to_string_lossy());
    format!("{stem}-{:016x}.o", key.finish())
}

/// The reference library of a CMSIS-NN build's tree and core. Most of
/// TFLM's sources (all but the kernels CMSIS-NN replaces and the few that
/// test `CMSIS_NN`) preprocess to the same text in both builds; compiled
/// with the same flags, such a source is the same object, which a CMSIS-NN
/// library links from the reference library's directory rather than
/// compiling it again (61 of the 73 C++ objects of the example models'
/// library on each core; the others are CMSIS-NN's six kernels, their
/// reference helpers and the profiler).
pub(crate) struct Reference {
    tree: Tree,
    includes: Vec<PathBuf>,
    dir: PathBuf,
}

impl Reference {
    /// The reference library of `tree`'s root for the core `arch`, in the
    /// cache directory `cache`; None if the tree cannot be built so.
    pub(crate) fn of(tree: &Tree, arch: Option<&str>, cache: &Path) -> Result<Option<Reference>, Failure> {
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
pub(crate) fn compiled_args(build: &cc::Build) -> Vec<std::ffi::OsString> {
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
pub(crate) fn build_for(tree: &Tree, includes: &[PathBuf], cpp: bool, opt: Option<u32>) -> Result<cc::Build, Failure> {
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
pub(crate) fn library_build(tree: &Tree, includes: &[PathBuf], how: How) -> Result<cc::Build, Failure> {
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
pub(crate) fn compile_to(
    tree: &Tree,
    what: &str,
    mut build: cc::Build,
    jobs: &[Job],
    scratch: &Path,
) -> Result<(), Failure> {
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
