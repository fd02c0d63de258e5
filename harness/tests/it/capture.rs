//! Time in the firmware: the dma-stream scenario's camera writes frames from
//! interrupts while the model infers, at the board's clock and at one eight
//! times slower; the handlers run on their own stack, which every Cortex-M
//! record reports; and the self-tests that hand the model a buffer the
//! camera still writes end naming it, or, with the lifecycle's checks
//! compiled out, give wrong answers.

use harness::image::firmware::Variant;
use harness::run::measurement::Measurement;
use harness::run::record::CLOCK;
use harness::run::{self, Options};
use hilmem_protocol::metric;
use hilmem_protocol::scenario::{DMA_STREAM, DMA_STREAM_SLOW, SINGLE_FRAME};

use crate::support::*;

fn record<'a>(records: &'a [Measurement], scenario: &str) -> &'a Measurement {
    records.iter().find(|r| r.scenario == scenario).unwrap_or_else(|| panic!("no {scenario} record"))
}

/// One exception frame with the FP context, aligned: what the bound adds to
/// the thread's peak at the least on a hard-float core.
const FP_FRAME: i64 = 26 * 4 + 4;

/// person_detection on the Cortex-M7 at both clocks, three times each: the
/// figures repeat exactly; at the slow clock more frames are dropped, or
/// more buffers are in flight; every frame the camera wrote was inferred
/// right (the firmware checks each against one inference of its input
/// alone); the bound holds the thread's peak, an FP exception frame and the
/// handlers' stack.
#[test]
fn the_slow_clock_drops_more_frames_and_every_figure_repeats() {
    let mut options = Options::new(&ws(), vec![default_board()]);
    options.models = vec!["person_detection".into()];
    options.scenarios = vec![SINGLE_FRAME.into(), DMA_STREAM.into(), DMA_STREAM_SLOW.into()];
    options.repeat = 3;
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    for r in ran(&results) {
        assert!(r.passed(), "{}: {:?}", r.scenario, r.checks);
        assert!(r.spread.is_empty(), "{}: figures moved between runs: {:?}", r.scenario, r.spread);
        let m = &r.metrics;
        assert!(
            m[metric::STACK_BOUND_BYTES] >= m[metric::STACK_PEAK_BYTES] + FP_FRAME,
            "{}: bound {} against peak {}",
            r.scenario,
            m[metric::STACK_BOUND_BYTES],
            m[metric::STACK_PEAK_BYTES]
        );
        assert!(m[metric::STACK_BOUND_BYTES] >= m[metric::STACK_PEAK_BYTES] + m[metric::INTERRUPT_STACK_PEAK_BYTES]);
    }
    let (normal, slow) = (record(&results.records, DMA_STREAM), record(&results.records, DMA_STREAM_SLOW));
    for r in [normal, slow] {
        let m = &r.metrics;
        assert_eq!(m[metric::FRAMES_CAPTURED] + m[metric::FRAMES_DROPPED], m[metric::FRAMES], "{}", r.scenario);
        assert_eq!(m[metric::FRAMES_INFERRED], m[metric::FRAMES_CAPTURED], "{}", r.scenario);
        assert!(m[metric::CAPTURE_BUFFERS_PEAK] <= m[metric::CAPTURE_BUFFERS]);
        assert!(m[metric::INTERRUPT_STACK_PEAK_BYTES] > 0, "the handlers ran on their own stack");
    }
    assert!(
        slow.metrics[metric::FRAMES_DROPPED] > normal.metrics[metric::FRAMES_DROPPED]
            || slow.metrics[metric::CAPTURE_BUFFERS_PEAK] > normal.metrics[metric::CAPTURE_BUFFERS_PEAK],
        "normal {:?}, slow {:?}",
        normal.metrics,
        slow.metrics
    );
    assert_eq!(normal.notes[CLOCK], "-icount shift=1: 500 M instructions a second");
    assert_eq!(slow.notes[CLOCK], "-icount shift=4: 62 M instructions a second");
    // The single frame has no interrupt, and its handlers' stack is empty.
    let single = record(&results.records, SINGLE_FRAME);
    assert_eq!(single.metrics[metric::INTERRUPT_STACK_PEAK_BYTES], 0);
}

/// The two self-tests, with the lifecycle's checks and without: with them,
/// each run ends naming the buffer and its state; without them, the camera
/// writes into what the model reads and an answer is wrong.
#[test]
fn handing_the_model_a_buffer_the_camera_writes_is_caught_or_answers_wrong() {
    let expected = [
        ("selftest-capture-filling", "buffer 0 is CAMERA_FILLING and still being written"),
        ("selftest-zero-copy", "buffer 0: FREE may not follow INFER_RUNNING"),
    ];
    for variant in [Variant::Standard, Variant::UncheckedLifecycle] {
        let mut options = Options::new(&ws(), vec![default_board()]);
        options.models = vec!["person_detection".into()];
        options.scenarios = expected.iter().map(|(s, _)| (*s).to_owned()).collect();
        options.variant = variant;
        let results = run::run(&ws(), &options, &|_| {}).unwrap();
        assert_eq!(results.failed.len(), expected.len(), "{:#?}", results.failed);
        for (scenario, checked) in expected {
            let failed = results.failed.iter().find(|f| f.scenario == scenario).unwrap();
            let error = &failed.error;
            match variant {
                Variant::Standard => {
                    assert!(error.contains(&format!("{checked} (stage `lifecycle`")), "{scenario}: {error}")
                }
                _ => assert!(
                    error.contains("answered class") && error.contains("(stage `answers`"),
                    "{scenario} unchecked: {error}"
                ),
            }
        }
    }
}

/// The host board's camera is a writer thread at the same frame rate: the
/// same lifecycle and answers, on the wall clock, which the record names.
#[test]
fn the_host_captures_with_a_writer_thread() {
    let mut options = Options::new(&ws(), vec![board("host")]);
    options.models = vec!["hello_world".into()];
    options.scenarios = vec![DMA_STREAM.into(), DMA_STREAM_SLOW.into()];
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    let records: Vec<&Measurement> = ran(&results).collect();
    assert_eq!(records.len(), 1, "no slow clock on the host");
    let r = records[0];
    assert!(r.passed(), "{:?}", r.checks);
    assert_eq!(r.notes[CLOCK], "the host's wall clock, not scaled");
    assert_eq!(r.metrics[metric::FRAMES_INFERRED], r.metrics[metric::FRAMES_CAPTURED]);
    assert!(!r.metrics.contains_key(metric::STACK_BOUND_BYTES));
}
