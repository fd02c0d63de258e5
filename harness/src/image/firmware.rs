//! Builds the reference firmware for one board and model.
//!
//! The harness writes the build configuration (`memory.x` from the board
//! profile, `config.rs` naming the model, arena size and input data) into a
//! directory per model and runs cargo on `firmware/` with one target directory
//! per board, so switching models relinks one crate and TFLM is compiled once
//! per toolchain (in a cache shared by all boards).

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::children;
use crate::config::board::{Board, Layout, Runner};
use crate::config::models::{Model, ModelSpec, ModelsError};
use crate::config::runtime::{Runtime, TFLM_DIR_VAR};
use crate::fsutil::{copy_atomic, write_atomic, write_if_changed};
use crate::model::analysis::Sharing;
use crate::model::planner::Planner;
use crate::model::tail::cmsis_nn::KernelPath;
use crate::tflm::tree::{Generation, Kernels};
use crate::{timings, Workspace};
use hilmem_protocol::ota::Header;
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Model(#[from] ModelsError),
    #[error("board `{board}`: {what}: {source}")]
    Io { board: String, what: String, source: std::io::Error },
    #[error("firmware build for board `{board}`, model `{model}` failed{}:\n{log}", cause(log))]
    Cargo { board: String, model: String, log: String },
    #[error("path {0} is not UTF-8; move the checkout or the model to a UTF-8 path")]
    NonUtf8Path(PathBuf),
}

/// What a failed build's own error lines say (the build script's, the
/// compiler's), beyond cargo's account of which crate failed: `: LINE` for
/// the last of them, or nothing.
fn cause(log: &str) -> String {
    let cargo_own = ["error: failed to run custom build command", "error: could not compile"];
    log.lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("error: ") && !cargo_own.iter().any(|c| l.starts_with(c)))
        .map_or_else(String::new, |line| format!(": {}", &line["error: ".len()..]))
}

/// A built firmware image.
#[derive(Debug, Clone)]
pub struct Firmware {
    pub elf: PathBuf,
    pub board: String,
    pub model: String,
    /// Size of the model flatbuffer inside the image.
    pub model_bytes: u64,
    /// The generation of the TFLM it was built with.
    pub tflm: Generation,
    /// The TFLM's identity, unless it is the bundled one (it is part of the
    /// image's identity), with its kernels unless they are the reference.
    pub tflm_identity: Option<String>,
    /// The kernels it was built with, on the board's code path.
    pub kernels: KernelPath,
}

/// Lines of cargo's output kept for a failure message.
const LOG_TAIL: usize = 40;

fn rust_str(path: &Path) -> Result<String, BuildError> {
    let s = path.to_str().ok_or_else(|| BuildError::NonUtf8Path(path.to_owned()))?;
    Ok(format!("{s:?}"))
}

/// Writes the per-model configuration directory; returns the model's size.
fn write_config(dir: &Path, board: &Board, model: &Model, runtime: &Runtime) -> Result<u64, BuildError> {
    let io = |what: &str, path: &Path| {
        let what = format!("{what} {}", path.display());
        let board = board.name.clone();
        move |source| BuildError::Io { board, what, source }
    };
    let model_path = dir.join("model.tflite");
    write_if_changed(&model_path, &model.bytes).map_err(io("cannot write", &model_path))?;
    let mut models = vec![&model.parsed, &model.update.parsed];
    models.extend(model.residents.iter().map(|m| &m.parsed));
    let ops_path = dir.join("hilmem_ops.h");
    let mut ops = runtime.operators.resolver_header(&models);
    ops.push_str(&format!(
        "// Interpreters the image holds at once.\n#define HM_SLOTS {}\n",
        model.residents.len().max(1)
    ));
    if model.spec.planner == Planner::Linear {
        ops.push_str("// The arena head is planned by TFLM's linear planner.\n#define HM_PLANNER_LINEAR 1\n");
    }
    write_if_changed(&ops_path, ops.as_bytes()).map_err(io("cannot write", &ops_path))?;
    let kernels_path = dir.join("hilmem_kernels.txt");
    let kernels = runtime.operators.kernel_list(&models);
    write_if_changed(&kernels_path, kernels.as_bytes()).map_err(io("cannot write", &kernels_path))?;
    let spec = &model.spec;

    // The models and the update package are statics of their own, named so
    // that the footprint can tell them from the firmware's code and data.
    // (Inputs stay anonymous: equal inputs then share their bytes.)
    let mut data = named_bytes("HILMEM_MODEL", model.bytes.len(), &model_path, true)?;
    let mut inputs = Vec::new();
    let mut largest = 0;
    for (i, (input, bytes)) in spec.inputs.iter().zip(&model.inputs).enumerate() {
        largest = largest.max(bytes.len());
        let path = dir.join(format!("input-{i}.bin"));
        write_if_changed(&path, bytes).map_err(io("cannot write", &path))?;
        inputs.push(format!("    ({:?}, include_bytes!({})),\n", input.name, rust_str(&path)?));
    }
    // The update the concurrent-OTA scenario receives: header and model, as
    // one package, and the arriving model's first input.
    let ota = &spec.ota;
    let ota_model = &model.update.bytes;
    // Its minimum arena: as the models file says, else the arriving
    // model's least arena where predicted, else the running model's arena;
    // its maximum at least that.
    let arena = model.arena_bytes(board, runtime.generation())?;
    let min_arena = ota.min_arena_bytes.or_else(|| model.update_least_arena(board, runtime.generation()));
    let min_arena = min_arena.unwrap_or(arena);
    let header = Header::for_model(
        ota_model,
        ota.version,
        min_arena,
        ota.max_arena_bytes.unwrap_or(arena.max(min_arena)),
        ota.min_free_heap_bytes,
    );
    let package_path = dir.join("ota-package.bin");
    let package = [&header.encode()[..], ota_model].concat();
    write_if_changed(&package_path, &package).map_err(io("cannot write", &package_path))?;
    let ota_input = &model.update.input;
    largest = largest.max(ota_input.len());
    largest = model.residents.iter().map(|m| m.inputs[0].len()).fold(largest, usize::max);
    let ota_input_path = dir.join("ota-input.bin");
    write_if_changed(&ota_input_path, ota_input).map_err(io("cannot write", &ota_input_path))?;
    data += &named_bytes("HILMEM_OTA_PACKAGE", package.len(), &package_path, false)?;

    let (budget, gate) = (&board.budget, &board.gate);
    let identity = identity(&board.name, &spec.name, tflm_identity(runtime, spec.kernels).as_deref());
    let mut config = format!(
        "// Generated by hilmem for board `{board}` and model `{model}`; rewritten on every build.\n\
         pub const BOARD: &str = {board:?};\n\
         pub const MODEL_NAME: &str = {model:?};\n\
         pub const CPU_PART: u16 = {part:#x};\n\
         pub const ARENA_BYTES: usize = {arena};\n\
         pub const LARGEST_INPUT_BYTES: usize = {largest};\n\
         {data}\
         pub static MODEL: &[u8] = &HILMEM_MODEL.0;\n\
         pub static INPUTS: [(&str, &[u8]); {count}] = [\n{inputs}];\n\
         pub static OTA_PACKAGE: &[u8] = &HILMEM_OTA_PACKAGE;\n\
         pub const OTA_MODEL_BYTES: usize = {ota_model_bytes};\n\
         pub static OTA_INPUTS: [(&str, &[u8]); 1] = [({ota_input_name:?}, include_bytes!({ota_input_path}))];\n\
         pub const BUDGET: arena::budget::Budget = arena::budget::{budget:?};\n\
         pub const GATE: arena::budget::Gate = arena::budget::{gate:?};\n\
         /// Read from the ELF by the harness before it deploys the image.\n\
         #[no_mangle]\n#[used]\npub static HILMEM_IDENTITY: [u8; {id_len}] = *b{identity:?};\n",
        board = board.name,
        model = spec.name,
        part = board.cpu.part,
        arena = arena,
        count = inputs.len(),
        inputs = inputs.concat(),
        ota_model_bytes = ota_model.len(),
        ota_input_name = ota_output_name(&ota.input.name),
        ota_input_path = rust_str(&ota_input_path)?,
        id_len = identity.len(),
    );
    if let Some(machine) = board.qemu_machine() {
        config += &format!("pub const UART_BASE: usize = {:#x};\n", machine.uart);
    }
    // The capture scenario's camera: its buffers and frame period, and on
    // bare metal the timer it runs on (QEMU's machines have one) and the
    // clock SysTick counts for the housekeeping.
    config += &format!(
        "pub const CAPTURE_BUFFERS: usize = {};\npub const FRAME_PERIOD_US: u32 = {};\n",
        spec.capture.buffers,
        1_000_000 / spec.capture.frame_rate_hz
    );
    if let Layout::BareMetal(_) = board.layout {
        let (timer, systick_hz) = match board.qemu_machine() {
            Some(m) => {
                let (base, irq, hz) = m.capture_timer;
                (format!("Some(({base:#x}, {irq}, {hz}))"), m.systick_hz)
            }
            None => ("None".to_owned(), 0),
        };
        config += &format!(
            "pub const CAPTURE_TIMER: Option<(usize, u16, u32)> = {timer};\npub const SYSTICK_HZ: u32 = {systick_hz};\n"
        );
    }
    if let Layout::Process { stack_bytes } = board.layout {
        config += &format!("pub const STACK_BYTES: usize = {stack_bytes};\n");
    }
    // A set's models for the multi-model scenario: name, model, first input
    // (name and bytes), and the model's own arena (0 when they share one).
    let shared = model.spec.set.as_ref().is_some_and(|set| set.sharing == Sharing::Shared);
    let mut residents = String::new();
    for (i, resident) in model.residents.iter().enumerate() {
        let model_path = dir.join(format!("resident-{i}.tflite"));
        write_if_changed(&model_path, &resident.bytes).map_err(io("cannot write", &model_path))?;
        let input_path = dir.join(format!("resident-{i}-input.bin"));
        write_if_changed(&input_path, &resident.inputs[0]).map_err(io("cannot write", &input_path))?;
        let own = if shared { 0 } else { resident.arena_bytes(board, runtime.generation())? };
        config += &named_bytes(&format!("HILMEM_MODEL_{i}"), resident.bytes.len(), &model_path, true)?;
        residents += &format!(
            "    ({:?}, &HILMEM_MODEL_{i}.0, {:?}, include_bytes!({}), {own}),\n",
            resident.spec.name,
            resident.spec.inputs[0].name,
            rust_str(&input_path)?,
        );
    }
    config += &format!(
        "pub const RESIDENT_COUNT: usize = {};\n\
         /// A resident model: its name and bytes, its first input's name and\n\
         /// bytes, and its own arena's size (0 in a shared arena).\n\
         pub type Resident = (&'static str, &'static [u8], &'static str, &'static [u8], usize);\n\
         pub static RESIDENTS: [Resident; RESIDENT_COUNT] = [\n{residents}];\n\
         pub const SHARED_ARENA: bool = {shared};\n\
         pub const INTERRUPT_MODEL: Option<(usize, u32)> = {interrupt:?};\n",
        model.residents.len(),
        interrupt = model.spec.set.as_ref().and_then(|set| set.interrupt).map(|(slot, ms)| (slot, ms * 1000))
    );
    let config_path = dir.join("config.rs");
    write_if_changed(&config_path, config.as_bytes()).map_err(io("cannot write", &config_path))?;
    if let Some(memory_x) = board.memory_x() {
        let memory_path = dir.join("memory.x");
        write_if_changed(&memory_path, memory_x.as_bytes()).map_err(io("cannot write", &memory_path))?;
    }
    // A set's image holds its models' files.
    Ok(if model.residents.is_empty() {
        model.bytes.len() as u64
    } else {
        model.residents.iter().map(|m| m.bytes.len() as u64).sum()
    })
}

/// A static named `name` holding the `len` bytes of the file at `path`
/// (16-byte aligned for a model), kept under its name in the ELF.
fn named_bytes(name: &str, len: usize, path: &Path, model: bool) -> Result<String, BuildError> {
    let path = rust_str(path)?;
    Ok(if model {
        format!("#[no_mangle]\npub static {name}: Aligned<[u8; {len}]> = Aligned(*include_bytes!({path}));\n")
    } else {
        format!("#[no_mangle]\npub static {name}: [u8; {len}] = *include_bytes!({path});\n")
    })
}

/// The name under which the firmware reports the answer of an update's model.
pub fn ota_output_name(input: &str) -> String {
    format!("ota-{input}")
}

/// The identity string embedded in every image as `HILMEM_IDENTITY`: the
/// board, the model and, unless it is the bundled one, the TFLM.
pub fn identity(board: &str, model: &str, tflm: Option<&str>) -> String {
    match tflm {
        None => format!("hilmem board={board} model={model}"),
        Some(tflm) => format!("hilmem board={board} model={model} tflm={tflm}"),
    }
}

/// The TFLM's part of an image's identity: the runtime unless it is the
/// bundled one, and the kernels unless they are the reference.
pub fn tflm_identity(runtime: &Runtime, kernels: Kernels) -> Option<String> {
    let kernels = (kernels != Kernels::Reference).then(|| format!("kernels={}", kernels.name()));
    match (runtime.dir(), kernels) {
        (None, None) => None,
        (None, Some(kernels)) => Some(kernels),
        (Some(_), None) => Some(runtime.identity.clone()),
        (Some(_), Some(kernels)) => Some(format!("{} {kernels}", runtime.identity)),
    }
}

/// The name of a build product for `runtime` and `kernels`: `name` itself
/// for the bundled TFLM's reference kernels, else tagged with the TFLM's
/// identity and the kernels, so that the configuration, target directory
/// and image of one model on two runtimes or kernel sets never replace or
/// wait for each other.
fn for_runtime(name: &str, runtime: &Runtime, kernels: Kernels) -> String {
    let name = match runtime.dir() {
        None => name.to_owned(),
        Some(_) => {
            let tag: String =
                runtime.identity.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
            format!("{name}@{tag}")
        }
    };
    match kernels {
        Kernels::Reference => name,
        Kernels::CmsisNn => format!("{name}+{}", kernels.name()),
    }
}

/// Cargo features of the firmware that select the board support.
fn features(board: &Board) -> Vec<&'static str> {
    match (&board.runner, &board.layout) {
        (Runner::Qemu { .. }, _) => vec!["cmsdk"],
        (Runner::ProbeRs { .. }, Layout::BareMetal(m)) if m.boot2.is_some() => vec!["rtt", "rp2040-boot2"],
        (Runner::ProbeRs { .. }, _) => vec!["rtt"],
        (Runner::Host, _) => vec![],
    }
}

/// The user's RUSTFLAGS plus path remapping: panic messages carry source
/// paths, and an image must not depend on where the checkout or cargo's
/// registry happen to be.
fn rustflags(ws: &Workspace) -> String {
    let mut flags: Vec<String> =
        std::env::var("RUSTFLAGS").unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    flags.push(format!("--remap-path-prefix={}=hilmem", ws.root().display()));
    if let Some(home) = cargo_home {
        flags.push(format!("--remap-path-prefix={}=cargo-home", home.display()));
    }
    flags.join("\x1f")
}

/// The Rust compiler that builds the firmware (`rustc --version`).
pub fn rustc_version(ws: &Workspace) -> String {
    Command::new("rustc")
        .current_dir(ws.root())
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Whether this process has fetched the firmware's dependencies.
static FETCHED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Which firmware to build: the reference firmware, or a variant for
/// testing it, weighing it, or TFLM's own account of the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Standard,
    /// Leaks a post-processing buffer per frame (the stream scenario must
    /// catch it).
    InjectLeak,
    /// Without the measurement machinery (only to weigh it).
    Uninstrumented,
    /// The interpreter over TFLM's recording allocator, for its breakdown of
    /// the arena (a current TFLM only).
    Recording,
    /// The managed buffers' lifecycle checks compiled out (only to show, in
    /// the capture self-tests, the hazards they prevent).
    UncheckedLifecycle,
    /// Without the search for the least arena (only to weigh it).
    NoLeastArena,
}

impl Variant {
    fn cargo_args(self, board: &Board) -> Vec<String> {
        let mut features = features(board);
        let mut args = Vec::new();
        match self {
            Variant::Standard => {}
            Variant::InjectLeak => features.push("inject-leak"),
            Variant::Uninstrumented => args.push("--no-default-features".to_owned()),
            Variant::Recording => features.push("tflm-recording"),
            Variant::UncheckedLifecycle => features.push("unchecked-lifecycle"),
            Variant::NoLeastArena => features.push("no-least-arena"),
        }
        args.extend(["--features".to_owned(), features.join(",")]);
        args
    }

    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Standard => "",
            Variant::InjectLeak => "+inject-leak",
            Variant::Uninstrumented => "+uninstrumented",
            Variant::Recording => "+recording",
            Variant::UncheckedLifecycle => "+unchecked-lifecycle",
            Variant::NoLeastArena => "+no-least-arena",
        }
    }
}

/// Builds the firmware for `board` and `model`, reporting cargo's progress
/// lines through `progress`.
pub fn build(
    ws: &Workspace,
    board: &Board,
    model: &Model,
    runtime: &Runtime,
    variant: Variant,
    progress: &mut dyn FnMut(&str),
) -> Result<Firmware, BuildError> {
    let name = &model.spec.name;
    let io = |what: &str| io_error(board, what);
    let built = configured(ws, board, model, runtime, variant)?;
    // The image under its model's name (what `--no-build` and `--dry-run`
    // take: the last one built), and under its content, which is what this
    // run deploys and reads: a later build of the same model from another
    // specification cannot replace it under the run.
    let latest = elf_path(ws, board, &model.spec, runtime, variant);
    let inputs = built.inputs().map_err(io("cannot read the firmware's sources"))?;
    let made = ws.firmware_dir(&board.name).join("made").join(&inputs);
    // An image made from the same inputs before is that image: cargo is not
    // run (it would relink the model's crate and redo the link-time
    // optimisation of the whole image: seconds, for the same bytes).
    let earlier = fs::read_to_string(&made).ok().map(|name| latest.with_file_name(name.trim()));
    let elf = match earlier.filter(|elf| elf.is_file() && map_path(elf).is_file()) {
        Some(elf) => elf,
        None => {
            let started = std::time::Instant::now();
            built.cargo("build", &[], progress)?;
            timings::note_since(timings::IMAGE, &format!("{}/{name}{}", board.name, variant.suffix()), started);
            let linked = built.cargo_dir.join(&board.target).join("release/hilmem-firmware");
            let digest = Sha256::digest(fs::read(&linked).map_err(io("cannot read the linked image"))?);
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            let elf = latest.with_file_name(format!("{}-{hex}.elf", latest.file_stem().unwrap().to_string_lossy()));
            // The map first: an image is never newer than the map that
            // describes it; the note of what it was made from last.
            copy_atomic(&built.cargo_dir.join(LINK_MAP), &map_path(&elf)).map_err(io("cannot store the linker map"))?;
            copy_atomic(&linked, &elf).map_err(io("cannot store the firmware image"))?;
            let file_name = elf.file_name().unwrap_or_default().to_string_lossy();
            fs::create_dir_all(made.parent().unwrap()).map_err(io("cannot create the build directory"))?;
            write_atomic(&made, file_name.as_bytes()).map_err(io("cannot note what the image was made from"))?;
            elf
        }
    };
    copy_atomic(&map_path(&elf), &map_path(&latest)).map_err(io("cannot store the linker map"))?;
    copy_atomic(&elf, &latest).map_err(io("cannot store the firmware image"))?;
    let model_bytes = built.model_bytes;
    Ok(Firmware {
        elf,
        board: board.name.clone(),
        model: name.clone(),
        model_bytes,
        tflm: runtime.generation(),
        tflm_identity: tflm_identity(runtime, model.spec.kernels),
        kernels: KernelPath::of(model.spec.kernels, board.tflm_arch.as_deref()),
    })
}

/// Lints the firmware as [`build`] compiles it for `board` and `model`:
/// clippy over every firmware crate, warnings (and the workspace's lints,
/// an `unsafe` without its SAFETY comment among them) as errors.
pub fn lint(ws: &Workspace, board: &Board, model: &Model, runtime: &Runtime) -> Result<(), BuildError> {
    let args = ["--package", "tflm-sys", "--package", "arena", "--package", "hilmem-protocol", "--", "-D", "warnings"];
    configured(ws, board, model, runtime, Variant::Standard)?.cargo("clippy", &args, &mut |_| {})
}

/// The firmware for one board, model, runtime and variant, its
/// configuration written and its target directory held.
struct Configured<'a> {
    ws: &'a Workspace,
    board: &'a Board,
    model: &'a Model,
    runtime: &'a Runtime,
    variant: Variant,
    /// The cargo target directory for the board, runtime and variant.
    cargo_dir: PathBuf,
    /// The model's build configuration.
    config_dir: PathBuf,
    model_bytes: u64,
    /// Held until the caller has taken what cargo leaves in `cargo_dir`.
    _lock: File,
}

/// Takes the board's target directory for the runtime and variant and
/// writes the model's configuration.
fn configured<'a>(
    ws: &'a Workspace,
    board: &'a Board,
    model: &'a Model,
    runtime: &'a Runtime,
    variant: Variant,
) -> Result<Configured<'a>, BuildError> {
    let name = &model.spec.name;
    let board_dir = ws.firmware_dir(&board.name);
    let io = |what: &str| io_error(board, what);

    // One build at a time per target directory: it holds one model's image
    // at a time between the build and the copy below. The directory is per
    // board and runtime (a first build on a new TFLM compiles its library
    // for minutes; builds on other runtimes do not wait for it). The
    // variants of an image share it: cargo keeps the crates of each feature
    // set apart, so each stays warm, and compiles the dependencies once
    // (about 15 CPU-seconds a directory). The configuration is written under
    // the same lock: another run in this checkout that builds the same model
    // from another specification (other inputs, another arena) waits, and
    // never builds with this one's. The recording image, which a run on a
    // current TFLM builds with the standard one, has a configuration of its
    // own (a larger arena).
    let own = match variant {
        Variant::Recording => variant.suffix(),
        _ => "",
    };
    let kernels = model.spec.kernels;
    let cargo_name = for_runtime("cargo", runtime, kernels);
    let cargo_dir = board_dir.join(&cargo_name);
    fs::create_dir_all(&board_dir).map_err(io("cannot create the build directory"))?;
    let lock = File::create(board_dir.join(format!(".build-lock-{cargo_name}")))
        .map_err(io("cannot create the build lock"))?;
    lock.lock().map_err(io("cannot take the build lock"))?;
    let config_dir = board_dir.join("config").join(for_runtime(name, runtime, kernels) + own);
    fs::create_dir_all(&config_dir).map_err(io("cannot create the build directory"))?;
    let model_bytes = write_config(&config_dir, board, model, runtime)?;
    Ok(Configured { ws, board, model, runtime, variant, cargo_dir, config_dir, model_bytes, _lock: lock })
}

impl Configured<'_> {
    /// Runs cargo's `subcommand` (with `args` after the firmware's own) on
    /// the firmware, reporting cargo's output lines through `progress`.
    fn cargo(&self, subcommand: &str, args: &[&str], progress: &mut dyn FnMut(&str)) -> Result<(), BuildError> {
        let Configured { ws, board, model, runtime, .. } = *self;
        let io = |what: &str| io_error(board, what);
        // `cargo build` skips the TFLM source archive (a dependency for no
        // target); `cargo fetch` unpacks it, once per process.
        let manifest = ws.firmware_manifest();
        let cargo_failed = |log| BuildError::Cargo { board: board.name.clone(), model: model.spec.name.clone(), log };
        {
            let mut fetched = FETCHED.lock().unwrap_or_else(|e| e.into_inner());
            if !*fetched {
                let mut fetch = cargo();
                fetch.args(["fetch", "--manifest-path"]).arg(&manifest);
                run_cargo(fetch, progress).map_err(io("cannot run cargo"))?.map_err(cargo_failed)?;
                *fetched = true;
            }
        }
        let mut command = cargo();
        command
            .args([subcommand, "--release", "--package", "hilmem-firmware", "--target", &board.target])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&self.cargo_dir)
            .args(self.variant.cargo_args(board))
            .env("HILMEM_BUILD_CONFIG", &self.config_dir)
            .env("HILMEM_TFLM_CACHE", ws.tflm_cache())
            .env("HILMEM_LINK_MAP", self.cargo_dir.join(LINK_MAP))
            .env("HILMEM_TFLM_KERNELS", model.spec.kernels.name())
            .env_remove("HILMEM_TFLM_ARCH")
            .env_remove(TFLM_DIR_VAR)
            .env("CARGO_ENCODED_RUSTFLAGS", rustflags(ws));
        if let Some(dir) = runtime.dir() {
            command.env(TFLM_DIR_VAR, dir);
        }
        if let Some(arch) = &board.tflm_arch {
            command.env("HILMEM_TFLM_ARCH", arch);
        }
        command.args(args);
        run_cargo(command, progress).map_err(io("cannot run cargo"))?.map_err(cargo_failed)
    }

    /// What `cargo build` makes the image from, as a digest (hex): every
    /// file of the firmware's workspace but its target directories, every
    /// file of the model's configuration, the Rust compiler, the target,
    /// features and flags, the kernels and core, the TFLM (its identity and
    /// where it is), and the environment cargo and the cc crate read.
    /// What cargo would not rebuild for (an edit inside a TFLM checkout, a
    /// new C compiler at the same path) this does not see either.
    fn inputs(&self) -> io::Result<String> {
        let Configured { ws, board, runtime, variant, .. } = *self;
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        for (root, files) in [(ws.root().join("firmware"), true), (self.config_dir.clone(), false)] {
            for file in files_under(&root, files)? {
                field(file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().as_bytes());
                field(&fs::read(&file)?);
            }
        }
        field(rustc_version(ws).as_bytes());
        field(board.target.as_bytes());
        field(variant.cargo_args(board).join(" ").as_bytes());
        field(rustflags(ws).as_bytes());
        field(self.model.spec.kernels.name().as_bytes());
        field(board.tflm_arch.as_deref().unwrap_or_default().as_bytes());
        field(runtime.identity.as_bytes());
        field(runtime.dir().map(|d| d.display().to_string()).unwrap_or_default().as_bytes());
        let mut read: Vec<(String, String)> = std::env::vars().filter(|(name, _)| read_by_the_build(name)).collect();
        read.sort();
        for (name, value) in read {
            field(format!("{name}={value}").as_bytes());
        }
        Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// An I/O failure of a build for `board`, saying what it was doing.
fn io_error(board: &Board, what: &str) -> impl FnOnce(io::Error) -> BuildError {
    let (board, what) = (board.name.clone(), what.to_owned());
    move |source| BuildError::Io { board, what, source }
}

/// Whether cargo, rustc or the cc crate read the environment variable
/// `name` when they build the firmware (its profile, the compilers, their
/// flags).
fn read_by_the_build(name: &str) -> bool {
    const READ: [&str; 13] = [
        "CARGO_PROFILE_",
        "CARGO_BUILD_",
        "CARGO_TARGET_",
        "RUSTC",
        "RUSTFLAGS",
        "CC",
        "CXX",
        "CFLAGS",
        "CXXFLAGS",
        "AR",
        "TARGET_",
        "HOST_",
        "CRATE_CC_",
    ];
    READ.iter().any(|prefix| name.starts_with(prefix))
}

/// The files under `dir`, sorted; with `nested`, those in its folders too,
/// but not in a folder named `target` (cargo's).
fn files_under(dir: &Path, nested: bool) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                if nested && path.file_name().is_some_and(|n| n != "target") {
                    pending.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The linker's map of the image a target directory last linked.
const LINK_MAP: &str = "hilmem-firmware.map";

/// The linker's map of the image at `elf`, kept beside it.
pub fn map_path(elf: &Path) -> PathBuf {
    elf.with_extension("map")
}

/// Where the build of `model` for `board` on `runtime` leaves its image.
pub fn elf_path(ws: &Workspace, board: &Board, model: &ModelSpec, runtime: &Runtime, variant: Variant) -> PathBuf {
    let name = for_runtime(&model.name, runtime, model.kernels);
    ws.firmware_dir(&board.name).join("elf").join(format!("{name}{}.elf", variant.suffix()))
}

/// The image the last build left for `board` and `model`, without building
/// (the ELF may not exist).
pub fn built(ws: &Workspace, board: &Board, model: &Model, runtime: &Runtime, variant: Variant) -> Firmware {
    let name = &model.spec.name;
    Firmware {
        elf: elf_path(ws, board, &model.spec, runtime, variant),
        board: board.name.clone(),
        model: name.clone(),
        model_bytes: model.bytes.len() as u64,
        tflm: runtime.generation(),
        tflm_identity: tflm_identity(runtime, model.spec.kernels),
        kernels: KernelPath::of(model.spec.kernels, board.tflm_arch.as_deref()),
    }
}

/// Runs cargo, passing each line of its output to `progress`; on failure the
/// error carries the last lines.
fn run_cargo(mut command: Command, progress: &mut dyn FnMut(&str)) -> std::io::Result<Result<(), String>> {
    children::guard(&mut command);
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
    children::started(child.id(), "cargo");
    let mut tail = std::collections::VecDeque::new();
    // Read to the end (a line that is not UTF-8 is shown lossily), then reap.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = Vec::new();
    while stderr.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        progress(text.trim());
        if tail.len() == LOG_TAIL {
            tail.pop_front();
        }
        tail.push_back(text);
        line.clear();
    }
    let status = child.wait();
    children::reaped(child.id());
    Ok(if status?.success() { Ok(()) } else { Err(Vec::from(tail).join("\n")) })
}
