//! `cargo xtask test`: set up the machine, then run every test: the host
//! workspace (protocol, harness and its QEMU integration tests) and the
//! firmware's host-testable crates.

use std::process::Command;

use anyhow::{bail, Context, Result};
use harness::spec::board;
use harness::{doctor, Workspace};

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Extra arguments for cargo-nextest (for example a test name filter).
    #[arg(last = true)]
    nextest: Vec<String>,
}

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

    // CI gets the profile that writes JUnit reports.
    let profile = if std::env::var_os("CI").is_some() { "ci" } else { "default" };
    let suites: [(&str, Vec<&str>); 2] = [
        ("host workspace", vec!["--workspace"]),
        (
            "firmware crates on the host",
            vec!["--manifest-path", "firmware/Cargo.toml", "--package", "arena", "--package", "hilmem-protocol"],
        ),
    ];
    let mut code = exit::OK;
    for (name, selection) in suites {
        eprintln!("== tests: {name}");
        let status = Command::new(&cargo)
            .current_dir(ws.root())
            .args(["nextest", "run", "--config-file", ".config/nextest.toml", "--profile", profile])
            // A name filter may select nothing in one of the suites; the full
            // run must find tests in both (a suite that compiles to none is
            // a failure, not a warning).
            .arg(if args.nextest.is_empty() { "--no-tests=fail" } else { "--no-tests=warn" })
            .args(selection)
            .args(&args.nextest)
            .status()
            .with_context(|| format!("cannot run cargo nextest for the {name}"))?;
        if !status.success() {
            code = exit::REGRESSION;
        }
    }
    Ok(code)
}
