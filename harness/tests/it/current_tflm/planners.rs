//! The arena planners on the default board with a current TFLM: TFLM's
//! greedy and linear planners, and hilmem's plan written into the model as
//! TFLM's offline plan, each measured against what the analyzer predicts.

use std::collections::BTreeMap;

use harness::model::analysis::Analysis;
use harness::model::planner::Planner;
use harness::model::tail::cmsis_nn::KernelPath;
use harness::model::tflite;
use harness::run::measurement::Measurement;
use harness::tflm::tree::Generation;
use hilmem_protocol::metric;

use super::current_tflm;
use crate::support::{hil_with_models, ran, ws};

/// `name` with `planner`: a models-file entry for the single frame.
fn entry(name: &str, file: &str, arena: u32, planner: Planner, input: &str) -> String {
    let models = ws().root().join("firmware/models");
    format!(
        "[[model]]\nname = \"{name}-{planner}\"\nfile = \"{}\"\narena_bytes = {arena}\nplanner = \"{planner}\"\n\
         [[model.input]]\nname = \"x\"\n{input}\n",
        models.join(file).display()
    )
}

/// hello_world, magic_wand and the branching model with each planner: every
/// measured arena is the analyzer's prediction for its planner; the offline
/// plan gives the answers greedy gives and is never larger; linear is the
/// largest; on the branching model the offline plan is smaller than greedy
/// by exactly what hilmem's plan saves on the head (336 - 272 = 64 bytes).
#[test]
fn each_planner_measures_what_it_predicts() {
    let runtime = current_tflm();
    let dir = tempfile::tempdir().unwrap();
    let ring = ws().root().join("firmware/models/ring_micro_f9643d42_nohash_4.data");
    let models = [
        (
            "hello_world",
            "hello_world.tflite",
            8192,
            "values = [1.5707964]\nexpect_value = 1.0\ntolerance = 0.1".to_owned(),
        ),
        (
            "magic_wand",
            "magic_wand.tflite",
            65536,
            format!("file = \"{}\"\nformat = \"f32-be\"\nexpect_class = 1", ring.display()),
        ),
        (
            "branching",
            "branching.tflite",
            8192,
            "values = [0.25, 0.5, 0.75, 1.0]\nexpect_value = 1.0\ntolerance = 0.001".to_owned(),
        ),
    ];
    let mut toml = format!("[tflm]\npath = \"{}\"\n", runtime.dir().unwrap().display());
    for (name, file, arena, input) in &models {
        for planner in Planner::ALL {
            toml += &entry(name, file, *arena, planner, input);
        }
    }
    let results = hil_with_models(dir.path(), &toml);
    assert!(results.failed.is_empty(), "{:?}", results.failed);
    let records: BTreeMap<&str, &Measurement> = ran(&results).map(|r| (r.model.as_str(), r)).collect();
    let used =
        |name: &str, planner: Planner| records[format!("{name}-{planner}").as_str()].metrics[metric::ARENA_USED_BYTES];
    for (name, file, _, _) in &models {
        let parsed = tflite::read(&std::fs::read(ws().root().join("firmware/models").join(file)).unwrap()).unwrap();
        for planner in Planner::ALL {
            let record = records[format!("{name}-{planner}").as_str()];
            assert!(record.passed(), "{name} {planner}: {:?}", record.checks);
            let prediction = record.arena_prediction.unwrap_or_else(|| panic!("{name} {planner}: no prediction"));
            assert_eq!(prediction.difference(), 0, "{name} {planner}: {prediction:?}");
        }
        let details = |planner: Planner| {
            records[format!("{name}-{planner}").as_str()].checks.iter().map(|c| c.detail.clone()).collect::<Vec<_>>()
        };
        assert_eq!(details(Planner::Offline), details(Planner::Greedy), "{name}: the same answers");
        assert!(used(name, Planner::Offline) <= used(name, Planner::Greedy), "{name}");
        assert!(used(name, Planner::Linear) > used(name, Planner::Greedy), "{name}");
        let analysis =
            Analysis::of(name, &parsed, Generation::Current, KernelPath::Reference, Planner::Offline).unwrap();
        let saved = (analysis.greedy_bytes - analysis.hilmem_bytes) as i64;
        assert_eq!(used(name, Planner::Greedy) - used(name, Planner::Offline), saved, "{name}");
        if *name == "branching" {
            assert_eq!((analysis.greedy_bytes, analysis.hilmem_bytes, analysis.lower_bound_bytes), (336, 272, 272));
        }
    }
}

/// A model whose offline plan TFLM refuses (an offset too few) fails its
/// run with the model's name and TFLM's own message.
#[test]
fn an_offline_plan_tflm_refuses_is_an_error_naming_the_model_and_tflms_message() {
    let runtime = current_tflm();
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(ws().root().join("firmware/models/hello_world.tflite")).unwrap();
    let tensors = tflite::read(&original).unwrap().subgraphs[0].tensors.len();
    let short = tflite::with_offline_plan(&original, &vec![-1; tensors - 1]).unwrap();
    let file = dir.path().join("short-plan.tflite");
    std::fs::write(&file, short).unwrap();
    let toml = format!(
        "[tflm]\npath = \"{}\"\n[[model]]\nname = \"short-plan\"\nfile = \"{}\"\narena_bytes = 4096\n\
         [[model.input]]\nname = \"x\"\nvalues = [0.5]\n",
        runtime.dir().unwrap().display(),
        file.display()
    );
    let results = hil_with_models(dir.path(), &toml);
    assert!(ran(&results).next().is_none(), "{:?}", results.records);
    let failure = format!("{:?}", results.failed);
    assert!(failure.contains("short-plan"), "{failure}");
    assert!(
        failure.contains(&format!(
            "Nbr of offline buffer offsets ({}) in metadata not equal nbr tensors ({tensors})",
            tensors - 1
        )),
        "{failure}"
    );
}
