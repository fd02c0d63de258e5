//! From a run's changed figures to approved baselines: the pending
//! candidates a run leaves under its output directory, and `approve` /
//! `reject`, which turn them into baseline files (and a commit) or drop them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::gitrepo::{self, GitError};
use crate::run::results::{Meta, Results};
use crate::verdict::baseline::{file_path, is_baselined, now, read, BaselineError, BaselineFile, Source};
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
        let mut file = BaselineFile { meta: image.meta(results), scenario: BTreeMap::new() };
        let records = results.records.iter().filter(|r| r.board == image.board && r.model == image.model);
        for record in records.filter(|r| changed.contains(&r.scenario.as_str())) {
            let figures = record.metrics.iter().filter(|(k, _)| is_baselined(k)).map(|(k, v)| (k.clone(), *v));
            file.scenario.insert(record.scenario.clone(), figures.collect());
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
        let mut baseline = Source::WorkTree(baselines_dir.to_owned())
            .load(&board, &model)?
            .unwrap_or(BaselineFile { meta: candidate.meta.clone(), scenario: BTreeMap::new() });
        let taken: Vec<String> =
            candidate.scenario.keys().filter(|s| filters.iter().any(|f| f.takes(&board, &model, s))).cloned().collect();
        if taken.is_empty() {
            continue;
        }
        for scenario in &taken {
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
