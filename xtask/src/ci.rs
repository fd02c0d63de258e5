//! `cargo xtask ci`: exactly what CI runs, in order: formatting, lints, the
//! workflow files, the README's first command (twice: cold, then warm), the
//! test suite, the book (`docs`), every emulated board against the
//! approved baselines (a pull request against its merge base), with the
//! reports in target/hilmem/, and the real boards built and checked without
//! running (`hil --build-only`), with theirs in target/hilmem/build-only/. Each step is the command a developer would
//! type.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use harness::config::board;
use harness::config::runtime::Choice;
use harness::{doctor, timings, Workspace};

use crate::test::FIRMWARE_HOST_CRATES;

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Compare with the baselines at this revision (as `hil --against`).
    #[arg(long, default_value = "auto")]
    against: String,
    /// A current TFLM for the tests that build against one: a tflite-micro
    /// checkout with its downloads, or a directory holding one as
    /// `tflite-micro-*.tar.gz` (unpacked once under target/tflm/), with TFLM's
    /// earlier checkouts in its `history/` and `history-gaps/` folders. Handed to `xtask test
    /// --test-tflm`.
    #[arg(long)]
    test_tflm: Option<PathBuf>,
    /// The TFLM the emulated boards are measured on (as `hil --tflm`).
    #[arg(long)]
    tflm: Option<String>,
    /// The kernels every image is built with (as `hil --kernels`); with
    /// `cmsis-nn` the host board, which has no Cortex-M core, is left out.
    #[arg(long, value_parser = ["reference", "cmsis-nn"])]
    kernels: Option<String>,
    /// Name the 30 slowest tests and TFLM library configurations compiled,
    /// not 5 (every run ends with where its time went, and writes it as
    /// JSON under target/timings/).
    #[arg(long)]
    timings: bool,
}

/// CI's short stress pass: each test that drives a target this many times,
/// on this many test threads (more than CI's cores).
const STRESS_COUNT: &str = "2";
const STRESS_THREADS: &str = "6";

/// Where CI's build-only run of the real boards writes its results.
const BUILD_ONLY_OUT: &str = "target/hilmem/build-only";

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    // A wrong TFLM stops CI before its first step, not at its last.
    Choice { flag: args.tflm.clone(), config: None }.resolve()?;
    doctor::ensure(&[doctor::NPM, doctor::Need::Actionlint], ws.root(), true, &mut |line| eprintln!("{line}"))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let xtask = std::env::current_exe().context("cannot find the xtask binary")?;
    let actionlint = doctor::actionlint(ws.root());

    let boards = board::load_all(&ws)?;
    let cmsis_nn = args.kernels.as_deref() == Some("cmsis-nn");
    let mut hil = strings(&["hil", "--against", &args.against, "--report"]);
    if cmsis_nn {
        for board in boards.iter().filter(|b| b.is_emulated() && b.tflm_arch.is_some()) {
            hil.extend(["--board".to_owned(), board.name.clone()]);
        }
    } else {
        hil.extend(strings(&["--board", "all-emulated"]));
    }
    let settings: Vec<String> = [("--tflm", &args.tflm), ("--kernels", &args.kernels)]
        .into_iter()
        .flat_map(|(flag, value)| value.iter().flat_map(move |v| [flag.to_owned(), v.clone()]))
        .collect();
    hil.extend(settings.iter().cloned());
    // The boards behind a probe, which no hosted runner has, are built and
    // checked without running: their own results beside the emulated ones.
    let mut build_only = strings(&["hil", "--build-only", "--against", &args.against, "--out", BUILD_ONLY_OUT]);
    for board in boards.into_iter().filter(|b| !b.is_emulated()) {
        build_only.extend(["--board".to_owned(), board.name]);
    }
    build_only.extend(settings);
    // The tests get the checkout as `xtask test --test-tflm` takes it (with
    // the history folders beside it, where there are).
    let test_tflm: Vec<String> =
        args.test_tflm.iter().flat_map(|given| ["--test-tflm".to_owned(), given.display().to_string()]).collect();

    let docs = [
        strings(&["docs"]),
        args.test_tflm.iter().flat_map(|given| ["--tflm".to_owned(), given.display().to_string()]).collect(),
    ]
    .concat();
    let firmware = ["--manifest-path", "firmware/Cargo.toml"];
    let steps: Vec<(&str, &std::ffi::OsStr, Vec<String>)> = vec![
        ("formatting", &cargo, strings(&["fmt", "--all", "--check"])),
        ("formatting (firmware)", &cargo, strings(&[&["fmt"][..], &firmware, &["--all", "--check"]].concat())),
        ("lints", &cargo, strings(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])),
        (
            "lints (firmware crates on the host)",
            &cargo,
            strings(
                &[&["clippy"][..], &firmware, &FIRMWARE_HOST_CRATES, &["--all-targets", "--", "-D", "warnings"]]
                    .concat(),
            ),
        ),
        ("workflow files (actionlint)", actionlint.as_os_str(), vec![]),
        // The README's first command as a user runs it, then again: in a
        // fresh checkout the first is its cold cost (the tools installed),
        // the second its warm one. The steps after reuse what it built.
        ("the README's first command, `cargo xtask hil`", xtask.as_os_str(), strings(&["hil"])),
        ("the README's first command again, everything built", xtask.as_os_str(), strings(&["hil"])),
        ("tests", xtask.as_os_str(), [strings(&["test"]), test_tflm.clone()].concat()),
        (
            "the run-to-record path under load",
            xtask.as_os_str(),
            [strings(&["test", "--stress", STRESS_COUNT, "--threads", STRESS_THREADS]), test_tflm].concat(),
        ),
        // Before the boards' run: the book's `hil` example writes into target/hilmem/ too.
        ("the book: its links, and the outputs it shows against fresh runs", xtask.as_os_str(), docs),
        ("emulated boards against the baselines", xtask.as_os_str(), hil),
        ("real boards, build only, against the baselines", xtask.as_os_str(), build_only),
    ];
    // Each step's processes note what they did in a log of the step's own.
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let logs = ws.root().join("target/timings").join(format!("ci-{stamp}"));
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let mut failed = Vec::new();
    let mut summary = timings::Summary { steps: Vec::new() };
    for (n, (name, program, args)) in steps.into_iter().enumerate() {
        eprintln!("== ci: {name}");
        let started = Instant::now();
        let log = logs.join(format!("{n}.jsonl"));
        let mut command = Command::new(program);
        command.current_dir(ws.root()).args(&args).env(timings::LOG, &log);
        let status = command.status().with_context(|| format!("cannot run the {name} step"))?;
        if !status.success() {
            eprintln!("== ci: {name} FAILED");
            failed.push(status.code());
        }
        let (seconds, passed, events) = (started.elapsed().as_secs_f64(), status.success(), timings::read(&log));
        summary.steps.push(timings::Step { name: name.to_owned(), seconds, passed, events });
    }
    let json = logs.with_extension("json");
    let written = serde_json::to_string_pretty(&summary).expect("timings serialize");
    std::fs::write(&json, written).with_context(|| format!("cannot write {}", json.display()))?;
    let slowest = if args.timings { 30 } else { 5 };
    eprintln!("== ci: where the time went (wall time per step; counts and summed times of what the steps did)");
    for line in summary.lines(slowest) {
        eprintln!("{line}");
    }
    eprintln!("== ci: the timings as JSON: {}", ws.shown(&json));
    if args.test_tflm.is_none() {
        eprintln!(
            "== ci: no --test-tflm: what needs a TFLM checkout was not checked (the tests and the book's blocks the \
             steps above name); `cargo xtask ci --test-tflm DIR` checks it"
        );
    }
    Ok(worst(&failed))
}

/// CI's status: the worst of its failed steps' statuses (`None` for a step
/// killed by a signal), each read as a regression (1) or an error (2).
fn worst(failed: &[Option<i32>]) -> i32 {
    failed.iter().map(|code| code.unwrap_or(exit::ERROR).clamp(exit::REGRESSION, exit::ERROR)).max().unwrap_or(exit::OK)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_ends_with_the_worst_status_of_its_steps() {
        assert_eq!(worst(&[]), exit::OK);
        assert_eq!(worst(&[Some(1)]), exit::REGRESSION);
        assert_eq!(worst(&[Some(1), Some(2), Some(1)]), exit::ERROR);
        assert_eq!(worst(&[Some(2), Some(1)]), exit::ERROR);
        // cargo's 101 (a failed test) and a step killed by a signal are errors.
        assert_eq!(worst(&[Some(1), Some(101)]), exit::ERROR);
        assert_eq!(worst(&[None]), exit::ERROR);
        // A failed step is never success, whatever status it gave.
        assert_eq!(worst(&[Some(-1)]), exit::REGRESSION);
    }
}
