//! CI is the command line: the workflows call only commands that exist, the
//! hosted one runs what `.ci/run` runs, and the board matrix comes from the
//! board profiles; the jobs on self-hosted runners run one per board and
//! never for a fork.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Every `cargo xtask <subcommand>` in the workflows and `.ci/run`.
fn xtask_calls() -> Vec<(String, String)> {
    let mut files: Vec<_> =
        std::fs::read_dir(root().join(".github/workflows")).unwrap().map(|e| e.unwrap().path()).collect();
    files.push(root().join(".ci/run"));
    let mut calls = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for part in text.split("cargo xtask ").skip(1) {
            let sub: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            calls.push((file.file_name().unwrap().to_string_lossy().into_owned(), sub));
        }
    }
    calls
}

#[test]
fn every_subcommand_a_workflow_calls_exists() {
    let calls = xtask_calls();
    assert!(calls.len() >= 6, "{calls:?}");
    for (file, sub) in calls {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args([sub.as_str(), "--help"]).output().unwrap();
        assert!(out.status.success(), "{file} calls `cargo xtask {sub}`, which does not exist");
    }
}

#[test]
fn hosted_ci_runs_what_ci_run_runs() {
    let hosted = std::fs::read_to_string(root().join(".github/workflows/ci.yml")).unwrap();
    let script = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(hosted.contains("run: bash .ci/run"), "the hosted workflow must run .ci/run");
    let commands: Vec<&str> = script.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    // The whole of `ci` with a TFLM, then, as a new user's `ci` runs it, the
    // book's check without one; `set -e` fails the script when either fails.
    assert_eq!(
        commands,
        [
            "set -euo pipefail",
            "cd \"$(dirname \"$0\")/..\"",
            "cargo xtask ci --test-tflm ../shared/tflm",
            "cargo xtask docs"
        ]
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("cargo xtask ci "), "the README's test command is what CI runs");
}

/// `.ci/run` fails when its book check without a TFLM fails, after the
/// whole `ci` passed (and passes when both do): run with `cargo` standing in
/// for the real one, answering each invocation with the status given.
#[test]
fn ci_run_fails_when_the_book_check_without_a_tflm_fails() {
    let run = |docs_status: i32| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".ci")).unwrap();
        std::fs::copy(root().join(".ci/run"), dir.path().join(".ci/run")).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let log = dir.path().join("calls");
        let stand_in = format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$2\" in docs) exit {docs_status};; *) exit 0;; esac\n",
            log.display()
        );
        std::fs::write(bin.join("cargo"), stand_in).unwrap();
        let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(bin.join("cargo"), executable).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let status = Command::new("bash").arg(dir.path().join(".ci/run")).env("PATH", path).status().unwrap();
        (status.code(), std::fs::read_to_string(log).unwrap())
    };
    let calls = "xtask ci --test-tflm ../shared/tflm\nxtask docs\n";
    assert_eq!(run(0), (Some(0), calls.to_owned()));
    assert_eq!(run(1), (Some(1), calls.to_owned()));
    assert_eq!(run(2), (Some(2), calls.to_owned()));
}

#[test]
fn the_matrix_is_the_board_profiles() {
    let ws = harness::Workspace::from_source();
    let boards = harness::config::board::load_all(&ws).unwrap();
    for (kind, emulated) in [("real", false), ("emulated", true)] {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(["matrix", "--kind", kind]).output().unwrap();
        assert!(out.status.success());
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let listed: Vec<(String, String)> = json["include"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["board"].as_str().unwrap().to_owned(), e["label"].as_str().unwrap().to_owned()))
            .collect();
        let expected: Vec<(String, String)> = boards
            .iter()
            .filter(|b| b.is_emulated() == emulated)
            .filter_map(|b| Some((b.name.clone(), b.ci_label.clone()?)))
            .collect();
        assert_eq!(listed, expected, "{kind}");
        assert!(!listed.is_empty());
    }
}

fn workflow(name: &str) -> yaml_serde::Value {
    let text = std::fs::read_to_string(root().join(".github/workflows").join(name)).unwrap();
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn runs_self_hosted(job: &yaml_serde::Value) -> bool {
    job["runs-on"].as_sequence().is_some_and(|labels| labels.iter().any(|l| l == "self-hosted"))
}

#[test]
fn board_jobs_run_one_per_board_from_the_real_matrix_and_never_for_a_fork() {
    for name in ["hil.yml", "approve-baselines.yml"] {
        let jobs = workflow(name)["jobs"].as_mapping().unwrap().clone();
        let on_boards: Vec<_> = jobs.iter().filter(|(_, job)| runs_self_hosted(job)).collect();
        assert!(!on_boards.is_empty(), "{name}");
        for (id, job) in on_boards {
            let id = id.as_str().unwrap();
            assert_eq!(job["runs-on"][1], "${{ matrix.label }}", "{name}: {id}");
            assert_eq!(job["concurrency"]["group"], "hil-board-${{ matrix.board }}", "{name}: {id}");
            assert_eq!(job["concurrency"]["cancel-in-progress"], false, "{name}: {id}");
        }
    }

    // hil.yml: the matrix is the real boards, and a board job runs for a push
    // to this repository or a pull request from it, nothing else.
    let hil = workflow("hil.yml");
    let steps = hil["jobs"]["matrix"]["steps"].as_sequence().unwrap();
    let matrix = steps.iter().find(|s| s["id"] == "matrix").unwrap();
    assert!(matrix["run"].as_str().unwrap().contains("$(cargo xtask matrix --kind real)"), "{matrix:?}");
    let board = &hil["jobs"]["board"];
    assert_eq!(board["needs"], "matrix");
    assert_eq!(board["strategy"]["matrix"], "${{ fromJSON(needs.matrix.outputs.boards) }}");
    let paths: Vec<&str> = board["if"].as_str().unwrap().split("||").map(str::trim).collect();
    assert_eq!(
        paths,
        ["github.event_name == 'push'", "github.event.pull_request.head.repo.full_name == github.repository"]
    );
    let triggers: Vec<_> = hil["on"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(triggers, ["push", "pull_request"], "a new trigger needs its own fork guard");
}

/// The approval workflow refuses a fork's pull request on both of its paths
/// (the label, and the manual run with a number) before any other job, and
/// every later job checks out the pull request's head commit by its SHA; the
/// baseline commit is pushed only if the pull request still points there.
#[test]
fn approval_refuses_forks_on_every_path_and_checks_out_the_head_by_sha() {
    let wf = workflow("approve-baselines.yml");
    let triggers: Vec<_> = wf["on"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(triggers, ["pull_request", "workflow_dispatch"], "a new trigger needs its own fork guard");
    let jobs = wf["jobs"].as_mapping().unwrap();
    let steps = |job: &yaml_serde::Value| job["steps"].as_sequence().unwrap().clone();
    let pr = steps(&wf["jobs"]["boards"]).into_iter().find(|s| s["id"] == "pr").expect("the `pr` step");
    assert!(pr["if"].is_null(), "the fork check runs on every path");
    let check = pr["run"].as_str().unwrap();
    assert!(check.contains("--json isCrossRepository"), "{check}");
    assert!(check.contains("if [ \"$fork\" != \"false\" ]; then") && check.contains("exit 1"), "{check}");
    assert!(check.contains("sha=$(gh pr view \"$PR\"") && check.contains("--jq .headRefOid"), "{check}");
    for (id, job) in jobs.iter().filter(|(id, _)| *id != "boards") {
        let id = id.as_str().unwrap();
        let needs: Vec<&str> = match &job["needs"] {
            yaml_serde::Value::String(one) => vec![one.as_str()],
            many => many.as_sequence().unwrap().iter().map(|n| n.as_str().unwrap()).collect(),
        };
        assert!(needs.contains(&"boards"), "{id} must wait for the fork check");
        for step in steps(job).iter().filter(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/checkout")))
        {
            assert_eq!(step["with"]["ref"], "${{ needs.boards.outputs.sha }}", "{id} checks out the head by SHA");
        }
    }
    let approve = steps(&wf["jobs"]["approve"])
        .into_iter()
        .find(|s| s["run"].as_str().is_some_and(|r| r.contains("git push")))
        .unwrap();
    let run = approve["run"].as_str().unwrap();
    let verified = run.find("--jq .headRefOid").expect("the head is checked before the push");
    assert!(verified < run.find("git push").unwrap() && run.contains("if [ \"$head\" != \"$SHA\" ]; then"), "{run}");
    assert!(run.contains("git push origin \"HEAD:refs/heads/$BRANCH\""), "{run}");
    for job in jobs.values() {
        for step in steps(job) {
            let script = step["run"].as_str().unwrap_or("");
            assert!(!script.contains("${{"), "inputs reach scripts through env, not pasted in: {script}");
        }
    }
}
