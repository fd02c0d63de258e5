//! Deterministic mutation fuzzing with a kept corpus, for any decoder of
//! untrusted bytes (the `.tflite` reader, the wire decoder): good inputs are
//! damaged (truncation, random bytes, random 32-bit words, which often land
//! on offsets and lengths), and every input must be accepted or refused
//! with an error, never a panic. A run keeps, in a corpus, the first input
//! that produced each distinct kind of error, so the corpus grows with every
//! new way of failing and the tests replay all of it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What is fuzzed: how its corpus files end, what an input does to it, and
/// how a good input is damaged.
pub struct Subject {
    pub extension: &'static str,
    /// `None` when the input is accepted, else the kind of error
    /// ([`kind`]).
    pub outcome: fn(&[u8]) -> Option<String>,
    pub damage: fn(&mut Damage, &[u8]) -> Vec<u8>,
}

/// A deterministic xorshift generator: the same seed damages the same way.
pub struct Damage {
    state: u64,
}

impl Damage {
    /// The seed is mixed first (SplitMix64's finalizer), so that nearby
    /// seeds, such as the tries of one run, give unrelated streams: xorshift
    /// is linear, and seeds 1 and 2 would otherwise damage alike.
    pub fn new(seed: u64) -> Damage {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Damage { state: (z ^ (z >> 31)).max(1) }
    }

    /// The next number, below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n
    }

    /// A damaged copy of `good` (which must be longer than 4 bytes).
    pub fn apply(&mut self, good: &[u8]) -> Vec<u8> {
        let mut bad = good.to_vec();
        match self.below(3) {
            0 => bad.truncate(self.below(good.len() as u64) as usize),
            1 => {
                for _ in 0..1 + self.below(8) {
                    let i = self.below(bad.len() as u64) as usize;
                    bad[i] = self.below(256) as u8;
                }
            }
            _ => {
                let i = self.below(bad.len() as u64 - 4) as usize;
                bad[i..i + 4].copy_from_slice(&(self.below(1 << 32) as u32).to_le_bytes());
            }
        }
        bad
    }
}

/// An error as a kind: its names (between backticks) and numbers blanked,
/// so that "offset at 96" and "offset at 128" are one kind.
pub fn kind(error: &str) -> String {
    let mut kind = String::new();
    for (i, part) in error.split('`').enumerate() {
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
    kind
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: usize,
    /// Inputs the subject refused.
    pub errors: usize,
    /// Distinct kinds of error, in the corpus before and after the run.
    pub kinds: BTreeSet<String>,
    /// Corpus files written by this run.
    pub kept: Vec<PathBuf>,
}

/// The outcome of each corpus file in `dir`, in name order.
pub fn replay(subject: &Subject, dir: &Path) -> std::io::Result<Vec<(PathBuf, Option<String>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == subject.extension) {
            files.push(path);
        }
    }
    files.sort();
    files.into_iter().map(|f| Ok((f.clone(), (subject.outcome)(&std::fs::read(&f)?)))).collect()
}

/// The file beside a corpus file that names the kind of error it is kept
/// for.
pub fn kind_file(corpus_file: &Path) -> PathBuf {
    corpus_file.with_extension("kind")
}

/// Runs `cases` damaged inputs per seed and adds to the corpus in `dir` one
/// file per error kind it does not hold yet, each with its kind beside it
/// (written too for a corpus file that has none yet).
pub fn run(
    subject: &Subject,
    seeds: &[(String, Vec<u8>)],
    seed: u64,
    cases: usize,
    dir: &Path,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    for (file, kind) in replay(subject, dir)? {
        if let (Some(kind), false) = (&kind, kind_file(&file).exists()) {
            crate::fsutil::write_atomic(&kind_file(&file), format!("{kind}\n").as_bytes())?;
        }
        report.kinds.extend(kind);
    }
    let mut damage = Damage::new(seed);
    for (name, good) in seeds {
        for _ in 0..cases {
            let bad = (subject.damage)(&mut damage, good);
            report.cases += 1;
            let Some(kind) = (subject.outcome)(&bad) else { continue };
            report.errors += 1;
            if report.kinds.insert(kind.clone()) {
                let path = dir.join(format!("{name}-{:03}.{}", report.kinds.len(), subject.extension));
                crate::fsutil::write_atomic(&path, &bad)?;
                crate::fsutil::write_atomic(&kind_file(&path), format!("{kind}\n").as_bytes())?;
                report.kept.push(path);
            }
        }
    }
    Ok(report)
}

/// What every kept corpus must still show: each file gives exactly the kind
/// of error it was kept for, no two files are kept for the same kind, and
/// there are at least `least` of them.
pub fn check_corpus(subject: &Subject, dir: &Path, least: usize) -> Result<(), String> {
    let replayed = replay(subject, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if replayed.len() < least {
        return Err(format!("{} corpus files in {}, fewer than {least}", replayed.len(), dir.display()));
    }
    let mut kinds = BTreeSet::new();
    for (file, kind) in replayed {
        let kept_for = std::fs::read_to_string(kind_file(&file)).map_err(|e| format!("{}: {e}", file.display()))?;
        if kind.as_deref() != Some(kept_for.trim_end()) {
            return Err(format!("{} gives {kind:?}, kept for {}", file.display(), kept_for.trim_end()));
        }
        if !kinds.insert(kept_for) {
            return Err(format!("{} repeats a kind", file.display()));
        }
    }
    Ok(())
}
