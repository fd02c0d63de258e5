//! `cargo xtask ci`: exactly what CI runs, in order: formatting, lints, the
//! workflow files, the test suite, and every emulated board against the
//! approved baselines (a pull request against its merge base), with the
//! reports in target/hilmem/. Each step is the command a developer would
//! type.

use std::process::Command;

use anyhow::{Context, Result};
use harness::{doctor, Workspace};

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Compare with the baselines at this revision (as `hil --against`).
    #[arg(long, default_value = "auto")]
    against: String,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    doctor::ensure(&[doctor::Need::Actionlint], ws.root(), true, &mut |line| eprintln!("{line}"))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let xtask = std::env::current_exe().context("cannot find the xtask binary")?;
    let actionlint = doctor::actionlint(ws.root());

    let hil = strings(&["hil", "--board", "all-emulated", "--against", &args.against, "--report"]);

    let firmware = ["--manifest-path", "firmware/Cargo.toml"];
    let steps: Vec<(&str, &std::ffi::OsStr, Vec<String>)> = vec![
        ("formatting", &cargo, strings(&["fmt", "--all", "--check"])),
        ("formatting (firmware)", &cargo, strings(&[&["fmt"][..], &firmware, &["--all", "--check"]].concat())),
        ("lints", &cargo, strings(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])),
        (
            "lints (firmware crates on the host)",
            &cargo,
            strings(
                &[
                    &["clippy"][..],
                    &firmware,
                    &["--package", "arena", "--package", "hilmem-protocol", "--all-targets", "--", "-D", "warnings"],
                ]
                .concat(),
            ),
        ),
        ("workflow files (actionlint)", actionlint.as_os_str(), vec![]),
        ("tests", xtask.as_os_str(), strings(&["test"])),
        ("emulated boards against the baselines", xtask.as_os_str(), hil),
    ];
    let mut code = exit::OK;
    for (name, program, args) in steps {
        eprintln!("== ci: {name}");
        let status = Command::new(program)
            .current_dir(ws.root())
            .args(&args)
            .status()
            .with_context(|| format!("cannot run the {name} step"))?;
        if !status.success() {
            eprintln!("== ci: {name} FAILED");
            code = code.max(status.code().unwrap_or(exit::ERROR).clamp(exit::REGRESSION, exit::ERROR));
        }
    }
    Ok(code)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}
