//! The model set: `hil.toml` at the repository root names each model, its
//! arena size and its inputs, and what the model should answer for them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::board::Board;
use crate::config::fit;
use crate::config::runtime::{Choice, Runtime, RuntimeError};
use crate::model::analysis::{Analysis, Sharing};
use crate::model::planner::Planner;
use crate::model::tail::cmsis_nn::KernelPath;
use crate::model::tflite;
use crate::strict_toml::{self, TomlError};
use crate::tflm::tree::{Generation, Kernels};

#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    #[error(transparent)]
    Toml(#[from] TomlError),
    #[error("{file}: key `{key}`: {why}")]
    Invalid { file: PathBuf, key: String, why: String },
    #[error("no model `{name}` in {file} (models: {available})")]
    Unknown { name: String, file: PathBuf, available: String },
    #[error("model `{model}`: cannot read {path}: {source}")]
    Read { model: String, path: PathBuf, source: std::io::Error },
    #[error("model `{model}`: {path} is not a TFLite flatbuffer ({why})")]
    NotTflite { model: String, path: PathBuf, why: String },
    #[error("model `{model}`: {runtime} does not register {ops}; {path} needs another TFLM (`[tflm] path`, --tflm) or a model converted for this one")]
    Unsupported { model: String, path: PathBuf, runtime: String, ops: String },
    #[error("model `{model}`: input `{input}`: {why}")]
    Input { model: String, input: String, why: String },
    #[error("model `{model}`: `arena_bytes = \"auto\"`: {source}")]
    Auto { model: String, source: fit::NotPredicted },
    #[error("model `{model}`: `planner = \"{planner}\"` needs a current TFLM; {runtime} has only its greedy planner and reads no offline plan")]
    Planner { model: String, planner: Planner, runtime: String },
    #[error("model `{model}`: cannot write hilmem's offline plan into {path}: {why}")]
    OfflinePlan { model: String, path: PathBuf, why: String },
    #[error("set `{set}`: `arena = \"shared\"` needs a current TFLM's multi-tenant allocation; {runtime} has none (use \"separate\")")]
    Shared { set: String, runtime: String },
    #[error("model `{model}`: `kernels = \"{kernels}\"`: {why}")]
    Kernels { model: String, kernels: &'static str, why: String },
}

/// The size of the firmware's tensor arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arena {
    Bytes(u32),
    /// The analyzer's minimum plus the board's safety margin
    /// ([`crate::config::fit::Fit::suggested_arena_bytes`]).
    Auto,
}

/// One model to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub name: String,
    /// The `.tflite` file.
    pub file: PathBuf,
    /// Size of the firmware's static tensor arena; see [`ModelSpec::arena_bytes`].
    pub arena: Arena,
    /// How the image's TFLM plans the arena head.
    pub planner: Planner,
    /// The kernels the image's TFLM is built with.
    pub kernels: Kernels,
    pub inputs: Vec<InputSpec>,
    /// The update the concurrent-OTA scenario delivers while this model runs.
    pub ota: OtaSpec,
    /// The camera of the capture scenario.
    pub capture: CaptureSpec,
    /// For a set of resident models (a `[[set]]`, run by the multi-model
    /// scenario only): its models. The fields above are then its first
    /// model's, but for the name and, when they share one, the arena.
    pub set: Option<SetSpec>,
}

/// The camera the capture scenario (`dma-stream`) emulates: how many
/// buffers it fills, and how many frames a second it makes, in the board's
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureSpec {
    pub buffers: u32,
    pub frame_rate_hz: u32,
}

impl Default for CaptureSpec {
    fn default() -> Self {
        CaptureSpec { buffers: 3, frame_rate_hz: 20 }
    }
}

/// Most capture buffers a model may ask for.
pub const MAX_CAPTURE_BUFFERS: u32 = 16;

/// Models resident together, loaded in this order and run one after
/// another frame by frame.
#[derive(Debug, Clone, PartialEq)]
pub struct SetSpec {
    pub models: Vec<ModelSpec>,
    pub sharing: Sharing,
    /// The model that infers from an interrupt, preempting the others, if
    /// any: its index in `models` and its period in milliseconds.
    pub interrupt: Option<(usize, u32)>,
}

/// A model update: which model arrives, what its metadata claims, and whether
/// the gate is expected to accept it.
#[derive(Debug, Clone, PartialEq)]
pub struct OtaSpec {
    /// Name of the arriving model in the models file.
    pub model: String,
    pub file: PathBuf,
    /// Its first input, run once after activation.
    pub input: InputSpec,
    pub version: u32,
    /// None: the arena the running model has (the default update needs
    /// exactly that).
    pub min_arena_bytes: Option<u32>,
    pub max_arena_bytes: Option<u32>,
    pub min_free_heap_bytes: u32,
    pub expect: OtaOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OtaOutcome {
    Accepted,
    Rejected,
}

/// One input the single-frame scenario feeds to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub name: String,
    pub data: InputData,
    pub expect: Option<Expect>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum InputData {
    /// A file of bytes in the given layout.
    File { path: PathBuf, format: Format },
    /// 32-bit floats written in the target's (little-endian) layout.
    Values(Vec<f32>),
}

/// Byte layout of an input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Exactly the bytes of the input tensor.
    Raw,
    /// Big-endian 32-bit floats, converted to the target's byte order.
    F32Be,
}

/// What the model should answer for an input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expect {
    /// Index of the largest element of output 0.
    Class(u32),
    /// First element of output 0 (dequantized), within a tolerance.
    Value { value: f32, tolerance: f32 },
}

/// A models file: the models, and the TFLM it names, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelsFile {
    /// Where it was read from.
    pub file: PathBuf,
    pub models: Vec<ModelSpec>,
    /// `[tflm] path`, relative to the file's directory.
    pub tflm: Option<PathBuf>,
}

/// A kernel set as a models file or the command line names it.
pub fn kernels_named(name: &str) -> Result<Kernels, String> {
    Kernels::named(name).ok_or_else(|| {
        let known: Vec<&str> = Kernels::ALL.iter().map(|k| k.name()).collect();
        format!("`{name}` is not a kernel set ({})", known.join(", "))
    })
}

impl ModelsFile {
    /// The TFLM a run of this file builds with: `flag` (`--tflm`), else
    /// `HILMEM_TFLM_DIR`, else the file's `[tflm] path`, else the bundled one.
    pub fn runtime(&self, flag: Option<String>) -> Result<Runtime, RuntimeError> {
        Choice { flag, config: self.tflm.clone().map(|path| (self.file.clone(), path)) }.resolve()
    }

    /// Every model (and every member of a set) built with `kernels`, as
    /// `--kernels` asks.
    pub fn with_kernels(mut self, kernels: Kernels) -> ModelsFile {
        for model in &mut self.models {
            model.kernels = kernels;
            for member in model.set.iter_mut().flat_map(|s| &mut s.models) {
                member.kernels = kernels;
            }
        }
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "model")]
    models: Vec<RawModel>,
    #[serde(rename = "set", default)]
    sets: Vec<RawSet>,
    tflm: Option<RawTflm>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    name: String,
    models: Vec<String>,
    arena: Sharing,
    arena_bytes: Option<u32>,
    #[serde(default)]
    concurrent: bool,
    interrupt: Option<RawInterrupt>,
}

/// A set's model that infers from a periodic interrupt.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInterrupt {
    model: String,
    every_ms: u32,
}

/// Most models a set holds: each is an interpreter slot in the image's
/// static memory, and its own figures in the record.
pub const MAX_SET_MODELS: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTflm {
    path: Option<PathBuf>,
    /// The kernel set of every model that does not name its own.
    kernels: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    name: String,
    file: PathBuf,
    arena_bytes: RawArena,
    #[serde(default)]
    planner: Planner,
    kernels: Option<String>,
    #[serde(rename = "input", default)]
    inputs: Vec<RawInput>,
    ota: Option<RawOta>,
    capture_buffers: Option<u32>,
    frame_rate_hz: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawArena {
    Bytes(u32),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOta {
    model: String,
    version: Option<u32>,
    min_arena_bytes: Option<u32>,
    max_arena_bytes: Option<u32>,
    min_free_heap_bytes: Option<u32>,
    expect: OtaOutcome,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    name: String,
    file: Option<PathBuf>,
    format: Option<Format>,
    values: Option<Vec<f32>>,
    expect_class: Option<u32>,
    expect_value: Option<f32>,
    tolerance: Option<f32>,
}

/// Longest model or input name; names travel in protocol frames and paths.
const MAX_NAME: usize = 64;

/// Checks that `name` is usable and not yet in `seen`, then adds it.
fn new_name(name: &str, seen: &mut BTreeSet<String>) -> Result<(), String> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-';
    if name.is_empty() || name.len() > MAX_NAME || !name.bytes().all(allowed) {
        return Err(format!("`{name}`: use 1-{MAX_NAME} characters from a-z, 0-9, `_` and `-`"));
    }
    if !seen.insert(name.to_owned()) {
        return Err(format!("`{name}` is named twice"));
    }
    Ok(())
}

/// Reads and validates a models file; relative paths are relative to it.
pub fn load(file: &Path) -> Result<ModelsFile, ModelsError> {
    let raw: RawConfig = strict_toml::read(file)?;
    let base = file.parent().unwrap_or(Path::new("."));
    let invalid = |key: String, why: &str| ModelsError::Invalid { file: file.to_owned(), key, why: why.to_owned() };
    let mut seen = BTreeSet::new();
    let mut models = Vec::new();
    let default_kernels = match raw.tflm.as_ref().and_then(|t| t.kernels.as_deref()) {
        Some(name) => kernels_named(name).map_err(|why| invalid("tflm.kernels".into(), &why))?,
        None => Kernels::Reference,
    };
    for (m, raw_model) in raw.models.into_iter().enumerate() {
        let key = |k: &str| format!("model[{m}].{k}");
        new_name(&raw_model.name, &mut seen).map_err(|why| invalid(key("name"), &why))?;
        let kernels = match raw_model.kernels.as_deref() {
            Some(name) => kernels_named(name).map_err(|why| invalid(key("kernels"), &why))?,
            None => default_kernels,
        };
        let arena = match raw_model.arena_bytes {
            RawArena::Word(w) if w == "auto" => Arena::Auto,
            RawArena::Word(w) => return Err(invalid(key("arena_bytes"), &format!("`{w}`: give bytes or \"auto\""))),
            RawArena::Bytes(b) if b < 16 || !b.is_multiple_of(16) => {
                return Err(invalid(key("arena_bytes"), "must be a multiple of 16 (TFLM's alignment), at least 16"))
            }
            RawArena::Bytes(b) => Arena::Bytes(b),
        };
        if raw_model.inputs.is_empty() {
            return Err(invalid(key("input"), "give at least one [[model.input]] for the single-frame scenario"));
        }
        let mut inputs = Vec::new();
        let mut input_names = BTreeSet::new();
        for (i, raw_input) in raw_model.inputs.into_iter().enumerate() {
            let key = |k: &str| format!("model[{m}].input[{i}].{k}");
            new_name(&raw_input.name, &mut input_names).map_err(|why| invalid(key("name"), &why))?;
            let data = match (raw_input.file, raw_input.values, raw_input.format) {
                (Some(path), None, format) => {
                    InputData::File { path: base.join(path), format: format.unwrap_or(Format::Raw) }
                }
                (None, Some(values), None) if !values.is_empty() => InputData::Values(values),
                (None, Some(_), Some(_)) => return Err(invalid(key("format"), "applies to `file` only")),
                _ => return Err(invalid(key("file"), "give either `file` or a non-empty `values`")),
            };
            let expect = match (raw_input.expect_class, raw_input.expect_value, raw_input.tolerance) {
                (None, None, None) => None,
                (Some(class), None, None) => Some(Expect::Class(class)),
                (None, Some(value), Some(tolerance)) if tolerance >= 0.0 => Some(Expect::Value { value, tolerance }),
                (None, Some(_), _) => {
                    return Err(invalid(key("tolerance"), "`expect_value` needs a non-negative `tolerance`"))
                }
                _ => {
                    return Err(invalid(
                        key("expect_class"),
                        "give `expect_class`, or `expect_value` with `tolerance`, not both",
                    ))
                }
            };
            inputs.push(InputSpec { name: raw_input.name, data, expect });
        }
        let defaults = CaptureSpec::default();
        let capture = CaptureSpec {
            buffers: raw_model.capture_buffers.unwrap_or(defaults.buffers),
            frame_rate_hz: raw_model.frame_rate_hz.unwrap_or(defaults.frame_rate_hz),
        };
        if !(1..=MAX_CAPTURE_BUFFERS).contains(&capture.buffers) {
            return Err(invalid(key("capture_buffers"), &format!("give 1 to {MAX_CAPTURE_BUFFERS} buffers")));
        }
        if !(1..=1000).contains(&capture.frame_rate_hz) {
            return Err(invalid(key("frame_rate_hz"), "give 1 to 1000 frames a second"));
        }
        models.push(Partial {
            name: raw_model.name,
            file: base.join(raw_model.file),
            arena,
            planner: raw_model.planner,
            kernels,
            inputs,
            ota: raw_model.ota,
            capture,
        });
    }
    if models.is_empty() {
        return Err(invalid("model".into(), "no models configured"));
    }
    // Updates name other models of the file: resolve them now that all are read.
    let mut specs = Vec::new();
    for (m, model) in models.iter().enumerate() {
        let ota = ota_spec(model, &models).map_err(|(key, why)| invalid(format!("model[{m}].ota.{key}"), &why))?;
        specs.push(ModelSpec {
            name: model.name.clone(),
            file: model.file.clone(),
            arena: model.arena,
            planner: model.planner,
            kernels: model.kernels,
            inputs: model.inputs.clone(),
            ota,
            capture: model.capture,
            set: None,
        });
    }
    for (i, raw_set) in raw.sets.into_iter().enumerate() {
        let key = |k: &str| format!("set[{i}].{k}");
        new_name(&raw_set.name, &mut seen).map_err(|why| invalid(key("name"), &why))?;
        let set = set_spec(&raw_set, &specs).map_err(|(k, why)| invalid(key(k), &why))?;
        specs.push(set);
    }
    Ok(ModelsFile { file: file.to_owned(), models: specs, tflm: raw.tflm.and_then(|t| t.path).map(|p| base.join(p)) })
}

/// A `[[set]]` of the models in `models`, as the spec it runs under.
fn set_spec(raw: &RawSet, models: &[ModelSpec]) -> Result<ModelSpec, (&'static str, String)> {
    let known = || models.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ");
    if raw.models.len() < 2 || raw.models.len() > MAX_SET_MODELS {
        return Err(("models", format!("name 2 to {MAX_SET_MODELS} models, not {}", raw.models.len())));
    }
    let mut members: Vec<ModelSpec> = Vec::new();
    for name in &raw.models {
        let model = models
            .iter()
            .find(|m| &m.name == name)
            .ok_or_else(|| ("models", format!("`{name}` is not a model of this file ({})", known())))?;
        if members.iter().any(|m| &m.name == name) {
            return Err(("models", format!("`{name}` is named twice")));
        }
        if members.first().is_some_and(|first| first.kernels != model.kernels) {
            return Err((
                "models",
                format!(
                    "`{name}` is built with the {} kernels, `{}` with the {}: one image has one kernel set",
                    model.kernels.name(),
                    members[0].name,
                    members[0].kernels.name()
                ),
            ));
        }
        if members.first().is_some_and(|first| first.planner != model.planner) {
            return Err((
                "models",
                format!(
                    "`{name}` plans with `{}`, `{}` with `{}`: one image has one planner",
                    model.planner, members[0].name, members[0].planner
                ),
            ));
        }
        members.push(model.clone());
    }
    let interrupt = match &raw.interrupt {
        None => None,
        Some(RawInterrupt { model, every_ms }) => {
            let slot = members.iter().position(|m| &m.name == model).ok_or_else(|| {
                ("interrupt.model", format!("`{model}` is not a model of the set ({})", raw.models.join(", ")))
            })?;
            if !(1..=10_000).contains(every_ms) {
                return Err(("interrupt.every_ms", format!("{every_ms}: give 1 to 10000 milliseconds")));
            }
            if raw.arena == Sharing::Shared {
                let others: Vec<&str> = raw.models.iter().filter(|m| *m != model).map(String::as_str).collect();
                return Err((
                    "interrupt",
                    format!(
                        "`{model}` infers from an interrupt over `{}`, and the set shares one arena: sharing an \
                         arena is safe for serial inference only (one interpreter's plan would overwrite the \
                         other's live tensors); use arena = \"separate\"",
                        others.join("`, `")
                    ),
                ));
            }
            Some((slot, *every_ms))
        }
    };
    let arena = match (raw.arena, raw.arena_bytes, raw.concurrent) {
        (Sharing::Shared, _, true) => {
            return Err((
                "arena",
                "models whose inferences may overlap (`concurrent = true`) cannot share an arena: one \
                 interpreter's plan would overwrite the other's live tensors; use \"separate\""
                    .into(),
            ))
        }
        (Sharing::Shared, Some(bytes), false) if bytes >= 16 && bytes.is_multiple_of(16) => Arena::Bytes(bytes),
        (Sharing::Shared, _, false) => {
            return Err(("arena_bytes", "a shared arena needs its size: a multiple of 16, at least 16".into()))
        }
        (Sharing::Separate, None, _) => members[0].arena,
        (Sharing::Separate, Some(_), _) => {
            return Err(("arena_bytes", "separate arenas are each model's own `arena_bytes`".into()))
        }
    };
    Ok(ModelSpec {
        name: raw.name.clone(),
        arena,
        set: Some(SetSpec { models: members.clone(), sharing: raw.arena, interrupt }),
        ..members[0].clone()
    })
}

/// A model as read, before its update is resolved.
struct Partial {
    name: String,
    file: PathBuf,
    arena: Arena,
    planner: Planner,
    kernels: Kernels,
    inputs: Vec<InputSpec>,
    ota: Option<RawOta>,
    capture: CaptureSpec,
}

/// The update for `model`: as configured, or by default the same model one
/// version up, needing exactly the arena it runs in.
fn ota_spec(model: &Partial, all: &[Partial]) -> Result<OtaSpec, (&'static str, String)> {
    let default = RawOta {
        model: model.name.clone(),
        version: None,
        min_arena_bytes: None,
        max_arena_bytes: None,
        min_free_heap_bytes: None,
        expect: OtaOutcome::Accepted,
    };
    let raw = model.ota.as_ref().unwrap_or(&default);
    let target = all.iter().find(|m| m.name == raw.model).ok_or_else(|| {
        let known: Vec<_> = all.iter().map(|m| m.name.as_str()).collect();
        ("model", format!("`{}` is not a model of this file ({})", raw.model, known.join(", ")))
    })?;
    Ok(OtaSpec {
        model: target.name.clone(),
        file: target.file.clone(),
        input: target.inputs[0].clone(),
        version: raw.version.unwrap_or(2),
        min_arena_bytes: raw.min_arena_bytes,
        max_arena_bytes: raw.max_arena_bytes,
        min_free_heap_bytes: raw.min_free_heap_bytes.unwrap_or(0),
        expect: raw.expect,
    })
}

/// Keeps the models named in `names` (all when empty), in the order of the file.
pub fn select(models: Vec<ModelSpec>, names: &[String], file: &Path) -> Result<Vec<ModelSpec>, ModelsError> {
    for name in names {
        if !models.iter().any(|m| &m.name == name) {
            return Err(ModelsError::Unknown {
                name: name.clone(),
                file: file.to_owned(),
                available: models.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", "),
            });
        }
    }
    Ok(models.into_iter().filter(|m| names.is_empty() || names.contains(&m.name)).collect())
}

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

fn read_tflite(model: &str, path: &Path) -> Result<(Vec<u8>, tflite::Model), ModelsError> {
    let bytes = std::fs::read(path).map_err(|source| ModelsError::Read {
        model: model.to_owned(),
        path: path.to_owned(),
        source,
    })?;
    let parsed = tflite::read(&bytes).map_err(|e| not_tflite(model, path, e))?;
    Ok((bytes, parsed))
}

fn not_tflite(model: &str, path: &Path, e: tflite::ReadError) -> ModelsError {
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

    /// The arena to build for `board` and a TFLM of generation `tflm`: as
    /// configured, or for "auto" the analyzer's suggestion for the board.
    /// CMSIS-NN's kernels need a Cortex-M board.
    pub fn arena_bytes(&self, board: &Board, tflm: Generation) -> Result<u32, ModelsError> {
        if self.spec.kernels == Kernels::CmsisNn && board.tflm_arch.is_none() {
            return Err(ModelsError::Kernels {
                model: self.spec.name.clone(),
                kernels: self.spec.kernels.name(),
                why: format!("board `{}` is a host; CMSIS-NN's kernels are built for a Cortex-M core", board.name),
            });
        }
        if self.spec.set.as_ref().is_some_and(|set| set.sharing == Sharing::Separate) {
            return self.residents.iter().map(|m| m.arena_bytes(board, tflm)).sum();
        }
        match self.spec.arena {
            Arena::Bytes(bytes) => Ok(bytes),
            Arena::Auto => {
                let kernels = KernelPath::of(self.spec.kernels, board.tflm_arch.as_deref());
                let analysis = Analysis::of(&self.spec.name, &self.parsed, tflm, kernels, self.spec.planner)
                    .map_err(|e| not_tflite(&self.spec.name, &self.spec.file, e))?;
                let fit = fit::fit(&analysis, board)
                    .map_err(|source| ModelsError::Auto { model: self.spec.name.clone(), source })?;
                Ok(fit.suggested_arena_bytes as u32)
            }
        }
    }

    /// This model with its arena resolved for `board`, so that "auto" is
    /// analysed once per board rather than by every step that needs the size.
    pub fn sized_for(&self, board: &Board, tflm: Generation) -> Result<Model, ModelsError> {
        let bytes = self.arena_bytes(board, tflm)?;
        let source = (self.spec.arena == Arena::Auto && self.spec.set.is_none()).then(|| {
            format!(
                "auto: the predicted least arena plus the {}% margin of board `{}`",
                board.budget.safety_margin_percent, board.name
            )
        });
        let residents = self.residents.iter().map(|m| m.sized_for(board, tflm)).collect::<Result<_, _>>()?;
        Ok(Model { residents, ..self.with_arena(bytes, source) })
    }

    /// This model with an arena of `bytes`, sized as `source` says.
    pub fn with_arena(&self, bytes: u32, source: Option<String>) -> Model {
        Model {
            spec: ModelSpec { arena: Arena::Bytes(bytes), ..self.spec.clone() },
            arena_source: source,
            ..self.clone()
        }
    }

    /// This model with `extra` bytes more in each of its arenas (a set's
    /// models' own arenas too).
    pub fn with_room(&self, extra: u32) -> Model {
        let arena = match self.spec.arena {
            Arena::Bytes(bytes) => Arena::Bytes(bytes + extra),
            Arena::Auto => Arena::Auto,
        };
        let residents = self.residents.iter().map(|m| m.with_room(extra)).collect();
        Model { spec: ModelSpec { arena, ..self.spec.clone() }, residents, ..self.clone() }
    }

    /// The least arena the analyzer predicts for the update this model
    /// receives, on `board` with a TFLM of generation `tflm` and the
    /// model's kernels and planner: the minimum its package carries unless
    /// the models file gives one. None where it is not predicted.
    pub fn update_least_arena(&self, board: &Board, tflm: Generation) -> Option<u32> {
        let kernels = KernelPath::of(self.spec.kernels, board.tflm_arch.as_deref());
        let analysis =
            Analysis::of(&self.spec.ota.model, &self.update.parsed, tflm, kernels, self.spec.planner).ok()?;
        fit::predicts_for(board).then_some(analysis.predicted_least_arena_bytes? as u32)
    }
}

impl InputSpec {
    /// The bytes to copy into `model`'s (first) input tensor: a file as it
    /// is (or converted from big-endian floats), values as float32 or,
    /// for a quantized tensor, quantized with its scale and zero point.
    /// They must fill the tensor exactly.
    fn bytes(&self, model_name: &str, model: &tflite::Model) -> Result<Vec<u8>, ModelsError> {
        let invalid = |why: String| ModelsError::Input { model: model_name.to_owned(), input: self.name.clone(), why };
        let tensor = model
            .subgraphs
            .first()
            .and_then(|g| g.inputs.first().and_then(|&i| g.tensors.get(usize::try_from(i).ok()?)))
            .ok_or_else(|| invalid("the model has no input tensor".into()))?;
        let bytes = match &self.data {
            InputData::Values(values) => quantized(values, tensor).map_err(invalid)?,
            InputData::File { path, format } => {
                let bytes = std::fs::read(path).map_err(|source| ModelsError::Read {
                    model: model_name.to_owned(),
                    path: path.clone(),
                    source,
                })?;
                match format {
                    Format::Raw => bytes,
                    Format::F32Be if bytes.len() % 4 != 0 => {
                        return Err(invalid(format!(
                            "{}: {} bytes is not a whole number of f32 values",
                            path.display(),
                            bytes.len()
                        )))
                    }
                    Format::F32Be => bytes
                        .chunks_exact(4)
                        .flat_map(|c| f32::from_be_bytes(c.try_into().unwrap()).to_le_bytes())
                        .collect(),
                }
            }
        };
        let takes = tensor.bytes();
        if takes != Some(bytes.len()) {
            return Err(invalid(format!(
                "{} bytes, but the input tensor `{}` ({} {:?}) takes {}",
                bytes.len(),
                tensor.name,
                tflite::type_name(tensor.kind),
                tensor.shape,
                takes.map_or_else(|| "an unknown size".into(), |n| n.to_string())
            )));
        }
        Ok(bytes)
    }
}

/// `values` as `tensor`'s elements: float32 as they are; bool as 1 for
/// any value but 0; int32 as whole numbers (shapes, indices); int8, uint8
/// and int16 quantized as TFLite's QUANTIZE operator does,
/// `round(v / scale) + zero_point` clamped to the type's range.
fn quantized(values: &[f32], tensor: &tflite::Tensor) -> Result<Vec<u8>, String> {
    let (range, width) = match tflite::type_name(tensor.kind) {
        "float32" => return Ok(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        "bool" => return Ok(values.iter().map(|&v| u8::from(v != 0.0)).collect()),
        "int32" => {
            if let Some(v) = values.iter().find(|v| v.fract() != 0.0 || v.abs() > 16_777_216.0) {
                return Err(format!("{v} is not a whole number an int32 input tensor takes exactly"));
            }
            return Ok(values.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect());
        }
        "int8" => ((-128.0, 127.0), 1),
        "uint8" => ((0.0, 255.0), 1),
        "int16" => ((-32768.0, 32767.0), 2),
        other => {
            return Err(format!("`values` cannot fill an input tensor of type {other}; give a `file` of its bytes"))
        }
    };
    let q = &tensor.quantization;
    let (Some(&scale), Some(&zero)) = (q.scale.first(), q.zero_point.first()) else {
        return Err(format!(
            "the {} input tensor `{}` has no quantization to apply to `values`",
            tflite::type_name(tensor.kind),
            tensor.name
        ));
    };
    Ok(values
        .iter()
        .flat_map(|v| {
            let level = ((v / scale).round() + zero as f32).clamp(range.0, range.1) as i32;
            level.to_le_bytes().into_iter().take(width)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Vec<ModelSpec>, ModelsError> {
        load_file(text).map(|f| f.models)
    }

    fn load_file(text: &str) -> Result<ModelsFile, ModelsError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hil.toml");
        std::fs::write(&file, text).unwrap();
        load(&file)
    }

    const ONE: &str = r#"
[[model]]
name = "m"
file = "m.tflite"
arena_bytes = 1024
[[model.input]]
name = "x"
values = [1.0, 2.0]
expect_value = 0.5
tolerance = 0.1
[[model.input]]
name = "img"
file = "img.data"
expect_class = 2
"#;

    #[test]
    fn the_repository_models_file_loads() {
        let ws = crate::Workspace::from_source();
        let file = load(&ws.models_file()).unwrap();
        let names: Vec<_> = file.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["hello_world", "micro_speech", "magic_wand", "person_detection"]);
        assert_eq!(file.tflm, None, "the repository's models run on the bundled TFLM");
        for m in &file.models {
            let model = m.read(&Runtime::bundled()).unwrap();
            assert_eq!(model.inputs.len(), m.inputs.len());
        }
    }

    /// A model whose one input tensor is `x`: `kind`, shape [1, 3].
    fn one_input(kind: u8, scale: Vec<f32>, zero_point: Vec<i64>) -> tflite::Model {
        let quantization = tflite::Quantization { scale, zero_point, dimension: 0 };
        let x =
            tflite::Tensor { name: "x".into(), shape: vec![1, 3], kind, buffer: 0, is_variable: false, quantization };
        let graph = tflite::Subgraph { tensors: vec![x], inputs: vec![0], outputs: vec![0], operators: vec![] };
        tflite::Model {
            version: 3,
            description: None,
            metadata: vec![],
            operator_codes: vec![],
            subgraphs: vec![graph],
            buffers: vec![0],
            offline_plan: None,
        }
    }

    #[test]
    fn values_are_quantized_for_the_input_tensor_and_must_fill_it() {
        let values = |v: &[f32]| InputSpec { name: "v".into(), data: InputData::Values(v.to_vec()), expect: None };
        let (float32, int16, int8, int32, boolean) = (0, 7, 9, 2, 6);
        let three = values(&[1.0, -100.0, 100.0]);
        assert_eq!(
            three.bytes("m", &one_input(float32, vec![], vec![])).unwrap(),
            [1.0f32, -100.0, 100.0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()
        );
        // round(v / 0.5) - 10, clamped: -8, -128, 127.
        assert_eq!(three.bytes("m", &one_input(int8, vec![0.5], vec![-10])).unwrap(), [0xf8, 0x80, 0x7f]);
        assert_eq!(three.bytes("m", &one_input(boolean, vec![], vec![])).unwrap(), [1, 1, 1]);
        assert_eq!(values(&[0.0, 2.0, 0.0]).bytes("m", &one_input(boolean, vec![], vec![])).unwrap(), [0, 1, 0]);
        // 2, -200, 200 as little-endian int16.
        assert_eq!(
            three.bytes("m", &one_input(int16, vec![0.5], vec![0])).unwrap(),
            [2i16, -200, 200].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()
        );
        let error = |input: &InputSpec, model| input.bytes("m", &model).unwrap_err().to_string();
        assert_eq!(
            error(&values(&[1.0]), one_input(int8, vec![0.5], vec![0])),
            "model `m`: input `v`: 1 bytes, but the input tensor `x` (int8 [1, 3]) takes 3"
        );
        assert_eq!(
            error(&three, one_input(int8, vec![], vec![])),
            "model `m`: input `v`: the int8 input tensor `x` has no quantization to apply to `values`"
        );
        assert_eq!(
            three.bytes("m", &one_input(int32, vec![], vec![])).unwrap(),
            [1i32, -100, 100].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()
        );
        assert_eq!(
            error(&values(&[1.0, 2.5, 3.0]), one_input(int32, vec![], vec![])),
            "model `m`: input `v`: 2.5 is not a whole number an int32 input tensor takes exactly"
        );
        assert_eq!(
            error(&three, one_input(4, vec![], vec![])),
            "model `m`: input `v`: `values` cannot fill an input tensor of type int64; give a `file` of its bytes"
        );
    }

    #[test]
    fn auto_sizes_the_arena_for_each_32_bit_board() {
        let ws = crate::Workspace::from_source();
        let hello = ws.root().join("firmware/models/hello_world.tflite");
        // hello_world takes one float: the first input only, with one value.
        let text = ONE.split("[[model.input]]\nname = \"img\"").next().unwrap();
        let text = text
            .replace("values = [1.0, 2.0]", "values = [1.0]")
            .replace("arena_bytes = 1024", "arena_bytes = \"auto\"")
            .replace("file = \"m.tflite\"", &format!("file = {:?}", hello.display().to_string()));
        let spec = &load_text(&text).unwrap()[0];
        assert_eq!(spec.arena, Arena::Auto);
        let board = |name| Board::load(&ws, name).unwrap();
        let parsed = tflite::read(&std::fs::read(&hello).unwrap()).unwrap();
        let analysis =
            Analysis::of("m", &parsed, Generation::Tfmicro2020, KernelPath::Reference, Planner::Greedy).unwrap();
        let model = spec.read(&Runtime::bundled()).unwrap();
        let m7 = model.arena_bytes(&board("qemu-m7"), Generation::Tfmicro2020).unwrap();
        assert_eq!(m7 as usize, fit::fit(&analysis, &board("qemu-m7")).unwrap().suggested_arena_bytes);
        assert!(m7 as usize > analysis.predicted_least_arena_bytes.unwrap() && m7.is_multiple_of(16), "{m7}");
        let host = model.arena_bytes(&board("host"), Generation::Tfmicro2020).unwrap_err().to_string();
        assert!(host.contains("model `m`") && host.contains("x86_64"), "{host}");
        assert!(
            host.ends_with(
                "measures it in a first boot (not `--build-only`, and not for a model of a set), or give `arena_bytes`"
            ),
            "{host}"
        );
        // Today's TFLM has a least arena of its own, predicted as well.
        let today = Analysis::of("m", &parsed, Generation::Current, KernelPath::Reference, Planner::Greedy).unwrap();
        let current = model.arena_bytes(&board("qemu-m7"), Generation::Current).unwrap();
        assert_eq!(current as usize, fit::fit(&today, &board("qemu-m7")).unwrap().suggested_arena_bytes);
        assert_ne!(today.predicted_least_arena_bytes, analysis.predicted_least_arena_bytes);
    }

    #[test]
    fn inputs_and_expectations_parse() {
        let models = load_text(ONE).unwrap();
        let inputs = &models[0].inputs;
        assert_eq!(inputs[0].data, InputData::Values(vec![1.0, 2.0]));
        assert_eq!(inputs[0].expect, Some(Expect::Value { value: 0.5, tolerance: 0.1 }));
        assert_eq!(inputs[1].expect, Some(Expect::Class(2)));
        assert!(matches!(&inputs[1].data, InputData::File { format: Format::Raw, .. }));
    }

    #[test]
    fn bad_configs_name_the_key() {
        let cases = [
            (ONE.replace("name = \"m\"", "name = \"M!\""), "model[0].name"),
            (ONE.replace("tolerance = 0.1\n", ""), "model[0].input[0].tolerance"),
            (ONE.replace("expect_class = 2", "expect_class = 2\nexpect_value = 1.0"), "model[0].input[1].expect_class"),
            (ONE.replace("values = [1.0, 2.0]", ""), "model[0].input[0].file"),
            (ONE.replace("name = \"img\"", "name = \"x\""), "model[0].input[1].name"),
            (ONE.replace("arena_bytes = 1024", "arena_bytes = 1024\nsize = 3"), "unknown field `size`"),
            (ONE.replace("arena_bytes = 1024", "arena_bytes = -1"), "model[0].arena_bytes"),
            (
                ONE.replace("arena_bytes = 1024", "arena_bytes = 1000"),
                "model[0].arena_bytes`: must be a multiple of 16",
            ),
            (ONE.replace("arena_bytes = 1024", "arena_bytes = \"big\""), "`big`: give bytes or \"auto\""),
            (format!("{ONE}{ONE}"), "`m` is named twice"),
            (ONE.replace("arena_bytes = 1024", "arena_bytes = 1024\nplanner = \"best\""), "model[0].planner"),
        ];
        for (text, expected) in cases {
            let err = load_text(&text).unwrap_err().to_string();
            assert!(err.contains("hil.toml") && err.contains(expected), "{expected}: {err}");
        }
    }

    /// `planner` parses (greedy when absent); a planner other than greedy
    /// is refused on the bundled TFLM, naming the model, the planner and the
    /// runtime, before anything is built.
    #[test]
    fn a_planner_other_than_greedy_needs_a_current_tflm() {
        assert_eq!(load_text(ONE).unwrap()[0].planner, Planner::Greedy);
        let hello = crate::Workspace::from_source().root().join("firmware/models/hello_world.tflite");
        let text = ONE.split("[[model.input]]\nname = \"img\"").next().unwrap();
        for planner in [Planner::Linear, Planner::Offline] {
            let text = text
                .replace("values = [1.0, 2.0]", "values = [1.0]")
                .replace("arena_bytes = 1024", &format!("arena_bytes = 1024\nplanner = \"{planner}\""))
                .replace("file = \"m.tflite\"", &format!("file = {:?}", hello.display().to_string()));
            let spec = &load_text(&text).unwrap()[0];
            assert_eq!(spec.planner, planner);
            let err = spec.read(&Runtime::bundled()).unwrap_err().to_string();
            assert!(err.starts_with(&format!("model `m`: `planner = \"{planner}\"` needs a current TFLM")), "{err}");
            assert!(err.contains("bundled"), "{err}");
        }
    }

    /// Two models (`m` and `n`) and a set `s` with the keys `set`.
    fn with_set(set: &str) -> String {
        let n = ONE.replace("name = \"m\"", "name = \"n\"");
        format!("{ONE}{n}[[set]]\nname = \"s\"\n{set}\n")
    }

    /// A `[[set]]` names models of the file and how they hold their arenas;
    /// it runs under its own name with its first model's inputs. What makes
    /// no sense is refused naming the key: models sharing an arena whose
    /// inferences may overlap (one plan would overwrite the other's live
    /// tensors), a shared arena without a size, separate arenas given one,
    /// an unknown or repeated model, one model, or two planners in one image.
    #[test]
    fn sets_are_parsed_and_unsafe_sharing_is_refused() {
        let models = load_text(&with_set("models = [\"n\", \"m\"]\narena = \"shared\"\narena_bytes = 4096")).unwrap();
        let set = &models[2];
        assert_eq!((set.name.as_str(), set.arena, set.inputs.len()), ("s", Arena::Bytes(4096), 2));
        let spec = set.set.as_ref().unwrap();
        assert_eq!(spec.sharing, Sharing::Shared);
        assert_eq!(spec.models.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["n", "m"]);
        let separate = load_text(&with_set("models = [\"m\", \"n\"]\narena = \"separate\"")).unwrap();
        assert_eq!(separate[2].set.as_ref().unwrap().sharing, Sharing::Separate);
        assert_eq!(separate[2].set.as_ref().unwrap().interrupt, None);
        let preempting =
            with_set("models = [\"m\", \"n\"]\narena = \"separate\"\ninterrupt = { model = \"n\", every_ms = 20 }");
        assert_eq!(load_text(&preempting).unwrap()[2].set.as_ref().unwrap().interrupt, Some((1, 20)));

        let cases = [
            (
                "models = [\"m\", \"n\"]\narena = \"shared\"\narena_bytes = 4096\nconcurrent = true",
                "set[0].arena`: models whose inferences may overlap",
            ),
            ("models = [\"m\", \"n\"]\narena = \"shared\"", "set[0].arena_bytes`: a shared arena needs its size"),
            ("models = [\"m\", \"n\"]\narena = \"separate\"\narena_bytes = 64", "separate arenas are each model's own"),
            ("models = [\"m\", \"x\"]\narena = \"separate\"", "`x` is not a model of this file (m, n)"),
            ("models = [\"m\", \"m\"]\narena = \"separate\"", "`m` is named twice"),
            ("models = [\"m\"]\narena = \"separate\"", "set[0].models`: name 2 to 256 models, not 1"),
            ("models = [\"m\", \"n\"]\narena = \"both\"", "set[0].arena"),
            (
                "models = [\"m\", \"n\"]\narena = \"shared\"\narena_bytes = 4096\ninterrupt = { model = \"n\", every_ms = 20 }",
                "set[0].interrupt`: `n` infers from an interrupt over `m`, and the set shares one arena: sharing an \
                 arena is safe for serial inference only",
            ),
            (
                "models = [\"m\", \"n\"]\narena = \"separate\"\ninterrupt = { model = \"x\", every_ms = 20 }",
                "set[0].interrupt.model`: `x` is not a model of the set (m, n)",
            ),
            (
                "models = [\"m\", \"n\"]\narena = \"separate\"\ninterrupt = { model = \"n\", every_ms = 0 }",
                "set[0].interrupt.every_ms`: 0: give 1 to 10000 milliseconds",
            ),
        ];
        for (set, expected) in cases {
            let err = load_text(&with_set(set)).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
        }
        let linear = with_set("models = [\"m\", \"n\"]\narena = \"separate\"").replacen(
            "arena_bytes = 1024",
            "arena_bytes = 1024\nplanner = \"linear\"",
            1,
        );
        let err = load_text(&linear).unwrap_err().to_string();
        assert!(err.contains("one image has one planner"), "{err}");
        let clash = with_set("models = [\"m\", \"n\"]\narena = \"separate\"").replace("name = \"s\"", "name = \"m\"");
        assert!(load_text(&clash).unwrap_err().to_string().contains("`m` is named twice"));
    }

    /// Sharing an arena needs today's TFLM: on the bundled one the set is
    /// refused before anything is built; separate arenas work on both.
    #[test]
    fn a_shared_arena_needs_a_current_tflm() {
        let hello = crate::Workspace::from_source().root().join("firmware/models/hello_world.tflite");
        let text = ONE.split("[[model.input]]\nname = \"img\"").next().unwrap();
        let text = text
            .replace("values = [1.0, 2.0]", "values = [1.0]")
            .replace("file = \"m.tflite\"", &format!("file = {:?}", hello.display().to_string()));
        let both = format!("{text}{}", text.replace("name = \"m\"", "name = \"n\""));
        let shared =
            format!("{both}[[set]]\nname = \"s\"\nmodels = [\"m\", \"n\"]\narena = \"shared\"\narena_bytes = 4096\n");
        let set = &load_text(&shared).unwrap()[2];
        let err = set.read(&Runtime::bundled()).unwrap_err().to_string();
        assert!(err.starts_with("set `s`: `arena = \"shared\"` needs a current TFLM"), "{err}");
        let separate = shared.replace("arena = \"shared\"\narena_bytes = 4096", "arena = \"separate\"");
        let model = load_text(&separate).unwrap()[2].read(&Runtime::bundled()).unwrap();
        assert_eq!(model.residents.len(), 2);
        let board = Board::load(&crate::Workspace::from_source(), "qemu-m7").unwrap();
        assert_eq!(model.arena_bytes(&board, Generation::Tfmicro2020).unwrap(), 2 * 1024);
    }

    #[test]
    fn unknown_model_names_list_the_known_ones() {
        let models = load_text(ONE).unwrap();
        let err = select(models, &["other".into()], Path::new("hil.toml")).unwrap_err().to_string();
        assert_eq!(err, "no model `other` in hil.toml (models: m)");
    }

    #[test]
    fn a_file_that_is_not_tflite_is_refused_before_building() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.tflite");
        std::fs::write(&path, b"GIF89a not a model").unwrap();
        let ota = OtaSpec {
            model: "bad".into(),
            file: path.clone(),
            input: InputSpec { name: "x".into(), data: InputData::Values(vec![0.0]), expect: None },
            version: 2,
            min_arena_bytes: Some(64),
            max_arena_bytes: Some(64),
            min_free_heap_bytes: 0,
            expect: OtaOutcome::Accepted,
        };
        let spec = ModelSpec {
            name: "bad".into(),
            file: path,
            arena: Arena::Bytes(64),
            planner: Planner::Greedy,
            kernels: Kernels::Reference,
            inputs: vec![],
            ota,
            capture: CaptureSpec::default(),
            set: None,
        };
        let err = spec.read(&Runtime::bundled()).unwrap_err().to_string();
        assert!(err.starts_with("model `bad`: ") && err.contains("not a TFLite flatbuffer"), "{err}");
    }

    #[test]
    fn the_tflm_section_names_a_path_relative_to_the_file() {
        let file = load_file(&format!("{ONE}\n[tflm]\npath = \"../tflite-micro\"\n")).unwrap();
        assert!(file.tflm.unwrap().ends_with("../tflite-micro"));
        let err = load_file(&format!("{ONE}\n[tflm]\npath = \"x\"\ncommit = 1\n")).unwrap_err().to_string();
        assert!(err.contains("unknown field `commit`"), "{err}");
    }
}
