//! `hil`: build the firmware for each board and model, run each scenario,
//! and turn what came back into measurement records. Boards run in parallel.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use hilmem_protocol::{exit, WARM_UP_FRAMES};
use serde::{Deserialize, Serialize};

use crate::analysis::Analysis;
use crate::baseline::Meta;
use crate::board::{self, Board, BoardError};
use crate::elf::{self, ElfError, ImageSizes};
use crate::firmware::{self, BuildError, Firmware, Variant};
use crate::fsutil::write_atomic;
use crate::measurement::{checks, metric, ArenaPrediction, Measurement, DEFAULT_FRAMES, SCENARIOS, SINGLE_FRAME};
use crate::models::{self, ModelSpec, ModelsError};
use crate::runner::{self, Ending, Run, RunOptions, RunnerError};
use crate::{tflite, Workspace};

/// Lines of firmware output shown when a run goes wrong.
const TAIL_LINES: usize = 12;

/// `--board` value that stands for every board that needs no hardware.
pub const ALL_EMULATED: &str = "all-emulated";

/// Errors in the configuration, found before anything is built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Models(#[from] ModelsError),
    #[error("no scenario `{0}` (scenarios: {list})", list = SCENARIOS.join(", "))]
    UnknownScenario(String),
    #[error("the streaming scenarios need more than {min} frames, not {0}", min = WARM_UP_FRAMES)]
    TooFewFrames(u32),
}

/// Why one board, model and scenario produced no measurement.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("{context}: {0}", context = .1)]
    Runner(RunnerError, String),
    #[error("{context}: {}: {detail} (stage `{stage}`, status {code})", stage_meaning(stage))]
    Firmware { context: String, stage: String, code: i32, detail: String },
    #[error("{context}: {what}\n{tail}")]
    Target { context: String, what: String, tail: String },
    #[error("{context}: corrupt frame on the wire ({error}): {line}")]
    Wire { context: String, line: String, error: String },
    #[error("{context}: refusing to deploy {elf}: it was built as `{found}`, expected `{expected}`")]
    WrongImage { context: String, elf: PathBuf, found: String, expected: String },
    #[error("{context}: no image at {elf}; run without --no-build first")]
    NotBuilt { context: String, elf: PathBuf },
    #[error("{context}: no image to run: {error}")]
    Image { context: String, error: String },
}

fn stage_meaning(stage: &str) -> &'static str {
    match stage {
        "board" => "the firmware refused to run on this board",
        "load" => "TFLM could not load the model",
        "input" => "the input could not be fed to the model",
        "invoke" => "inference failed",
        "output" => "the output could not be read",
        "command" => "the firmware refused the harness's command",
        _ => "the firmware stopped",
    }
}

/// Settings of one `hil` run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Board names, or [`ALL_EMULATED`].
    pub boards: Vec<String>,
    /// The models file (normally `hil.toml` at the root).
    pub models_file: PathBuf,
    /// Models to run, by name; all of the models file when empty.
    pub models: Vec<String>,
    /// Scenarios to run, each from a fresh boot.
    pub scenarios: Vec<String>,
    /// Length of the streaming scenarios.
    pub frames: u32,
    /// Longest time one scenario may run; the board profile's when None.
    pub timeout: Option<Duration>,
    /// Build (or check with cargo that the build is current) before running;
    /// when false, run the images of the last build.
    pub build: bool,
    /// Boards run at once.
    pub jobs: usize,
    pub run: RunOptions,
    pub variant: Variant,
    /// Size every model's arena from the analyzer's prediction, as
    /// `arena_bytes = "auto"` would.
    pub arena_auto: bool,
}

impl Options {
    /// All models of `hil.toml` and all scenarios on `boards`, building first,
    /// as many boards at once as there are cores.
    pub fn new(ws: &Workspace, boards: Vec<String>) -> Options {
        Options {
            boards,
            models_file: ws.models_file(),
            models: Vec::new(),
            scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
            frames: DEFAULT_FRAMES,
            timeout: None,
            build: true,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            run: RunOptions::default(),
            variant: Variant::Standard,
            arena_auto: false,
        }
    }
}

/// Something worth telling the user while a run goes on.
#[derive(Debug)]
pub enum Event<'a> {
    Building {
        board: &'a str,
        model: &'a str,
        /// The arena it is built with, and what the board's budget sets
        /// aside for it.
        arena_bytes: u32,
        budget_bytes: u32,
    },
    /// A line of the build tool's output.
    BuildOutput {
        board: &'a str,
        line: &'a str,
    },
    Running {
        board: &'a str,
        model: &'a str,
        scenario: &'a str,
    },
    Finished {
        board: &'a str,
        model: &'a str,
        scenario: &'a str,
        ok: bool,
    },
}

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
    pub rustc: String,
    pub target: String,
    pub arena_bytes: u32,
}

impl Image {
    fn of(board: &Board, model: &ModelSpec, rustc: &str) -> Result<Image, RunError> {
        use sha2::{Digest, Sha256};
        let bytes = model.read().map_err(BuildError::from)?;
        let sha: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        Ok(Image {
            board: board.name.clone(),
            model: model.name.clone(),
            model_sha256: sha,
            tflm: firmware::tflm_source(),
            rustc: rustc.to_owned(),
            target: board.target.clone(),
            arena_bytes: model.arena_bytes(board).map_err(BuildError::from)?,
        })
    }

    /// Baseline metadata for this image, not yet approved by anyone.
    pub fn meta(&self, results: &Results) -> Meta {
        Meta {
            board: self.board.clone(),
            model: self.model.clone(),
            model_sha256: self.model_sha256.clone(),
            tflm: self.tflm.clone(),
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
}

pub const RESULTS_FORMAT: u32 = 1;

impl Results {
    pub fn all_checks_passed(&self) -> bool {
        self.records.iter().all(Measurement::passed)
    }
}

/// The boards `names` stands for, loaded and validated.
pub fn resolve_boards(ws: &Workspace, names: &[String]) -> Result<Vec<Board>, BoardError> {
    let mut boards: Vec<Board> = Vec::new();
    for name in names {
        let more = if name == ALL_EMULATED {
            board::load_all(ws)?.into_iter().filter(Board::is_emulated).collect()
        } else {
            vec![Board::load(ws, name)?]
        };
        for board in more {
            if !boards.iter().any(|b| b.name == board.name) {
                boards.push(board);
            }
        }
    }
    Ok(boards)
}

/// Runs every selected model's scenarios on every board, boards in parallel.
pub fn run(ws: &Workspace, options: &Options, progress: &(dyn Fn(Event) + Sync)) -> Result<Results, ConfigError> {
    let boards = resolve_boards(ws, &options.boards)?;
    let file = &options.models_file;
    let mut models = models::select(models::load(file)?, &options.models, file)?;
    if options.arena_auto {
        models.iter_mut().for_each(|m| m.arena = models::Arena::Auto);
    }

    for scenario in &options.scenarios {
        if !SCENARIOS.contains(&scenario.as_str()) {
            return Err(ConfigError::UnknownScenario(scenario.clone()));
        }
    }
    if options.frames <= WARM_UP_FRAMES {
        return Err(ConfigError::TooFewFrames(options.frames));
    }

    let rustc = firmware::rustc_version(ws);
    let queue = Mutex::new(boards.iter().collect::<VecDeque<_>>());
    let outcomes = Mutex::new(Vec::new());
    let images = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, boards.len().max(1)) {
            scope.spawn(|| loop {
                let Some(board) = queue.lock().unwrap().pop_front() else { break };
                for model in &models {
                    let (image, runs) = measure(ws, board, model, &rustc, options, progress);
                    images.lock().unwrap().extend(image);
                    for (scenario, outcome) in runs {
                        outcomes.lock().unwrap().push((board.name.clone(), model.name.clone(), scenario, outcome));
                    }
                }
            });
        }
    });

    let mut outcomes = outcomes.into_inner().unwrap();
    let rank = |board: &str, model: &str, scenario: &str| {
        (
            boards.iter().position(|b| b.name == board),
            models.iter().position(|m| m.name == model),
            SCENARIOS.iter().position(|s| *s == scenario),
        )
    };
    outcomes.sort_by_key(|(board, model, scenario, _)| rank(board, model, scenario));
    let mut images: Vec<Image> = images.into_inner().unwrap();
    images.sort_by_key(|i| {
        (boards.iter().position(|b| b.name == i.board), models.iter().position(|m| m.name == i.model))
    });
    let mut results = Results {
        format: RESULTS_FORMAT,
        commit: crate::gitrepo::head(ws.root()),
        boards: boards.iter().map(|b| b.name.clone()).collect(),
        images,
        records: Vec::new(),
        failed: Vec::new(),
    };
    for (board, model, scenario, outcome) in outcomes {
        match outcome {
            Ok(record) => results.records.push(record),
            Err(error) => results.failed.push(Failed { board, model, scenario, error: error.to_string() }),
        }
    }
    Ok(results)
}

/// Writes `results.json` into `dir` and returns its path.
pub fn save(dir: &std::path::Path, results: &Results) -> std::io::Result<PathBuf> {
    let path = dir.join("results.json");
    write_atomic(&path, crate::report::json(results).as_bytes())?;
    Ok(path)
}

/// One board and model's image, and each scenario's outcome on it.
type Measured = (Option<Image>, Vec<(String, Result<Measurement, RunError>)>);

/// Builds (or finds) the model's image and runs each scenario on it.
fn measure(
    ws: &Workspace,
    board: &Board,
    model: &ModelSpec,
    rustc: &str,
    options: &Options,
    progress: &(dyn Fn(Event) + Sync),
) -> Measured {
    // The arena is resolved once; every later step reads the number.
    let sized = model.sized_for(board).map_err(|e| RunError::from(BuildError::from(e)));
    let built = sized.and_then(|model| {
        let image = image(ws, board, &model, options, progress)?;
        let info = Image::of(board, &model, rustc)?;
        Ok((model, image, info))
    });
    let scenarios = options.scenarios.iter();
    let (model, (firmware, sizes), info) = match built {
        Ok(built) => built,
        Err(error) => {
            let error = error.to_string();
            let failed = |s: &String| {
                (s.clone(), Err(RunError::Image { context: context(board, model, s), error: error.clone() }))
            };
            return (None, scenarios.map(failed).collect());
        }
    };
    let model = &model;
    let timeout = options.timeout.unwrap_or(board.timeout);
    let runs = scenarios
        .map(|scenario| {
            progress(Event::Running { board: &board.name, model: &model.name, scenario });
            let outcome = execute(board, model, &firmware, scenario, options.frames, timeout, &options.run)
                .and_then(|run| record(board, model, &firmware, sizes, scenario, &run));
            progress(Event::Finished { board: &board.name, model: &model.name, scenario, ok: outcome.is_ok() });
            (scenario.clone(), outcome)
        })
        .collect();
    (Some(info), runs)
}

fn image(
    ws: &Workspace,
    board: &Board,
    model: &ModelSpec,
    options: &Options,
    progress: &(dyn Fn(Event) + Sync),
) -> Result<(Firmware, ImageSizes), RunError> {
    let firmware = if options.build {
        progress(Event::Building {
            board: &board.name,
            model: &model.name,
            arena_bytes: model.arena_bytes(board).map_err(BuildError::from)?,
            budget_bytes: board.budget.tensor_arena_bytes,
        });
        let mut output = |line: &str| progress(Event::BuildOutput { board: &board.name, line });
        firmware::build(ws, board, model, options.variant, &mut output)?
    } else {
        let firmware = firmware::built(ws, board, model)?;
        if !firmware.elf.is_file() {
            return Err(RunError::NotBuilt {
                context: format!("board `{}`, model `{}`", board.name, model.name),
                elf: firmware.elf,
            });
        }
        firmware
    };
    let sizes = elf::sizes(&firmware.elf, &board.layout)?;
    Ok((firmware, sizes))
}

fn context(board: &Board, model: &ModelSpec, scenario: &str) -> String {
    format!("board `{}`, model `{}`, scenario `{scenario}`", board.name, model.name)
}

/// Checks that the image is the one for this board and model, then deploys
/// it and runs one scenario.
pub fn execute(
    board: &Board,
    model: &ModelSpec,
    firmware: &Firmware,
    scenario: &str,
    frames: u32,
    timeout: Duration,
    options: &RunOptions,
) -> Result<Run, RunError> {
    let context = context(board, model, scenario);
    let expected = firmware::identity(&board.name, &model.name);
    let found = elf::identity(&firmware.elf)?;
    if found != expected {
        return Err(RunError::WrongImage { context, elf: firmware.elf.clone(), found, expected });
    }
    let mut target = runner::start(board, &firmware.elf, options).map_err(|e| RunError::Runner(e, context.clone()))?;
    runner::drive(target.as_mut(), scenario, frames, timeout).map_err(|e| RunError::Runner(e, context))
}

/// Turns what a run said into a measurement, or into the reason there is none.
pub fn record(
    board: &Board,
    model: &ModelSpec,
    firmware: &Firmware,
    sizes: ImageSizes,
    scenario: &str,
    run: &Run,
) -> Result<Measurement, RunError> {
    let context = context(board, model, scenario);
    let session = &run.session;
    let tail = || {
        let mut lines = session.tail(TAIL_LINES);
        lines.extend(run.diagnostics.lines().map(|l| format!("runner: {l}")));
        if lines.is_empty() {
            "(the target printed nothing)".to_owned()
        } else {
            format!("last lines from the target:\n  {}", lines.join("\n  "))
        }
    };
    let target = |what: String| RunError::Target { context: context.clone(), what, tail: tail() };

    if let Some(bad) = session.corrupt.first() {
        return Err(RunError::Wire { context, line: bad.line.clone(), error: bad.error.to_string() });
    }
    if let Some(line) = session.unexpected.first() {
        return Err(RunError::Wire { context, line: line.clone(), error: "frame out of sequence".into() });
    }
    match &run.ending {
        Ending::TimedOut(limit) => {
            let expected = if session.hello.is_none() {
                "a Hello frame after boot"
            } else if session.metrics.is_empty() {
                "the scenario's Metric frames after the Run command"
            } else {
                "a Done frame and the firmware's exit"
            };
            return Err(target(format!(
                "no answer within {} s (expected {expected}); the target was stopped",
                limit.as_secs_f32()
            )));
        }
        Ending::Died(how) => return Err(target(format!("the target died: {how}"))),
        Ending::Exited(exit::PANIC) => return Err(target("the firmware panicked".into())),
        Ending::Exited(exit::HARD_FAULT) => return Err(target("the firmware hit a HardFault".into())),
        Ending::Exited(_) => {}
    }
    if let Some(f) = &session.failure {
        return Err(RunError::Firmware { context, stage: f.stage.clone(), code: f.code, detail: f.detail.clone() });
    }
    let Some(hello) = &session.hello else {
        return Err(target("the firmware never said hello (expected a Hello frame after boot)".into()));
    };
    if hello.board != board.name || hello.model != model.name {
        return Err(target(format!("the image is for board `{}`, model `{}`", hello.board, hello.model)));
    }
    if u64::from(hello.arena_capacity) != sizes.arena_capacity_bytes {
        return Err(target(format!(
            "the firmware reports a {} byte arena but its ELF symbol is {} bytes",
            hello.arena_capacity, sizes.arena_capacity_bytes
        )));
    }
    if session.done != Some(true) || run.ending != Ending::Exited(exit::OK) {
        return Err(target(format!("the run did not finish cleanly (expected Done and exit 0, got {:?})", run.ending)));
    }

    let mut metrics = std::collections::BTreeMap::new();
    metrics.insert(metric::MODEL_BYTES.into(), firmware.model_bytes as i64);
    if let Some(flash) = sizes.flash_bytes {
        metrics.insert(metric::FLASH_BYTES.into(), flash as i64);
    }
    metrics.insert(metric::STATIC_RAM_BYTES.into(), sizes.static_ram_bytes as i64);
    metrics.insert(metric::ARENA_CAPACITY_BYTES.into(), sizes.arena_capacity_bytes as i64);
    metrics.insert(metric::POOL_CAPACITY_BYTES.into(), sizes.pool_capacity_bytes as i64);
    let required = metric::FROM_FIRMWARE
        .iter()
        .chain(metric::required_by(scenario))
        .chain(sizes.flash_bytes.is_none().then_some(&metric::RSS_PEAK_BYTES));
    for name in required {
        if !session.metrics.contains_key(*name) {
            return Err(target(format!("the firmware did not report `{name}`")));
        }
    }
    // Everything the firmware reported is part of the record.
    metrics.extend(session.metrics.iter().map(|(name, value)| (name.clone(), *value)));
    for (name, prefix) in [(metric::ARENA_HEAD_BYTES, "Head usage: "), (metric::ARENA_TAIL_BYTES, "Tail usage: ")] {
        if let Some(value) = tflm_reported(&session.log, prefix) {
            metrics.insert(name.into(), value);
        }
    }
    let arena_prediction = (scenario == SINGLE_FRAME && crate::analysis::predicts_for(board))
        .then(|| {
            let analysis = Analysis::of(&model.name, &tflite::read(&model.read().ok()?).ok()?).ok()?;
            Some(ArenaPrediction {
                predicted_bytes: analysis.predicted_arena_bytes as i64,
                measured_bytes: metrics[metric::ARENA_USED_BYTES],
            })
        })
        .flatten();
    Ok(Measurement {
        board: board.name.clone(),
        model: model.name.clone(),
        scenario: scenario.into(),
        metrics,
        notes: session.notes.clone(),
        checks: checks(model, scenario, session),
        arena_prediction,
    })
}

/// A figure TFLM printed as `<prefix><n> bytes` (the last one, if several).
fn tflm_reported(log: &[String], prefix: &str) -> Option<i64> {
    log.iter().rev().find_map(|line| line.strip_prefix(prefix)?.strip_suffix(" bytes")?.parse().ok())
}
