//! The measurement record: one per board, model and scenario, with stable
//! metric names (they are the keys baselines are stored under).

use std::collections::BTreeMap;

use hilmem_protocol::metric;
use hilmem_protocol::scenario::{
    CAPTURE_FILLING, CONCURRENT_OTA, DMA_STREAM, DMA_STREAM_SLOW, LOG_HEAVY, MULTI_MODEL, SELF_TESTS,
    SHARED_PREEMPTION, STREAM, ZERO_COPY,
};
use serde::{Deserialize, Serialize};

use crate::config::board::{Board, Runner};
use crate::config::models::{Expect, InputSpec, ModelSpec, OtaOutcome};
use crate::device::session::{Output, Session};
use crate::image::footprint::Footprint;
use crate::model::analysis::Sharing;

/// [`metric::write_of_resident`] as a `String`.
pub fn of_resident(model: &str, figure: &str) -> String {
    let mut name = String::new();
    let _ = metric::write_of_resident(&mut name, model, figure);
    name
}

/// The record of the image itself, which needs no running target: its
/// figures from the model file and the ELF, the analyzer's, its footprint
/// and its fit. Every run makes it; `hil --build-only` makes only it.
pub const BUILD: &str = "build";
/// The capture scenario's clock on a QEMU board whose profile sets no
/// `icount_shift`: `-icount shift=1`, an instruction every 2 ns of the
/// board's time (500 million a second).
pub const CAPTURE_ICOUNT_SHIFT: u8 = 1;
/// How much slower the slow clock is: three more steps of the shift.
pub const SLOW_CLOCK: u32 = 8;

/// The `-icount shift` a QEMU board runs `scenario` at: the capture
/// scenarios' clocks (the profile's shift, or [`CAPTURE_ICOUNT_SHIFT`], and
/// [`SLOW_CLOCK`] times slower), else the profile's, if any.
pub fn icount_shift(board: &Board, scenario: &str) -> Option<u8> {
    let Runner::Qemu { icount_shift, .. } = &board.runner else { return None };
    let normal = icount_shift.unwrap_or(CAPTURE_ICOUNT_SHIFT);
    match scenario {
        DMA_STREAM => Some(normal),
        DMA_STREAM_SLOW => Some(normal + SLOW_CLOCK.trailing_zeros() as u8),
        _ => *icount_shift,
    }
}

/// The clock a record names: a QEMU board's instructions a second of its
/// own time, or the host's wall clock.
pub fn clock_note(board: &Board, scenario: &str) -> String {
    match icount_shift(board, scenario) {
        Some(shift) => format!("-icount shift={shift}: {} M instructions a second", 1000 >> shift),
        None => "the host's wall clock, not scaled".to_owned(),
    }
}

/// Whether `scenario` (or self-test) runs for `model` on `board`: a set runs
/// the multi-model scenario only, and a model every other one and the
/// self-tests; the capture scenario needs a board with a timer for its
/// camera (a QEMU machine, or the host's threads), and its slow clock a
/// QEMU board, whose clock can be scaled.
pub fn runs_for(model: &ModelSpec, scenario: &str, board: &Board) -> bool {
    let capture = matches!(scenario, DMA_STREAM | CAPTURE_FILLING | ZERO_COPY);
    if (capture && !board.is_emulated()) || (scenario == DMA_STREAM_SLOW && !board.is_qemu()) {
        false
    } else if scenario == SHARED_PREEMPTION {
        model.set.as_ref().is_some_and(|set| set.sharing == Sharing::Shared) && board.is_emulated()
    } else if SELF_TESTS.contains(&scenario) {
        model.set.is_none()
    } else {
        (scenario == MULTI_MODEL) == model.set.is_some()
    }
}

/// Frames of the streaming scenarios unless told otherwise: enough to see the
/// watermarks settle after the firmware's four warm-up frames.
pub const DEFAULT_FRAMES: u32 = 16;

/// A functional check of a run, such as the class the model chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// How far TFLM's `arena_used_bytes` may be from the analyzer's prediction,
/// in percent of the prediction, before the difference is flagged. The
/// prediction is exact for the bundled TFLM and the current checkout the
/// tests use; the margin leaves room for other commits of a generation.
pub const PREDICTION_MARGIN_PERCENT: i64 = 1;

/// The analyzer's arena prediction (head plus tail, for 32-bit Arm) next to
/// what TFLM reported on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaPrediction {
    pub predicted_bytes: i64,
    pub measured_bytes: i64,
}

impl ArenaPrediction {
    /// Measured minus predicted.
    pub fn difference(&self) -> i64 {
        self.measured_bytes - self.predicted_bytes
    }

    pub fn within_margin(&self) -> bool {
        self.difference().abs() * 100 <= self.predicted_bytes * PREDICTION_MARGIN_PERCENT
    }
}

/// One board, model and scenario: its figures and its checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub board: String,
    pub model: String,
    pub scenario: String,
    pub metrics: BTreeMap<String, i64>,
    /// Named text, such as `ota_gate` (the update gate's decision and why).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, String>,
    pub checks: Vec<Check>,
    /// On 32-bit Arm boards, in the single-frame scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arena_prediction: Option<ArenaPrediction>,
    /// On a current TFLM, in the single-frame scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tflm_breakdown: Option<TflmBreakdown>,
    /// On a current TFLM, in the multi-model scenario of a set in separate
    /// arenas: each model's, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resident_breakdowns: BTreeMap<String, TflmBreakdown>,
    /// With `--repeat`: each figure that varied between the runs, as its
    /// least and largest value (the record keeps the largest).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spread: BTreeMap<String, (i64, i64)>,
    /// In the build record: flash and static RAM by component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<Footprint>,
}

/// The check of a repeated scenario on a board whose figures are
/// deterministic.
pub const REPEATS_EXACTLY: &str = "figures repeat exactly";

impl Measurement {
    /// Takes in another run of the same scenario: a figure that differs
    /// widens its spread and keeps the larger value.
    pub fn spread_with(&mut self, again: &Measurement) {
        for (name, &value) in &again.metrics {
            let Some(kept) = self.metrics.get_mut(name) else { continue };
            if *kept != value || self.spread.contains_key(name) {
                let (low, high) = self.spread.entry(name.clone()).or_insert((*kept, *kept));
                (*low, *high) = ((*low).min(value), (*high).max(value));
                *kept = (*kept).max(value);
            }
        }
    }

    /// After `repeat` runs: on a board whose figures are deterministic
    /// (`exact`, the emulated ones), a check that fails on any spread; on
    /// the others, a note with the spread for the policy to weigh.
    pub fn judge_spread(&mut self, repeat: u32, exact: bool) {
        if repeat < 2 {
            return;
        }
        let spread: Vec<String> =
            self.spread.iter().map(|(name, (low, high))| format!("{name} {low}..{high}")).collect();
        let detail = if spread.is_empty() {
            format!("every figure the same in {repeat} runs")
        } else {
            format!("varied in {repeat} runs: {}", spread.join(", "))
        };
        if exact {
            self.checks.push(Check { name: REPEATS_EXACTLY.into(), passed: spread.is_empty(), detail });
        } else {
            self.notes.insert("spread".into(), detail);
        }
    }
}

/// TFLM's own account of the arena: what its recording allocator recorded
/// while the interpreter allocated, in an image of its own (the recording
/// allocator's objects are larger, so its head and tail are its own, not
/// the record's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TflmBreakdown {
    pub head_bytes: i64,
    pub tail_bytes: i64,
    /// Of the tail, TFLM's allocator objects.
    pub allocator_bytes: i64,
    /// By TFLM's allocation type ([`RECORDED`]).
    pub recorded: BTreeMap<String, Recorded>,
}

/// TFLM's allocation types, as the firmware names them: its
/// `RecordedAllocationType`s in their order.
pub const RECORDED: [&str; 7] = [
    "eval_tensors",
    "persistent_tensors",
    "quantization",
    "persistent_buffers",
    "variables",
    "node_and_registrations",
    "op_data",
];

/// One allocation type: the bytes its allocations took with alignment, the
/// bytes they asked for, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    pub used_bytes: i64,
    pub requested_bytes: i64,
    pub count: i64,
}

impl Measurement {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// The checks of one run: the model's answers against `hil.toml`, and what
/// the scenario itself must show.
pub fn checks(model: &ModelSpec, scenario: &str, session: &Session) -> Vec<Check> {
    if let Some(set) = &model.set {
        // Each model answers its first input, reported under its name.
        return set.models.iter().filter_map(|m| output_check(&m.name, &m.inputs[0], &session.outputs)).collect();
    }
    let mut checks: Vec<Check> =
        model.inputs.iter().filter_map(|input| output_check(&input.name, input, &session.outputs)).collect();
    match scenario {
        STREAM | LOG_HEAVY => {
            let growth = session.metrics.get(metric::HEAP_GROWTH_BYTES).copied().unwrap_or_default();
            checks.push(Check {
                name: "watermarks settle after warm-up".into(),
                passed: growth == 0,
                detail: format!("{growth} bytes of growth after warm-up"),
            });
        }
        CONCURRENT_OTA => {
            let accepted = session.metrics.get(metric::OTA_ACCEPTED) == Some(&1);
            let expected = model.ota.expect == OtaOutcome::Accepted;
            let said = session.notes.get("ota_gate").map_or(NOT_REPORTED, String::as_str);
            checks.push(Check {
                name: format!("update to `{}` {}", model.ota.model, if expected { "accepted" } else { "rejected" }),
                passed: accepted == expected && session.notes.contains_key("ota_gate"),
                detail: said.to_owned(),
            });
            if accepted {
                let name = crate::image::firmware::ota_output_name(&model.ota.input.name);
                checks.extend(output_check(&name, &model.ota.input, &session.outputs));
            }
        }
        _ => {}
    }
    checks
}

/// The detail of a check whose answer or decision the firmware never
/// reported (when it still finished, the link lost it).
pub const NOT_REPORTED: &str = "the firmware did not report it";

/// Compares the answer reported as `reported` with what `input` expects.
fn output_check(reported: &str, input: &InputSpec, outputs: &[Output]) -> Option<Check> {
    let expect = input.expect?;
    let name = format!("output for {reported}");
    let Some(out) = outputs.iter().find(|o| o.input == reported) else {
        return Some(Check { name, passed: false, detail: NOT_REPORTED.into() });
    };
    Some(match expect {
        Expect::Class(class) => {
            Check { name, passed: out.class == class, detail: format!("class {}, expected {class}", out.class) }
        }
        Expect::Value { value, tolerance } => Check {
            name,
            passed: (out.value - value).abs() <= tolerance,
            detail: format!("value {:.4}, expected {value} ± {tolerance}", out.value),
        },
    })
}

#[cfg(test)]
mod tests {
    use hilmem_protocol::scenario::SINGLE_FRAME;

    use super::*;
    use crate::config::models::{InputData, OtaSpec};

    fn input(name: &str, expect: Option<Expect>) -> InputSpec {
        InputSpec { name: name.into(), data: InputData::Values(vec![0.0]), expect }
    }

    fn model(ota_expect: OtaOutcome) -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            file: "m.tflite".into(),
            arena: crate::config::models::Arena::Bytes(64),
            planner: crate::model::planner::Planner::Greedy,
            kernels: crate::tflm::tree::Kernels::Reference,
            inputs: vec![
                input("a", Some(Expect::Class(1))),
                input("b", Some(Expect::Value { value: 1.0, tolerance: 0.1 })),
                input("c", None),
            ],
            ota: OtaSpec {
                model: "n".into(),
                file: "n.tflite".into(),
                input: input("z", Some(Expect::Class(3))),
                version: 2,
                min_arena_bytes: Some(64),
                max_arena_bytes: Some(64),
                min_free_heap_bytes: 0,
                expect: ota_expect,
            },
            capture: crate::config::models::CaptureSpec::default(),
            set: None,
        }
    }

    fn session(outputs: &[(&str, u32, f32)], metrics: &[(&str, i64)], notes: &[(&str, &str)]) -> Session {
        let mut session = Session::default();
        session.outputs =
            outputs.iter().map(|&(input, class, value)| Output { input: input.into(), class, value }).collect();
        session.metrics = metrics.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        session.notes = notes.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect();
        session
    }

    #[test]
    fn a_prediction_is_flagged_beyond_one_percent() {
        let p = |predicted_bytes, measured_bytes| ArenaPrediction { predicted_bytes, measured_bytes };
        assert!(p(88_416, 88_416).within_margin());
        assert!(p(10_000, 10_100).within_margin() && p(10_000, 9_900).within_margin());
        assert!(!p(10_000, 10_101).within_margin() && !p(10_000, 9_899).within_margin());
        assert_eq!(p(1472, 1480).difference(), 8);
    }

    /// Repeated runs: a figure that differs keeps its largest value and its
    /// spread; on an emulated board any spread fails a check, elsewhere it is
    /// a note; identical runs pass.
    #[test]
    fn a_figure_that_varies_between_repeats_is_kept_with_its_spread() {
        let record = |stack: i64, rss: i64| Measurement {
            board: "b".into(),
            model: "m".into(),
            scenario: SINGLE_FRAME.into(),
            metrics: BTreeMap::from([("stack_peak_bytes".into(), stack), ("rss_peak_bytes".into(), rss)]),
            notes: BTreeMap::new(),
            checks: vec![],
            arena_prediction: None,
            tflm_breakdown: None,
            resident_breakdowns: Default::default(),
            spread: BTreeMap::new(),
            footprint: None,
        };
        let mut same = record(2048, 100);
        same.spread_with(&record(2048, 100));
        same.judge_spread(2, true);
        assert!(same.spread.is_empty() && same.checks[0].passed, "{same:?}");
        let mut varied = record(2048, 100);
        varied.spread_with(&record(2064, 90));
        varied.spread_with(&record(2048, 120));
        assert_eq!(varied.metrics["stack_peak_bytes"], 2064);
        assert_eq!(varied.metrics["rss_peak_bytes"], 120);
        assert_eq!(varied.spread["rss_peak_bytes"], (90, 120));
        let mut on_host = varied.clone();
        varied.judge_spread(3, true);
        assert_eq!(varied.checks[0].name, REPEATS_EXACTLY);
        assert!(!varied.checks[0].passed && varied.checks[0].detail.contains("stack_peak_bytes 2048..2064"));
        on_host.judge_spread(3, false);
        assert!(on_host.checks.is_empty() && on_host.notes["spread"].contains("rss_peak_bytes 90..120"));
    }

    #[test]
    fn answers_are_checked_against_expectations() {
        let m = model(OtaOutcome::Accepted);
        let checks = checks(&m, SINGLE_FRAME, &session(&[("a", 1, 0.0), ("b", 0, 0.95), ("c", 3, 0.0)], &[], &[]));
        assert_eq!(checks.len(), 2);
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");

        let checks = super::checks(&m, SINGLE_FRAME, &session(&[("a", 2, 0.0), ("b", 0, 1.2)], &[], &[]));
        assert!(!checks[0].passed && checks[0].detail == "class 2, expected 1");
        assert!(!checks[1].passed);

        let checks = super::checks(&m, SINGLE_FRAME, &session(&[], &[], &[]));
        assert!(checks.iter().all(|c| !c.passed && c.detail == NOT_REPORTED));
    }

    #[test]
    fn a_stream_whose_heap_grows_fails() {
        let m = model(OtaOutcome::Accepted);
        let answers = [("a", 1, 0.0), ("b", 0, 1.0)];
        let ok = checks(&m, STREAM, &session(&answers, &[(metric::HEAP_GROWTH_BYTES, 0)], &[]));
        assert!(ok.iter().all(|c| c.passed), "{ok:?}");
        let leak = checks(&m, LOG_HEAVY, &session(&answers, &[(metric::HEAP_GROWTH_BYTES, 384)], &[]));
        let plateau = leak.iter().find(|c| c.name == "watermarks settle after warm-up").unwrap();
        assert!(!plateau.passed && plateau.detail == "384 bytes of growth after warm-up");
    }

    #[test]
    fn the_update_must_meet_its_expected_fate() {
        let answers = [("a", 1, 0.0), ("b", 0, 1.0)];
        let accepted = [(metric::OTA_ACCEPTED, 1)];
        let note = [("ota_gate", "accepted: activated in the shared arena")];

        let mut with_answer = answers.to_vec();
        with_answer.push(("ota-z", 3, 0.0));
        let c = checks(&model(OtaOutcome::Accepted), CONCURRENT_OTA, &session(&with_answer, &accepted, &note));
        assert!(c.iter().all(|c| c.passed), "{c:?}");
        assert!(c.iter().any(|c| c.name == "output for ota-z"));

        // Accepted, but the new model answered wrong.
        with_answer.pop();
        with_answer.push(("ota-z", 0, 0.0));
        let c = checks(&model(OtaOutcome::Accepted), CONCURRENT_OTA, &session(&with_answer, &accepted, &note));
        assert!(!c.iter().find(|c| c.name == "output for ota-z").unwrap().passed);

        // Expected to be rejected, but accepted.
        let c = checks(&model(OtaOutcome::Rejected), CONCURRENT_OTA, &session(&answers, &accepted, &note));
        let gate = c.iter().find(|c| c.name == "update to `n` rejected").unwrap();
        assert!(!gate.passed && gate.detail.starts_with("accepted"));

        // Rejected as expected: the reason is the detail.
        let refused = [("ota_gate", "rejected: its least arena is 7024 bytes, the firmware's arena 3072")];
        let c = checks(
            &model(OtaOutcome::Rejected),
            CONCURRENT_OTA,
            &session(&answers, &[(metric::OTA_ACCEPTED, 0)], &refused),
        );
        assert!(c.iter().all(|c| c.passed), "{c:?}");
    }
}
