//! What a run produced, as `results.json` keeps it: the measurement records,
//! the runs that gave none, and the images they came from, with the facts a
//! baseline keeps beside its figures ([`Meta`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::board::Board;
use crate::config::models::{Model, ModelsError};
use crate::config::runtime::Runtime;
use crate::fsutil::write_atomic;
use crate::run::measurement::Measurement;
use crate::tflm::tree::{Generation, Kernels};

/// A board, model and scenario that produced no measurement, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failed {
    pub board: String,
    pub model: String,
    pub scenario: String,
    pub error: String,
}

/// What an image was built from: the facts a baseline keeps beside its
/// figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub board: String,
    pub model: String,
    pub model_sha256: String,
    pub tflm: String,
    /// Its generation, as the analysis predicts for it: `2020`, `between` or
    /// `current`.
    #[serde(default = "tfmicro2020")]
    pub tflm_generation: String,
    /// The kernels it was built with: `reference` or `cmsis-nn`.
    #[serde(default = "reference")]
    pub kernels: String,
    pub rustc: String,
    pub target: String,
    pub arena_bytes: u32,
}

/// What results and baselines written before they named the kernels ran
/// on.
fn reference() -> String {
    Kernels::Reference.name().to_owned()
}

/// What results and baselines written before they named the generation
/// ran on.
fn tfmicro2020() -> String {
    Generation::Tfmicro2020.name().to_owned()
}

impl Image {
    pub fn of(board: &Board, model: &Model, runtime: &Runtime, rustc: &str) -> Result<Image, ModelsError> {
        let sha: String = Sha256::digest(&model.bytes).iter().map(|b| format!("{b:02x}")).collect();
        Ok(Image {
            board: board.name.clone(),
            model: model.spec.name.clone(),
            model_sha256: sha,
            tflm: runtime.identity.clone(),
            tflm_generation: runtime.generation().name().to_owned(),
            kernels: model.spec.kernels.name().to_owned(),
            rustc: rustc.to_owned(),
            target: board.target.clone(),
            arena_bytes: model.arena_bytes(board, runtime.generation())?,
        })
    }

    /// Baseline metadata for this image, not yet approved by anyone.
    pub fn meta(&self, results: &Results) -> Meta {
        Meta {
            board: self.board.clone(),
            model: self.model.clone(),
            model_sha256: self.model_sha256.clone(),
            tflm: self.tflm.clone(),
            tflm_generation: self.tflm_generation.clone(),
            kernels: self.kernels.clone(),
            rustc: self.rustc.clone(),
            target: self.target.clone(),
            arena_bytes: self.arena_bytes,
            measured_at_commit: results.commit.clone().unwrap_or_default(),
            approved_by: String::new(),
            approved_at: 0,
        }
    }
}

/// Everything a run produced; written as JSON under `target/hilmem/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Version of this file's layout.
    pub format: u32,
    /// The commit of the checkout that ran, when it is a git repository.
    pub commit: Option<String>,
    /// Boards in the order they were asked for.
    pub boards: Vec<String>,
    /// The images that were run.
    pub images: Vec<Image>,
    pub records: Vec<Measurement>,
    pub failed: Vec<Failed>,
    /// The models the run read, each once, for what is drawn from the run
    /// after it (the HTML page): not written to results.json, which holds
    /// figures, not inputs.
    #[serde(skip)]
    pub models: Vec<Model>,
}

pub const RESULTS_FORMAT: u32 = 1;

impl Results {
    pub fn all_checks_passed(&self) -> bool {
        self.records.iter().all(Measurement::passed)
    }

    /// Pretty JSON: the layout of `results.json`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialize")
    }

    /// Writes `results.json` into `dir` and returns its path.
    pub fn save(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("results.json");
        write_atomic(&path, self.to_json().as_bytes())?;
        Ok(path)
    }
}

/// Where a baseline's figures came from and who approved them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub board: String,
    pub model: String,
    /// SHA-256 of the model file.
    pub model_sha256: String,
    /// The TFLM source the firmware was built from.
    pub tflm: String,
    /// Its generation: `2020`, `between`, `2023` or `current`.
    pub tflm_generation: String,
    /// Its kernels: `reference` or `cmsis-nn`.
    pub kernels: String,
    /// The Rust compiler that built it.
    pub rustc: String,
    /// Build settings that change the figures.
    pub target: String,
    pub arena_bytes: u32,
    /// Commit the measurement was made on ("" outside git).
    pub measured_at_commit: String,
    pub approved_by: String,
    /// Seconds since the Unix epoch, UTC.
    pub approved_at: u64,
}
