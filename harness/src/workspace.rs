//! Where things live in a hilmem checkout.

use std::path::{Path, PathBuf};

/// The root of a hilmem checkout and the paths derived from it.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into() }
    }

    /// The checkout this crate was compiled from.
    pub fn from_source() -> Self {
        Workspace::new(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` as a user reads it: relative to the checkout where it lies
    /// in it, else whole.
    pub fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }

    /// One TOML file per board profile.
    pub fn boards_dir(&self) -> PathBuf {
        self.root.join("boards")
    }

    /// The models to measure and their inputs.
    pub fn models_file(&self) -> PathBuf {
        self.root.join("hil.toml")
    }

    pub fn firmware_manifest(&self) -> PathBuf {
        self.root.join("firmware/Cargo.toml")
    }

    /// Cargo target directory and build configuration of one board's firmware.
    pub fn firmware_dir(&self, board: &str) -> PathBuf {
        self.root.join("target/firmware").join(board)
    }

    /// Compiled TFLM libraries shared by every firmware build.
    pub fn tflm_cache(&self) -> PathBuf {
        self.root.join("target/firmware/tflm-cache")
    }

    /// What was read from each TFLM tree a run used, by its stamp.
    pub fn tree_cache(&self) -> PathBuf {
        self.root.join("target/hilmem/tflm-trees")
    }

    /// Approved baselines, one directory per board.
    pub fn baselines_dir(&self) -> PathBuf {
        self.root.join("baselines")
    }

    /// Results of the last run.
    pub fn results_dir(&self) -> PathBuf {
        self.root.join("target/hilmem")
    }
}
