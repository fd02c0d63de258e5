//! `hil`: build the firmware for each board and model, run each scenario,
//! and turn what came back into measurement records.

use std::time::Duration;

use hilmem_protocol::exit;
use serde::{Deserialize, Serialize};

use crate::board::{Board, BoardError, Runner};
use crate::elf::{self, ElfError, ImageSizes};
use crate::firmware::{self, BuildError, Firmware};
use crate::fsutil::write_atomic;
use crate::measurement::{check_outputs, metric, Measurement, SINGLE_FRAME};
use crate::models::{self, ModelSpec, ModelsError};
use crate::qemu::{self, Ending, QemuError, Run};
use crate::Workspace;

/// Lines of firmware output shown when a run goes wrong.
const TAIL_LINES: usize = 12;

/// Errors in the configuration, found before anything is built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Models(#[from] ModelsError),
}

/// Why one board, model and scenario produced no measurement.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Qemu(#[from] QemuError),
    #[error("{context}: {}: {detail} (stage `{stage}`, status {code})", stage_meaning(stage))]
    Firmware { context: String, stage: String, code: i32, detail: String },
    #[error("{context}: {what}\n{tail}")]
    Target { context: String, what: String, tail: String },
    #[error("{context}: corrupt frame on the wire ({error}): {line}")]
    Wire { context: String, line: String, error: String },
}

fn stage_meaning(stage: &str) -> &'static str {
    match stage {
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
    pub board: String,
    /// The models file (normally `hil.toml` at the root).
    pub models_file: std::path::PathBuf,
    /// Models to run, by name; all of the models file when empty.
    pub models: Vec<String>,
    /// Longest time one scenario may run.
    pub timeout: Duration,
}

/// Something worth telling the user while a run goes on.
#[derive(Debug)]
pub enum Event<'a> {
    Building {
        board: &'a str,
        model: &'a str,
        index: usize,
        total: usize,
    },
    /// A line of the build tool's output.
    BuildOutput(&'a str),
    Running {
        board: &'a str,
        model: &'a str,
        scenario: &'a str,
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

/// Everything a run produced; written as JSON under `target/hilmem/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Version of this file's layout.
    pub format: u32,
    pub records: Vec<Measurement>,
    pub failed: Vec<Failed>,
}

pub const RESULTS_FORMAT: u32 = 1;

impl Results {
    pub fn all_checks_passed(&self) -> bool {
        self.records.iter().all(Measurement::passed)
    }
}

/// Runs every selected model's scenarios on the board.
pub fn run(ws: &Workspace, options: &Options, progress: &mut dyn FnMut(Event)) -> Result<Results, ConfigError> {
    let board = Board::load(ws, &options.board)?;
    let file = &options.models_file;
    let models = models::select(models::load(file)?, &options.models, file)?;
    let mut results = Results { format: RESULTS_FORMAT, records: Vec::new(), failed: Vec::new() };
    for (index, model) in models.iter().enumerate() {
        progress(Event::Building { board: &board.name, model: &model.name, index, total: models.len() });
        let scenario = SINGLE_FRAME;
        match measure(ws, &board, model, scenario, options.timeout, progress) {
            Ok(record) => results.records.push(record),
            Err(error) => results.failed.push(Failed {
                board: board.name.clone(),
                model: model.name.clone(),
                scenario: scenario.into(),
                error: error.to_string(),
            }),
        }
    }
    Ok(results)
}

/// Writes `results.json` into the results directory and returns its path.
pub fn save(ws: &Workspace, results: &Results) -> std::io::Result<std::path::PathBuf> {
    let path = ws.results_dir().join("results.json");
    write_atomic(&path, crate::report::json(results).as_bytes())?;
    Ok(path)
}

fn measure(
    ws: &Workspace,
    board: &Board,
    model: &ModelSpec,
    scenario: &str,
    timeout: Duration,
    progress: &mut dyn FnMut(Event),
) -> Result<Measurement, RunError> {
    let firmware = firmware::build(ws, board, model, &mut |line| progress(Event::BuildOutput(line)))?;
    let sizes = elf::sizes(&firmware.elf, &board.memory)?;
    progress(Event::Running { board: &board.name, model: &model.name, scenario });
    let run = execute(board, &firmware, scenario, timeout)?;
    record(board, model, &firmware, sizes, scenario, &run)
}

/// Deploys and runs one scenario of a built image on the board.
pub fn execute(board: &Board, firmware: &Firmware, scenario: &str, timeout: Duration) -> Result<Run, RunError> {
    match &board.runner {
        Runner::Qemu { machine } => Ok(qemu::run(machine, &firmware.elf, scenario, timeout)?),
    }
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
    let context = format!("board `{}`, model `{}`, scenario `{scenario}`", board.name, model.name);
    let session = &run.session;
    let tail = || {
        let mut lines = session.tail(TAIL_LINES);
        lines.extend(run.stderr.lines().map(|l| format!("qemu: {l}")));
        if lines.is_empty() {
            "(the firmware printed nothing)".to_owned()
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
    match run.ending {
        Ending::TimedOut(limit) => {
            return Err(target(format!("no result within {} s; the target was stopped", limit.as_secs_f32())))
        }
        Ending::Killed => return Err(target("the emulator was killed".into())),
        Ending::Exited(exit::PANIC) => return Err(target("the firmware panicked".into())),
        Ending::Exited(exit::HARD_FAULT) => return Err(target("the firmware hit a HardFault".into())),
        Ending::Exited(_) => {}
    }
    if let Some(f) = &session.failure {
        return Err(RunError::Firmware { context, stage: f.stage.clone(), code: f.code, detail: f.detail.clone() });
    }
    let Some(hello) = &session.hello else {
        return Err(target("the firmware never said hello".into()));
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
        return Err(target(format!("the run did not finish cleanly ({:?})", run.ending)));
    }

    let mut metrics = std::collections::BTreeMap::new();
    metrics.insert(metric::MODEL_BYTES.into(), firmware.model_bytes as i64);
    metrics.insert(metric::FLASH_BYTES.into(), sizes.flash_bytes as i64);
    metrics.insert(metric::STATIC_RAM_BYTES.into(), sizes.static_ram_bytes as i64);
    metrics.insert(metric::ARENA_CAPACITY_BYTES.into(), sizes.arena_capacity_bytes as i64);
    for name in metric::FROM_FIRMWARE {
        let value = session.metrics.get(name).ok_or_else(|| target(format!("the firmware did not report `{name}`")))?;
        metrics.insert(name.into(), *value);
    }
    for (name, prefix) in [(metric::ARENA_HEAD_BYTES, "Head usage: "), (metric::ARENA_TAIL_BYTES, "Tail usage: ")] {
        if let Some(value) = tflm_reported(&session.log, prefix) {
            metrics.insert(name.into(), value);
        }
    }
    Ok(Measurement {
        board: board.name.clone(),
        model: model.name.clone(),
        scenario: scenario.into(),
        metrics,
        checks: check_outputs(model, &session.outputs),
    })
}

/// A figure TFLM printed as `<prefix><n> bytes` (the last one, if several).
fn tflm_reported(log: &[String], prefix: &str) -> Option<i64> {
    log.iter().rev().find_map(|line| line.strip_prefix(prefix)?.strip_suffix(" bytes")?.parse().ok())
}
