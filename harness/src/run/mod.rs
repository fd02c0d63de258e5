//! The run behind `hil`: for each board (boards in parallel) and model, build
//! the firmware, run each scenario from a fresh boot, and collect the
//! measurement records ([`results::Results`]). Uses [`crate::device`], [`crate::image`],
//! [`crate::config`] and [`crate::model`]; the verdict and the reports read
//! what it produces.

pub mod build;
pub mod measurement;
pub mod record;
pub mod results;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use hilmem_protocol::WARM_UP_FRAMES;

use crate::config::board::{self, Board, BoardError, Runner};
use crate::config::fit;
use crate::config::models::{self, Arena, Model, ModelSpec, ModelsError, ModelsFile};
use crate::config::runtime::{Runtime, RuntimeError};
use crate::device::runner::probe::{self, DryRun, DryRunError, ProbeError};
use crate::device::runner::{self, Run, RunOptions};
use crate::image::elf::{self, ImageSizes};
use crate::image::firmware::{self, BuildError, Firmware, Variant};
use crate::model::analysis::Sharing;
use crate::run::measurement::{runs_for, Measurement, BUILD, DEFAULT_FRAMES};
use crate::run::record::{context, record, tflm_breakdowns, RunError};
use crate::run::results::{Failed, Image, Results, RESULTS_FORMAT};
use crate::tflm::tree::Kernels;
use crate::{gitrepo, timings, Workspace};
use hilmem_protocol::metric;
use hilmem_protocol::scenario::{MULTI_MODEL, SCENARIOS, SELF_TESTS, SINGLE_FRAME};

/// `--board` value that stands for every board that needs no hardware.
pub const ALL_EMULATED: &str = "all-emulated";

/// Errors in the configuration, found before anything is built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Models(#[from] ModelsError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("no scenario `{0}` (scenarios: {list}; self-tests: {tests})", list = SCENARIOS.join(", "), tests = SELF_TESTS.join(", "))]
    UnknownScenario(String),
    #[error("the streaming scenarios need more than {min} frames, not {0}", min = WARM_UP_FRAMES)]
    TooFewFrames(u32),
    #[error("board `{0}` is not deployed through a debug probe: --dry-run is for probe-rs boards")]
    NotDeployed(String),
    #[error("nothing to run: no model or set of {file} runs {scenarios} (the multi-model scenario runs the sets, `[[set]]`, and only them)", file = .0.display(), scenarios = .1.join(", "))]
    NothingToRun(PathBuf, Vec<String>),
}

/// Settings of one `hil` run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The boards, each profile read once ([`resolve_boards`]).
    pub boards: Vec<Board>,
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
    /// `--tflm`: the TFLM to build against (a path, or `bundled`), over
    /// `HILMEM_TFLM_DIR` and the models file's `[tflm] path`.
    pub tflm: Option<String>,
    /// `--kernels`: the kernel set of every model, over the models file's.
    pub kernels: Option<Kernels>,
    /// Runs that failed on the way from the target (a corrupt frame, frames
    /// lost, a board that reset) are run again up to this many times.
    pub retries: u32,
    /// Each scenario runs this many times from fresh boots (at least once).
    pub repeat: u32,
    /// Build the images and make their build records, running nothing.
    pub build_only: bool,
    /// Boards whose debug probe is not attached: their images are built and
    /// recorded as with `build_only`, and nothing is flashed; the others of
    /// the run run as usual.
    pub unattached: Vec<String>,
}

/// The note of a build record whose image was not run.
pub const NOT_RUN: &str = "not_run";

/// The note of a record that took more than one try.
pub const TRIES: &str = "tries";

impl Options {
    /// The models file with `--kernels` applied, and the runtime chosen.
    pub fn load(&self) -> Result<(ModelsFile, Runtime), ConfigError> {
        let mut loaded = models::load(&self.models_file)?;
        if let Some(kernels) = self.kernels {
            loaded = loaded.with_kernels(kernels);
        }
        let runtime = loaded.runtime(self.tflm.clone())?;
        Ok((loaded, runtime))
    }

    /// All models of `hil.toml` and all scenarios on `boards`, building first,
    /// as many boards at once as there are cores.
    pub fn new(ws: &Workspace, boards: Vec<Board>) -> Options {
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
            tflm: None,
            kernels: None,
            retries: 0,
            repeat: 1,
            build_only: false,
            unattached: Vec::new(),
        }
    }

    /// Whether `board`'s images are built and recorded without running.
    pub fn builds_only(&self, board: &Board) -> bool {
        self.build_only || self.unattached.contains(&board.name)
    }
}

/// Something worth telling the user while a run goes on.
#[derive(Debug)]
pub enum Event<'a> {
    /// What the run will do, before it starts: the images it builds (or
    /// finds) and the scenario runs it makes of them.
    Planned {
        images: usize,
        runs: usize,
    },
    Building {
        board: &'a str,
        model: &'a str,
        variant: Variant,
        /// The arena it is built with, and what the board's budget sets
        /// aside for it.
        arena_bytes: u32,
        budget_bytes: u32,
    },
    /// A model's image built (or found) for a board, or not.
    Built {
        board: &'a str,
        model: &'a str,
        ok: bool,
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
    /// A scenario still running, every 10 seconds.
    StillRunning {
        board: &'a str,
        model: &'a str,
        scenario: &'a str,
        elapsed: Duration,
    },
    Finished {
        board: &'a str,
        model: &'a str,
        scenario: &'a str,
        ok: bool,
    },
    /// A planned scenario run that will not be made, and why.
    Skipped {
        board: &'a str,
        model: &'a str,
        scenario: &'a str,
        why: &'a str,
    },
}

/// The boards of `boards` behind a debug probe that is not attached now,
/// each with the probe it looks for: what [`Options::unattached`] takes. The
/// USB bus is looked at only when a board needs a probe.
pub fn unattached(boards: &[Board], options: &RunOptions) -> Result<Vec<(String, String)>, ProbeError> {
    let behind_probes: Vec<(&Board, &Option<String>)> = boards
        .iter()
        .filter_map(|b| match &b.runner {
            Runner::ProbeRs { probe, .. } => Some((b, probe)),
            _ => None,
        })
        .collect();
    if behind_probes.is_empty() {
        return Ok(Vec::new());
    }
    let attached = probe::attached();
    let mut absent = Vec::new();
    for (board, profile) in behind_probes {
        let wanted = runner::probe_selector(profile.as_deref(), options)?;
        if let Err(ProbeError::NoProbe { .. }) = probe::select(&attached, wanted.as_ref()) {
            let looked_for = wanted.map_or("any probe".to_owned(), |w| format!("probe {w}"));
            absent.push((board.name.clone(), looked_for));
        }
    }
    Ok(absent)
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
    let boards = &options.boards;
    let file = &options.models_file;
    let (loaded, runtime) = options.load()?;
    let mut models = models::select(loaded.models, &options.models, file)?;
    if options.arena_auto {
        // A shared arena keeps its size; separate ones are their models'.
        for m in &mut models {
            match &mut m.set {
                None => m.arena = Arena::Auto,
                Some(set) if set.sharing == Sharing::Separate => {
                    set.models.iter_mut().for_each(|m| m.arena = Arena::Auto)
                }
                Some(_) => {}
            }
        }
    }

    for scenario in &options.scenarios {
        if !SCENARIOS.contains(&scenario.as_str()) && !SELF_TESTS.contains(&scenario.as_str()) {
            return Err(ConfigError::UnknownScenario(scenario.clone()));
        }
    }
    if options.frames <= WARM_UP_FRAMES {
        return Err(ConfigError::TooFewFrames(options.frames));
    }
    let runs_anything = |m: &ModelSpec| options.scenarios.iter().any(|s| boards.iter().any(|b| runs_for(m, s, b)));
    if !options.build_only && !models.iter().any(runs_anything) {
        return Err(ConfigError::NothingToRun(file.clone(), options.scenarios.clone()));
    }

    // Each model's file is read and checked once for the whole run.
    let files: Vec<Result<Model, ModelsError>> = models.iter().map(|m| m.read(&runtime)).collect();
    let rustc = firmware::rustc_version(ws);
    let planned = boards.iter().flat_map(|b| models.iter().filter_map(|m| selected(options, m, b)));
    let (images, runs) = planned.fold((0, 0), |(images, runs), selected| (images + 1, runs + selected.len()));
    progress(Event::Planned { images, runs });
    let setup = Setup { ws, runtime: &runtime, rustc: &rustc, options, progress };
    let queue = Mutex::new(boards.iter().collect::<VecDeque<_>>());
    let outcomes = Mutex::new(Vec::new());
    let images = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, boards.len().max(1)) {
            scope.spawn(|| loop {
                let Some(board) = queue.lock().unwrap().pop_front() else { break };
                for (model, file) in models.iter().zip(&files) {
                    let (image, runs) = measure(&setup, board, model, file);
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
        commit: gitrepo::head(ws.root()),
        boards: boards.iter().map(|b| b.name.clone()).collect(),
        images,
        records: Vec::new(),
        failed: Vec::new(),
        models: files.into_iter().flatten().collect(),
    };
    for (board, model, scenario, outcome) in outcomes {
        match outcome {
            Ok(record) => results.records.push(record),
            Err(error) => results.failed.push(Failed { board, model, scenario, error: error.to_string() }),
        }
    }
    Ok(results)
}

/// One board and model's image, and each scenario's outcome on it.
type Measured = (Option<Image>, Vec<(String, Result<Measurement, RunError>)>);

/// What every board and model of one run shares.
struct Setup<'a> {
    ws: &'a Workspace,
    runtime: &'a Runtime,
    rustc: &'a str,
    options: &'a Options,
    progress: &'a (dyn Fn(Event) + Sync),
}

/// Whether a record of `scenario` for `spec` carries TFLM's breakdown of
/// the arena (on a current TFLM): a model's single frame, and the
/// multi-model scenario of a set in separate arenas (each model's).
/// The arena the recording image has beyond the model's, for the recording
/// allocator's own larger objects in its tail: TFLM's breakdown is of
/// what the model allocates, whatever the arena, and a model sized to its
/// least arena leaves no room for them.
const RECORDING_ROOM: u32 = 1024;

/// The scenarios `spec` runs on `board`: a set runs the multi-model
/// scenario, a model the others, a build only none; `None` when the pair
/// is not even built (nothing of it runs, and not a build only).
fn selected<'a>(options: &'a Options, spec: &ModelSpec, board: &Board) -> Option<Vec<&'a String>> {
    if options.builds_only(board) {
        return Some(Vec::new());
    }
    let selected: Vec<&String> = options.scenarios.iter().filter(|s| runs_for(spec, s, board)).collect();
    (!selected.is_empty()).then_some(selected)
}

fn broken_down(spec: &ModelSpec, scenario: &str) -> bool {
    match &spec.set {
        None => scenario == SINGLE_FRAME,
        Some(set) => scenario == MULTI_MODEL && set.sharing == Sharing::Separate,
    }
}

/// Builds (or finds) the model's image and runs each scenario on it. On a
/// current TFLM the single frame (or a set's models in separate arenas)
/// also runs an image over TFLM's recording allocator, built after the
/// first, for TFLM's own breakdown of the arena.
fn measure(setup: &Setup, board: &Board, spec: &ModelSpec, file: &Result<Model, ModelsError>) -> Measured {
    let Setup { runtime, rustc, options, progress, .. } = *setup;
    let Some(selected) = selected(options, spec, board) else { return (None, Vec::new()) };
    let breakdown = runtime.generation().todays_allocator()
        && selected.iter().any(|s| broken_down(spec, s))
        && options.variant == Variant::Standard;
    // The model was read once for the run; its arena is resolved once per
    // board, and every later step reads the number.
    let mut recording = None;
    let built = file.as_ref().map_err(ToString::to_string).and_then(|model| {
        let sized = match model.sized_for(board, runtime.generation()) {
            Err(ModelsError::Auto { source, .. }) if model.spec.set.is_none() && !options.builds_only(board) => {
                first_boot(setup, board, model, &source.to_string())
            }
            sized => sized.map_err(|e| RunError::from(BuildError::from(e))),
        };
        let built = sized.and_then(|model| {
            let recorded = model.with_room(RECORDING_ROOM);
            // One after the other: both take the same target directory.
            let standard = image(setup, board, &model, options.variant);
            recording = breakdown.then(|| image(setup, board, &recorded, Variant::Recording));
            let image = standard?;
            let info = Image::of(board, &model, runtime, rustc).map_err(BuildError::from)?;
            Ok((model, image, info))
        });
        built.map_err(|e| e.to_string())
    });
    progress(Event::Built { board: &board.name, model: &spec.name, ok: built.is_ok() });
    let skipped = |why: &str| {
        for scenario in &selected {
            progress(Event::Skipped { board: &board.name, model: &spec.name, scenario, why });
        }
    };
    let (model, (firmware, sizes), info) = match built {
        Ok(built) => built,
        Err(error) => {
            skipped("its image was not built");
            let failed = |s: &str| {
                (s.to_owned(), Err(RunError::Image { context: context(board, spec, s), error: error.clone() }))
            };
            return (None, std::iter::once(BUILD).chain(selected.iter().map(|s| s.as_str())).map(failed).collect());
        }
    };
    // The image's own record; an image outside its board's regions is not
    // run.
    let (mut build, fits) = match build::record(board, &model, &firmware, sizes) {
        Ok((record, placed)) => (Ok(record), placed),
        Err(e) => (Err(e), false),
    };
    if let (Ok(record), false, false) = (&mut build, fits, selected.is_empty()) {
        let skipped: Vec<&str> = selected.iter().map(|s| s.as_str()).collect();
        let why = format!("{}: the image does not lie inside the board's regions", skipped.join(", "));
        record.notes.insert(NOT_RUN.into(), why);
    }
    let mut runs = vec![(BUILD.to_owned(), build)];
    if !fits {
        skipped("the image does not lie inside the board's regions");
        return (Some(info), runs);
    }
    let name = &spec.name;
    let timeout = options.timeout.unwrap_or(board.timeout);
    // Each try of a run over a noisy link meets other noise.
    let run_try = |firmware: &Firmware, sizes: ImageSizes, scenario: &str, try_number: u64| {
        let mut run_options = options.run.clone();
        if let Some(noise) = &mut run_options.noise {
            noise.seed = noise.seed.wrapping_add(try_number);
        }
        let still_running =
            |elapsed| progress(Event::StillRunning { board: &board.name, model: &spec.name, scenario, elapsed });
        execute(board, spec, firmware, scenario, options.frames, timeout, &run_options, &still_running)
            .and_then(|run| Ok((record(board, &model, firmware, sizes, scenario, &run)?, run)))
    };
    let run = |firmware: &Firmware, sizes: ImageSizes, scenario: &str| run_try(firmware, sizes, scenario, 0);
    // A run that failed on the way from the target is run again, up to
    // --retries times, and its record says so.
    let attempt = |scenario: &str, repeat: u64| {
        let first_try = repeat * (u64::from(options.retries) + 1);
        let mut outcome = run_try(&firmware, sizes, scenario, first_try).map(|(record, _)| record);
        let mut lost = Vec::new();
        while let Err(e) = &outcome {
            if !e.is_transport() || lost.len() >= options.retries as usize {
                break;
            }
            lost.push(e.to_string().lines().next().unwrap_or_default().to_owned());
            outcome = run_try(&firmware, sizes, scenario, first_try + lost.len() as u64).map(|(record, _)| record);
        }
        match (outcome, lost.len() + 1) {
            (outcome, 1) => outcome,
            (Ok(mut record), tries) => {
                record.notes.insert(TRIES.into(), format!("{tries} tries; retried after: {}", lost.join("; ")));
                Ok(record)
            }
            (Err(last), tries) => Err(RunError::Retried { tries, last: Box::new(last) }),
        }
    };
    runs.extend(selected.into_iter().map(|scenario| {
        progress(Event::Running { board: &board.name, model: name, scenario });
        // --repeat: the scenario again from fresh boots, every figure
        // kept with its spread.
        let mut outcome = attempt(scenario, 0);
        for repeat in 1..u64::from(options.repeat.max(1)) {
            match (&mut outcome, attempt(scenario, repeat)) {
                (Ok(record), Ok(again)) => record.spread_with(&again),
                (Ok(_), Err(e)) => outcome = Err(e),
                (Err(_), _) => break,
            }
        }
        if let Ok(record) = &mut outcome {
            record.judge_spread(options.repeat, board.is_qemu());
        }
        if let (true, Some(image), Ok(record)) = (broken_down(spec, scenario), recording.take(), &mut outcome) {
            let recorded = image
                .and_then(|(firmware, sizes)| run(&firmware, sizes, scenario))
                .and_then(|(_, run)| tflm_breakdowns(board, spec, &run));
            match recorded {
                Ok(breakdowns) => {
                    for (owner, breakdown) in breakdowns {
                        match owner {
                            None => record.tflm_breakdown = Some(breakdown),
                            Some(model) => _ = record.resident_breakdowns.insert(model.to_owned(), breakdown),
                        }
                    }
                }
                Err(e) => outcome = Err(e),
            }
        }
        progress(Event::Finished { board: &board.name, model: name, scenario, ok: outcome.is_ok() });
        (scenario.clone(), outcome)
    }));
    (Some(info), runs)
}

/// "auto" where the least arena is not predicted (`why`): a first boot of
/// the single frame, in an arena of the board's whole budget for it, finds
/// it; the model is sized at that plus the board's margin.
fn first_boot(setup: &Setup, board: &Board, model: &Model, why: &str) -> Result<Model, RunError> {
    let Setup { options, progress, .. } = *setup;
    let budget = board.budget.tensor_arena_bytes;
    let name = &model.spec.name;
    let failed = |failed: String| RunError::FirstBoot {
        board: board.name.clone(),
        model: name.clone(),
        why: why.to_owned(),
        budget,
        failed,
    };
    let probe = model.with_arena(budget, None);
    let (firmware, sizes) = image(setup, board, &probe, Variant::Standard).map_err(|e| failed(e.to_string()))?;
    let scenario = "single-frame, a first boot for the least arena";
    progress(Event::Running { board: &board.name, model: name, scenario });
    let still_running = |elapsed| progress(Event::StillRunning { board: &board.name, model: name, scenario, elapsed });
    let timeout = options.timeout.unwrap_or(board.timeout);
    let least = execute(board, &probe.spec, &firmware, SINGLE_FRAME, 1, timeout, &options.run, &still_running)
        .and_then(|run| record(board, &probe, &firmware, sizes, SINGLE_FRAME, &run))
        .map_err(|e| failed(e.to_string()))?
        .metrics
        .get(metric::LEAST_ARENA_BYTES)
        .copied()
        .ok_or_else(|| failed(format!("the firmware reported no `{}`", metric::LEAST_ARENA_BYTES)))?;
    let margin = board.budget.safety_margin_percent;
    let source = format!(
        "auto: the least arena, {least} bytes, measured in a first boot ({why}), plus the {margin}% margin of board `{}`",
        board.name
    );
    Ok(model.with_arena(fit::with_margin(least as usize, margin) as u32, Some(source)))
}

fn image(setup: &Setup, board: &Board, model: &Model, variant: Variant) -> Result<(Firmware, ImageSizes), RunError> {
    let Setup { ws, runtime, options, progress, .. } = *setup;
    let firmware = if options.build {
        progress(Event::Building {
            board: &board.name,
            model: &model.spec.name,
            variant,
            arena_bytes: model.arena_bytes(board, runtime.generation()).map_err(BuildError::from)?,
            budget_bytes: board.budget.tensor_arena_bytes,
        });
        let mut output = |line: &str| progress(Event::BuildOutput { board: &board.name, line });
        firmware::build(ws, board, model, runtime, variant, &mut output)?
    } else {
        let firmware = firmware::built(ws, board, model, runtime, variant);
        if !firmware.elf.is_file() {
            return Err(RunError::NotBuilt {
                context: format!("board `{}`, model `{}`", board.name, model.spec.name),
                elf: firmware.elf,
            });
        }
        firmware
    };
    let sizes = elf::sizes(&firmware.elf, &board.layout)?;
    Ok((firmware, sizes))
}

/// One image's deploy as `hil --dry-run` checks it.
#[derive(Debug)]
pub struct Deploy {
    pub board: String,
    pub model: String,
    pub elf: PathBuf,
    pub plan: Result<DryRun, DryRunError>,
}

/// For every probe-rs board and model of `options`, what deploying the image
/// the last build left would do (see [`probe::dry_run`]), touching no
/// probe. Other boards have nothing to deploy this way and are refused.
pub fn dry_run(ws: &Workspace, options: &Options) -> Result<Vec<Deploy>, ConfigError> {
    let boards = &options.boards;
    if let Some(board) = boards.iter().find(|b| !matches!(b.runner, Runner::ProbeRs { .. })) {
        return Err(ConfigError::NotDeployed(board.name.clone()));
    }
    let (loaded, runtime) = options.load()?;
    let models = models::select(loaded.models, &options.models, &options.models_file)?;
    let mut deploys = Vec::new();
    for board in boards {
        let Runner::ProbeRs { chip, probe } = &board.runner else { continue };
        for model in &models {
            let elf = firmware::elf_path(ws, board, model, &runtime, Variant::Standard);
            let tflm = firmware::tflm_identity(&runtime, model.kernels);
            let expected = firmware::identity(&board.name, &model.name, tflm.as_deref());
            let plan = match elf::identity(&elf) {
                Err(e) => Err(DryRunError::from(e)),
                Ok(found) if found != expected => Err(DryRunError::WrongImage { elf: elf.clone(), found, expected }),
                Ok(_) => runner::probe_selector(probe.as_deref(), &options.run)
                    .map_err(DryRunError::from)
                    .and_then(|wanted| probe::dry_run(chip, wanted.as_ref(), &elf)),
            };
            deploys.push(Deploy { board: board.name.clone(), model: model.name.clone(), elf, plan });
        }
    }
    Ok(deploys)
}

/// Checks that the image is the one for this board and model, then deploys
/// it and runs one scenario.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    board: &Board,
    model: &ModelSpec,
    firmware: &Firmware,
    scenario: &str,
    frames: u32,
    timeout: Duration,
    options: &RunOptions,
    still_running: &dyn Fn(Duration),
) -> Result<Run, RunError> {
    let context = context(board, model, scenario);
    let expected = firmware::identity(&board.name, &model.name, firmware.tflm_identity.as_deref());
    let found = elf::identity(&firmware.elf)?;
    if found != expected {
        return Err(RunError::WrongImage { context, elf: firmware.elf.clone(), found, expected });
    }
    let started = std::time::Instant::now();
    let mut target = runner::start(board, &firmware.elf, options, measurement::icount_shift(board, scenario))
        .map_err(|e| RunError::Runner(e, context.clone()))?;
    let run = runner::drive(target.as_mut(), scenario, frames, timeout, options, still_running);
    if matches!(board.runner, Runner::Qemu { .. }) {
        timings::note_since(timings::QEMU, &format!("{}/{} {scenario}", board.name, model.name), started);
    }
    run.map_err(|e| RunError::Runner(e, context))
}
