//! `hil.toml` as it is written: its schema, read strictly, each model
//! and set checked against the others.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::analysis::Sharing;
use crate::model::planner::Planner;
use crate::strict_toml::{self};
use crate::tflm::tree::Kernels;

use super::{
    kernels_named, Arena, CaptureSpec, Expect, Format, InputData, InputSpec, ModelSpec, ModelsError, ModelsFile,
    OtaOutcome, OtaSpec, SetSpec, MAX_CAPTURE_BUFFERS,
};

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
