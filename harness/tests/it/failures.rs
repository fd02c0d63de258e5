//! Bad models, bad inputs and broken firmware end in clear errors that name
//! the model and the reason, never in numbers.

use std::time::Duration;

use harness::device::runner::{self, Ending, RunOptions};
use harness::run;
use harness::run::record::RunError;
use harness::run::results::Results;
use hilmem_protocol::exit;
use hilmem_protocol::scenario::SINGLE_FRAME;

use crate::support::*;

fn models_dir() -> std::path::PathBuf {
    ws().root().join("firmware/models")
}

/// Index of the first operator code's `builtin_code` byte in a TFLite model,
/// found by walking the flatbuffer tables (Model.operator_codes[0].builtin_code).
fn first_opcode_offset(model: &[u8]) -> usize {
    let u32_at = |at: usize| u32::from_le_bytes(model[at..at + 4].try_into().unwrap()) as usize;
    let i32_at = |at: usize| i32::from_le_bytes(model[at..at + 4].try_into().unwrap()) as isize;
    let u16_at = |at: usize| u16::from_le_bytes(model[at..at + 2].try_into().unwrap()) as usize;
    let field = |table: usize, index: usize| {
        let vtable = (table as isize - i32_at(table)) as usize;
        let offset = u16_at(vtable + 4 + 2 * index);
        assert_ne!(offset, 0, "field {index} absent");
        table + offset
    };
    let model_table = u32_at(0);
    let codes_field = field(model_table, 1);
    let codes = codes_field + u32_at(codes_field);
    let first_entry = codes + 4;
    let first_code = first_entry + u32_at(first_entry);
    field(first_code, 0)
}

#[test]
fn models_tflm_cannot_load_are_reported_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let hello = std::fs::read(models_dir().join("hello_world.tflite")).unwrap();

    // Right header, scrambled body.
    let mut corrupt = hello.clone();
    for (i, byte) in corrupt.iter_mut().enumerate().skip(8) {
        *byte = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
    }
    std::fs::write(dir.path().join("corrupt.tflite"), &corrupt).unwrap();
    // Cut in half.
    std::fs::write(dir.path().join("truncated.tflite"), &hello[..hello.len() / 2]).unwrap();
    // FULLY_CONNECTED (9) turned into SHAPE (77), which this TFLM lacks.
    let mut missing_op = hello.clone();
    let at = first_opcode_offset(&missing_op);
    assert_eq!(missing_op[at], 9, "hello_world's first operator is FULLY_CONNECTED");
    missing_op[at] = 77;
    std::fs::write(dir.path().join("missing_op.tflite"), &missing_op).unwrap();
    std::fs::copy(models_dir().join("hello_world.tflite"), dir.path().join("hello.tflite")).unwrap();

    let model = |name: &str, file: &str, arena: u32| {
        format!("[[model]]\nname = \"{name}\"\nfile = \"{file}\"\narena_bytes = {arena}\n[[model.input]]\nname = \"x\"\nvalues = [0.5]\n")
    };
    let toml = [
        model("corrupt", "corrupt.tflite", 2048),
        model("truncated", "truncated.tflite", 2048),
        model("missing_op", "missing_op.tflite", 2048),
        model("tiny_arena", "hello.tflite", 256),
    ]
    .concat();
    let results = hil_with_models(dir.path(), &toml);
    assert!(ran(&results).next().is_none(), "{:?}", results.records);
    let error = |name: &str| results.failed.iter().find(|f| f.model == name).unwrap().error.clone();

    // Refused before anything is built, by hilmem's own flatbuffer reader
    // and its table of the operators the bundled TFLM registers.
    for name in ["corrupt", "truncated"] {
        let e = error(name);
        assert!(e.contains(&format!("model `{name}`")) && e.contains("is not a TFLite flatbuffer ("), "{e}");
    }
    let e = error("missing_op");
    // hello_world's FULLY_CONNECTED is version 4; SHAPE keeps that version.
    assert!(e.contains("model `missing_op`") && e.contains("does not register SHAPE v4"), "{e}");
    // TFLM itself refuses an arena that is too small.
    let e = error("tiny_arena");
    assert!(e.contains("model `tiny_arena`") && e.contains("TFLM could not load the model"), "{e}");
}

#[test]
fn files_that_are_not_models_are_refused_before_building() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.tflite"), "this is not a model").unwrap();
    let toml = "[[model]]\nname = \"notes\"\nfile = \"notes.tflite\"\narena_bytes = 2048\n[[model.input]]\nname = \"x\"\nvalues = [0.5]\n";
    let results = hil_with_models(dir.path(), toml);
    let e = &results.failed[0].error;
    assert!(e.contains("model `notes`: ") && e.contains("not a TFLite flatbuffer"), "{e}");
}

#[test]
fn an_input_of_the_wrong_size_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[[model]]\nname = \"wide_input\"\nfile = \"{}\"\narena_bytes = 2048\n[[model.input]]\nname = \"two-values\"\nvalues = [0.5, 1.5]\n",
        models_dir().join("hello_world.tflite").display()
    );
    let results = hil_with_models(dir.path(), &toml);
    let e = &results.failed[0].error;
    // Refused when the model is read, before anything is built for it.
    assert!(
        e.contains("no image to run: model `wide_input`: input `two-values`: 8 bytes, but the input tensor `dense_2_input` (float32 [1, 1]) takes 4"),
        "{e}"
    );
}

#[test]
fn panics_faults_and_hangs_end_the_run_with_their_own_status() {
    let board = default_board();
    let model = model("hello_world");
    let (firmware, _) = build(&board, &model);
    let panic = run(&board, &model, &firmware, "selftest-panic", TIMEOUT);
    assert_eq!(panic.ending, Ending::Exited(exit::PANIC));
    assert!(panic.session.log.iter().any(|l| l.contains("panic: self-test panic at")), "{:?}", panic.session.log);

    let fault = run(&board, &model, &firmware, "selftest-hardfault", TIMEOUT);
    assert_eq!(fault.ending, Ending::Exited(exit::HARD_FAULT));
    assert!(fault.session.log.iter().any(|l| l.contains("hard fault at pc=")), "{:?}", fault.session.log);

    let unknown = run(&board, &model, &firmware, "no-such-scenario", TIMEOUT);
    assert_eq!(unknown.ending, Ending::Exited(exit::FAILED));
    assert_eq!(unknown.session.failure.as_ref().unwrap().detail, "unknown scenario `no-such-scenario`");
}

#[test]
fn a_silent_board_is_stopped_at_its_timeout_and_leaves_no_process() {
    let mut board = default_board();
    board.timeout = Duration::from_secs(3);
    let model = model("hello_world");
    let (firmware, sizes) = build(&board, &model);
    let started = std::time::Instant::now();
    let hang = run(&board, &model, &firmware, "selftest-hang", board.timeout);
    // At the limit of QEMU's own time: on a loaded machine later in wall
    // time, never sooner.
    assert!(started.elapsed() >= board.timeout);
    assert_eq!(hang.ending, Ending::TimedOut(board.timeout));
    let pid = hang.process.unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "QEMU (pid {pid}) is still there");

    let error = run::record::record(&board, &model, &firmware, sizes, "selftest-hang", &hang).unwrap_err().to_string();
    assert!(error.contains("board `qemu-m7`") && error.contains("no answer within 3 s"), "{error}");
    assert!(error.contains("expected the scenario's Metric frames"), "{error}");
    assert!(error.contains("last lines from the target"), "{error}");
}

#[test]
fn garbage_on_the_wire_is_an_error_quoting_the_line() {
    let board = default_board();
    let model = model("hello_world");
    let (firmware, sizes) = build(&board, &model);
    let garbage = run(&board, &model, &firmware, "selftest-garbage", TIMEOUT);
    let error = run::record::record(&board, &model, &firmware, sizes, "selftest-garbage", &garbage).unwrap_err();
    assert!(matches!(error, RunError::Wire { .. }), "{error}");
    let error = error.to_string();
    assert!(error.contains("corrupt frame on the wire") && error.contains("~hm2 00000301 00000000"), "{error}");
}

#[test]
fn a_fault_is_an_error_with_the_last_lines_not_a_measurement() {
    for board in [default_board(), board("host")] {
        let model = model("hello_world");
        let (firmware, sizes) = build(&board, &model);
        let fault = run(&board, &model, &firmware, "selftest-hardfault", TIMEOUT);
        let error =
            run::record::record(&board, &model, &firmware, sizes, SINGLE_FRAME, &fault).unwrap_err().to_string();
        assert!(error.contains("model `hello_world`") && error.contains(&format!("board `{}`", board.name)), "{error}");
        let how = if board.name == "host" { "the target died: signal: 11" } else { "HardFault" };
        assert!(error.contains(how), "{error}");
        assert!(error.contains("last lines from the target"), "{error}");
    }
}

#[test]
fn an_image_built_for_another_board_is_not_deployed() {
    let m7 = default_board();
    let m4 = board("qemu-m4");
    let model = model("hello_world");
    let (firmware, _) = build(&m7, &model);
    let err = run::execute(&m4, &model.spec, &firmware, SINGLE_FRAME, 0, TIMEOUT, &RunOptions::default(), &|_| {})
        .unwrap_err();
    assert!(matches!(err, RunError::WrongImage { .. }), "{err}");
    assert!(err.to_string().contains("built as `hilmem board=qemu-m7 model=hello_world`"), "{err}");

    // Deployed anyway (straight through the runner), the firmware itself
    // sees the wrong CPU and refuses.
    let mut target = runner::start(&m4, &firmware.elf, &RunOptions::default(), None).unwrap();
    let run = runner::drive(target.as_mut(), SINGLE_FRAME, 0, TIMEOUT, &RunOptions::default(), &|_| {}).unwrap();
    let failure = run.session.failure.unwrap();
    assert_eq!(failure.stage, "board");
    assert!(
        failure.detail.contains("built for board `qemu-m7` (CPUID part 0xc27), running on part 0xc24"),
        "{failure:?}"
    );
    assert!(run.session.metrics.is_empty());
}

/// hello_world's single frame on QEMU behind a noisy link (each byte the
/// firmware sends dropped, flipped or doubled). At 1% a run carries about
/// 14 damaged bytes: with each frame sent once, every one of 8 runs fails on
/// the way (a corrupt frame, a frame lost, or frames lost although the
/// firmware finished), and none yields a figure. With retries, at 0.1% with
/// frames sent once and at 1% with 8 copies of each frame, every run
/// finishes with exactly the clean run's figures and says how many tries it
/// took.
#[test]
fn a_noisy_link_never_yields_a_wrong_figure_and_retries_finish_the_run() {
    use harness::device::runner::noise::Noise;
    use harness::run::TRIES;
    let mut options = hello_world_in(SINGLE_FRAME);
    let single_frame = |results: Results| results.records.into_iter().find(|r| r.scenario == SINGLE_FRAME);
    let clean = single_frame(run::run(&ws(), &options, &|_| {}).unwrap()).expect("the clean run's record");
    // Every run below builds: it takes the image made above without cargo,
    // and runs it, never the last one another test built under the name.
    options.timeout = Some(Duration::from_secs(10));
    for seed in 1..=8 {
        options.run.noise = Some(Noise { per_million: 10_000, seed });
        let results = run::run(&ws(), &options, &|_| {}).unwrap();
        assert!(ran(&results).next().is_none(), "seed {seed}: a record over a 1% link: {:?}", results.records);
        let error = &results.failed[0].error;
        assert!(
            ["corrupt frame on the wire", "was lost on the link", "the link lost it"].iter().any(|e| error.contains(e)),
            "seed {seed}: {error}"
        );
    }
    options.retries = 30;
    for (per_million, copies) in [(1_000, 1), (10_000, 8)] {
        options.run.copies = copies;
        let mut tries = Vec::new();
        for seed in 1..=4 {
            options.run.noise = Some(Noise { per_million, seed });
            let results = run::run(&ws(), &options, &|_| {}).unwrap();
            assert!(results.failed.is_empty(), "{per_million} ppm, seed {seed}: {:?}", results.failed);
            let record = single_frame(results).expect("the record of the run");
            assert_eq!(record.metrics, clean.metrics, "{per_million} ppm, seed {seed}");
            assert!(record.passed(), "{per_million} ppm, seed {seed}: {:?}", record.checks);
            let note = record.notes.get(TRIES);
            let took = note.map_or(1, |n| n.split(' ').next().unwrap().parse().unwrap());
            eprintln!("{per_million} ppm, seed {seed}: {}", note.map_or("1 try", |n| n.as_str()));
            tries.push(took);
        }
        eprintln!("tries at {per_million} ppm, copies of each frame {copies}: {tries:?}");
    }
}

/// A TFLM tree whose library does not compile ends the build with an error
/// that names the tree, the step and the source that failed, not with a
/// panic of the build script.
#[test]
fn a_tree_that_does_not_compile_is_an_error_naming_the_tree_the_step_and_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let bundled = harness::tflm::tree::bundled_root().unwrap();
    let copied = std::process::Command::new("cp").arg("-R").arg(bundled.join("tensorflow")).arg(dir.path()).status();
    assert!(copied.unwrap().success());
    let kernel = dir.path().join("tensorflow/lite/micro/kernels/fully_connected.cc");
    let mut text = std::fs::read_to_string(&kernel).unwrap();
    text.push_str("\n#error a kernel that does not compile\n");
    std::fs::write(&kernel, text).unwrap();

    let mut options = hello_world_in(SINGLE_FRAME);
    options.boards = vec![board("host")];
    options.tflm = Some(dir.path().display().to_string());
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(!results.failed.is_empty() && results.records.iter().all(|r| r.scenario != SINGLE_FRAME));
    for failed in &results.failed {
        let error = &failed.error;
        // The build script's error leads, its tree first.
        assert!(error.contains(&format!("failed: {}: compiling", dir.path().display())), "{error}");
        assert!(error.contains("of its library failed") && error.contains("fully_connected.cc"), "{error}");
        assert!(!error.contains("panicked"), "{error}");
    }
}
