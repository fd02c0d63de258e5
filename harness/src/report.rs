//! Showing results: the terminal table and JSON.

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use crate::board::{Board, Layout, Runner};
use crate::hil::Results;
use crate::measurement::metric;
use crate::measurement::Measurement;
use crate::runner::probe::ProbeSummary;

/// Metric columns of the terminal table, shown where a board reports them.
const COLUMNS: [&str; 8] = [
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
        let mut header = vec!["model", "scenario"];
        header.extend(&columns);
        header.push("output check");
        builder.push_record(header);
        for r in records {
            let mut row = vec![r.model.clone(), r.scenario.clone()];
            row.extend(columns.iter().map(|name| r.metrics.get(*name).map_or("-".into(), i64::to_string)));
            row.push(check_summary(r));
            builder.push_record(row);
        }
        let mut table = builder.build();
        table.with(Style::sharp()).modify(Columns::new(2..2 + columns.len()), Alignment::right());
        out.push_str(&format!("{board}\n{table}\n"));
        for r in results.records.iter().filter(|r| &r.board == board) {
            for (name, text) in &r.notes {
                out.push_str(&format!("  {} {}: {name}: {text}\n", r.model, r.scenario));
            }
        }
    }
    for f in &results.failed {
        out.push_str(&format!("FAILED {}/{} {}:\n  {}\n", f.board, f.model, f.scenario, f.error.replace('\n', "\n  ")));
    }
    out.trim_end().to_owned()
}

fn check_summary(r: &Measurement) -> String {
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

/// The board profiles, then the debug probes and serial ports attached now.
pub fn boards(boards: &[Board], probes: &[ProbeSummary], ports: &[String]) -> String {
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
    let mut out = builder.build().with(Style::sharp()).to_string();
    out.push_str(
        "

debug probes attached:",
    );
    if probes.is_empty() {
        out.push_str(" none");
    }
    for p in probes {
        out.push_str(&format!(
            "
  {p}"
        ));
    }
    out.push_str(
        "
serial ports:",
    );
    if ports.is_empty() {
        out.push_str(" none");
    }
    for p in ports {
        out.push_str(&format!(
            "
  {p}"
        ));
    }
    out
}

/// The results as pretty JSON (the layout of `results.json`).
pub fn json(results: &Results) -> String {
    serde_json::to_string_pretty(results).expect("results serialize")
}
