//! What a run of CI costs, and where it goes: every process a CI step
//! starts appends what it did, one JSON line per event, to the file
//! [`LOG`] names (nothing is written when it is unset): a firmware image
//! built, a QEMU run, a TFLM library configuration compiled (the firmware's
//! build script writes those in the same shape), a test and its time.
//! `cargo xtask ci` gives each step a log of its own and sums them up
//! ([`Summary`]), written as JSON beside the logs so two runs compare.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The variable that names the log a process appends its events to.
pub const LOG: &str = "HILMEM_TIMINGS_LOG";

/// A firmware image built (`name`: board/model and variant).
pub const IMAGE: &str = "image";
/// A QEMU run (`name`: the board).
pub const QEMU: &str = "qemu";
/// A TFLM library configuration compiled, or the part of it a build lacked
/// (`name`: its cache directory, tree, kernels and core).
pub const TFLM_LIBRARY: &str = "tflm-library";
/// A test (`name`: its binary and name, as nextest gives them).
pub const TEST: &str = "test";

/// One thing done and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: String,
    pub name: String,
    pub seconds: f64,
}

/// Appends `event` to the log, if a log is named: one write of one line,
/// so processes that append at once do not mix their lines. A log that
/// cannot be written costs the run nothing.
pub fn note(kind: &str, name: &str, seconds: f64) {
    let Some(log) = std::env::var_os(LOG) else { return };
    let event = Event { kind: kind.to_owned(), name: name.to_owned(), seconds };
    let line = serde_json::to_string(&event).expect("events serialize") + "\n";
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Notes `kind` and `name` with the time since `started`.
pub fn note_since(kind: &str, name: &str, started: Instant) {
    note(kind, name, started.elapsed().as_secs_f64());
}

/// The events of a log, in the order they were written; a line that is not
/// an event (one cut short by a killed process) is left out.
pub fn read(log: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// The tests of a nextest JUnit report (`testcase` elements: `classname`
/// is the binary), as test events named `binary name`.
pub fn tests_in_junit(xml: &str) -> Vec<Event> {
    let attribute = |tag: &str, key: &str| {
        let start = tag.find(&format!(" {key}=\""))? + key.len() + 3;
        let value = &tag[start..start + tag[start..].find('"')?];
        Some(value.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&"))
    };
    xml.split("<testcase")
        .skip(1)
        .filter_map(|rest| {
            let tag = &rest[..rest.find('>')?];
            let (binary, name) = (attribute(tag, "classname")?, attribute(tag, "name")?);
            let seconds = attribute(tag, "time")?.parse().ok()?;
            Some(Event { kind: TEST.to_owned(), name: format!("{binary} {name}"), seconds })
        })
        .collect()
}

/// How many test runs a nextest JUnit report says failed: its `failure`
/// and `error` elements, one per failed run of a test, in every iteration
/// of a stress run. (A flaky test's failed tries before a pass are
/// `flakyFailure` elements: not failures. Text in the report is escaped, so
/// no output a test printed reads as an element.)
pub fn failed_in_junit(xml: &str) -> usize {
    xml.matches("<failure").count() + xml.matches("<error").count()
}

/// One step of a CI run and what its processes noted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub name: String,
    /// Wall time of the step.
    pub seconds: f64,
    pub passed: bool,
    pub events: Vec<Event>,
}

/// A CI run's timings: its steps, and their events counted and timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub steps: Vec<Step>,
}

impl Summary {
    /// Every event of `kind`, in step order.
    pub fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.steps.iter().flat_map(|s| &s.events).filter(move |e| e.kind == kind)
    }

    /// The summary as lines for the terminal: each step's wall time, then
    /// per kind of event how many and their summed time (builds and runs
    /// overlap, so a sum can pass the wall time), the tests per binary, and
    /// the `slowest` tests and TFLM libraries.
    pub fn lines(&self, slowest: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .steps
            .iter()
            .map(|s| format!("{:>6.0} s  {:<8}  {}", s.seconds, if s.passed { "passed" } else { "FAILED" }, s.name))
            .collect();
        let total: f64 = self.steps.iter().map(|s| s.seconds).sum();
        lines.push(format!("{total:>6.0} s            in all"));
        for (kind, what) in [
            (TFLM_LIBRARY, "TFLM library configurations compiled"),
            (IMAGE, "firmware images built"),
            (QEMU, "QEMU runs"),
            (TEST, "tests run"),
        ] {
            let (count, seconds) = self.of_kind(kind).fold((0, 0.0), |(n, s), e| (n + 1, s + e.seconds));
            lines.push(format!("{count:>6}  {what}, {seconds:.0} s summed"));
        }
        let mut binaries: Vec<(String, usize, f64)> = Vec::new();
        for test in self.of_kind(TEST) {
            let binary = test.name.split(' ').next().unwrap_or_default();
            match binaries.iter_mut().find(|(b, _, _)| b == binary) {
                Some((_, n, s)) => (*n, *s) = (*n + 1, *s + test.seconds),
                None => binaries.push((binary.to_owned(), 1, test.seconds)),
            }
        }
        binaries.sort_by(|a, b| b.2.total_cmp(&a.2));
        lines.extend(binaries.iter().map(|(b, n, s)| format!("{s:>6.0} s  {n} tests of {b}")));
        for (kind, what) in [(TEST, "test"), (TFLM_LIBRARY, "TFLM library")] {
            let mut events: Vec<&Event> = self.of_kind(kind).collect();
            events.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
            lines.extend(events.iter().take(slowest).map(|e| format!("{:>6.0} s  {what} {}", e.seconds, e.name)));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_are_read_from_nextest_junit() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="2">
    <testsuite name="harness::it" tests="2">
        <testcase name="a::b" classname="harness::it" timestamp="2026-12-07T12:00:00Z" time="1.5">
        </testcase>
        <testcase name="c&lt;d&gt;" classname="harness::it" timestamp="2026-12-07T12:00:01Z" time="0.25"/>
    </testsuite>
</testsuites>"#;
        let tests = tests_in_junit(xml);
        let named: Vec<(&str, f64)> = tests.iter().map(|t| (t.name.as_str(), t.seconds)).collect();
        assert_eq!(named, [("harness::it a::b", 1.5), ("harness::it c<d>", 0.25)]);
        assert!(tests.iter().all(|t| t.kind == TEST));
    }

    /// nextest's report of a stress run whose first iteration failed and
    /// second passed (nextest 0.9.143 exits 0 for it), and its kinds of
    /// failed runs.
    #[test]
    fn failed_runs_are_counted_in_every_iteration_of_the_report() {
        let report = |cases: &str| format!("<testsuites>{cases}</testsuites>");
        let suite = |n: u32, body: &str| {
            format!(
                "<testsuite name=\"harness::it@stress-{n}\"><testcase name=\"a\" classname=\"harness::it\" \
                 time=\"1.0\">{body}</testcase></testsuite>"
            )
        };
        let failed = "<failure message=\"panicked\" type=\"test failure\">&lt;failure&gt;</failure>";
        let errored = "<error message=\"timed out\" type=\"test timeout\"/>";
        let flaky = "<flakyFailure message=\"panicked\" type=\"test failure\"/>";
        assert_eq!(failed_in_junit(&report(&(suite(0, failed) + &suite(1, "")))), 1);
        assert_eq!(failed_in_junit(&report(&(suite(0, failed) + &suite(1, errored)))), 2);
        assert_eq!(
            failed_in_junit(&report(&(suite(0, flaky) + &suite(1, "<system-out>&lt;error&gt;</system-out>")))),
            0
        );
        assert_eq!(failed_in_junit(&report("")), 0);
    }

    #[test]
    fn the_summary_counts_each_kind_and_names_the_slowest() {
        let event = |kind: &str, name: &str, seconds| Event { kind: kind.into(), name: name.into(), seconds };
        let summary = Summary {
            steps: vec![
                Step {
                    name: "tests".into(),
                    seconds: 100.0,
                    passed: true,
                    events: vec![
                        event(TEST, "harness::it slow", 60.0),
                        event(TEST, "harness::it quick", 1.0),
                        event(TEST, "xtask::cli one", 2.0),
                        event(TFLM_LIBRARY, "current", 300.0),
                        event(IMAGE, "qemu-m7/hello_world", 20.0),
                    ],
                },
                Step { name: "boards".into(), seconds: 50.0, passed: false, events: vec![event(QEMU, "qemu-m7", 3.0)] },
            ],
        };
        let lines = summary.lines(1);
        let expected = [
            "   100 s  passed    tests",
            "    50 s  FAILED    boards",
            "   150 s            in all",
            "     1  TFLM library configurations compiled, 300 s summed",
            "     1  firmware images built, 20 s summed",
            "     1  QEMU runs, 3 s summed",
            "     3  tests run, 63 s summed",
            "    61 s  2 tests of harness::it",
            "     2 s  1 tests of xtask::cli",
            "    60 s  test harness::it slow",
            "   300 s  TFLM library current",
        ];
        assert_eq!(lines, expected);
    }

    /// Each test runs in a process of its own under nextest, so the
    /// variable set here is this test's alone.
    #[test]
    fn a_note_is_appended_to_the_log_named_and_nowhere_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("step.jsonl");
        std::env::remove_var(LOG);
        note(IMAGE, "nowhere", 1.0);
        std::env::set_var(LOG, &log);
        note(IMAGE, "qemu-m7/hello_world", 2.5);
        note(QEMU, "qemu-m7/hello_world single-frame", 0.5);
        std::env::remove_var(LOG);
        let names: Vec<(String, String, f64)> = read(&log).into_iter().map(|e| (e.kind, e.name, e.seconds)).collect();
        assert_eq!(
            names,
            [
                (IMAGE.into(), "qemu-m7/hello_world".into(), 2.5),
                (QEMU.into(), "qemu-m7/hello_world single-frame".into(), 0.5)
            ]
        );
    }

    #[test]
    fn events_are_appended_and_read_back_and_a_cut_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("step.jsonl");
        let line = |e: &Event| serde_json::to_string(e).unwrap() + "\n";
        let image = Event { kind: IMAGE.into(), name: "qemu-m7/hello_world".into(), seconds: 2.5 };
        std::fs::write(&log, line(&image) + "{\"kind\":\"qe").unwrap();
        assert_eq!(read(&log), [image]);
        assert_eq!(read(&dir.path().join("none.jsonl")), []);
    }
}
