//! `keyless-host as check | fmt` on files in a temp folder.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .arg("as")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run")
}

const PLANNER: &str = "import agent Executor from \"./executor.as\"\n\nmain agent Planner {\n    main func(input) {\n        return Executor(input)\n    }\n}\n";

#[test]
fn check_reports_codes_lines_and_columns_and_exits_by_the_contract() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::write(d.join("planner.as"), PLANNER).expect("write");
    std::fs::write(
        d.join("executor.as"),
        "main agent Executor {\n    main func(step) {\n        return step\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["check", "planner.as"], d);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "planner.as: ok\n");
    // An error, as JSON.
    std::fs::write(
        d.join("bad.as"),
        "main agent A {\n    main func(input) {\n        return inptu\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["check", "--json", "bad.as"], d);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v,
        serde_json::json!({"ok": false, "diagnostics": [{"code": "KA_AS_NAME", "line": 3, "column": 16,
            "message": "unknown name \"inptu\"", "help": "did you mean \"input\"?"}]})
    );
    // A cycle through the executor's import of the planner is found, in the file that closes it.
    std::fs::write(
        d.join("executor.as"),
        "import agent Planner from \"./planner.as\"\n\nmain agent Executor {\n    main func(step) {\n        return Planner(step)\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["check", "--json", "planner.as"], d);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let d0 = &v["diagnostics"][0];
    assert_eq!(d0["code"], "KA_AS_IMPORT_CYCLE", "{v}");
    assert!(
        d0["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("executor.as")),
        "{v}"
    );
    assert!(
        d0["message"]
            .as_str()
            .is_some_and(|m| m.contains("planner.as -> ") && m.ends_with("planner.as")),
        "{v}"
    );
    // A missing file is an I/O error: exit 2 with its code.
    let out = run(&["check", "missing.as"], d);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_FILE_IO"));
}

#[test]
fn fmt_rewrites_checks_and_never_touches_a_file_that_does_not_parse() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let messy = "main agent A{\n  main func(input){ # entry\n    x=[1,2]\n    return x\n  }\n}\n";
    std::fs::write(d.join("a.as"), messy).expect("write");
    let out = run(&["fmt", "--check", "a.as"], d);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "a.as: not formatted\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("a.as")).expect("read"),
        messy
    );
    let out = run(&["fmt", "a.as"], d);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let tidy = std::fs::read_to_string(d.join("a.as")).expect("read");
    assert_eq!(
        tidy,
        "main agent A {\n    main func(input) {\n        // entry\n        x = [1, 2]\n        return x\n    }\n}\n"
    );
    assert_eq!(run(&["fmt", "--check", "a.as"], d).status.code(), Some(0));
    let broken = "main agent A {\n    main func(input) {\n        return \"open\n";
    std::fs::write(d.join("b.as"), broken).expect("write");
    let out = run(&["fmt", "b.as"], d);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("b.as:3:16: KA_AS_SYNTAX unterminated string"));
    assert_eq!(
        std::fs::read_to_string(d.join("b.as")).expect("read"),
        broken
    );
}
