//! Mutation fuzzing of the `.tflite` reader and the analysis behind it:
//! deterministic damage to good models (truncation, random bytes, random
//! 32-bit words, which often land on offsets and lengths). Every input must
//! give a model or an error, never a panic. A run keeps, in a corpus, the
//! first input that produced each distinct error, so the corpus grows with
//! every new way of failing and the tests replay all of it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::model::analysis::Analysis;
use crate::model::planner::Planner;
use crate::model::tflite;
use crate::model::tree::Generation;

/// A deterministic xorshift generator: the same seed damages the same way.
pub struct Damage {
    state: u64,
}

impl Damage {
    pub fn new(seed: u64) -> Damage {
        Damage { state: seed.max(1) }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// A damaged copy of `good` (which must be longer than 4 bytes).
    pub fn apply(&mut self, good: &[u8]) -> Vec<u8> {
        let mut bad = good.to_vec();
        match self.next() % 3 {
            0 => bad.truncate((self.next() as usize) % good.len()),
            1 => {
                for _ in 0..1 + self.next() % 8 {
                    let i = (self.next() as usize) % bad.len();
                    bad[i] = self.next() as u8;
                }
            }
            _ => {
                let i = (self.next() as usize) % (bad.len() - 4);
                bad[i..i + 4].copy_from_slice(&(self.next() as u32).to_le_bytes());
            }
        }
        bad
    }
}

/// What an input does to the reader and the analysis: `None` when it reads
/// and analyses as a model, else the error with its numbers and names
/// blanked (so "offset at 96" and "offset at 128" are one kind).
pub fn outcome(data: &[u8]) -> Option<String> {
    let error = match tflite::read(data) {
        Ok(model) => [Generation::Tfmicro2020, Generation::Current]
            .into_iter()
            .find_map(|tflm| Analysis::of("fuzz", &model, tflm, Planner::Greedy).err())?,
        Err(e) => e,
    };
    // Names (between backticks) and numbers are blanked.
    let mut kind = String::new();
    for (i, part) in error.to_string().split('`').enumerate() {
        if i % 2 == 1 {
            kind.push_str("`…`");
            continue;
        }
        for c in part.chars() {
            if !c.is_ascii_digit() {
                kind.push(c);
            } else if !kind.ends_with('#') {
                kind.push('#');
            }
        }
    }
    Some(kind)
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: usize,
    /// Inputs the reader refused.
    pub errors: usize,
    /// Distinct kinds of error, in the corpus before and after the run.
    pub kinds: BTreeSet<String>,
    /// Corpus files written by this run.
    pub kept: Vec<PathBuf>,
}

/// The error kinds of the corpus in `dir` (`*.tflite`), and the panics or
/// successes it must not contain.
pub fn replay(dir: &Path) -> std::io::Result<Vec<(PathBuf, Option<String>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tflite") {
            files.push(path);
        }
    }
    files.sort();
    files.into_iter().map(|f| Ok((f.clone(), outcome(&std::fs::read(&f)?)))).collect()
}

/// The file beside a corpus file that names the kind of error it is kept
/// for.
pub fn kind_file(corpus_file: &Path) -> PathBuf {
    corpus_file.with_extension("kind")
}

/// Runs `cases` damaged inputs per seed model and adds to the corpus in
/// `dir` one file per error kind it does not hold yet, each with its kind
/// beside it (written too for a corpus file that has none yet).
pub fn run(seeds: &[(String, Vec<u8>)], seed: u64, cases: usize, dir: &Path) -> std::io::Result<Report> {
    let mut report = Report::default();
    for (file, kind) in replay(dir)? {
        if let (Some(kind), false) = (&kind, kind_file(&file).exists()) {
            crate::fsutil::write_atomic(&kind_file(&file), format!("{kind}\n").as_bytes())?;
        }
        report.kinds.extend(kind);
    }
    let mut damage = Damage::new(seed);
    for (name, good) in seeds {
        for _ in 0..cases {
            let bad = damage.apply(good);
            report.cases += 1;
            let Some(kind) = outcome(&bad) else { continue };
            report.errors += 1;
            if report.kinds.insert(kind.clone()) {
                let path = dir.join(format!("{name}-{:03}.tflite", report.kinds.len()));
                crate::fsutil::write_atomic(&path, &bad)?;
                crate::fsutil::write_atomic(&kind_file(&path), format!("{kind}\n").as_bytes())?;
                report.kept.push(path);
            }
        }
    }
    Ok(report)
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

    #[test]
    fn the_kept_corpus_is_still_refused() {
        let corpus = crate::Workspace::from_source().root().join("harness/tests/corpus");
        let replayed = replay(&corpus).unwrap();
        assert!(replayed.len() >= 10, "{} corpus files", replayed.len());
        // Each file still gives the kind of error it was kept for, and no
        // two files are kept for the same kind.
        let mut kinds = BTreeSet::new();
        for (file, kind) in replayed {
            let kept_for = std::fs::read_to_string(kind_file(&file)).unwrap();
            assert_eq!(kind.as_deref(), Some(kept_for.trim_end()), "{}", file.display());
            assert!(kinds.insert(kept_for), "{} repeats a kind", file.display());
        }
    }

    #[test]
    fn a_run_keeps_one_input_per_new_kind_of_error() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = [("hello".to_owned(), example("hello_world.tflite"))];
        let first = run(&seeds, 7, 300, dir.path()).unwrap();
        assert_eq!(first.cases, 300);
        assert!(!first.kept.is_empty() && first.kept.len() == first.kinds.len(), "{first:?}");
        // The same run again finds nothing new.
        let again = run(&seeds, 7, 300, dir.path()).unwrap();
        assert!(again.kept.is_empty(), "{again:?}");
    }
}
