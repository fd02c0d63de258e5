//! From a run's changed figures to approved baselines: the pending
//! candidates a run leaves under its output directory, and `approve` /
//! `reject`, which turn them into baseline files (and a commit) or drop them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::gitrepo::{self, GitError};
use crate::run::measurement::BUILD;
use crate::run::results::{Meta, Results};
use crate::verdict::baseline::{
    file_path, is_baselined, now, read, BaselineError, BaselineFile, Source, BASELINE_FORMAT,
};
use crate::verdict::compare::{diff_rows, Comparison, Row};

/// The pending candidates of a run: one file per board and model, under
/// `<results>/pending/`.
pub fn pending_dir(results: &Path) -> PathBuf {
    results.join("pending")
}

/// Every pending candidate, as (board, model, file).
pub fn pending(results: &Path) -> Result<Vec<(String, String, PathBuf)>, BaselineError> {
    let mut found = Vec::new();
    let dir = pending_dir(results);
    for board in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(board.path()).into_iter().flatten().flatten() {
            let path = file.path();
            if let (Some(board), Some(model)) = (
                board.file_name().to_str().map(str::to_owned),
                path.file_stem().and_then(|s| s.to_str()).map(str::to_owned),
            ) {
                if path.extension().is_some_and(|e| e == "toml") {
                    found.push((board, model, path));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Writes the pending candidates of a run into `<results>/pending/`: for each
/// board and model with a changed figure, the measured figures of the
/// scenarios that changed (approval merges them into the baseline).
/// Candidates of earlier runs are removed first.
pub fn write_pending(
    results: &Results,
    comparison: &Comparison,
    results_dir: &Path,
) -> Result<Vec<PathBuf>, BaselineError> {
    let dir = pending_dir(results_dir);
    let _ = std::fs::remove_dir_all(&dir);
    let mut written = Vec::new();
    for image in &results.images {
        let changed: Vec<&str> = comparison.changes(&image.board, &image.model).map(|r| r.scenario.as_str()).collect();
        if changed.is_empty() {
            continue;
        }
        let mut file = BaselineFile {
            format: BASELINE_FORMAT,
            meta: image.meta(results),
            scenario: BTreeMap::new(),
            footprint: None,
        };
        let records = results.records.iter().filter(|r| r.board == image.board && r.model == image.model);
        for record in records.filter(|r| changed.contains(&r.scenario.as_str())) {
            let figures = record.metrics.iter().filter(|(k, _)| is_baselined(k)).map(|(k, v)| (k.clone(), *v));
            file.scenario.insert(record.scenario.clone(), figures.collect());
            file.footprint = file.footprint.or(record.footprint.clone());
        }
        let path = file_path(&dir, &image.board, &image.model);
        file.write(&path)?;
        written.push(path);
    }
    Ok(written)
}

/// Which pending changes an approval takes (None: all).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub board: Option<String>,
    pub model: Option<String>,
    pub scenario: Option<String>,
}

impl Filter {
    fn takes(&self, board: &str, model: &str, scenario: &str) -> bool {
        let ok = |wanted: &Option<String>, value: &str| wanted.as_deref().is_none_or(|w| w == value);
        ok(&self.board, board) && ok(&self.model, model) && ok(&self.scenario, scenario)
    }
}

/// What an approval did.
#[derive(Debug, Clone)]
pub struct Approval {
    /// Baseline files written.
    pub files: Vec<PathBuf>,
    /// Old and new figures of every metric that changed.
    pub diff: Vec<Row>,
    /// The commit made, with `--commit`.
    pub commit: Option<String>,
}

/// The commit message for an approval, made from the figures it changed.
pub type CommitMessage<'a> = &'a dyn Fn(&[Row]) -> String;

/// Turns the pending candidates that any of `filters` selects into baselines
/// (each file written atomically), and with `commit` commits exactly those
/// files with the message it makes of the diff. Refuses to commit when
/// baseline files have uncommitted edits.
pub fn approve(
    results_dir: &Path,
    baselines_dir: &Path,
    filters: &[Filter],
    approver: &str,
    commit: Option<CommitMessage>,
) -> Result<Approval, BaselineError> {
    if commit.is_some() {
        let dirty = gitrepo::changed_under(baselines_dir)?;
        if !dirty.is_empty() {
            let files = dirty.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
            return Err(GitError::Dirty { files }.into());
        }
    }
    let mut approval = Approval { files: Vec::new(), diff: Vec::new(), commit: None };
    for (board, model, path) in pending(results_dir)? {
        let mut candidate = read(&path, &board, &model)?;
        let target = file_path(baselines_dir, &board, &model);
        let mut baseline = Source::WorkTree(baselines_dir.to_owned()).load(&board, &model)?.unwrap_or(BaselineFile {
            format: BASELINE_FORMAT,
            meta: candidate.meta.clone(),
            scenario: BTreeMap::new(),
            footprint: None,
        });
        let taken: Vec<String> =
            candidate.scenario.keys().filter(|s| filters.iter().any(|f| f.takes(&board, &model, s))).cloned().collect();
        if taken.is_empty() {
            continue;
        }
        for scenario in &taken {
            // The footprint goes with the build record it came from.
            if scenario == BUILD {
                baseline.footprint = candidate.footprint.take().or(baseline.footprint);
            }
            let new = candidate.scenario.remove(scenario).expect("listed above");
            let old = baseline.scenario.insert(scenario.clone(), new.clone()).unwrap_or_default();
            approval.diff.extend(diff_rows(&board, &model, scenario, &old, &new));
        }
        baseline.meta = Meta { approved_by: approver.to_owned(), approved_at: now(), ..candidate.meta.clone() };
        baseline.write(&target)?;
        approval.files.push(target);
        if candidate.scenario.is_empty() {
            let _ = std::fs::remove_file(&path);
        } else {
            candidate.write(&path)?;
        }
    }
    if let Some(message) = commit.filter(|_| !approval.files.is_empty()) {
        approval.commit = Some(gitrepo::commit_files(&approval.files, &message(&approval.diff))?);
    }
    Ok(approval)
}

/// Drops a scenario's pending candidate without approving it.
pub fn reject(results_dir: &Path, board: &str, model: &str, scenario: &str) -> Result<(), BaselineError> {
    let path = file_path(&pending_dir(results_dir), board, model);
    let mut candidate = read(&path, board, model)?;
    candidate.scenario.remove(scenario);
    if candidate.scenario.is_empty() {
        let _ = std::fs::remove_file(&path);
        Ok(())
    } else {
        candidate.write(&path)
    }
}

#[cfg(test)]
mod tests {
    use git2::{Repository, Signature};

    use super::*;
    use crate::run::measurement::Measurement;
    use crate::run::results::Image;
    use crate::verdict::compare::Verdict;

    fn figures(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
    }

    fn meta(model: &str) -> Meta {
        Meta {
            board: "qemu-m7".into(),
            model: model.into(),
            model_sha256: "ab".into(),
            tflm: "tfmicro-0.1.0".into(),
            tflm_generation: "2020".into(),
            kernels: "reference".into(),
            rustc: "rustc 1.0".into(),
            target: "thumbv7em-none-eabihf".into(),
            arena_bytes: 3072,
            measured_at_commit: String::new(),
            approved_by: "someone".into(),
            approved_at: 1,
        }
    }

    fn baseline(model: &str, scenarios: &[(&str, &[(&str, i64)])]) -> BaselineFile {
        BaselineFile {
            format: BASELINE_FORMAT,
            meta: meta(model),
            scenario: scenarios.iter().map(|&(s, f)| (s.to_owned(), figures(f))).collect(),
            footprint: None,
        }
    }

    /// A git repository whose `baselines/qemu-m7/hello_world.toml` is
    /// committed, with a results directory beside it.
    struct Checkout {
        dir: tempfile::TempDir,
        repo: Repository,
    }

    impl Checkout {
        fn new() -> Checkout {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init(dir.path()).unwrap();
            let mut config = repo.config().unwrap();
            config.set_str("user.name", "Reviewer").unwrap();
            config.set_str("user.email", "reviewer@example.com").unwrap();
            let checkout = Checkout { dir, repo };
            let committed =
                baseline("hello_world", &[("single-frame", &[("a_bytes", 1)]), ("stream", &[("b_bytes", 2)])]);
            committed.write(&checkout.baseline("hello_world")).unwrap();
            {
                let mut index = checkout.repo.index().unwrap();
                index.add_path(Path::new("baselines/qemu-m7/hello_world.toml")).unwrap();
                let tree = checkout.repo.find_tree(index.write_tree().unwrap()).unwrap();
                let sig = Signature::now("Reviewer", "reviewer@example.com").unwrap();
                checkout.repo.commit(Some("HEAD"), &sig, &sig, "baselines", &tree, &[]).unwrap();
                index.write().unwrap();
            }
            checkout
        }

        fn baselines(&self) -> PathBuf {
            self.dir.path().join("baselines")
        }

        fn results(&self) -> PathBuf {
            self.dir.path().join("out")
        }

        fn baseline(&self, model: &str) -> PathBuf {
            file_path(&self.baselines(), "qemu-m7", model)
        }

        fn candidate(&self, model: &str) -> PathBuf {
            file_path(&pending_dir(&self.results()), "qemu-m7", model)
        }

        fn approve(&self, filters: &[Filter], commit: bool) -> Result<Approval, BaselineError> {
            let message = |rows: &[Row]| format!("approve {} figures", rows.len());
            approve(
                &self.results(),
                &self.baselines(),
                filters,
                "Reviewer",
                commit.then_some(&message as CommitMessage),
            )
        }
    }

    /// Baselines read at a revision: the committed file, and none (not an
    /// error) for a model or a board that has no baseline there, even where
    /// the work tree has no such directory either.
    #[test]
    fn a_revision_without_a_models_baseline_has_none() {
        let checkout = Checkout::new();
        let at_head = Source::Revision { dir: checkout.baselines(), rev: "HEAD".into() };
        assert!(at_head.load("qemu-m7", "hello_world").unwrap().is_some());
        assert!(at_head.load("qemu-m7", "micro_speech").unwrap().is_none());
        assert!(at_head.load("qemu-m55", "hello_world").unwrap().is_none());
    }

    fn row(model: &str, scenario: &str, metric: &str, baseline: Option<i64>, measured: Option<i64>) -> Row {
        Row {
            board: "qemu-m7".into(),
            model: model.into(),
            scenario: scenario.into(),
            metric: metric.into(),
            baseline,
            measured,
            verdict: crate::verdict::compare::verdict(Default::default(), baseline, measured),
            moved: Vec::new(),
        }
    }

    #[test]
    fn a_run_leaves_candidates_for_the_scenarios_that_changed_and_only_their_figures() {
        let checkout = Checkout::new();
        // A candidate of an earlier run is gone after the next one.
        baseline("old_model", &[("stream", &[("x_bytes", 1)])]).write(&checkout.candidate("old_model")).unwrap();
        let image = |model: &str| Image {
            board: "qemu-m7".into(),
            model: model.into(),
            model_sha256: "cd".into(),
            tflm: "tfmicro-0.1.0".into(),
            tflm_generation: "2020".into(),
            kernels: "reference".into(),
            rustc: "rustc 2.0".into(),
            target: "thumbv7em-none-eabihf".into(),
            arena_bytes: 4096,
        };
        let record = |model: &str, scenario: &str| Measurement {
            board: "qemu-m7".into(),
            model: model.into(),
            scenario: scenario.into(),
            metrics: figures(&[("a_bytes", 5), ("frames", 16)]),
            notes: BTreeMap::new(),
            checks: vec![],
            arena_prediction: None,
            tflm_breakdown: None,
            resident_breakdowns: Default::default(),
            spread: Default::default(),
            footprint: None,
        };
        let results = Results {
            format: 1,
            commit: Some("c0ffee".into()),
            boards: vec!["qemu-m7".into()],
            images: vec![image("hello_world"), image("micro_speech")],
            records: vec![
                record("hello_world", "single-frame"),
                record("hello_world", "stream"),
                Measurement { metrics: figures(&[("a_bytes", 9)]), ..record("micro_speech", "single-frame") },
            ],
            failed: vec![],
            models: Vec::new(),
        };
        let mut changed = row("hello_world", "single-frame", "a_bytes", Some(1), Some(5));
        changed.verdict = Verdict::Regressed;
        let mut same = row("hello_world", "stream", "a_bytes", Some(5), Some(5));
        same.verdict = Verdict::Unchanged;
        let mut other = row("micro_speech", "single-frame", "a_bytes", Some(9), Some(9));
        other.verdict = Verdict::Unchanged;
        let comparison =
            Comparison { against: "work tree".into(), runtime_changes: vec![], rows: vec![changed, same, other] };

        let written = write_pending(&results, &comparison, &checkout.results()).unwrap();
        assert_eq!(written, [checkout.candidate("hello_world")]);
        assert_eq!(
            pending(&checkout.results()).unwrap(),
            [("qemu-m7".into(), "hello_world".into(), written[0].clone())]
        );
        let candidate = read(&written[0], "qemu-m7", "hello_world").unwrap();
        assert_eq!(candidate.scenario, [("single-frame".to_owned(), figures(&[("a_bytes", 5)]))].into());
        assert_eq!(
            candidate.meta,
            Meta { approved_by: String::new(), approved_at: 0, ..image("hello_world").meta(&results) }
        );
        assert_eq!(candidate.meta.measured_at_commit, "c0ffee");
    }

    #[test]
    fn approving_takes_the_chosen_scenarios_and_commits_exactly_their_files() {
        let checkout = Checkout::new();
        let hello = baseline("hello_world", &[("single-frame", &[("a_bytes", 5)]), ("stream", &[("b_bytes", 7)])]);
        hello.write(&checkout.candidate("hello_world")).unwrap();
        baseline("micro_speech", &[("single-frame", &[("c_bytes", 3)])])
            .write(&checkout.candidate("micro_speech"))
            .unwrap();
        // A file staged by hand stays staged and out of the commit.
        std::fs::write(checkout.dir.path().join("notes.txt"), "mine").unwrap();
        let mut index = checkout.repo.index().unwrap();
        index.add_path(Path::new("notes.txt")).unwrap();
        index.write().unwrap();
        let before = now();

        let single = Filter { scenario: Some("single-frame".into()), ..Filter::default() };
        let approval = checkout.approve(&[single], true).unwrap();

        assert_eq!(approval.files, [checkout.baseline("hello_world"), checkout.baseline("micro_speech")]);
        assert_eq!(
            approval.diff,
            [
                row("hello_world", "single-frame", "a_bytes", Some(1), Some(5)),
                row("micro_speech", "single-frame", "c_bytes", None, Some(3)),
            ]
        );
        // single-frame taken, stream kept as it was; the new model's file made.
        let hello = read(&checkout.baseline("hello_world"), "qemu-m7", "hello_world").unwrap();
        assert_eq!(hello.scenario["single-frame"], figures(&[("a_bytes", 5)]));
        assert_eq!(hello.scenario["stream"], figures(&[("b_bytes", 2)]));
        assert_eq!(hello.meta.approved_by, "Reviewer");
        assert!(hello.meta.approved_at >= before);
        let micro = read(&checkout.baseline("micro_speech"), "qemu-m7", "micro_speech").unwrap();
        assert_eq!(micro.scenario, [("single-frame".to_owned(), figures(&[("c_bytes", 3)]))].into());
        // What was not taken stays pending; what was, is gone.
        let left = read(&checkout.candidate("hello_world"), "qemu-m7", "hello_world").unwrap();
        assert_eq!(left.scenario, [("stream".to_owned(), figures(&[("b_bytes", 7)]))].into());
        assert!(!checkout.candidate("micro_speech").exists());

        let head = checkout.repo.head().unwrap().peel_to_commit().unwrap();
        assert_eq!(approval.commit.as_deref(), Some(head.id().to_string().as_str()));
        assert_eq!(head.message(), Some("approve 2 figures"));
        let parent = head.parent(0).unwrap();
        let diff = checkout.repo.diff_tree_to_tree(Some(&parent.tree().unwrap()), Some(&head.tree().unwrap()), None);
        let changed: Vec<PathBuf> = diff.unwrap().deltas().map(|d| d.new_file().path().unwrap().to_owned()).collect();
        assert_eq!(
            changed,
            [PathBuf::from("baselines/qemu-m7/hello_world.toml"), PathBuf::from("baselines/qemu-m7/micro_speech.toml")]
        );
        let staged = checkout.repo.statuses(None).unwrap();
        let notes = staged.iter().find(|s| s.path() == Some("notes.txt")).unwrap();
        assert!(notes.status().contains(git2::Status::INDEX_NEW));
    }

    /// The footprint goes with the build record it came from: approving
    /// another scenario leaves the baseline's footprint as it was, approving
    /// the build record replaces it.
    #[test]
    fn the_footprint_is_approved_with_the_build_record_only() {
        use crate::image::footprint::Footprint;
        let checkout = Checkout::new();
        let parts = |firmware| Footprint { flash: figures(&[("firmware", firmware)]), static_ram: BTreeMap::new() };
        let mut old = baseline("hello_world", &[(BUILD, &[("flash_bytes", 100)])]);
        old.footprint = Some(parts(100));
        old.write(&checkout.baseline("hello_world")).unwrap();
        let mut candidate =
            baseline("hello_world", &[(BUILD, &[("flash_bytes", 108)]), ("single-frame", &[("a_bytes", 5)])]);
        candidate.footprint = Some(parts(108));
        candidate.write(&checkout.candidate("hello_world")).unwrap();
        let footprint = || read(&checkout.baseline("hello_world"), "qemu-m7", "hello_world").unwrap().footprint;

        let single = Filter { scenario: Some("single-frame".into()), ..Filter::default() };
        checkout.approve(&[single], false).unwrap();
        assert_eq!(footprint(), Some(parts(100)));
        let build = Filter { scenario: Some(BUILD.into()), ..Filter::default() };
        checkout.approve(&[build], false).unwrap();
        assert_eq!(footprint(), Some(parts(108)));
    }

    #[test]
    fn approving_nothing_writes_and_commits_nothing() {
        let checkout = Checkout::new();
        baseline("hello_world", &[("stream", &[("b_bytes", 7)])]).write(&checkout.candidate("hello_world")).unwrap();
        let head = checkout.repo.head().unwrap().peel_to_commit().unwrap().id();
        let single = Filter { scenario: Some("single-frame".into()), ..Filter::default() };
        let approval = checkout.approve(&[single], true).unwrap();
        assert!(approval.files.is_empty() && approval.diff.is_empty() && approval.commit.is_none());
        assert_eq!(checkout.repo.head().unwrap().peel_to_commit().unwrap().id(), head);
        let kept = read(&checkout.baseline("hello_world"), "qemu-m7", "hello_world").unwrap();
        assert_eq!(kept.scenario["stream"], figures(&[("b_bytes", 2)]));
        assert!(checkout.candidate("hello_world").exists());
    }

    #[test]
    fn a_commit_is_refused_over_uncommitted_baseline_edits_and_nothing_is_written() {
        let checkout = Checkout::new();
        baseline("hello_world", &[("stream", &[("b_bytes", 7)])]).write(&checkout.candidate("hello_world")).unwrap();
        let edited = baseline("hello_world", &[("stream", &[("b_bytes", 9)])]);
        edited.write(&checkout.baseline("hello_world")).unwrap();
        let err = checkout.approve(&[Filter::default()], true).unwrap_err().to_string();
        assert!(err.contains("baselines/qemu-m7/hello_world.toml"), "{err}");
        assert_eq!(read(&checkout.baseline("hello_world"), "qemu-m7", "hello_world").unwrap(), edited);
        assert!(checkout.candidate("hello_world").exists());
        // Without a commit, approving over the edit is the user's call.
        let approval = checkout.approve(&[Filter::default()], false).unwrap();
        assert_eq!(approval.diff, [row("hello_world", "stream", "b_bytes", Some(9), Some(7))]);
        assert!(approval.commit.is_none());
    }

    #[test]
    fn filters_choose_by_board_model_and_scenario() {
        let f = |board: Option<&str>, model: Option<&str>, scenario: Option<&str>| Filter {
            board: board.map(Into::into),
            model: model.map(Into::into),
            scenario: scenario.map(Into::into),
        };
        assert!(f(None, None, None).takes("b", "m", "s"));
        assert!(f(Some("b"), Some("m"), Some("s")).takes("b", "m", "s"));
        assert!(!f(Some("x"), None, None).takes("b", "m", "s"));
        assert!(!f(None, Some("x"), None).takes("b", "m", "s"));
        assert!(!f(None, None, Some("x")).takes("b", "m", "s"));
    }

    #[test]
    fn rejecting_drops_one_scenario_then_the_file() {
        let checkout = Checkout::new();
        let both = baseline("hello_world", &[("single-frame", &[("a_bytes", 5)]), ("stream", &[("b_bytes", 7)])]);
        both.write(&checkout.candidate("hello_world")).unwrap();
        reject(&checkout.results(), "qemu-m7", "hello_world", "stream").unwrap();
        let left = read(&checkout.candidate("hello_world"), "qemu-m7", "hello_world").unwrap();
        assert_eq!(left.scenario.keys().collect::<Vec<_>>(), ["single-frame"]);
        reject(&checkout.results(), "qemu-m7", "hello_world", "single-frame").unwrap();
        assert!(!checkout.candidate("hello_world").exists());
        assert!(pending(&checkout.results()).unwrap().is_empty());
    }
}
