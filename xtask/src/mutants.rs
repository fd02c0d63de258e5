//! `cargo xtask mutants`: mutation testing of the trust boundary with
//! cargo-mutants. Every mutant of the code that turns a run into a
//! measurement, and a measurement into a verdict or a baseline, must be caught
//! by a test or be listed in `xtask/mutants.toml` with the reason no test can
//! tell it from the original.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use harness::{doctor, strict_toml, Workspace};
use serde::Deserialize;

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Stop after this many minutes (the mutants tested by then are reported,
    /// and the run counts as incomplete).
    #[arg(long, default_value_t = 90)]
    budget: u64,
}

/// One cargo-mutants run: a workspace, the package its mutants come from,
/// the files (each whole, or only the named functions), and the tests that
/// must catch them.
struct Group {
    name: &'static str,
    dir: &'static str,
    package: &'static str,
    scope: &'static [(&'static str, &'static [&'static str])],
    test_args: &'static [&'static str],
}

impl Group {
    /// The regex of the mutants in scope, over cargo-mutants' names
    /// (`file:line:col: replace f -> T with x`, `...: replace a with b in f`).
    fn names(&self) -> String {
        let files = self.scope.iter().map(|(file, functions)| {
            let file = file.replace('.', r"\.");
            if functions.is_empty() {
                format!("^{file}:")
            } else {
                let f = functions.join("|");
                format!("^{file}:.*( in ({f})$|: replace ({f}) -> )")
            }
        });
        files.collect::<Vec<_>>().join("|")
    }
}

/// The trust boundary: `record` (a run into a measurement), the session
/// decoder, the verdict and the policy's tolerance arithmetic, baseline
/// approval, and the wire's frame parser (with the update package's check).
/// The harness's mutants are caught by its unit tests alone, which run in
/// about a second.
const GROUPS: &[Group] = &[
    Group {
        name: "harness",
        dir: ".",
        package: "harness",
        scope: &[
            ("harness/src/run/record.rs", &[]),
            ("harness/src/device/session.rs", &[]),
            ("harness/src/verdict/approval.rs", &[]),
            (
                "harness/src/verdict/compare.rs",
                &["verdict", "Tolerance::allows", "Policy::tolerance", "Comparison::fails"],
            ),
        ],
        test_args: &["--lib"],
    },
    Group {
        name: "protocol",
        dir: "firmware",
        package: "hilmem-protocol",
        scope: &[(
            "protocol/src/lib.rs",
            &[
                "parse_line",
                "decode_frame",
                "hex_digit",
                "crc32",
                "Reader<'b>::take",
                "Frame<'a>::decode_payload",
                "ota::Header::decode",
                "ota::Header::verify",
            ],
        )],
        test_args: &[],
    },
];

/// `xtask/mutants.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Explained {
    #[serde(default)]
    equivalent: Vec<Equivalent>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Equivalent {
    /// As cargo-mutants names it without line and column: `file: mutation in function`.
    mutant: String,
    why: String,
}

/// What one group's run found, as cargo-mutants wrote it (one mutant per line).
#[derive(Debug, Default, PartialEq)]
struct Outcomes {
    caught: usize,
    timeout: usize,
    unviable: usize,
    missed: Vec<String>,
}

impl Outcomes {
    fn read(out: &Path) -> Result<Outcomes> {
        let lines = |name: &str| -> Result<Vec<String>> {
            let path = out.join(name);
            match std::fs::read_to_string(&path) {
                Ok(text) => Ok(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
            }
        };
        Ok(Outcomes {
            caught: lines("caught.txt")?.len(),
            timeout: lines("timeout.txt")?.len(),
            unviable: lines("unviable.txt")?.len(),
            missed: lines("missed.txt")?.iter().map(|l| without_line_col(l)).collect(),
        })
    }

    fn tested(&self) -> usize {
        self.caught + self.timeout + self.unviable + self.missed.len()
    }
}

/// `file:line:col: mutation` as `file: mutation`, which survives edits
/// elsewhere in the file.
fn without_line_col(name: &str) -> String {
    let parts: Vec<&str> = name.splitn(4, ':').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match parts[..] {
        [file, line, col, rest] if digits(line) && digits(col) => format!("{file}:{rest}"),
        _ => name.to_owned(),
    }
}

/// The survivors no entry explains, and the entries that explain no survivor.
fn judge<'a>(missed: &'a [String], explained: &'a [Equivalent]) -> (Vec<&'a str>, Vec<&'a str>) {
    let listed: BTreeSet<&str> = explained.iter().map(|e| e.mutant.as_str()).collect();
    let survivors: BTreeSet<&str> = missed.iter().map(String::as_str).collect();
    let unexplained = survivors.difference(&listed).copied().collect();
    let stale = listed.difference(&survivors).copied().collect();
    (unexplained, stale)
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    doctor::ensure(&[doctor::Need::CargoTool(doctor::MUTANTS)], ws.root(), true, &mut |line| eprintln!("{line}"))?;
    let list = ws.root().join("xtask/mutants.toml");
    let text = std::fs::read_to_string(&list).with_context(|| format!("cannot read {}", list.display()))?;
    let explained: Explained = strict_toml::parse(&list, &text)?;
    if let Some(entry) = explained.equivalent.iter().find(|e| e.why.trim().is_empty()) {
        bail!("{}: `{}` is listed without a reason", list.display(), entry.mutant);
    }

    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.budget * 60);
    let mut missed = Vec::new();
    let mut complete = true;
    for group in GROUPS {
        let out = ws.root().join("target/mutants").join(group.name);
        let finished = run_group(&ws, group, &out, deadline)?;
        let outcomes = Outcomes::read(&out.join("mutants.out"))?;
        eprintln!(
            "== mutants: {}: {} tested, {} caught, {} timed out (caught), {} unviable, {} missed{}",
            group.name,
            outcomes.tested(),
            outcomes.caught,
            outcomes.timeout,
            outcomes.unviable,
            outcomes.missed.len(),
            if finished { "" } else { " (stopped at the time budget)" }
        );
        complete &= finished;
        missed.extend(outcomes.missed);
    }

    let (unexplained, stale) = judge(&missed, &explained.equivalent);
    let explained_count = missed.iter().filter(|m| !unexplained.contains(&m.as_str())).count();
    eprintln!(
        "== mutants: {} survivors, {explained_count} explained in {}; {:.0} min",
        missed.len(),
        ws.shown(&list),
        started.elapsed().as_secs_f64() / 60.0
    );
    for mutant in &unexplained {
        eprintln!("UNEXPLAINED  {mutant}");
    }
    if !complete {
        eprintln!("the run stopped at its {} min budget: rerun with a larger --budget", args.budget);
        return Ok(exit::ERROR);
    }
    for mutant in &stale {
        eprintln!("STALE  {mutant}: listed as equivalent, but no longer survives (remove it from the list)");
    }
    Ok(if unexplained.is_empty() && stale.is_empty() { exit::OK } else { exit::REGRESSION })
}

/// Runs cargo-mutants for `group` into `out`; returns false when the deadline
/// stopped it. Mutants are tested in a copy of the tree, built in
/// `target/mutants/build`, so the checkout is never changed and the
/// dependencies stay built between runs.
fn run_group(ws: &Workspace, group: &Group, out: &Path, deadline: Instant) -> Result<bool> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(ws.root())
        .env("CARGO_TARGET_DIR", ws.root().join("target/mutants/build").join(group.name))
        .args(["mutants", "--dir", group.dir, "--package", group.package, "--re", &group.names()])
        .args(["--test-tool", "nextest", "--line-col", "false", "--no-shuffle", "--colors", "never"])
        .arg("--output")
        .arg(out);
    for (file, _) in group.scope {
        command.args(["--file", file]);
    }
    // Passed to the build as well as the test run, so that only those
    // tests are built.
    for arg in group.test_args {
        command.arg(format!("--cargo-arg={arg}"));
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    eprintln!("== mutants: {}: {command:?}", group.name);
    let mut child = command.spawn().context("cannot start cargo mutants")?;
    loop {
        if let Some(status) = child.try_wait()? {
            // cargo-mutants: 0 all caught, 2 some missed, 3 some timed out;
            // anything else (a failing unmutated tree, a bad option) is an error.
            return match status.code() {
                Some(0 | 2 | 3) => Ok(true),
                _ => bail!("cargo mutants ({}) failed: {status}; see {}", group.name, out.display()),
            };
        }
        if Instant::now() >= deadline {
            stop(&mut child);
            return Ok(false);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Interrupts cargo-mutants (which then stops its build or test and removes
/// its copy of the tree), and kills it if it has not ended after 30 seconds.
fn stop(child: &mut std::process::Child) {
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survivors_are_judged_against_the_list() {
        let entry = |mutant: &str| Equivalent { mutant: mutant.into(), why: "same output".into() };
        let missed = vec!["a.rs: replace x in f".to_owned(), "a.rs: replace y in f".to_owned()];
        let listed = [entry("a.rs: replace x in f"), entry("a.rs: replace z in g")];
        let (unexplained, stale) = judge(&missed, &listed);
        assert_eq!(unexplained, ["a.rs: replace y in f"]);
        assert_eq!(stale, ["a.rs: replace z in g"]);
        assert_eq!(judge(&missed[..1], &listed[..1]), (vec![], vec![]));
    }

    #[test]
    fn outcomes_are_read_from_cargo_mutants_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("caught.txt"), "a\nb\n").unwrap();
        std::fs::write(dir.path().join("missed.txt"), "c.rs:12:5: replace d in e\n").unwrap();
        let outcomes = Outcomes::read(dir.path()).unwrap();
        assert_eq!(
            outcomes,
            Outcomes { caught: 2, timeout: 0, unviable: 0, missed: vec!["c.rs: replace d in e".to_owned()] }
        );
        assert_eq!(outcomes.tested(), 3);
    }

    #[test]
    fn the_scope_selects_whole_files_and_named_functions() {
        let group = Group {
            name: "g",
            dir: ".",
            package: "p",
            scope: &[("a/b.rs", &[]), ("a/c.rs", &["f", "T::g"])],
            test_args: &[],
        };
        let re = group.names();
        assert_eq!(re, r"^a/b\.rs:|^a/c\.rs:.*( in (f|T::g)$|: replace (f|T::g) -> )");
    }
}
