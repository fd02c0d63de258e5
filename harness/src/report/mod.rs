//! Showing results: terminal tables, Markdown and JUnit XML here, the HTML
//! page in [`page`] (drawn with [`svg`]). Reads every folder below it;
//! nothing below reads it.

pub mod outputs;
pub mod page;
pub mod svg;

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use crate::config::board::{Board, Layout, Runner};
use crate::device::runner::probe::ProbeSummary;
use crate::image::footprint::describe;
use crate::model::analysis::{Analysis, SetAnalysis, Sharing};
use crate::model::tail::cmsis_nn::{self, KernelPath};
use crate::model::tail::current;
use crate::run::measurement::{
    ArenaPrediction, Measurement, TflmBreakdown, BUILD, PREDICTION_MARGIN_PERCENT, RECORDED,
};
use crate::run::results::Results;
use crate::tflm::registry::Operators;
use crate::tflm::tree::Generation;
use crate::verdict::baseline::BaselineFile;
use crate::verdict::compare::{Comparison, Row, Verdict};
use hilmem_protocol::metric;

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

/// `88416 (+0)`; a difference beyond the margin is flagged.
fn prediction(p: &ArenaPrediction) -> String {
    let flag = if p.within_margin() { "" } else { " OFF" };
    format!("{} ({:+}){flag}", p.predicted_bytes, p.difference())
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

/// A Markdown table of rows (for PR comments, step summaries and commit
/// messages).
pub fn diff_markdown(rows: &[Row]) -> String {
    let mut out =
        String::from("| board | model | scenario | metric | baseline | measured | delta | delta % | verdict |\n");
    out.push_str("|---|---|---|---|--:|--:|--:|--:|---|\n");
    for r in rows {
        let mut cells = cells(r);
        cells[3] = format!("`{}`", cells[3]);
        let verdict = if r.verdict == Verdict::Regressed { "**regressed**" } else { r.verdict.name() };
        out.push_str(&format!("| {} | {} |\n", cells.join(" | "), verdict_text(r, verdict)));
    }
    out
}

/// The commit message of a baseline approval: the changed figures as a
/// Markdown table, and who approved them.
pub fn approval_message(diff: &[Row], approver: &str) -> String {
    format!("Approve memory baselines\n\n{}\nApproved-by: {approver}\n", diff_markdown(diff))
}

/// The comparison and the run's failures as Markdown.
pub fn markdown(results: &Results, c: &Comparison) -> String {
    let mut out = format!("## hilmem memory report\n\n**{}**\n\n", verdict_line(results, c));
    for line in runtime_changes(c) {
        out.push_str(&format!("**{line}**\n\n"));
    }
    out.push_str(&format!("{}\n\n", comparison_summary(c)));
    let found = findings(results, c);
    if found.changed.is_empty() {
        out.push_str("Every figure equals its baseline.\n");
    } else {
        out.push_str(&diff_markdown(&found.changed));
    }
    for (title, items) in found.lists() {
        if !items.is_empty() {
            let items: Vec<String> = items.iter().map(|i| format!("- {}", code_span(i))).collect();
            out.push_str(&format!("\n### {title}\n\n{}\n", items.join("\n")));
        }
    }
    out + &breakdowns(results) + &footprints_markdown(results)
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

fn footprints_markdown(results: &Results) -> String {
    let with: Vec<&Measurement> = results.records.iter().filter(|r| r.footprint.is_some()).collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n### Footprint by component\n\nFrom the linker's map and the ELF; the parts add up to `flash_bytes` and `static_ram_bytes`.\n");
    for r in with {
        out += &format!("\n**{}/{}**\n\n| component | flash | static RAM |\n|---|--:|--:|\n", r.board, r.model);
        for (name, flash, ram) in footprint_rows(r) {
            out += &format!("| {name} | {} | {} |\n", value(flash), value(ram));
        }
    }
    out
}

/// TFLM's own account of the arena, where records carry it (a model's, and
/// each model's of a set in separate arenas): bytes used (allocations) per
/// allocation type, from the recording image.
fn breakdowns(results: &Results) -> String {
    let with: Vec<(String, &TflmBreakdown)> = results
        .records
        .iter()
        .flat_map(|r| {
            let own = r.tflm_breakdown.iter().map(|b| (format!("{}/{}", r.board, r.model), b));
            own.chain(r.resident_breakdowns.iter().map(|(model, b)| (format!("{}/{} ({model})", r.board, r.model), b)))
        })
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n### TFLM's account of the arena\n\nFrom its recording allocator, in an image of its own: bytes used (allocations).\n\n\
         | board/model | head | tail | allocator objects |",
    );
    for name in RECORDED {
        out += &format!(" {} |", name.replace('_', " "));
    }
    out += &format!("\n|---|--:|--:|--:|{}\n", "--:|".repeat(RECORDED.len()));
    for (label, b) in with {
        out += &format!("| {label} | {} | {} | {} |", b.head_bytes, b.tail_bytes, b.allocator_bytes);
        for name in RECORDED {
            out += &b.recorded.get(name).map_or(" - |".to_owned(), |a| format!(" {} ({}) |", a.used_bytes, a.count));
        }
        out.push('\n');
    }
    out
}

/// `text` as a Markdown code span, whatever backticks it holds: fenced by
/// one more backtick than its longest run (CommonMark strips the spaces).
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{text}{fence}")
    } else {
        format!("{fence} {text} {fence}")
    }
}

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

pub fn findings(results: &Results, c: &Comparison) -> Findings {
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

fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JUnit XML: one test case per board, model and scenario, failing on a
/// regression (or any change, with `strict`), a failed check or a run that
/// produced no measurement.
pub fn junit(results: &Results, c: &Comparison, strict: bool) -> String {
    let mut cases = Vec::new();
    for r in &results.records {
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|row| row.board == r.board && row.model == r.model && row.scenario == r.scenario)
            .collect();
        let bad_rows: Vec<&&Row> = rows
            .iter()
            .filter(|row| {
                row.verdict == Verdict::Regressed
                    || (strict && matches!(row.verdict, Verdict::New | Verdict::Missing | Verdict::Improved))
            })
            .collect();
        let bad_checks: Vec<String> =
            r.checks.iter().filter(|c| !c.passed).map(|c| format!("{}: {}", c.name, c.detail)).collect();
        let mut failure = String::new();
        if !bad_rows.is_empty() {
            let diff: Vec<Row> = bad_rows.iter().map(|row| (**row).clone()).collect();
            failure += &diff_markdown(&diff);
        }
        if !bad_checks.is_empty() {
            failure += &bad_checks.join("\n");
        }
        cases.push((format!("{}/{}", r.board, r.model), r.scenario.clone(), failure));
    }
    for f in &results.failed {
        cases.push((format!("{}/{}", f.board, f.model), f.scenario.clone(), f.error.clone()));
    }
    let failures = cases.iter().filter(|(_, _, f)| !f.is_empty()).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"hilmem\" tests=\"{}\" failures=\"{failures}\">\n  <testsuite name=\"hilmem\" tests=\"{}\" failures=\"{failures}\">\n",
        cases.len(),
        cases.len()
    );
    let changes = runtime_changes(c);
    if !changes.is_empty() {
        out += "    <properties>\n";
        for line in &changes {
            out += &format!("      <property name=\"tflm-changed\" value=\"{}\"/>\n", xml(line));
        }
        out += "    </properties>\n";
        out += &format!("    <system-out>{}</system-out>\n", xml(&changes.join("\n")));
    }
    for (class, name, failure) in &cases {
        if failure.is_empty() {
            out += &format!("    <testcase classname=\"{}\" name=\"{}\"/>\n", xml(class), xml(name));
        } else {
            let first = failure.lines().find(|l| !l.starts_with("| board") && !l.starts_with("|---")).unwrap_or("");
            out += &format!(
                "    <testcase classname=\"{}\" name=\"{}\">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                xml(class),
                xml(name),
                xml(first),
                xml(failure)
            );
        }
    }
    out + "  </testsuite>\n</testsuites>\n"
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

/// A model's memory plan: every planned tensor with its lifetime and greedy
/// offset, then linear, greedy and the lower bound compared.
pub fn analysis(a: &Analysis) -> String {
    let mut builder = Builder::default();
    builder.push_record([
        "tensor",
        "name",
        "type",
        "shape",
        "bytes (aligned)",
        "steps",
        "greedy offset",
        "hilmem offset",
    ]);
    for t in &a.planned {
        builder.push_record([
            t.index.to_string(),
            t.name.clone(),
            t.kind.to_owned(),
            format!("{:?}", t.shape),
            t.bytes.to_string(),
            format!("{}..={}", t.first_step, t.last_step),
            t.greedy_offset.to_string(),
            t.hilmem_offset.to_string(),
        ]);
    }
    let mut table = builder.build();
    table
        .with(Style::sharp())
        .modify(Columns::new(4..5), Alignment::right())
        .modify(Columns::new(6..8), Alignment::right());
    let live: Vec<String> = a.live_at_peak.iter().map(usize::to_string).collect();
    let mut out = String::new();
    if let Some(description) = &a.description {
        out.push_str(&format!("{}: {description}\n", a.model));
    }
    if !a.metadata.is_empty() {
        out.push_str(&format!("{}: metadata {}\n", a.model, a.metadata.join(", ")));
    }
    out += &format!(
        "{}: {} operators ({}), {} tensors, {} planned\n{table}\n\
         arena head, linear (no reuse):   {} bytes\n\
         arena head, TFLM's greedy plan:  {} bytes ({} bytes, {:.1}% less than linear)\n\
         arena head, hilmem's plan:       {} bytes ({} bytes less than greedy; `planner = \"offline\"` writes it into the model)\n\
         arena head, lower bound:         {} bytes (alive at once at step {}: tensors {})",
        a.model,
        a.operator_count,
        a.operators.join(", "),
        a.tensor_count,
        a.planned.len(),
        a.linear_bytes,
        a.greedy_bytes,
        a.linear_bytes - a.greedy_bytes,
        a.saved_percent(),
        a.hilmem_bytes,
        a.greedy_bytes - a.hilmem_bytes,
        a.lower_bound_bytes,
        a.peak_step,
        live.join(", "),
    );
    if let Some(bytes) = a.model_plan_bytes {
        out.push_str(&format!("\narena head, the model's own plan: {bytes} bytes (the offline plan in its metadata)"));
    }
    let figure = |bytes: Option<usize>| bytes.map_or("-".to_owned(), |b| format!("{b} bytes"));
    out.push_str(&format!(
        "\narena tail (persistent):         {}\n\
         arena used, predicted:           {} (head + tail: TFLM's arena_used_bytes() on 32-bit Arm, {} TFLM, {} planner)\n\
         least arena TFLM accepts:        {}",
        figure(a.tail_bytes),
        figure(a.predicted_arena_bytes),
        a.tflm,
        a.planner,
        match (a.predicted_least_arena_bytes, &a.least_arena_set_by) {
            (Some(bytes), Some(set_by)) => format!("{bytes} bytes (set by {set_by})"),
            (bytes, _) => figure(bytes),
        }
    ));
    for caveat in &a.caveats {
        out.push_str(&format!("\nnote: {caveat}"));
    }
    out
}

/// A resident set's arena both ways, model by model in load order.
pub fn set_analysis(name: &str, sharing: Sharing, s: &SetAnalysis) -> String {
    let figure = |bytes: Option<usize>| bytes.map_or("-".to_owned(), |b| b.to_string());
    let mut builder = Builder::default();
    builder.push_record(["model", "arena alone (separate)", "added to a shared arena"]);
    for (i, model) in s.models.iter().enumerate() {
        builder.push_record([
            model.clone(),
            s.separate_parts[i].to_string(),
            figure(s.shared_parts.as_ref().map(|p| p[i])),
        ]);
    }
    builder.push_record(["set".to_owned(), s.separate_bytes.to_string(), figure(s.shared_bytes)]);
    let mut table = builder.build();
    table.with(Style::sharp()).modify(Columns::new(1..3), Alignment::right());
    let layout = match sharing {
        Sharing::Separate => "an arena per model",
        Sharing::Shared => "one shared arena",
    };
    let saving = match s.shared_bytes {
        Some(shared) => format!(
            "sharing saves {} bytes ({:.1}% of separate)",
            s.separate_bytes - shared,
            (s.separate_bytes - shared) as f64 * 100.0 / s.separate_bytes as f64
        ),
        None => "only today's TFLM can share an arena".to_owned(),
    };
    format!("set `{name}` ({layout}), models in load order:\n{table}\n{saving}")
}

/// How the arena fits a board: the suggestion against the budget and RAM.
pub fn fit(f: &crate::config::fit::Fit) -> String {
    let verdict = |room: usize| {
        if f.suggested_arena_bytes <= room {
            format!("fits, {} bytes spare", room - f.suggested_arena_bytes)
        } else {
            format!("DOES NOT FIT, {} bytes short", f.suggested_arena_bytes - room)
        }
    };
    format!(
        "on {}: suggested arena {} bytes (least {} + {}% safety margin, in 16-byte steps)\n  \
         the budget's tensor arena, {} bytes: {}\n  \
         region {} ({} bytes{}): {}",
        f.board,
        f.suggested_arena_bytes,
        f.predicted_least_arena_bytes,
        f.safety_margin_percent,
        f.budget_arena_bytes,
        verdict(f.budget_arena_bytes),
        f.region,
        f.region_bytes,
        if f.region == "RAM" { " after the stack" } else { "" },
        verdict(f.region_bytes),
    )
}

/// Which operators the analyzer predicts the arena of, per TFLM generation,
/// as a Markdown table with its notes: every operator the bundled 2020
/// TFLM's `AllOpsResolver` registers (`bundled`) or today's
/// `MicroMutableOpResolver` does (`current`, read from a checkout), the
/// latter with reference kernels and with CMSIS-NN's; and the 2023
/// generation's, whose resolver registers today's operators but those of
/// `current::ABSENT_2023`.
pub fn operator_coverage(bundled: &Operators, current: &Operators) -> String {
    let mut notes: Vec<String> = Vec::new();
    let mut note = |why: &str| -> String {
        let n = notes.iter().position(|w| w == why).unwrap_or_else(|| {
            notes.push(why.to_owned());
            notes.len() - 1
        });
        format!("no ({})", n + 1)
    };
    let mut rows: Vec<(String, i32)> =
        bundled.by_code.iter().chain(&current.by_code).map(|(&code, op)| (op.name.clone(), code)).collect();
    rows.sort();
    rows.dedup();
    let mut text = String::from(
        "| operator | 2020 (bundled) | 2023, reference kernels | current, reference kernels | current, CMSIS-NN | current, least arena |\n\
         |---|---|---|---|---|---|\n",
    );
    let paths = [cmsis_nn::Path::Scalar, cmsis_nn::Path::Dsp, cmsis_nn::Path::Mve];
    let not_registered = || "not registered".to_owned();
    for (name, code) in rows {
        let old = if bundled.by_code.contains_key(&code) { "yes" } else { "not registered" };
        let mut reference = |tflm: Generation| {
            let why = current::not_predicted_operators(tflm).iter().find(|(n, _)| *n == name).map(|(_, why)| *why);
            match (current::knows(code, KernelPath::Reference, tflm), why) {
                (true, _) => "yes".to_owned(),
                (false, Some(why)) => note(why),
                (false, None) => note("not in the prediction's lists"),
            }
        };
        let registered = current.by_code.contains_key(&code);
        let of_2023 = match registered && !current::ABSENT_2023.contains(&code) {
            true => reference(Generation::Tflm2023),
            false => not_registered(),
        };
        let (today, cmsis, least) = if !registered {
            (not_registered(), not_registered(), not_registered())
        } else {
            let today = reference(Generation::Current);
            let cmsis = if !cmsis_nn::SPECIALIZED.contains(&code) {
                today.clone()
            } else if paths.iter().all(|&p| current::knows(code, KernelPath::CmsisNn(p), Generation::Current)) {
                "yes (CMSIS-NN's kernel)".to_owned()
            } else {
                note("what CMSIS-NN's kernel allocates is not in the table yet")
            };
            let least = if today != "yes" {
                today.clone()
            } else if current::prepare_read(code, KernelPath::Reference, Generation::Current) {
                "yes".to_owned()
            } else {
                note("the temporaries its Prepare takes are not in the table yet")
            };
            (today, cmsis, least)
        };
        text += &format!("| {name} | {old} | {of_2023} | {today} | {cmsis} | {least} |\n");
    }
    text.push('\n');
    for (i, why) in notes.iter().enumerate() {
        text += &format!("({}) {why}.\n", i + 1);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::measurement::Check;
    use crate::run::results::Failed;

    /// A message with backticks of its own stays one code span.
    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(code_span("plain"), "`plain`");
        assert_eq!(code_span("board `m7`: x"), "`` board `m7`: x ``");
        assert_eq!(code_span("a `` b"), "``` a `` b ```");
    }

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
