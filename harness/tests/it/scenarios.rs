//! The scenarios on the default board: what each must show.

use harness::image::firmware::Variant;
use harness::run::measurement::Measurement;
use harness::run::{self, Options};
use harness::verdict::baseline::Source;
use harness::verdict::compare::{self, Policy, Verdict};
use hilmem_protocol::metric;
use hilmem_protocol::scenario::{
    CONCURRENT_OTA, DMA_STREAM, DMA_STREAM_SLOW, LOG_HEAVY, MULTI_MODEL, SCENARIOS, SINGLE_FRAME, STREAM,
};

use crate::support::*;

fn record<'a>(records: &'a [Measurement], model: &str, scenario: &str) -> &'a Measurement {
    records
        .iter()
        .find(|r| r.model == model && r.scenario == scenario)
        .unwrap_or_else(|| panic!("no {model}/{scenario}"))
}

fn check_passed(record: &Measurement, name: &str) -> bool {
    record.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check `{name}` in {record:?}")).passed
}

#[test]
fn every_scenario_runs_and_shows_what_it_must() {
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models = vec!["hello_world".into(), "micro_speech".into()];
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    // Every scenario but multi-model, which runs sets.
    assert_eq!(ran(&results).count(), 2 * (SCENARIOS.len() - 1));
    for r in &results.records {
        assert!(r.passed(), "{}/{}: {:?}", r.model, r.scenario, r.checks);
    }

    for model in ["hello_world", "micro_speech"] {
        let single = record(&results.records, model, SINGLE_FRAME);
        let stream = record(&results.records, model, STREAM);
        let logging = record(&results.records, model, LOG_HEAVY);
        // Logging costs: more stack (formatting) and pool (the ring).
        for key in [metric::STACK_PEAK_BYTES, metric::HEAP_PEAK_BYTES] {
            assert!(logging.metrics[key] > single.metrics[key], "{model}: {key} log-heavy vs single-frame");
        }
        assert!(logging.metrics["pool_log_peak_bytes"] > 0);
        // The stream settles: no growth after warm-up, two frames in flight.
        assert_eq!(stream.metrics[metric::HEAP_GROWTH_BYTES], 0, "{model}");
        assert_eq!(stream.metrics[metric::FRAMES], i64::from(options.frames));
        assert!(stream.metrics["pool_input_frame_peak_bytes"] >= 2 * single.metrics["pool_input_frame_peak_bytes"]);
        assert_eq!(stream.metrics["lifecycle_transitions"], 5 * i64::from(options.frames) - 1);
    }

    // hello_world's update (micro_speech) needs more arena than there is:
    // refused with its reason, and hello_world answers right afterwards.
    let refused = record(&results.records, "hello_world", CONCURRENT_OTA);
    assert_eq!(refused.metrics[metric::OTA_ACCEPTED], 0);
    assert_eq!(refused.notes["ota_gate"], "rejected: its least arena is 7024 bytes, the firmware's arena 3072");
    assert!(
        check_passed(refused, "output for x-half-pi") && check_passed(refused, "update to `micro_speech` rejected")
    );
    assert_eq!(refused.metrics[metric::OTA_STAGING_PEAK_BYTES], 18304, "micro_speech's 18288 bytes, in cache lines");

    // micro_speech's update (hello_world) fits: activated in the same arena,
    // where it computes sin(0).
    let accepted = record(&results.records, "micro_speech", CONCURRENT_OTA);
    assert_eq!(accepted.metrics[metric::OTA_ACCEPTED], 1);
    assert!(check_passed(accepted, "output for ota-x-0") && check_passed(accepted, "update to `hello_world` accepted"));
    assert_eq!(accepted.metrics[metric::ARENA_USED_BYTES], 1472, "hello_world now runs in the arena");
}

/// A soak: hello_world's stream for 100,000 frames on QEMU. The pool does
/// not grow over the run, every frame buffer went round its lifecycle (the
/// firmware checks at every step that none is stuck), and every frame ran.
#[test]
fn a_100000_frame_stream_does_not_grow() {
    let mut options = hello_world_in(STREAM);
    options.frames = 100_000;
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    let stream = record(&results.records, "hello_world", STREAM);
    assert!(stream.passed(), "{:?}", stream.checks);
    assert_eq!(stream.metrics[metric::FRAMES], 100_000);
    assert_eq!(stream.metrics[metric::HEAP_GROWTH_BYTES], 0);
    assert_eq!(stream.metrics["lifecycle_transitions"], 5 * 100_000 - 1);
}

/// `--repeat 3` on QEMU: three fresh boots of the single frame give the
/// same figures, so there is no spread and the check passes.
#[test]
fn repeated_runs_on_qemu_show_no_spread() {
    let mut options = hello_world_in(SINGLE_FRAME);
    options.repeat = 3;
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    let single = record(&results.records, "hello_world", SINGLE_FRAME);
    assert!(single.spread.is_empty(), "{:?}", single.spread);
    assert!(check_passed(single, harness::run::measurement::REPEATS_EXACTLY), "{:?}", single.checks);
}

#[test]
fn a_buffer_leaked_every_frame_fails_the_stream() {
    let board = default_board();
    let model = model("hello_world");
    let (firmware, sizes) = build_variant(&board, &model, Variant::InjectLeak);
    let run = run(&board, &model, &firmware, STREAM, TIMEOUT);
    let record = run::record::record(&board, &model, &firmware, sizes, STREAM, &run).unwrap();
    let growth = record.metrics[metric::HEAP_GROWTH_BYTES];
    // One 32-byte post-processing block per frame after warm-up.
    assert_eq!(growth, 32 * i64::from(harness::run::measurement::DEFAULT_FRAMES - hilmem_protocol::WARM_UP_FRAMES));
    assert!(!check_passed(&record, "watermarks settle after warm-up"));
    assert!(!record.passed());
}

/// Every answer check of a record passed, one per configured input.
fn answered(record: &Measurement, inputs: usize) -> bool {
    let outputs: Vec<_> = record.checks.iter().filter(|c| c.name.starts_with("output for ")).collect();
    outputs.len() == inputs && outputs.iter().all(|c| c.passed)
}

#[test]
fn an_update_that_arrives_corrupt_or_fails_to_load_leaves_the_running_model_answering() {
    // micro_speech's update (hello_world) is accepted when it arrives intact
    // (above). With one bit flipped on its way in, the CRC refuses it, and
    // micro_speech keeps its arena and answers every frame after.
    let board = default_board();
    let micro = model("micro_speech");
    let (firmware, sizes) = build(&board, &micro);
    let corrupt = run(&board, &micro, &firmware, "selftest-ota-corrupt", TIMEOUT);
    let corrupt = run::record::record(&board, &micro, &firmware, sizes, CONCURRENT_OTA, &corrupt).unwrap();
    assert_eq!(corrupt.metrics[metric::OTA_ACCEPTED], 0);
    let gate = &corrupt.notes["ota_gate"];
    assert!(gate.starts_with("rejected: model CRC ") && gate.contains("differs from the header's"), "{gate}");
    assert!(!check_passed(&corrupt, "update to `hello_world` accepted"));
    assert!(answered(&corrupt, micro.spec.inputs.len()), "{:?}", corrupt.checks);
    assert_eq!(corrupt.metrics[metric::ARENA_USED_BYTES], 7024, "micro_speech still runs in the arena");

    // An update whose metadata understates its arena passes the gate, then
    // fails to load: hello_world is put back and answers every frame after.
    let dir = tempfile::tempdir().unwrap();
    let ota = "[model.ota]\nmodel = \"micro_speech\"\nmin_arena_bytes = 1024\nmax_arena_bytes = 2048\nexpect = \"rejected\"\n";
    let results = run_alone(hello_and_micro(dir.path(), ota, ""), "hello_world", CONCURRENT_OTA);
    let failed = record(&results.records, "hello_world", CONCURRENT_OTA);
    assert_eq!(failed.metrics[metric::OTA_ACCEPTED], 0);
    let gate = &failed.notes["ota_gate"];
    assert!(gate.starts_with("rejected: activation failed: "), "{gate}");
    assert!(check_passed(failed, "update to `micro_speech` rejected"));
    assert!(answered(failed, 1), "{:?}", failed.checks);
    assert_eq!(failed.metrics[metric::ARENA_USED_BYTES], 1472, "hello_world runs in the arena again");
}

/// A set in separate arenas on the bundled TFLM, which prints its split of
/// the arena at every `arena_used_bytes` call (the firmware asks after each
/// load, and once more at the end): each model's arena, head and tail are
/// the ones it has alone, in its own image, and the set's arena is their
/// sum. The bundled TFLM has no recording allocator, so no breakdowns.
#[test]
fn a_set_in_separate_arenas_splits_each_models_arena_as_alone() {
    let dir = tempfile::tempdir().unwrap();
    let set = "[[set]]\nname = \"pair\"\nmodels = [\"micro_speech\", \"hello_world\"]\narena = \"separate\"\n";
    let results = run_alone(hello_and_micro(dir.path(), "", set), "pair", MULTI_MODEL);
    let set = record(&results.records, "pair", MULTI_MODEL);
    assert!(set.passed() && set.checks.len() == 2, "{:?}", set.checks);
    let mut sum = 0;
    for name in ["micro_speech", "hello_world"] {
        let (alone, _) = measure(&default_board(), name, SINGLE_FRAME);
        for figure in [metric::ARENA_USED_BYTES, metric::ARENA_HEAD_BYTES, metric::ARENA_TAIL_BYTES] {
            assert_eq!(
                set.metrics[&harness::run::measurement::of_resident(name, figure)],
                alone.metrics[figure],
                "{name}: {figure}"
            );
        }
        sum += alone.metrics[metric::ARENA_USED_BYTES];
    }
    assert_eq!(set.metrics[metric::ARENA_USED_BYTES], sum);
    assert!(set.resident_breakdowns.is_empty() && set.tflm_breakdown.is_none());
}

/// A models file in `dir` holding hello_world (then `hello_extra`, such as
/// its update) and micro_speech, each with one input, then `rest`.
fn hello_and_micro(dir: &std::path::Path, hello_extra: &str, rest: &str) -> std::path::PathBuf {
    let models = ws().root().join("firmware/models");
    let file = dir.join("hil.toml");
    std::fs::write(
        &file,
        format!(
            "[[model]]\nname = \"hello_world\"\nfile = \"{hello}\"\narena_bytes = 3072\n\
             [[model.input]]\nname = \"x-half-pi\"\nvalues = [1.5707964]\nexpect_value = 1.0\ntolerance = 0.1\n\
             {hello_extra}\
             [[model]]\nname = \"micro_speech\"\nfile = \"{micro}\"\narena_bytes = 10240\n\
             [[model.input]]\nname = \"yes\"\nfile = \"{yes}\"\nexpect_class = 2\n{rest}",
            hello = models.join("hello_world.tflite").display(),
            micro = models.join("micro_speech.tflite").display(),
            yes = models.join("yes_micro_f2e59fea_nohash_1.data").display(),
        ),
    )
    .unwrap();
    file
}

/// `scenario` of `model` from the models file `file` on the default board;
/// no run failed.
fn run_alone(file: std::path::PathBuf, model: &str, scenario: &str) -> run::results::Results {
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models_file = file;
    options.models = vec![model.into()];
    options.scenarios = vec![scenario.into()];
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    results
}

/// The capture scenarios at both clocks give their approved figures, every
/// one: interrupts land on the same instruction whatever the machine is
/// doing (this test is in the stress run, beside a build).
#[test]
fn the_capture_scenarios_give_their_baselines_exactly() {
    let mut options = hello_world_in(DMA_STREAM);
    options.scenarios.push(DMA_STREAM_SLOW.into());
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    let baselines = Source::WorkTree(ws().baselines_dir());
    let comparison = compare::compare(&results, &baselines, &Policy::load(&ws().baselines_dir()).unwrap()).unwrap();
    let captured: Vec<_> =
        comparison.rows.iter().filter(|r| r.scenario == DMA_STREAM || r.scenario == DMA_STREAM_SLOW).collect();
    assert!(captured.len() > 20, "{captured:?}");
    let moved: Vec<_> = captured.iter().filter(|r| r.verdict != Verdict::Unchanged).collect();
    assert!(moved.is_empty(), "{moved:#?}");
}
