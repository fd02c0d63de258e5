//! The library's folders stay in layers (a tidy test over the source tree):
//! a file may use its own folder, the folders below it and the helpers at the
//! crate root, never a folder above it; and no two modules use each other,
//! however indirectly. Only code counts: lines that are comments are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::support::ws;

/// The folders of `harness/src`, lowest first.
const LAYERS: [&str; 6] = ["model", "spec", "target", "run", "verdict", "report"];
/// Files at the root that any folder may use and that use no folder.
const HELPERS: [&str; 6] = ["workspace", "strict_toml", "fsutil", "fuzz", "children", "gitrepo"];
/// Files at the root that use the folders and that no folder uses.
const TOOLS: [&str; 3] = ["doctor", "bench", "sweep"];

/// Where a top-level module stands: helpers 0, the folders 1 to 6, tools 7.
fn rank(top: &str) -> Option<usize> {
    if HELPERS.contains(&top) {
        Some(0)
    } else if let Some(i) = LAYERS.iter().position(|l| *l == top) {
        Some(i + 1)
    } else {
        TOOLS.contains(&top).then_some(LAYERS.len() + 1)
    }
}

/// The module a file belongs to for the graph: a root file, a folder's own
/// `mod.rs`, or a folder's module (with everything below it).
fn node_of(path: &str) -> String {
    let parts: Vec<&str> = path.trim_end_matches(".rs").split('/').collect();
    match parts.as_slice() {
        [top] => top.to_string(),
        [layer, "mod"] => layer.to_string(),
        [layer, module, ..] => format!("{layer}::{module}"),
        [] => unreachable!(),
    }
}

/// The paths a line of code names from the crate root, as their first two
/// segments (`crate::spec::board::Board` gives `spec::board`). In a file
/// directly inside a folder, a top-level `use super::x` names its sibling
/// `x` (indented, `super` is the file itself, as in its tests).
fn paths_named(line: &str, path: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|seg| seg.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
            .take_while(|seg| !seg.is_empty())
            .take(2)
            .collect()
    };
    let mut found = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        if at > 0 && line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `my_crate::`, not the crate root
        }
        let rest = &line[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c}`: each item at the group's top level.
            let (mut depth, mut item) = (0, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(ident(item.trim()));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            found.push(ident(item.trim()));
        } else {
            found.push(ident(rest));
        }
    }
    let sibling = line.strip_prefix("use super::").or_else(|| line.strip_prefix("pub use super::"));
    if let (Some(rest), [layer, file]) = (sibling, path.split('/').collect::<Vec<_>>().as_slice()) {
        if *file != "mod.rs" {
            found.push([layer.to_string()].into_iter().chain(ident(rest).into_iter().take(1)).collect());
        }
    }
    found.retain(|p| !p.is_empty());
    found
}

/// Every import that goes up the layers, and every circle between modules,
/// in a source tree given as (path below `src/`, text).
fn violations(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<String> = files.iter().map(|(p, _)| node_of(p)).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files {
        let node = node_of(path);
        let top = node.split("::").next().unwrap();
        if top == "lib" {
            continue;
        }
        let Some(own) = rank(top) else {
            problems.push(format!("{path}: `{top}` is in no layer; add it to the layers test"));
            continue;
        };
        let code = text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//"));
        for (n, line) in code {
            for named in paths_named(line, path) {
                let Some(theirs) = rank(&named[0]) else { continue };
                if theirs > own {
                    problems.push(format!("{path}:{}: `{top}` uses `{}`, a layer above it", n + 1, named[0]));
                }
                let target = match named.as_slice() {
                    [layer, module] if modules.contains(&format!("{layer}::{module}")) => format!("{layer}::{module}"),
                    _ => named[0].clone(),
                };
                if target != node {
                    edges.entry(node.clone()).or_default().insert(target);
                }
            }
        }
    }
    problems.extend(circles(&edges));
    problems
}

/// One message per circle found by a depth-first walk of `edges`.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn walk(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(start) = path.iter().position(|p| p == node) {
            found.push(format!("circle: {} -> {node}", path[start..].join(" -> ")));
            return;
        }
        if !done.insert(node.to_owned()) {
            return;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            walk(next, edges, path, done, found);
        }
        path.pop();
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for node in edges.keys() {
        walk(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn source_tree(dir: &Path, below: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_tree(&path, below, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.strip_prefix(below).unwrap().to_str().unwrap().to_owned();
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn the_harness_imports_only_down_its_layers() {
    let src = ws().root().join("harness/src");
    let mut files = Vec::new();
    source_tree(&src, &src, &mut files);
    assert!(files.len() > 30, "read {} files from {}", files.len(), src.display());
    let problems = violations(&files);
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
}

#[test]
fn an_import_up_the_layers_and_a_circle_are_found() {
    let tree = |files: &[(&str, &str)]| -> Vec<(String, String)> {
        files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    };
    let up = tree(&[
        ("model/tail.rs", "use crate::run::results::Results;"),
        ("run/results.rs", ""),
        ("fsutil.rs", "    let x = crate::{spec::board, gitrepo};"),
        ("spec/board.rs", "// use crate::report; (a comment)"),
    ]);
    assert_eq!(
        violations(&up),
        [
            "model/tail.rs:1: `model` uses `run`, a layer above it",
            "fsutil.rs:1: `fsutil` uses `spec`, a layer above it",
        ]
    );
    let circle = tree(&[
        ("spec/board.rs", "use super::models::ModelSpec;"),
        ("spec/models.rs", "pub fn f() -> crate::spec::fit::Fit { todo!() }"),
        ("spec/fit.rs", "use crate::spec::board::Board;"),
        ("target/runner/pty.rs", "use super::child; use crate::spec::board;"),
        ("target/runner/child.rs", "use super::pty;"),
    ]);
    assert_eq!(violations(&circle), ["circle: spec::board -> spec::models -> spec::fit -> spec::board"]);
    assert_eq!(
        violations(&tree(&[("mystery.rs", "")])),
        ["mystery.rs: `mystery` is in no layer; add it to the layers test"]
    );
}
