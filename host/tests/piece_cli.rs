//! `keyless-host piece validate | tools | graph` through the real binary.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
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
                                            f["key"].to_string(),
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
                // Exactly the carrier's keys: help when the finding has one.
                for f in got[kind].as_array().expect("array") {
                    let mut keys: Vec<&str> = f
                        .as_object()
                        .expect("object")
                        .keys()
                        .map(String::as_str)
                        .filter(|k| *k != "help")
                        .collect();
                    keys.sort_unstable();
                    assert_eq!(keys, ["code", "key", "line", "message", "severity"]);
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
    assert!(text.contains("error[KA_PIECE_SENTINEL]: movements[0].rules[0].next: rules[].next may not be the terminal sentinel COMPLETE\n"), "{text}");
    assert!(text.contains("err_seed_ssh_example.yaml:18:"), "{text}");
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
        dot.contains("m2 [label=\"verify\\n(read-only)\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("m2 -> m1 [label=\"the tests still fail\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("s0 [shape=doublecircle, label=\"ASK\"];\n"),
        "{dot}"
    );
    assert!(
        dot.contains("m2 -> s0 [style=dashed, label=\"default\"];"),
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

/// Every movement is its own node whatever its name (`a-b` and `a_b` were one node), labels are
/// escaped, and Graphviz renders the dot (Debian's graphviz, installed by the test setup in CI).
#[test]
fn graphs_keep_every_movement_and_render() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("odd.yaml");
    std::fs::write(
        &file,
        "name: odd-names\ndescription: Names and conditions that break naive graphs.\nmax_movements: 9\ninitial_movement: a-b\nmovements:\n  - name: a-b\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n    rules:\n      - condition: 'says \"done\" \\ <ok> & #1 | pipe'\n        next: a_b\n  - name: a_b\n    edit: true\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n    rules:\n      - condition: back\n        next: a.b\n  - name: a.b\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n    default_next: ASK\n    rules: []\n",
    )
    .expect("write");
    let graph = |format: &str| {
        let out = host()
            .args(["piece", "graph", "--format", format])
            .arg(&file)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dot = graph("dot");
    for node in ["m0 [label=\"a-b", "m1 [label=\"a_b", "m2 [label=\"a.b"] {
        assert!(dot.contains(node), "{node}: {dot}");
    }
    assert!(
        dot.contains(r#"m0 -> m1 [label="says \"done\" \\ <ok> & #1 | pipe"];"#),
        "{dot}"
    );
    let mermaid = graph("mermaid");
    assert!(
        mermaid.contains("m0 -->|\"says #quot;done#quot; \\ #lt;ok#gt; #amp; #35;1 | pipe\"| m1"),
        "{mermaid}"
    );
    assert!(mermaid.contains("m2[\"a.b<br/>"), "{mermaid}");
    let dot_bin = std::path::Path::new("/usr/bin/dot");
    if !dot_bin.exists() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI installs graphviz; /usr/bin/dot is missing"
        );
        println!("/usr/bin/dot is missing: the render check needs Debian's graphviz");
        return;
    }
    let mut child = Command::new(dot_bin)
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dot");
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(dot.as_bytes())
            .expect("write");
    }
    let out = child.wait_with_output().expect("dot");
    let svg = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // start, three movements and the ASK sentinel: five nodes.
    assert_eq!(svg.matches("class=\"node\"").count(), 5, "{svg}");
    assert!(svg.contains("a.b"), "{svg}");
}
