//! Shared set-up: the repository's boards and models, and builds in the
//! shared firmware target directories (cargo and the harness's build lock
//! serialise concurrent builds).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use object::{Object, ObjectSection};

use harness::config::board::{Board, DEFAULT_BOARD};
use harness::config::models::{self, Model};
use harness::config::runtime::Runtime;
use harness::device::runner::{Run, RunOptions};
use harness::image::elf::{self, ImageSizes};
use harness::image::firmware::{self, Firmware, Variant};
use harness::model::tail::Layout;
use harness::run::measurement::{Measurement, BUILD, DEFAULT_FRAMES};
use harness::run::results::Results;
use harness::run::{self, Event, Options};
use harness::tflm::tree::Tree;
use harness::Workspace;
use hilmem_protocol::scenario::SINGLE_FRAME;

pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The models of the repository's `hil.toml`.
pub const EXAMPLE_MODELS: [&str; 4] = ["hello_world", "micro_speech", "magic_wand", "person_detection"];

/// The set of `firmware/models/ops/hil.toml` that holds every one-operator
/// model, in one image.
pub const EVERY_OPERATOR: &str = "every-operator";
/// The set of the models whose operators the 2023 generation registers.
pub const EVERY_OPERATOR_2023: &str = "every-operator-2023";

pub fn ws() -> Workspace {
    Workspace::from_source()
}

pub fn board(name: &str) -> Board {
    Board::load(&ws(), name).unwrap()
}

pub fn default_board() -> Board {
    board(DEFAULT_BOARD)
}

/// A model from the repository's `hil.toml`, read.
pub fn model(name: &str) -> Model {
    let file = models::load(&ws().models_file()).unwrap();
    file.models.into_iter().find(|m| m.name == name).unwrap().read(&Runtime::bundled()).unwrap()
}

pub fn build(board: &Board, model: &Model) -> (Firmware, ImageSizes) {
    build_variant(board, model, Variant::Standard)
}

pub fn build_variant(board: &Board, model: &Model, variant: Variant) -> (Firmware, ImageSizes) {
    let firmware = firmware::build(&ws(), board, model, &Runtime::bundled(), variant, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let sizes = elf::sizes(&firmware.elf, &board.layout).unwrap();
    (firmware, sizes)
}

pub fn run(board: &Board, model: &Model, firmware: &Firmware, scenario: &str, timeout: Duration) -> Run {
    run::execute(board, &model.spec, firmware, scenario, DEFAULT_FRAMES, timeout, &RunOptions::default(), &|_| {})
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Builds and runs `scenario` and turns the run into a record.
pub fn measure(board: &Board, model_name: &str, scenario: &str) -> (Measurement, Run) {
    let model = model(model_name);
    let (firmware, sizes) = build(board, &model);
    let run = run(board, &model, &firmware, scenario, TIMEOUT);
    let record = run::record::record(board, &model, &firmware, sizes, scenario, &run).unwrap_or_else(|e| panic!("{e}"));
    (record, run)
}

/// The records of what ran: every record but the build records.
pub fn ran(results: &Results) -> impl Iterator<Item = &Measurement> {
    results.records.iter().filter(|r| r.scenario != BUILD)
}

/// `hil`'s options for hello_world alone, in one scenario, on the default
/// board.
pub fn hello_world_in(scenario: &str) -> Options {
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models = vec!["hello_world".into()];
    options.scenarios = vec![scenario.into()];
    options
}

/// Runs `hil`'s single-frame scenario on the default board with a models
/// file written into `dir`.
pub fn hil_with_models(dir: &Path, models_toml: &str) -> Results {
    let file = dir.join("hil.toml");
    std::fs::write(&file, models_toml).unwrap();
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models_file = file;
    options.scenarios = vec![SINGLE_FRAME.into()];
    // Every run the progress was told of is counted as made or not made,
    // whatever failed on the way (a progress bar's count reaches its total).
    let counted = std::sync::Mutex::new((0, 0));
    let results = run::run(&ws(), &options, &|event| match event {
        Event::Planned { runs, .. } => counted.lock().unwrap().0 = runs,
        Event::Finished { .. } | Event::Skipped { .. } => counted.lock().unwrap().1 += 1,
        _ => {}
    })
    .unwrap();
    let (planned, ended) = counted.into_inner().unwrap();
    assert_eq!(ended, planned, "runs planned and runs ended or skipped: {:?}", results.failed);
    results
}

/// A figure TFLM printed itself, as `<prefix><n> bytes`.
pub fn printed_by_tflm(run: &Run, prefix: &str) -> i64 {
    let found =
        run.session.log.iter().find_map(|l| l.trim().strip_prefix(prefix)?.strip_suffix(" bytes")?.parse().ok());
    found.unwrap_or_else(|| panic!("TFLM did not print `{prefix}`; log: {:#?}", run.session.log))
}

/// `layouts` as arm-none-eabi-g++ lays the types out for the Cortex-M7 with
/// `tree`'s flags, after including `sources` (paths in the tree): `sizeof`
/// and `alignof` of each, read back from the compiled object.
pub fn compiled_layouts(tree: &Tree, sources: &[String], layouts: &[Layout]) -> Vec<Layout> {
    let mut probe: String = sources.iter().map(|s| format!("#include \"{s}\"\n")).collect();
    probe += "extern \"C\" __attribute__((section(\".hm_layout\"), used)) const unsigned hm_layout[][2] = {\n";
    for l in layouts {
        probe += &format!("  {{sizeof({0}), alignof({0})}},\n", l.cxx);
    }
    probe += "};\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.cc"), probe).unwrap();
    let mut gxx = Command::new("arm-none-eabi-g++");
    gxx.current_dir(dir.path()).args(["-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-w", "-c", "probe.cc"]);
    // Some types are private to a class (a struct nested in it): the probe
    // reads their size and alignment all the same.
    gxx.arg("-fno-access-control");
    gxx.args(&tree.flags.cxx);
    gxx.args(tree.include_dirs().iter().map(|d| format!("-I{}", d.display())));
    let out = gxx.output().expect("arm-none-eabi-g++ (run `cargo xtask doctor`)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let object_file = std::fs::read(dir.path().join("probe.o")).unwrap();
    let object = object::File::parse(&*object_file).unwrap();
    let data = object.section_by_name(".hm_layout").unwrap().data().unwrap().to_vec();
    let word = |i: usize| u32::from_le_bytes(data[4 * i..4 * i + 4].try_into().unwrap()) as usize;
    layouts.iter().enumerate().map(|(i, l)| Layout { bytes: word(2 * i), align: word(2 * i + 1), ..*l }).collect()
}
