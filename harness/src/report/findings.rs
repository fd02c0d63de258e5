//! What a run found, worst first: the lines every report leads with.

use crate::run::measurement::PREDICTION_MARGIN_PERCENT;
use crate::run::results::Results;
use crate::verdict::compare::{Comparison, Row, Verdict};

/// What the Markdown and HTML reports show besides the summary (plain text;
/// the Markdown sets each item as code).
pub struct Findings {
    /// The figures that are not unchanged.
    pub changed: Vec<Row>,
    pub failed_checks: Vec<String>,
    /// Arena predictions off by more than the margin.
    pub off_predictions: Vec<String>,
    /// Runs that produced no measurement, with the first line of the error.
    pub failed_runs: Vec<String>,
}

impl Findings {
    /// The lists under their headings, in report order.
    pub fn lists(&self) -> [(String, &[String]); 3] {
        [
            ("Failed checks".into(), &self.failed_checks),
            (format!("Arena predictions off by more than {PREDICTION_MARGIN_PERCENT}%"), &self.off_predictions),
            ("Runs that produced no measurement".into(), &self.failed_runs),
        ]
    }
}

pub fn of(results: &Results, c: &Comparison) -> Findings {
    Findings {
        changed: c.rows.iter().filter(|r| r.verdict != Verdict::Unchanged).cloned().collect(),
        failed_checks: results
            .records
            .iter()
            .flat_map(|r| {
                r.checks
                    .iter()
                    .filter(|c| !c.passed)
                    .map(move |c| format!("{}/{} {}: {}: {}", r.board, r.model, r.scenario, c.name, c.detail))
            })
            .collect(),
        off_predictions: results
            .records
            .iter()
            .filter_map(|r| Some((r, r.arena_prediction.filter(|p| !p.within_margin())?)))
            .map(|(r, p)| {
                format!("{}/{}: predicted {}, measured {}", r.board, r.model, p.predicted_bytes, p.measured_bytes)
            })
            .collect(),
        failed_runs: results
            .failed
            .iter()
            .map(|f| format!("{}/{} {}: {}", f.board, f.model, f.scenario, f.error.lines().next().unwrap_or("")))
            .collect(),
    }
}
