//! Build records: every board profile built and checked without a target,
//! the footprint adding up, the same figures as a run of the same image,
//! and a model change that adds a kernel named as what grew.

use std::collections::BTreeMap;

use harness::config::board::{self, Layout, DEFAULT_BOARD};
use harness::config::runtime::Runtime;
use harness::image::footprint::{MERGED, MODEL, OTHER};
use harness::model::tflite::{self, Model, Operator, OperatorCode, Subgraph, Tensor};
use harness::run::measurement::{Measurement, BUILD};
use harness::run::results::Results;
use harness::run::{self, Options};
use harness::verdict::approval::{self, Filter};
use harness::verdict::baseline::Source;
use harness::verdict::compare::{self, Policy, Verdict};
use hilmem_protocol::scenario::SINGLE_FRAME;

use crate::support::*;

fn build_record<'a>(results: &'a Results, board: &str) -> &'a Measurement {
    let found = results.records.iter().find(|r| r.board == board && r.scenario == BUILD);
    found.unwrap_or_else(|| panic!("no build record for {board}: {:?}", results.failed))
}

/// Every profile, real or emulated, builds hello_world and records its
/// image on this machine, which has no probe; the components add up to the
/// ELF's figures exactly, and the model's flatbuffer and its operator's
/// kernel are found among them.
#[test]
fn every_profile_builds_and_records_without_a_target_and_its_footprint_adds_up() {
    let ws = ws();
    let boards = board::load_all(&ws).unwrap();
    assert_eq!(boards.len(), 8);
    let mut options = Options::new(&ws, boards.clone());
    options.models = vec!["hello_world".into()];
    options.build_only = true;
    let results = run::run(&ws, &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:?}", results.failed);
    assert_eq!(results.records.len(), boards.len(), "only build records");
    let model_bytes = model("hello_world").bytes.len() as i64;
    for board in &boards {
        let name = &board.name;
        let record = build_record(&results, name);
        assert!(record.passed(), "{name}: {:?}", record.checks);
        let footprint = record.footprint.as_ref().unwrap();
        let sum = |parts: &BTreeMap<String, i64>| parts.values().sum::<i64>();
        assert_eq!(sum(&footprint.static_ram), record.metrics["static_ram_bytes"], "{name}");
        let bare_metal = matches!(board.layout, Layout::BareMetal(_));
        if bare_metal {
            let flash = record.metrics["flash_bytes"];
            assert_eq!(sum(&footprint.flash), flash, "{name}");
            // What the map cannot attribute stays small.
            let unowned = footprint.flash.get(OTHER).copied().unwrap_or(0);
            assert!(unowned * 100 < flash, "{name}: {unowned} of {flash} bytes unattributed");
            assert!(footprint.flash[MERGED] > 0, "{name}");
            assert_eq!(footprint.flash[MODEL], (model_bytes + 15) / 16 * 16, "{name}");
            assert!(footprint.flash["kernel:FULLY_CONNECTED"] > 0, "{name}: {footprint:?}");
            assert!(record.checks.iter().any(|c| c.name == "flash image inside FLASH"), "{name}");
            assert!(record.metrics.contains_key("predicted_arena_bytes"), "{name}");
        } else {
            assert!(footprint.flash.is_empty() && !record.metrics.contains_key("flash_bytes"), "{name}");
        }
    }
}

/// A run of the image records the same figures of it as a build alone.
#[test]
fn a_build_record_has_the_figures_a_run_of_the_same_image_reports() {
    for name in ["qemu-m7", "host"] {
        let mut build_only = hello_world_in(SINGLE_FRAME);
        build_only.boards = vec![board(name)];
        build_only.build_only = true;
        let built = run::run(&ws(), &build_only, &|_| {}).unwrap();
        let mut full = build_only.clone();
        full.build_only = false;
        let ran = run::run(&ws(), &full, &|_| {}).unwrap();
        let measured = ran.records.iter().find(|r| r.scenario == SINGLE_FRAME).expect("the run's record");
        let record = build_record(&built, name);
        for figure in ["model_bytes", "flash_bytes", "static_ram_bytes", "arena_capacity_bytes", "pool_capacity_bytes"]
        {
            assert_eq!(record.metrics.get(figure), measured.metrics.get(figure), "{name}: {figure}");
        }
        assert_eq!(build_record(&ran, name), record, "{name}: a full run makes the same build record");
        if let Some(predicted) = record.metrics.get("predicted_arena_bytes") {
            assert_eq!(*predicted, measured.metrics["arena_used_bytes"], "{name}");
        }
    }
}

/// A float model of ADDs, with one more operator (a RELU) when `relu`.
fn model_file(relu: bool) -> Vec<u8> {
    let tensor = |name: &str| Tensor::plain(name, &[1, 4], 0, 0);
    let mut operators = vec![Operator {
        opcode_index: 0,
        inputs: vec![0, 0],
        outputs: vec![1],
        options: 11,
        window: None,
        adjoint: None,
        variable: None,
    }];
    let mut codes = vec![OperatorCode { builtin: 0, custom: None, version: 1 }];
    if relu {
        operators.push(Operator::plain(1, &[1], &[2]));
        codes.push(OperatorCode { builtin: 19, custom: None, version: 1 });
    }
    let tensors = (0..=operators.len()).map(|i| tensor(&format!("t{i}"))).collect();
    tflite::write(&Model {
        version: 3,
        description: Some("hilmem footprint test model".into()),
        metadata: vec![],
        operator_codes: codes,
        subgraphs: vec![Subgraph { tensors, inputs: vec![0], outputs: vec![operators.len() as i32], operators }],
        buffers: vec![0],
        offline_plan: None,
    })
}

/// A model change that adds an operator: `flash_bytes` regresses against
/// the approved build record, and the comparison names the new operator's
/// kernel as the component that grew.
#[test]
fn a_model_with_one_more_operator_shows_its_kernel_as_what_grew() {
    let dir = tempfile::tempdir().unwrap();
    let baselines = dir.path().join("baselines");
    let measure = |relu: bool| {
        std::fs::write(dir.path().join("m.tflite"), model_file(relu)).unwrap();
        let config = dir.path().join("hil.toml");
        let body = "[[model]]\nname = \"footprint_m\"\nfile = \"m.tflite\"\narena_bytes = 4096\n[[model.input]]\nname = \"x\"\nvalues = [0.0, 1.0, 2.0, 3.0]\n";
        std::fs::write(&config, body).unwrap();
        let mut options = Options::new(&ws(), vec![board("qemu-m7")]);
        options.models_file = config;
        options.build_only = true;
        let results = run::run(&ws(), &options, &|_| {}).unwrap();
        assert!(results.failed.is_empty(), "{:?}", results.failed);
        let comparison = compare::compare(&results, &Source::WorkTree(baselines.clone()), &Policy::default()).unwrap();
        (results, comparison)
    };
    let (before, comparison) = measure(false);
    let out = dir.path().join("out");
    approval::write_pending(&before, &comparison, &out).unwrap();
    approval::approve(&out, &baselines, &[Filter::default()], "Reviewer", None).unwrap();

    let (after, comparison) = measure(true);
    let grown = comparison.rows.iter().find(|r| r.scenario == BUILD && r.metric == "flash_bytes").unwrap();
    assert_eq!(grown.verdict, Verdict::Regressed, "{grown:?}");
    let (component, bytes) = &grown.moved[0];
    assert_eq!(component, "kernel:RELU", "{:?}", grown.moved);
    let kernel = after.records[0].footprint.as_ref().unwrap().flash["kernel:RELU"];
    assert_eq!(*bytes, kernel, "the whole kernel is new");
    assert!(*bytes > 0 && grown.moved.iter().all(|(c, _)| c != "kernel:ADD"), "{:?}", grown.moved);
    let total: i64 = grown.moved.iter().map(|(_, d)| d).sum();
    assert_eq!(total, grown.delta().unwrap(), "the moved components account for the whole change");
    let text = harness::report::terminal::comparison_table(&comparison);
    assert!(text.contains(&format!("REGRESSED: +{bytes} RELU kernel")), "{text}");
}

/// The firmware's crates pass clippy as each platform compiles them (the
/// emulated board's UART, a real board's RTT, the host), with the
/// firmware's lints: every `unsafe` block, and every unsafe operation in an
/// `unsafe fn`, says why it is sound.
#[test]
fn the_firmware_passes_clippy_with_every_unsafe_explained_on_each_platform() {
    for name in [DEFAULT_BOARD, "nucleo-h743", "host"] {
        let board = board(name);
        let lint = harness::image::firmware::lint(&ws(), &board, &model("hello_world"), &Runtime::bundled());
        if let Err(e) = lint {
            panic!("{name}: {e}");
        }
    }
}

/// The HTML page is drawn from what the run read: a models file and a
/// board profile changed after the run (here the models file broken) do not
/// change the analyses and boards it shows.
#[test]
fn the_page_shows_the_models_and_boards_the_run_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ws().root().join("firmware/models/hello_world.tflite"), dir.path().join("hello.tflite")).unwrap();
    let file = dir.path().join("hil.toml");
    let toml = "[[model]]\nname = \"hello\"\nfile = \"hello.tflite\"\narena_bytes = 3072\n\
                [[model.input]]\nname = \"x\"\nvalues = [0.5]\n";
    std::fs::write(&file, toml).unwrap();
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models_file = file.clone();
    options.build_only = true;
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert_eq!(results.models.len(), 1, "{:?}", results.failed);
    std::fs::write(&file, "[[model]\nnot a models file").unwrap();
    let comparison = compare::compare(&results, &Source::WorkTree(dir.path().into()), &Policy::default()).unwrap();
    let page =
        harness::report::page::gather::gather(&ws(), results, comparison, &options.boards, dir.path(), dir.path());
    assert!(page.notes.is_empty(), "{:?}", page.notes);
    assert_eq!(page.analyses.iter().map(|a| a.model.as_str()).collect::<Vec<_>>(), ["hello"]);
    assert_eq!(page.boards.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), [DEFAULT_BOARD]);
}
