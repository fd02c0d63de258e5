//! CI is the command line: the workflows call only commands that exist, the
//! hosted one runs what `.ci/run` runs, and the board matrix comes from the
//! board profiles.

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
    assert_eq!(
        commands,
        ["set -euo pipefail", "cd \"$(dirname \"$0\")/..\"", "cargo xtask ci --test-tflm ../shared/tflm"]
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("cargo xtask ci "), "the README's test command is what CI runs");
}

#[test]
fn the_matrix_is_the_board_profiles() {
    let ws = harness::Workspace::from_source();
    let boards = harness::spec::board::load_all(&ws).unwrap();
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
