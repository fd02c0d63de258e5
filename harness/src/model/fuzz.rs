//! The `.tflite` reader and the analysis behind it as a fuzzing subject
//! ([`crate::fuzz`]): every damaged model must read as a model or give an
//! error, never a panic.

use crate::fuzz::{kind, Damage, Subject};
use crate::model::analysis::Analysis;
use crate::model::planner::Planner;
use crate::model::tail::cmsis_nn::KernelPath;
use crate::model::tflite;
use crate::tflm::tree::Generation;

/// Models, damaged as bytes; the corpus files end in `.tflite`.
pub const MODELS: Subject = Subject { extension: "tflite", outcome, damage: Damage::apply };

/// What an input does to the reader and the analysis: `None` when it reads
/// and analyses as a model, else the kind of error.
pub fn outcome(data: &[u8]) -> Option<String> {
    let error = match tflite::read(data) {
        Ok(model) => [Generation::Tfmicro2020, Generation::Tflm2023, Generation::Current]
            .into_iter()
            .find_map(|tflm| Analysis::of("fuzz", &model, tflm, KernelPath::Reference, Planner::Greedy).err())?,
        Err(e) => e,
    };
    Some(kind(&error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> Vec<u8> {
        std::fs::read(crate::Workspace::from_source().root().join("firmware/models").join(name)).unwrap()
    }

    /// A bounded fuzz run in every test pass (3000 cases, well under a
    /// second): every damaged input reads as a model or gives an error.
    #[test]
    fn damaged_models_give_errors_not_panics() {
        let mut damage = Damage::new(0x2545_F491_4F6C_DD1D);
        let mut errors = 0;
        for name in ["hello_world.tflite", "micro_speech.tflite", "magic_wand.tflite"] {
            let good = example(name);
            for _ in 0..1000 {
                errors += usize::from(outcome(&damage.apply(&good)).is_some());
            }
            for cut in [0, 4, 7, 8, 12, good.len() / 2, good.len() - 1] {
                assert!(outcome(&good[..cut]).is_some(), "{name} cut at {cut} read as a model");
            }
        }
        assert!(errors > 1000, "only {errors} of 3000 damaged inputs were refused");
    }

    /// Each file still gives the kind of error it was kept for, and no two
    /// files are kept for the same kind.
    #[test]
    fn the_kept_corpus_is_still_refused() {
        let corpus = crate::Workspace::from_source().root().join("harness/tests/corpus");
        crate::fuzz::check_corpus(&MODELS, &corpus, 10).unwrap();
    }

    #[test]
    fn a_run_keeps_one_input_per_new_kind_of_error() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = [("hello".to_owned(), example("hello_world.tflite"))];
        let first = crate::fuzz::run(&MODELS, &seeds, 7, 300, dir.path()).unwrap();
        assert_eq!(first.cases, 300);
        assert!(!first.kept.is_empty() && first.kept.len() == first.kinds.len(), "{first:?}");
        // The same run again finds nothing new.
        let again = crate::fuzz::run(&MODELS, &seeds, 7, 300, dir.path()).unwrap();
        assert!(again.kept.is_empty(), "{again:?}");
    }
}
