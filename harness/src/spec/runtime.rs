//! The TFLM a run builds against: the 2020 archive hilmem bundles, or a tree
//! the user points at (a tflite-micro checkout with its third-party
//! downloads, or a tree made by TFLM's `create_tflm_tree.py`). The runtime is
//! chosen per run, validated before anything is built, named in every record,
//! and says which operators it registers, derived from its own sources.

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::gitrepo;
use crate::model::registry::Operators;

pub use crate::model::tree::{bundled_tree, Generation, Kernels, Tree};

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
    pub tree: Option<Tree>,
    /// The short name records, baselines and reports carry: [`BUNDLED`], a
    /// checkout's commit, or a hash of a tree's sources.
    pub identity: String,
    /// What its resolver can register, read from its own sources.
    pub operators: Operators,
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

    /// The tree at `path`, with its identity and operators.
    pub fn at(path: &Path) -> Result<Runtime, String> {
        if !path.is_dir() {
            return Err(format!("{} is not a directory", path.display()));
        }
        let root = path.canonicalize().map_err(|e| format!("{}: {e}", path.display()))?;
        // The bundled archive named by its path is still the bundled TFLM.
        if crate::model::tree::bundled_root().ok().and_then(|r| r.canonicalize().ok()).as_ref() == Some(&root) {
            return Ok(Runtime::bundled());
        }
        let tree = Tree::at(&root)?;
        let identity = match gitrepo::checkout_head(&root) {
            Some((commit, modified)) => {
                format!("tflite-micro {}{}", &commit[..12.min(commit.len())], if modified { "+modified" } else { "" })
            }
            None => format!("tflm tree {}", content_hash(&tree)),
        };
        let operators = match tree.generation {
            Generation::Tfmicro2020 => Operators::bundled(),
            Generation::Between | Generation::Current => Operators::of_tree(&root)?,
        };
        Ok(Runtime { tree: Some(tree), identity, operators })
    }

    pub fn generation(&self) -> Generation {
        self.tree.as_ref().map_or(Generation::Tfmicro2020, |t| t.generation)
    }

    /// Whether its allocator is given its planner (by the shim): only then
    /// can an image plan with another planner or share an arena.
    pub fn planner_given(&self) -> bool {
        self.tree.as_ref().is_some_and(|t| t.api.planner_given)
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
            (Kernels::CmsisNn, Some(tree)) => Tree::built(&tree.root, kernels, Some(CHECKED_ARCH)).map(|_| ()),
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

/// SHA-256 of the sources the library is compiled from and every header of
/// the tree and its third-party libraries, first 12 hex digits.
fn content_hash(tree: &Tree) -> String {
    let mut files: Vec<PathBuf> = tree.core.iter().chain(&tree.kernels).cloned().chain(tree.headers()).collect();
    files.sort();
    files.dedup();
    let mut sha = Sha256::new();
    for file in &files {
        sha.update(file.strip_prefix(&tree.root).unwrap_or(file).to_string_lossy().as_bytes());
        sha.update(std::fs::read(file).unwrap_or_default());
    }
    sha.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(err.contains("a TFLM tree hilmem cannot build: its arena allocator is neither"), "{err}");

        touch(dir.path(), "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h");
        touch(dir.path(), "tensorflow/lite/micro/micro_log.h");
        std::fs::write(dir.path().join("tensorflow/lite/micro/micro_log.h"), "void MicroPrintf(const char*, ...);")
            .unwrap();
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
        for file in [
            "tensorflow/lite/micro/micro_interpreter.h",
            "tensorflow/lite/micro/micro_log.h",
            "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h",
            "tensorflow/lite/micro/micro_arena_constants.h",
        ] {
            touch(dir.path(), file);
        }
        std::fs::write(
            dir.path().join("tensorflow/lite/micro/micro_interpreter.h"),
            "TfLiteEvalTensor* GetTensor(int); TFLITE_SCHEMA_VERSION",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("tensorflow/lite/micro/micro_allocator.h"),
            "MicroMemoryPlanner* memory_planner); GetDefaultTailUsage",
        )
        .unwrap();
        for lib in ["flatbuffers/include", "gemmlowp", "ruy", "kissfft"] {
            std::fs::create_dir_all(dir.path().join("third_party").join(lib)).unwrap();
        }
        let tree = Tree::at(dir.path()).unwrap();
        assert_eq!((tree.generation, tree.third_party.ends_with("third_party")), (Generation::Current, true));
    }
}
