//! What the terminal shows: the run's tables, the boards and what is
//! attached, the comparison, a baseline and its history.

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use crate::config::board::{Board, Layout, Runner};
use crate::device::runner::probe::ProbeSummary;
use crate::image::footprint::describe;
use crate::run::measurement::{ArenaPrediction, Measurement};
use crate::run::results::Results;
use crate::verdict::baseline::BaselineFile;
use crate::verdict::compare::{Comparison, Row, Verdict};
use hilmem_protocol::metric;

use super::{cells, comparison_summary, date, footprint_parts, runtime_changes, scenario_label, verdict_text};

/// Metric columns of the terminal table, shown where a board reports them.
pub(super) const COLUMNS: [&str; 8] = [
    metric::MODEL_BYTES,
    metric::FLASH_BYTES,
    metric::STATIC_RAM_BYTES,
    metric::ARENA_USED_BYTES,
    metric::ARENA_TOUCHED_BYTES,
    metric::HEAP_PEAK_BYTES,
    metric::STACK_PEAK_BYTES,
    metric::RSS_PEAK_BYTES,
];

/// The results as one table per board, one row per model and scenario, then
/// the failed runs.
pub fn table(results: &Results) -> String {
    let mut out = String::new();
    for board in &results.boards {
        let records: Vec<&Measurement> = results.records.iter().filter(|r| &r.board == board).collect();
        if records.is_empty() {
            continue;
        }
        let columns: Vec<&str> =
            COLUMNS.iter().copied().filter(|c| records.iter().any(|r| r.metrics.contains_key(*c))).collect();
        let mut builder = Builder::default();
        // The prediction goes right after the figure it predicts (at the end
        // when nothing ran): a run's against TFLM's figure, a build
        // record's with the least arena.
        let predicted = records
            .iter()
            .any(|r| r.arena_prediction.is_some() || r.metrics.contains_key(metric::PREDICTED_ARENA_BYTES));
        let at = predicted
            .then(|| columns.iter().position(|c| *c == metric::ARENA_USED_BYTES).map_or(2 + columns.len(), |i| i + 3));
        let mut header = vec!["model", "scenario"];
        header.extend(&columns);
        header.push("checks");
        if let Some(at) = at {
            header.insert(at, "arena predicted");
        }
        builder.push_record(header);
        for r in records {
            let mut row = vec![r.model.clone(), scenario_label(&r.scenario)];
            row.extend(columns.iter().map(|name| r.metrics.get(*name).map_or("-".into(), i64::to_string)));
            row.push(check_summary(r));
            if let Some(at) = at {
                let built = |p: &i64| match r.metrics.get(metric::PREDICTED_LEAST_ARENA_BYTES) {
                    Some(least) => format!("{p}, least {least}"),
                    None => p.to_string(),
                };
                let cell = match (&r.arena_prediction, r.metrics.get(metric::PREDICTED_ARENA_BYTES)) {
                    (Some(p), _) => prediction(p),
                    (None, Some(p)) => built(p),
                    (None, None) => "-".into(),
                };
                row.insert(at, cell);
            }
            builder.push_record(row);
        }
        let mut table = builder.build();
        let right = 2 + columns.len() + usize::from(predicted);
        table.with(Style::sharp()).modify(Columns::new(2..right), Alignment::right());
        out.push_str(&format!("{board}\n{table}\n"));
        for r in results.records.iter().filter(|r| &r.board == board) {
            for (name, text) in &r.notes {
                out.push_str(&format!("  {} {}: {name}: {text}\n", r.model, r.scenario));
            }
            for (what, parts) in footprint_parts(r) {
                let shown: Vec<String> = parts.iter().map(|(c, bytes)| format!("{} {bytes}", describe(c))).collect();
                out.push_str(&format!("  {} {what} by component: {}\n", r.model, shown.join(", ")));
            }
        }
    }
    for f in &results.failed {
        out.push_str(&format!("FAILED {}/{} {}:\n  {}\n", f.board, f.model, f.scenario, f.error.replace('\n', "\n  ")));
    }
    out.trim_end().to_owned()
}

/// `88416 (+0)`; a difference beyond the margin is flagged.
pub(super) fn prediction(p: &ArenaPrediction) -> String {
    let flag = if p.within_margin() { "" } else { " OFF" };
    format!("{} ({:+}){flag}", p.predicted_bytes, p.difference())
}

pub(super) fn check_summary(r: &Measurement) -> String {
    let passed = r.checks.iter().filter(|c| c.passed).count();
    match r.checks.len() {
        0 => "none".into(),
        n if passed == n => format!("pass {passed}/{n}"),
        n => {
            let failed: Vec<_> =
                r.checks.iter().filter(|c| !c.passed).map(|c| format!("{}: {}", c.name, c.detail)).collect();
            format!("FAIL {passed}/{n}: {}", failed.join("; "))
        }
    }
}

/// The board profiles, a row each.
pub fn boards(boards: &[Board]) -> String {
    let mut builder = Builder::default();
    builder.push_record(["board", "runner", "cpu", "target", "flash", "ram", "transport", "ci label"]);
    for b in boards {
        let runner = match &b.runner {
            Runner::Qemu { machine, .. } => format!("qemu {machine}"),
            Runner::Host => "host process".into(),
            Runner::ProbeRs { chip, probe } => {
                format!("probe-rs {chip}{}", probe.as_ref().map(|p| format!(" ({p})")).unwrap_or_default())
            }
        };
        let kib = |bytes: u64| format!("{} KiB", bytes / 1024);
        let (flash, ram) = match &b.layout {
            Layout::BareMetal(m) => (
                kib(m.flash.length),
                match m.arena {
                    Some(arena) => format!("{} + {} arena", kib(m.ram.length), kib(arena.length)),
                    None => kib(m.ram.length),
                },
            ),
            Layout::Process { .. } => ("-".into(), "-".into()),
        };
        let transport = format!("{:?}", b.transport).to_lowercase();
        builder.push_record([
            b.name.clone(),
            runner,
            b.cpu.name.into(),
            b.target.clone(),
            flash,
            ram,
            transport,
            b.ci_label.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    builder.build().with(Style::sharp()).to_string()
}

/// The debug probes and serial ports attached now.
pub fn attached(probes: &[ProbeSummary], ports: &[String]) -> String {
    let list = |title: &str, items: Vec<String>| match items.is_empty() {
        true => format!("{title}: none"),
        false => format!("{title}:{}", items.iter().map(|i| format!("\n  {i}")).collect::<String>()),
    };
    format!(
        "{}\n{}",
        list("debug probes attached", probes.iter().map(ToString::to_string).collect()),
        list("serial ports", ports.to_vec())
    )
}

/// The figures that differ from an existing baseline, as a terminal table,
/// then the summary (which counts the new ones).
pub fn comparison_table(c: &Comparison) -> String {
    let changed: Vec<&Row> =
        c.rows.iter().filter(|r| !matches!(r.verdict, Verdict::Unchanged | Verdict::New)).collect();
    let mut out: String = runtime_changes(c).iter().map(|line| format!("{line}\n")).collect();
    if !changed.is_empty() {
        let mut builder = Builder::default();
        builder.push_record([
            "board", "model", "scenario", "metric", "baseline", "measured", "delta", "delta %", "verdict",
        ]);
        for r in changed {
            let mut row = cells(r).to_vec();
            row.push(verdict_text(r, r.verdict.name()));
            builder.push_record(row);
        }
        let mut table = builder.build();
        table.with(Style::sharp()).modify(Columns::new(4..8), Alignment::right());
        out += &format!("{table}\n");
    }
    out + &comparison_summary(c)
}

/// A baseline file as a table: one row per scenario and metric.
pub fn baseline(file: &BaselineFile) -> String {
    let m = &file.meta;
    let mut builder = Builder::default();
    builder.push_record(["scenario", "metric", "value"]);
    for (scenario, metrics) in &file.scenario {
        for (metric, v) in metrics {
            builder.push_record([scenario.clone(), metric.clone(), v.to_string()]);
        }
    }
    let mut table = builder.build();
    table.with(Style::sharp()).modify(Columns::new(2..3), Alignment::right());
    format!(
        "{}/{} ({}, arena {} bytes, model sha256 {}…, {}; approved by {})\n{table}",
        m.board,
        m.model,
        m.target,
        m.arena_bytes,
        &m.model_sha256[..m.model_sha256.len().min(12)],
        m.tflm,
        if m.approved_by.is_empty() { "nobody yet" } else { &m.approved_by }
    )
}

/// A baseline's history: one row per commit, scenario and metric.
pub fn history(rows: &[(crate::gitrepo::Version, String, String, i64)]) -> String {
    let mut builder = Builder::default();
    builder.push_record(["commit", "date (UTC)", "scenario", "metric", "value", "commit message"]);
    for (version, scenario, metric, v) in rows {
        builder.push_record([
            version.commit[..12].to_owned(),
            date(version.time),
            scenario.clone(),
            metric.clone(),
            v.to_string(),
            version.summary.clone(),
        ]);
    }
    let mut table = builder.build();
    table.with(Style::sharp()).modify(Columns::new(4..5), Alignment::right());
    table.to_string()
}
