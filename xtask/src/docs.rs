//! `cargo xtask docs`: the book in `book/`, built with mdBook, its internal
//! links checked, and every output it shows from a real run checked against
//! a fresh one (`--update` writes them instead).
//!
//! README.md or a chapter shows a command's output under a marker naming the command:
//! `<!-- cargo xtask docs: ARGS -->` then the output in a `text` fence (or,
//! with `docs, markdown:`, as Markdown), up to `<!-- end of generated -->`.
//! `$TFLM` in ARGS stands for the current TFLM checkout `--tflm` gives;
//! without one, such a block is left as it is and the run names it as skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use harness::fsutil::write_atomic;
use harness::report::page;
use harness::{doctor, Workspace};

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Write each generated output into the book from a fresh run, instead
    /// of failing where the book differs.
    #[arg(long)]
    update: bool,
    /// A current TFLM checkout, or a directory holding one as
    /// `tflite-micro-*.tar.gz` (as `xtask test --test-tflm`), for the outputs
    /// that need one ($TFLM). Without it they are left as they are, and named.
    #[arg(long, value_name = "DIR")]
    tflm: Option<PathBuf>,
}

const MARKER: &str = "<!-- cargo xtask docs";
const END: &str = "<!-- end of generated -->";

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let book = ws.root().join("book");
    let tflm = args.tflm.as_deref().map(|given| crate::test::tflm_checkout(ws.root(), given)).transpose()?;
    let xtask = std::env::current_exe().context("cannot find the xtask binary")?;
    let mut stale = Vec::new();
    let skipped = std::cell::RefCell::new(Vec::new());
    for chapter in documents(ws.root())? {
        let text = std::fs::read_to_string(&chapter).with_context(|| format!("cannot read {}", chapter.display()))?;
        let fresh = regenerate(&text, &|args| {
            let args = match (args.contains("$TFLM"), &tflm) {
                (false, _) => args.to_owned(),
                (true, Some(tree)) => args.replace("$TFLM", &tree.display().to_string()),
                (true, None) => {
                    skipped.borrow_mut().push(format!("{} (`{args}`)", ws.shown(&chapter)));
                    return Ok(None);
                }
            };
            eprintln!("== docs: cargo xtask {args}");
            output(&xtask, ws.root(), &args).map(Some)
        })
        .with_context(|| format!("in {}", chapter.display()))?;
        if fresh != text {
            if args.update {
                write_atomic(&chapter, fresh.as_bytes())
                    .with_context(|| format!("cannot write {}", chapter.display()))?;
                eprintln!("== docs: wrote {}", ws.shown(&chapter));
            } else {
                stale.push(ws.shown(&chapter));
            }
        }
    }
    let mut broken = broken_links(ws.root())?;
    broken.extend(broken_report_links(ws.root()));
    for link in &broken {
        eprintln!("broken link: {link}");
    }
    doctor::ensure(&[doctor::Need::CargoTool(doctor::MDBOOK)], ws.root(), true, &mut |line| eprintln!("{line}"))?;
    let status = Command::new("mdbook").arg("build").arg(&book).status().context("cannot run mdbook")?;
    if !status.success() {
        bail!("mdbook could not build {}", book.display());
    }
    eprintln!("== docs: the book is in {}", ws.shown(&ws.root().join("target/book")));
    if !stale.is_empty() {
        eprintln!(
            "== docs: what these files show differs from a fresh run: {}; `cargo xtask docs --update` writes it",
            stale.join(", ")
        );
    }
    let skipped = skipped.into_inner();
    if !skipped.is_empty() {
        eprintln!(
            "== docs: {} generated block(s) not checked, left as they are: no TFLM checkout to run them on: {}; \
             `cargo xtask docs --tflm DIR` (or `cargo xtask ci --test-tflm DIR`) checks them",
            skipped.len(),
            skipped.join(", ")
        );
    }
    Ok(if stale.is_empty() && broken.is_empty() { exit::OK } else { exit::REGRESSION })
}

/// README.md, then the book's chapters in name order.
fn documents(root: &Path) -> Result<Vec<PathBuf>> {
    let src = root.join("book/src");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&src)
        .with_context(|| format!("cannot read {}", src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    found.sort();
    found.insert(0, root.join("README.md"));
    Ok(found)
}

/// What `cargo xtask ARGS` prints on its standard output; an error when it
/// fails to run (a regression's status, 1, still prints the run's tables).
fn output(xtask: &Path, root: &Path, args: &str) -> Result<String> {
    let out = Command::new(xtask)
        .current_dir(root)
        .args(args.split_whitespace())
        .output()
        .with_context(|| format!("cannot run cargo xtask {args}"))?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        bail!("`cargo xtask {args}` failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
}

/// `text` with each generated block written anew from `run(ARGS)`, or kept
/// as it is where `run` gives nothing (a block it cannot run here).
fn regenerate(text: &str, run: &dyn Fn(&str) -> Result<Option<String>>) -> Result<String> {
    let mut out = String::new();
    let mut rest = text;
    // A marker opens a line; one quoted in prose (in a code span) is text.
    let marker_at =
        |rest: &str| rest.match_indices(MARKER).map(|(at, _)| at).find(|&at| at == 0 || rest[..at].ends_with('\n'));
    while let Some(at) = marker_at(rest) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let line_end = from.find('\n').map_or(from.len(), |i| i + 1);
        let marker = &from[..line_end];
        let Some(spec) = marker.trim().strip_prefix(MARKER).and_then(|m| m.strip_suffix("-->")) else {
            bail!("a marker that does not end on its line: {}", marker.trim());
        };
        let (markdown, args) = match spec.trim().split_once(':') {
            Some((", markdown", args)) => (true, args.trim()),
            Some(("", args)) => (false, args.trim()),
            _ => bail!("a marker that names no command: {}", marker.trim()),
        };
        let Some(end) = from.find(END) else { bail!("`{}` has no `{END}`", marker.trim()) };
        out.push_str(marker);
        match (run(args)?, markdown) {
            (None, _) => out.push_str(&from[line_end..end]),
            (Some(printed), true) => out.push_str(&format!("{printed}\n")),
            (Some(printed), false) => out.push_str(&format!("```text\n{printed}\n```\n")),
        }
        rest = &from[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The links of README.md and the book's chapters that lead nowhere: a
/// file of the repository that is not there, or a heading a chapter does
/// not have (`#anchor`, as mdBook makes them). Addresses off the repository
/// (`http...`, `mailto:`) are not followed.
fn broken_links(root: &Path) -> Result<Vec<String>> {
    let mut broken = Vec::new();
    for file in &documents(root)? {
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        let from = file.strip_prefix(root).unwrap_or(file).display().to_string();
        let dir = file.parent().unwrap_or(root);
        broken.extend(links(&text).iter().filter_map(|target| broken_link(&from, file, dir, target)));
    }
    Ok(broken)
}

/// The HTML report's links into the book that lead nowhere.
fn broken_report_links(root: &Path) -> Vec<String> {
    let chapters = root.join("book/src");
    let target = |chapter: page::Chapter| match chapter.section() {
        (file, "") => format!("{file}.md"),
        (file, anchor) => format!("{file}.md#{anchor}"),
    };
    page::Chapter::ALL
        .into_iter()
        .filter_map(|c| broken_link(&format!("the HTML report ({c:?})"), &chapters, &chapters, &target(c)))
        .collect()
}

/// `target`, linked from `file` (shown as `from`) in `dir`, if it leads
/// nowhere: why.
fn broken_link(from: &str, file: &Path, dir: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').map_or((target, None), |(p, a)| (p, Some(a)));
    let linked = if path.is_empty() { file.to_owned() } else { dir.join(path) };
    if !linked.exists() {
        return Some(format!("{from} -> {target} (no such file)"));
    }
    let headings = std::fs::read_to_string(&linked).map(|t| anchors(&t)).unwrap_or_default();
    let missing = anchor.is_some_and(|anchor| !headings.iter().any(|h| h == anchor));
    missing.then(|| format!("{from} -> {target} (no such heading)"))
}

/// The targets of the inline links `[text](target)` of Markdown `text`,
/// outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for (at, _) in prose.match_indices("](") {
            if let Some(end) = prose[at + 2..].find(')') {
                found.push(prose[at + 2..at + 2 + end].trim().to_owned());
            }
        }
    }
    found
}

/// The anchors mdBook gives the headings of `text`: lower case, spaces as
/// dashes, only letters, digits, `_` and `-` kept; a repeated one gets
/// `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(title) = line.strip_prefix('#').filter(|_| !fenced) else { continue };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let id: String = title
            .trim()
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c.to_ascii_lowercase()),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let repeats = found.iter().filter(|f| **f == id || f.strip_prefix(&format!("{id}-")).is_some()).count();
        found.push(if repeats == 0 { id } else { format!("{id}-{repeats}") });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_block_is_written_from_its_command_and_the_rest_kept() {
        let text = "# T\n\nbefore\n<!-- cargo xtask docs: boards -->\n```text\nold\n```\n<!-- end of generated -->\n\
                    between\n<!-- cargo xtask docs, markdown: analyze --operators --tflm $TFLM -->\n| old |\n\
                    <!-- end of generated -->\nafter\n";
        let fresh = regenerate(text, &|args| Ok(Some(format!("ran {args}")))).unwrap();
        assert_eq!(
            fresh,
            "# T\n\nbefore\n<!-- cargo xtask docs: boards -->\n```text\nran boards\n```\n<!-- end of generated -->\n\
             between\n<!-- cargo xtask docs, markdown: analyze --operators --tflm $TFLM -->\nran analyze --operators \
             --tflm $TFLM\n<!-- end of generated -->\nafter\n"
        );
        assert_eq!(regenerate(&fresh, &|args| Ok(Some(format!("ran {args}")))).unwrap(), fresh, "a fixed point");
        assert_eq!(regenerate("no marker\n", &|_| bail!("not run")).unwrap(), "no marker\n");
        let unended = "<!-- cargo xtask docs: boards -->\n```text\nold\n```\n";
        assert!(regenerate(unended, &|a| Ok(Some(a.into()))).unwrap_err().to_string().contains("has no"));
        let quoted = "Each `<!-- cargo xtask docs: ARGS -->` marker, as in\n<!-- cargo xtask docs: boards -->\n```text\nold\n```\n<!-- end of generated -->\n";
        assert_eq!(
            regenerate(quoted, &|args| Ok(Some(format!("ran {args}")))).unwrap(),
            quoted.replace("old", "ran boards"),
            "a marker quoted in prose is text"
        );
        let nameless = "<!-- cargo xtask docs boards -->\n<!-- end of generated -->\n";
        assert!(regenerate(nameless, &|a| Ok(Some(a.into()))).unwrap_err().to_string().contains("names no command"));
        let failing = regenerate(text, &|_| bail!("it failed")).unwrap_err();
        assert_eq!(failing.to_string(), "it failed");
    }

    #[test]
    fn a_block_that_cannot_run_here_is_kept_as_it_is_and_the_rest_written() {
        let text = "<!-- cargo xtask docs: boards -->\n```text\nold\n```\n<!-- end of generated -->\nmiddle\n\
                    <!-- cargo xtask docs, markdown: analyze --operators --tflm $TFLM -->\n| old |\n| --- |\n\
                    <!-- end of generated -->\nend\n";
        let skipping = |args: &str| Ok((!args.contains("$TFLM")).then(|| format!("ran {args}")));
        assert_eq!(
            regenerate(text, &skipping).unwrap(),
            "<!-- cargo xtask docs: boards -->\n```text\nran boards\n```\n<!-- end of generated -->\nmiddle\n\
             <!-- cargo xtask docs, markdown: analyze --operators --tflm $TFLM -->\n| old |\n| --- |\n\
             <!-- end of generated -->\nend\n"
        );
        assert_eq!(regenerate(text, &|_| Ok(None)).unwrap(), text, "nothing run, nothing changed");
    }

    #[test]
    fn links_and_anchors_are_read_as_markdown_and_mdbook_make_them() {
        let text = "See [a](a.md) and [b](b.md#the-part), `[not](code.md)`.\n```\n[no](fenced.md)\n```\n[c](#here)\n";
        assert_eq!(links(text), ["a.md", "b.md#the-part", "#here"]);
        let headings = "# The `hil` command\n## What it prints\n### What it prints\n```\n# not a heading\n```\n#tag\n";
        assert_eq!(anchors(headings), ["the-hil-command", "what-it-prints", "what-it-prints-1"]);
    }

    #[test]
    fn the_reports_links_lead_to_sections_the_book_has() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(broken_report_links(root), Vec::<String>::new());
        let moved = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(moved.path().join("book/src")).unwrap();
        std::fs::write(moved.path().join("book/src/scenarios.md"), "# Scenarios\n## Figures\n").unwrap();
        let broken = broken_report_links(moved.path());
        assert!(broken.contains(&"the HTML report (Figures) -> scenarios.md#the-figures (no such heading)".into()));
        assert!(broken.contains(&"the HTML report (Verdicts) -> baselines.md (no such file)".into()));
    }

    #[test]
    fn a_link_to_a_missing_file_or_heading_is_broken() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("book/src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(root.path().join("README.md"), "[ok](book/src/a.md#part-one) [gone](book/src/z.md)\n").unwrap();
        std::fs::write(src.join("a.md"), "# A\n## Part one\n[up](../../README.md) [self](#a) [no](#part-two)\n")
            .unwrap();
        std::fs::write(src.join("b.md"), "[a](a.md#nowhere) [web](https://example.com/x.md)\n").unwrap();
        assert_eq!(
            broken_links(root.path()).unwrap(),
            [
                "README.md -> book/src/z.md (no such file)",
                "book/src/a.md -> #part-two (no such heading)",
                "book/src/b.md -> a.md#nowhere (no such heading)",
            ]
        );
    }
}
