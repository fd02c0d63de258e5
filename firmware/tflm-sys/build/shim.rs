//! The C shim over TFLM, compiled per model resolver, its TFLM headers
//! precompiled once per flag set.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use tflm_tree::Tree;

use crate::files::{create_dir, read, rename};
use crate::library::{build_for, compile_to};
use crate::{config_dir, tool, Failure};

/// The shim compiled against `tree` with the model's resolver (`ops`), for
/// bare metal or not and over the recording allocator or not (`build`): an
/// object in `objects_dir` under a key of the shim's and the resolver's
/// text, so switching back to a model built before compiles nothing.
pub(crate) fn compile_shim(
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

/// The TFLM headers the shim includes first (`shim/shim_tflm.h`).
pub(crate) const SHIM_HEADER: &str = "shim/shim_tflm.h";

/// A copy of [`SHIM_HEADER`] beside its precompiled form, made with the
/// shim's flags (`shim`, to which it adds the flag that names the copy's
/// directory as the header's own in the object), in `objects_dir` under a
/// key of the header's text and those flags: every shim compiled with the
/// same flags (one per model resolver) includes it first. The header then
/// costs its parse once per toolchain and variant, not once per model; the
/// object is the one compiled without it, since `shim.cc` includes the
/// same header first (its guard makes that a no-op).
pub(crate) fn precompiled_header(tree: &Tree, shim: &mut cc::Build, objects_dir: &Path) -> Result<PathBuf, Failure> {
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
