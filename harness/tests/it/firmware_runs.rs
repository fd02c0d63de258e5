//! The reference firmware on the emulated Cortex-M7: figures that agree with
//! TFLM's own, right answers, and the same numbers every time.

use harness::hil;
use harness::measurement::{metric, Measurement, SINGLE_FRAME};
use harness::qemu::Run;
use object::{Object, ObjectSection};

use crate::support::*;

fn single_frame(name: &str) -> (Measurement, Run) {
    let model = model(name);
    let (firmware, sizes) = build(&model);
    let run = run(&firmware, SINGLE_FRAME, TIMEOUT);
    let record = hil::record(&board(), &model, &firmware, sizes, SINGLE_FRAME, &run).unwrap_or_else(|e| panic!("{e}"));
    (record, run)
}

/// The figures of a run agree with what TFLM printed and with the board.
fn assert_consistent(record: &Measurement, run: &Run) {
    let m = &record.metrics;
    let total = printed_by_tflm(run, "Total buffer usage: ");
    let head = printed_by_tflm(run, "Head usage: ");
    let tail = printed_by_tflm(run, "Tail usage: ");
    assert_eq!(m[metric::ARENA_USED_BYTES], total, "arena_used_bytes vs TFLM's own report");
    assert_eq!(head + tail, total);
    assert_eq!((m[metric::ARENA_HEAD_BYTES], m[metric::ARENA_TAIL_BYTES]), (head, tail));

    let touched = m[metric::ARENA_TOUCHED_BYTES];
    assert!(touched >= head, "touched {touched} < head {head}");
    assert!(touched <= m[metric::ARENA_CAPACITY_BYTES], "touched {touched} beyond the arena");

    let stack = m[metric::STACK_PEAK_BYTES];
    let budget = board().memory.stack_bytes as i64;
    assert!(stack > 0 && stack < budget, "stack peak {stack} of a {budget} byte stack");
    assert_eq!(run.session.hello.as_ref().unwrap().stack_size as i64, budget);
    assert!(m[metric::HEAP_PEAK_BYTES] > 0);
    assert!(record.passed(), "{:?}", record.checks);
}

fn class_of(run: &Run, input: &str) -> u32 {
    run.session.outputs.iter().find(|o| o.input == input).unwrap_or_else(|| panic!("no output for {input}")).class
}

#[test]
fn hello_world_figures_match_tflm() {
    let (record, run) = single_frame("hello_world");
    assert_consistent(&record, &run);
    let sine = run.session.outputs.iter().find(|o| o.input == "x-half-pi").unwrap().value;
    assert!((sine - 1.0).abs() < 0.1, "sin(pi/2) came out as {sine}");
}

#[test]
fn person_detection_tells_person_from_no_person() {
    let (record, run) = single_frame("person_detection");
    assert_consistent(&record, &run);
    // Output classes of the person model: 0 unused, 1 person, 2 no person.
    assert_eq!(class_of(&run, "person"), 1);
    assert_eq!(class_of(&run, "no-person"), 2);
    assert_eq!(record.checks.len(), 2);
}

#[test]
fn micro_speech_and_magic_wand_answer_right() {
    for (name, expected) in [("micro_speech", [("yes", 2), ("no", 3)]), ("magic_wand", [("ring", 1), ("slope", 2)])] {
        let (record, run) = single_frame(name);
        assert_consistent(&record, &run);
        for (input, class) in expected {
            assert_eq!(class_of(&run, input), class, "{name}/{input}");
        }
    }
}

#[test]
fn figures_are_deterministic_on_the_emulated_board() {
    let model = model("magic_wand");
    let (firmware, sizes) = build(&model);
    let runs: Vec<Measurement> = (0..2)
        .map(|_| {
            let run = run(&firmware, SINGLE_FRAME, TIMEOUT);
            hil::record(&board(), &model, &firmware, sizes, SINGLE_FRAME, &run).unwrap()
        })
        .collect();
    assert_eq!(runs[0].metrics, runs[1].metrics);
}

#[test]
fn image_sizes_agree_with_the_section_table() {
    let (firmware, sizes) = build(&model("person_detection"));
    let data = std::fs::read(&firmware.elf).unwrap();
    let elf = object::File::parse(&*data).unwrap();
    let size = |name: &str| elf.section_by_name(name).map_or(0, |s| s.size());
    let flash = size(".vector_table") + size(".text") + size(".rodata") + size(".data");
    assert_eq!(sizes.flash_bytes, flash);
    assert_eq!(sizes.static_ram_bytes + sizes.arena_capacity_bytes, size(".data") + size(".bss") + size(".uninit"));
    assert_eq!(sizes.arena_capacity_bytes, u64::from(model("person_detection").arena_bytes));
    // The model flatbuffer is in flash, whole.
    assert!(sizes.flash_bytes > firmware.model_bytes);
}
