//! Shared set-up: the default board, the repository's models, and builds in
//! the shared firmware target directory (cargo and the harness's build lock
//! serialise concurrent builds).

use std::path::Path;
use std::time::Duration;

use harness::board::{Board, DEFAULT_BOARD};
use harness::elf::{self, ImageSizes};
use harness::firmware::{self, Firmware};
use harness::hil::{self, Options, Results};
use harness::models::{self, ModelSpec};
use harness::qemu::Run;
use harness::Workspace;

pub const TIMEOUT: Duration = Duration::from_secs(60);

pub fn ws() -> Workspace {
    Workspace::from_source()
}

pub fn board() -> Board {
    Board::load(&ws(), DEFAULT_BOARD).unwrap()
}

/// A model from the repository's `hil.toml`.
pub fn model(name: &str) -> ModelSpec {
    models::load(&ws().models_file()).unwrap().into_iter().find(|m| m.name == name).unwrap()
}

pub fn build(model: &ModelSpec) -> (Firmware, ImageSizes) {
    let board = board();
    let firmware = firmware::build(&ws(), &board, model, &mut |_| {}).unwrap();
    let sizes = elf::sizes(&firmware.elf, &board.memory).unwrap();
    (firmware, sizes)
}

pub fn run(firmware: &Firmware, scenario: &str, timeout: Duration) -> Run {
    hil::execute(&board(), firmware, scenario, timeout).unwrap()
}

/// Runs `hil` on the default board with a models file written into `dir`.
pub fn hil_with_models(dir: &Path, models_toml: &str) -> Results {
    let file = dir.join("hil.toml");
    std::fs::write(&file, models_toml).unwrap();
    let options = Options { board: DEFAULT_BOARD.into(), models_file: file, models: vec![], timeout: TIMEOUT };
    hil::run(&ws(), &options, &mut |_| {}).unwrap()
}

/// A figure TFLM printed itself, as `<prefix><n> bytes`.
pub fn printed_by_tflm(run: &Run, prefix: &str) -> i64 {
    let found =
        run.session.log.iter().find_map(|l| l.trim().strip_prefix(prefix)?.strip_suffix(" bytes")?.parse().ok());
    found.unwrap_or_else(|| panic!("TFLM did not print `{prefix}`; log: {:#?}", run.session.log))
}
