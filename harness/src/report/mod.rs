//! Showing results: terminal tables, Markdown and JUnit XML here, the HTML
//! page in [`page`] (drawn with [`svg`]). Reads every folder below it;
//! nothing below reads it.

pub mod analysis;
pub mod findings;
pub mod junit;
pub mod markdown;
pub mod outputs;
pub mod page;
pub mod svg;
pub mod terminal;

use crate::image::footprint::describe;
use crate::run::measurement::{Measurement, BUILD};
use crate::run::results::Results;
use crate::verdict::compare::{Comparison, Row, Verdict};

/// How a record's scenario is shown: the build record says that nothing ran.
pub fn scenario_label(scenario: &str) -> String {
    if scenario == BUILD {
        format!("{BUILD} (not run)")
    } else {
        scenario.to_owned()
    }
}

/// A build record's flash and static RAM by component, largest first.
pub fn footprint_parts(r: &Measurement) -> Vec<(&'static str, Vec<(String, i64)>)> {
    let Some(f) = &r.footprint else { return Vec::new() };
    let sorted = |parts: &std::collections::BTreeMap<String, i64>| {
        let mut parts: Vec<(String, i64)> = parts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        parts.sort_by_key(|(name, bytes)| (std::cmp::Reverse(*bytes), name.clone()));
        parts
    };
    [("flash", &f.flash), ("static RAM", &f.static_ram)]
        .into_iter()
        .filter(|(_, parts)| !parts.is_empty())
        .map(|(what, parts)| (what, sorted(parts)))
        .collect()
}

/// The components that moved most with a figure: `+2340 CONV_2D kernel,
/// -4 other`, and how many more did (`comparison.json` has them all).
pub fn moved_text(r: &Row) -> Option<String> {
    const SHOWN: usize = 4;
    let mut parts: Vec<String> =
        r.moved.iter().take(SHOWN).map(|(c, delta)| format!("{delta:+} {}", describe(c))).collect();
    if r.moved.len() > SHOWN {
        parts.push(format!("{} more", r.moved.len() - SHOWN));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn signed(v: Option<i64>) -> String {
    v.map_or("-".into(), |d| if d > 0 { format!("+{d}") } else { d.to_string() })
}

fn percent(row: &Row) -> String {
    row.delta_percent().map_or("-".into(), |p| format!("{p:+.2}%"))
}

fn value(v: Option<i64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// What a comparison says first when the TFLM or the kernels changed: one
/// line per change (`TFLM changed: A → B`, `kernels changed: reference →
/// cmsis-nn`), with the boards and models it applies to.
pub fn runtime_changes(c: &Comparison) -> Vec<String> {
    let mut changes: Vec<(&str, &str, &str, Vec<String>)> = Vec::new();
    for change in &c.runtime_changes {
        let image = format!("{}/{}", change.board, change.model);
        let same = |(what, from, to, _): &&mut (&str, &str, &str, Vec<String>)| {
            *what == change.what && *from == change.from && *to == change.to
        };
        match changes.iter_mut().find(same) {
            Some((_, _, _, images)) => images.push(image),
            None => changes.push((&change.what, &change.from, &change.to, vec![image])),
        }
    }
    changes
        .into_iter()
        .map(|(what, from, to, images)| format!("{what} changed: {from} → {to} ({})", images.join(", ")))
        .collect()
}

/// The run's verdict in one line, as every report opens: runs that
/// produced no measurement, else regressions and failed checks, else that
/// it passed and what moved. Its first word (FAILED, REGRESSED, PASSED) is
/// the page's class for it.
pub fn verdict_line(results: &Results, c: &Comparison) -> String {
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let failed_checks = results.records.iter().map(|r| r.checks.iter().filter(|c| !c.passed).count()).sum();
    let regressed = c.count(Verdict::Regressed);
    let moved = c.rows.len() - c.count(Verdict::Unchanged);
    if !results.failed.is_empty() {
        let runs = plural(results.failed.len(), "run", "runs");
        format!("FAILED: {runs} produced no measurement")
    } else if regressed + failed_checks > 0 {
        let figures = plural(regressed, "figure", "figures");
        let checks = plural(failed_checks, "check", "checks");
        format!("REGRESSED: {figures} above the baseline's tolerance, {checks} failed")
    } else if moved == 0 {
        format!("PASSED: nothing moved ({} figures equal their baselines)", c.rows.len())
    } else {
        format!("PASSED: {} moved, none regressed", plural(moved, "figure", "figures"))
    }
}

/// The one-line summary of a comparison.
pub fn comparison_summary(c: &Comparison) -> String {
    let counts: Vec<String> = [
        Verdict::Regressed,
        Verdict::WithinTolerance,
        Verdict::Improved,
        Verdict::New,
        Verdict::Missing,
        Verdict::Unchanged,
    ]
    .iter()
    .map(|v| format!("{} {}", c.count(*v), v.name()))
    .collect();
    format!("against baselines in {}: {}", c.against, counts.join(", "))
}

/// Each build record's flash and static RAM by component, as rows of
/// component, flash and static RAM, largest flash first.
pub fn footprint_rows(r: &Measurement) -> Vec<(String, Option<i64>, Option<i64>)> {
    let Some(f) = &r.footprint else { return Vec::new() };
    let names: std::collections::BTreeSet<&String> = f.flash.keys().chain(f.static_ram.keys()).collect();
    let mut names: Vec<&String> = names.into_iter().collect();
    let bytes = |parts: &std::collections::BTreeMap<String, i64>, n: &String| parts.get(n).copied().unwrap_or(0);
    names.sort_by_key(|n| std::cmp::Reverse((bytes(&f.flash, n), bytes(&f.static_ram, n))));
    names.into_iter().map(|n| (describe(n), f.flash.get(n).copied(), f.static_ram.get(n).copied())).collect()
}

/// A row's cells as every table shows them: board, model, scenario, metric,
/// baseline, measured, delta, delta %.
/// A row's verdict, with the components that moved.
fn verdict_text(r: &Row, verdict: &str) -> String {
    match moved_text(r) {
        Some(moved) => format!("{verdict}: {moved}"),
        None => verdict.to_owned(),
    }
}

pub fn cells(r: &Row) -> [String; 8] {
    [
        r.board.clone(),
        r.model.clone(),
        r.scenario.clone(),
        r.metric.clone(),
        value(r.baseline),
        value(r.measured),
        signed(r.delta()),
        percent(r),
    ]
}

/// `YYYY-MM-DD` of a Unix time (UTC), without a date library.
pub(crate) fn date(seconds: i64) -> String {
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = seconds.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::measurement::Check;
    use crate::run::results::Failed;

    /// The line every report opens with: failed runs first, then
    /// regressions and failed checks, else what moved.
    #[test]
    fn the_verdict_says_the_worst_first_and_counts() {
        let row = |verdict: Verdict| Row {
            board: "qemu-m7".into(),
            model: "m".into(),
            scenario: "single-frame".into(),
            metric: "arena_used_bytes".into(),
            baseline: Some(1),
            measured: Some(1),
            verdict,
            moved: Vec::new(),
        };
        let comparison = |verdicts: &[Verdict]| Comparison {
            against: "work tree".into(),
            runtime_changes: Vec::new(),
            rows: verdicts.iter().map(|v| row(*v)).collect(),
        };
        let mut results = Results {
            format: 1,
            commit: None,
            boards: Vec::new(),
            images: Vec::new(),
            records: Vec::new(),
            failed: Vec::new(),
            models: Vec::new(),
        };
        let (u, r, w, i) = (Verdict::Unchanged, Verdict::Regressed, Verdict::WithinTolerance, Verdict::Improved);
        assert_eq!(
            verdict_line(&results, &comparison(&[u, u])),
            "PASSED: nothing moved (2 figures equal their baselines)"
        );
        assert_eq!(verdict_line(&results, &comparison(&[u, w])), "PASSED: 1 figure moved, none regressed");
        assert_eq!(verdict_line(&results, &comparison(&[w, i, u])), "PASSED: 2 figures moved, none regressed");
        assert_eq!(
            verdict_line(&results, &comparison(&[r, w, u])),
            "REGRESSED: 1 figure above the baseline's tolerance, 0 checks failed"
        );
        let mut record: Measurement =
            serde_json::from_str(r#"{"board":"qemu-m7","model":"m","scenario":"stream","metrics":{},"checks":[]}"#)
                .unwrap();
        record.checks = ["a", "b"].map(|n| Check { name: n.into(), passed: false, detail: String::new() }).to_vec();
        results.records.push(record);
        assert_eq!(
            verdict_line(&results, &comparison(&[r, r, u])),
            "REGRESSED: 2 figures above the baseline's tolerance, 2 checks failed"
        );
        assert_eq!(
            verdict_line(&results, &comparison(&[u])),
            "REGRESSED: 0 figures above the baseline's tolerance, 2 checks failed"
        );
        let failed =
            Failed { board: "qemu-m7".into(), model: "m".into(), scenario: "stream".into(), error: "x".into() };
        results.failed = vec![failed.clone()];
        assert_eq!(verdict_line(&results, &comparison(&[r])), "FAILED: 1 run produced no measurement");
        results.failed.push(failed);
        assert_eq!(verdict_line(&results, &comparison(&[u])), "FAILED: 2 runs produced no measurement");
    }
}
