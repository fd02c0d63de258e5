//! What a `hil` run leaves behind and ends with: its outputs written into
//! the output directory as one set, what it says of the boards whose probe
//! is not attached, and its exit status.

use std::path::{Path, PathBuf};

use crate::config::board::Board;
use crate::fsutil;
use crate::report::{self, page};
use crate::run::results::Results;
use crate::verdict::approval;
use crate::verdict::baseline::BaselineError;
use crate::verdict::compare::Comparison;
use crate::{exit, Workspace};

#[derive(Debug, thiserror::Error)]
pub enum OutputsError {
    #[error("cannot write the results into {dir}: {source}")]
    Write { dir: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Pending(#[from] BaselineError),
}

/// What the HTML page draws beside the run's results (and the models it
/// read, which they carry): the boards and the baselines the run read.
pub struct PageFrom<'a> {
    pub boards: &'a [Board],
    pub baselines_dir: &'a Path,
}

/// What [`save`] wrote besides the fixed files.
pub struct Saved {
    /// The HTML page, when asked for.
    pub page: Option<PathBuf>,
    /// The pending baseline candidates of the figures that changed.
    pub pending: Vec<PathBuf>,
}

/// Writes `results.json`, `comparison.json`, `report.md`, `junit.xml`, the
/// HTML page (with `page`) and the pending baselines into `out`, each file
/// whole, as one set: a cancellation waits until the set is complete.
pub fn save(
    ws: &Workspace,
    out: &Path,
    results: &Results,
    comparison: &Comparison,
    strict: bool,
    page: Option<PageFrom>,
) -> Result<Saved, OutputsError> {
    let _writing = fsutil::writing();
    let io = |source| OutputsError::Write { dir: out.to_owned(), source };
    results.save(out).map_err(io)?;
    let comparison_json = serde_json::to_string_pretty(comparison).expect("comparison serializes");
    fsutil::write_atomic(&out.join("comparison.json"), comparison_json.as_bytes()).map_err(io)?;
    fsutil::write_atomic(&out.join("report.md"), report::markdown::report(results, comparison).as_bytes())
        .map_err(io)?;
    fsutil::write_atomic(&out.join("junit.xml"), report::junit::report(results, comparison, strict).as_bytes())
        .map_err(io)?;
    let page = match page {
        Some(from) => Some(
            page::write(ws, results.clone(), comparison.clone(), from.boards, from.baselines_dir, out).map_err(io)?,
        ),
        None => None,
    };
    let pending = approval::write_pending(results, comparison, out)?;
    Ok(Saved { page, pending })
}

/// What a run says, once, for the boards it was asked for whose probe is
/// not attached (`(board, the probe it looked for)`): that nothing was
/// flashed, how the build figures stand (`verdict`), and what to run
/// instead.
pub fn unattached_lines(absent: &[(String, String)], verdict: &str) -> Vec<String> {
    let names: Vec<&str> = absent.iter().map(|(board, _)| board.as_str()).collect();
    let mut lines: Vec<String> = absent
        .iter()
        .map(|(board, looked_for)| {
            format!("{board}: no debug probe attached (looked for {looked_for}); nothing was flashed")
        })
        .collect();
    lines.push(format!("the images were built and their build figures compared with the baselines: {verdict}"));
    lines.push(format!(
        "instead: `cargo xtask hil --board {} --build-only` (the build figures alone), `cargo xtask hil` (the emulated Cortex-M7, qemu-m7), or `cargo xtask boards` (the probes attached now)",
        names.join(" --board ")
    ));
    lines
}

/// The status a run ends with: an error (2) when a run failed, an image
/// could not be deployed (`undeployable`) or a board's probe was not
/// attached (`unattached`); a regression (1) when a check failed or a
/// figure regressed; else 0.
pub fn status(results: &Results, comparison: &Comparison, strict: bool, undeployable: bool, unattached: bool) -> i32 {
    if !results.failed.is_empty() || undeployable || unattached {
        exit::ERROR
    } else if !results.all_checks_passed() || comparison.fails(strict) {
        exit::REGRESSION
    } else {
        exit::OK
    }
}
