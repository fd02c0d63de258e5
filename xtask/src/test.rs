//! `cargo xtask test`: set up the machine, then run every test: the host
//! workspace (protocol, harness and its QEMU integration tests) and the
//! firmware's host-testable crates; or, with `--stress`, the tests that
//! drive a target, many times over with more test threads than cores.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use harness::config::board;
use harness::{doctor, timings, Workspace};

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// A current TFLM for the tests that build against one: a tflite-micro
    /// checkout with its downloads, or a directory holding one as
    /// `tflite-micro-*.tar.gz` (unpacked once under target/tflm/). Else
    /// HILMEM_TEST_TFLM; without either those tests are not run, and the
    /// run says how many (in CI they fail). Its `history/` and
    /// `history-gaps/` folders, where it has them, hold
    /// `tflite-micro-*.tar.xz` checkouts of earlier years for the tests of
    /// TFLM's history (unpacked once under target/tflm/history/).
    #[arg(long, value_name = "DIR")]
    test_tflm: Option<PathBuf>,
    /// Instead of the suite, run the tests that drive a target (nextest's
    /// `stress` profile: the run-to-record path) COUNT times each.
    #[arg(long, value_name = "COUNT")]
    stress: Option<u32>,
    /// Test threads of a stress run (default: three per core, so that runs
    /// wait for the processor as on a busy machine).
    #[arg(long, requires = "stress")]
    threads: Option<usize>,
    /// Extra arguments for cargo-nextest (for example a test name filter).
    #[arg(last = true)]
    nextest: Vec<String>,
}

/// The environment variable the tests read a current TFLM's checkout from.
const TEST_TFLM: &str = "HILMEM_TEST_TFLM";
/// The environment variable the tests read the directory of TFLM's earlier
/// checkouts from.
const TEST_TFLM_HISTORY: &str = "HILMEM_TEST_TFLM_HISTORY";
/// The folders beside a current checkout that hold TFLM's earlier ones.
const HISTORY_FOLDERS: [&str; 2] = ["history", "history-gaps"];

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let needs = doctor::needs(&board::load_all(&ws)?, true);
    doctor::ensure(&needs, ws.root(), false, &mut |line| eprintln!("{line}"))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The analyzer's tests read the bundled TFLM's sources, which cargo
    // unpacks only when it fetches the firmware's dependencies.
    let fetched = Command::new(&cargo)
        .current_dir(ws.root())
        .args(["fetch", "--manifest-path", "firmware/Cargo.toml"])
        .status()
        .context("cannot run cargo fetch for the firmware")?;
    if !fetched.success() {
        bail!("cargo fetch --manifest-path firmware/Cargo.toml failed");
    }
    let tflm = match &args.test_tflm {
        Some(given) => Some(tflm_checkout(ws.root(), given)?),
        None => std::env::var_os(TEST_TFLM).map(PathBuf::from),
    };
    let history = match (&args.test_tflm, &tflm) {
        (Some(given), Some(current)) => history_trees(ws.root(), given, current)?,
        _ => None,
    };
    let nextest = |profile: &str| {
        let mut command = Command::new(&cargo);
        command.current_dir(ws.root()).args(["nextest", "run", "--config-file", NEXTEST_CONFIG, "--profile", profile]);
        if let Some(tree) = &tflm {
            command.env(TEST_TFLM, tree);
        }
        if let Some(dir) = &history {
            command.env(TEST_TFLM_HISTORY, dir);
        }
        command
    };

    if let Some(count) = args.stress {
        let threads = args.threads.unwrap_or_else(|| 3 * std::thread::available_parallelism().map_or(2, |n| n.get()));
        eprintln!("== tests: the tests that drive a target, {count} times each on {threads} test threads");
        let started = std::time::SystemTime::now();
        let status = nextest("stress")
            .args(["--workspace", "--no-tests=fail", "--stress-count", &count.to_string()])
            .args(["--test-threads", &threads.to_string()])
            .args(&args.nextest)
            .status()
            .context("cannot run cargo nextest for the stress run")?;
        note_tests(&ws.root().join("target"), "stress", started);
        // nextest exits 0 when an iteration failed and a later one passed;
        // its report counts the failed runs of every iteration. (One that
        // failed, before its tests too, says so itself.)
        let failed = match status.success() {
            true => failed_runs(&ws.root().join("target"), "stress", started)?,
            false => 0,
        };
        if failed > 0 {
            eprintln!("== tests: {failed} failed test run(s) in an earlier iteration (nextest's report, above)");
        }
        return Ok(stress_status(status.success(), failed));
    }

    // CI gets the profile that writes JUnit reports, and runs every test: a
    // current TFLM missing there is a failure. Elsewhere, without one, the
    // tests that need it are left out by name, and counted.
    let profile = match (std::env::var_os("CI").is_some(), tflm.is_some()) {
        (true, _) => "ci",
        (false, true) => "default",
        (false, false) => WITHOUT_TFLM,
    };
    let suites: [(&str, &str, Vec<&str>); 2] = [
        ("host workspace", "target", vec!["--workspace"]),
        (
            "firmware crates on the host",
            "firmware/target",
            [&["--manifest-path", "firmware/Cargo.toml"][..], &FIRMWARE_HOST_CRATES].concat(),
        ),
    ];
    let mut code = exit::OK;
    for (name, target_dir, selection) in suites {
        eprintln!("== tests: {name}");
        let started = std::time::SystemTime::now();
        let status = nextest(profile)
            // A name filter may select nothing in one of the suites; the full
            // run must find tests in both (a suite that compiles to none is
            // a failure, not a warning).
            .arg(if args.nextest.is_empty() { "--no-tests=fail" } else { "--no-tests=warn" })
            .args(selection)
            .args(&args.nextest)
            .status()
            .with_context(|| format!("cannot run cargo nextest for the {name}"))?;
        note_tests(&ws.root().join(target_dir), profile, started);
        if !status.success() {
            code = exit::REGRESSION;
        }
    }
    if profile == WITHOUT_TFLM {
        let left_out = left_out(&cargo, ws.root(), &args.nextest)?;
        eprintln!("== tests: {left_out} tests skipped: no current TFLM (give --test-tflm DIR)");
    }
    Ok(code)
}

/// The nextest configuration, with the profiles named here.
const NEXTEST_CONFIG: &str = ".config/nextest.toml";

/// The firmware workspace's crates that build and test on the host, as
/// cargo's package selection (the rest cross-compile only).
pub const FIRMWARE_HOST_CRATES: [&str; 6] =
    ["--package", "tflm-tree", "--package", "arena", "--package", "hilmem-protocol"];

/// Notes in the timings log, when one is named, each test of the JUnit
/// report nextest wrote for `profile` in this run ([`report`]).
fn note_tests(target_dir: &Path, profile: &str, started: std::time::SystemTime) {
    if std::env::var_os(timings::LOG).is_none() {
        return;
    }
    for test in timings::tests_in_junit(&report(target_dir, profile, started).unwrap_or_default()) {
        timings::note(&test.kind, &test.name, test.seconds);
    }
}

/// How many test runs the JUnit report of nextest's `profile` in this run
/// ([`report`]) counts as failed; without that report, an error.
fn failed_runs(target_dir: &Path, profile: &str, started: std::time::SystemTime) -> Result<usize> {
    let xml = report(target_dir, profile, started)
        .with_context(|| format!("nextest wrote no report of this run under {}", target_dir.display()))?;
    Ok(timings::failed_in_junit(&xml))
}

/// A stress run's status: a regression where nextest failed or its report
/// counts a failed run.
fn stress_status(nextest_passed: bool, failed_runs: usize) -> i32 {
    match nextest_passed && failed_runs == 0 {
        true => exit::OK,
        false => exit::REGRESSION,
    }
}

/// The JUnit report nextest wrote under `target_dir` for `profile` (every
/// profile writes one), if it wrote it since `started` (a run that stopped
/// before its report leaves an older one).
fn report(target_dir: &Path, profile: &str, started: std::time::SystemTime) -> Option<String> {
    let junit = target_dir.join("nextest").join(profile).join("junit.xml");
    let written = std::fs::metadata(&junit).and_then(|m| m.modified()).ok()?;
    (written >= started).then(|| std::fs::read_to_string(&junit).ok()).flatten()
}

/// The profile that leaves out the tests that need a current TFLM.
const WITHOUT_TFLM: &str = "without-tflm";

/// How many of the selected tests the profile without a TFLM leaves out.
fn left_out(cargo: &std::ffi::OsStr, root: &Path, filters: &[String]) -> Result<usize> {
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["nextest", "list", "--config-file", NEXTEST_CONFIG, "--profile", WITHOUT_TFLM])
        .args(["--workspace", "--message-format", "json"])
        .args(filters)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run cargo nextest list")?;
    if !out.status.success() {
        bail!("cargo nextest list failed");
    }
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).context("cargo nextest list: not JSON")?;
    let suites = list["rust-suites"].as_object().context("cargo nextest list: no rust-suites")?;
    Ok(suites
        .values()
        .filter_map(|suite| suite["testcases"].as_object())
        .flat_map(|cases| cases.values())
        .filter(|case| case["filter-match"]["reason"] == "default-filter")
        .count())
}

/// The checkout `given` names: itself when it is a TFLM tree, else the
/// `tflite-micro-*` checkout inside it, or the one its
/// `tflite-micro-*.tar.gz` unpacks to under `target/tflm/` (unpacked once,
/// through a scratch directory, so an interrupted unpack leaves nothing that
/// looks complete).
pub(crate) fn tflm_checkout(root: &Path, given: &Path) -> Result<PathBuf> {
    // Absolute: the tests run in their own package's directory.
    let given = &given.canonicalize().with_context(|| format!("--test-tflm {}", given.display()))?;
    if given.join("tensorflow/lite/micro").is_dir() {
        return Ok(given.to_owned());
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(given)
        .with_context(|| format!("--test-tflm {}: cannot read the directory", given.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("tflite-micro-")))
        .collect();
    if let Some(tree) = entries.iter().find(|p| p.is_dir()) {
        return Ok(tree.clone());
    }
    let Some(archive) = entries.iter().find(|p| p.to_string_lossy().ends_with(".tar.gz")) else {
        bail!("--test-tflm {}: no TFLM tree, tflite-micro-* checkout or tflite-micro-*.tar.gz there", given.display());
    };
    let name = archive.file_name().and_then(|n| n.to_str()).unwrap().trim_end_matches(".tar.gz").to_owned();
    let tree = unpack_once(archive, &root.join("target/tflm"), &name, |_| Ok(()))?;
    with_cmsis_nn(given, &tree, &name)?;
    Ok(tree)
}

/// The CMSIS-NN downloads of the checkout `name` (`cmsis-nn-for-NAME.tar.gz`
/// beside its archive, which unpacks over it) put into `tree` once, where
/// there is such an archive: unpacked aside, then moved in, `cmsis_nn`
/// last, so that a tree with `downloads/cmsis_nn` has both.
fn with_cmsis_nn(given: &Path, tree: &Path, name: &str) -> Result<()> {
    let archive = given.join(format!("cmsis-nn-for-{name}.tar.gz"));
    let downloads = Path::new(name).join("tensorflow/lite/micro/tools/make/downloads");
    let into = tree.parent().unwrap().join(&downloads);
    if !archive.is_file() || into.join("cmsis_nn").is_dir() {
        return Ok(());
    }
    let scratch = tree.parent().unwrap().join(".partial-cmsis-nn");
    let unpacked = unpack_once(&archive, &scratch, name, |_| Ok(()))?;
    for lib in ["cmsis", "cmsis_nn"] {
        let _ = std::fs::remove_dir_all(into.join(lib));
        let from = unpacked.parent().unwrap().join(&downloads).join(lib);
        std::fs::rename(&from, into.join(lib))
            .with_context(|| format!("{} does not hold {}", archive.display(), from.display()))?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The tree `archive` (a `.tar.gz` or `.tar.xz`) unpacks to, `dir/name`:
/// unpacked there once, through a scratch directory, with `prepare` run on
/// it before it takes its name, so an interrupted unpack leaves nothing
/// that looks complete.
fn unpack_once(archive: &Path, dir: &Path, name: &str, prepare: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
    let tree = dir.join(name);
    if tree.is_dir() {
        return Ok(tree);
    }
    eprintln!("== tests: unpacking {} into {}", archive.display(), dir.display());
    let scratch = dir.join(".partial");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
    let status = Command::new("tar").arg("-xaf").arg(archive).arg("-C").arg(&scratch).status();
    if !status.context("cannot run tar")?.success() {
        bail!("tar could not unpack {}", archive.display());
    }
    prepare(&scratch.join(name))?;
    std::fs::rename(scratch.join(name), &tree)
        .with_context(|| format!("{} does not unpack to {name}/", archive.display()))?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(tree)
}

/// The directory of TFLM's earlier checkouts: the `tflite-micro-*.tar.xz`
/// of `given/history/` (a checkout per era) and of `given/history-gaps/`
/// (one from each window of TFLM's history that the eras leave out), each
/// unpacked once under `target/tflm/history/` (None when `given` has
/// neither folder).
///
/// The archives were made smaller by leaving out, among the third-party
/// libraries' tests, ruy's `ruy/profiler/`, which TFLM's reference kernels
/// include and its Makefile lists. Where a tree's download script names the
/// ruy commit the current checkout's own script names, the current
/// checkout's copy of that folder (the same upstream files) is put back, and
/// the run says so; a tree whose ruy is another commit stays as it is, and
/// the tests expect hilmem to refuse it for what it lacks.
fn history_trees(root: &Path, given: &Path, current: &Path) -> Result<Option<PathBuf>> {
    let archives: Vec<PathBuf> = HISTORY_FOLDERS
        .iter()
        .filter_map(|folder| std::fs::read_dir(given.join(folder)).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if archives.is_empty() {
        return Ok(None);
    }
    let dir = root.join("target/tflm/history");
    let ruy = |tree: &Path| {
        let script = tree.join("tensorflow/lite/micro/tools/make/third_party_downloads.inc");
        let text = std::fs::read_to_string(script).unwrap_or_default();
        text.lines().find(|l| l.starts_with("RUY_URL")).map(str::to_owned)
    };
    let downloads = "tensorflow/lite/micro/tools/make/downloads/ruy/ruy/profiler";
    for archive in archives {
        let Some(name) = archive.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".tar.xz")) else {
            continue;
        };
        unpack_once(&archive, &dir, name, |unpacked| {
            let profiler = unpacked.join(downloads);
            if profiler.exists() || ruy(unpacked).is_none() || ruy(unpacked) != ruy(current) {
                return Ok(());
            }
            eprintln!("== tests: {name}: its ruy lacks ruy/profiler/; taking it from the current checkout's ruy, the same commit");
            let status = Command::new("cp").arg("-R").arg(current.join(downloads)).arg(&profiler).status();
            if !status.context("cannot run cp")?.success() {
                bail!("cannot copy ruy/profiler into {}", unpacked.display());
            }
            Ok(())
        })?;
    }
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nextest exits 0 for a stress run whose earlier iteration failed: the
    /// failed runs its report counts fail the run all the same.
    #[test]
    fn a_stress_run_fails_where_nextest_or_its_report_says_a_test_failed() {
        assert_eq!(stress_status(true, 0), exit::OK);
        assert_eq!(stress_status(true, 1), exit::REGRESSION);
        assert_eq!(stress_status(false, 0), exit::REGRESSION);
        assert_eq!(stress_status(false, 2), exit::REGRESSION);
    }
}
