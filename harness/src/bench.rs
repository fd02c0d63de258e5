//! What hilmem costs. In time: a full emulated run (every QEMU board, every
//! model, single-frame, boards in parallel) against running the same images
//! with bare `qemu-system-arm`, one after another, fed the same command; and
//! the analyzer's parse and plan of a model, and `analyze --tflm` whole
//! process with the tree read and with its facts kept; and QEMU with
//! `-icount` (the clock the dma-stream scenarios need) against without, and
//! the firmware's search for the least arena against none. In
//! memory: the firmware with and without the arena layer's measurement
//! machinery, from the ELF.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hilmem_protocol::Frame;

use crate::config::board::{self, Board, Runner};
use crate::config::models;
use crate::config::runtime::Runtime;
use crate::device::runner::{qemu_args, QEMU, STDIO_UART};
use crate::image::elf::ImageSizes;
use crate::image::firmware;
use crate::image::firmware::Variant;
use crate::run::measurement::DEFAULT_FRAMES;
use crate::run::{self, ConfigError, Options};
use crate::tflm::tree::{Generation, Kernels};
use crate::Workspace;
use hilmem_protocol::scenario::{SINGLE_FRAME, STREAM};

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the {phase} run failed: {error}")]
    Hil { phase: &'static str, error: String },
    #[error("bare {QEMU} on {elf}: {why}")]
    Bare { elf: String, why: String },
}

/// Timings of one benchmark.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// The TFLM the images were built with.
    pub runtime: String,
    pub boards: Vec<String>,
    pub images: usize,
    /// Boards the harness ran at once.
    pub jobs: usize,
    /// The harness's run of every image (already built).
    pub hil: Duration,
    /// The same images under bare QEMU, one after another.
    pub bare: Duration,
}

impl BenchReport {
    /// The harness's time over the bare time divided among the jobs; 1.0 means
    /// the harness adds nothing to a perfect split of the bare runs.
    pub fn ratio(&self) -> f64 {
        self.hil.as_secs_f64() / (self.bare.as_secs_f64() / self.jobs as f64)
    }
}

/// Times every model of `models_file` on every QEMU board with the TFLM
/// `tflm` chooses (as `hil --tflm`; else the models file's, else the
/// bundled one).
pub fn run(
    ws: &Workspace,
    jobs: usize,
    models_file: &Path,
    (tflm, kernels): (Option<String>, Option<Kernels>),
    progress: &mut dyn FnMut(&str),
) -> Result<BenchReport, BenchError> {
    let boards: Vec<Board> = board::load_all(ws)
        .map_err(ConfigError::from)?
        .into_iter()
        .filter(|b| matches!(b.runner, Runner::Qemu { .. }))
        .collect();
    let loaded = models::load(models_file).map_err(ConfigError::from)?;
    let runtime = loaded.runtime(tflm).map_err(ConfigError::from)?;
    let models = loaded.models;
    let mut options = Options::new(ws, boards.to_vec());
    options.jobs = jobs;
    options.models_file = models_file.to_owned();
    options.scenarios = vec![SINGLE_FRAME.into()];
    options.tflm = Some(runtime.dir().map_or_else(|| "bundled".to_owned(), |d| d.display().to_string()));
    options.kernels = kernels;

    progress("building every image (not timed)");
    let results = run::run(ws, &options, &|_| {})?;
    if let Some(f) = results.failed.first() {
        return Err(BenchError::Hil { phase: "build", error: f.error.clone() });
    }

    progress("timing the harness");
    options.build = false;
    let started = Instant::now();
    let results = run::run(ws, &options, &|_| {})?;
    let hil_time = started.elapsed();
    if let Some(f) = results.failed.first() {
        return Err(BenchError::Hil { phase: "timed", error: f.error.clone() });
    }

    progress("timing bare QEMU");
    let command_line = run_command(SINGLE_FRAME);
    let mut bare = Duration::ZERO;
    for board in &boards {
        for model in &models {
            let elf = firmware::elf_path(ws, board, model, &runtime, Variant::Standard);
            bare += bare_run(board, &elf, &command_line, None)?;
        }
    }
    Ok(BenchReport {
        runtime: runtime.identity,
        boards: boards.iter().map(|b| b.name.clone()).collect(),
        images: boards.len() * models.len(),
        jobs: options.jobs.clamp(1, boards.len()),
        hil: hil_time,
        bare,
    })
}

/// The command line that asks the firmware for `scenario`.
fn run_command(scenario: &str) -> Vec<u8> {
    let mut command_line = Vec::new();
    Frame::Run { scenario, frames: DEFAULT_FRAMES, copies: 1 }
        .write_lines(0, 1, |b| command_line.extend_from_slice(b))
        .expect("short");
    command_line
}

fn bare_run(
    board: &Board,
    elf: &std::path::Path,
    command_line: &[u8],
    icount_shift: Option<u8>,
) -> Result<Duration, BenchError> {
    let fail = |why: String| BenchError::Bare { elf: elf.display().to_string(), why };
    let started = Instant::now();
    // Started as the harness starts its emulators, so both sides pay the same.
    let mut command = Command::new(QEMU);
    command
        .args(qemu_args(board, elf, icount_shift))
        .args(STDIO_UART)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    crate::children::guard(&mut command);
    let mut child = command.spawn().map_err(|e| fail(e.to_string()))?;
    crate::children::started(child.id(), QEMU);
    let mut stdin = child.stdin.take().unwrap();
    let written = stdin.write_all(command_line);
    let status = child.wait();
    crate::children::reaped(child.id());
    written.map_err(|e| fail(e.to_string()))?;
    let status = status.map_err(|e| fail(e.to_string()))?;
    drop(stdin);
    let took = started.elapsed();
    if !status.success() {
        return Err(fail(format!("exited with {status}")));
    }
    Ok(took)
}

/// Bare QEMU runs of one model in one scenario one way and the other,
/// alternating, so that both see the same machine.
#[derive(Debug, Clone)]
pub struct Paired {
    pub board: String,
    pub model: String,
    pub scenario: &'static str,
    pub runs: u32,
    /// Total wall time of the runs without what is weighed, and with it.
    pub without: Duration,
    pub with: Duration,
}

impl Paired {
    /// How much longer a run takes with it.
    pub fn ratio(&self) -> f64 {
        self.with.as_secs_f64() / self.without.as_secs_f64()
    }

    /// What it adds to one run, on average.
    pub fn added(&self) -> Duration {
        self.with.saturating_sub(self.without) / self.runs
    }
}

/// Times `model` (the bundled TFLM's image for the default board, built
/// here if needed) in the stream scenario, `runs` times with the capture
/// scenario's `-icount` and as many without, alternating; and says the
/// shift.
pub fn icount_cost(
    ws: &Workspace,
    model: &str,
    runs: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<(Paired, u8), BenchError> {
    let (board, images) = default_images(ws, model, &[Variant::Standard], progress)?;
    let shift = crate::run::measurement::icount_shift(&board, hilmem_protocol::scenario::DMA_STREAM)
        .expect("a QEMU board has the capture scenario's clock");
    let paired = alternate(&board, model, STREAM, runs, (&images[0], None), (&images[0], Some(shift)), progress)?;
    Ok((paired, shift))
}

/// Times `model`'s single frame as [`icount_cost`] times `-icount`: the
/// image without the firmware's search for the least arena, and with it.
pub fn search_cost(
    ws: &Workspace,
    model: &str,
    runs: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Paired, BenchError> {
    let (board, images) = default_images(ws, model, &[Variant::Standard, Variant::NoLeastArena], progress)?;
    alternate(&board, model, SINGLE_FRAME, runs, (&images[1], None), (&images[0], None), progress)
}

/// The bundled TFLM's images of `model` for the default board, one per
/// variant, built here if needed: the board, model and selection read once.
fn default_images(
    ws: &Workspace,
    model: &str,
    variants: &[Variant],
    progress: &mut dyn FnMut(&str),
) -> Result<(Board, Vec<std::path::PathBuf>), BenchError> {
    let board = Board::load(ws, board::DEFAULT_BOARD).map_err(ConfigError::from)?;
    let file = ws.models_file();
    let models = models::select(models::load(&file).map_err(ConfigError::from)?.models, &[model.to_owned()], &file)
        .map_err(ConfigError::from)?;
    let build_err = |e: &dyn std::fmt::Display| BenchError::Hil { phase: "build", error: e.to_string() };
    let runtime = Runtime::bundled();
    let model_file = models[0].read(&runtime).map_err(|e| build_err(&e))?;
    let mut images = Vec::new();
    for &variant in variants {
        progress(&format!("building {}/{model}{}", board.name, variant.suffix()));
        let image =
            firmware::build(ws, &board, &model_file, &runtime, variant, &mut |_| {}).map_err(|e| build_err(&e))?;
        images.push(image.elf);
    }
    Ok((board, images))
}

/// `runs` bare runs of `scenario` each way, each an image and its
/// `-icount` shift, alternating.
fn alternate(
    board: &Board,
    model: &str,
    scenario: &'static str,
    runs: u32,
    without: (&Path, Option<u8>),
    with: (&Path, Option<u8>),
    progress: &mut dyn FnMut(&str),
) -> Result<Paired, BenchError> {
    let command_line = run_command(scenario);
    let mut paired = Paired {
        board: board.name.clone(),
        model: model.to_owned(),
        scenario,
        runs,
        without: Duration::ZERO,
        with: Duration::ZERO,
    };
    for run in 0..runs {
        progress(&format!("run {}/{runs}, each way", run + 1));
        paired.without += bare_run(board, without.0, &command_line, without.1)?;
        paired.with += bare_run(board, with.0, &command_line, with.1)?;
    }
    Ok(paired)
}

/// Flash and static RAM of one image with and without the measurement
/// machinery (painting, watermarks, lifecycle bookkeeping); the buffers the
/// layer manages are the same in both.
#[derive(Debug, Clone)]
pub struct LayerCost {
    pub board: String,
    pub model: String,
    pub with: ImageSizes,
    pub without: ImageSizes,
}

impl LayerCost {
    pub fn flash_bytes(&self) -> i64 {
        self.with.flash_bytes.unwrap_or(0) as i64 - self.without.flash_bytes.unwrap_or(0) as i64
    }

    pub fn static_ram_bytes(&self) -> i64 {
        self.with.static_ram_bytes as i64 - self.without.static_ram_bytes as i64
    }
}

/// Builds `model` for the default board both ways and compares the images.
pub fn layer_cost(ws: &Workspace, model: &str, progress: &mut dyn FnMut(&str)) -> Result<LayerCost, BenchError> {
    let (board, images) = default_images(ws, model, &[Variant::Standard, Variant::Uninstrumented], progress)?;
    let sizes = |elf: &Path| {
        crate::image::elf::sizes(elf, &board.layout)
            .map_err(|e| BenchError::Hil { phase: "build", error: e.to_string() })
    };
    Ok(LayerCost {
        board: board.name.clone(),
        model: model.to_owned(),
        with: sizes(&images[0])?,
        without: sizes(&images[1])?,
    })
}

/// A synthetic model for the analyzer's benchmark: a chain of `tensors`
/// float32 activations where each operator also reads the activation two
/// steps back (a skip connection), sized 16 to 1024 bytes.
pub fn synthetic_model(tensors: usize) -> Vec<u8> {
    use crate::model::tflite::{Model, Operator, OperatorCode, Subgraph, Tensor};
    let tensor = |i: usize| Tensor::plain(&format!("t{i}"), &[1, (4 * (1 + (i * 37) % 64)) as i32], 0, 0);
    let operators = (0..tensors.saturating_sub(1))
        .map(|k| {
            let mut inputs = vec![k as i32];
            if k >= 2 {
                inputs.push(k as i32 - 2);
            }
            Operator::plain(0, &inputs, &[k as i32 + 1])
        })
        .collect();
    crate::model::tflite::write(&Model {
        version: 3,
        description: Some("hilmem synthetic benchmark model".into()),
        metadata: vec![],
        operator_codes: vec![OperatorCode { builtin: 0, custom: None, version: 1 }],
        subgraphs: vec![Subgraph {
            tensors: (0..tensors).map(tensor).collect(),
            inputs: vec![0],
            outputs: vec![tensors as i32 - 1],
            operators,
        }],
        buffers: vec![0],
        offline_plan: None,
    })
}

/// The branching model of `firmware/models/branching.tflite`: float32
/// activations of 4 columns in two branches of 6 and 5 rows (an input
/// broadcast against zero constants), joined again by ADDs and a MEAN, so
/// that its answer is four times its input. On today's TFLM, whose MEAN
/// kernel asks for two scratch buffers, greedy plans a head of 336 bytes,
/// above the lower bound of 272, which hilmem's plan reaches.
pub fn branching_model() -> Vec<u8> {
    use crate::model::tflite::{Model, Operator, OperatorCode, Subgraph, Tensor};
    const ADD_OPTIONS: u8 = 11;
    const REDUCER_OPTIONS: u8 = 27;
    let tensor = Tensor::plain;
    let tensors = vec![
        tensor("input", &[1, 4], 0, 0),
        tensor("rows6", &[6, 1], 0, 1),
        tensor("branch6", &[6, 4], 0, 0),
        tensor("rows5", &[5, 1], 0, 2),
        tensor("branch5", &[5, 4], 0, 0),
        tensor("doubled5", &[5, 4], 0, 0),
        tensor("axis", &[1], 2, 3),
        tensor("mean6", &[4], 0, 0),
        tensor("tripled5", &[5, 4], 0, 0),
        tensor("output", &[5, 4], 0, 0),
    ];
    let op = |code: u32, inputs: &[i32], output: i32| Operator {
        opcode_index: code,
        inputs: inputs.to_vec(),
        outputs: vec![output],
        options: if code == 0 { ADD_OPTIONS } else { REDUCER_OPTIONS },
        window: None,
        adjoint: None,
        variable: None,
    };
    crate::model::tflite::write(&Model {
        version: 3,
        description: Some("hilmem branching example: greedy plans above the lower bound".into()),
        metadata: vec![],
        operator_codes: vec![
            OperatorCode { builtin: 0, custom: None, version: 1 },
            OperatorCode { builtin: 40, custom: None, version: 1 },
        ],
        subgraphs: vec![Subgraph {
            tensors,
            inputs: vec![0],
            outputs: vec![9],
            operators: vec![
                op(0, &[0, 1], 2),
                op(0, &[0, 3], 4),
                op(0, &[4, 4], 5),
                op(1, &[2, 6], 7),
                op(0, &[0, 5], 8),
                op(0, &[7, 8], 9),
            ],
        }],
        buffers: vec![0, 24, 20, 4],
        offline_plan: None,
    })
}

/// Parsing and planning one model: the mean time of one
/// [`crate::model::analysis::Analysis::of`] over its file's bytes, for the
/// bundled TFLM (the plans are the cost; either generation's tail is one
/// pass over the graph), and of hilmem's plan search alone, with the heads
/// the plans reach.
#[derive(Debug, Clone)]
pub struct AnalyzerTiming {
    pub model: String,
    pub tensors: usize,
    pub bytes: usize,
    pub iterations: u32,
    pub mean: Duration,
    /// [`crate::model::planner::hilmem`] alone.
    pub search: Duration,
    pub greedy_bytes: usize,
    pub hilmem_bytes: usize,
    pub lower_bound_bytes: usize,
}

/// Times parse + plan for `models` (name, bytes), and the plan search: each
/// repeated for at least half a second and three iterations.
pub fn analyzer(models: &[(String, Vec<u8>)]) -> Result<Vec<AnalyzerTiming>, crate::model::tflite::ReadError> {
    use crate::model::planner::{buffers, hilmem, Planner, Ties};
    let mean_of = |f: &mut dyn FnMut() -> Result<(), crate::model::tflite::ReadError>| {
        let (mut iterations, started) = (0u32, Instant::now());
        while iterations < 3 || started.elapsed() < Duration::from_millis(500) {
            f()?;
            iterations += 1;
        }
        Ok::<_, crate::model::tflite::ReadError>((iterations, started.elapsed() / iterations))
    };
    let mut timings = Vec::new();
    for (name, bytes) in models {
        let analyse = || {
            crate::model::analysis::Analysis::of(
                name,
                &crate::model::tflite::read(bytes)?,
                Generation::Tfmicro2020,
                crate::model::tail::cmsis_nn::KernelPath::Reference,
                Planner::Greedy,
            )
        };
        let analysis = analyse()?;
        let (iterations, mean) = mean_of(&mut || {
            analyse().map(|a| {
                std::hint::black_box(a);
            })
        })?;
        let model = crate::model::tflite::read(bytes)?;
        let planned = buffers(&model, &[])?;
        let (_, search) = mean_of(&mut || {
            std::hint::black_box(hilmem(&planned, analysis.tensor_count, Ties::Added));
            Ok(())
        })?;
        timings.push(AnalyzerTiming {
            model: name.clone(),
            tensors: analysis.tensor_count,
            bytes: bytes.len(),
            iterations,
            mean,
            search,
            greedy_bytes: analysis.greedy_bytes,
            hilmem_bytes: analysis.hilmem_bytes,
            lower_bound_bytes: analysis.lower_bound_bytes,
        });
    }
    Ok(timings)
}

/// Whole-process times of `analyze MODEL --tflm TREE` for one model.
#[derive(Debug, Clone)]
pub struct TreeTiming {
    pub model: String,
    /// The tree read, its kept facts removed first (every run, before they
    /// were kept).
    pub read: Duration,
    /// The tree's facts kept.
    pub kept: Duration,
}

impl TreeTiming {
    pub fn ratio(&self) -> f64 {
        self.read.as_secs_f64() / self.kept.as_secs_f64()
    }
}

/// Times `exe analyze MODEL --tflm tree` for `models` (name, bytes), as
/// mean whole-process times over `runs` runs each way, read and kept runs
/// alternating so that both see the same machine.
pub fn analyze_with_tree(
    exe: &Path,
    tree: &Path,
    models: &[(String, Vec<u8>)],
    runs: u32,
) -> Result<Vec<TreeTiming>, String> {
    let root = tree.canonicalize().map_err(|e| format!("{}: {e}", tree.display()))?;
    let dir = std::env::temp_dir().join(format!("hilmem-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let timings = time_analyze(exe, &root, &dir, models, runs);
    let _ = std::fs::remove_dir_all(&dir);
    timings
}

fn time_analyze(
    exe: &Path,
    root: &Path,
    dir: &Path,
    models: &[(String, Vec<u8>)],
    runs: u32,
) -> Result<Vec<TreeTiming>, String> {
    let mut timings = Vec::new();
    for (name, bytes) in models {
        let file = dir.join(format!("{name}.tflite"));
        std::fs::write(&file, bytes).map_err(|e| format!("{}: {e}", file.display()))?;
        let analyze = || -> Result<Duration, String> {
            let started = Instant::now();
            let out = Command::new(exe)
                .arg("analyze")
                .arg(&file)
                .arg("--tflm")
                .arg(root)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
            let elapsed = started.elapsed();
            if !out.status.success() {
                return Err(format!(
                    "analyze {name} --tflm {}: {}",
                    root.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(elapsed)
        };
        analyze()?;
        let (mut read, mut kept) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..runs {
            let _ = std::fs::remove_file(crate::config::runtime::kept_facts(root));
            read += analyze()?;
            kept += analyze()?;
        }
        timings.push(TreeTiming { model: name.clone(), read: read / runs, kept: kept / runs });
    }
    Ok(timings)
}
