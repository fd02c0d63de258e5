//! The comparison as JUnit XML, for CI systems that show test results.

use crate::run::results::Results;
use crate::verdict::compare::{Comparison, Row, Verdict};

use super::runtime_changes;

pub(super) fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JUnit XML: one test case per board, model and scenario, failing on a
/// regression (or any change, with `strict`), a failed check or a run that
/// produced no measurement.
pub fn report(results: &Results, c: &Comparison, strict: bool) -> String {
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
            failure += &super::markdown::diff(&diff);
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
