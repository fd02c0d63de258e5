//! The run and its comparison as Markdown (the report CI posts), and an
//! approval's commit message.

use crate::run::measurement::{Measurement, TflmBreakdown, RECORDED};
use crate::run::results::Results;
use crate::verdict::compare::{Comparison, Row, Verdict};

use super::{cells, comparison_summary, findings, footprint_rows, runtime_changes, value, verdict_line, verdict_text};

/// A Markdown table of rows (for PR comments, step summaries and commit
/// messages).
pub fn diff(rows: &[Row]) -> String {
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
pub fn approval_message(rows: &[Row], approver: &str) -> String {
    format!("Approve memory baselines\n\n{}\nApproved-by: {approver}\n", diff(rows))
}

/// The comparison and the run's failures as Markdown.
pub fn report(results: &Results, c: &Comparison) -> String {
    let mut out = format!("## hilmem memory report\n\n**{}**\n\n", verdict_line(results, c));
    for line in runtime_changes(c) {
        out.push_str(&format!("**{line}**\n\n"));
    }
    out.push_str(&format!("{}\n\n", comparison_summary(c)));
    let found = findings::of(results, c);
    if found.changed.is_empty() {
        out.push_str("Every figure equals its baseline.\n");
    } else {
        out.push_str(&diff(&found.changed));
    }
    for (title, items) in found.lists() {
        if !items.is_empty() {
            let items: Vec<String> = items.iter().map(|i| format!("- {}", code_span(i))).collect();
            out.push_str(&format!("\n### {title}\n\n{}\n", items.join("\n")));
        }
    }
    out + &breakdowns(results) + &footprints_markdown(results)
}

pub(super) fn footprints_markdown(results: &Results) -> String {
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
pub(super) fn breakdowns(results: &Results) -> String {
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
pub(super) fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{text}{fence}")
    } else {
        format!("{fence} {text} {fence}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message with backticks of its own stays one code span.
    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(code_span("plain"), "`plain`");
        assert_eq!(code_span("board `m7`: x"), "`` board `m7`: x ``");
        assert_eq!(code_span("a `` b"), "``` a `` b ```");
    }
}
