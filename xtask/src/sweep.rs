//! `cargo xtask sweep`: TFLM's history, one tree a month, each made from a
//! clone of tflite-micro as its download scripts make a checkout and run
//! with hello_world and hello_world_int8 on the default board; the table
//! the book's TFLM chapter shows. Not part of CI: it needs the repositories' history.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use harness::config::board::{Board, DEFAULT_BOARD};
use harness::sweep::{self, Outcome};
use harness::Workspace;

use crate::progress::Progress;
use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// A clone of tflite-micro with its history (bare or not).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// A folder of clones of the third-party libraries TFLM's download
    /// scripts fetch from GitHub, each under its repository's name:
    /// flatbuffers, gemmlowp, ruy, kissfft, printf (eyalroz/printf). A
    /// download without a clone is left out, and a tree that needs it is
    /// refused naming the files it lacks.
    #[arg(long, value_name = "DIR")]
    libraries: PathBuf,
    /// The first month, YYYY-MM.
    #[arg(long, default_value = "2021-04")]
    from: String,
    /// Measure again the months that have an outcome kept from an earlier
    /// sweep (in target/hilmem/sweep/).
    #[arg(long)]
    again: bool,
    /// Keep each month's tree and builds (by default only its outcome is
    /// kept).
    #[arg(long)]
    keep: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let months = sweep::months(&args.repo, &args.from)?;
    eprintln!("== sweep: {} months from {} to {}", months.len(), args.from, months.last().map_or("-", |m| &m.month));
    let trees = ws.root().join("target/tflm-sweep");
    let board = Board::load(&ws, DEFAULT_BOARD)?;
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (i, month) in months.iter().enumerate() {
        let head =
            format!("== sweep {}/{}: {} ({}, {})", i + 1, months.len(), month.month, &month.commit[..9], month.date);
        if let Some(kept) = sweep::kept(&ws, month).filter(|_| !args.again) {
            eprintln!("{head}: kept from an earlier sweep");
            outcomes.push(kept);
            continue;
        }
        eprintln!("{head}: making the tree");
        let before = builds(&ws);
        let tree = sweep::make_tree(&args.repo, &args.libraries, month, &trees)
            .with_context(|| format!("the tree of {}", month.month))?;
        let progress = Progress::new();
        let outcome = sweep::measure(&ws, &board, month, &tree, &|event| progress.show(event));
        drop(progress);
        sweep::keep(&ws, &outcome)?;
        if !args.keep {
            std::fs::remove_dir_all(&tree).with_context(|| format!("cannot remove {}", tree.display()))?;
            for made in builds(&ws).difference(&before) {
                std::fs::remove_dir_all(made).with_context(|| format!("cannot remove {}", made.display()))?;
            }
        }
        eprintln!("{head}: {}", summary(&outcome));
        outcomes.push(outcome);
    }
    print!("{}", sweep::markdown(&outcomes));
    let unanswered: Vec<&str> = outcomes.iter().filter(|o| !o.answered()).map(|o| o.month.month.as_str()).collect();
    if !unanswered.is_empty() {
        eprintln!("== sweep: neither ran nor refused: {}", unanswered.join(", "));
        return Ok(exit::REGRESSION);
    }
    Ok(exit::OK)
}

/// A month's outcome in a few words.
fn summary(outcome: &Outcome) -> String {
    match (&outcome.refusal, outcome.answered()) {
        (Some(refusal), _) => format!("refused: {refusal}"),
        (None, true) => format!("ran ({})", outcome.generation.as_deref().unwrap_or("-")),
        (None, false) => {
            let failed: Vec<String> = outcome
                .models
                .iter()
                .filter_map(|m| m.failure.as_ref().map(|f| format!("{}: {}", m.model, f.lines().next().unwrap_or(""))))
                .collect();
            format!("FAILED: {}", failed.join("; "))
        }
    }
}

/// The build directories a run leaves: each board's per-runtime target
/// and configuration folders, and the TFLM libraries of the cache.
fn builds(ws: &Workspace) -> BTreeSet<PathBuf> {
    let firmware = ws.root().join("target/firmware");
    let entries = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default()
    };
    let mut found = BTreeSet::new();
    for board in entries(&firmware) {
        if board == ws.tflm_cache() {
            found.extend(entries(&board).into_iter().filter(|p| p.is_dir()));
        } else {
            found.extend(entries(&board).into_iter().filter(|p| p.is_dir() && !p.ends_with("config")));
            found.extend(entries(&board.join("config")));
        }
    }
    found
}
