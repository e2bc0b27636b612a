//! The model providers of `.as` programs against fake servers on 127.0.0.1 that speak each API's
//! wire format (Chat Completions, Messages, Ollama's /api/chat), error bodies included. Nothing
//! leaves the machine.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

type Reply = (u16, String, Duration);

/// A fake provider: records each request and answers with `reply(path)`.
fn fake(reply: impl Fn(&str) -> Reply + Send + 'static) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut headers = Vec::new();
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                    break;
                }
                if let Some((k, v)) = h.trim_end().split_once(": ") {
                    if k.eq_ignore_ascii_case("content-length") {
                        len = v.parse().unwrap_or(0);
                    }
                    headers.push((k.to_ascii_lowercase(), v.to_string()));
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            log.lock().expect("log").push(Seen {
                path: path.clone(),
                headers,
                body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
            });
            let (status, text, delay) = reply(&path);
            std::thread::sleep(delay);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (port, seen)
}

const PROGRAM: &str = "main agent A {\n    model M\n\n    main func(input) {\n        use input\n        return generate({ input: \"Answer.\", limit: 300 }) {\n            return {\n                ok boolean\n            }\n        }\n    }\n}\n";

fn run(dir: &Path, uri: &str, env: &[(&str, String)], timeout: &str) -> Output {
    std::fs::write(
        dir.join("p.as"),
        format!("import llm M from \"{uri}\"\n\n{PROGRAM}"),
    )
    .expect("write");
    let mut c = Command::new(env!("CARGO_BIN_EXE_keyless-host"));
    c.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("keyless-as-models-no-user-config"),
    );
    c.args([
        "as",
        "run",
        "p.as",
        "--input",
        "\"hi\"",
        "--model-timeout",
        timeout,
    ])
    .current_dir(dir);
    for k in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_BASE_URL",
    ] {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run")
}

fn ok(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn failed(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn openai_chat_completions() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (port, seen) = fake(|_| {
        (200, r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\": true}"},"finish_reason":"stop"}]}"#.into(), Duration::ZERO)
    });
    let env = [
        ("OPENAI_API_KEY", "sk-test".to_string()),
        ("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1")),
    ];
    assert_eq!(
        ok(&run(tmp.path(), "openai://gpt-4.1-mini", &env, "30")),
        serde_json::json!({"ok": true})
    );
    let s = seen.lock().expect("seen")[0].clone();
    assert_eq!(s.path, "/v1/chat/completions");
    assert!(
        s.headers
            .contains(&("authorization".into(), "Bearer sk-test".into())),
        "{:?}",
        s.headers
    );
    assert_eq!(s.body["model"], "gpt-4.1-mini");
    assert_eq!(s.body["response_format"]["type"], "json_object");
    assert_eq!(s.body["max_tokens"], 300);
    assert!(s.body["messages"][0]["content"]
        .as_str()
        .expect("prompt")
        .contains("[input]\nhi"));
    // Without a key nothing is sent.
    let out = run(tmp.path(), "openai://gpt-4.1-mini", &env[1..], "30");
    assert!(failed(&out).contains("error[KA_AS_MODEL_AUTH]: OPENAI_API_KEY is not set"));
    assert_eq!(seen.lock().expect("seen").len(), 1);
}

#[test]
fn anthropic_messages() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (port, seen) = fake(|_| {
        (200, r#"{"id":"m1","type":"message","role":"assistant","content":[{"type":"text","text":"\"ok\": true}"}],"stop_reason":"end_turn"}"#.into(), Duration::ZERO)
    });
    let env = [
        ("ANTHROPIC_API_KEY", "ak-test".to_string()),
        ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
    ];
    assert_eq!(
        ok(&run(
            tmp.path(),
            "anthropic://claude-sonnet-4-0",
            &env,
            "30"
        )),
        serde_json::json!({"ok": true})
    );
    let s = seen.lock().expect("seen")[0].clone();
    assert_eq!(s.path, "/v1/messages");
    assert!(s.headers.contains(&("x-api-key".into(), "ak-test".into())));
    assert!(s
        .headers
        .contains(&("anthropic-version".into(), "2023-06-01".into())));
    assert_eq!(s.body["max_tokens"], 300);
    assert_eq!(
        s.body["messages"][1],
        serde_json::json!({"role": "assistant", "content": "{"})
    );
}

#[test]
fn ollama_chat() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (port, seen) = fake(|_| {
        (200, r#"{"model":"qwen3.6","message":{"role":"assistant","content":"{\"ok\": false}"},"done":true}"#.into(), Duration::ZERO)
    });
    // The host and port of the URI, unless OLLAMA_BASE_URL says otherwise.
    let uri = format!("ollama://127.0.0.1:{port}/qwen3.6");
    assert_eq!(
        ok(&run(tmp.path(), &uri, &[], "30")),
        serde_json::json!({"ok": false})
    );
    let s = seen.lock().expect("seen")[0].clone();
    assert_eq!(s.path, "/api/chat");
    assert_eq!(
        (
            s.body["model"].as_str(),
            s.body["stream"].as_bool(),
            s.body["format"].as_str()
        ),
        (Some("qwen3.6"), Some(false), Some("json"))
    );
    assert_eq!(s.body["options"]["num_predict"], 300);
}

#[test]
fn provider_errors_have_their_own_codes_and_are_not_retried() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (port, seen) = fake(|path| {
        match path {
        p if p.contains("auth") => (401, r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#.into(), Duration::ZERO),
        p if p.contains("missing") => (404, r#"{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}"#.into(), Duration::ZERO),
        p if p.contains("slow") => (200, "{}".into(), Duration::from_secs(4)),
        p if p.contains("huge") => (200, format!("{{\"pad\": \"{}\"}}", "x".repeat(17 << 20)), Duration::ZERO),
        _ => (500, r#"{"error":"model 'x' crashed"}"#.into(), Duration::ZERO),
    }
    });
    let base = |tag: &str| {
        [
            ("OPENAI_API_KEY", "sk".to_string()),
            ("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/{tag}")),
        ]
    };
    let err = failed(&run(tmp.path(), "openai://m", &base("auth"), "30"));
    assert!(
        err.contains("KA_AS_MODEL_AUTH") && err.contains("Incorrect API key provided"),
        "{err}"
    );
    let err = failed(&run(tmp.path(), "openai://m", &base("missing"), "30"));
    assert!(
        err.contains("KA_AS_MODEL_NOT_FOUND") && err.contains("model: nope"),
        "{err}"
    );
    let err = failed(&run(tmp.path(), "openai://m", &base("boom"), "30"));
    assert!(
        err.contains("error[KA_AS_MODEL]") && err.contains("crashed"),
        "{err}"
    );
    let err = failed(&run(tmp.path(), "openai://m", &base("slow"), "1"));
    assert!(err.contains("KA_AS_MODEL_TIMEOUT"), "{err}");
    // An answer past the cap is a limit, not a network failure.
    let err = failed(&run(tmp.path(), "openai://m", &base("huge"), "30"));
    assert!(
        err.contains("error[KA_AS_LIMIT]: openai://m answered more than 16 MiB"),
        "{err}"
    );
    // One request each: never retried.
    assert_eq!(seen.lock().expect("seen").len(), 5);
    // Nothing listening.
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let err = failed(&run(
        tmp.path(),
        &format!("ollama://127.0.0.1:{closed}/m"),
        &[],
        "5",
    ));
    assert!(err.contains("KA_AS_MODEL_NETWORK"), "{err}");
}

/// The examples of `examples/` run for real against fake providers: the planner/executor pair
/// through OpenAI's wire format, the reflect loop through Anthropic's (its lesson stored in file
/// memory), the summariser through Ollama's.
#[test]
fn the_examples_run_against_fake_providers() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    std::fs::create_dir_all(d.join("planner")).expect("dir");
    for f in [
        "reflect.as",
        "summarise.as",
        "notes.md",
        "planner/main.as",
        "planner/planner.as",
        "planner/executor.as",
    ] {
        std::fs::copy(src.join(f), d.join(f)).expect("copy");
    }
    let queue = |answers: Vec<&'static str>| {
        let answers = Arc::new(Mutex::new(std::collections::VecDeque::from(answers)));
        move |_: &str| -> Reply {
            let a = answers.lock().expect("answers").pop_front().unwrap_or("{}");
            (200, a.to_string(), Duration::ZERO)
        }
    };
    let openai = |content: &str| -> String {
        serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).to_string()
    };
    let a1 = Box::leak(openai("{\"steps\": [\"add the route\"]}").into_boxed_str());
    let a2 = Box::leak(openai("{\"ok\": true, \"report\": \"route added\"}").into_boxed_str());
    let (port, seen) = fake(queue(vec![a1, a2]));
    let mut c = Command::new(env!("CARGO_BIN_EXE_keyless-host"));
    c.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("keyless-as-models-no-user-config"),
    );
    c.args([
        "as",
        "run",
        "planner/main.as",
        "--input",
        "{\"goal\": \"health check\"}",
    ])
    .current_dir(d)
    .env("OPENAI_API_KEY", "sk-test")
    .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"));
    let v = ok(&c.output().expect("run"));
    assert_eq!(
        v,
        serde_json::json!({"goal": "health check", "steps": 1, "results": [{"ok": true, "report": "route added"}]})
    );
    assert_eq!(seen.lock().expect("seen").len(), 2);
    // reflect.as through Anthropic (the assistant turn starts with "{", the answer continues it).
    let msg = |rest: &str| -> &'static str {
        Box::leak(serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": rest}]}).to_string().into_boxed_str())
    };
    let (port, _) = fake(queue(vec![
        msg("\"text\": \"Fix timeout\"}"),
        msg("\"ok\": true, \"advice\": \"\"}"),
        msg("\"insight\": \"Name the change.\"}"),
    ]));
    let mut c = Command::new(env!("CARGO_BIN_EXE_keyless-host"));
    c.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("keyless-as-models-no-user-config"),
    );
    c.args([
        "as",
        "run",
        "reflect.as",
        "--input",
        "{\"goal\": \"a commit message\"}",
    ])
    .current_dir(d)
    .env("ANTHROPIC_API_KEY", "ak")
    .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    assert_eq!(
        ok(&c.output().expect("run")),
        serde_json::json!({"text": "Fix timeout", "accepted": true})
    );
    let lessons = std::fs::read_to_string(d.join(".agentscript/lessons.jsonl")).expect("memory");
    assert!(lessons.contains("Name the change."), "{lessons}");
    // summarise.as through Ollama (OLLAMA_BASE_URL overrides the URI's host).
    let (port, seen) = fake(queue(vec![Box::leak(
        serde_json::json!({"message": {"role": "assistant", "content": "{\"title\": \"Release\", \"bullets\": [\"a\"]}"}, "done": true}).to_string().into_boxed_str(),
    )]));
    let mut c = Command::new(env!("CARGO_BIN_EXE_keyless-host"));
    c.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("keyless-as-models-no-user-config"),
    );
    c.args(["as", "run", "summarise.as"])
        .current_dir(d)
        .env("OLLAMA_BASE_URL", format!("http://127.0.0.1:{port}"));
    assert_eq!(
        ok(&c.output().expect("run")),
        serde_json::json!({"title": "Release", "bullets": ["a"]})
    );
    let s = seen.lock().expect("seen")[0].clone();
    assert_eq!(s.body["model"], "qwen3.6");
    assert!(s.body["messages"][0]["content"]
        .as_str()
        .expect("prompt")
        .contains("[Notes]\n# Release notes"));
}

/// A user config folder whose keyless.json allows `http://127.0.0.1:PORT` (`Programs.Http`).
fn allow_http(port: u16) -> tempfile::TempDir {
    let cfg = tempfile::tempdir().expect("cfg");
    std::fs::create_dir_all(cfg.path().join("keyless")).expect("dir");
    std::fs::write(
        cfg.path().join("keyless/keyless.json"),
        serde_json::json!({"Programs": {"Http": [format!("http://127.0.0.1:{port}")]}}).to_string(),
    )
    .expect("keyless.json");
    cfg
}

/// A program's network needs trust: a loopback "metadata" service the user
/// never allowed is not reached, nor is any origin missing from `Programs.Http`, whether the
/// program names it or a workspace keyless.json (not approved) lists it; nothing is sent. The
/// control: the same program with the origin in the user's `Programs.Http` reaches it.
#[test]
fn a_program_reaches_only_the_origins_the_user_allows() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let (port, seen) = fake(|_| {
        (
            200,
            r#"{"secret":"instance-credentials"}"#.into(),
            Duration::ZERO,
        )
    });
    let program = |host: &str, path: &str| {
        format!("import tool Meta from \"http://{host}:{port}\"\n\nmain agent A {{\n    main func(input) {{\n        return Meta.get({{ url: \"{path}\" }})\n    }}\n}}\n")
    };
    let run = |config: &Path| {
        Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .env("XDG_CONFIG_HOME", config)
            .args(["as", "run", "m.as"])
            .current_dir(d)
            .output()
            .expect("run")
    };
    std::fs::write(
        d.join("m.as"),
        program("127.0.0.1", "/latest/meta-data/iam"),
    )
    .expect("write");
    let nobody = tempfile::tempdir().expect("cfg");
    let out = run(nobody.path());
    assert!(
        failed(&out).contains("KA_AS_TOOL_REFUSED")
            && failed(&out).contains("is not in keyless.json's Programs.Http"),
        "{}",
        failed(&out)
    );
    // The workspace's own keyless.json, not approved, cannot allow it either.
    std::fs::write(
        d.join("keyless.json"),
        serde_json::json!({"Programs": {"Http": [format!("http://127.0.0.1:{port}")]}}).to_string(),
    )
    .expect("ws config");
    let out = run(nobody.path());
    assert!(failed(&out).contains("Programs.Http"), "{}", failed(&out));
    std::fs::remove_file(d.join("keyless.json")).expect("rm");
    // `localhost` is another name of the same service: its own origin, not allowed.
    std::fs::write(d.join("m.as"), program("localhost", "/x")).expect("write");
    let allowed = allow_http(port);
    let out = run(allowed.path());
    assert!(failed(&out).contains("Programs.Http"), "{}", failed(&out));
    assert!(seen.lock().expect("seen").is_empty(), "a request was sent");
    // The control: allowed by the user, the same origin is reached.
    std::fs::write(d.join("m.as"), program("127.0.0.1", "/x")).expect("write");
    let out = run(allowed.path());
    assert_eq!(ok(&out)["status"], 200);
    assert_eq!(seen.lock().expect("seen").len(), 1);
}

/// The http(s) tool: paths of the imported origin only, redirects followed within it and refused
/// off it, JSON bodies parsed, post bodies sent as JSON.
#[test]
fn the_http_tool_stays_on_its_origin() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let (port, seen) = fake(|path| match path {
        "/api/data" => (200, r#"{"items":[1,2]}"#.into(), Duration::ZERO),
        "/api/submit" => (201, r#"{"saved":true}"#.into(), Duration::ZERO),
        _ => (404, r#"{"error":"no"}"#.into(), Duration::ZERO),
    });
    let allowed = allow_http(port);
    let program = |calls: &str| {
        format!("import tool Http from \"http://127.0.0.1:{port}\"\n\nmain agent A {{\n    main func(input) {{\n        return {calls}\n    }}\n}}\n")
    };
    std::fs::write(
        d.join("h.as"),
        program("{ got: Http.get({ url: \"/api/data\", headers: { Accept: \"application/json\" } }), sent: Http.post({ url: \"/api/submit\", body: { key: \"value\" } }), missing: Http.get({ url: \"/nope\" }) }"),
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .env("XDG_CONFIG_HOME", allowed.path())
        .args(["as", "run", "h.as"])
        .current_dir(d)
        .output()
        .expect("run");
    let v = ok(&out);
    assert_eq!(
        v,
        serde_json::json!({"got": {"status": 200, "body": {"items": [1, 2]}}, "sent": {"status": 201, "body": {"saved": true}}, "missing": {"status": 404, "body": {"error": "no"}}})
    );
    let s = seen.lock().expect("seen").clone();
    assert_eq!(s[1].body, serde_json::json!({"key": "value"}));
    assert!(s[0]
        .headers
        .contains(&("accept".into(), "application/json".into())));
    // Another origin, as a URL or a scheme-relative path: refused, nothing sent.
    for url in [
        "http://127.0.0.2:1/x",
        "//evil.example/x",
        "https://evil.example/",
    ] {
        std::fs::write(
            d.join("h.as"),
            program(&format!("Http.get({{ url: \"{url}\" }})")),
        )
        .expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .env("XDG_CONFIG_HOME", allowed.path())
            .args(["as", "run", "h.as"])
            .current_dir(d)
            .output()
            .expect("run");
        assert!(
            failed(&out).contains("requests stay on the imported origin"),
            "{url}"
        );
    }
    assert_eq!(seen.lock().expect("seen").len(), 3);
}

/// Redirects: followed within the origin, refused off it.
#[test]
fn http_redirects_never_leave_the_origin() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                    break;
                }
            }
            let (status, extra, body) = match path.as_str() {
                "/in" => ("302 Found", "location: /final\r\n".to_string(), ""),
                "/out" => (
                    "302 Found",
                    "location: http://evil.example/steal\r\n".to_string(),
                    "",
                ),
                _ => (
                    "200 OK",
                    "content-type: text/plain\r\n".to_string(),
                    "arrived",
                ),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let allowed = allow_http(port);
    let program = |url: &str| {
        format!("import tool Http from \"http://127.0.0.1:{port}\"\n\nmain agent A {{\n    main func(input) {{\n        return Http.get({{ url: \"{url}\" }})\n    }}\n}}\n")
    };
    std::fs::write(d.join("r.as"), program("/in")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .env("XDG_CONFIG_HOME", allowed.path())
        .args(["as", "run", "r.as"])
        .current_dir(d)
        .output()
        .expect("run");
    assert_eq!(
        ok(&out),
        serde_json::json!({"status": 200, "body": "arrived"})
    );
    std::fs::write(d.join("r.as"), program("/out")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .env("XDG_CONFIG_HOME", allowed.path())
        .args(["as", "run", "r.as"])
        .current_dir(d)
        .output()
        .expect("run");
    assert!(
        failed(&out).contains("http://evil.example/steal is not on"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
