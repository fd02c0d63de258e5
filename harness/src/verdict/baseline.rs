//! Approved figures in git: `baselines/<board>/<model>.toml` (memory figures
//! per scenario, with metadata), read from the work tree or from any
//! revision, in any layout hilmem has written ([`MIGRATIONS`]), listed, and
//! followed through history.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;
use crate::gitrepo::{self, GitError};
use crate::image::footprint::Footprint;
use crate::run::results::Meta;
use crate::strict_toml::{self, TomlError};

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error(transparent)]
    Toml(#[from] TomlError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{file}: key `meta.{key}` says `{found}`, but the file's place says `{expected}`")]
    Misplaced { file: PathBuf, key: &'static str, found: String, expected: String },
    #[error(
        "{file}: key `format` says {found}; this hilmem reads baseline files of format {BASELINE_FORMAT} and the \
         earlier ones, which have no `format` key (a newer hilmem wrote this one?)"
    )]
    Format { file: PathBuf, found: String },
}

/// The layout of the baseline file this hilmem writes, its `format` key.
/// The layouts before it (1 to 5, `baseline_formats/`) had no such key and
/// are told apart by their `[meta]` keys ([`MIGRATIONS`]).
pub const BASELINE_FORMAT: u32 = 6;

/// One board and model's approved figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineFile {
    /// [`BASELINE_FORMAT`]: what a file read in an earlier layout is in
    /// too, once read.
    #[serde(default)]
    pub format: u32,
    pub meta: Meta,
    /// Scenario, then metric name, then value.
    pub scenario: BTreeMap<String, BTreeMap<String, i64>>,
    /// The build record's flash and static RAM by component, kept so that a
    /// comparison can say which components moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<Footprint>,
}

/// Only memory figures are baselined; counts and flags are not.
pub fn is_baselined(metric: &str) -> bool {
    metric.ends_with("_bytes")
}

/// Where baselines are read from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The files in this directory, as they are.
    WorkTree(PathBuf),
    /// The directory's files as committed at a revision (no checkout).
    Revision { dir: PathBuf, rev: String },
}

impl Source {
    pub fn dir(&self) -> &Path {
        match self {
            Source::WorkTree(dir) | Source::Revision { dir, .. } => dir,
        }
    }

    /// The baseline for `board` and `model`, if there is one.
    pub fn load(&self, board: &str, model: &str) -> Result<Option<BaselineFile>, BaselineError> {
        let path = file_path(self.dir(), board, model);
        let text = match self {
            Source::WorkTree(_) => match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(TomlError::unreadable(&path, &e).into()),
            },
            Source::Revision { rev, .. } => match gitrepo::read_at(&path, rev)? {
                Some(text) => text,
                None => return Ok(None),
            },
        };
        let shown = match self {
            Source::WorkTree(_) => path.clone(),
            Source::Revision { rev, .. } => PathBuf::from(format!("{}@{rev}", path.display())),
        };
        parse(&shown, &text, board, model).map(Some)
    }
}

/// A change of the baseline file's layout: the `[meta]` key it added, and
/// what a file written before it says there (what was true of every image
/// then).
pub struct Migration {
    pub key: &'static str,
    pub value: &'static str,
    /// Why that value is the truth for an earlier file.
    pub because: &'static str,
}

/// Every change of the layout, oldest first (the book's table of them is
/// checked against this one). The `[footprint]` table came between the
/// second and the third and needs none: a file without one kept no
/// footprint. Figures were never renamed or split.
pub const MIGRATIONS: [Migration; 3] = [
    Migration { key: "rustc", value: "not recorded", because: "files before it did not name the compiler" },
    Migration { key: "tflm_generation", value: "2020", because: "the bundled 2020 TFLM was the only one built" },
    Migration { key: "kernels", value: "reference", because: "CMSIS-NN came with the key" },
];

/// `text` in today's layout: for a file of an earlier layout (no `format`
/// key), each key of [`MIGRATIONS`] its `[meta]` lacks added with the value
/// it had then, as lines right after the `[meta]` header, and where they
/// went (the header's line and how many), so that an error's line is the
/// file's. A file that says its format, text that is not a TOML table with
/// a `[meta]` header, or that lacks keys no layout lacked together (a key
/// but not every one added after it), is left as it is, for the parser to
/// name what is wrong.
fn migrated(text: &str) -> (std::borrow::Cow<'_, str>, Option<(usize, usize)>) {
    let Ok(file) = text.parse::<toml::Table>() else { return (text.into(), None) };
    if file.contains_key("format") {
        return (text.into(), None);
    }
    let Some(toml::Value::Table(meta)) = file.get("meta") else { return (text.into(), None) };
    let kept = MIGRATIONS.iter().take_while(|m| meta.contains_key(m.key)).count();
    if MIGRATIONS[kept..].iter().any(|m| meta.contains_key(m.key)) {
        return (text.into(), None);
    }
    let lacking: Vec<String> =
        MIGRATIONS[kept..].iter().map(|m| format!("{} = {}\n", m.key, toml::Value::from(m.value))).collect();
    let header = text.lines().position(|l| l.trim() == "[meta]");
    let (Some(header), false) = (header, lacking.is_empty()) else { return (text.into(), None) };
    let mut out = String::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        out.push_str(line);
        if n == header {
            out.extend(lacking.iter().map(String::as_str));
        }
    }
    (out.into(), Some((header + 1, lacking.len())))
}

/// Parses a baseline file of any layout ([`MIGRATIONS`]) and checks it sits
/// where its metadata says.
pub fn parse(file: &Path, text: &str, board: &str, model: &str) -> Result<BaselineFile, BaselineError> {
    let said = text.parse::<toml::Table>().ok().and_then(|t| t.get("format").cloned());
    if let Some(found) = said.filter(|f| f.as_integer() != Some(i64::from(BASELINE_FORMAT))) {
        return Err(BaselineError::Format { file: file.to_owned(), found: found.to_string() });
    }
    let (text, inserted) = migrated(text);
    let mut baseline: BaselineFile = strict_toml::parse(file, &text).map_err(|mut err| {
        // The line in the file as it is, not in its migrated text (an
        // inserted line holds no error).
        if let (Some(line), Some((header, count))) = (err.line, inserted) {
            err.line = Some(if line <= header { line } else { line - count });
        }
        err
    })?;
    baseline.format = BASELINE_FORMAT;
    for (key, found, expected) in [("board", &baseline.meta.board, board), ("model", &baseline.meta.model, model)] {
        if found != expected {
            return Err(BaselineError::Misplaced {
                file: file.to_owned(),
                key,
                found: found.clone(),
                expected: expected.to_owned(),
            });
        }
    }
    Ok(baseline)
}

/// Reads and parses the baseline (or candidate) file at `path`.
pub fn read(path: &Path, board: &str, model: &str) -> Result<BaselineFile, BaselineError> {
    let text = std::fs::read_to_string(path).map_err(|e| TomlError::unreadable(path, &e))?;
    parse(path, &text, board, model)
}

pub fn file_path(dir: &Path, board: &str, model: &str) -> PathBuf {
    dir.join(board).join(format!("{model}.toml"))
}

impl BaselineFile {
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).expect("baselines serialize");
        format!("# Approved memory figures; change them with `cargo xtask baseline approve`.\n{body}")
    }

    /// Writes the file atomically (temporary file, then rename).
    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        write_atomic(path, self.to_toml().as_bytes())
            .map_err(|source| BaselineError::Write { path: path.to_owned(), source })
    }
}

/// The (board, model) pairs that have a baseline in `source`.
pub fn list(source: &Source) -> Result<Vec<(String, String)>, BaselineError> {
    let mut found = Vec::new();
    match source {
        Source::WorkTree(dir) => {
            for board in std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.path().is_dir()) {
                for file in std::fs::read_dir(board.path()).into_iter().flatten().flatten() {
                    let path = file.path();
                    if let (Some(b), Some(m), true) = (
                        board.file_name().to_str(),
                        path.file_stem().and_then(|s| s.to_str()),
                        path.extension().is_some_and(|e| e == "toml"),
                    ) {
                        found.push((b.to_owned(), m.to_owned()));
                    }
                }
            }
        }
        Source::Revision { dir, rev } => {
            for path in gitrepo::files_at(dir, rev)? {
                let mut parts = path.components().rev();
                let (Some(file), Some(board)) = (parts.next(), parts.next()) else { continue };
                let file = Path::new(file.as_os_str());
                if file.extension().is_some_and(|e| e == "toml") {
                    let model = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                    found.push((board.as_os_str().to_string_lossy().into_owned(), model.to_owned()));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// A baseline file through the commits that changed it.
pub struct History {
    /// Oldest first: (commit, scenario, metric, value).
    pub rows: Vec<(gitrepo::Version, String, String, i64)>,
    /// Versions that cannot be read (not TOML, a figure that is not a
    /// number), with why.
    pub unreadable: Vec<BaselineError>,
}

/// One metric (or all) through the commits that changed the baseline file.
pub fn history(baselines_dir: &Path, board: &str, model: &str, metric: Option<&str>) -> Result<History, BaselineError> {
    let path = file_path(baselines_dir, board, model);
    let mut history = History { rows: Vec::new(), unreadable: Vec::new() };
    for version in gitrepo::history(&path)? {
        let shown = PathBuf::from(format!("{}@{}", path.display(), &version.commit[..12]));
        let file = match parse(&shown, &version.text, board, model) {
            Ok(file) => file,
            Err(e) => {
                history.unreadable.push(e);
                continue;
            }
        };
        for (scenario, metrics) in &file.scenario {
            for (name, value) in metrics {
                if metric.is_none_or(|m| m == name) {
                    history.rows.push((version.clone(), scenario.clone(), name.clone(), *value));
                }
            }
        }
    }
    Ok(history)
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BaselineFile {
        BaselineFile {
            format: BASELINE_FORMAT,
            meta: Meta {
                board: "qemu-m7".into(),
                model: "hello_world".into(),
                model_sha256: "ab".into(),
                tflm: "tfmicro-0.1.0".into(),
                tflm_generation: "2020".into(),
                kernels: "reference".into(),
                rustc: "rustc 1.95.0".into(),
                target: "thumbv7em-none-eabihf".into(),
                arena_bytes: 3072,
                measured_at_commit: "0123abcd".into(),
                approved_by: "A. Reviewer <a@example.com>".into(),
                approved_at: 1_700_000_000,
            },
            scenario: BTreeMap::from([(
                "single-frame".into(),
                BTreeMap::from([("arena_used_bytes".into(), 1472), ("stack_peak_bytes".into(), 2016)]),
            )]),
            footprint: Some(Footprint {
                flash: BTreeMap::from([("kernel:CONV_2D".into(), 2340), ("tflm-core".into(), 14_380)]),
                static_ram: BTreeMap::from([("firmware".into(), 28_953)]),
            }),
        }
    }

    #[test]
    fn files_round_trip_and_are_checked_strictly() {
        let text = sample().to_toml();
        assert_eq!(parse(Path::new("b.toml"), &text, "qemu-m7", "hello_world").unwrap(), sample());

        let err = parse(Path::new("b.toml"), &text.replace("1472", "\"x\""), "qemu-m7", "hello_world").unwrap_err();
        assert!(err.to_string().contains("key `scenario.single-frame.arena_used_bytes`"), "{err}");
        let err = parse(Path::new("b.toml"), &text.replace("[meta]", "[meta]\ncolour = 1"), "qemu-m7", "hello_world");
        assert!(err.unwrap_err().to_string().contains("unknown field `colour`"));
        let cut = &text[..text.len() / 2];
        assert!(parse(Path::new("b.toml"), cut, "qemu-m7", "hello_world").is_err());
        let err = parse(Path::new("b.toml"), &text, "qemu-m4", "hello_world").unwrap_err();
        assert!(err.to_string().contains("key `meta.board` says `qemu-m7`"), "{err}");
    }

    /// qemu-m7/hello_world.toml as this repository committed it in each
    /// earlier layout (the commit is in the file's name), and the keys of
    /// [`MIGRATIONS`] each lacks.
    const EARLIER: [(&str, &str, &[&str]); 5] = [
        ("1-a3899d3", include_str!("baseline_formats/1-a3899d3.toml"), &["rustc", "tflm_generation", "kernels"]),
        ("2-fd71728", include_str!("baseline_formats/2-fd71728.toml"), &["tflm_generation", "kernels"]),
        ("3-9d0707d", include_str!("baseline_formats/3-9d0707d.toml"), &["kernels"]),
        ("4-5cddd0e", include_str!("baseline_formats/4-5cddd0e.toml"), &["kernels"]),
        ("5-605ec09", include_str!("baseline_formats/5-605ec09.toml"), &[]),
    ];

    #[test]
    fn every_earlier_layout_is_read_with_its_figures_and_what_was_true_then() {
        for (name, text, lacking) in EARLIER {
            let raw: toml::Table = text.parse().unwrap();
            let meta = raw["meta"].as_table().unwrap();
            assert_eq!(MIGRATIONS.iter().filter(|m| !meta.contains_key(m.key)).count(), lacking.len(), "{name}");
            let file = parse(Path::new(name), text, "qemu-m7", "hello_world").unwrap_or_else(|e| panic!("{e}"));
            // Read, it is in today's layout, and written so.
            assert_eq!(file.format, BASELINE_FORMAT, "{name}");
            // Every figure as the file holds it, none added or lost.
            let figures: BTreeMap<String, BTreeMap<String, i64>> = raw["scenario"].clone().try_into().unwrap();
            assert_eq!(file.scenario, figures, "{name}");
            assert!(file.scenario["single-frame"].contains_key("arena_used_bytes"), "{name}");
            assert_eq!(file.footprint.is_some(), raw.contains_key("footprint"), "{name}");
            // The keys it had are kept; those it lacked say what was true.
            let m = &file.meta;
            assert_eq!((m.board.as_str(), m.model.as_str(), m.arena_bytes), ("qemu-m7", "hello_world", 3072));
            assert_eq!(m.approved_at, raw["meta"]["approved_at"].as_integer().unwrap() as u64, "{name}");
            let keys = [("rustc", &m.rustc), ("tflm_generation", &m.tflm_generation), ("kernels", &m.kernels)];
            for (key, value) in keys {
                let expected = match lacking.contains(&key) {
                    true => MIGRATIONS.iter().find(|m| m.key == key).unwrap().value,
                    false => meta[key].as_str().unwrap(),
                };
                assert_eq!(value, expected, "{name}: meta.{key}");
            }
        }
        // Oldest first: each earlier layout lacks the keys added after it.
        for (name, _, lacking) in EARLIER {
            let added_since: Vec<&str> = MIGRATIONS[MIGRATIONS.len() - lacking.len()..].iter().map(|m| m.key).collect();
            assert_eq!(added_since, lacking, "{name}");
        }
    }

    /// A file that lacks a key but not every key added after it is of no
    /// layout hilmem wrote: it is refused naming the key, not read as an
    /// older layout.
    #[test]
    fn a_file_missing_a_key_no_layout_lacked_alone_is_refused_naming_it() {
        let text = sample().to_toml();
        for key in ["rustc", "tflm_generation"] {
            let lost: String =
                text.lines().filter(|l| !l.starts_with(&format!("{key} = "))).map(|l| format!("{l}\n")).collect();
            let err = parse(Path::new("b.toml"), &lost, "qemu-m7", "hello_world").unwrap_err().to_string();
            assert!(err.contains(&format!("missing field `{key}`")), "{key}: {err}");
        }
    }

    /// A file of today's layout says so (`format`), and a key it lost is
    /// named, even the newest, which an earlier layout lacked alone: it is
    /// not read as that layout. A format this hilmem does not know is
    /// refused, naming it.
    #[test]
    fn a_file_that_says_its_format_is_read_as_that_format_only() {
        let text = sample().to_toml();
        assert!(text.contains(&format!("\nformat = {BASELINE_FORMAT}\n")), "{text}");
        for m in &MIGRATIONS {
            let lost: String =
                text.lines().filter(|l| !l.starts_with(&format!("{} = ", m.key))).map(|l| format!("{l}\n")).collect();
            let err = parse(Path::new("b.toml"), &lost, "qemu-m7", "hello_world").unwrap_err().to_string();
            assert!(err.contains(&format!("missing field `{}`", m.key)), "{}: {err}", m.key);
        }
        for found in ["7", "\"6\""] {
            let other = text.replace(&format!("format = {BASELINE_FORMAT}"), &format!("format = {found}"));
            let err = parse(Path::new("b.toml"), &other, "qemu-m7", "hello_world").unwrap_err().to_string();
            assert!(err.starts_with(&format!("b.toml: key `format` says {found}; ")), "{err}");
        }
    }

    /// Every baseline file this repository holds is in today's layout, as
    /// hilmem writes it, byte for byte.
    #[test]
    fn the_repository_baselines_are_written_in_todays_layout() {
        let dir = crate::Workspace::from_source().baselines_dir();
        let found = list(&Source::WorkTree(dir.clone())).unwrap();
        assert!(found.len() >= 32, "{found:?}");
        for (board, model) in found {
            let path = file_path(&dir, &board, &model);
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(read(&path, &board, &model).unwrap().to_toml(), text, "{}", path.display());
        }
    }

    /// The book's table of layouts is [`MIGRATIONS`] row for row, with why.
    #[test]
    fn the_book_lists_every_migration_as_the_code_has_it() {
        let book = crate::Workspace::from_source().root().join("book/src/baselines.md");
        let text = std::fs::read_to_string(&book).unwrap();
        let rows: Vec<&str> =
            text.lines().skip_while(|l| !l.starts_with("| key |")).skip(2).take_while(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), MIGRATIONS.len(), "{}", book.display());
        for (row, m) in rows.iter().zip(MIGRATIONS) {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(
                (cells[0], cells[2], cells[3]),
                (format!("`{}`", m.key).as_str(), format!("`\"{}\"`", m.value).as_str(), m.because),
                "{}: {row}",
                book.display()
            );
        }
    }

    #[test]
    fn a_file_of_todays_layout_and_a_broken_one_are_not_rewritten() {
        let text = sample().to_toml();
        assert!(matches!(migrated(&text), (std::borrow::Cow::Borrowed(_), None)));
        for broken in ["[meta\nboard = 1", "meta = 3", "[scenario.x]\ny = 1"] {
            assert!(matches!(migrated(broken), (std::borrow::Cow::Borrowed(_), None)), "{broken}");
        }
        // A broken file is still refused naming what is wrong, after the
        // migrations, at its own line of the file as it is.
        for (name, text, _) in EARLIER {
            let old = text.replace("arena_used_bytes = 1472", "arena_used_bytes = \"x\"");
            let line = old.lines().position(|l| l.contains("arena_used_bytes = \"x\"")).unwrap() + 1;
            let err = parse(Path::new("old.toml"), &old, "qemu-m7", "hello_world").unwrap_err().to_string();
            assert!(err.contains("arena_used_bytes") && err.ends_with(&format!("(line {line})")), "{name}: {err}");
            // Before the inserted keys too.
            let old = text.replacen("[meta]\n", "[meta]\ncolour = 1\n", 1);
            let err = parse(Path::new("old.toml"), &old, "qemu-m7", "hello_world").unwrap_err().to_string();
            let line = old.lines().position(|l| l == "colour = 1").unwrap() + 1;
            assert!(err.contains("unknown field `colour`"), "{name}: {err}");
            assert!(err.ends_with(&format!("(line {line})")), "{name}: {err}");
            // At the `[meta]` header, which the parser names for a key the
            // table lacks.
            let old: String = text.lines().filter(|l| !l.starts_with("model = ")).map(|l| format!("{l}\n")).collect();
            let err = parse(Path::new("old.toml"), &old, "qemu-m7", "hello_world").unwrap_err().to_string();
            let line = old.lines().position(|l| l == "[meta]").unwrap() + 1;
            assert!(err.contains("missing field `model`") && err.ends_with(&format!("(line {line})")), "{name}: {err}");
        }
    }
}
