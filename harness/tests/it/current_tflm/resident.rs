//! Several models resident at once on the default board with a current
//! TFLM: the multi-model scenario in separate arenas and in one shared
//! arena, measured against the analyzer's prediction for the set.

use std::collections::BTreeMap;

use harness::model::analysis::{Analysis, SetAnalysis};
use harness::model::planner::Planner;
use harness::model::tail::cmsis_nn::KernelPath;
use harness::model::tflite;
use harness::run::measurement::Measurement;
use harness::run::{self, Options};
use harness::tflm::tree::Generation;
use hilmem_protocol::metric;
use hilmem_protocol::scenario::{MULTI_MODEL, SHARED_PREEMPTION, SINGLE_FRAME};

use super::current_tflm;
use crate::support::{default_board, ran, ws};

/// magic_wand (a classifier) and hello_world resident together, loaded in
/// that order and run in turn for 16 frames, first in an arena each, then
/// in one: each set's `arena_used_bytes` and each model's part of it are
/// what the analyzer predicts; the shared arena is below the separate sum
/// by what hello_world's second copy of TFLM's allocator objects and its
/// head would take; both models answer right either way. In separate
/// arenas, each model's head, tail and TFLM's breakdown are its own alone.
#[test]
fn a_resident_pair_shares_an_arena_for_less_than_two() {
    let runtime = current_tflm();
    let dir = tempfile::tempdir().unwrap();
    let models = ws().root().join("firmware/models");
    let toml = format!(
        "[tflm]\npath = \"{tflm}\"\n\
         [[model]]\nname = \"hello_world\"\nfile = \"{m}/hello_world.tflite\"\narena_bytes = 4096\n\
         [[model.input]]\nname = \"x\"\nvalues = [1.5707964]\nexpect_value = 1.0\ntolerance = 0.1\n\
         [[model]]\nname = \"magic_wand\"\nfile = \"{m}/magic_wand.tflite\"\narena_bytes = 65536\n\
         [[model.input]]\nname = \"ring\"\nfile = \"{m}/ring_micro_f9643d42_nohash_4.data\"\nformat = \"f32-be\"\nexpect_class = 1\n\
         [[set]]\nname = \"pair-separate\"\nmodels = [\"magic_wand\", \"hello_world\"]\narena = \"separate\"\n\
         [[set]]\nname = \"pair-shared\"\nmodels = [\"magic_wand\", \"hello_world\"]\narena = \"shared\"\narena_bytes = 65536\n",
        tflm = runtime.dir().unwrap().display(),
        m = models.display(),
    );
    let file = dir.path().join("hil.toml");
    std::fs::write(&file, toml).unwrap();
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models_file = file;
    options.scenarios = vec![SINGLE_FRAME.into(), MULTI_MODEL.into()];
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:?}", results.failed);
    // The sets run the multi-model scenario, and the models the others.
    let sets: BTreeMap<&str, &Measurement> =
        results.records.iter().filter(|r| r.scenario == MULTI_MODEL).map(|r| (r.model.as_str(), r)).collect();
    assert_eq!(sets.keys().copied().collect::<Vec<_>>(), ["pair-separate", "pair-shared"]);
    assert!(ran(&results).all(|r| (r.scenario == MULTI_MODEL) == r.model.starts_with("pair-")));

    let member = |name: &str| {
        let parsed = tflite::read(&std::fs::read(models.join(format!("{name}.tflite"))).unwrap()).unwrap();
        let analysis =
            Analysis::of(name, &parsed, Generation::Current, KernelPath::Reference, Planner::Greedy).unwrap();
        (analysis, parsed)
    };
    let (wand, hello) = (member("magic_wand"), member("hello_world"));
    let predicted = SetAnalysis::of(&[(&wand.0, &wand.1), (&hello.0, &hello.1)]).unwrap().unwrap();
    let shared_parts = predicted.shared_parts.clone().unwrap();
    for (set, total, parts) in [
        ("pair-separate", predicted.separate_bytes, &predicted.separate_parts),
        ("pair-shared", predicted.shared_bytes.unwrap(), &shared_parts),
    ] {
        let record = sets[set];
        assert!(record.passed() && record.checks.len() == 2, "{set}: {:?}", record.checks);
        assert_eq!(record.metrics[metric::ARENA_USED_BYTES], total as i64, "{set}");
        assert_eq!(record.arena_prediction.map(|p| p.difference()), Some(0), "{set}");
        for (name, part) in ["magic_wand", "hello_world"].iter().zip(parts) {
            assert_eq!(
                record.metrics[&harness::run::measurement::of_resident(name, metric::ARENA_USED_BYTES)],
                *part as i64,
                "{set}: {name}"
            );
        }
        assert_eq!(record.metrics[metric::FRAMES], 16, "{set}");
    }
    // In separate arenas each model's split of its arena, and TFLM's
    // breakdown of it over the recording allocator, are the ones it has
    // alone, in an image of its own.
    let separate = sets["pair-separate"];
    for name in ["magic_wand", "hello_world"] {
        let alone = ran(&results).find(|r| r.model == name && r.scenario == SINGLE_FRAME).unwrap();
        for figure in [metric::ARENA_USED_BYTES, metric::ARENA_HEAD_BYTES, metric::ARENA_TAIL_BYTES] {
            assert_eq!(
                separate.metrics[&harness::run::measurement::of_resident(name, figure)],
                alone.metrics[figure],
                "{name}: {figure}"
            );
        }
        assert_eq!(Some(&separate.resident_breakdowns[name]), alone.tflm_breakdown.as_ref(), "{name}");
    }
    assert!(sets["pair-shared"].resident_breakdowns.is_empty());
    // Separate is the sum of the models alone; shared saves hello_world's
    // allocator objects and head, and costs its persistent part only.
    assert_eq!(predicted.separate_parts, [15168, 816]);
    assert_eq!(shared_parts, [15168, 640]);
    assert!(predicted.shared_bytes.unwrap() < predicted.separate_bytes);
}

/// hello_world infers from an interrupt every 2 ms over magic_wand: in
/// arenas of their own both answer right, and the interrupt's inferences
/// land in magic_wand's; a set declaring it with a shared arena is refused
/// before anything is built, and the shared set whose last model is made to
/// infer from an interrupt anyway (the self-test) ends naming both models.
#[test]
fn a_model_inferring_from_an_interrupt_needs_an_arena_of_its_own() {
    let runtime = current_tflm();
    let dir = tempfile::tempdir().unwrap();
    let models = ws().root().join("firmware/models");
    let toml = |sets: &str| {
        format!(
            "[tflm]\npath = \"{tflm}\"\n\
             [[model]]\nname = \"hello_world\"\nfile = \"{m}/hello_world.tflite\"\narena_bytes = 4096\n\
             [[model.input]]\nname = \"x\"\nvalues = [1.5707964]\nexpect_value = 1.0\ntolerance = 0.1\n\
             [[model]]\nname = \"magic_wand\"\nfile = \"{m}/magic_wand.tflite\"\narena_bytes = 65536\n\
             [[model.input]]\nname = \"ring\"\nfile = \"{m}/ring_micro_f9643d42_nohash_4.data\"\nformat = \"f32-be\"\nexpect_class = 1\n{sets}",
            tflm = runtime.dir().unwrap().display(),
            m = models.display(),
        )
    };
    let run_with = |sets: &str, scenario: &str| {
        let file = dir.path().join("hil.toml");
        std::fs::write(&file, toml(sets)).unwrap();
        let mut options = Options::new(&ws(), vec![default_board()]);
        options.models_file = file;
        options.scenarios = vec![scenario.into()];
        run::run(&ws(), &options, &|_| {})
    };
    let preempting = "[[set]]\nname = \"pair\"\nmodels = [\"magic_wand\", \"hello_world\"]\narena = \"separate\"\n\
                      interrupt = { model = \"hello_world\", every_ms = 2 }\n";
    let results = run_with(preempting, MULTI_MODEL).unwrap();
    assert!(results.failed.is_empty(), "{:?}", results.failed);
    let pair = ran(&results).find(|r| r.model == "pair").unwrap();
    assert!(pair.passed(), "{:?}", pair.checks);
    let m = &pair.metrics;
    assert!(m[metric::INTERRUPT_INFERENCES] > 0 && m[metric::PREEMPTIONS] > 0, "{m:?}");
    assert!(m[metric::PREEMPTIONS] <= m[metric::INTERRUPT_INFERENCES]);
    // The interrupt's inference runs on the handlers' stack.
    assert!(m[metric::INTERRUPT_STACK_PEAK_BYTES] > 1024, "{m:?}");

    let shared = preempting.replace("arena = \"separate\"", "arena = \"shared\"\narena_bytes = 65536");
    let err = run_with(&shared, MULTI_MODEL).unwrap_err().to_string();
    assert!(err.contains("`hello_world` infers from an interrupt over `magic_wand`, and the set shares one arena"));

    let shared = "[[set]]\nname = \"pair\"\nmodels = [\"magic_wand\", \"hello_world\"]\narena = \"shared\"\n\
                  arena_bytes = 65536\n";
    let results = run_with(shared, SHARED_PREEMPTION).unwrap();
    let [failed] = &results.failed[..] else { panic!("{:#?}", results.failed) };
    assert!(
        failed.error.contains(
            "`hello_world` began an inference from an interrupt while `magic_wand` was inferring in their shared \
             arena (stage `arena`"
        ),
        "{}",
        failed.error
    );
}
