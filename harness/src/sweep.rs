//! A sweep of TFLM's history: one tflite-micro tree a month, made from a
//! clone of its repository as TFLM's own download scripts make a checkout
//! (each third-party library its Makefile downloads, at the revision the
//! commit pins, by the commit's own scripts), each
//! run with hello_world and hello_world_int8 on the default board, or
//! refused for what it lacks. What the sweep keeps of a month is its
//! [`Outcome`] (`target/hilmem/sweep/<commit>.json`); the tree and its
//! builds are removed once it is recorded.
//!
//! The libraries come from local clones, not from the addresses the
//! scripts download: stand-ins for `wget` and `curl` serve an archive of
//! the clone made as GitHub makes one. It differs byte for byte from the one
//! GitHub serves, so the scripts' checksums are not checked; every other
//! line of the scripts (unpacking, moving into place, deleting BUILD files,
//! the patches, as `.patch` files or as shell functions) runs as the tree
//! has it, in bash.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::config::board::Board;
use crate::config::runtime::Runtime;
use crate::fsutil::write_atomic;
use crate::run::measurement::{Measurement, BUILD};
use crate::run::{self, Event, Options};
use crate::tflm::tree::{third_party_fetches, Fetch};
use crate::Workspace;
use hilmem_protocol::scenario::SINGLE_FRAME;

/// Where a tree's download scripts are, and where they put the libraries.
const MAKE_DIR: &str = "tensorflow/lite/micro/tools/make";

/// The models each tree runs: hello_world from the root models file (float,
/// every TFLM), hello_world_int8 from the current models file.
pub const MODELS: [(&str, &str); 2] =
    [("hil.toml", "hello_world"), ("firmware/models/current/hil.toml", "hello_world_int8")];

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{what}: {why}")]
    Git { what: String, why: String },
    #[error("commit {commit}: {why}")]
    Tree { commit: String, why: String },
    #[error("cannot {what}: {source}")]
    Io { what: String, source: std::io::Error },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SweepError {
    let what = what.into();
    move |source| SweepError::Io { what, source }
}

/// A commit of the tflite-micro repository that stands for its month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Month {
    /// `YYYY-MM`.
    pub month: String,
    pub commit: String,
    /// The commit's date, `YYYY-MM-DD`.
    pub date: String,
}

/// What one model did on one month's tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOutcome {
    pub model: String,
    pub flash_bytes: Option<i64>,
    pub arena_used_bytes: Option<i64>,
    pub predicted_bytes: Option<i64>,
    /// Why it did not run (its operators, a failed build or run).
    pub failure: Option<String>,
}

/// What a month's tree is and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub month: Month,
    /// The analyzer's generation of the tree, where hilmem read it.
    pub generation: Option<String>,
    /// Why hilmem refused the tree, before building anything.
    pub refusal: Option<String>,
    pub models: Vec<ModelOutcome>,
}

impl Outcome {
    /// Whether the tree ran every model, or was refused for what it lacks:
    /// the two answers a tree may give.
    pub fn answered(&self) -> bool {
        self.refusal.is_some() || self.models.iter().all(|m| m.failure.is_none())
    }
}

/// `git -C repo args...`, its standard output.
fn git(repo: &Path, args: &[&str]) -> Result<Vec<u8>, SweepError> {
    let what = || format!("git -C {} {}", repo.display(), args.join(" "));
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().map_err(io(what()))?;
    if !out.status.success() {
        return Err(SweepError::Git { what: what(), why: String::from_utf8_lossy(&out.stderr).trim().to_owned() });
    }
    Ok(out.stdout)
}

/// One commit a month of the repository's first-parent history, from the
/// month `from` (`YYYY-MM`) on: the last commit of each month that has
/// one, the tree as that month left it.
pub fn months(repo: &Path, from: &str) -> Result<Vec<Month>, SweepError> {
    let log = git(repo, &["log", "--first-parent", "--reverse", "--format=%H %cs", "HEAD"])?;
    let mut months: Vec<Month> = Vec::new();
    for line in String::from_utf8_lossy(&log).lines() {
        let Some((commit, date)) = line.split_once(' ') else { continue };
        let month = &date[..7.min(date.len())];
        if month < from {
            continue;
        }
        let this = Month { month: month.to_owned(), commit: commit.to_owned(), date: date.to_owned() };
        match months.last_mut() {
            Some(last) if last.month == month => *last = this,
            _ => months.push(this),
        }
    }
    Ok(months)
}

/// The GitHub repository (`owner/name`) and revision a download fetches:
/// the archive address (`github.com/OWNER/NAME/archive/[refs/tags/]REV.zip`)
/// among a rule's words, or in a script's text, `${VAR}` taken from the
/// script's own `VAR="..."`.
fn source_of(tree: &Path, fetch: &Fetch) -> Option<(String, String)> {
    let script = std::fs::read_to_string(tree.join(&fetch.script)).unwrap_or_default();
    let text = match fetch.args.first() {
        Some(url) if url.contains("/archive/") => url.clone(),
        _ => script.clone(),
    };
    text.match_indices("github.com/").find_map(|(at, m)| {
        let rest = &text[at + m.len()..];
        let (repository, rest) = rest.split_once("/archive/")?;
        let rest = rest.strip_prefix("refs/tags/").unwrap_or(rest);
        let rev = rest.split(".zip").next()?;
        if repository.matches('/').count() != 1 || rev.contains(char::is_whitespace) {
            return None;
        }
        let rev = match rev.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
            Some(var) => assigned(&script, var)?,
            None => rev.to_owned(),
        };
        Some((repository.to_owned(), rev))
    })
}

/// The value a shell script assigns to `var` (`VAR="value"`), unquoted.
fn assigned(text: &str, var: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.trim().strip_prefix(var)?.strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_owned())
    })
}

/// The folder GitHub's archive of `rev` unpacks to: the repository's name
/// and the revision, a tag without its leading `v`.
fn archive_folder(name: &str, rev: &str) -> String {
    let rev = match rev.strip_prefix('v') {
        Some(version) if version.starts_with(|c: char| c.is_ascii_digit()) => version,
        _ => rev,
    };
    format!("{}-{rev}", name.rsplit('/').next().unwrap_or(name))
}

/// `script` as the sweep runs it: every line as the tree has it but those
/// that check a download's checksum (a call of `check_md5`, and the
/// `DOWNLOADED_MD5=$(...)` of `download_and_extract.sh`, which then holds
/// the expected sum). The archive comes from a local clone, so it cannot
/// have the sum of the one GitHub serves.
fn unchecked(script: &str) -> String {
    script
        .lines()
        .map(|line| {
            let code = line.trim_start();
            if code.starts_with("check_md5 ") {
                ": checksum not checked".to_owned()
            } else if code.starts_with("DOWNLOADED_MD5=$(") {
                "  DOWNLOADED_MD5=${expected_md5}".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Shell functions that stand in for `wget` and `curl` in a download
/// script: they serve `archive` for an address of `repository`'s archive of
/// `rev`, and leave the file `served` once they have, and refuse any other
/// (`wget URL -O FILE`, `curl ... URL`, which writes to its standard
/// output).
fn network(archive: &Path, repository: &str, rev: &str, served: &Path) -> String {
    format!(
        r#"hilmem_serves() {{
  case "$1" in
    *github.com/{repository}/archive/{rev}.zip|*github.com/{repository}/archive/refs/tags/{rev}.zip) return 0;;
    *) echo "hilmem serves {repository} at {rev}, not $1" >&2; return 1;;
  esac
}}
wget() {{
  local url="" out=""
  while [ $# -gt 0 ]; do
    case "$1" in -O) out="$2"; shift;; -*) ;; *) url="$1";; esac
    shift
  done
  hilmem_serves "$url" && cp "{archive}" "$out" && : > "{served}"
}}
curl() {{
  local url=""
  for arg in "$@"; do case "$arg" in -*) ;; *) url="$arg";; esac; done
  hilmem_serves "$url" && cat "{archive}" && : > "{served}"
}}
"#,
        archive = archive.display(),
        served = served.display()
    )
}

/// Downloads `library` into the tree as its Makefile would (`fetch`), from
/// the clone `clone` at `rev`: the script runs as the tree has it, in bash
/// from the tree's root, with its download served by [`network`] from a zip
/// of the clone made as GitHub makes one (`NAME-REV/` inside, a tag without
/// its `v`) and its checksum not checked ([`unchecked`]).
fn download(
    tree: &Path,
    fetch: &Fetch,
    (repository, rev): (&str, &str),
    clone: &Path,
    scratch: &Path,
) -> Result<(), String> {
    let folder = archive_folder(repository, rev);
    let zip =
        git(clone, &["archive", "--format=zip", &format!("--prefix={folder}/"), rev]).map_err(|e| e.to_string())?;
    let archive = scratch.join(format!("{folder}.zip"));
    std::fs::write(&archive, zip).map_err(|e| format!("cannot write {}: {e}", archive.display()))?;
    let script = tree.join(&fetch.script);
    let text = std::fs::read_to_string(&script).map_err(|e| format!("cannot read {}: {e}", script.display()))?;
    // Beside the original, so that what it finds from its own place (the
    // tree's root, its helpers) is the same.
    let copy = script.with_file_name(format!(".sweep-{}", script.file_name().unwrap_or_default().to_string_lossy()));
    std::fs::write(&copy, unchecked(&text)).map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
    let args: Vec<String> = fetch.args.iter().map(|a| format!("'{}'", a.replace('\'', r"'\''"))).collect();
    let served = scratch.join("served");
    let program =
        format!("{}\nsource {} {}\n", network(&archive, repository, rev, &served), copy.display(), args.join(" "));
    let out = Command::new("bash").arg("-c").arg(&program).current_dir(tree).output();
    let _ = std::fs::remove_file(&copy);
    let out = out.map_err(|e| format!("cannot run bash: {e}"))?;
    if !out.status.success() || !served.is_file() {
        return Err(format!(
            "{} {} did not download it: {}{}",
            fetch.script,
            fetch.args.join(" "),
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Unpacks a tar `archive` into `dir`.
fn untar(archive: &[u8], dir: &Path) -> std::io::Result<()> {
    let mut tar = Command::new("tar").arg("-x").arg("-C").arg(dir).stdin(std::process::Stdio::piped()).spawn()?;
    std::io::Write::write_all(tar.stdin.as_mut().expect("piped"), archive)?;
    drop(tar.stdin.take());
    match tar.wait()?.success() {
        true => Ok(()),
        false => Err(std::io::Error::other("tar failed")),
    }
}

/// The tree of `month`'s commit under `dir`, made as TFLM's download
/// scripts make a checkout: the commit's files, then each third-party
/// download its Makefile makes from a GitHub archive of a repository that
/// `libraries` holds a clone of (under the repository's name), at the
/// revision the tree pins, and an empty `downloads/pigweed` (which stops
/// its Makefile from cloning pigweed). A download without a clone here is
/// left out: a tree that needs it is refused naming the files it lacks.
/// Made in a scratch folder, so an interrupted make leaves nothing that
/// looks complete.
pub fn make_tree(repo: &Path, libraries: &Path, month: &Month, dir: &Path) -> Result<PathBuf, SweepError> {
    let tree = dir.join(format!("tflite-micro-{}", &month.commit[..9]));
    if tree.is_dir() {
        return Ok(tree);
    }
    let scratch = dir.join(".partial");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(io(format!("create {}", scratch.display())))?;
    let archive = git(repo, &["archive", "--format=tar", &month.commit])?;
    untar(&archive, &scratch).map_err(io(format!("unpack commit {}", month.commit)))?;
    let failed = |why: String| SweepError::Tree { commit: month.commit.clone(), why };
    let fetches = third_party_fetches(&scratch).map_err(failed)?;
    // The Makefile makes the downloads folder before it runs a download.
    let downloads = scratch.join(MAKE_DIR).join("downloads");
    std::fs::create_dir_all(&downloads).map_err(io(format!("create {}", downloads.display())))?;
    let mut done = Vec::new();
    for fetch in &fetches {
        let Some((repository, rev)) = source_of(&scratch, fetch) else { continue };
        let clone = libraries.join(repository.rsplit('/').next().unwrap_or(&repository));
        if !clone.exists() || done.contains(fetch) {
            continue;
        }
        let unpacked = dir.join(".partial-download");
        let _ = std::fs::remove_dir_all(&unpacked);
        std::fs::create_dir_all(&unpacked).map_err(io(format!("create {}", unpacked.display())))?;
        download(&scratch, fetch, (&repository, &rev), &clone, &unpacked)
            .map_err(|why| failed(format!("{repository} at {rev}: {why}")))?;
        let _ = std::fs::remove_dir_all(&unpacked);
        done.push(fetch.clone());
    }
    let pigweed = scratch.join(MAKE_DIR).join("downloads/pigweed");
    std::fs::create_dir_all(&pigweed).map_err(io(format!("create {}", pigweed.display())))?;
    std::fs::rename(&scratch, &tree).map_err(io(format!("move the tree to {}", tree.display())))?;
    Ok(tree)
}

/// Where the sweep keeps each month's outcome.
pub fn outcomes_dir(ws: &Workspace) -> PathBuf {
    ws.results_dir().join("sweep")
}

/// The outcome kept for `month`, if any.
pub fn kept(ws: &Workspace, month: &Month) -> Option<Outcome> {
    let text = std::fs::read(outcomes_dir(ws).join(format!("{}.json", month.commit))).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Runs each of [`MODELS`] on `tree` in the single-frame scenario on
/// `board` (the default board), or says why hilmem refuses the tree.
pub fn measure(
    ws: &Workspace,
    board: &Board,
    month: &Month,
    tree: &Path,
    progress: &(dyn Fn(Event) + Sync),
) -> Outcome {
    let runtime = match Runtime::at(tree) {
        Ok(runtime) => runtime,
        Err(refusal) => {
            return Outcome { month: month.clone(), generation: None, refusal: Some(refusal), models: Vec::new() }
        }
    };
    let mut models = Vec::new();
    for (file, model) in MODELS {
        let mut options = Options::new(ws, vec![board.clone()]);
        options.models_file = ws.root().join(file);
        options.models = vec![model.to_owned()];
        options.scenarios = vec![SINGLE_FRAME.to_owned()];
        options.tflm = Some(tree.display().to_string());
        let failure = |why: String| ModelOutcome {
            model: model.to_owned(),
            flash_bytes: None,
            arena_used_bytes: None,
            predicted_bytes: None,
            failure: Some(why),
        };
        let results = match run::run(ws, &options, progress) {
            Ok(results) => results,
            Err(error) => {
                models.push(failure(error.to_string()));
                continue;
            }
        };
        let record = |scenario: &str| -> Option<&Measurement> {
            results.records.iter().find(|r| r.model == model && r.scenario == scenario)
        };
        match (record(BUILD), record(SINGLE_FRAME), results.failed.first()) {
            (Some(build), Some(run), None) if run.passed() => models.push(ModelOutcome {
                model: model.to_owned(),
                flash_bytes: build.metrics.get("flash_bytes").copied(),
                arena_used_bytes: run.metrics.get("arena_used_bytes").copied(),
                predicted_bytes: run.arena_prediction.map(|p| p.predicted_bytes),
                failure: None,
            }),
            (_, _, Some(failed)) => models.push(failure(failed.error.clone())),
            (_, Some(run), None) => models.push(failure(format!("checks failed: {:?}", run.checks))),
            _ => models.push(failure("no record".into())),
        }
    }
    Outcome { month: month.clone(), generation: Some(runtime.generation().name().to_owned()), refusal: None, models }
}

/// Keeps `outcome` for its month.
pub fn keep(ws: &Workspace, outcome: &Outcome) -> Result<(), SweepError> {
    let dir = outcomes_dir(ws);
    std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
    let path = dir.join(format!("{}.json", outcome.month.commit));
    let json = serde_json::to_vec_pretty(outcome).expect("an outcome serializes");
    write_atomic(&path, &json).map_err(io(format!("write {}", path.display())))
}

/// The outcomes as the TFLM chapter's table: one row a month.
pub fn markdown(outcomes: &[Outcome]) -> String {
    let mut out = "| month | commit | date | generation |".to_owned();
    for (_, model) in MODELS {
        out += &format!(" {model} flash | arena used | predicted |");
    }
    out += &format!("\n|---|---|---|---|{}\n", "---:|---:|---:|".repeat(MODELS.len()));
    let cell = |text: &str| text.lines().next().unwrap_or_default().replace('|', "\\|");
    let figure = |v: Option<i64>| v.map_or("-".to_owned(), |v| v.to_string());
    for o in outcomes {
        out += &format!("| {} | {} | {} |", o.month.month, &o.month.commit[..9], o.month.date);
        match &o.refusal {
            Some(refusal) => out += &format!(" refused: {} |{}", cell(refusal), " | | |".repeat(MODELS.len())),
            None => {
                out += &format!(" {} |", o.generation.as_deref().unwrap_or("-"));
                for m in &o.models {
                    out += &match &m.failure {
                        None => format!(
                            " {} | {} | {} |",
                            figure(m.flash_bytes),
                            figure(m.arena_used_bytes),
                            m.predicted_bytes.map_or("not predicted".to_owned(), |p| p.to_string())
                        ),
                        Some(why) => format!(" {} | | |", cell(why)),
                    };
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_fetches_the_archive_its_rule_or_script_names() {
        let dir = tempfile::tempdir().unwrap();
        let make = dir.path().join(MAKE_DIR);
        std::fs::create_dir_all(&make).unwrap();
        std::fs::write(
            make.join("flatbuffers_download.sh"),
            "  ZIP_PREFIX=\"v25.9.23\"\n  URL=\"https://github.com/google/flatbuffers/archive/refs/tags/${ZIP_PREFIX}.zip\"\n",
        )
        .unwrap();
        let script = Fetch { script: format!("{MAKE_DIR}/flatbuffers_download.sh"), args: vec!["downloads".into()] };
        assert_eq!(source_of(dir.path(), &script), Some(("google/flatbuffers".into(), "v25.9.23".into())));
        let rule = Fetch {
            script: format!("{MAKE_DIR}/download_and_extract.sh"),
            args: vec![
                "http://mirror.tensorflow.org/github.com/mborgerding/kissfft/archive/v130.zip".into(),
                "438ba1fef5783cc5f5f201395cc477ca".into(),
                "downloads/kissfft".into(),
            ],
        };
        assert_eq!(source_of(dir.path(), &rule), Some(("mborgerding/kissfft".into(), "v130".into())));
        let data = Fetch {
            script: format!("{MAKE_DIR}/download_and_extract.sh"),
            args: vec!["https://storage.googleapis.com/data/person.zip".into(), "0".into(), "downloads/p".into()],
        };
        assert_eq!(source_of(dir.path(), &data), None, "not a GitHub archive");
        assert_eq!(archive_folder("mborgerding/kissfft", "v130"), "kissfft-130");
        assert_eq!(archive_folder("google/flatbuffers", "dca1252"), "flatbuffers-dca1252");
    }

    #[test]
    fn a_download_script_runs_as_the_tree_has_it_but_its_checksum() {
        let script = "source bash_helpers.sh\n  wget ${URL} -O \"$TEMPFILE\"\n  check_md5 \"${TEMPFILE}\" ${MD5}\n\
                      \x20 DOWNLOADED_MD5=$(openssl dgst -md5 ${tempfile} | sed 's/.* //g')\n  unzip x\n";
        assert_eq!(
            unchecked(script),
            "source bash_helpers.sh\n  wget ${URL} -O \"$TEMPFILE\"\n: checksum not checked\n\
             \x20 DOWNLOADED_MD5=${expected_md5}\n  unzip x"
        );
    }
}
