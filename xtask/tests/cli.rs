//! The command line as a user meets it: exit codes and messages of
//! `cargo xtask hil`.

use std::path::Path;
use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn models_file(dir: &Path, body: &str) -> String {
    let file = dir.join("hil.toml");
    std::fs::write(&file, body).unwrap();
    file.to_str().unwrap().to_owned()
}

/// A run's own output directory under `dir`: tests that run at once never
/// share one (the second would be refused, as two runs are).
fn out_dir(dir: &Path) -> String {
    dir.join("out").to_str().unwrap().to_owned()
}

fn hello_world() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/models/hello_world.tflite").display().to_string()
}

#[test]
fn a_clean_run_exits_0_with_json_on_stdout() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = xtask(&["hil", "--model", "hello_world", "--format", "json", "--out", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let records = json["records"].as_array().unwrap();
    assert_eq!(records[0]["scenario"], "build", "the image's own record comes first");
    let record = &records[1];
    assert_eq!(record["model"], "hello_world");
    assert_eq!(record["board"], "qemu-m7");
    assert!(record["metrics"]["arena_used_bytes"].as_i64().unwrap() > 0);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(saved, json);
}

/// `--frame-copies` reaches the firmware: over a link that damages 1% of the
/// bytes, hello_world's single frame with 8 copies of each frame finishes
/// with `--retries`, figures equal to the baselines (exit 0) and its tries
/// in the record; with each frame sent once, no try of the same link gets
/// through (exit 2).
#[test]
fn frame_copies_carry_a_run_over_a_noisy_link() {
    let run = |copies: &str| {
        let results = tempfile::tempdir().unwrap();
        let dir = results.path().to_str().unwrap();
        let noisy = ["--link-noise", "0.01", "--retries", "30", "--frame-copies", copies, "--format", "json"];
        let out = xtask(
            &[&["hil", "--model", "hello_world", "--scenario", "single-frame", "--out", dir], &noisy[..]].concat(),
        );
        (out.status.code(), text(&out), serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap())
    };
    let (status, said, json) = run("8");
    assert_eq!(status, Some(0), "{said}");
    let tries = json["records"][1]["notes"]["tries"].as_str().unwrap_or("1 try");
    assert!(tries.ends_with("try") || tries.contains(" tries; retried after: "), "{tries}");
    let (status, said, json) = run("1");
    assert_eq!(status, Some(2), "{said}");
    assert_eq!(json["records"].as_array().unwrap().len(), 1, "only the build record: {json}");
    assert!(said.contains("(after 31 tries)"), "{said}");
}

#[test]
fn a_wrong_answer_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = models_file(
        dir.path(),
        &format!("[[model]]\nname = \"hello_wrong\"\nfile = \"{}\"\narena_bytes = 2048\n[[model.input]]\nname = \"x-half-pi\"\nvalues = [1.5707964]\nexpect_value = -1.0\ntolerance = 0.1\n", hello_world()),
    );
    let out = xtask(&["hil", "--config", &file, "--out", &out_dir(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("FAIL 0/1: output for x-half-pi: value"), "{}", text(&out));
}

#[test]
fn a_model_tflm_cannot_load_exits_2_naming_model_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = models_file(
        dir.path(),
        &format!("[[model]]\nname = \"hello_small\"\nfile = \"{}\"\narena_bytes = 256\n[[model.input]]\nname = \"x\"\nvalues = [0.5]\n", hello_world()),
    );
    let out = xtask(&["hil", "--config", &file, "--out", &out_dir(dir.path())]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let text = text(&out);
    assert!(text.contains("model `hello_small`") && text.contains("Failed to allocate memory"), "{text}");
}

#[test]
fn a_firmware_that_claims_a_linker_figure_or_allocates_exits_2_naming_why() {
    let results = tempfile::tempdir().unwrap();
    let dir = results.path().to_str().unwrap();
    let out = xtask(&[
        "hil",
        "--model",
        "hello_world",
        "--scenario",
        "selftest-linker-figure",
        "--scenario",
        "selftest-operator-new",
        "--out",
        dir,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let text = text(&out);
    assert!(
        text.contains("scenario `selftest-linker-figure`")
            && text.contains("the firmware reported `flash_bytes` (~hm2 ")
            && text.contains("never from the firmware"),
        "{text}"
    );
    assert!(
        text.contains("scenario `selftest-operator-new`")
            && text.contains("the firmware panicked")
            && text.contains("C++ runtime: operator new"),
        "{text}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("results.json")).unwrap()).unwrap();
    let records = saved["records"].as_array().unwrap();
    assert!(records.iter().all(|r| r["scenario"] == "build"), "only the image's own record: {saved}");
}

#[test]
fn configuration_errors_exit_2_and_name_the_culprit() {
    let out = xtask(&["hil", "--board", "no-such-board"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no board profile `no-such-board`"), "{}", text(&out));

    let out = xtask(&["hil", "--model", "no_such_model"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no model `no_such_model`"), "{}", text(&out));

    let dir = tempfile::tempdir().unwrap();
    let file = models_file(dir.path(), "[[model]]\nname = \"m\"\nfile = \"m.tflite\"\narena = 5\n");
    let out = xtask(&["hil", "--config", &file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("hil.toml") && text(&out).contains("unknown field `arena`"), "{}", text(&out));
}

#[test]
fn a_machine_without_the_toolchain_is_told_what_to_install() {
    // No tools at all: an empty PATH (xtask itself is started by its path).
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).arg("doctor").env("PATH", empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let text = text(&out);
    assert!(text.contains("missing  arm-none-eabi-gcc (Debian package gcc-arm-none-eabi)"), "{text}");
    assert!(text.contains("missing  Rust target thumbv7em-none-eabihf"), "{text}");
    assert!(text.contains("missing  a C++ compiler for the host board (Debian package g++)"), "{text}");
    assert!(text.contains("missing  Rust target thumbv8m.main-none-eabihf"), "{text}");
    assert!(
        text.contains(
            "sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm"
        ),
        "{text}"
    );
    let rustup = text.lines().find_map(|l| l.split("rustup target add ").nth(1)).unwrap_or_else(|| panic!("{text}"));
    for target in ["thumbv6m-none-eabi", "thumbv7m-none-eabi", "thumbv7em-none-eabihf", "thumbv8m.main-none-eabihf"] {
        assert!(rustup.contains(target), "{target} not in `rustup target add {rustup}`");
    }
    assert!(!text.contains("x86_64-unknown-linux-gnu"), "{text}");
}

#[test]
fn the_tflm_tree_can_be_overridden() {
    let empty = tempfile::tempdir().unwrap();
    let out = xtask_with_env(&["hil", "--model", "hello_world"], "HILMEM_TFLM_DIR", empty.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is not a TFLM tree: it has no tensorflow/lite/micro/"), "{}", text(&out));

    // The same tree the default build uses, named explicitly.
    let out = xtask_with_env(
        &["hil", "--model", "hello_world", "--out", &out_dir(empty.path())],
        "HILMEM_TFLM_DIR",
        &bundled_tree(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// The TFLM tree the default build uses: the `tfmicro` archive cargo has
/// unpacked.
fn bundled_tree() -> std::path::PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(&std::env::var_os("HOME").unwrap()).join(".cargo"));
    std::fs::read_dir(cargo_home.join("registry/src"))
        .unwrap()
        .map(|e| e.unwrap().path().join("tfmicro-0.1.0/submodules/tensorflow"))
        .find(|p| p.is_dir())
        .expect("cargo has unpacked the tfmicro archive")
}

fn xtask_with_env(args: &[&str], key: &str, value: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).env(key, value).output().unwrap()
}

#[test]
fn boards_lists_every_profile_and_what_is_attached() {
    let out = xtask(&["boards"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let text = text(&out);
    for board in ["qemu-m7", "qemu-m4", "qemu-m3", "qemu-m55", "host", "nucleo-h743", "nrf52840-dk", "rp-pico"] {
        assert!(text.contains(board), "{board} missing from:\n{text}");
    }
    assert!(text.contains("probe-rs STM32H743ZITx") && text.contains("qemu mps3-an547"), "{text}");
    assert!(text.contains("debug probes attached:") && text.contains("serial ports:"), "{text}");
    // The profiles alone (what the book shows) are the same table.
    let profiles = xtask(&["boards", "--profiles"]);
    assert_eq!(profiles.status.code(), Some(0), "{}", self::text(&profiles));
    let table = String::from_utf8_lossy(&profiles.stdout);
    assert!(text.starts_with(table.as_ref()) && !table.contains("serial ports"), "{table}");
}

#[test]
fn analyze_shows_the_plan_the_fit_and_refuses_a_file_that_is_no_model() {
    let out = xtask(&["analyze", "person_detection"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let text = text(&out);
    assert!(text.contains("TFLM's greedy plan:  55296 bytes (185744 bytes, 77.1% less than linear)"), "{text}");
    assert!(text.contains("DEPTHWISE_CONV_2D v1") && text.contains("uint8"), "{text}");

    let out = xtask(&["analyze", "hello_world", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((json["linear_bytes"].as_u64(), json["greedy_bytes"].as_u64()), (Some(96), Some(48)));
    assert_eq!(json["planned"].as_array().unwrap().len(), 6);
    // hilmem's plan reaches the lower bound greedy misses.
    assert_eq!((json["hilmem_bytes"].as_u64(), json["lower_bound_bytes"].as_u64()), (Some(32), Some(32)));
    // The predictions have the names a record gives the same figures.
    use hilmem_protocol::metric;
    assert_eq!(
        (json[metric::PREDICTED_ARENA_BYTES].as_u64(), json[metric::PREDICTED_LEAST_ARENA_BYTES].as_u64()),
        (Some(1472), Some(1888))
    );
    // The bundled TFLM has no other planner: exit 2, saying so.
    let out = xtask(&["analyze", "hello_world", "--planner", "linear"]);
    assert_eq!(out.status.code(), Some(2), "{}", self::text(&out));
    assert!(self::text(&out).contains("the 2020 TFLM has no linear planner"), "{}", self::text(&out));

    // With a board: the suggestion against its budget; exit 1 when it does not fit.
    let out = xtask(&["analyze", "hello_world", "--board", "nucleo-h743"]);
    assert_eq!(out.status.code(), Some(0), "{}", self::text(&out));
    assert!(
        self::text(&out).contains("on nucleo-h743: suggested arena 2272 bytes (least 1888 + 20%"),
        "{}",
        self::text(&out)
    );
    let out = xtask(&["analyze", "person_detection", "--board", "qemu-m7", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", self::text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["fit"]["suggested_arena_bytes"].as_u64(), Some(106_112));
    assert_eq!(json["tail_bytes"].as_u64(), Some(33_120));
    let out = xtask(&["analyze", "hello_world", "--board", "host"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(self::text(&out).contains("board `host` runs x86_64"), "{}", self::text(&out));

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.tflite");
    std::fs::write(&junk, b"not a model at all").unwrap();
    let out = xtask(&["analyze", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(self::text(&out).contains("is not a TFLite flatbuffer"), "{}", self::text(&out));
}

/// The example model that needs an operator the bundled TFLM lacks.
fn wave_shape() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/models/current/wave_shape.tflite").display().to_string()
}

/// `analyze` checks a model's operators against the TFLM `hil` would use,
/// or the one `--tflm` names: the bundled one lacks what wave_shape needs.
#[test]
fn analyze_checks_the_operators_against_the_chosen_tflm() {
    let wave_shape = wave_shape();
    for args in [vec!["analyze", &wave_shape], vec!["analyze", &wave_shape, "--tflm", "bundled"]] {
        let out = xtask(&args);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains(
                "the bundled TFLM (tfmicro 0.1.0 (TensorFlow 33689c48ad, May 2020)) does not register: MEAN v2"
            ),
            "{}",
            text(&out)
        );
    }
}

/// The tests that need a current TFLM checkout (`HILMEM_TEST_TFLM`, as for
/// the harness's tests, whose `current_tflm` module this one mirrors).
mod current_tflm {
    use super::*;

    /// A current checkout has what wave_shape needs, and the prediction
    /// then says what of it applies.
    #[test]
    fn analyze_predicts_for_a_checkout_that_has_the_operators() {
        let checkout = std::env::var("HILMEM_TEST_TFLM")
            .expect("HILMEM_TEST_TFLM is not set: this test needs a tflite-micro checkout with its downloads");
        let out = xtask(&["analyze", &wave_shape(), "--tflm", &checkout, "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["unsupported"].as_array().map(Vec::len), Some(0));
        // Predicted for the current TFLM, the arena used and the least arena
        // (the board runs check both figures).
        assert_eq!(
            (
                json["tflm"].as_str(),
                json["predicted_arena_bytes"].as_u64(),
                json["predicted_least_arena_bytes"].as_u64()
            ),
            (Some("current"), Some(3140), Some(3152)),
            "{json}"
        );
        assert_eq!(json["caveats"].as_array().map(Vec::len), Some(0), "{json}");
    }
}

/// `analyze SET` shows a resident set model by model: on the bundled TFLM
/// the separate arenas (each model's predicted arena, summed) and no
/// sharing, which only today's TFLM can do.
#[test]
fn analyze_shows_a_set_model_by_model() {
    let dir = tempfile::tempdir().unwrap();
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/models");
    let config = dir.path().join("hil.toml");
    let model = |name: &str, input: &str| {
        format!(
            "[[model]]\nname = \"{name}\"\nfile = \"{}\"\narena_bytes = 65536\n[[model.input]]\nname = \"x\"\n{input}\n",
            models.join(format!("{name}.tflite")).display()
        )
    };
    let ring = models.join("ring_micro_f9643d42_nohash_4.data");
    let toml = model("magic_wand", &format!("file = \"{}\"\nformat = \"f32-be\"", ring.display()))
        + &model("hello_world", "values = [0.5]")
        + "[[set]]\nname = \"pair\"\nmodels = [\"magic_wand\", \"hello_world\"]\narena = \"separate\"\n";
    std::fs::write(&config, toml).unwrap();
    let out = xtask(&["analyze", "pair", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let text = text(&out);
    for row in [
        "│ magic_wand  │                  15664 │                       - │",
        "│ set         │                  17136 │                       - │",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    assert!(text.contains("only today's TFLM can share an arena"), "{text}");
}

/// A scenario that nothing selected runs (the multi-model scenario with no
/// `[[set]]` in the models file) is exit 2 before anything is built.
#[test]
fn a_scenario_nothing_runs_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = xtask(&["hil", "--scenario", "multi-model", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("nothing to run: no model or set of") && text(&out).contains("runs multi-model"),
        "{}",
        text(&out)
    );
    assert!(!dir.path().join("results.json").exists());
}

/// Two runs never write into one output directory at once: while another
/// holds its lock, a run with the same --out is refused (exit 2) before it
/// builds or writes anything; with its own --out it would proceed.
#[test]
fn a_run_into_an_output_directory_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let held = harness::fsutil::Lock::try_take(&dir.path().join(".hilmem.lock")).unwrap().unwrap();
    let out = xtask(&["hil", "--model", "hello_world", "--no-build", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("another hilmem run is writing into"), "{}", text(&out));
    assert!(!dir.path().join("results.json").exists());
    drop(held);
}

/// A TFLM that is not there, or a checkout without its third-party
/// downloads, stops the run before anything is built: exit 2, naming where
/// the choice came from and what to do.
#[test]
fn a_wrong_tflm_is_exit_2_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = dir.path().join("out").display().to_string();
    let missing = dir.path().join("no-such-tflm").display().to_string();
    for args in [
        vec!["hil", "--model", "hello_world", "--tflm", &missing, "--out", &out],
        vec!["analyze", "hello_world", "--tflm", &missing],
        vec!["ci", "--tflm", &missing],
    ] {
        let run = xtask(&args);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {}", text(&run));
        assert!(
            text(&run).contains("TFLM runtime from --tflm") && text(&run).contains("is not a directory"),
            "{args:?}: {}",
            text(&run)
        );
        assert!(!text(&run).contains("== ci: formatting"), "ci checks its TFLM before its first step");
    }

    // A checkout without its downloads: the bundled tree, less them.
    let tree = dir.path().join("tflite-micro");
    std::fs::create_dir(&tree).unwrap();
    let copied = Command::new("cp").arg("-r").arg(bundled_tree().join("tensorflow")).arg(&tree).status().unwrap();
    assert!(copied.success());
    std::fs::remove_dir_all(tree.join("tensorflow/lite/micro/tools/make/downloads")).unwrap();
    let body = format!(
        "[tflm]\npath = \"tflite-micro\"\n\n[[model]]\nname = \"hello_world\"\nfile = {:?}\narena_bytes = 3072\n\n\
         [[model.input]]\nname = \"x\"\nvalues = [0.0]\n",
        hello_world()
    );
    let config = models_file(dir.path(), &body);
    let run = xtask(&["hil", "--config", &config, "--out", &out]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    let said = text(&run);
    assert!(
        said.contains("`[tflm] path` in")
            && said.contains("make -f tensorflow/lite/micro/tools/make/Makefile third_party_downloads"),
        "{said}"
    );
    assert!(!out_dir.join("results.json").exists(), "nothing was run");
}

/// The processes whose parent is `pid`, with their names, read from /proc
/// (a zombie, dead but not yet reaped, does not count).
fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        if fields[0] != "Z" && fields[1].parse() == Ok(pid) {
            found.push((child, stat[open + 1..close].to_owned()));
        }
    }
    found
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rfind(')').is_some_and(|close| !stat[close + 2..].starts_with('Z')))
}

/// A cancelled or killed run, on QEMU and on the host board: SIGTERM and
/// SIGINT end `hil` with 143 and 130 and one line naming what was stopped,
/// SIGKILL leaves it to the parent-death signal; either way the target the
/// run started is gone 2 seconds later, the output directory still holds
/// the previous complete results, and `baselines/` is untouched.
#[test]
fn a_cancelled_or_killed_run_leaves_no_process_and_the_previous_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let baselines = || {
        let out = Command::new("git").args(["status", "--porcelain", "baselines"]).current_dir(&root).output();
        String::from_utf8_lossy(&out.unwrap().stdout).into_owned()
    };
    let before = baselines();
    for board in ["qemu-m7", "host"] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().to_str().unwrap();
        // A complete run first: it builds the image and leaves results.
        let complete = xtask(&[
            "hil",
            "--board",
            board,
            "--model",
            "person_detection",
            "--scenario",
            "single-frame",
            "--out",
            out_dir,
        ]);
        assert!(complete.status.code().is_some_and(|c| c <= 1), "{}", text(&complete));
        let previous = std::fs::read(dir.path().join("results.json")).unwrap();
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGKILL] {
            let run = Command::new(env!("CARGO_BIN_EXE_xtask"))
                .args(["hil", "--board", board, "--model", "person_detection", "--scenario", "stream"])
                .args(["--frames", "100000", "--no-build", "--out", out_dir])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = run.id();
            let started = std::time::Instant::now();
            // The target, among what else the run starts (rustc, git, and
            // the toolchain check's short `qemu-system-arm --version`): the
            // child of that name still there 300 ms later.
            let program = if board == "host" { "person_detectio" } else { "qemu-system-arm" };
            let target = loop {
                let found = children_of(pid).into_iter().find(|(_, name)| name == program);
                if let Some(child) = found {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    if children_of(pid).contains(&child) {
                        break child;
                    }
                }
                assert!(started.elapsed().as_secs() < 60, "{board}: no target started");
                std::thread::sleep(std::time::Duration::from_millis(50));
            };
            // SAFETY: a signal to the child this test started.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
            let output = run.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            match signal {
                libc::SIGKILL => assert_eq!(output.status.code(), None, "{board}: {stderr}"),
                _ => {
                    let (status, name) = if signal == libc::SIGTERM { (143, "SIGTERM") } else { (130, "SIGINT") };
                    assert_eq!(output.status.code(), Some(status), "{board}: {stderr}");
                    let line = stderr.lines().last().unwrap_or("");
                    let named = line.starts_with(&format!("cancelled by {name}: stopped "))
                        && line.contains(&format!("(pid {})", target.0));
                    assert!(named, "{board}: {line} (target {target:?})");
                    let said = stderr.lines().any(|l| l.ends_with(" cancelled")) && !stderr.contains("FAILED");
                    assert!(said, "{board}: the scenario cut short is cancelled, not failed: {stderr}");
                }
            }
            std::thread::sleep(std::time::Duration::from_secs(2));
            assert!(!alive(target.0), "{board}, signal {signal}: {} (pid {}) outlived the run", target.1, target.0);
            assert_eq!(std::fs::read(dir.path().join("results.json")).unwrap(), previous, "{board}, signal {signal}");
        }
    }
    assert_eq!(baselines(), before, "a run never writes baselines/");
}

/// A binary built from one checkout refuses to act for another (what a
/// shared cargo target directory would make `cargo xtask` do), naming both,
/// before it reads or writes anything.
#[test]
fn a_binary_from_another_checkout_refuses_to_run() {
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join("xtask")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["hil", "--out", other.path().join("out").to_str().unwrap()])
        .env("CARGO_MANIFEST_DIR", other.path().join("xtask"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().display().to_string();
    let message = text(&out);
    assert!(message.contains("this xtask binary was built from the checkout at"), "{message}");
    assert!(message.contains(&here) && message.contains(&other.path().display().to_string()), "{message}");
    assert!(!other.path().join("out").exists());
}

/// The number before `what` in `text`: `75712` in `... 75712 bytes outside`.
fn number_before(text: &str, what: &str) -> u64 {
    let before = &text[..text.find(what).unwrap_or_else(|| panic!("no `{what}` in: {text}"))];
    before.trim_end().rsplit(' ').next().unwrap().trim_start_matches('(').parse().unwrap()
}

#[test]
fn an_image_outside_its_boards_regions_is_exit_1_with_the_region_and_the_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    // The H743's arena has a region of its own (512 KiB of AXI SRAM); the
    // nRF52840's shares RAM with static data, below the stack.
    let file = models_file(
        dir.path(),
        &format!("[[model]]\nname = \"hello_big\"\nfile = \"{}\"\narena_bytes = 600000\n[[model.input]]\nname = \"x\"\nvalues = [0.5]\n", hello_world()),
    );
    let args = ["hil", "--build-only", "--config", &file, "--out", out_dir.to_str().unwrap()];
    let out = xtask(&[&args[..], &["--board", "nucleo-h743", "--board", "nrf52840-dk"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let text = text(&out);
    assert!(text.contains("tensor arena inside ARENA: 600000 bytes at 0x24000000: 75712 bytes outside ARENA (524288 bytes at 0x24000000)"), "{text}");
    let line =
        text.lines().find(|l| l.contains("bytes outside RAM below the stack")).unwrap_or_else(|| panic!("{text}"));
    // start + size - (origin + length), from the numbers the line gives.
    let at = line.find("600000 bytes at 0x").unwrap() + "600000 bytes at 0x".len();
    let start = u64::from_str_radix(&line[at..at + 8], 16).unwrap();
    let length = number_before(line, "bytes at 0x20000000)");
    assert_eq!(number_before(line, "bytes outside"), start + 600_000 - (0x2000_0000 + length), "{line}");
    assert!(!text.contains("running single-frame"), "an image that does not fit is not run: {text}");
}

#[test]
fn a_dry_run_names_what_it_would_flash_and_exits_2_without_a_probe() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let out = xtask(&["hil", "--board", "nucleo-h743", "--model", "hello_world", "--dry-run", "--out", out_dir]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let text = text(&out);
    for expected in [
        "nucleo-h743/hello_world: would flash target/firmware/nucleo-h743/elf/hello_world.elf to the STM32H743ZITx: 1024 bytes at 0x08000000 (BANK_1)",
        "nucleo-h743/hello_world: RTT control block at 0x2",
        ", in DTCM",
        "nucleo-h743/hello_world: probe: no debug probe is attached; nothing was flashed",
    ] {
        assert!(text.contains(expected), "expected `{expected}` in:\n{text}");
    }
    let out = xtask(&["hil", "--board", "qemu-m7", "--model", "hello_world", "--dry-run", "--out", out_dir]);
    assert_eq!(out.status.code(), Some(2), "{}", self::text(&out));
    assert!(self::text(&out).contains("board `qemu-m7` is not deployed through a debug probe"), "{}", self::text(&out));
}

/// The mission's command at a desk with no board: said once, the build
/// figures compared, nothing flashed, exit 2; no failure per scenario.
#[test]
fn a_real_board_without_its_probe_is_said_once_and_its_build_figures_compared() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let out = xtask(&["hil", "--board", "nucleo-h743", "--model", "hello_world", "--out", out_dir]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let text = text(&out);
    assert_eq!(
        text.matches("nucleo-h743: no debug probe attached (looked for any probe); nothing was flashed").count(),
        1,
        "{text}"
    );
    assert!(text.contains("their build figures compared with the baselines: PASSED"), "{text}");
    assert!(text.contains("`cargo xtask hil --board nucleo-h743 --build-only`"), "{text}");
    assert!(!text.contains("FAILED") && !text.contains("running single-frame"), "{text}");
    assert!(text.contains("│ hello_world │ build (not run) │"), "{text}");

    // Beside a board that runs: the absent one is still said once and only
    // built, the other runs, and the run ends with exit 2 all the same.
    let both = ["hil", "--board", "nucleo-h743", "--board", "qemu-m7", "--model", "hello_world"];
    let out = xtask(&[&both[..], &["--scenario", "single-frame", "--out", out_dir]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", self::text(&out));
    let text = self::text(&out);
    assert_eq!(text.matches("nucleo-h743: no debug probe attached").count(), 1, "{text}");
    assert!(!text.contains("FAILED") && !text.contains("nucleo-h743/hello_world: running"), "{text}");
    assert!(text.contains("`cargo xtask hil --board nucleo-h743 --build-only`"), "{text}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap()).unwrap();
    let ran: Vec<(&str, &str)> = results["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["board"].as_str().unwrap(), r["scenario"].as_str().unwrap()))
        .collect();
    assert!(ran.contains(&("qemu-m7", "single-frame")) && ran.contains(&("nucleo-h743", "build")), "{ran:?}");
    assert!(!ran.contains(&("nucleo-h743", "single-frame")), "{ran:?}");
    assert_eq!(results["failed"].as_array().map(Vec::len), Some(0), "{results}");
}

/// Runs `cargo xtask ARGS` with standard output and error on a terminal (a
/// real pty, 120 columns), `CI` unset; what it showed, escapes and all.
fn on_a_terminal(args: &[&str]) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize { ws_row: 30, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: both descriptors are written by openpty and owned from here.
    let (master, slave) = unsafe {
        assert_eq!(libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size), 0);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    };
    // The command, and with it this process's copies of the terminal's
    // other end, is gone once spawned: reading ends when the child exits.
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .env_remove("CI")
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn()
        .unwrap();
    let mut shown = Vec::new();
    // Ends in EIO when the last writer closes; what was read is kept.
    _ = std::fs::File::from(master).read_to_end(&mut shown);
    (child.wait().unwrap(), String::from_utf8_lossy(&shown).into_owned())
}

/// On a terminal a run shows bars counting the images built and the runs
/// done, each to its total; through a pipe (CI, a file) a line per step and
/// no bar.
#[test]
fn a_run_shows_counted_bars_on_a_terminal_and_lines_elsewhere() {
    let (piped, shown) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let piped = xtask(&["hil", "--model", "hello_world", "--out", &out_dir(piped.path())]);
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped));
    let lines = text(&piped);
    let runs = lines.lines().filter(|l| l.starts_with("qemu-m7/hello_world: ") && l.ends_with(" done")).count();
    assert!(runs >= 4 && lines.contains("qemu-m7/hello_world: running single-frame\n"), "{lines}");
    assert!(!lines.contains("images [") && !lines.contains('\x1b'), "{lines}");

    let (status, shown) = on_a_terminal(&["hil", "--model", "hello_world", "--out", &out_dir(shown.path())]);
    assert_eq!(status.code(), Some(0), "{shown}");
    assert!(shown.contains("images [========================] 1/1"), "{shown}");
    assert!(shown.contains(&format!("runs [========================] {runs}/{runs}")), "{shown}");
    assert!(shown.contains("runs [                        ] 0/"), "the runs are counted from none: {shown}");
    assert!(shown.contains("qemu-m7/hello_world: single-frame done"), "{shown}");
}
