//! `keyless-host piece validate | tools | graph` through the real binary.
#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

use std::path::PathBuf;
use std::process::Command;

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_keyless-host"))
}

fn fixture(name: &str) -> PathBuf {
    keyless_tests::corpus_dir()
        .parent()
        .expect("tests dir")
        .join("pieces")
        .join(name)
}

#[test]
fn validate_json_matches_the_fixtures_in_both_modes() {
    let dir = keyless_tests::corpus_dir()
        .parent()
        .expect("tests dir")
        .join("pieces");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        let expected: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(path.with_extension("json")).expect("expected"),
        )
        .expect("json");
        for (mode, flag) in [("strict", None), ("lenient", Some("--lenient"))] {
            let out = host()
                .args(["piece", "validate", "--json"])
                .args(flag)
                .arg(&path)
                .output()
                .expect("run");
            let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let want = &expected[mode];
            assert_eq!(got["ok"], want["ok"], "{} {mode}", path.display());
            assert_eq!(
                out.status.code(),
                Some(if want["ok"] == true { 0 } else { 1 })
            );
            for kind in ["errors", "warnings"] {
                let strip =
                    |v: &serde_json::Value| -> Vec<(String, String, serde_json::Value, String)> {
                        v.as_array()
                            .map(|a| {
                                a.iter()
                                    .map(|f| {
                                        (
                                            f["code"].to_string(),
                                            f["path"].to_string(),
                                            f["line"].clone(),
                                            f["message"].to_string(),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                assert_eq!(
                    strip(&got[kind]),
                    strip(&want[kind]),
                    "{} {mode} {kind}",
                    path.display()
                );
                // Exactly the documented keys.
                for f in got[kind].as_array().expect("array") {
                    let mut keys: Vec<&str> = f
                        .as_object()
                        .expect("object")
                        .keys()
                        .map(String::as_str)
                        .collect();
                    keys.sort_unstable();
                    assert_eq!(keys, ["code", "line", "message", "path"]);
                }
            }
        }
        n += 1;
    }
    assert!(n >= 20);
}

#[test]
fn validate_text_names_path_line_and_help() {
    let file = fixture("err_seed_ssh_example.yaml");
    let out = host()
        .args(["piece", "validate"])
        .arg(&file)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(":18: error KA_PIECE_SENTINEL movements[0].rules[0].next: rules[].next may not be the terminal sentinel COMPLETE"), "{text}");
    assert!(
        text.contains("= help: COMPLETE is reached by the model's @@done"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn tools_and_graph() {
    let pieces = keyless_tests::corpus_dir()
        .parent()
        .expect("tests")
        .parent()
        .expect("root")
        .join("pieces");
    let out = host()
        .args(["piece", "tools"])
        .arg(pieces.join("plan-implement-review.yaml"))
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("review (edit: false)\n  tools:    Read, Bash, Commit, say, ask, next, done"),
        "{text}"
    );
    assert!(
        text.contains("runcommand only: git status | git log *"),
        "{text}"
    );
    let out = host()
        .args(["piece", "graph", "--format", "dot"])
        .arg(pieces.join("fix-loop.yaml"))
        .output()
        .expect("run");
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(dot.starts_with("digraph \"fix-loop\" {"), "{dot}");
    assert!(
        dot.contains("m_verify -> m_fix [label=\"the tests still fail\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("m_verify -> m_ASK [style=dashed, label=\"default\"];"),
        "{dot}"
    );
    let out = host()
        .args(["piece", "graph"])
        .arg(pieces.join("fix-loop.yaml"))
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("flowchart TD\n"));
    // An invalid piece has no graph.
    let out = host()
        .args(["piece", "graph"])
        .arg(fixture("err_references.yaml"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn unreadable_files_exit_2() {
    let out = host()
        .args(["piece", "validate", "/nonexistent.yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_FILE_IO"));
}
