//! ARCHITECTURE.md and the book's Internals chapter name the code as it is
//! (a tidy test): every test, module, type and function they cite between
//! backticks is defined in the repository's Rust sources, and every path of
//! the repository they cite exists.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::ws;

/// The documents whose names are checked, from the repository's root.
const DOCUMENTS: [&str; 2] = ["ARCHITECTURE.md", "book/src/internals.md"];

/// The folders whose Rust sources define the names the documents may cite.
const SOURCES: [&str; 3] = ["harness", "xtask", "firmware"];

/// Names of TFLM's the documents cite (its C++, the metadata that carries an
/// offline plan) that neither a Rust source nor the firmware's own C++ (the
/// shim) defines or uses.
const TFLM_NAMES: [&str; 11] = [
    "OfflineMemoryAllocation",
    "MicroAllocator",
    "Create",
    "GetDefaultTailUsage",
    "RequestScratchBufferInArena",
    "AllocateTensors",
    "Invoke",
    "AllocationInfoBuilder",
    "AllocationInfo",
    "ParseOpData",
    "Init",
];

/// The top folders of the repository a cited path may start with (cargo's
/// `target/` is not one: its paths are made by a build).
const REPOSITORY_FOLDERS: [&str; 9] =
    ["harness/", "xtask/", "firmware/", "boards/", "baselines/", "book/", ".github/", ".ci/", ".config/"];

/// Every name a Rust source of `dir` defines: items (`fn`, `struct`, `enum`,
/// `trait`, `type`, `const`, `static`, `mod`), an enum's variants, a
/// struct's fields, and each file's and folder's name as the module it is,
/// with the crates' names; and every identifier of the firmware's own C++
/// (the shim, which names the TFLM classes it uses).
fn defined_names(dir: &Path, within: &[String], names: &mut Names) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().replace('-', "_");
        if path.is_dir() {
            if stem != "target" && !stem.starts_with('.') {
                names.modules.insert(stem.clone());
                // A crate's `src/` and `tests/` (and `tests/it/`) are its root.
                let root = matches!(stem.as_str(), "src" | "tests" | "it");
                let inner = if root { within.to_vec() } else { [within, &[stem]].concat() };
                defined_names(&path, &inner, names);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            names.modules.insert(stem.clone());
            let module = match stem.as_str() {
                "mod" | "lib" | "main" => within.to_vec(),
                _ => [within, &[stem]].concat(),
            };
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                let inline = line.trim_start().trim_start_matches("pub ").strip_prefix("mod ");
                if let Some(name) = inline.and_then(|rest| rest.strip_suffix(" {")) {
                    names.module_paths.insert([&module[..], &[name.to_owned()]].concat());
                }
            }
            names.module_paths.insert(module);
            defined_in(&text, names);
        } else if path.extension().is_some_and(|e| e == "cc" || e == "h") {
            let text = std::fs::read_to_string(&path).unwrap();
            names.items.extend(
                text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_owned),
            );
        } else if path.file_name().is_some_and(|n| n == "Cargo.toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = text.lines().find_map(|l| l.strip_prefix("name = \"")).map(|n| n.trim_end_matches('"'));
            names.modules.extend(name.map(|n| n.replace('-', "_")));
        }
    }
}

/// What the sources define: modules (files, folders, `mod`, crates) and
/// every other name.
#[derive(Default)]
struct Names {
    modules: BTreeSet<String>,
    items: BTreeSet<String>,
    /// Every module's path from its crate's root (a file's folders and
    /// name, and the `mod x {` it holds, `tests` among them).
    module_paths: BTreeSet<Vec<String>>,
}

impl Names {
    /// Whether `name` can stand before `::`: a module, or a type (its
    /// associated items, an enum's variants).
    fn holds(&self, name: &str) -> bool {
        let a_type = name.starts_with(|c: char| c.is_ascii_uppercase());
        self.modules.contains(name) || (a_type && (self.items.contains(name) || TFLM_NAMES.contains(&name)))
    }

    fn has(&self, name: &str) -> bool {
        self.modules.contains(name) || self.items.contains(name) || TFLM_NAMES.contains(&name)
    }

    /// Whether the modules `chain` (`record::tests`) stand inside one
    /// another as written, in some module's path.
    fn nests(&self, chain: &[String]) -> bool {
        chain.len() < 2 || self.module_paths.iter().any(|p| p.windows(chain.len()).any(|w| w == chain))
    }
}

/// The items, enum variants and struct fields `text` (one Rust file)
/// defines.
fn defined_in(text: &str, names: &mut Names) {
    const KEYWORDS: [&str; 8] = ["fn", "struct", "enum", "trait", "type", "const", "static", "mod"];
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    // The indentation of the `enum` or `struct` whose body is being read.
    let mut body_at: Option<usize> = None;
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let indent = line.len() - line.trim_start().len();
        if let Some(at) = body_at {
            let member = line.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            if indent <= at && line.trim_start().starts_with('}') {
                body_at = None;
            } else if indent == at + 4 && !member.starts_with('#') {
                names.items.insert(ident(member));
            }
        }
        let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == '(').collect();
        for pair in words.windows(2) {
            if KEYWORDS.contains(&pair[0]) {
                let name = ident(pair[1]);
                match pair[0] {
                    _ if name.is_empty() => {}
                    "mod" => _ = names.modules.insert(name),
                    _ => _ = names.items.insert(name),
                }
                if matches!(pair[0], "enum" | "struct") && line.trim_end().ends_with('{') {
                    body_at = Some(indent);
                }
            }
        }
    }
}

/// What a span between backticks cites, if it cites code or a path of the
/// repository: the identifiers of a Rust path (`run::record::Record`,
/// `budget::{Budget, Gate}`, `Frame`), or a path (`harness/src/run/`).
enum Cited {
    Names(Vec<String>),
    Path(String),
}

fn cited(span: &str) -> Option<Cited> {
    let span = span.trim_end_matches("()");
    if REPOSITORY_FOLDERS.iter().any(|f| span.starts_with(f)) && !span.contains(char::is_whitespace) {
        return Some(Cited::Path(span.split(['#', ':']).next().unwrap().to_owned()));
    }
    let is_ident = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let parts: Vec<&str> = span.split("::").collect();
    if parts.len() > 1 {
        let mut names = Vec::new();
        for part in parts {
            let items: Vec<&str> =
                part.trim_start_matches('{').trim_end_matches('}').split(',').map(str::trim).collect();
            if !items.iter().all(|i| is_ident(i)) {
                return None;
            }
            names.extend(items.iter().map(|i| i.to_string()));
        }
        return Some(Cited::Names(names));
    }
    // One word: a type or variant (`Frame`, `RunError`), not a figure, a key
    // or a command (lower case) nor an acronym (`TFLM`, `HM_SLOTS`).
    let camel = is_ident(span)
        && span.starts_with(|c: char| c.is_ascii_uppercase())
        && span.chars().any(|c| c.is_ascii_lowercase())
        && !span.contains('_');
    camel.then(|| Cited::Names(vec![span.to_owned()]))
}

/// The spans between backticks of Markdown `text`, outside fenced blocks.
fn spans(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            found.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    found
}

/// What `text` cites that `names` does not define or `root` does not hold:
/// in a path, every name but the last must be a module or a type.
fn missing(text: &str, names: &Names, root: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    for span in spans(text) {
        match cited(&span) {
            Some(Cited::Path(path)) if !root.join(&path).exists() => missing.push(format!("`{span}`: no {path}")),
            Some(Cited::Names(cited)) => {
                let (last, within) = cited.split_last().unwrap();
                let unknown: Vec<&String> = within
                    .iter()
                    .filter(|n| !names.holds(n))
                    .chain(std::iter::once(last).filter(|n| !names.has(n)))
                    .collect();
                // The modules it starts with, as far as they are modules (the
                // last name only when it names no item: `firmware::build` is
                // a function of `firmware`).
                let chain: Vec<String> = cited
                    .iter()
                    .enumerate()
                    .take_while(|(i, n)| names.modules.contains(*n) && (*i < within.len() || !names.items.contains(*n)))
                    .map(|(_, n)| n.clone())
                    .collect();
                if !unknown.is_empty() {
                    missing.push(format!("`{span}`: nothing defines {unknown:?}"));
                } else if !names.nests(&chain) {
                    missing.push(format!("`{span}`: no module {}", chain.join("::")));
                }
            }
            _ => {}
        }
    }
    missing.dedup();
    missing
}

#[test]
fn the_architecture_names_only_what_exists() {
    let root = ws().root().to_owned();
    let mut names = Names::default();
    for dir in SOURCES {
        defined_names(&root.join(dir), &[], &mut names);
    }
    let read =
        ["Verdict", "Regressed", "a_run_leaves_candidates_for_the_scenarios_that_changed_and_only_their_figures"];
    assert!(read.iter().all(|n| names.has(n)) && names.holds("record"), "names read");
    let mut problems = Vec::new();
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(root.join(document)).unwrap();
        problems.extend(missing(&text, &names, &root).into_iter().map(|m| format!("{document}: {m}")));
    }
    assert!(problems.is_empty(), "names that no longer exist:\n{}", problems.join("\n"));
}

#[test]
fn a_renamed_test_module_or_type_and_a_moved_path_are_found() {
    let mut names = Names::default();
    defined_in(
        "pub enum Verdict {\n    Unchanged,\n    Regressed { by: u64 },\n}\nmod tests {\n    fn a_test() {}\n}\n\
         // fn commented_out() {}\npub struct Options {\n    /// Documented.\n    pub grace: u64,\n}\n",
        &mut names,
    );
    names.modules.extend(["record", "run", "tflm", "model", "tree"].map(str::to_owned));
    names
        .module_paths
        .extend([vec!["run".to_owned(), "record".to_owned()], vec!["tflm".to_owned(), "tree".to_owned()]]);
    names.items.extend(["Record".to_owned(), "target".to_owned()]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text =
        "The `record::Record`, `Verdict::{Unchanged, Regressed}`, `Options::grace` and `tests::a_test()` exist;\n\
                `cargo xtask hil`, `arena_used_bytes`, `TFLM`, `MicroAllocator::Create` are not checked;\n\
                `tests::a_renamed_test`, `spec::Record`, `Gone`, `commented_out::x`, `target::record` (a field, not \
                a module), `model::tree` (moved to `tflm::tree`) and `harness/src/nowhere/` are not there, \
                `harness/src/run/` and `run::record::Record` are.\n```\n`Fenced`\n```\n";
    assert_eq!(
        missing(text, &names, root),
        [
            "`tests::a_renamed_test`: nothing defines [\"a_renamed_test\"]",
            "`spec::Record`: nothing defines [\"spec\"]",
            "`Gone`: nothing defines [\"Gone\"]",
            "`commented_out::x`: nothing defines [\"commented_out\", \"x\"]",
            "`target::record`: nothing defines [\"target\"]",
            "`model::tree`: no module model::tree",
            "`harness/src/nowhere/`: no harness/src/nowhere/",
        ]
    );
}
