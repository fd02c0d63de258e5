//! What the HTML page shows, gathered for a run: the analyses of its models,
//! its boards' profiles, the history of its baseline files, and where the
//! book is for the page's links. The only part of the page that reads files.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::board::Board;
use crate::config::models::{self, Model, ModelSpec, ModelsError};

use crate::model::analysis::Analysis;
use crate::model::tail::cmsis_nn::KernelPath;
use crate::report::page::{Inputs, Trend};
use crate::run::results::{Image, Results};
use crate::tflm::tree::{Generation, Kernels};
use crate::verdict::baseline;
use crate::verdict::compare::{Comparison, Verdict};

/// Where the page's links to the book lead: `HILMEM_BOOK_URL` when set; in
/// GitHub Actions, the repository's GitHub Pages, where the book workflow
/// publishes it; else the book `cargo xtask docs` builds into target/book/,
/// relative to a page in `dir` inside the workspace (a page elsewhere gets
/// no links: it names no path of the machine).
fn book_url(ws: &crate::Workspace, dir: &Path) -> Option<String> {
    let set = |key| std::env::var(key).ok().filter(|v| !v.is_empty());
    if let Some(url) = set("HILMEM_BOOK_URL") {
        return Some(if url.ends_with('/') { url } else { format!("{url}/") });
    }
    if let Some((owner, repo)) = set("GITHUB_REPOSITORY").as_deref().and_then(|r| r.split_once('/')) {
        return Some(format!("https://{}.github.io/{repo}/", owner.to_lowercase()));
    }
    local_book(ws.root(), dir)
}

/// target/book/ under `root`, relative to `dir` if `dir` lies in `root`.
fn local_book(root: &Path, dir: &Path) -> Option<String> {
    let (root, dir) = (root.canonicalize().ok()?, dir.canonicalize().ok()?);
    let depth = dir.strip_prefix(&root).ok()?.components().count();
    Some(format!("{}target/book/", "../".repeat(depth)))
}

/// The models of a run saved earlier (`cargo xtask report`), read again
/// from `models_file` as it is now: results.json keeps a run's figures, not
/// its inputs.
pub fn saved_run_models(results: &Results, models_file: &Path) -> Result<Vec<Model>, ModelsError> {
    let ran = |spec: &&ModelSpec| results.images.iter().any(|i| i.model == spec.name);
    models::load(models_file)?.models.iter().filter(ran).map(ModelSpec::parse).collect()
}

/// Gathers the inputs of a page to be written in `dir` for a run: the
/// analyses of the models the run read (`results.models`), the profiles of
/// its `boards`, the history of the baseline files in `baselines_dir`, and
/// where the book is.
pub fn gather(
    ws: &crate::Workspace,
    results: Results,
    comparison: Comparison,
    boards: &[Board],
    baselines_dir: &Path,
    dir: &Path,
) -> Inputs {
    let mut notes = Vec::new();
    let mut analyses = Vec::new();
    // Each model once, for the TFLM, kernels and board of its first image.
    let mut run_models: Vec<&Image> = Vec::new();
    for image in &results.images {
        if !run_models.iter().any(|i| i.model == image.model) {
            run_models.push(image);
        }
    }
    for image in run_models {
        let (name, generation) = (image.model.as_str(), image.tflm_generation.as_str());
        // A set's models have their layouts where they run as models.
        let Some(model) = results.models.iter().find(|m| m.spec.name == name && m.spec.set.is_none()) else {
            continue;
        };
        let tflm = Generation::named(generation).ok_or_else(|| format!("unknown TFLM generation `{generation}`"));
        let kernels = match (Kernels::named(&image.kernels), boards.iter().find(|b| b.name == image.board)) {
            (Some(kernels), Some(board)) => Ok(KernelPath::of(kernels, board.tflm_arch.as_deref())),
            (None, _) => Err(format!("unknown kernel set `{}`", image.kernels)),
            (_, None) => Err(format!("no profile of board `{}`", image.board)),
        };
        match tflm.and_then(|tflm| Ok((tflm, kernels?))).and_then(|(tflm, kernels)| {
            Analysis::of(name, &model.parsed, tflm, kernels, model.spec.planner).map_err(|e| e.to_string())
        }) {
            Ok(a) => analyses.push(a),
            Err(e) => notes.push(format!("model `{name}` was not analysed: {e}")),
        }
    }
    let boards = results.boards.iter().filter_map(|name| boards.iter().find(|b| &b.name == name).cloned()).collect();
    let mut trends = Vec::new();
    let mut unreadable = Vec::new();
    for image in &results.images {
        // Only moved figures have a trend; a model without a baseline file
        // yet has no history.
        let moved = comparison
            .rows
            .iter()
            .any(|r| r.board == image.board && r.model == image.model && r.verdict != Verdict::Unchanged);
        if !moved || !baseline::file_path(baselines_dir, &image.board, &image.model).exists() {
            continue;
        }
        match baseline::history(baselines_dir, &image.board, &image.model, None) {
            Ok(history) => {
                trends.extend(group(&image.board, &image.model, history.rows));
                if !history.unreadable.is_empty() {
                    unreadable.push(format!("{}/{} ({})", image.board, image.model, history.unreadable.len()));
                }
            }
            Err(e) => notes.push(format!("no baseline history for {}/{}: {e}", image.board, image.model)),
        }
    }
    if !unreadable.is_empty() {
        notes.push(format!(
            "versions of these baseline files cannot be read (`cargo xtask baseline history` names why), and their trends leave them out: {}",
            unreadable.join(", ")
        ));
    }
    // The page names no path of this machine.
    let (root, baselines) = (format!("{}/", ws.root().display()), baselines_dir.display().to_string());
    let notes = notes.into_iter().map(|n| n.replace(&baselines, "baselines").replace(&root, "")).collect();
    Inputs { results, comparison, analyses, boards, trends, notes, book: book_url(ws, dir) }
}

/// History rows (oldest first) as one trend per metric.
fn group(board: &str, model: &str, rows: Vec<(crate::gitrepo::Version, String, String, i64)>) -> Vec<Trend> {
    let mut versions: Vec<(String, i64)> = Vec::new();
    let mut by_metric: BTreeMap<String, BTreeMap<String, BTreeMap<usize, i64>>> = BTreeMap::new();
    for (version, scenario, name, value) in rows {
        if versions.last().is_none_or(|(c, _)| *c != version.commit) {
            versions.push((version.commit.clone(), version.time));
        }
        by_metric.entry(name).or_default().entry(scenario).or_default().insert(versions.len() - 1, value);
    }
    by_metric
        .into_iter()
        .map(|(metric, scenarios)| Trend {
            board: board.to_owned(),
            model: model.to_owned(),
            metric,
            versions: versions.clone(),
            values: scenarios
                .into_iter()
                .map(|(s, at)| (s, (0..versions.len()).map(|i| at.get(&i).copied()).collect()))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gitrepo::Version;

    fn version(commit: &str, time: i64) -> Version {
        Version { commit: commit.into(), time, summary: String::new(), text: String::new() }
    }

    #[test]
    fn history_rows_become_one_trend_per_metric_with_gaps_where_a_version_had_no_value() {
        let (a, b) = (version("a", 1), version("b", 2));
        let rows = vec![
            (a.clone(), "single-frame".to_owned(), "arena_used_bytes".to_owned(), 1472),
            (a.clone(), "single-frame".to_owned(), "stack_peak_bytes".to_owned(), 2016),
            (b.clone(), "single-frame".to_owned(), "arena_used_bytes".to_owned(), 1400),
            (b.clone(), "stream".to_owned(), "arena_used_bytes".to_owned(), 1400),
        ];
        let trends = group("qemu-m7", "hello_world", rows);
        assert_eq!(trends.len(), 2);
        let used = &trends[0];
        assert_eq!((used.metric.as_str(), used.versions.len()), ("arena_used_bytes", 2));
        assert_eq!(used.values["single-frame"], [Some(1472), Some(1400)]);
        assert_eq!(used.values["stream"], [None, Some(1400)]);
        assert_eq!(trends[1].values["single-frame"], [Some(2016), None]);
    }

    /// A page in the workspace links to the book built there, relative to
    /// itself; one elsewhere names no path, so it has no links.
    #[test]
    fn a_page_links_to_the_local_book_relative_to_itself_and_only_inside_the_workspace() {
        let root = tempfile::tempdir().unwrap();
        let (out, deeper) = (root.path().join("target/hilmem"), root.path().join("ci/runs/7"));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&deeper).unwrap();
        assert_eq!(local_book(root.path(), root.path()).as_deref(), Some("target/book/"));
        assert_eq!(local_book(root.path(), &out).as_deref(), Some("../../target/book/"));
        assert_eq!(local_book(root.path(), &deeper).as_deref(), Some("../../../target/book/"));
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(local_book(root.path(), elsewhere.path()), None);
    }
}
