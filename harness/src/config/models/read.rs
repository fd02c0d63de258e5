//! A model of the models file read once: its `.tflite` parsed and checked
//! against the runtime, its inputs and its update read.

use std::path::Path;

use crate::config::runtime::Runtime;
use crate::model::analysis::{Analysis, Sharing};
use crate::model::planner::Planner;
use crate::model::tail::cmsis_nn::KernelPath;
use crate::model::tflite;
use crate::tflm::tree::Generation;

use super::{ModelSpec, ModelsError};

/// A model of the models file with its `.tflite` read and checked once: the
/// bytes and the parsed model travel with the spec to every step that needs
/// them (sizing the arena, the build, the image's identity, the record).
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub spec: ModelSpec,
    pub bytes: Vec<u8>,
    pub parsed: tflite::Model,
    /// The bytes of each of `spec.inputs`, as the input tensor takes them.
    pub inputs: Vec<Vec<u8>>,
    /// The model the concurrent-OTA scenario delivers, which the image must
    /// also be able to run.
    pub update: Update,
    /// For a set, its models, each read as a model of its own by
    /// [`ModelSpec::read`] (empty after [`ModelSpec::parse`], which reads
    /// this file alone).
    pub residents: Vec<Model>,
    /// How "auto" was sized, once it is ([`Model::sized_for`],
    /// [`Model::with_arena`]).
    pub arena_source: Option<String>,
}

/// An update's model file, read and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub bytes: Vec<u8>,
    pub parsed: tflite::Model,
    /// The bytes of the update's first input.
    pub input: Vec<u8>,
}

impl ModelSpec {
    /// Reads the model's file, with the checks that catch a bad file before
    /// anything is built: a readable, well-formed TFLite flatbuffer whose
    /// operators `runtime` registers. TFLM's own verifier on the target
    /// checks again.
    pub fn read(&self, runtime: &Runtime) -> Result<Model, ModelsError> {
        let model = self.parse()?;
        let unsupported = |name: &str, path: &Path, missing: Vec<String>| ModelsError::Unsupported {
            model: name.to_owned(),
            path: path.to_owned(),
            runtime: runtime.to_string(),
            ops: missing.join(", "),
        };
        let missing = runtime.operators.missing(&model.parsed);
        if !missing.is_empty() {
            return Err(unsupported(&self.name, &self.file, missing));
        }
        let missing = runtime.operators.missing(&model.update.parsed);
        if !missing.is_empty() {
            return Err(unsupported(&self.ota.model, &self.ota.file, missing));
        }
        runtime.builds(self.kernels).map_err(|why| ModelsError::Kernels {
            model: self.name.clone(),
            kernels: self.kernels.name(),
            why,
        })?;
        // Another planner, and a shared arena, need an allocator that is
        // given its planner (the shim builds it).
        let mut model = match (self.planner, runtime.planner_given()) {
            (Planner::Greedy, _) => model,
            (planner, false) => {
                return Err(ModelsError::Planner { model: self.name.clone(), planner, runtime: runtime.to_string() })
            }
            (Planner::Linear, true) => model,
            (Planner::Offline, true) => model.with_hilmem_plan()?,
        };
        if let Some(set) = &self.set {
            if set.sharing == Sharing::Shared && !runtime.planner_given() {
                return Err(ModelsError::Shared { set: self.name.clone(), runtime: runtime.to_string() });
            }
            model.residents = set.models.iter().map(|m| m.read(runtime)).collect::<Result<_, _>>()?;
        }
        Ok(model)
    }

    /// Reads the model's file and its update's as TFLite flatbuffers,
    /// whichever TFLM is to run them.
    /// Each input is made into the bytes the model's input tensor takes.
    pub fn parse(&self) -> Result<Model, ModelsError> {
        let (bytes, parsed) = read_tflite(&self.name, &self.file)?;
        let inputs = self.inputs.iter().map(|i| i.bytes(&self.name, &parsed)).collect::<Result<_, _>>()?;
        let (update_bytes, update) = read_tflite(&self.ota.model, &self.ota.file)?;
        let input = self.ota.input.bytes(&self.ota.model, &update)?;
        Ok(Model {
            spec: self.clone(),
            bytes,
            parsed,
            inputs,
            update: Update { bytes: update_bytes, parsed: update, input },
            residents: Vec::new(),
            arena_source: None,
        })
    }
}

pub(super) fn read_tflite(model: &str, path: &Path) -> Result<(Vec<u8>, tflite::Model), ModelsError> {
    let bytes = std::fs::read(path).map_err(|source| ModelsError::Read {
        model: model.to_owned(),
        path: path.to_owned(),
        source,
    })?;
    let parsed = tflite::read(&bytes).map_err(|e| not_tflite(model, path, e))?;
    Ok((bytes, parsed))
}

pub(super) fn not_tflite(model: &str, path: &Path, e: tflite::ReadError) -> ModelsError {
    ModelsError::NotTflite { model: model.to_owned(), path: path.to_owned(), why: e.to_string() }
}

impl Model {
    /// This model with its bytes replaced by a copy that carries hilmem's
    /// plan as TFLM's offline plan (checked, before it is written, to put no
    /// two live tensors in the same bytes).
    fn with_hilmem_plan(self) -> Result<Model, ModelsError> {
        let refuse =
            |why: String| ModelsError::OfflinePlan { model: self.spec.name.clone(), path: self.spec.file.clone(), why };
        if self.parsed.subgraphs.len() != 1 {
            return Err(refuse(format!("it has {} subgraphs; hilmem plans one", self.parsed.subgraphs.len())));
        }
        // The plan places tensors only; TFLM places any kernel's scratch
        // buffers around it, whichever kernels the image has.
        let analysis =
            Analysis::of(&self.spec.name, &self.parsed, Generation::Current, KernelPath::Reference, Planner::Offline)
                .map_err(|e| refuse(e.to_string()))?;
        let bytes =
            tflite::with_offline_plan(&self.bytes, &analysis.offline_plan).map_err(|e| refuse(e.to_string()))?;
        let parsed = tflite::read(&bytes).map_err(|e| refuse(e.to_string()))?;
        Ok(Model { bytes, parsed, ..self })
    }
}
