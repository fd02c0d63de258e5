//! The rendered outputs against the files in `harness/tests/snapshots/`. After
//! an intended change of format, bless the new renderings with
//! `HILMEM_BLESS=1 cargo xtask test -- snapshot` and review the diff.

use std::collections::BTreeMap;
use std::path::Path;

use harness::image::footprint::Footprint;
use harness::report;
use harness::run::measurement::{ArenaPrediction, Check, Measurement, Recorded, TflmBreakdown, RECORDED};
use harness::run::results::{Failed, Results, RESULTS_FORMAT};
use harness::verdict::compare::{Comparison, Row, RuntimeChange, Verdict};

fn check(rendered: &str, name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("HILMEM_BLESS").is_some() {
        std::fs::write(&path, rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}; bless it", path.display()));
    assert!(
        rendered == expected,
        "{name} changed; if intended, bless it with `HILMEM_BLESS=1 cargo xtask test -- snapshot`\n--- expected\n{expected}\n--- rendered\n{rendered}"
    );
}

fn fixture() -> (Results, Comparison) {
    let metrics = |used: i64, stack: i64| {
        BTreeMap::from([
            ("arena_used_bytes".to_owned(), used),
            ("flash_bytes".to_owned(), 177_796),
            ("heap_peak_bytes".to_owned(), 64),
            ("model_bytes".to_owned(), 2512),
            ("stack_peak_bytes".to_owned(), stack),
            ("static_ram_bytes".to_owned(), 34_612),
        ])
    };
    let pass = |name: &str| Check { name: name.into(), passed: true, detail: "class 1, expected 1".into() };
    let breakdown = |head_bytes, tail_bytes| TflmBreakdown {
        head_bytes,
        tail_bytes,
        allocator_bytes: 164,
        recorded: RECORDED
            .iter()
            .zip(1..)
            .map(|(name, n)| ((*name).to_owned(), Recorded { used_bytes: 16 * n, requested_bytes: 12 * n, count: n }))
            .collect(),
    };
    let results = Results {
        format: RESULTS_FORMAT,
        commit: Some("c9888c243e29df113a35605ffe72544f64f6782b".into()),
        boards: vec!["qemu-m7".into()],
        images: vec![],
        records: vec![
            Measurement {
                board: "qemu-m7".into(),
                model: "hello_world".into(),
                scenario: "build".into(),
                metrics: BTreeMap::from([
                    ("flash_bytes".to_owned(), 177_796),
                    ("model_bytes".to_owned(), 2512),
                    ("predicted_arena_bytes".to_owned(), 1456),
                    ("static_ram_bytes".to_owned(), 34_612),
                ]),
                notes: BTreeMap::new(),
                checks: vec![Check {
                    name: "flash image inside FLASH".into(),
                    passed: true,
                    detail: "177800 bytes of FLASH (4194304 bytes at 0x00000000)".into(),
                }],
                arena_prediction: None,
                tflm_breakdown: None,
                resident_breakdowns: Default::default(),
                spread: BTreeMap::new(),
                footprint: Some(Footprint {
                    flash: BTreeMap::from([
                        ("firmware".into(), 100_000),
                        ("kernel:CONV_2D".into(), 2340),
                        ("model".into(), 2512),
                        ("other".into(), 72_944),
                    ]),
                    static_ram: BTreeMap::from([("firmware".into(), 34_600), ("kernel:CONV_2D".into(), 12)]),
                }),
            },
            Measurement {
                board: "qemu-m7".into(),
                model: "hello_world".into(),
                scenario: "single-frame".into(),
                metrics: metrics(1480, 2016),
                notes: BTreeMap::new(),
                checks: vec![pass("output for x-0")],
                arena_prediction: Some(ArenaPrediction { predicted_bytes: 1456, measured_bytes: 1480 }),
                tflm_breakdown: Some(breakdown(48, 812)),
                resident_breakdowns: Default::default(),
                spread: BTreeMap::new(),
                footprint: None,
            },
            Measurement {
                board: "qemu-m7".into(),
                model: "hello_world".into(),
                scenario: "concurrent-ota".into(),
                metrics: metrics(1472, 2520),
                notes: BTreeMap::from([("ota_gate".into(), "rejected: its least arena is 7024 bytes, the firmware's arena 3072".into())]),
                checks: vec![Check { name: "output for x-0".into(), passed: false, detail: "value 0.5000, expected 0 ± 0.1".into() }],
                arena_prediction: None,
                tflm_breakdown: None,
                resident_breakdowns: Default::default(),
                spread: BTreeMap::new(),
                footprint: None,
            },
            // A set in separate arenas: each model's breakdown.
            Measurement {
                board: "qemu-m7".into(),
                model: "pair".into(),
                scenario: "multi-model".into(),
                metrics: metrics(17_136, 2200),
                notes: BTreeMap::new(),
                checks: vec![pass("output for magic_wand"), pass("output for hello_world")],
                arena_prediction: Some(ArenaPrediction { predicted_bytes: 17_136, measured_bytes: 17_136 }),
                tflm_breakdown: None,
                resident_breakdowns: BTreeMap::from([
                    ("hello_world".into(), breakdown(48, 812)),
                    ("magic_wand".into(), breakdown(13_824, 1840)),
                ]),
                spread: BTreeMap::new(),
                footprint: None,
            },
        ],
        failed: vec![Failed {
            board: "qemu-m7".into(),
            model: "person_detection".into(),
            scenario: "stream".into(),
            error: "board `qemu-m7`, model `person_detection`, scenario `stream`: the firmware hit a HardFault\nlast lines...".into(),
        }],
        models: vec![],
    };
    let row = |scenario: &str, metric: &str, baseline: Option<i64>, measured: Option<i64>, verdict| Row {
        board: "qemu-m7".into(),
        model: "hello_world".into(),
        scenario: scenario.into(),
        metric: metric.into(),
        baseline,
        measured,
        verdict,
        moved: Vec::new(),
    };
    let comparison = Comparison {
        against: "HEAD~1".into(),
        runtime_changes: vec![RuntimeChange {
            what: "TFLM".into(),
            board: "qemu-m7".into(),
            model: "hello_world".into(),
            from: "tfmicro 0.1.0 (TensorFlow 33689c48ad, May 2020)".into(),
            to: "tflite-micro 90b983c2b3f1".into(),
        }],
        rows: vec![
            Row {
                moved: vec![("kernel:CONV_2D".into(), 2340), ("other".into(), -4)],
                ..row("build", "flash_bytes", Some(175_460), Some(177_796), Verdict::Regressed)
            },
            row("single-frame", "arena_used_bytes", Some(1472), Some(1480), Verdict::Regressed),
            row("single-frame", "stack_peak_bytes", Some(2000), Some(2016), Verdict::WithinTolerance),
            row("single-frame", "static_ram_bytes", Some(34_700), Some(34_612), Verdict::Improved),
            row("single-frame", "flash_bytes", Some(177_796), Some(177_796), Verdict::Unchanged),
            row("concurrent-ota", "heap_peak_bytes", None, Some(64), Verdict::New),
            row("concurrent-ota", "pool_log_peak_bytes", Some(0), None, Verdict::Missing),
        ],
    };
    (results, comparison)
}

#[test]
fn snapshot_terminal_tables() {
    let (results, comparison) = fixture();
    check(
        &format!("{}\n\n{}\n", report::terminal::table(&results), report::terminal::comparison_table(&comparison)),
        "table.txt",
    );
}

#[test]
fn snapshot_markdown() {
    let (results, comparison) = fixture();
    check(&report::markdown::report(&results, &comparison), "report.md");
}

#[test]
fn snapshot_junit() {
    let (results, comparison) = fixture();
    let lenient = report::junit::report(&results, &comparison, false);
    check(&lenient, "junit.xml");
    // Strict also fails on the missing figure.
    let strict = report::junit::report(&results, &comparison, true);
    assert!(strict.contains("pool_log_peak_bytes") && !lenient.contains("pool_log_peak_bytes"), "{strict}");
}
