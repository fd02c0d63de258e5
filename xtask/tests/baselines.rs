//! Baselines in real (temporary) git repositories, through the command line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use git2::{Repository, Signature};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A git repository with `baselines/qemu-m7/hello_world.toml` (the
/// repository's own, with arena_used_bytes of single-frame set to `used`)
/// committed.
struct Repo {
    dir: tempfile::TempDir,
    repo: Repository,
}

const APPROVED: &str = include_str!("../../baselines/qemu-m7/hello_world.toml");

impl Repo {
    fn new(used: i64) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut config = repo.config().unwrap();
        config.set_str("user.name", "Test Reviewer").unwrap();
        config.set_str("user.email", "reviewer@example.com").unwrap();
        let repo_dir = Repo { dir, repo };
        repo_dir.write_baseline(used);
        repo_dir.commit_all("first baselines");
        repo_dir
    }

    fn baselines(&self) -> PathBuf {
        self.dir.path().join("baselines")
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    fn file(&self) -> PathBuf {
        self.baselines().join("qemu-m7/hello_world.toml")
    }

    fn write_baseline(&self, used: i64) {
        let original = "[scenario.single-frame]\narena_capacity_bytes = 3072\narena_head_bytes = 48\narena_tail_bytes = 1424\narena_touched_bytes = 2676\narena_used_bytes = 1472\n";
        assert!(APPROVED.contains(original), "the repository's baseline changed; update this test");
        let text = APPROVED
            .replace(original, &original.replace("arena_used_bytes = 1472", &format!("arena_used_bytes = {used}")));
        std::fs::create_dir_all(self.file().parent().unwrap()).unwrap();
        std::fs::write(self.file(), text).unwrap();
    }

    fn commit_all(&self, message: &str) {
        let mut index = self.repo.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = self.repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("Test", "test@example.com").unwrap();
        let parents: Vec<git2::Commit> =
            self.repo.head().ok().and_then(|h| h.peel_to_commit().ok()).into_iter().collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        self.repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents).unwrap();
    }

    fn hil(&self, extra: &[&str]) -> Output {
        let (b, o) = (self.baselines(), self.out());
        let mut args = vec!["hil", "--model", "hello_world", "--scenario", "single-frame"];
        args.extend(["--baselines", b.to_str().unwrap(), "--out", o.to_str().unwrap()]);
        args.extend(extra);
        xtask(&args)
    }

    fn baseline(&self, extra: &[&str]) -> Output {
        let (b, o) = (self.baselines(), self.out());
        let mut args = vec!["baseline", "--baselines", b.to_str().unwrap(), "--results", o.to_str().unwrap()];
        args.extend(extra);
        xtask(&args)
    }

    fn head(&self) -> git2::Commit<'_> {
        self.repo.head().unwrap().peel_to_commit().unwrap()
    }
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_lowered_baseline_is_a_regression_a_tolerance_forgives_it_and_runs_never_write_baselines() {
    let repo = Repo::new(1470);
    let before = snapshot(&repo.baselines());
    let out = repo.hil(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let text = text(&out);
    let row = text
        .lines()
        .find(|l| l.contains("arena_used_bytes") && l.contains("REGRESSED"))
        .unwrap_or_else(|| panic!("{text}"));
    for part in ["qemu-m7", "hello_world", "single-frame", "1470", "1472", "+2"] {
        assert!(row.contains(part), "{part} missing from: {row}");
    }
    assert!(repo.out().join("pending/qemu-m7/hello_world.toml").is_file());
    let junit = std::fs::read_to_string(repo.out().join("junit.xml")).unwrap();
    assert!(junit.contains("failures=\"1\"") && junit.contains("arena_used_bytes"), "{junit}");
    assert_eq!(snapshot(&repo.baselines()), before, "the regressing run wrote into baselines/");

    std::fs::write(repo.baselines().join("policy.toml"), "[tolerance]\narena_used_bytes = { bytes = 8 }\n").unwrap();
    let before_with_policy = snapshot(&repo.baselines());
    let out = repo.hil(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", self::text(&out));
    assert!(self::text(&out).lines().any(|l| l.contains("arena_used_bytes") && l.contains("within tolerance")));
    assert_eq!(snapshot(&repo.baselines()), before_with_policy, "a run wrote into baselines/");
    assert_ne!(before, before_with_policy);
}

#[test]
fn approving_commits_exactly_the_baselines_and_history_and_against_read_git() {
    let repo = Repo::new(1470);
    assert_eq!(repo.hil(&[]).status.code(), Some(1));

    // Unrelated work in progress: a staged change and an untracked file.
    std::fs::write(repo.dir.path().join("notes.txt"), "staged, not for the baseline commit").unwrap();
    let mut index = repo.repo.index().unwrap();
    index.add_path(Path::new("notes.txt")).unwrap();
    index.write().unwrap();
    std::fs::write(repo.dir.path().join("scratch.txt"), "untracked").unwrap();

    let first = repo.head().id();
    let out = repo.baseline(&["approve", "--all", "--commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let head = repo.head();
    assert_eq!(head.parent_id(0).unwrap(), first, "exactly one new commit");
    let diff = repo
        .repo
        .diff_tree_to_tree(Some(&head.parent(0).unwrap().tree().unwrap()), Some(&head.tree().unwrap()), None)
        .unwrap();
    let touched: Vec<_> = diff.deltas().map(|d| d.new_file().path().unwrap().to_owned()).collect();
    assert_eq!(touched, [PathBuf::from("baselines/qemu-m7/hello_world.toml")]);
    let message = head.message().unwrap();
    assert!(message.contains("`arena_used_bytes` | 1470 | 1472 | +2"), "{message}");
    assert!(message.contains("Approved-by: Test Reviewer <reviewer@example.com>"), "{message}");
    // The unrelated change is still staged, and not committed.
    let status = repo.repo.status_file(Path::new("notes.txt")).unwrap();
    assert!(status.contains(git2::Status::INDEX_NEW), "{status:?}");
    assert!(!repo.out().join("pending/qemu-m7/hello_world.toml").exists(), "approved candidates are consumed");

    // Now the run matches, and against the previous commit it regresses,
    // without the work tree changing.
    assert_eq!(repo.hil(&[]).status.code(), Some(0));
    let work_tree = std::fs::read(repo.file()).unwrap();
    let out = repo.hil(&["--against", "HEAD~1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("against baselines in HEAD~1: 1 REGRESSED"), "{}", text(&out));
    assert_eq!(std::fs::read(repo.file()).unwrap(), work_tree);
    assert!(repo.repo.status_file(Path::new("baselines/qemu-m7/hello_world.toml")).unwrap().is_empty());

    let out =
        repo.baseline(&["history", "--board", "qemu-m7", "--model", "hello_world", "--metric", "arena_used_bytes"]);
    let values: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("single-frame"))
        .filter_map(|l| l.split('│').nth(5).map(str::trim))
        .collect();
    assert_eq!(values, ["1470", "1472"], "{}", text(&out));

    let out = repo.baseline(&["diff", "--against", "HEAD~1"]);
    assert!(
        text(&out).contains("| qemu-m7 | hello_world | single-frame | `arena_used_bytes` | 1470 | 1472 | +2 |"),
        "{}",
        text(&out)
    );
}

#[test]
fn approving_refuses_baselines_with_uncommitted_edits() {
    let repo = Repo::new(1470);
    assert_eq!(repo.hil(&[]).status.code(), Some(1));
    repo.write_baseline(1400); // a hand edit, not committed
    let first = repo.head().id();
    let out = repo.baseline(&["approve", "--all", "--commit"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("uncommitted changes to baseline files (baselines/qemu-m7/hello_world.toml)"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.head().id(), first);
}

#[test]
fn damaged_baselines_stop_the_run_naming_file_and_key() {
    let repo = Repo::new(1472);
    let good = std::fs::read_to_string(repo.file()).unwrap();
    // Cut inside a line, as an interrupted copy leaves a file.
    let cut = good.find("[scenario.single-frame]").unwrap() + "[scenario.single-frame]\narena_cap".len();
    let cases = [
        (good[..cut].to_owned(), "line"),
        (
            good.replace("arena_used_bytes = 1472", "arena_used_bytes = \"lots\""),
            "key `scenario.concurrent-ota.arena_used_bytes`",
        ),
        (good.replace("[meta]", "[meta]\nreviewed = true"), "unknown field `reviewed`"),
    ];
    for (text, expected) in cases {
        std::fs::write(repo.file(), text).unwrap();
        let out = repo.hil(&[]);
        assert_eq!(out.status.code(), Some(2), "{}", self::text(&out));
        assert!(
            self::text(&out).contains("baselines/qemu-m7/hello_world.toml") && self::text(&out).contains(expected),
            "{}",
            self::text(&out)
        );
    }
}

#[test]
fn review_asks_about_each_change_and_does_what_it_is_told() {
    use std::io::Write;
    let repo = Repo::new(1470);
    assert_eq!(repo.hil(&[]).status.code(), Some(1));
    let (b, o) = (repo.baselines(), repo.out());
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["baseline", "--baselines", b.to_str().unwrap(), "--results", o.to_str().unwrap(), "review"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Skip first: the candidate stays pending and the baseline is untouched.
    child.stdin.take().unwrap().write_all(b"s\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("qemu-m7/hello_world single-frame: [a]ccept, [r]eject, [s]kip?"), "{}", text(&out));
    assert!(std::fs::read_to_string(repo.file()).unwrap().contains("arena_used_bytes = 1470"));
    assert!(repo.out().join("pending/qemu-m7/hello_world.toml").exists());

    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["baseline", "--baselines", b.to_str().unwrap(), "--results", o.to_str().unwrap(), "review"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"a\n").unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    assert!(std::fs::read_to_string(repo.file()).unwrap().contains("arena_used_bytes = 1472"));
    assert!(!repo.out().join("pending/qemu-m7/hello_world.toml").exists());
}

/// Runs the headless browser on `page`: the DOM after the page's script ran,
/// and the browser's log (console messages among it).
fn browse(page: &Path, extra: &[String]) -> (String, String) {
    let browser = harness::doctor::browser().expect("a headless browser (run `cargo xtask doctor`)");
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"])
        .args(["--enable-logging=stderr", "--v=0"])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The page of a real run, opened in a real browser: no console message,
/// one rectangle per planned tensor, a stack-up row per run, trends through
/// both committed versions of the baseline, and the regression marked. The
/// screenshot is kept under the target directory for CI to publish.
#[test]
fn the_report_page_shows_the_run_in_a_browser() {
    // Two versions of hello_world's baseline; the second is lower than what
    // the firmware uses, so this run regresses against it.
    let repo = Repo::new(1472);
    repo.write_baseline(1400);
    repo.commit_all("a lower baseline");
    let (b, o) = (repo.baselines(), repo.out());
    let mut args = vec!["hil", "--model", "hello_world", "--model", "person_detection", "--report"];
    args.extend(["--scenario", "single-frame", "--scenario", "stream"]);
    args.extend(["--baselines", b.to_str().unwrap(), "--out", o.to_str().unwrap()]);
    // The book where the book workflow publishes it, as in GitHub Actions.
    let book = [("GITHUB_REPOSITORY", "Hilmem-Org/hilmem"), ("HILMEM_BOOK_URL", "")];
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(&args).envs(book).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a regression: {}", text(&out));
    let page = o.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // It opens with the verdict.
    let opening = html.split("<h1>hilmem memory report</h1>\n").nth(1).unwrap();
    assert!(opening.starts_with("<p class=\"verdict regressed\">REGRESSED: 1 figure above"), "{opening}");
    // It names no path of this machine (the checkout, the run's baselines,
    // the home directory, cargo's registry) and fetches nothing.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let registry = format!("{}/registry", std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo")));
    for machine_path in [root.to_str().unwrap(), repo.dir.path().to_str().unwrap(), &format!("{home}/"), &registry] {
        assert!(!html.contains(machine_path), "the page names {machine_path}");
    }
    for fetch in ["src=\"", "src='", "url(", "@import", "<link", "fetch(", "XMLHttpRequest"] {
        assert!(!html.contains(fetch), "the page fetches something: `{fetch}`");
    }
    // Its only links off the page lead to the book's sections.
    let off_page: Vec<&str> =
        html.split("href=\"").skip(1).map(|h| &h[..h.find('"').unwrap()]).filter(|h| !h.starts_with('#')).collect();
    let published = "https://hilmem-org.github.io/hilmem/";
    assert!(off_page.iter().all(|h| h.starts_with(published)) && off_page.len() >= 5, "{off_page:?}");

    let (dom, log) = browse(&page, &["--dump-dom".into()]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("data-ready-ms="), "the page's script did not run");
    // One rectangle per planned tensor, per model and plan.
    for (model, planned) in [("hello_world", 6), ("person_detection", 30)] {
        let start = dom.find(&format!("<figure class=\"layout\" data-model=\"{model}\" data-planned=\"{planned}\">"));
        let figure = &dom[start.unwrap_or_else(|| panic!("no layout of {model}"))..];
        let figure = &figure[..figure.find("</figure>").unwrap()];
        let plans: Vec<&str> = figure.split("<div class=\"plan\" data-plan=\"").skip(1).collect();
        let names: Vec<&str> = plans.iter().map(|p| &p[..p.find('"').unwrap()]).collect();
        assert_eq!(names, ["greedy", "hilmem", "linear"], "{model}");
        for plan in plans {
            assert_eq!(plan.matches("<rect class=\"tensor\"").count(), planned, "{model}");
        }
    }
    // A stack-up row for every model and scenario of the board.
    let stackup = &dom[dom.find("<figure class=\"stackup\" data-board=\"qemu-m7\" data-rows=\"4\">").unwrap()..];
    let stackup = &stackup[..stackup.find("</figure>").unwrap()];
    assert_eq!(stackup.matches("<rect class=\"row\"").count(), 4);
    for row in
        ["hello_world single-frame", "hello_world stream", "person_detection single-frame", "person_detection stream"]
    {
        assert!(stackup.contains(row), "{row}");
    }
    // The regression: in the table, and on the trend, which has both
    // committed versions and this run.
    // The figure links to where the book explains it.
    assert!(dom.contains(&format!("<tr class=\"regressed\"><td>qemu-m7</td><td>hello_world</td><td>single-frame</td><td><a class=\"book\" href=\"{published}scenarios.html#the-figures\">arena_used_bytes</a></td><td class=\"n\">1400</td><td class=\"n\">1472</td>")), "{dom}");
    let trend = &dom[dom.find("<figure class=\"trend regressed\" data-board=\"qemu-m7\" data-model=\"hello_world\" data-metric=\"arena_used_bytes\">").unwrap()..];
    let trend = &trend[..trend.find("</figure>").unwrap()];
    assert!(trend.contains("single-frame: 1472 at ") && trend.contains("single-frame: 1400 at "), "{trend}");
    assert!(trend.contains("class=\"current regressed\"") && trend.contains(">REGRESSED</text>"), "{trend}");
    // The figures that did not move have no chart: they are folded per board.
    assert_eq!(dom.matches("<figure class=\"trend").count(), 1, "only the figure that moved has its trend");
    assert_eq!(dom.matches("<details class=\"unchanged\"><summary>qemu-m7: ").count(), 1);
    let folded = &dom[dom.find("<details class=\"unchanged\">").unwrap()..];
    let folded = &folded[..folded.find("</details>").unwrap()];
    assert!(folded.contains("<li>hello_world: ") && folded.contains("stack_peak_bytes"), "{folded}");

    // `cargo xtask report` makes the same page from the saved run; without
    // one it says what to do.
    std::fs::remove_file(&page).unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["report", "--out", o.to_str().unwrap(), "--baselines", b.to_str().unwrap()])
        .envs(book)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);
    let empty = repo.dir.path().join("empty");
    let none = xtask(&["report", "--out", empty.to_str().unwrap()]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        text(&none).contains("results.json") && text(&none).contains("run `cargo xtask hil` first"),
        "{}",
        text(&none)
    );

    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&kept).unwrap();
    let shot = kept.join("report.png");
    browse(&page, &["--window-size=1400,3000".into(), format!("--screenshot={}", shot.display())]);
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    std::fs::copy(&page, kept.join("report.html")).unwrap();
}

/// Every layout a baseline file has had keeps its points in the history
/// (each earlier one as this repository committed it, then today's); a
/// version that cannot be read is left out and named.
#[test]
fn history_keeps_every_earlier_layout_and_names_an_unreadable_version() {
    let repo = Repo::new(1472);
    let layouts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/src/verdict/baseline_formats");
    let mut earlier: Vec<PathBuf> = std::fs::read_dir(&layouts).unwrap().map(|e| e.unwrap().path()).collect();
    earlier.sort();
    assert_eq!(earlier.len(), 5, "{}", layouts.display());
    for (i, file) in earlier.iter().enumerate() {
        let text = std::fs::read_to_string(file).unwrap();
        let single_frame = text.split("[scenario.single-frame]").nth(1).unwrap();
        assert!(single_frame.contains("arena_used_bytes = 1472\n"), "{}", file.display());
        let text = text.replace("arena_used_bytes = 1472\n", &format!("arena_used_bytes = {}\n", 1401 + i));
        std::fs::write(repo.file(), text).unwrap();
        repo.commit_all(&format!("layout {}", file.display()));
    }
    std::fs::write(repo.file(), "[meta\nnot a baseline").unwrap();
    repo.commit_all("a broken version");
    repo.write_baseline(1488);
    repo.commit_all("today's layout");
    let out =
        repo.baseline(&["history", "--board", "qemu-m7", "--model", "hello_world", "--metric", "arena_used_bytes"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for value in ["1472", "1401", "1402", "1403", "1404", "1405", "1488"] {
        assert!(stdout.contains(value), "{value}: {stdout}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("skipped a version that cannot be read").count(), 1, "{stderr}");
    assert!(stderr.contains("hello_world.toml@"), "{stderr}");
}
