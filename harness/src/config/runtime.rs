//! The TFLM a run builds against: the 2020 archive hilmem bundles, or a tree
//! the user points at (a tflite-micro checkout with its third-party
//! downloads, or a tree made by TFLM's `create_tflm_tree.py`). The runtime is
//! chosen per run, validated before anything is built, named in every record,
//! and says which operators it registers, derived from its own sources.
//! What is read from a tree is kept by the tree's stamp
//! (`target/hilmem/tflm-trees/`): reading a current checkout costs a
//! quarter of a second, its stamp a walk of its directories.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tflm::registry::Operators;
use crate::{fsutil, gitrepo, Workspace};

use crate::tflm::tree::{file_stamp, walk};
use crate::tflm::tree::{Generation, Kernels, Tree};

/// The core a tree's kernels are checked for before any board is built
/// (the downloads a kernel set needs are the same for every core).
const CHECKED_ARCH: &str = "cortex-m7+fp";

/// What a run's records say for the bundled archive.
pub const BUNDLED: &str = "tfmicro 0.1.0 (TensorFlow 33689c48ad, May 2020)";

/// The environment variable that points the build at a TFLM tree.
pub const TFLM_DIR_VAR: &str = "HILMEM_TFLM_DIR";

/// A wrong path, a tree of no known generation or without its downloads.
#[derive(Debug, thiserror::Error)]
#[error("TFLM runtime from {origin}: {why}")]
pub struct RuntimeError {
    pub origin: String,
    pub why: String,
}

/// The TFLM a run builds against.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// None for the tfmicro 0.1.0 archive that cargo unpacks with the
    /// firmware's dependencies.
    pub tree: Option<CheckedTree>,
    /// The short name records, baselines and reports carry: [`BUNDLED`], a
    /// checkout's commit, or a hash of a tree's sources.
    pub identity: String,
    /// What its resolver can register, read from its own sources.
    pub operators: Operators,
}

/// What a run needs of a tree, checked when it was read.
#[derive(Debug, Clone)]
pub struct CheckedTree {
    pub root: PathBuf,
    pub generation: Generation,
    /// Whether its allocator is given its planner (`Api::planner_given`).
    pub planner_given: bool,
    /// Whether its CMSIS-NN kernels build, or why not.
    pub cmsis_nn: Result<(), String>,
}

/// What was read from a tree, kept under the tree's stamp.
#[derive(Serialize, Deserialize)]
struct Kept {
    stamp: String,
    identity: String,
    generation: String,
    planner_given: bool,
    cmsis_nn: Result<(), String>,
    operators: Operators,
}

/// Where a run's runtime was chosen, strongest first: `--tflm`,
/// `HILMEM_TFLM_DIR`, `[tflm] path` in the models file.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// `--tflm`: a path, or `bundled`.
    pub flag: Option<String>,
    /// `[tflm] path`, already relative to the models file, and that file.
    pub config: Option<(PathBuf, PathBuf)>,
}

impl Choice {
    /// The runtime chosen, validated.
    pub fn resolve(&self) -> Result<Runtime, RuntimeError> {
        let env = std::env::var_os(TFLM_DIR_VAR).map(PathBuf::from);
        let (origin, path) = match (&self.flag, env, &self.config) {
            (Some(flag), _, _) if flag == "bundled" => return Ok(Runtime::bundled()),
            (Some(flag), _, _) => ("--tflm".to_owned(), PathBuf::from(flag)),
            (None, Some(dir), _) => (TFLM_DIR_VAR.to_owned(), dir),
            (None, None, Some((file, path))) => (format!("`[tflm] path` in {}", file.display()), path.clone()),
            (None, None, None) => return Ok(Runtime::bundled()),
        };
        Runtime::at(&path).map_err(|why| RuntimeError { origin, why })
    }
}

impl Runtime {
    pub fn bundled() -> Runtime {
        Runtime { tree: None, identity: BUNDLED.to_owned(), operators: Operators::bundled() }
    }

    /// The tree at `path`, with its identity and operators: as kept for
    /// its stamp, else read and kept.
    pub fn at(path: &Path) -> Result<Runtime, String> {
        if !path.is_dir() {
            return Err(format!("{} is not a directory", path.display()));
        }
        let root = path.canonicalize().map_err(|e| format!("{}: {e}", path.display()))?;
        // The bundled archive named by its path is still the bundled TFLM.
        if crate::tflm::tree::bundled_root().ok().and_then(|r| r.canonicalize().ok()).as_ref() == Some(&root) {
            return Ok(Runtime::bundled());
        }
        let stamp = tree_stamp(&root);
        let file = kept_facts(&root);
        // A kept file of another stamp, or one this program cannot read
        // whole, is read again.
        let kept = std::fs::read(&file).ok().and_then(|bytes| serde_json::from_slice::<Kept>(&bytes).ok());
        let kept = kept.and_then(|k| Some((Generation::named(&k.generation)?, k))).filter(|(_, k)| k.stamp == stamp);
        let (generation, kept) = match kept {
            Some(kept) => kept,
            None => {
                let (generation, kept) = Runtime::read(&root, stamp)?;
                // A cache that cannot be written only costs the next run a read.
                let _ = std::fs::create_dir_all(file.parent().unwrap());
                let _ = fsutil::write_atomic(&file, &serde_json::to_vec(&kept).expect("kept facts serialize"));
                (generation, kept)
            }
        };
        let tree = CheckedTree { root, generation, planner_given: kept.planner_given, cmsis_nn: kept.cmsis_nn };
        Ok(Runtime { tree: Some(tree), identity: kept.identity, operators: kept.operators })
    }

    /// What a run needs of the tree at `root`, read from it.
    fn read(root: &Path, stamp: String) -> Result<(Generation, Kept), String> {
        let tree = Tree::at(root)?;
        let identity = match gitrepo::checkout_head(root, STAMPED_DIRS) {
            Some((commit, modified)) => {
                format!("tflite-micro {}{}", &commit[..12.min(commit.len())], if modified { "+modified" } else { "" })
            }
            None => format!("tflm tree {}", content_hash(&tree)?),
        };
        let operators = match tree.generation {
            Generation::Tfmicro2020 => Operators::bundled(),
            Generation::Between | Generation::Tflm2023 | Generation::Current => Operators::of_tree(root)?,
        };
        let cmsis_nn = Tree::built(root, Kernels::CmsisNn, Some(CHECKED_ARCH)).map(|_| ());
        let (generation, planner_given) = (tree.generation.name().to_owned(), tree.api.planner_given);
        Ok((tree.generation, Kept { stamp, identity, generation, planner_given, cmsis_nn, operators }))
    }

    pub fn generation(&self) -> Generation {
        self.tree.as_ref().map_or(Generation::Tfmicro2020, |t| t.generation)
    }

    /// Whether its allocator is given its planner (by the shim): only then
    /// can an image plan with another planner or share an arena.
    pub fn planner_given(&self) -> bool {
        self.tree.as_ref().is_some_and(|t| t.planner_given)
    }

    /// Whether images can be built with `kernels`: CMSIS-NN needs a checkout
    /// with TFLM's CMSIS-NN kernels and their downloads; the error says
    /// what is missing.
    pub fn builds(&self, kernels: Kernels) -> Result<(), String> {
        match (kernels, &self.tree) {
            (Kernels::Reference, _) => Ok(()),
            (Kernels::CmsisNn, None) => Err(format!(
                "the bundled TFLM ({BUNDLED}) is built with its reference kernels only; give a tflite-micro checkout \
                 with its CMSIS-NN downloads (--tflm)"
            )),
            (Kernels::CmsisNn, Some(tree)) => tree.cmsis_nn.clone(),
        }
    }

    /// The tree to hand the firmware's build; None for the bundled archive.
    pub fn dir(&self) -> Option<&Path> {
        self.tree.as_ref().map(|t| t.root.as_path())
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tree {
            None => write!(f, "the bundled TFLM ({BUNDLED})"),
            Some(tree) => write!(f, "TFLM {} at {}", self.identity, tree.root.display()),
        }
    }
}

/// Where what was read from the tree at `root` (canonical) is kept.
pub fn kept_facts(root: &Path) -> PathBuf {
    let name = hex(&Sha256::digest(root.as_os_str().as_encoded_bytes()));
    Workspace::from_source().tree_cache().join(format!("{name}.json"))
}

/// The directories of a tree whose files hilmem reads (a checkout's
/// downloads are under `tensorflow/`, a created tree's in `third_party/`).
const STAMPED_DIRS: &[&str] = &["tensorflow", "signal", "third_party"];

/// The stamp of what [`Runtime::read`] reads from the tree at `root`: the
/// path, length and modification time of each source, header and makefile
/// in [`STAMPED_DIRS`], the checkout's commit, and this program's own build
/// (another build of hilmem may read a tree differently).
fn tree_stamp(root: &Path) -> String {
    let mut key = DefaultHasher::new();
    std::env::current_exe().ok().filter(|exe| exe.is_file()).map(|exe| file_stamp(&exe)).hash(&mut key);
    gitrepo::checkout_commit(root).hash(&mut key);
    for dir in STAMPED_DIRS.iter().map(|d| root.join(d)).filter(|d| d.is_dir()) {
        // A directory that cannot be read stamps as its error, and the read
        // that follows says it.
        match walk(&dir, &["h", "hpp", "c", "cc", "inc"]) {
            Ok(files) => files.iter().for_each(|file| file_stamp(file).hash(&mut key)),
            Err(why) => why.hash(&mut key),
        }
    }
    let makefile = root.join("tensorflow/lite/micro/tools/make/Makefile");
    makefile.is_file().then(|| file_stamp(&makefile)).hash(&mut key);
    format!("{:016x}", key.finish())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of the sources the library is compiled from and every header of
/// the tree and its third-party libraries, first 12 hex digits.
fn content_hash(tree: &Tree) -> Result<String, String> {
    let mut files: Vec<PathBuf> = tree.core.iter().chain(&tree.kernels).cloned().chain(tree.headers()?).collect();
    files.sort();
    files.dedup();
    let mut sha = Sha256::new();
    for file in &files {
        sha.update(file.strip_prefix(&tree.root).unwrap_or(file).to_string_lossy().as_bytes());
        sha.update(std::fs::read(file).unwrap_or_default());
    }
    Ok(hex(&sha.finalize()[..6]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tflm::tree::fixtures::write_todays_api;

    fn touch(root: &Path, path: &str) {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, "").unwrap();
    }

    #[test]
    fn a_wrong_path_or_a_tree_without_downloads_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = Runtime::at(&dir.path().join("nowhere")).unwrap_err();
        assert!(err.ends_with("is not a directory"), "{err}");
        let err = Runtime::at(dir.path()).unwrap_err();
        assert!(err.contains("is not a TFLM tree"), "{err}");

        touch(dir.path(), "tensorflow/lite/micro/micro_interpreter.h");
        let err = Runtime::at(dir.path()).unwrap_err();
        assert!(err.contains("a TFLM tree hilmem cannot build: no header under tensorflow/ declares class"), "{err}");

        write_todays_api(dir.path());
        touch(dir.path(), "tensorflow/lite/micro/tools/make/Makefile");
        std::fs::write(dir.path().join("tensorflow/lite/micro/tools/make/Makefile"), "-I$(DOWNLOADS_DIR)/kissfft\n")
            .unwrap();
        let err = Runtime::at(dir.path()).unwrap_err();
        assert!(err.contains("lacks its third-party libraries (flatbuffers/include, gemmlowp, ruy, kissfft"), "{err}");
        assert!(err.contains("make -f tensorflow/lite/micro/tools/make/Makefile third_party_downloads"), "{err}");

        let choice = Choice { flag: Some(dir.path().display().to_string()), config: None };
        let err = choice.resolve().unwrap_err().to_string();
        assert!(err.starts_with("TFLM runtime from --tflm: "), "{err}");
        let choice = Choice { flag: Some("bundled".into()), config: None };
        assert_eq!(choice.resolve().unwrap().identity, BUNDLED);
    }

    #[test]
    fn a_created_tree_is_found_with_its_third_party_folder() {
        let dir = tempfile::tempdir().unwrap();
        write_todays_api(dir.path());
        for lib in ["flatbuffers/include", "gemmlowp", "ruy", "kissfft"] {
            std::fs::create_dir_all(dir.path().join("third_party").join(lib)).unwrap();
        }
        let tree = Tree::at(dir.path()).unwrap();
        assert_eq!((tree.generation, tree.third_party.ends_with("third_party")), (Generation::Current, true));
    }

    /// What is read from a tree is kept by its stamp: a file changed in
    /// place with its length and time put back is not seen (the kept facts
    /// stand), a file changed as editors and checkouts change it is.
    #[test]
    fn a_tree_is_read_again_only_when_its_stamp_moves() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_todays_api(root);
        std::fs::write(
            root.join("tensorflow/lite/schema/schema_generated.h"),
            "inline bool VerifyModelBuffer(flatbuffers::Verifier &verifier) {}\n\
             enum BuiltinOperator : int32_t {\n  BuiltinOperator_ADD = 0,\n  BuiltinOperator_MUL = 18,\n};\n",
        )
        .unwrap();
        for lib in ["flatbuffers/include", "gemmlowp", "ruy", "kissfft"] {
            std::fs::create_dir_all(root.join("third_party").join(lib)).unwrap();
        }
        let resolver = root.join("tensorflow/lite/micro/micro_mutable_op_resolver.h");
        let adds = |op: &str| {
            format!(
                "class MicroMutableOpResolver : public R {{\n  TfLiteStatus Add{op}() {{ return \
                 AddBuiltin(BuiltinOperator_{op}, Register_{op}(), P); }}\n}};\n"
            )
        };
        let names =
            |runtime: &Runtime| -> Vec<String> { runtime.operators.by_code.values().map(|o| o.name.clone()).collect() };
        std::fs::write(&resolver, adds("ADD")).unwrap();
        let first = Runtime::at(root).unwrap();
        assert_eq!(names(&first), ["ADD"]);
        assert!(first.identity.starts_with("tflm tree "), "{}", first.identity);

        // Same length, same time: the stamp does not move.
        let time = std::fs::metadata(&resolver).unwrap().modified().unwrap();
        std::fs::write(&resolver, adds("MUL")).unwrap();
        std::fs::File::options().write(true).open(&resolver).unwrap().set_modified(time).unwrap();
        let kept = Runtime::at(root).unwrap();
        assert_eq!((names(&kept), &kept.identity), (names(&first), &first.identity));

        let later = time + std::time::Duration::from_secs(2);
        std::fs::File::options().write(true).open(&resolver).unwrap().set_modified(later).unwrap();
        let read = Runtime::at(root).unwrap();
        assert_eq!(names(&read), ["MUL"]);
        assert_ne!(read.identity, first.identity, "the identity is the new sources'");
        assert_eq!(read.generation(), Generation::Current);
        assert!(read.builds(Kernels::CmsisNn).unwrap_err().contains("no CMSIS-NN kernels"));
    }
}
