//! The HTML report: one self-contained page (inline SVG, CSS and a few
//! lines of script; nothing fetched) that an engineer opens from a CI
//! artifact. Per model the arena layout TFLM plans; per board the memory
//! stack-up of every run against the board's RAM and budget; per metric its
//! trend through the git history of the baseline files, ending with this run;
//! and the comparison with its verdicts (what the Markdown report lists).
//! The page names no path of the machine that made it. What it shows is
//! gathered by [`gather::gather`]; this module draws it.

pub mod gather;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::config::board::{Board, Layout};
use crate::model::analysis::Analysis;
use crate::report::svg::{bytes, escape, Chart, Labels};
use crate::report::{
    cells, comparison_summary, findings, footprint_rows, moved_text, runtime_changes, scenario_label, verdict_line,
};
use crate::run::measurement::{Measurement, BUILD};
use crate::run::results::Results;
use crate::verdict::compare::{Comparison, Verdict};
use hilmem_protocol::metric;

/// One metric of one board and model through the baseline file's history:
/// per version (commit, time), the value in each scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub board: String,
    pub model: String,
    pub metric: String,
    pub versions: Vec<(String, i64)>,
    /// Scenario to one value per version (None where it had none).
    pub values: BTreeMap<String, Vec<Option<i64>>>,
}

/// Everything the page shows.
pub struct Inputs {
    pub results: Results,
    pub comparison: Comparison,
    /// The analyses of the run's models, in run order.
    pub analyses: Vec<Analysis>,
    /// The run's boards.
    pub boards: Vec<Board>,
    pub trends: Vec<Trend>,
    /// What could not be gathered (a model that did not analyse, a
    /// baseline file without history), shown on the page.
    pub notes: Vec<String>,
    /// Where the book is, for the links beside the figures that need
    /// explaining (none: no links).
    pub book: Option<String>,
}

/// The sections of the book the page links to where a figure needs
/// explaining; `cargo xtask docs` checks that the book has each.
#[derive(Debug, Clone, Copy)]
pub enum Chapter {
    /// What the verdicts mean, tolerances and approval.
    Verdicts,
    /// What each figure of a run is and where it comes from.
    Figures,
    /// The build record and the footprint by component.
    BuildRecord,
    /// The plans the layouts draw.
    Planners,
    /// What the page shows.
    Page,
}

impl Chapter {
    pub const ALL: [Chapter; 5] =
        [Chapter::Verdicts, Chapter::Figures, Chapter::BuildRecord, Chapter::Planners, Chapter::Page];

    /// The chapter's file in book/src (without `.md`) and the heading's
    /// anchor, as mdBook makes it (empty: the chapter's top).
    pub fn section(self) -> (&'static str, &'static str) {
        match self {
            Chapter::Verdicts => ("baselines", ""),
            Chapter::Figures => ("scenarios", "the-figures"),
            Chapter::BuildRecord => ("scenarios", "the-build-record-and-the-footprint"),
            Chapter::Planners => ("analyzer", "planners-greedy-linear-and-a-plan-hilmem-writes"),
            Chapter::Page => ("reports", ""),
        }
    }

    /// `text` (HTML) linked to the section in the book at `book`; `text`
    /// alone without a book.
    fn link(self, book: Option<&str>, text: &str) -> String {
        let Some(book) = book else { return text.to_owned() };
        let (file, anchor) = self.section();
        let anchor = if anchor.is_empty() { String::new() } else { format!("#{anchor}") };
        format!("<a class=\"book\" href=\"{}{file}.html{anchor}\">{text}</a>", escape(book))
    }
}

const STYLE: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:2px 6px}td.n{text-align:right}
tr.regressed td{background:#fde2e2}tr.regressed td.v{color:#b00;font-weight:bold}
tr.improved td.v{color:#070}.summary{font-weight:bold}
.verdict{font-size:18px;font-weight:bold;padding:6px 10px;border-radius:4px}.verdict.passed{background:#e3f4e3}
.verdict.regressed,.verdict.failed{background:#fde2e2;color:#900}
figure{display:inline-block;margin:8px 16px 8px 0;vertical-align:top}figcaption{font-size:12px;color:#555;max-width:720px}.plan{display:inline-block;vertical-align:top;margin-right:8px}.plan p{margin:2px 0;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#333}svg text.tick{fill:#666;font-size:10px}
rect.frame{fill:none;stroke:#bbb}rect.tensor{stroke:#fff;stroke-width:.5}rect.tensor:hover{stroke:#000;stroke-width:1.5}
rect.peak{fill:#f5c542;opacity:.25}line.head{stroke:#333;stroke-dasharray:4 3}polyline.alive{fill:none;stroke:#c0392b;stroke-width:1.5}
rect.row{fill:transparent}
line.ram{stroke:#000;stroke-width:1.5}line.rss{stroke:#c0392b;stroke-width:1.5}
polyline.trend{fill:none;stroke-width:1.5}circle.current{stroke:#000;stroke-width:1.5}circle.regressed{fill:#d00 !important;r:5}
text.regressed{fill:#d00;font-weight:bold}.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
";

/// Reports when the page was ready, and filters the comparison table.
const SCRIPT: &str = "
document.addEventListener('DOMContentLoaded', () => {
  const filter = document.getElementById('filter');
  const rows = Array.from(document.querySelectorAll('#comparison tbody tr'));
  filter.addEventListener('input', () => {
    const words = filter.value.toLowerCase().split(/\\s+/).filter(w => w);
    for (const row of rows) {
      const text = row.textContent.toLowerCase();
      row.hidden = !words.every(w => text.includes(w));
    }
  });
  document.body.dataset.readyMs = Math.round(performance.now());
});
";

/// Colours of the scenarios' lines, and of the stack-up's segments.
const SCENARIO_COLOURS: [(&str, &str); 6] = [
    ("single-frame", "#1f77b4"),
    ("stream", "#2ca02c"),
    ("log-heavy", "#9467bd"),
    ("concurrent-ota", "#ff7f0e"),
    ("dma-stream", "#d62728"),
    ("dma-stream-slow", "#8c564b"),
];

/// The stack-up's segments: name, colour, and what each takes from a record.
const SEGMENTS: [(&str, &str); 12] = [
    ("other static RAM", "#7f8c8d"),
    ("input frame", "#1f77b4"),
    ("pre-processing", "#17becf"),
    ("post-processing", "#2ca02c"),
    ("log ring", "#9467bd"),
    ("OTA staging", "#ff7f0e"),
    ("pool unused", "#d6e4f0"),
    ("arena used", "#e377c2"),
    ("arena unused", "#f7d6ec"),
    ("stack peak", "#8c564b"),
    ("interrupts", "#c49c94"),
    ("stack unused", "#e8d8d0"),
];

pub fn render(inputs: &Inputs) -> String {
    let r = &inputs.results;
    let book = inputs.book.as_deref();
    let verdict = verdict_line(r, &inputs.comparison);
    let mut html = String::new();
    let commit = r.commit.as_deref().map_or("no commit".to_owned(), |c| c[..c.len().min(12)].to_owned());
    let _ = write!(
        html,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>hilmem memory report ({commit})</title>\n<style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head><body>\n\
         <h1>hilmem memory report</h1>\n<p class=\"verdict {}\">{}</p>\n<p>commit {commit}; boards {}; {} records, {} failed runs.</p>\n\
         <p><a href=\"#comparison\">comparison</a> · <a href=\"#layouts\">arena layouts</a> · <a href=\"#stackups\">memory stack-ups</a> · <a href=\"#footprint\">footprint</a> · <a href=\"#trends\">trends</a>{}</p>\n",
        verdict.split(':').next().unwrap_or_default().to_lowercase(),
        escape(&verdict),
        escape(&r.boards.join(", ")),
        r.records.len(),
        r.failed.len(),
        if inputs.book.is_some() { format!(" · {}", Chapter::Page.link(book, "about this page")) } else { String::new() }
    );
    for note in &inputs.notes {
        let _ = writeln!(html, "<p class=\"note\">note: {}</p>", escape(note));
    }
    comparison(&mut html, inputs);
    html += "<h2 id=\"layouts\">Arena layouts</h2>\n<p>Each rectangle is a tensor TFLM plans in the arena head: from the operator step that writes it to the last that reads it, at its offset in the plan: TFLM's greedy plan, hilmem's (which <code>planner = \"offline\"</code> writes into the model), and TFLM's linear one. The red line is the bytes alive at each step (its highest point is the lower bound no plan can beat); the dashed line is the head the plan needs; the shaded step is the peak.</p>\n";
    let _ = writeln!(html, "<p>How the plans are made: {}.</p>", Chapter::Planners.link(book, "the planners"));
    for a in &inputs.analyses {
        layout(&mut html, a);
    }
    html += "<h2 id=\"stackups\">Memory stack-ups</h2>\n";
    let _ = writeln!(html, "<p>What each band is: {}.</p>", Chapter::Figures.link(book, "the figures"));
    for board in &inputs.boards {
        stackup(&mut html, board, &r.records);
    }
    footprints(&mut html, &r.records, book);
    html += "<h2 id=\"trends\">Trends</h2>\n<p>Each figure that moved, through the commits that changed its baseline file, oldest first; the last point (outlined) is this run, red when it regressed. The figures that did not move are folded per board; <code>cargo xtask baseline history</code> shows the trend of any.</p>\n";
    trends(&mut html, inputs);
    html += "</body></html>\n";
    html
}

/// Each build record's flash and static RAM by component.
fn footprints(html: &mut String, records: &[Measurement], book: Option<&str>) {
    let _ = writeln!(
        html,
        "<h2 id=\"footprint\">Footprint by component</h2>\n<p>From the {} (nothing ran for them): every input section the linker placed, by the object it came from and the symbols it defines; the parts add up to <code>flash_bytes</code> and <code>static_ram_bytes</code>.</p>",
        Chapter::BuildRecord.link(book, "build records")
    );
    for r in records.iter().filter(|r| r.footprint.is_some()) {
        let _ = write!(
            html,
            "<h3>{} / {} ({})</h3>\n<table class=\"footprint\"><thead><tr><th>component</th><th>flash</th><th>static RAM</th></tr></thead><tbody>\n",
            escape(&r.board),
            escape(&r.model),
            escape(&scenario_label(&r.scenario))
        );
        for (name, flash, ram) in footprint_rows(r) {
            let bytes = |v: Option<i64>| v.map_or("-".into(), |v| v.to_string());
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                escape(&name),
                bytes(flash),
                bytes(ram)
            );
        }
        html.push_str("</tbody></table>\n");
    }
}

fn comparison(html: &mut String, inputs: &Inputs) {
    let c = &inputs.comparison;
    let found = findings::of(&inputs.results, c);
    html.push_str("<h2 id=\"comparison\">Comparison</h2>\n");
    for line in runtime_changes(c) {
        let _ = writeln!(html, "<p class=\"runtime\"><strong>{}</strong></p>", escape(&line));
    }
    let _ = writeln!(
        html,
        "<p class=\"summary\">{} ({}).</p>",
        escape(&comparison_summary(c)),
        Chapter::Verdicts.link(inputs.book.as_deref(), "the verdicts, tolerances and approval")
    );
    if found.changed.is_empty() {
        html.push_str("<p>Every figure equals its baseline.</p>\n");
    } else {
        html.push_str("<p><input id=\"filter\" placeholder=\"filter rows: board, model, metric...\" size=\"40\"></p>\n<table id=\"comparison-table\"><thead><tr><th>board</th><th>model</th><th>scenario</th><th>metric</th><th>baseline</th><th>measured</th><th>delta</th><th>delta %</th><th>verdict</th></tr></thead><tbody>\n");
        for row in &found.changed {
            let class = match row.verdict {
                Verdict::Regressed => "regressed",
                Verdict::Improved => "improved",
                _ => "",
            };
            let cells = cells(row);
            let explained = if row.scenario == BUILD { Chapter::BuildRecord } else { Chapter::Figures };
            let _ = writeln!(
                html,
                "<tr class=\"{class}\">{}<td>{}</td>{}<td class=\"v\">{}</td></tr>",
                cells[..3].iter().map(|c| format!("<td>{}</td>", escape(c))).collect::<String>(),
                explained.link(inputs.book.as_deref(), &escape(&cells[3])),
                cells[4..].iter().map(|c| format!("<td class=\"n\">{}</td>", escape(c))).collect::<String>(),
                escape(&match (moved_text(row), row.verdict == Verdict::Regressed) {
                    (Some(moved), true) => format!("REGRESSED: {moved}"),
                    (Some(moved), false) => format!("{}: {moved}", row.verdict.name()),
                    (None, true) => "REGRESSED".into(),
                    (None, false) => row.verdict.name().into(),
                })
            );
        }
        html.push_str("</tbody></table>\n");
    }
    for (title, items) in found.lists() {
        if !items.is_empty() {
            let _ = write!(html, "<h3>{}</h3>\n<ul>\n", escape(&title));
            for item in items {
                let _ = writeln!(html, "<li>{}</li>", escape(item));
            }
            html.push_str("</ul>\n");
        }
    }
    // The filter's input exists even when there is no table.
    if found.changed.is_empty() {
        html.push_str("<input id=\"filter\" hidden>\n");
    }
}

/// A model's plans side by side: TFLM's greedy plan, hilmem's, and TFLM's
/// linear one.
fn layout(html: &mut String, a: &Analysis) {
    let linear: Vec<usize> = a
        .planned
        .iter()
        .scan(0, |end, t| {
            *end += t.bytes;
            Some(*end - t.bytes)
        })
        .collect();
    let greedy: Vec<usize> = a.planned.iter().map(|t| t.greedy_offset).collect();
    let hilmem: Vec<usize> = a.planned.iter().map(|t| t.hilmem_offset).collect();
    // Greedy and hilmem on one scale, so the saving shows.
    let top = (a.greedy_bytes.max(a.lower_bound_bytes).max(16) as f64) * 1.08;
    let plans = [
        ("greedy", "TFLM's greedy plan", a.greedy_bytes, &greedy, top),
        ("hilmem", "hilmem's plan", a.hilmem_bytes, &hilmem, top),
        ("linear", "TFLM's linear plan", a.linear_bytes, &linear, (a.linear_bytes.max(16) as f64) * 1.08),
    ];
    let _ = writeln!(
        html,
        "<figure class=\"layout\" data-model=\"{}\" data-planned=\"{}\">",
        escape(&a.model),
        a.planned.len()
    );
    for (name, title, head, offsets, top) in plans {
        let _ = writeln!(
            html,
            "<div class=\"plan\" data-plan=\"{name}\"><p><b>{title}</b>: head {head} bytes</p>{}</div>",
            plan_chart(a, name, head, offsets, top)
        );
    }
    let _ = writeln!(
        html,
        "<figcaption><b>{m}</b>: {n} planned tensors over {} steps; head: linear {} bytes, greedy {} bytes, hilmem {} bytes, lower bound {} bytes (step {}); {}</figcaption></figure>",
        a.operator_count,
        a.linear_bytes,
        a.greedy_bytes,
        a.hilmem_bytes,
        a.lower_bound_bytes,
        a.peak_step,
        predicted(a),
        m = escape(&a.model),
        n = a.planned.len(),
    );
}

/// One plan of `a`: each tensor at `offsets` over its steps, the bytes alive
/// at each step, and the plan's head.
fn plan_chart(a: &Analysis, plan: &str, head: usize, offsets: &[usize], top: f64) -> String {
    let steps = a.operator_count.max(1) as f64;
    let mut chart = Chart::new(460.0, 260.0, (0.0, steps), (0.0, top));
    chart.rect((f64::from(a.peak_step), f64::from(a.peak_step) + 1.0), (0.0, top), "peak", "", "");
    for (t, &offset) in a.planned.iter().zip(offsets) {
        let hue = (t.index * 47) % 360;
        chart.rect(
            (f64::from(t.first_step), f64::from(t.last_step) + 1.0),
            (offset as f64, (offset + t.bytes) as f64),
            "tensor",
            &format!("fill:hsl({hue},55%,62%)"),
            &format!(
                "tensor {} `{}`: {} {:?}, {} bytes at offset {offset}, steps {}..={}",
                t.index, t.name, t.kind, t.shape, t.bytes, t.first_step, t.last_step
            ),
        );
    }
    let mut alive = Vec::new();
    for step in 0..a.operator_count as i32 {
        let bytes: usize =
            a.planned.iter().filter(|t| t.first_step <= step && step <= t.last_step).map(|t| t.bytes).sum();
        alive.push((f64::from(step), bytes as f64));
        alive.push((f64::from(step) + 1.0, bytes as f64));
    }
    chart.polyline(&alive, "alive", "");
    chart.hline(head as f64, "head", &format!("{plan} head {}", bytes(head as f64)));
    chart.text((f64::from(a.peak_step) + 0.5, top), "middle", "tick", &format!("peak step {}", a.peak_step));
    chart.axes("operator step", "arena offset", 4, Labels::Count, Labels::Bytes);
    chart.finish(&format!("{plan} arena layout of {}", a.model))
}

/// The caption's arena sentence: what TFLM will use and accept, as far as
/// the analysis predicts it for its TFLM.
fn predicted(a: &Analysis) -> String {
    let mut sentence = match (a.tail_bytes, a.predicted_arena_bytes) {
        (Some(tail), Some(used)) => format!("tail {tail} bytes; the {} TFLM uses {used} bytes", a.tflm),
        _ => format!("no tail predicted for the {} TFLM", a.tflm),
    };
    if let Some(least) = a.predicted_least_arena_bytes {
        sentence += &format!(", accepts no less than {least}");
    }
    sentence + "."
}

/// The segments of one record, in the order they stack: the static RAM
/// outside the pool, the pool's categories, the arena, the thread's stack
/// peak, what the interrupts add to it (the stack bound's rest: an
/// exception frame and the handlers' stack at their deepest nesting), and
/// the stack left.
fn segments(r: &Measurement, stack_budget: u64) -> [f64; 12] {
    let m = |name: &str| r.metrics.get(name).copied().unwrap_or(0).max(0) as f64;
    let pool = m(metric::POOL_CAPACITY_BYTES);
    let categories = [
        m(metric::POOL_INPUT_FRAME_PEAK_BYTES),
        m(metric::POOL_PREPROCESS_PEAK_BYTES),
        m(metric::POOL_POSTPROCESS_PEAK_BYTES),
        m(metric::POOL_LOG_PEAK_BYTES),
        m(metric::OTA_STAGING_PEAK_BYTES),
    ];
    let stack = m(metric::STACK_PEAK_BYTES);
    let bound = m(metric::STACK_BOUND_BYTES).max(stack);
    [
        m(metric::STATIC_RAM_BYTES) - pool,
        categories[0],
        categories[1],
        categories[2],
        categories[3],
        categories[4],
        (pool - categories.iter().sum::<f64>()).max(0.0),
        m(metric::ARENA_USED_BYTES),
        m(metric::ARENA_CAPACITY_BYTES) - m(metric::ARENA_USED_BYTES),
        stack,
        bound - stack,
        (stack_budget as f64 - bound).max(0.0),
    ]
}

fn stackup(html: &mut String, board: &Board, records: &[Measurement]) {
    // Only what ran: a build record has no runtime figures to stack.
    let records: Vec<&Measurement> = records.iter().filter(|r| r.board == board.name && r.scenario != BUILD).collect();
    if records.is_empty() {
        return;
    }
    let (ram, stack_budget) = match &board.layout {
        Layout::BareMetal(m) => (Some(m.ram.length + m.arena.map_or(0, |a| a.length)), m.stack_bytes),
        Layout::Process { stack_bytes } => (None, *stack_bytes),
    };
    let budget = &board.budget;
    // After what a run commits come the budget's safety margin and the
    // system's reserve; what is left of RAM after them is the headroom.
    let (margin, reserve) = match ram {
        Some(_) => {
            ((budget.with_margin_bytes() - budget.planned_bytes()) as f64, f64::from(budget.system_reserved_bytes))
        }
        None => (0.0, 0.0),
    };
    let totals: Vec<f64> = records.iter().map(|r| segments(r, stack_budget).iter().sum()).collect();
    let rss = |r: &Measurement| r.metrics.get(metric::RSS_PEAK_BYTES).map(|&v| v as f64);
    let widest =
        totals.iter().map(|t| t + margin + reserve).chain(records.iter().filter_map(|r| rss(r))).fold(0.0, f64::max);
    // A RAM far beyond what is used would squeeze every bar to a sliver:
    // then the axis ends short of it and the RAM is named at the edge.
    let ram_on_axis = ram.filter(|&ram| ram as f64 <= 2.0 * widest);
    let right = ram_on_axis.map_or(widest * 1.6, |ram| ram as f64 * 1.02);
    let n = records.len() as f64;
    let mut chart = Chart::new(900.0, 40.0 + 22.0 * n, (0.0, right), (0.0, n));
    for (i, r) in records.iter().enumerate() {
        let (y0, y1) = (n - i as f64 - 0.85, n - i as f64 - 0.15);
        let total = totals[i];
        let left = ram.map(|ram| ram as f64 - total - margin - reserve);
        let summary = match left {
            Some(left) => format!(
                "{} {}: {total} bytes committed; after the margin and the reserve, {left} bytes of RAM left",
                r.model, r.scenario
            ),
            None => format!("{} {}: {total} bytes committed", r.model, r.scenario),
        };
        chart.rect((0.0, right), (y0 - 0.1, y1 + 0.1), "row", "", &summary);
        let mut x = 0.0;
        let parts = segments(r, stack_budget)
            .into_iter()
            .zip(SEGMENTS)
            .chain([(margin, ("safety margin", "#f5c542")), (reserve, ("system reserve", "#999999"))]);
        for (value, (name, colour)) in parts {
            if value > 0.0 {
                chart.rect(
                    (x, x + value),
                    (y0, y1),
                    "segment",
                    &format!("fill:{colour}"),
                    &format!("{name}: {value} bytes"),
                );
            }
            x += value;
        }
        if let Some(rss) = rss(r) {
            chart.rect((rss, rss), (y0 - 0.1, y1 + 0.1), "rss", "fill:#c0392b", &format!("peak RSS: {rss} bytes"));
        }
        let label = match left {
            Some(left) => format!("{} {} · {} left", r.model, r.scenario, bytes(left)),
            None => format!("{} {}", r.model, r.scenario),
        };
        let class = if left.is_some_and(|l| l < 0.0) { "regressed" } else { "" };
        chart.text((x, (y0 + y1) / 2.0 - 0.12), "start", class, &format!("  {label}"));
    }
    match (ram, ram_on_axis) {
        (_, Some(ram)) => chart.vline(ram as f64, "ram", &format!("RAM {}", bytes(ram as f64))),
        (Some(ram), None) => {
            chart.text((right, n), "end", "tick", &format!("RAM {} further right →", bytes(ram as f64)))
        }
        (None, None) => {}
    }
    chart.axes("bytes", "", 4, Labels::Bytes, Labels::None);
    let legend: String = SEGMENTS
        .iter()
        .map(|(name, colour)| format!("<span><i style=\"background:{colour}\"></i>{name}</span>"))
        .collect();
    let _ = writeln!(
        html,
        "<h3>{b}</h3>\n<figure class=\"stackup\" data-board=\"{b}\" data-rows=\"{}\">{}\n<figcaption class=\"legend\">{legend}<span><i style=\"background:#f5c542\"></i>safety margin</span><span><i style=\"background:#999\"></i>system reserve</span></figcaption></figure>",
        records.len(),
        chart.finish(&format!("memory stack-up on {}", board.name)),
        b = escape(&board.name),
    );
}

fn trends(html: &mut String, inputs: &Inputs) {
    let regressed = |t: &Trend, scenario: &str| {
        inputs.comparison.rows.iter().any(|r| {
            r.board == t.board
                && r.model == t.model
                && r.scenario == scenario
                && r.metric == t.metric
                && r.verdict == Verdict::Regressed
        })
    };
    let moved = |t: &Trend| {
        inputs.comparison.rows.iter().any(|r| {
            r.board == t.board && r.model == t.model && r.metric == t.metric && r.verdict != Verdict::Unchanged
        })
    };
    let shown: Vec<&Trend> = inputs.trends.iter().filter(|t| moved(t)).collect();
    if shown.is_empty() {
        html.push_str("<p>No figure moved.</p>\n");
    }
    let mut last: Option<(&str, &str)> = None;
    for t in shown {
        if last != Some((&t.board, &t.model)) {
            let _ = writeln!(
                html,
                "<h3>{} / {}</h3>\n<p class=\"legend\">{}</p>",
                escape(&t.board),
                escape(&t.model),
                SCENARIO_COLOURS
                    .iter()
                    .map(|(s, c)| format!("<span><i style=\"background:{c}\"></i>{s}</span>"))
                    .collect::<String>()
            );
            last = Some((&t.board, &t.model));
        }
        let current = |scenario: &str| {
            inputs
                .results
                .records
                .iter()
                .find(|r| r.board == t.board && r.model == t.model && r.scenario == scenario)
                .and_then(|r| r.metrics.get(&t.metric).copied())
        };
        let points = t.versions.len() as f64;
        let values: Vec<i64> =
            t.values.iter().flat_map(|(s, v)| v.iter().flatten().copied().chain(current(s))).collect();
        if values.is_empty() {
            continue;
        }
        let (lo, hi) = values.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let pad = ((hi - lo) as f64 * 0.1).max(1.0);
        let floor = if lo >= 0 { (lo as f64 - pad).max(0.0) } else { lo as f64 - pad };
        let mut chart = Chart::new(260.0, 130.0, (0.0, points), (floor, hi as f64 + pad));
        let mut marked = false;
        for (scenario, series) in &t.values {
            let colour = SCENARIO_COLOURS.iter().find(|(s, _)| s == scenario).map_or("#555", |(_, c)| c);
            let mut line: Vec<(f64, f64)> =
                series.iter().enumerate().filter_map(|(i, v)| Some((i as f64, (*v)? as f64))).collect();
            for (i, v) in series.iter().enumerate() {
                if let Some(v) = v {
                    let (commit, time) = &t.versions[i];
                    let title = format!(
                        "{scenario}: {v} at {} ({})",
                        &commit[..12.min(commit.len())],
                        crate::report::date(*time)
                    );
                    chart.dot((i as f64, *v as f64), "point", &format!("fill:{colour}"), &title);
                }
            }
            if let Some(now) = current(scenario) {
                line.push((points, now as f64));
                let bad = regressed(t, scenario);
                marked |= bad;
                let class = if bad { "current regressed" } else { "current" };
                chart.dot(
                    (points, now as f64),
                    class,
                    &format!("fill:{colour}"),
                    &format!("{scenario}: {now} in this run"),
                );
            }
            chart.polyline(&line, "trend", &format!("stroke:{colour}"));
        }
        chart.axes("", "", 2, Labels::None, Labels::Count);
        if marked {
            chart.text((points, hi as f64 + pad), "end", "regressed", "REGRESSED");
        }
        let _ = writeln!(
            html,
            "<figure class=\"trend{}\" data-board=\"{}\" data-model=\"{}\" data-metric=\"{m}\">{}<figcaption>{}</figcaption></figure>",
            if marked { " regressed" } else { "" },
            escape(&t.board),
            escape(&t.model),
            chart.finish(&format!("{} of {} on {}", t.metric, t.model, t.board)),
            Chapter::Figures.link(inputs.book.as_deref(), &escape(&t.metric)),
            m = escape(&t.metric),
        );
    }
    unchanged(html, &inputs.comparison);
}

/// The figures that did not move in any scenario, folded per board: per
/// model, how many, and their names.
fn unchanged(html: &mut String, c: &Comparison) {
    // Per board, model and metric: whether every scenario's figure is unchanged.
    let mut still: BTreeMap<&str, BTreeMap<&str, BTreeMap<&str, bool>>> = BTreeMap::new();
    for r in &c.rows {
        let all = still.entry(&r.board).or_default().entry(&r.model).or_default().entry(&r.metric).or_insert(true);
        *all &= r.verdict == Verdict::Unchanged;
    }
    let by_board = still.into_iter().map(|(board, models)| {
        let models: BTreeMap<&str, Vec<&str>> = models
            .into_iter()
            .map(|(model, metrics)| (model, metrics.into_iter().filter(|(_, all)| *all).map(|(m, _)| m).collect()))
            .filter(|(_, metrics): &(&str, Vec<&str>)| !metrics.is_empty())
            .collect();
        (board, models)
    });
    for (board, models) in by_board.filter(|(_, models)| !models.is_empty()) {
        let count: usize = models.values().map(Vec::len).sum();
        let _ = writeln!(
            html,
            "<details class=\"unchanged\"><summary>{}: {count} figures unchanged</summary><ul>",
            escape(board)
        );
        for (model, metrics) in models {
            let _ = writeln!(html, "<li>{}: {}</li>", escape(model), escape(&metrics.join(", ")));
        }
        html.push_str("</ul></details>\n");
    }
}

/// Gathers, renders and writes the page as `report.html` in `dir`
/// (atomically); returns its path.
pub fn write(
    ws: &crate::Workspace,
    results: Results,
    comparison: Comparison,
    boards: &[Board],
    baselines_dir: &Path,
    dir: &Path,
) -> std::io::Result<std::path::PathBuf> {
    let html = render(&gather::gather(ws, results, comparison, boards, baselines_dir, dir));
    let path = dir.join("report.html");
    crate::fsutil::write_atomic(&path, html.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_to_the_book_names_the_chapter_and_heading_or_is_left_out_without_a_book() {
        let link = |c: Chapter, book| c.link(book, "<code>x</code>");
        assert_eq!(
            link(Chapter::Figures, Some("https://o.github.io/r/")),
            "<a class=\"book\" href=\"https://o.github.io/r/scenarios.html#the-figures\"><code>x</code></a>"
        );
        assert_eq!(
            link(Chapter::Page, Some("../book/")),
            "<a class=\"book\" href=\"../book/reports.html\"><code>x</code></a>"
        );
        assert_eq!(link(Chapter::Verdicts, None), "<code>x</code>");
    }

    /// A figure is folded only when it is unchanged in every scenario;
    /// a board or model with nothing unchanged is not listed.
    #[test]
    fn only_figures_unchanged_in_every_scenario_are_folded_per_board_and_model() {
        let row = |board: &str, model: &str, scenario: &str, metric: &str, verdict| crate::verdict::compare::Row {
            board: board.into(),
            model: model.into(),
            scenario: scenario.into(),
            metric: metric.into(),
            baseline: Some(1),
            measured: Some(1),
            verdict,
            moved: Vec::new(),
        };
        let rows = vec![
            row("b", "m", "single-frame", "arena_used_bytes", Verdict::Unchanged),
            row("b", "m", "stream", "arena_used_bytes", Verdict::Regressed),
            row("b", "m", "single-frame", "stack_peak_bytes", Verdict::Unchanged),
            row("b", "m", "stream", "stack_peak_bytes", Verdict::Unchanged),
            row("b", "a", "build", "flash_bytes", Verdict::Unchanged),
            row("c", "m", "build", "flash_bytes", Verdict::Improved),
        ];
        let mut html = String::new();
        unchanged(&mut html, &Comparison { against: "work tree".into(), runtime_changes: Vec::new(), rows });
        assert_eq!(
            html,
            "<details class=\"unchanged\"><summary>b: 2 figures unchanged</summary><ul>\n<li>a: flash_bytes</li>\n<li>m: stack_peak_bytes</li>\n</ul></details>\n"
        );
    }

    /// The stack stacks as the thread's peak, what the interrupts add to
    /// reach the bound, and the rest of the budget; without a bound (a host
    /// process) the interrupts add nothing.
    #[test]
    fn the_interrupts_band_is_the_bound_beyond_the_threads_peak() {
        let record = |metrics: &[(&str, i64)]| Measurement {
            board: "b".into(),
            model: "m".into(),
            scenario: "dma-stream".into(),
            metrics: metrics.iter().map(|&(k, v)| (k.to_owned(), v)).collect(),
            notes: Default::default(),
            checks: Vec::new(),
            arena_prediction: None,
            tflm_breakdown: None,
            resident_breakdowns: Default::default(),
            spread: Default::default(),
            footprint: None,
        };
        let stack = |r: &Measurement| segments(r, 8192)[9..].to_vec();
        let cortex_m = record(&[(metric::STACK_PEAK_BYTES, 2400), (metric::STACK_BOUND_BYTES, 3100)]);
        assert_eq!(stack(&cortex_m), [2400.0, 700.0, 5092.0]);
        assert_eq!(stack(&record(&[(metric::STACK_PEAK_BYTES, 2400)])), [2400.0, 0.0, 5792.0]);
        assert_eq!(SEGMENTS[10].0, "interrupts");
    }
}
