//! The reference firmware on the emulated boards and on the host: figures
//! that agree with TFLM's own and across boards, right answers, and the same
//! numbers every time.

use harness::config::board::Layout;
use harness::config::board::DEFAULT_BOARD;
use harness::config::models::Model;
use harness::config::runtime::Runtime;
use harness::device::runner::{self, Ending, Next, Run, RunOptions};
use harness::device::session::Session;
use harness::image::firmware::{self, Variant};
use harness::run;
use harness::run::measurement::Measurement;
use harness::tflm::tree::Generation;
use hilmem_protocol::metric;
use hilmem_protocol::scenario::SINGLE_FRAME;
use hilmem_protocol::Frame;
use object::{Object, ObjectSection, ObjectSymbol};

use crate::support::*;

/// The figures of a run agree with what TFLM printed and with the board.
fn assert_consistent(record: &Measurement, run: &Run, stack_budget: i64) {
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
    assert!(stack > 0 && stack < stack_budget, "stack peak {stack} of a {stack_budget} byte stack");
    assert!(m[metric::HEAP_PEAK_BYTES] > 0);
    assert!(record.passed(), "{:?}", record.checks);
}

fn stack_budget(board: &harness::config::board::Board) -> i64 {
    match board.layout {
        Layout::BareMetal(m) => m.stack_bytes as i64,
        Layout::Process { stack_bytes } => stack_bytes as i64,
    }
}

fn class_of(run: &Run, input: &str) -> u32 {
    run.session.outputs.iter().find(|o| o.input == input).unwrap_or_else(|| panic!("no output for {input}")).class
}

/// An image made from the same inputs as one before is that image, without
/// cargo (which prints at least its `Finished` line when it runs): after
/// hello_world with a larger arena was built in the same target directory,
/// hello_world as before takes the first image, byte for byte. (Under a
/// name of its own: the image under hello_world's name is what the other
/// tests' runs without a build take.)
#[test]
fn an_image_is_not_built_again_from_the_same_inputs() {
    let board = default_board();
    let mut model = model("hello_world");
    model.spec.name = "hello-reuse".into();
    let runtime = Runtime::bundled();
    let build = |model: &Model| {
        let mut cargo_said = Vec::new();
        let firmware = firmware::build(&ws(), &board, model, &runtime, Variant::Standard, &mut |line| {
            cargo_said.push(line.to_owned())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        (firmware.elf, cargo_said)
    };
    let (first, _) = build(&model);
    let arena = model.arena_bytes(&board, runtime.generation()).unwrap();
    let (larger, _) = build(&model.with_arena(arena + 1024, None));
    assert_ne!(larger, first, "another arena is another image");
    let (again, cargo_said) = build(&model);
    assert_eq!(again, first);
    assert!(cargo_said.is_empty(), "cargo ran: {cargo_said:?}");
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&first).unwrap());
}

#[test]
fn hello_world_figures_match_tflm() {
    let board = default_board();
    let (record, run) = measure(&board, "hello_world", SINGLE_FRAME);
    assert_consistent(&record, &run, stack_budget(&board));
    assert_eq!(run.session.hello.as_ref().unwrap().stack_size as i64, stack_budget(&board));
    let sine = run.session.outputs.iter().find(|o| o.input == "x-half-pi").unwrap().value;
    assert!((sine - 1.0).abs() < 0.1, "sin(pi/2) came out as {sine}");
}

#[test]
fn person_detection_tells_person_from_no_person() {
    let board = default_board();
    let (record, run) = measure(&board, "person_detection", SINGLE_FRAME);
    assert_consistent(&record, &run, stack_budget(&board));
    // Output classes of the person model: 0 unused, 1 person, 2 no person.
    assert_eq!(class_of(&run, "person"), 1);
    assert_eq!(class_of(&run, "no-person"), 2);
    assert_eq!(record.checks.len(), 2);
}

#[test]
fn micro_speech_and_magic_wand_answer_right() {
    let board = default_board();
    for (name, expected) in [("micro_speech", [("yes", 2), ("no", 3)]), ("magic_wand", [("ring", 1), ("slope", 2)])] {
        let (record, run) = measure(&board, name, SINGLE_FRAME);
        assert_consistent(&record, &run, stack_budget(&board));
        for (input, class) in expected {
            assert_eq!(class_of(&run, input), class, "{name}/{input}");
        }
    }
}

#[test]
fn arena_figures_agree_across_the_32_bit_emulated_boards() {
    let arena = |board: &str| {
        let board = super::support::board(board);
        let (record, run) = measure(&board, "person_detection", SINGLE_FRAME);
        assert_consistent(&record, &run, stack_budget(&board));
        assert_eq!((class_of(&run, "person"), class_of(&run, "no-person")), (1, 2), "{}", board.name);
        let keys = [
            metric::ARENA_USED_BYTES,
            metric::ARENA_HEAD_BYTES,
            metric::ARENA_TAIL_BYTES,
            metric::ARENA_TOUCHED_BYTES,
            metric::ARENA_CAPACITY_BYTES,
        ];
        keys.map(|k| record.metrics[k])
    };
    let m7 = arena("qemu-m7");
    for board in ["qemu-m4", "qemu-m3", "qemu-m55"] {
        assert_eq!(arena(board), m7, "{board} against qemu-m7");
    }
}

#[test]
fn the_host_board_runs_the_same_logic_and_reports_its_rss() {
    let board = board("host");
    let (record, run) = measure(&board, "person_detection", SINGLE_FRAME);
    assert_consistent(&record, &run, stack_budget(&board));
    assert_eq!((class_of(&run, "person"), class_of(&run, "no-person")), (1, 2));
    assert!(record.metrics[metric::RSS_PEAK_BYTES] > 0);
    assert!(!record.metrics.contains_key(metric::FLASH_BYTES), "a host program has no flash");
    // 64-bit pointers: TFLM needs more arena than on the 32-bit boards.
    let (m7, _) = measure(&default_board(), "person_detection", SINGLE_FRAME);
    assert!(record.metrics[metric::ARENA_USED_BYTES] > m7.metrics[metric::ARENA_USED_BYTES]);
}

#[test]
fn the_pty_transport_gives_the_same_record_as_stdio() {
    let stdio = default_board();
    let mut pty = stdio.clone();
    pty.transport = harness::config::board::Transport::Pty;
    let (through_stdio, _) = measure(&stdio, "hello_world", SINGLE_FRAME);
    let (through_pty, run) = measure(&pty, "hello_world", SINGLE_FRAME);
    assert_eq!(through_pty, through_stdio);
    assert!(run.session.log.iter().any(|l| l.starts_with("Total buffer usage")));
}

/// A harness slow to read must not lose the end of a run: the command goes out
/// at once, nothing is read until QEMU has exited, and then the whole run,
/// to its `Done`, is still there to read, and then the end of the stream.
#[test]
fn a_pty_read_only_after_qemu_exited_still_gets_the_whole_run() {
    let mut board = default_board();
    board.transport = harness::config::board::Transport::Pty;
    let model = model("hello_world");
    let (firmware, _) = build(&board, &model);
    let mut target = runner::start(&board, &firmware.elf, &RunOptions::default(), None).unwrap();
    // QEMU's UART is the pty (not its stdio, which a fallback would use).
    let pid = target.process().expect("QEMU's process");
    // (Empty while the process is still being exec'd.)
    let started = std::time::Instant::now();
    let cmdline = loop {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        if !cmdline.is_empty() || started.elapsed() > TIMEOUT {
            break cmdline;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let args: Vec<String> = cmdline.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    let serial = args.iter().position(|a| a == "-serial").and_then(|i| args.get(i + 1));
    assert!(serial.is_some_and(|s| s.starts_with("/dev/pts/")), "QEMU's serial: {args:?}");
    let mut command = Vec::new();
    Frame::Run { scenario: SINGLE_FRAME, frames: 1, copies: 1 }
        .write_lines(0, 1, |b| command.extend_from_slice(b))
        .unwrap();
    target.send(&command).unwrap();
    let started = std::time::Instant::now();
    let ending = loop {
        if let Some(ending) = target.ended().unwrap() {
            break ending;
        }
        assert!(started.elapsed() < TIMEOUT, "QEMU did not exit");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Read to the end of the stream: it closes after the last line.
    let mut session = Session::default();
    while let Next::Line(line) = target.next(TIMEOUT).unwrap() {
        session.feed(&line);
    }
    assert_eq!(target.next(TIMEOUT).unwrap(), Next::Closed);
    target.stop();
    assert_eq!(ending, Ending::Exited(0));
    assert!(session.corrupt.is_empty(), "{:?}", session.corrupt);
    assert!(session.hello.is_some() && session.done == Some(true), "{:#?}", session.log);
    assert!(session.metrics.contains_key(metric::ARENA_USED_BYTES));
}

#[test]
fn figures_are_deterministic_on_the_emulated_board() {
    let board = default_board();
    let model = model("magic_wand");
    let (firmware, sizes) = build(&board, &model);
    let runs: Vec<Measurement> = (0..2)
        .map(|_| {
            let run = run(&board, &model, &firmware, SINGLE_FRAME, TIMEOUT);
            run::record::record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run).unwrap()
        })
        .collect();
    assert_eq!(runs[0].metrics, runs[1].metrics);
}

#[test]
fn the_stack_figure_is_the_scenarios_own() {
    // The self-test runs the single frame and also says in a note what the
    // stack reached once the report was formatted. The figure, read before
    // the report, is the same as the single frame's; on the Cortex-M7 the
    // report of hello_world reaches deeper than the scenario, and the figure
    // leaves it out: it holds the scenario, not the cost of reporting it.
    for board in [default_board(), board("host")] {
        let model = model("hello_world");
        let (firmware, sizes) = build(&board, &model);
        let single = run(&board, &model, &firmware, SINGLE_FRAME, TIMEOUT);
        let single = run::record::record(&board, &model, &firmware, sizes, SINGLE_FRAME, &single).unwrap();
        let probe = run(&board, &model, &firmware, "selftest-stack-report", TIMEOUT).session;
        let figure = probe.metrics[metric::STACK_PEAK_BYTES];
        let after: i64 = probe.notes["stack_after_report_bytes"].parse().unwrap();
        assert_eq!(figure, single.metrics[metric::STACK_PEAK_BYTES], "{}: the same scenario", board.name);
        if board.name == DEFAULT_BOARD {
            assert!(after > figure, "{}: the report reached {after} bytes, the scenario {figure}", board.name);
        }
    }
}

#[test]
fn image_sizes_agree_with_the_section_table() {
    let board = default_board();
    let (firmware, sizes) = build(&board, &model("person_detection"));
    let data = std::fs::read(&firmware.elf).unwrap();
    let elf = object::File::parse(&*data).unwrap();
    let size = |name: &str| elf.section_by_name(name).map_or(0, |s| s.size());
    let flash = size(".vector_table") + size(".text") + size(".rodata") + size(".data");
    assert_eq!(sizes.flash_bytes, Some(flash));
    let ram = size(".data") + size(".bss") + size(".uninit") + size(".hilmem_arena");
    assert_eq!(sizes.static_ram_bytes + sizes.arena_capacity_bytes, ram);
    assert_eq!(
        sizes.arena_capacity_bytes,
        u64::from(model("person_detection").arena_bytes(&board, Generation::Tfmicro2020).unwrap())
    );
    // The pool's store is static RAM, in whole cache lines.
    let pool = elf.symbols().find(|s| s.name() == Ok("HILMEM_POOL")).unwrap();
    assert_eq!(sizes.pool_capacity_bytes, pool.size());
    assert!(pool.size() % 32 == 0 && pool.size() < sizes.static_ram_bytes, "{sizes:?}");
    // The model flatbuffer is in flash, whole.
    assert!(sizes.flash_bytes.unwrap() > firmware.model_bytes);
}

/// Two builds of one model from different specifications (another run in
/// this checkout, with a models file of its own): a run deploys the image
/// its own build linked, not the one built last under the model's name.
#[test]
fn a_run_deploys_its_own_build_not_the_last_one_of_its_model() {
    let board = default_board();
    let both = model("hello_world");
    let mut first_only = both.clone();
    first_only.spec.inputs.truncate(1);
    first_only.inputs.truncate(1);
    assert!(both.spec.inputs.len() > 1);
    let (own, _) = build(&board, &both);
    build(&board, &first_only);
    let run = run(&board, &both, &own, SINGLE_FRAME, TIMEOUT);
    let answered: Vec<&str> = run.session.outputs.iter().map(|o| o.input.as_str()).collect();
    let inputs: Vec<&str> = both.spec.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(answered, inputs, "{}", run.diagnostics);
}
