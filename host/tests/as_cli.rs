//! `keyless-host as check | fmt` on files in a temp folder.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

/// The user's configuration for these runs: an empty folder, never the real home.
fn no_user_config() -> std::path::PathBuf {
    let p = std::env::temp_dir().join("keyless-as-cli-no-user-config");
    std::fs::create_dir_all(&p).expect("dir");
    p
}

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .arg("as")
        .args(args)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", no_user_config())
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
        serde_json::json!({"ok": false, "diagnostics": [{"code": "KA_AS_NAME", "severity": "error", "line": 3, "column": 16,
            "message": "unknown name \"inptu\"", "help": "did you mean \"input\"?"}]})
    );
    // As a person reads it: rustc's layout, the line, a caret under the name, the help.
    let out = run(&["check", "bad.as"], d);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "error[KA_AS_NAME]: unknown name \"inptu\"\n --> bad.as:3:16\n  |\n3 |         return inptu\n  |                ^^^^^\n  |\n  = help: did you mean \"input\"?\n\nbad.as: 1 problem(s)\n"
    );
    // A failure at run time is shown the same way, with the call stack.
    std::fs::write(
        d.join("fails.as"),
        "main agent A {\n    func inner(x) {\n        return x.length.more\n    }\n\n    main func(input) {\n        return inner([1])\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["run", "fails.as"], d);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error[KA_AS_RUNTIME]: a number has no field \"more\"\n --> fails.as:3:25\n  |\n3 |         return x.length.more\n  |{}^^^^\n  |\n  = note: in A.inner\n  = note: in A.main\n", " ".repeat(25))
    );
    // A static problem met by `as run` reads as `as check` shows it: the place and the help.
    let out = run(&["run", "bad.as"], d);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error[KA_AS_NAME]: unknown name \"inptu\"\n --> bad.as:3:16\n  |\n3 |         return inptu\n  |                ^^^^^\n  |\n  = help: did you mean \"input\"?\n"
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

/// A copy of `examples/` in a temp workspace.
fn examples_ws() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).expect("dir");
        for e in std::fs::read_dir(from).expect("examples") {
            let p = e.expect("entry").path();
            if p.is_file() {
                std::fs::copy(&p, to.join(p.file_name().expect("name"))).expect("copy");
            }
        }
    };
    copy(&src, tmp.path());
    copy(&src.join("planner"), &tmp.path().join("planner"));
    tmp
}

fn mock(dir: &Path, answers: &[&str]) -> String {
    let p = dir.join("answers.json");
    std::fs::write(&p, serde_json::to_string(answers).expect("json")).expect("write");
    p.display().to_string()
}

/// Each example of `examples/` runs for real with a scripted model: the planner/executor pair
/// across files, the reflect-and-improve loop with its file memory, the file summariser.
#[test]
fn the_examples_run_with_a_scripted_model() {
    let tmp = examples_ws();
    let d = tmp.path();
    // planner/executor
    let answers = mock(
        d,
        &[
            "{\"steps\": [\"add the route\", \"add a test\"]}",
            "Done: ```json\n{\"ok\": true, \"report\": \"route added\"}\n```",
            "{\"ok\": \"true\", \"report\": \"test added\"}",
        ],
    );
    let out = run(
        &[
            "run",
            "planner/main.as",
            "--input",
            "{\"goal\": \"add a health check\"}",
            "--mock",
            &answers,
            "--trace",
            "trace.json",
        ],
        d,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v,
        serde_json::json!({"goal": "add a health check", "steps": 2, "results": [
            {"ok": true, "report": "route added"}, {"ok": true, "report": "test added"}]})
    );
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("trace.json")).expect("trace"))
            .expect("json");
    let calls = &trace["events"][0]["events"];
    assert_eq!(calls[0]["agent"], "Planner");
    assert_eq!(calls[1]["agent"], "Executor");
    let prompt = calls[1]["events"][0]["attempts"][0]["prompt"]
        .as_str()
        .expect("prompt");
    assert!(prompt.contains("[input.step]\nadd the route\n"), "{prompt}");
    // reflect-and-improve, twice: the second run recalls the first run's lesson.
    let answers = mock(
        d,
        &[
            "{\"text\": \"fix stuff\"}",
            "{\"ok\": false, \"advice\": \"say what was fixed\"}",
            "{\"text\": \"Fix the health check timeout\"}",
            "{\"ok\": true, \"advice\": \"\"}",
            "{\"insight\": \"Name the change, not the activity.\"}",
        ],
    );
    for round in 0..2 {
        let out = run(
            &[
                "run",
                "reflect.as",
                "--input",
                "{\"goal\": \"a commit message\"}",
                "--mock",
                &answers,
                "--trace",
                "reflect.json",
            ],
            d,
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"text": "Fix the health check timeout", "accepted": true})
        );
        let trace = std::fs::read_to_string(d.join("reflect.json")).expect("trace");
        let first_prompt: serde_json::Value = serde_json::from_str(&trace).expect("json");
        let p = first_prompt["events"][0]["events"][1]["attempts"][0]["prompt"]
            .as_str()
            .expect("prompt")
            .to_string();
        assert_eq!(
            p.contains("Name the change, not the activity."),
            round == 1,
            "round {round}: {p}"
        );
    }
    let lessons = std::fs::read_to_string(d.join(".agentscript/lessons.jsonl")).expect("memory");
    let records: Vec<serde_json::Value> = lessons
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(records.len(), 2);
    assert!(records
        .iter()
        .all(|r| r["id"].is_string() && r["created_at"].is_u64() && r["kind"] == "lesson"));
    // The summariser: the file is context, cut at 4k.
    let answers = mock(
        d,
        &["{\"title\": \"Release\", \"bullets\": [\"a\", \"b\", \"c\"]}"],
    );
    let out = run(
        &[
            "run",
            "summarise.as",
            "--mock",
            &answers,
            "--trace",
            "sum.json",
        ],
        d,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(d.join("sum.json")).expect("trace");
    assert!(trace.contains("[Notes]\\n# Release notes"), "{trace}");
    // Out of answers: its own code, and the stack.
    let answers = mock(d, &[]);
    let out = run(&["run", "summarise.as", "--mock", &answers], d);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error[KA_AS_MOCK_EXHAUSTED]"), "{err}");
    assert!(err.contains("in Summariser.main"), "{err}");
}

/// Nothing outside the workspace is read: `..` and symlinks out are refused.
#[test]
fn imports_stay_inside_the_workspace() {
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::write(outside.path().join("secret.md"), "CANARY").expect("canary");
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), d.join("link.md"))
        .expect("symlink");
    for (import, _) in [("../secret.md", "leaves"), ("./link.md", "symlink")] {
        std::fs::write(
            d.join("p.as"),
            format!("import file S from \"{import}\"\n\nmain agent A {{\n    main func(input) {{\n        return S\n    }}\n}}\n"),
        )
        .expect("write");
        let out = run(&["run", "p.as"], d);
        assert_eq!(out.status.code(), Some(1), "{import}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("error[KA_PATH_OUTSIDE]")
                && !String::from_utf8_lossy(&out.stdout).contains("CANARY"),
            "{import}: {err}"
        );
    }
}

/// Parallel runs adding to the same file memory lose nothing.
#[test]
fn parallel_writers_to_one_memory_lose_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::write(
        d.join("add.as"),
        "import memory M from \"file://./mem/log.jsonl\"\n\nmain agent A {\n    main func(input) {\n        repeat * 25 {\n            M.add({ kind: \"tick\", who: input })\n        }\n        return none\n    }\n}\n",
    )
    .expect("write");
    let children: Vec<_> = (0..8)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_keyless-host"))
                .args(["as", "run", "add.as", "--input", &i.to_string()])
                .current_dir(d)
                .env("XDG_CONFIG_HOME", no_user_config())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success());
    }
    let text = std::fs::read_to_string(d.join("mem/log.jsonl")).expect("memory");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole line"))
        .collect();
    assert_eq!(lines.len(), 200);
    let mut ids: Vec<&str> = lines.iter().filter_map(|l| l["id"].as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 200, "ids are unique");
    // A memory that cannot be written has its own code.
    std::fs::create_dir_all(d.join("mem/dir.jsonl")).expect("dir");
    std::fs::write(
        d.join("bad.as"),
        "import memory M from \"file://./mem/dir.jsonl\"\n\nmain agent A {\n    main func(input) {\n        M.add({ kind: \"x\" })\n        return none\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["run", "bad.as"], d);
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("error[KA_AS_MEMORY]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A memory cannot fill the disk or the host's memory: a record past 1 MiB, a file memory past
/// 64 MiB and a FIFO in a memory's place each stop the program with a code, promptly.
#[test]
fn memories_have_bounds() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::create_dir_all(d.join("mem")).expect("mem");
    std::fs::write(
        d.join("big.json"),
        serde_json::to_string(&"x".repeat(600_000)).expect("json"),
    )
    .expect("input");
    std::fs::write(
        d.join("add.as"),
        "import memory M from \"file://./mem/log.jsonl\"\nimport memory S from \"sqlite://./mem/m.db#n\"\n\nmain agent A {\n    main func(input) {\n        M.add({ kind: \"ok\", text: \"small\" })\n        S.add({ kind: \"big\", a: input, b: input })\n        return none\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["run", "add.as", "--input", "@big.json"], d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1) && err.starts_with("error[KA_AS_LIMIT]"),
        "{err}"
    );
    assert!(err.contains("a record holds at most 1024 KiB"), "{err}");
    // The small record was kept; nothing of the large one was.
    assert_eq!(
        std::fs::read_to_string(d.join("mem/log.jsonl"))
            .expect("log")
            .lines()
            .count(),
        1
    );
    // A file memory grown past 64 MiB (by a command, say) is refused before it is read.
    std::fs::File::options()
        .append(true)
        .open(d.join("mem/log.jsonl"))
        .and_then(|f| f.set_len(65 << 20))
        .expect("grow");
    std::fs::write(
        d.join("query.as"),
        "import memory M from \"file://./mem/log.jsonl\"\n\nmain agent A {\n    main func(input) {\n        return M.query({ kind: \"ok\" }).length\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["run", "query.as"], d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error[KA_AS_LIMIT]") && err.contains("64 MiB"),
        "{err}"
    );
    // Adding to it is refused too, and the file is not grown further.
    let out = run(&["run", "add.as", "--input", "\"x\""], d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error[KA_AS_LIMIT]"), "{err}");
    assert_eq!(
        std::fs::metadata(d.join("mem/log.jsonl"))
            .expect("meta")
            .len(),
        65 << 20
    );
    // A FIFO in the memory's place is refused at once instead of waiting for a writer.
    std::fs::remove_file(d.join("mem/log.jsonl")).expect("rm");
    let made = Command::new("mkfifo")
        .arg(d.join("mem/log.jsonl"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let out = run(&["run", "query.as"], d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1) && err.contains("not a regular file"),
        "{err}"
    );
}

/// `generate({ debug: true })` prints each prompt to stderr; the value still goes to stdout.
#[test]
fn a_mock_past_its_limit_says_so() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::write(
        d.join("p.as"),
        "import llm M from \"openai://m\"\n\nmain agent A {\n    model M\n\n    main func(input) {\n        return input\n    }\n}\n",
    )
    .expect("p.as");
    let big = format!("[\"{}\"]", "x".repeat(17 << 20));
    std::fs::write(d.join("big.json"), big).expect("big");
    let out = run(&["run", "p.as", "--mock", "big.json"], d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("KA_AS_LIMIT") && err.contains("more than 16 MiB"),
        "{err}"
    );
    assert!(!err.contains("EOF"), "{err}");
}

#[test]
fn debug_prints_the_prompt_to_stderr() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::write(
        d.join("d.as"),
        "import llm Q from \"openai://gpt-4.1-mini\"\n\nmain agent A {\n    model Q\n\n    main func(input) {\n        use input\n        return generate({ input: \"Say ok.\", debug: true }) {\n            return {\n                ok boolean\n            }\n        }\n    }\n}\n",
    )
    .expect("write");
    let answers = mock(d, &["{\"ok\": true}"]);
    let out = run(
        &["run", "d.as", "--input", "\"hello\"", "--mock", &answers],
        d,
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "--- generate prompt ---\nContext:\n[input]\nhello\n\nInstruction:\nSay ok.\n"
        ),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\n  \"ok\": true\n}\n"
    );
}

/// The tools, for real on a workspace: find, grep and sed without a shell; file read, list,
/// write, patch (exactly once) and undo with effect records; env without secrets; other
/// programs refused, nothing outside the workspace touched.
#[test]
fn tools_work_on_the_workspace_and_nowhere_else() {
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::write(outside.path().join("secret.txt"), "CANARY").expect("canary");
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::create_dir_all(d.join("src/deep")).expect("dirs");
    std::fs::write(d.join("src/a.rs"), "fn a() {}\n// TODO: one\n").expect("write");
    std::fs::write(d.join("src/deep/b.rs"), "fn b() {}\n// TODO: two\n").expect("write");
    std::fs::write(d.join("README.md"), "line 1\nline 2\nline 3\n").expect("write");
    std::os::unix::fs::symlink(outside.path(), d.join("src/out")).expect("symlink");
    std::fs::write(
        d.join("t.as"),
        r##"import tool Find from "sh://find"
import tool Grep from "sh://grep"
import tool Sed from "sh://sed"
import tool File from "file://workspace"
import tool Env from "env://process"

main agent A {
    main func(input) {
        files = Find.run({ path: ".", name: "*.rs", type: "file" })
        todos = Grep.run({ path: "src", pattern: "TODO", include: "*.rs", max: 10 })
        head = Sed.run({ path: "README.md", start: 2, max: 1 })
        listing = File.list({ path: "src" })
        w = File.write({ path: "notes/out.md", content: "# Result\n" })
        p = File.patch({ path: "README.md", search: "line 2", replace: "line two" })
        patched = File.read({ path: "README.md" })
        effects = [w, p]
        undone = File.undo(effects)
        home = Env.get({ name: "LANG" })
        return { files: files.files, todos: todos.matches, head: head.lines, listing: listing.entries, patched: patched.content, undone: undone.restored, home: home }
    }
}
"##,
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["as", "run", "t.as"])
        .current_dir(d)
        .env("XDG_CONFIG_HOME", no_user_config())
        .env("LANG", "plain value")
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v["files"],
        serde_json::json!(["src/a.rs", "src/deep/b.rs"]),
        "{v}"
    );
    assert_eq!(
        v["todos"],
        serde_json::json!([{"path": "src/a.rs", "line": 2, "text": "// TODO: one"}, {"path": "src/deep/b.rs", "line": 2, "text": "// TODO: two"}])
    );
    assert_eq!(
        v["head"],
        serde_json::json!([{"line": 2, "text": "line 2"}])
    );
    assert_eq!(
        v["listing"],
        serde_json::json!([{"name": "a.rs", "type": "file"}, {"name": "deep", "type": "dir"}, {"name": "out", "type": "symlink"}])
    );
    assert_eq!(v["patched"], "line 1\nline two\nline 3\n");
    assert_eq!(
        v["undone"],
        serde_json::json!(["README.md", "notes/out.md"])
    );
    assert_eq!(v["home"], "plain value");
    // Undo restored everything.
    assert_eq!(
        std::fs::read_to_string(d.join("README.md")).expect("read"),
        "line 1\nline 2\nline 3\n"
    );
    assert!(!d.join("notes/out.md").exists());
    // Refusals, each with its code and nothing touched outside.
    for (call, want) in [
        ("File.read({ path: \"../secret.txt\" })", "KA_PATH_OUTSIDE"),
        (
            "File.read({ path: \"src/out/secret.txt\" })",
            "KA_PATH_OUTSIDE",
        ),
        (
            "File.write({ path: \"src/out/new.txt\", content: \"x\" })",
            "KA_PATH_OUTSIDE",
        ),
        (
            "Grep.run({ path: \"src/out\", pattern: \"CANARY\" })",
            "KA_PATH_OUTSIDE",
        ),
        ("File.read({ path: \"missing.txt\" })", "KA_FILE_NOT_FOUND"),
        (
            "File.patch({ path: \"README.md\", search: \"line\", replace: \"x\" })",
            "KA_FIND_NOT_UNIQUE",
        ),
        (
            "Env.get({ name: \"OPENAI_API_KEY\" })",
            "KA_AS_TOOL_REFUSED",
        ),
        ("Py.run({ code: \"1\" })", "KA_AS_TOOL_REFUSED"),
        (
            "Grep.run({ path: \"src\", pattern: \"(\" })",
            "KA_AS_TOOL_REFUSED",
        ),
    ] {
        std::fs::write(
            d.join("r.as"),
            format!("import tool File from \"file://workspace\"\nimport tool Grep from \"sh://grep\"\nimport tool Env from \"env://process\"\nimport tool Py from \"sh://python3\"\n\nmain agent A {{\n    main func(input) {{\n        return {call}\n    }}\n}}\n"),
        )
        .expect("write");
        let out = run(&["run", "r.as"], d);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{call}: {err}");
        assert!(err.starts_with(&format!("error[{want}]")), "{call}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("CANARY"),
            "{call}"
        );
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("dir").count(),
        1,
        "nothing written outside"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("README.md")).expect("read"),
        "line 1\nline 2\nline 3\n"
    );
}

/// SQLite memory: a fixed schema, namespaces kept apart, queries by kind, text, where and limit,
/// parallel runs losing nothing, and a database path that is a symlink out is refused.
#[test]
fn sqlite_memory_keeps_namespaces_and_parallel_writers() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    std::fs::write(
        d.join("add.as"),
        "import memory Runs from \"sqlite://./mem/memory.db#runs\"\n\nmain agent A {\n    main func(input) {\n        repeat * 20 {\n            Runs.add({ kind: \"tick\", who: input, text: \"Hello World\" })\n        }\n        return none\n    }\n}\n",
    )
    .expect("write");
    let children: Vec<_> = (0..6)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_keyless-host"))
                .args(["as", "run", "add.as", "--input", &i.to_string()])
                .current_dir(d)
                .env("XDG_CONFIG_HOME", no_user_config())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success());
    }
    std::fs::write(
        d.join("q.as"),
        "import memory Runs from \"sqlite://./mem/memory.db#runs\"\nimport memory Other from \"sqlite://./mem/memory.db#other\"\n\nmain agent A {\n    main func(input) {\n        Other.add({ kind: \"tick\", who: 99 })\n        all = Runs.query({ kind: \"tick\" })\n        some = Runs.query({ text: \"hello world\", where: { who: 3 }, limit: 5 })\n        other = Other.query({})\n        return { all: all.length, some: some.length, who: some[0].who, other: other.length }\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["run", "q.as"], d);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v,
        serde_json::json!({"all": 120, "some": 5, "who": 3, "other": 1})
    );
    // A database that is a symlink out of the workspace is never opened.
    let outside = tempfile::tempdir().expect("tmp");
    std::os::unix::fs::symlink(outside.path().join("evil.db"), d.join("mem/link.db"))
        .expect("symlink");
    std::fs::write(
        d.join("s.as"),
        "import memory M from \"sqlite://./mem/link.db\"\n\nmain agent A {\n    main func(input) {\n        M.add({ kind: \"x\" })\n        return none\n    }\n}\n",
    )
    .expect("write");
    let out = run(&["run", "s.as"], d);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error[KA_PATH_OUTSIDE]"));
    assert!(
        !outside.path().join("evil.db").exists(),
        "nothing created outside"
    );
}

/// keyless.json's `Programs.Env` names exactly what `env://process` may read: from the user's
/// file it applies (a secret-looking name included); from an unapproved workspace file a list that
/// would widen what programs see is ignored.
#[test]
fn programs_env_says_what_a_program_may_read() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    // The user's config lives outside the workspace (a workspace that holds it is refused).
    let cfg_tmp = tempfile::tempdir().expect("cfg");
    let config = cfg_tmp.path().join("cfg");
    std::fs::create_dir_all(config.join("keyless")).expect("dir");
    std::fs::write(
        config.join("keyless/keyless.json"),
        r#"{"Programs": {"Env": ["KEYLESS_TEST_SECRET_TOKEN"]}}"#,
    )
    .expect("config");
    let get = |name: &str, config: &Path| {
        std::fs::write(
            d.join("e.as"),
            format!("import tool Env from \"env://process\"\n\nmain agent A {{\n    main func(input) {{\n        return Env.get({{ name: \"{name}\" }})\n    }}\n}}\n"),
        )
        .expect("write");
        Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args(["as", "run", "e.as"])
            .current_dir(d)
            .env("XDG_CONFIG_HOME", config)
            .env("KEYLESS_TEST_SECRET_TOKEN", "t0ken")
            .env("KEYLESS_TEST_PLAIN", "plain")
            .output()
            .expect("run")
    };
    let out = get("KEYLESS_TEST_SECRET_TOKEN", &config);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "\"t0ken\"\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = get("KEYLESS_TEST_PLAIN", &config);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("error[KA_AS_TOOL_REFUSED]: KEYLESS_TEST_PLAIN is not a variable programs read"));
    // The same list in the workspace's own (unapproved) keyless.json does not apply.
    std::fs::write(
        d.join("keyless.json"),
        r#"{"Programs": {"Env": ["KEYLESS_TEST_SECRET_TOKEN"]}}"#,
    )
    .expect("ws config");
    let out = get("KEYLESS_TEST_SECRET_TOKEN", &no_user_config());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "error[KA_AS_TOOL_REFUSED]: KEYLESS_TEST_SECRET_TOKEN is not a variable programs read"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// keyless.json's Programs.Tools lets `sh://NAME` run that program: its arguments are literal
/// words (no shell reads them), it runs in the sandbox (nothing written outside the workspace),
/// the Denied tier still holds, and unlisted programs stay refused.
#[test]
fn programs_tools_run_allowed_programs_in_the_sandbox_without_a_shell() {
    let outside = tempfile::tempdir().expect("tmp");
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    // The user's config lives outside the workspace (a workspace that holds it is refused).
    let cfg_tmp = tempfile::tempdir().expect("cfg");
    let config = cfg_tmp.path().join("cfg");
    std::fs::create_dir_all(config.join("keyless")).expect("dir");
    std::fs::write(
        config.join("keyless/keyless.json"),
        r#"{"Programs": {"Tools": ["echo", "git", "touch"]}}"#,
    )
    .expect("config");
    let call = |imports: &str, expr: &str| {
        std::fs::write(
            d.join("p.as"),
            format!("{imports}\nmain agent A {{\n    main func(input) {{\n        return {expr}\n    }}\n}}\n"),
        )
        .expect("write");
        Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args(["as", "run", "p.as"])
            .current_dir(d)
            .env("XDG_CONFIG_HOME", &config)
            .output()
            .expect("run")
    };
    let out = call(
        "import tool Echo from \"sh://echo\"\n",
        "Echo.run({ args: [\"hi\", \"$(whoami)\", \"it's\", \"; rm -rf .\"] })",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["output"], "hi $(whoami) it's ; rm -rf .\n", "{v}");
    assert_eq!(v["exit_code"], 0);
    // The sandbox: a write outside the workspace fails and leaves nothing.
    let target = outside.path().join("planted");
    let out = call(
        "import tool Touch from \"sh://touch\"\n",
        &format!("Touch.run({{ args: [\"{}\"] }})", target.display()),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_ne!(v["exit_code"], 0, "{v}");
    assert!(!target.exists(), "nothing written outside the workspace");
    // The Denied tier holds for an allowed program; an unlisted one stays refused.
    let out = call(
        "import tool Git from \"sh://git\"\n",
        "Git.run({ args: [\"push\", \"--force\"] })",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("error[KA_AS_TOOL_REFUSED]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = call(
        "import tool Cat from \"sh://cat\"\n",
        "Cat.run({ args: [\"p.as\"] })",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error[KA_AS_TOOL_REFUSED]: sh://cat"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
