//! TFLM's earlier years (`HILMEM_TEST_TFLM_HISTORY`: tflite-micro checkouts
//! CI keeps as archives beside the current one, one per era and one from
//! each window between them that once failed to build): each tree is read
//! from itself, as a tree hilmem has never seen, and every one builds and
//! runs hello_world on the Cortex-M7 and the host, and the example models
//! its kernels support on the Cortex-M7, with TFLM's own report of its
//! arena.

use std::path::PathBuf;

use harness::config::board::DEFAULT_BOARD;
use harness::config::models;
use harness::config::runtime::Runtime;
use harness::model::analysis::BETWEEN;
use harness::model::tail::current;
use harness::run::measurement::Measurement;
use harness::run::record::NOT_PREDICTED;
use harness::run::results::Results;
use harness::run::{self, Options};
use harness::tflm::tree::Generation;
use harness::verdict::approval;
use harness::verdict::baseline::Source;
use harness::verdict::compare::{self, Policy, RuntimeChange, Verdict};
use hilmem_protocol::metric;
use hilmem_protocol::scenario::SINGLE_FRAME;

use crate::support::{board, default_board, ran, ws, EVERY_OPERATOR_2023};

/// The unpacked checkouts of TFLM's history, oldest first.
fn history() -> Vec<PathBuf> {
    let Some(dir) = std::env::var_os("HILMEM_TEST_TFLM_HISTORY") else {
        panic!(
            "HILMEM_TEST_TFLM_HISTORY is not set: give `cargo xtask test --test-tflm DIR` a DIR whose history/ \
             folder holds tflite-micro-*.tar.xz checkouts of earlier years"
        )
    };
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("tensorflow/lite/micro").is_dir())
        .collect();
    trees.sort_by_key(|t| std::fs::read_to_string(t.join("tensorflow/lite/micro/micro_interpreter.h")).unwrap().len());
    trees
}

#[test]
fn every_tree_of_tflms_history_builds_and_runs() {
    let trees = history();
    assert!(!trees.is_empty(), "no checkout in HILMEM_TEST_TFLM_HISTORY");
    let models_file = ws().root().join("firmware/models/current/hil.toml");
    let file = models::load(&models_file).unwrap();
    for tree in &trees {
        let runtime = Runtime::at(tree).unwrap_or_else(|refusal| panic!("refused: {refusal}"));
        assert_ne!(runtime.generation(), Generation::Tfmicro2020, "{}", tree.display());
        // The float hello_world of the root models file on the Cortex-M7 and
        // the host, and the int8 examples this TFLM registers every operator
        // of on the Cortex-M7, where the prediction is checked.
        let mut models = vec!["hello_world".to_owned()];
        models.extend(file.models.iter().filter(|m| m.read(&runtime).is_ok()).map(|m| m.name.clone()));
        let both = [DEFAULT_BOARD, "host"];
        let runs = [(ws().models_file(), &models[..1], &both[..]), (models_file.clone(), &models[1..], &both[..1])];
        for (models_file, names, boards) in runs {
            let mut options = Options::new(&ws(), boards.iter().map(|b| board(b)).collect());
            options.models_file = models_file;
            options.models = names.to_vec();
            options.scenarios = vec![SINGLE_FRAME.into()];
            options.tflm = Some(tree.display().to_string());
            let results = run::run(&ws(), &options, &|_| {}).unwrap();
            // An operator an early TFLM registers can lack a type a later
            // converter gives it (2021's STRIDED_SLICE has no int32): that
            // example fails with TFLM's own words; hello_world never does.
            let (unsupported, failed): (Vec<_>, Vec<_>) = results
                .failed
                .iter()
                .partition(|f| f.model != "hello_world" && f.error.contains("not supported.; Node "));
            assert!(failed.is_empty(), "{}: {failed:#?}", tree.display());
            // Each image names the runtime and its generation.
            for image in &results.images {
                let named = (image.tflm.as_str(), image.tflm_generation.as_str());
                assert_eq!(named, (runtime.identity.as_str(), runtime.generation().name()));
            }
            let measured: Vec<&Measurement> = ran(&results).collect();
            assert_eq!(measured.len() + unsupported.len(), boards.len() * names.len(), "{}", tree.display());
            for record in measured {
                assert!(record.passed(), "{} {}/{}: {:?}", tree.display(), record.board, record.model, record.checks);
                // The record took head and tail from TFLM's own lines and
                // checked they add up to its arena_used_bytes.
                let m = &record.metrics;
                assert_eq!(m[metric::ARENA_HEAD_BYTES] + m[metric::ARENA_TAIL_BYTES], m[metric::ARENA_USED_BYTES]);
                // On the Cortex-M7, a tree of today's allocator is predicted
                // exactly; one of the years between is not, and says why.
                // Every generation's least arena is found, on either board;
                // it is predicted where the arena is.
                let least = m[metric::LEAST_ARENA_BYTES];
                assert!(least >= m[metric::ARENA_USED_BYTES], "{} {}: {m:?}", tree.display(), record.model);
                if record.board == DEFAULT_BOARD {
                    match runtime.generation() {
                        tflm if tflm.todays_allocator() => {
                            assert_eq!(record.arena_prediction.map(|p| p.difference()), Some(0), "{}", record.model);
                            let predicted =
                                super::build_of(&results, record).metrics[metric::PREDICTED_LEAST_ARENA_BYTES];
                            assert_eq!(least, predicted, "{} {}: least found, predicted", tree.display(), record.model);
                        }
                        _ => {
                            assert!(record.arena_prediction.is_none());
                            assert!(record.notes[NOT_PREDICTED].contains(BETWEEN), "{:?}", record.notes);
                        }
                    }
                }
            }
        }
    }
}

/// A tree of the 2023 generation (today's allocator, before the interpreter
/// handed out evaluation tensors) registers today's operators but those
/// its table says it lacks; each is predicted or listed with why not; the
/// table's types are as the compiler lays them out from the tree; and every
/// one-operator model of its operators, in one image on the Cortex-M7, is
/// predicted to the byte, type by type.
#[test]
fn the_2023_generation_is_predicted_to_the_byte_operator_by_operator() {
    let trees: Vec<Runtime> = history()
        .iter()
        .filter_map(|t| Runtime::at(t).ok())
        .filter(|r| r.generation() == Generation::Tflm2023)
        .collect();
    assert!(!trees.is_empty(), "no tree of the 2023 generation in HILMEM_TEST_TFLM_HISTORY");
    let today = super::current_tflm();
    for runtime in &trees {
        let expected: Vec<i32> =
            today.operators.by_code.keys().copied().filter(|c| !current::ABSENT_2023.contains(c)).collect();
        let registered: Vec<i32> = runtime.operators.by_code.keys().copied().collect();
        assert_eq!(registered, expected, "{runtime}: today's operators but current::ABSENT_2023");
        let mut wrong = super::registrations_unlisted(runtime);
        wrong.extend(super::layouts_mismatched(runtime).iter().map(|(e, c)| format!("layout {e:?}, compiled {c:?}")));
        wrong.extend(super::operator_models_mispredicted(runtime, EVERY_OPERATOR_2023));
        assert!(wrong.is_empty(), "{runtime}: {wrong:#?}");
    }
}

/// hello_world on the Cortex-M7 on every runtime there is here (the bundled
/// 2020 archive, each year of the history hilmem can build, the current
/// checkout): the comparison of any two, one's figures as the other's
/// baseline, names the change of runtime first and says which figures moved.
#[test]
fn every_pair_of_runtimes_is_compared_naming_the_change_and_what_moved() {
    let mut runtimes = vec![Runtime::bundled()];
    runtimes.extend(history().iter().filter_map(|tree| Runtime::at(tree).ok()));
    runtimes.push(super::current_tflm());
    assert!(runtimes.len() >= 3, "the bundled, the current and at least one year between");
    let measured: Vec<Results> = runtimes
        .iter()
        .map(|runtime| {
            let mut options = Options::new(&ws(), vec![default_board()]);
            options.models = vec!["hello_world".into()];
            options.scenarios = vec![SINGLE_FRAME.into()];
            options.tflm = Some(runtime.dir().map_or("bundled".into(), |d| d.display().to_string()));
            let results = run::run(&ws(), &options, &|_| {}).unwrap();
            assert!(results.failed.is_empty(), "{}: {:#?}", runtime, results.failed);
            results
        })
        .collect();
    let policy = Policy::load(&ws().root().join("baselines")).unwrap();
    for (i, (from, before)) in runtimes.iter().zip(&measured).enumerate() {
        // `from`'s figures, approved as a baseline.
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let all_new = compare::compare(before, &Source::WorkTree(empty), &policy).unwrap();
        approval::write_pending(before, &all_new, dir.path()).unwrap();
        let baselines = approval::pending_dir(dir.path());
        for (to, after) in runtimes.iter().zip(&measured).skip(i + 1) {
            let comparison = compare::compare(after, &Source::WorkTree(baselines.clone()), &policy).unwrap();
            let change = RuntimeChange {
                what: "TFLM".into(),
                board: DEFAULT_BOARD.into(),
                model: "hello_world".into(),
                from: from.identity.clone(),
                to: to.identity.clone(),
            };
            assert_eq!(comparison.runtime_changes, [change]);
            let moved: Vec<&str> =
                comparison.rows.iter().filter(|r| r.verdict != Verdict::Unchanged).map(|r| r.metric.as_str()).collect();
            assert!(moved.contains(&metric::FLASH_BYTES), "{} → {}: {moved:?}", from.identity, to.identity);
            assert!(!moved.contains(&metric::MODEL_BYTES), "the same model file");
        }
    }
}
