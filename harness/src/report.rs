//! Showing results: the terminal table and JSON.

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use crate::hil::Results;
use crate::measurement::metric;

/// Columns of the terminal table, after the model name.
const COLUMNS: [&str; 7] = [
    metric::MODEL_BYTES,
    metric::FLASH_BYTES,
    metric::STATIC_RAM_BYTES,
    metric::ARENA_USED_BYTES,
    metric::ARENA_TOUCHED_BYTES,
    metric::HEAP_PEAK_BYTES,
    metric::STACK_PEAK_BYTES,
];

/// The results as a table, one row per record, then the failed runs.
pub fn table(results: &Results) -> String {
    let mut builder = Builder::default();
    let mut header = vec!["board", "model", "scenario"];
    header.extend(COLUMNS);
    header.push("output check");
    builder.push_record(header);
    for r in &results.records {
        let mut row = vec![r.board.clone(), r.model.clone(), r.scenario.clone()];
        row.extend(COLUMNS.iter().map(|name| r.metrics.get(*name).map_or("-".into(), i64::to_string)));
        let passed = r.checks.iter().filter(|c| c.passed).count();
        row.push(match r.checks.len() {
            0 => "none".into(),
            n if passed == n => format!("pass {passed}/{n}"),
            n => {
                let failed: Vec<_> =
                    r.checks.iter().filter(|c| !c.passed).map(|c| format!("{}: {}", c.name, c.detail)).collect();
                format!("FAIL {passed}/{n}: {}", failed.join("; "))
            }
        });
        builder.push_record(row);
    }
    let mut table = builder.build();
    table.with(Style::sharp()).modify(Columns::new(3..3 + COLUMNS.len()), Alignment::right());
    let mut out = if results.records.is_empty() { String::new() } else { table.to_string() };
    for f in &results.failed {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("FAILED {}/{} {}:\n  {}", f.board, f.model, f.scenario, f.error.replace('\n', "\n  ")));
    }
    out
}

/// The results as pretty JSON (the layout of `results.json`).
pub fn json(results: &Results) -> String {
    serde_json::to_string_pretty(results).expect("results serialize")
}
