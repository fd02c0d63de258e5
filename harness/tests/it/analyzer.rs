//! The analyzer against the bundled TFLM: its tables against TFLM's sources
//! and types as arm-none-eabi-g++ lays them out, and its prediction against
//! what TFLM does on the emulated board.

use std::collections::BTreeMap;

use harness::bench::branching_model;
use harness::model::analysis::Analysis;
use harness::model::planner::Planner;
use harness::model::tail::cmsis_nn::KernelPath;
use harness::model::tail::current;
use harness::model::tail::tfmicro2020 as tail;
use harness::model::tail::Layout;
use harness::tflm::bundled;
use hilmem_protocol::scenario::SINGLE_FRAME;

use harness::tflm::tree::{bundled_tree, Generation};

use crate::support::{
    compiled_layouts, default_board, measure, model, printed_by_tflm, ws, EVERY_OPERATOR, EVERY_OPERATOR_2023,
    EXAMPLE_MODELS,
};

fn source(path: &str) -> String {
    let file = bundled_tree().root.join("tensorflow/lite").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn code_of(name: &str) -> i32 {
    bundled::BUILTIN_NAMES.iter().find(|(_, n)| *n == name).unwrap_or_else(|| panic!("no builtin `{name}`")).0
}

/// The kernel source file of an `OpData` type: `...::conv::OpData` is in
/// `micro/kernels/conv.cc`.
fn kernel_of(op_data: &Layout) -> &str {
    op_data.cxx.trim_end_matches("::OpData").rsplit("::").next().unwrap()
}

/// The operators `AllOpsResolver` registers, with their versions: each
/// `AddBuiltin(BuiltinOperator_X, Register_X()[, min, max])`, where a call
/// without versions registers version 1 (`MicroMutableOpResolver`'s
/// default, checked too).
fn registered_in(resolver: &str) -> Vec<(i32, i32, i32)> {
    let mut registered: Vec<(i32, i32, i32)> = resolver
        .split("AddBuiltin(BuiltinOperator_")
        .skip(1)
        .map(|call| {
            let call = call.split(");").next().unwrap();
            // Drop `/* min_version = */` comments.
            let args: String = call.split("/*").map(|part| part.rsplit("*/").next().unwrap()).collect();
            let args: Vec<&str> = args.split(',').map(str::trim).collect();
            let version = |i: usize| args.get(i).map_or(1, |v| v.parse().unwrap_or_else(|_| panic!("{call}")));
            (code_of(args[0]), version(2), version(3))
        })
        .collect();
    registered.sort();
    registered
}

#[test]
fn the_operator_tables_match_the_bundled_sources() {
    let header = source("micro/micro_mutable_op_resolver.h");
    assert!(header.contains("TfLiteRegistration* registration,\n                          int version = 1)"));
    let resolver = source("micro/kernels/all_ops_resolver.cc");
    assert_eq!(bundled::REGISTERED, registered_in(&resolver));
    let schema = source("schema/schema_generated.h");
    for (code, name) in bundled::BUILTIN_NAMES {
        assert!(schema.contains(&format!("BuiltinOperator_{name} = {code},")), "{name}");
    }
}

/// `ParseOpData` allocates one options struct per operator: the `case`s
/// before each `Allocate<T>()` name the operators that get a `T`.
#[test]
fn the_options_table_matches_parse_op_data() {
    let mut parsed = BTreeMap::new();
    let mut pending = Vec::new();
    for line in source("core/api/flatbuffer_conversions.cc").lines() {
        if let Some((name, _)) = line.trim().strip_prefix("case BuiltinOperator_").and_then(|l| l.split_once(':')) {
            pending.push(code_of(name));
        } else if let Some(t) = line.split("Allocate<").nth(1).and_then(|t| t.split('>').next()) {
            parsed.extend(pending.drain(..).map(|code| (code, t.to_owned())));
        } else if line.contains("return") {
            pending.clear();
        }
    }
    let expected: Vec<(i32, String)> =
        bundled::REGISTERED.iter().filter_map(|&(code, _, _)| Some((code, parsed.get(&code)?.clone()))).collect();
    let table: Vec<(i32, String)> = tail::OPTIONS.iter().map(|&(code, l)| (code, l.cxx.to_owned())).collect();
    assert_eq!(table, expected);
}

/// The kernels that allocate in the arena are the ones the prediction
/// knows: `OpData` at `Init`, per-channel arrays in conv and depthwise
/// conv, scratch buffers in SVDF.
#[test]
fn the_kernel_table_matches_the_kernels_that_allocate() {
    let kernels = bundled_tree().root.join("tensorflow/lite/micro/kernels");
    let mut persistent = Vec::new();
    for entry in std::fs::read_dir(&kernels).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.extension().is_none_or(|e| e != "cc") || name.ends_with("_test") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let allocations = text.matches("->AllocatePersistentBuffer(").count();
        let scratch = text.matches("->RequestScratchBufferInArena(").count();
        match name.as_str() {
            "conv" | "depthwise_conv" => assert_eq!(allocations, 3, "{name}: OpData and two per-channel arrays"),
            "svdf" => assert_eq!((allocations, scratch), (1, 3), "svdf"),
            _ => assert!(allocations <= 1 && scratch == 0, "{name} allocates in a way the prediction ignores"),
        }
        if text.contains("AllocatePersistentBuffer(context, sizeof(OpData)") {
            let registers = text.split("Register_").skip(1).filter_map(|r| r.split("()").next());
            persistent.extend(registers.map(|op| (code_of(op), name.clone())));
        }
    }
    persistent.sort();
    let table: Vec<(i32, String)> = tail::OP_DATA.iter().map(|(code, l)| (*code, kernel_of(l).to_owned())).collect();
    assert_eq!(table, persistent);
}

/// Every type of the prediction, compiled (see [`compiled_layouts`]).
#[test]
fn the_tail_layouts_match_the_bundled_tflm() {
    let layouts = tail::layouts();
    // The sources, for types private to them (`AllocationInfo`, `OpData`).
    let mut sources = vec!["tensorflow/lite/micro/micro_allocator.cc".to_owned()];
    sources.extend(tail::OP_DATA.iter().map(|(_, l)| format!("tensorflow/lite/micro/kernels/{}.cc", kernel_of(l))));
    assert_eq!(compiled_layouts(&bundled_tree(), &sources, &layouts), layouts);
}

/// For every example model: the head, every planned tensor's offset and the
/// tail are what TFLM itself planned, printed and placed on the board.
#[test]
fn the_prediction_is_what_tflm_does_on_the_board() {
    let board = default_board();
    for name in EXAMPLE_MODELS {
        let analysis =
            Analysis::of(name, &model(name).parsed, Generation::Tfmicro2020, KernelPath::Reference, Planner::Greedy)
                .unwrap();
        let (record, run) = measure(&board, name, SINGLE_FRAME);
        let as_i64 = |bytes: Option<usize>| bytes.map(|b| b as i64);
        assert_eq!(analysis.greedy_bytes as i64, printed_by_tflm(&run, "Head usage: "), "{name} head");
        assert_eq!(as_i64(analysis.tail_bytes), Some(printed_by_tflm(&run, "Tail usage: ")), "{name} tail");
        assert_eq!(as_i64(analysis.predicted_arena_bytes), Some(record.metrics["arena_used_bytes"]), "{name} used");
        let planned: BTreeMap<u32, u32> =
            analysis.planned.iter().map(|t| (t.index as u32, t.greedy_offset as u32)).collect();
        let in_head: BTreeMap<u32, u32> = run
            .session
            .placements
            .iter()
            .filter(|(_, &offset)| (offset as usize) < analysis.greedy_bytes)
            .map(|(&t, &o)| (t, o))
            .collect();
        assert!(planned.len() > 2, "{name}");
        assert_eq!(in_head, planned, "{name}: tensor -> offset, placed by TFLM vs planned");
    }
}

/// The least arena of the analysis is exactly where TFLM stops accepting the
/// model, whether planning (hello_world) or the plan itself (micro_speech)
/// sets it; and "auto" builds with the suggestion for the board and runs.
#[test]
fn the_least_arena_is_where_tflm_starts_to_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let models = crate::support::ws().root().join("firmware/models");
    let entry = |name: &str, file: &str, arena: String, input: &str| {
        format!(
            "[[model]]\nname = \"{name}\"\nfile = \"{}\"\narena_bytes = {arena}\n[[model.input]]\nname = \"x\"\n{input}\n",
            models.join(file).display()
        )
    };
    let analysis = |name: &str| {
        Analysis::of(name, &model(name).parsed, Generation::Tfmicro2020, KernelPath::Reference, Planner::Greedy)
            .unwrap()
    };
    let least = |name: &str| analysis(name).predicted_least_arena_bytes.unwrap();
    let (hello, speech) = (least("hello_world"), least("micro_speech"));
    let hello_input = "values = [0.5]";
    let speech_input = format!("file = \"{}\"", models.join("yes_micro_f2e59fea_nohash_1.data").display());
    let toml = [
        entry("hello-least", "hello_world.tflite", hello.to_string(), hello_input),
        entry("hello-short", "hello_world.tflite", (hello - 16).to_string(), hello_input),
        entry("speech-least", "micro_speech.tflite", speech.to_string(), &speech_input),
        entry("speech-short", "micro_speech.tflite", (speech - 16).to_string(), &speech_input),
        entry("hello-auto", "hello_world.tflite", "\"auto\"".into(), hello_input),
    ]
    .concat();
    let results = crate::support::hil_with_models(dir.path(), &toml);
    let capacity = |name: &str| {
        let r =
            crate::support::ran(&results).find(|r| r.model == name).unwrap_or_else(|| panic!("{name}: {results:#?}"));
        assert!(r.passed(), "{r:?}");
        r.metrics["arena_capacity_bytes"] as usize
    };
    assert_eq!((capacity("hello-least"), capacity("speech-least")), (hello, speech));
    // The firmware's own search finds the same least arena, in any arena
    // that holds it.
    for name in ["hello-least", "speech-least", "hello-auto"] {
        let found = crate::support::ran(&results).find(|r| r.model == name).unwrap().metrics["least_arena_bytes"];
        assert_eq!(found as usize, if name.starts_with("hello") { hello } else { speech }, "{name}");
    }
    // Planning borrows room for hello_world; micro_speech needs its plan.
    let hello_analysis = analysis("hello_world");
    assert!(hello > hello_analysis.predicted_arena_bytes.unwrap(), "{hello}");
    for name in ["hello-short", "speech-short"] {
        let failed = results.failed.iter().find(|f| f.model == name).unwrap_or_else(|| panic!("{name} ran"));
        assert!(failed.error.contains("TFLM could not load the model"), "{}", failed.error);
    }
    let suggested = harness::config::fit::fit(&hello_analysis, &default_board()).unwrap().suggested_arena_bytes;
    assert_eq!(capacity("hello-auto"), suggested);
}

/// The one-operator models of `firmware/models/ops/` are what their
/// generator writes (rewrite them with `HILMEM_BLESS=1 cargo xtask test --
/// operator_models`), and the models file there runs each of them.
#[test]
fn the_operator_models_are_what_their_generator_writes() {
    let dir = ws().root().join("firmware/models/ops");
    let file = harness::config::models::load(&dir.join("hil.toml")).unwrap();
    let generated = crate::operator_models::operator_models();
    for (stem, bytes) in &generated {
        let path = dir.join(format!("{stem}.tflite"));
        if std::env::var_os("HILMEM_BLESS").is_some() {
            std::fs::write(&path, bytes).unwrap();
        }
        assert!(std::fs::read(&path).is_ok_and(|on_disk| on_disk == *bytes), "{} is stale; bless it", path.display());
        assert!(file.models.iter().any(|m| m.file == path), "{}: no model of hil.toml runs it", path.display());
    }
    let models = file.models.iter().filter(|m| m.set.is_none());
    assert_eq!(
        models.clone().count(),
        generated.len(),
        "a model of {} that the generator does not write",
        dir.display()
    );
    // The sets the tests on a current and a 2023 TFLM run hold every model
    // the analyzer predicts on that generation, in order: all but the CIFG
    // LSTM today, which today's TFLM does not load.
    for (name, tflm) in [(EVERY_OPERATOR, Generation::Current), (EVERY_OPERATOR_2023, Generation::Tflm2023)] {
        let predicted: Vec<&str> = models
            .clone()
            .filter(|m| current::not_predicted(&m.parse().unwrap().parsed, KernelPath::Reference, tflm).is_none())
            .map(|m| m.name.as_str())
            .collect();
        let set = file.models.iter().find(|m| m.name == name).and_then(|m| m.set.as_ref());
        let held: Vec<&str> = set.expect(name).models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(held, predicted, "the set {name} holds the models {tflm} is predicted for");
    }
}

/// The branching example model is what its generator writes (rewrite it
/// with `HILMEM_BLESS=1 cargo xtask test -- branching`).
#[test]
fn the_branching_model_file_is_what_its_generator_writes() {
    let path = ws().root().join("firmware/models/branching.tflite");
    if std::env::var_os("HILMEM_BLESS").is_some() {
        std::fs::write(&path, branching_model()).unwrap();
    }
    assert!(std::fs::read(&path).unwrap() == branching_model(), "{} is stale; bless it", path.display());
}
