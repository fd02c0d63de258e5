//! The model set: `hil.toml` at the repository root names each model, its
//! arena size and its inputs, and what the model should answer for them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::fit;
use crate::config::runtime::{Choice, Runtime, RuntimeError};
use crate::model::analysis::Sharing;
use crate::model::planner::Planner;
use crate::strict_toml::TomlError;
use crate::tflm::tree::Kernels;

mod inputs;
mod read;
mod schema;
mod sizing;

pub use read::{Model, Update};
pub use schema::{load, MAX_SET_MODELS};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::board::Board;
    use crate::model::analysis::Analysis;
    use crate::model::tail::cmsis_nn::KernelPath;
    use crate::model::tflite;
    use crate::tflm::tree::Generation;

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
