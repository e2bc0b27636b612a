//! The `.as` interpreter with scripted effects: scopes, deferred `use`, caps, generate (prompt,
//! extraction, coercion, attempts, provider errors), agent calls, limits, and a golden trace.
#![allow(clippy::expect_used, clippy::unreachable)] // fixture helpers fail the test loudly

use keyless_core::lang::interp::{run, EffectError, Effects, Entry, ModelCall, Trace};
use keyless_core::Code;
use serde_json::{json, Value};
use std::collections::VecDeque;

#[derive(Default)]
struct Script {
    answers: VecDeque<Result<String, EffectError>>,
    calls: Vec<ModelCall>,
    files: Vec<(String, String)>,
    agents: Vec<(String, String)>,
    effects: Vec<String>,
}

impl Effects for Script {
    fn generate(&mut self, call: &ModelCall) -> Result<String, EffectError> {
        self.calls.push(call.clone());
        self.answers
            .pop_front()
            .unwrap_or_else(|| Err(EffectError::new(Code::AsMockExhausted, "no answer left")))
    }
    fn tool(&mut self, uri: &str, method: &str, args: &Value) -> Result<Value, EffectError> {
        self.effects.push(format!("tool {uri} {method} {args}"));
        Ok(json!({"ok": true, "files": ["a.rs"]}))
    }
    fn memory(
        &mut self,
        _from: &str,
        uri: &str,
        method: &str,
        args: &Value,
    ) -> Result<Value, EffectError> {
        self.effects.push(format!("memory {uri} {method} {args}"));
        Ok(if method == "query" {
            json!([{"text": "earlier lesson"}])
        } else {
            json!({"id": "m1"})
        })
    }
    fn read_file(&mut self, _from: &str, path: &str) -> Result<String, EffectError> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| EffectError::new(Code::AsEffect, format!("{path}: no such file")))
    }
    fn now_ms(&mut self) -> u64 {
        0
    }
    fn load_agent(&mut self, _from: &str, path: &str) -> Result<(String, String), EffectError> {
        self.agents
            .iter()
            .find(|(p, _)| p == path)
            .map(|(p, t)| (p.clone(), t.clone()))
            .ok_or_else(|| EffectError::new(Code::AsEffect, format!("{path}: no such file")))
    }
}

fn script(answers: &[&str]) -> Script {
    Script {
        answers: answers.iter().map(|a| Ok((*a).to_string())).collect(),
        ..Script::default()
    }
}

fn go(
    src: &str,
    input: Value,
    s: &mut Script,
) -> (Result<Value, keyless_core::lang::interp::RunError>, Trace) {
    run(
        "main.as",
        src,
        &Entry {
            input,
            ..Entry::default()
        },
        s,
    )
}

const LLM: &str = "import llm Q from \"openai://gpt-4.1-mini\"\n";

fn program(body: &str) -> String {
    format!("{LLM}\nmain agent A {{\n    model Q\n    role \"Tester\"\n    description \"Checks things.\"\n\n    main func(input) {{\n{body}\n    }}\n}}\n")
}

#[test]
fn generate_builds_the_prompt_from_use_only_and_coerces_the_answer() {
    let src = program("        secret = \"never in the prompt\"\n        use input.question\n        return generate({ input: \"Answer the question\", limit: 800 }) {\n            return {\n                ok boolean\n                count number\n                answer string\n            }\n        }");
    let mut s = script(&[
        "Sure! ```json\n{\"ok\": \"true\", \"count\": \"42\", \"answer\": 7, \"extra\": 1}\n```",
    ]);
    let (out, _) = go(&src, json!({"question": "How many?"}), &mut s);
    assert_eq!(
        out.expect("ran"),
        json!({"ok": true, "count": 42, "answer": "7"})
    );
    let call = &s.calls[0];
    assert_eq!(
        (call.model.as_str(), call.limit),
        ("openai://gpt-4.1-mini", Some(800))
    );
    assert_eq!(
        call.prompt,
        "Role: Tester\nDescription: Checks things.\n\nContext:\n[input.question]\nHow many?\n\nInstruction:\nAnswer the question\n\nAnswer with one JSON object only, of this shape: { \"ok\": boolean, \"count\": number, \"answer\": string }\n"
    );
    assert!(!call.prompt.contains("never in the prompt"));
}

#[test]
fn use_is_deferred_budgeted_and_scoped() {
    let src = program("        notes = \"first\"\n        use notes < 5\n        notes = \"0123456789\"\n        repeat * 1 {\n            inner = \"inner value\"\n            use inner\n        }\n        return generate({ input: \"go\" }) {\n            return {\n                ok boolean\n            }\n        }");
    let mut s = script(&["{\"ok\": true}"]);
    let (out, _) = go(&src, json!({}), &mut s);
    out.expect("ran");
    let p = &s.calls[0].prompt;
    assert!(
        p.contains("[notes]\n01234\n[… cut: 5 of 10 characters kept]\n"),
        "{p}"
    );
    assert!(!p.contains("inner value"), "a use dies with its scope: {p}");
}

#[test]
fn loops_update_outer_variables_drop_new_ones_and_stop_at_caps() {
    let src = program("        count = 0\n        seen = []\n        loop until count == 3 < 10 {\n            fresh = count\n            seen.add(fresh)\n            count = seen.length\n        }\n        capped = []\n        for x in [1, 2, 3, 4] < 2 {\n            capped.add(x)\n        }\n        repeat * 2 {\n            capped.add(\"r\")\n        }\n        return { count: count, seen: seen, capped: capped, first: seen[0], total: capped.length, summary: seen.summary }");
    let mut s = script(&[]);
    let (out, trace) = go(&src, json!({}), &mut s);
    assert_eq!(
        out.expect("ran"),
        json!({"count": 3, "seen": [0, 1, 2], "capped": [1, 2, "r", "r"], "first": 0, "total": 4, "summary": [0, 1, 2]})
    );
    let t = serde_json::to_string(&trace).expect("json");
    assert!(
        t.contains("{\"event\":\"cap\",\"line\":17,\"cap\":2}"),
        "{t}"
    );
    // A variable made inside a loop is gone after it: the analyzer refuses it before any run.
    let src = program("        repeat * 2 {\n            made = 1\n        }\n        return made");
    let (out, _) = go(&src, json!({}), &mut script(&[]));
    let e = out.expect_err("refused");
    assert_eq!(e.code, Code::AsName, "{e}");
}

#[test]
fn attempts_retry_with_the_error_and_provider_errors_do_not() {
    let src = program("        return generate({ input: \"go\", attempts: 3 }) {\n            return {\n                ok boolean\n            }\n        }");
    let mut s = script(&["no json here", "{\"ok\": \"maybe\"}", "{\"ok\": false}"]);
    let (out, trace) = go(&src, json!({}), &mut s);
    assert_eq!(out.expect("third try"), json!({"ok": false}));
    assert_eq!(s.calls.len(), 3);
    assert!(s.calls[1].prompt.ends_with("Your previous answer was not accepted: the answer holds no JSON object. Answer again with one JSON object only.\n"), "{}", s.calls[1].prompt);
    assert!(
        s.calls[2]
            .prompt
            .contains("\"ok\" must be a boolean, not the string \"maybe\""),
        "{}",
        s.calls[2].prompt
    );
    let t = serde_json::to_value(&trace).expect("json");
    assert_eq!(
        t["events"][0]["events"][0]["attempts"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    // Out of retries: `attempts: 3` is three retries, four tries.
    let mut s = script(&["{}", "{}", "{}", "{}"]);
    let e = go(&src, json!({}), &mut s).0.expect_err("no fit");
    assert_eq!(e.code, Code::AsShape);
    assert_eq!(s.calls.len(), 4);
    assert!(e.message.contains("after 4 tries (3 retries)"), "{e}");
    // Without `attempts`, one bad answer is asked again once (the `.as` specification: default 1 retry).
    let plain = program("        return generate({ input: \"go\" }) {\n            return {\n                ok boolean\n            }\n        }");
    let mut s = script(&["not json", "{\"ok\": true}"]);
    assert_eq!(
        go(&plain, json!({}), &mut s).0.expect("retried"),
        json!({"ok": true})
    );
    assert_eq!(s.calls.len(), 2);
    // `attempts: 0`: no retry.
    let none = program("        return generate({ input: \"go\", attempts: 0 }) {\n            return {\n                ok boolean\n            }\n        }");
    let mut s = script(&["not json", "{\"ok\": true}"]);
    assert_eq!(
        go(&none, json!({}), &mut s).0.expect_err("no retry").code,
        Code::AsShape
    );
    assert_eq!(s.calls.len(), 1);
    assert_eq!(e.stack, ["A.main"]);
    // A provider error: once, not retried.
    let mut s = Script {
        answers: VecDeque::from([Err(EffectError::new(Code::AsModel, "401 unauthorized"))]),
        ..Script::default()
    };
    let e = go(&src, json!({}), &mut s).0.expect_err("provider");
    assert_eq!((e.code, s.calls.len()), (Code::AsModel, 1));
    // The scripted model runs out.
    let e = go(&src, json!({}), &mut script(&[]))
        .0
        .expect_err("empty script");
    assert_eq!(e.code, Code::AsMockExhausted);
}

#[test]
fn agents_call_each_other_across_files_and_recursion_is_bounded() {
    let worker = "agent Worker {\n    main func run(input) {\n        return { done: input }\n    }\n\n    func twice(input) {\n        return [input, input]\n    }\n}\n";
    let src = "import agent Worker from \"./worker.as\"\n\nmain agent Boss {\n    main func(input) {\n        a = Worker(input)\n        b = Worker.twice(input)\n        return { a: a, b: b }\n    }\n}\n";
    let mut s = Script {
        agents: vec![("./worker.as".into(), worker.into())],
        ..Script::default()
    };
    let (out, trace) = go(src, json!("x"), &mut s);
    assert_eq!(
        out.expect("ran"),
        json!({"a": {"done": "x"}, "b": ["x", "x"]})
    );
    let t = serde_json::to_value(&trace).expect("json");
    assert_eq!(t["events"][0]["events"][0]["agent"], "Worker");
    assert_eq!(t["events"][0]["events"][1]["func"], "twice");
    // Runaway recursion: a clear code and the stack.
    let src = "main agent Loop {\n    main func(input) {\n        return again(input)\n    }\n\n    func again(input) {\n        return again(input)\n    }\n}\n";
    let e = go(src, json!(1), &mut script(&[])).0.expect_err("bounded");
    assert_eq!(e.code, Code::AsDepth);
    assert_eq!(e.stack.len(), 64);
    assert_eq!(e.stack[0], "Loop.main");
    // A cycle of agent imports.
    let a = "import agent B from \"./b.as\"\n\nmain agent A {\n    main func(input) {\n        return B(input)\n    }\n}\n";
    let b = "import agent A from \"./main.as\"\n\nmain agent B {\n    main func(input) {\n        return A(input)\n    }\n}\n";
    let mut s = Script {
        agents: vec![("./b.as".into(), b.into()), ("./main.as".into(), a.into())],
        ..Script::default()
    };
    let e = go(a, json!(1), &mut s).0.expect_err("cycle");
    assert_eq!(e.code, Code::AsImportCycle, "{e}");
}

#[test]
fn runtime_errors_name_the_problem_and_the_stack() {
    let src = program("        items = [1]\n        return items[3]");
    let e = go(&src, json!({}), &mut script(&[])).0.expect_err("range");
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            Code::AsRuntime,
            "index 3 is out of range (the list has 1 items)"
        )
    );
    let src = program("        n = 1\n        n.add(2)\n        return n");
    let e = go(&src, json!({}), &mut script(&[]))
        .0
        .expect_err("not a list");
    assert_eq!(e.message, "add works on a list, not a number");
    // The input must fit the main func's shape (with coercions).
    let src = "main agent A {\n    main func(input {\n        n number\n    }) {\n        return input.n\n    }\n}\n";
    assert_eq!(
        go(src, json!({"n": "5"}), &mut script(&[]))
            .0
            .expect("coerced"),
        json!(5)
    );
    let e = go(src, json!({}), &mut script(&[])).0.expect_err("missing");
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::AsShape, "the input does not fit: \"n\" is missing")
    );
}

#[test]
fn tools_memory_and_file_imports_go_through_the_effects() {
    let src = "import tool Find from \"sh://find\"\nimport memory Lessons from \"file://./lessons.jsonl\"\nimport file Notes from \"./notes.md\"\nimport file Conf from \"./conf.json\"\n\nmain agent A {\n    main func(input) {\n        files = Find.run({ path: \".\", name: \"*.rs\" })\n        Lessons.add({ kind: \"lesson\", text: Notes })\n        past = Lessons.query({ kind: \"lesson\", limit: 5 })\n        return { files: files.files, past: past, level: Conf.level }\n    }\n}\n";
    let mut s = Script {
        files: vec![
            ("./notes.md".into(), "# notes".into()),
            ("./conf.json".into(), "{\"level\": 2}".into()),
        ],
        ..Script::default()
    };
    let (out, trace) = go(src, json!({}), &mut s);
    assert_eq!(
        out.expect("ran"),
        json!({"files": ["a.rs"], "past": [{"text": "earlier lesson"}], "level": 2})
    );
    assert_eq!(
        s.effects,
        [
            "tool sh://find run {\"name\":\"*.rs\",\"path\":\".\"}",
            "memory file://./lessons.jsonl add {\"kind\":\"lesson\",\"text\":\"# notes\"}",
            "memory file://./lessons.jsonl query {\"kind\":\"lesson\",\"limit\":5}",
        ]
    );
    insta::assert_json_snapshot!("trace_tools_memory", trace);
}

/// A model that answers every prompt with a value of the shape the prompt asks for (booleans
/// true, numbers 1, strings "text", one item per list): enough to run any program.
struct ShapeModel {
    calls: usize,
    clock: u64,
}

fn sample(shape: &str) -> (Value, &str) {
    let s = shape.trim_start();
    if let Some(rest) = s.strip_prefix("{ ") {
        let mut obj = serde_json::Map::new();
        let mut rest = rest;
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                return (Value::Object(obj), r);
            }
            let r = rest.strip_prefix('"').expect("a field");
            let end = r.find('"').expect("field end");
            let name = r[..end].to_string();
            let (v, r) = sample(r[end + 1..].trim_start().strip_prefix(':').expect(":"));
            obj.insert(name, v);
            rest = r.trim_start().strip_prefix(',').unwrap_or(r);
        }
    }
    if let Some(r) = s.strip_prefix('[') {
        let (v, r) = sample(r);
        return (
            Value::Array(vec![v]),
            r.trim_start().strip_prefix(']').expect("]"),
        );
    }
    for (word, v) in [
        ("boolean", json!(true)),
        ("number", json!(1)),
        ("string", json!("text")),
        ("any JSON", json!({})),
    ] {
        if let Some(r) = s.strip_prefix(word) {
            return (v, r);
        }
    }
    unreachable!("unknown shape text: {s}")
}

impl Effects for ShapeModel {
    fn generate(&mut self, call: &ModelCall) -> Result<String, EffectError> {
        self.calls += 1;
        let shape = call
            .prompt
            .rsplit("of this shape: ")
            .next()
            .expect("the shape line");
        Ok(sample(shape).0.to_string())
    }
    fn tool(&mut self, _uri: &str, method: &str, args: &Value) -> Result<Value, EffectError> {
        Ok(json!({ "method": method, "args": args }))
    }
    fn memory(
        &mut self,
        _from: &str,
        _uri: &str,
        method: &str,
        _args: &Value,
    ) -> Result<Value, EffectError> {
        Ok(if method == "query" {
            json!([])
        } else {
            json!({ "id": "m1" })
        })
    }
    fn read_file(&mut self, _from: &str, path: &str) -> Result<String, EffectError> {
        Ok(if path.ends_with(".json") {
            "{\"level\": 1}".into()
        } else {
            format!("the text of {path}")
        })
    }
    fn load_agent(&mut self, _from: &str, path: &str) -> Result<(String, String), EffectError> {
        Err(EffectError::new(
            Code::AsEffect,
            format!("{path}: not in this test"),
        ))
    }
    fn now_ms(&mut self) -> u64 {
        // A scripted clock: every reading is 5 ms after the last.
        self.clock += 5;
        self.clock
    }
}

/// Every seed example runs, with a model that answers each shape: its value and its whole trace
/// (every call, prompt and answer) are golden snapshots.
#[test]
fn every_seed_example_runs_with_golden_traces() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/as/seed");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let inputs = json!({"question": "What changed?", "goal": "ship it", "dry_run": false});
    for f in files {
        let src = std::fs::read_to_string(&f).expect("read");
        let name = f
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("x")
            .to_string();
        let agents = keyless_core::lang::parser::parse(&src)
            .map(|p| p.agents().count())
            .unwrap_or(0);
        if src.contains("import agent") || agents == 0 {
            // Imports only (02, 03), or agent files the seed does not give (26; the host test
            // runs examples/ instead): nothing to run.
            continue;
        }
        let mut model = ShapeModel { calls: 0, clock: 0 };
        let (out, trace) = run(
            "main.as",
            &src,
            &Entry {
                input: inputs.clone(),
                ..Entry::default()
            },
            &mut model,
        );
        assert!(out.is_ok(), "{name}: {out:?}");
        let value = out.expect("ran");
        insta::assert_json_snapshot!(
            format!("run_seed_{name}"),
            json!({ "value": value, "trace": trace })
        );
    }
}

/// An `if` branch is a child scope: it updates outer names; a call sees none of the caller's
/// variables or `use`s; configuration set in a function holds for its generates.
#[test]
fn branches_calls_and_configuration_scope_as_documented() {
    let src = format!(
        "{LLM}\nmain agent A {{\n    model Q\n\n    main func(input) {{\n        flag = \"before\"\n        if true {{\n            flag = \"after\"\n        }}\n        hidden = \"caller only\"\n        use hidden\n        r = helper(flag)\n        return {{ flag: flag, r: r }}\n    }}\n\n    func helper(x) {{\n        role \"Helper\"\n        use x\n        return generate({{ input: \"go\" }}) {{\n            return {{\n                ok boolean\n            }}\n        }}\n    }}\n}}\n"
    );
    let mut s = script(&["{\"ok\": true}"]);
    let (out, _) = go(&src, json!(null), &mut s);
    assert_eq!(
        out.expect("ran"),
        json!({"flag": "after", "r": {"ok": true}})
    );
    let p = &s.calls[0].prompt;
    assert!(
        p.starts_with("Role: Helper\n\nContext:\n[x]\nafter\n"),
        "{p}"
    );
    assert!(!p.contains("caller only"), "{p}");
}

/// The REPL's decisions: declarations are kept, statements run with earlier variables, an
/// ending expression is shown and kept as `it`, diagnostics name the input's own lines, and an
/// open bracket asks for more lines.
#[test]
fn the_repl_session_keeps_variables_and_declarations() {
    use keyless_core::lang::interp::run_program;
    use keyless_core::lang::repl::{open_depth, Prepared, Session};
    let mut s = Session::default();
    let step = |s: &mut Session, input: &str| -> Option<Value> {
        match s.prepare(input).expect("prepares") {
            Prepared::Declare(m) => {
                s.module = m;
                None
            }
            Prepared::Run {
                program,
                entry,
                shows,
                ..
            } => {
                let (out, _) = run_program("repl.as", *program, &entry, &mut script(&[]));
                let v = out.expect("runs");
                s.absorb(input, &v, shows)
            }
        }
    };
    assert_eq!(
        step(
            &mut s,
            "agent Twice {\n    main func(n) {\n        return [n, n]\n    }\n}"
        ),
        None
    );
    assert_eq!(step(&mut s, "x = 2"), None);
    assert_eq!(step(&mut s, "Twice(x)"), Some(json!([2, 2])));
    assert_eq!(step(&mut s, "it.length == x"), Some(json!(true)));
    let e = s.prepare("y = 1\nz = nope").expect_err("unknown name");
    assert_eq!((e.code, e.line), (Code::AsName, Some(2)));
    // A failure at run time names the input's own line and column too.
    let Prepared::Run {
        program,
        entry,
        offset,
        ..
    } = s.prepare("y = 1\nz = x.nope").expect("prepares")
    else {
        panic!("a run");
    };
    let (out, _) = run_program("repl.as", *program, &entry, &mut script(&[]));
    let e = Prepared::localize(offset, out.expect_err("fails"));
    assert_eq!(
        (e.code, e.pos.map(|p| (p.line, p.column))),
        (Code::AsRuntime, Some((2, 7))),
        "{e}"
    );
    assert_eq!(open_depth("y = [1,"), 1);
    assert_eq!(open_depth("s = \"{\" // {"), 0);
}

/// A program cannot exhaust memory. Each bomb fails with KA_AS_LIMIT, quickly, and the
/// process never holds more than a small multiple of the limit.
#[test]
fn values_are_bounded_in_size_and_nesting() {
    let wrap = |body: &str| {
        format!(
            "main agent A {{\n    main func(input) {{\n{body}\n        return none\n    }}\n}}\n"
        )
    };
    for (what, body) in [
        (
            "doubling lists",
            "        x = [1]\n        repeat * 40 {\n            x = [x, x]\n        }",
        ),
        (
            "doubling objects",
            "        o = { a: 1 }\n        repeat * 40 {\n            o = { a: o, b: o }\n        }",
        ),
        (
            "a list added to itself",
            "        x = [1, 2, 3, 4, 5, 6, 7, 8]\n        repeat * 40 {\n            x.add(x)\n        }",
        ),
        (
            "deep nesting",
            "        x = []\n        repeat * 100000 {\n            x = [x]\n        }",
        ),
        (
            "many large variables",
            "        x = [1]\n        repeat * 22 {\n            x = [x, x]\n        }\n        a = x\n        b = [x, x]\n        c = [b, b]",
        ),
    ] {
        let started = std::time::Instant::now();
        let (r, _) = go(&wrap(body), json!(null), &mut script(&[]));
        let e = r.expect_err(what);
        assert_eq!(e.code, Code::AsLimit, "{what}: {e}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{what} took {:?}",
            started.elapsed()
        );
    }
    // A function returning a large value, called many times: the trace keeps a description of
    // it, not the value, and the run ends normally.
    let src = "main agent A {\n    func big(n) {\n        x = [1]\n        repeat * 14 {\n            x = [x, x]\n        }\n        return x\n    }\n    main func(input) {\n        repeat * 50 {\n            y = big(1)\n        }\n        return 1\n    }\n}\n";
    let (r, trace) = go(src, json!(null), &mut script(&[]));
    assert_eq!(r.expect("runs"), json!(1));
    let text = serde_json::to_string(&trace).expect("trace");
    assert!(
        text.contains("too large to keep in the trace"),
        "{}",
        &text[..300]
    );
    assert!(text.len() < 4 << 20, "{} bytes of trace", text.len());
}

/// A name assigned in every branch of an `if`/`else` (nested ones too) is known after it; one
/// assigned in some branches only is not, before any run.
#[test]
fn a_name_every_branch_assigns_is_known_after_the_if() {
    let src = program("        if input.big {\n            size = \"large\"\n        } else if input.mid {\n            size = \"medium\"\n        } else {\n            size = \"small\"\n        }\n        return size");
    for (input, want) in [
        (json!({"big": true}), "large"),
        (json!({"mid": true}), "medium"),
        (json!({}), "small"),
    ] {
        let (out, _) = go(&src, input, &mut script(&[]));
        assert_eq!(out.expect("runs"), json!(want));
    }
    let some = program("        if input.big {\n            size = \"large\"\n        } else if input.mid {\n            size = \"medium\"\n        }\n        return size");
    let e = go(&some, json!({}), &mut script(&[]))
        .0
        .expect_err("refused");
    assert_eq!(e.code, Code::AsName, "{e}");
}

#[test]
fn a_run_time_error_says_the_file_line_and_column() {
    // Line 10 of the program (the LLM import, a blank, the agent, three settings and a blank,
    // the func, the assignment), column 22: the field's name in `items.nope`, not the start of
    // the chain.
    let src = program("        items = [1, 2]\n        return items.nope");
    let (out, _) = go(&src, json!({}), &mut script(&[]));
    let e = out.expect_err("fails");
    assert_eq!(e.code, Code::AsRuntime, "{e}");
    assert_eq!(e.file.as_deref(), Some("main.as"));
    let pos = e.pos.expect("a place");
    assert_eq!(
        src.lines().nth(pos.line as usize - 1),
        Some("        return items.nope")
    );
    assert_eq!(pos.column, 22, "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("KA_AS_RUNTIME main.as:{}:22: ", pos.line)),
        "{e}"
    );
    // Inside a called function, the place is the callee's line; the stack names both.
    let src = format!("{LLM}\nmain agent A {{\n    func inner(x) {{\n        return x.length.more\n    }}\n\n    main func(input) {{\n        return inner([1])\n    }}\n}}\n");
    let (out, _) = go(&src, json!({}), &mut script(&[]));
    let e = out.expect_err("fails");
    let pos = e.pos.expect("a place");
    assert_eq!(
        src.lines().nth(pos.line as usize - 1),
        Some("        return x.length.more")
    );
    // `x.length` reads; `.more` of the number fails, at "more".
    assert_eq!(pos.column, 25, "{e}");
    assert_eq!(e.stack, vec!["A.main".to_string(), "A.inner".to_string()]);
    // The carrier: the place, the file and the stack as notes, innermost first.
    let d = e.diagnostic();
    assert_eq!(
        (d.file.as_deref(), d.line, d.column),
        (Some("main.as"), Some(pos.line), Some(25))
    );
    assert_eq!(
        d.notes,
        vec!["in A.inner".to_string(), "in A.main".to_string()]
    );
    // An index out of range points at its "[", a failing method call at the method's name.
    for (body, column) in [
        ("        items = [1]\n        return items[3]", 21),
        ("        word = \"a\"\n        return word.add(1)", 21),
    ] {
        let src = program(body);
        let e = go(&src, json!({}), &mut script(&[])).0.expect_err("fails");
        assert_eq!(e.pos.map(|p| p.column), Some(column), "{body}: {e}");
    }
}
