//! The library's folders stay in layers (a tidy test over the source tree):
//! a file may use its own folder, the folders below it and the helpers at the
//! crate root, never a folder above it; and no two modules use each other,
//! however indirectly, at any depth (a folder and the modules inside it are
//! one: its `mod.rs` is what they share). Only code counts: lines that are
//! comments are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::support::ws;

/// The folders of `harness/src`, lowest first.
const LAYERS: [&str; 8] = ["tflm", "model", "config", "image", "device", "run", "verdict", "report"];
/// Files at the root that any folder may use and that use no folder.
const HELPERS: [&str; 8] = ["workspace", "strict_toml", "fsutil", "fuzz", "children", "gitrepo", "exit", "timings"];
/// Files at the root that use the folders and that no folder uses.
const TOOLS: [&str; 3] = ["doctor", "bench", "sweep"];

/// Where a top-level module stands: helpers 0, the folders 1 to 8, tools 9.
fn rank(top: &str) -> Option<usize> {
    if HELPERS.contains(&top) {
        Some(0)
    } else if let Some(i) = LAYERS.iter().position(|l| *l == top) {
        Some(i + 1)
    } else {
        TOOLS.contains(&top).then_some(LAYERS.len() + 1)
    }
}

/// The module a file is: `device/runner/pty.rs` is `device::runner::pty`,
/// a folder's `mod.rs` is the folder.
fn module_of(path: &str) -> String {
    let path = path.trim_end_matches(".rs");
    path.strip_suffix("/mod").unwrap_or(path).replace('/', "::")
}

/// The paths a line of code in `module` names, from the crate root: every
/// `crate::...`, and a top-level `use super::...` (indented, in a file's
/// tests, `super` is the file itself). A group (`crate::{a, b::c}`) names
/// each of its items.
fn paths_named(line: &str, module: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|seg| seg.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
            .take_while(|seg| !seg.is_empty())
            .collect()
    };
    let items = |rest: &str| -> Vec<Vec<String>> {
        let Some(group) = rest.strip_prefix('{') else { return vec![ident(rest)] };
        let (mut depth, mut item, mut found) = (0, String::new(), Vec::new());
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
        found
    };
    let mut found = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        if at > 0 && line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `my_crate::`, not the crate root
        }
        found.extend(items(&line[at + "crate::".len()..]));
    }
    let parent: Vec<String> =
        module.split("::").map(str::to_owned).collect::<Vec<_>>().split_last().unwrap().1.to_vec();
    let uses_super = ["use super::", "pub use super::"].iter().find_map(|p| line.strip_prefix(p));
    if let Some(rest) = uses_super {
        found.extend(items(rest).into_iter().map(|item| parent.iter().cloned().chain(item).collect()));
    }
    found.retain(|p| !p.is_empty());
    found
}

/// Whether one of two modules holds the other (or they are the same).
fn nested(a: &str, b: &str) -> bool {
    let within = |inner: &str, outer: &str| inner == outer || inner.starts_with(&format!("{outer}::"));
    within(a, b) || within(b, a)
}

/// Every import that goes up the layers, and every circle between modules,
/// in a source tree given as (path below `src/`, text).
fn violations(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files {
        let node = module_of(path);
        let top = node.split("::").next().unwrap();
        if top == "lib" {
            continue;
        }
        let Some(own) = rank(top) else {
            problems.push(format!("{path}: `{top}` is in no layer; add it to the layers test"));
            continue;
        };
        // A file's unit tests (`mod tests { ... }` at its top level) are a
        // module of their own, inside the file's: what only they use makes
        // no circle.
        let mut from = node.clone();
        let code = text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//"));
        for (n, line) in code {
            match line {
                "mod tests {" => from = format!("{node}::tests"),
                "}" => from = node.clone(),
                _ => {}
            }
            for named in paths_named(line, &node) {
                let Some(theirs) = rank(&named[0]) else { continue };
                if theirs > own {
                    problems.push(format!("{path}:{}: `{top}` uses `{}`, a layer above it", n + 1, named[0]));
                }
                // The deepest module the path names (the rest is an item in it).
                let target = (1..=named.len())
                    .rev()
                    .map(|len| named[..len].join("::"))
                    .find(|m| modules.contains(m))
                    .unwrap_or_else(|| named[0].clone());
                if !nested(&target, &from) {
                    edges.entry(from.clone()).or_default().insert(target);
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
        ("fsutil.rs", "    let x = crate::{config::board, gitrepo};"),
        ("config/board.rs", "// use crate::report; (a comment)"),
        ("image/elf.rs", "use crate::device::session::Session;"),
        ("device/session.rs", ""),
    ]);
    assert_eq!(
        violations(&up),
        [
            "model/tail.rs:1: `model` uses `run`, a layer above it",
            "fsutil.rs:1: `fsutil` uses `config`, a layer above it",
            "image/elf.rs:1: `image` uses `device`, a layer above it",
        ]
    );
    let circle = tree(&[
        ("config/board.rs", "use super::models::ModelSpec;"),
        ("config/models.rs", "pub fn f() -> crate::config::fit::Fit { todo!() }"),
        ("config/fit.rs", "use crate::config::board::Board;"),
    ]);
    assert_eq!(violations(&circle), ["circle: config::board -> config::models -> config::fit -> config::board"]);
    // Inside a folder of a folder: two of its modules that use each other are
    // a circle; a module and the folder's `mod.rs` that holds it are not.
    let inside = tree(&[
        ("device/runner/mod.rs", "use crate::device::runner::pty::open;\npub trait Target {}"),
        ("device/runner/pty.rs", "use super::child::Process;\nuse super::{lines, Target};"),
        ("device/runner/child.rs", "use super::Target;\nfn f() { crate::device::runner::pty::open() }"),
        ("device/runner/lines.rs", "    use super::Target; // its tests"),
    ]);
    assert_eq!(violations(&inside), ["circle: device::runner::child -> device::runner::pty -> device::runner::child"]);
    // What only a file's unit tests use is no circle; up the layers, it is
    // still refused.
    let tests = tree(&[
        ("model/tflite/write.rs", "use super::offline;"),
        ("model/tflite/offline.rs", "#[cfg(test)]\nmod tests {\n    use crate::model::tflite::write::f;\n}"),
        ("model/tflite.rs", "#[cfg(test)]\nmod tests {\n    use crate::run::x;\n}"),
        ("run/mod.rs", ""),
    ]);
    assert_eq!(violations(&tests), ["model/tflite.rs:3: `model` uses `run`, a layer above it"]);
    assert_eq!(
        violations(&tree(&[("mystery.rs", "")])),
        ["mystery.rs: `mystery` is in no layer; add it to the layers test"]
    );
}
