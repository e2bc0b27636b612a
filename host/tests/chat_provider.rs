//! `keyless://chat` over real sockets: a real `keyless-host serve`, real `keyless-host as run`
//! processes, and a scripted tab speaking the extension's side of the API (register, claim,
//! answer). The Chromium test (tests/browser/chat_programs.test.mjs) runs the real extension on
//! an imitation chat; this one covers every failure and the exactly-once rules.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // the helpers fail the test loudly

use keyless_core::lang::ast::{Field, Shape};
use keyless_core::lang::Pos;
use keyless_core::site::PageObservation;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Two generates; the second is allowed three attempts.
const TRIAGE: &str = r#"import llm Chat from "keyless://chat"

main agent Triage {
    model Chat
    role "Maintainer"

    main func(input) {
        use input
        label = generate({ input: "Classify the report.", attempts: 2 }) {
            return {
                kind string
                severity number
            }
        }
        use label.kind
        plan = generate({ input: "Give a title and the steps.", attempts: 3 }) {
            return {
                title string
                steps list[string]
            }
        }
        return { title: plan.title, kind: label.kind, severity: label.severity, steps: plan.steps }
    }
}
"#;

/// One generate, one attempt.
const ONE: &str = "import llm Chat from \"keyless://chat\"\n\nmain agent A {\n    model Chat\n\n    main func(input) {\n        return generate({ input: \"Say ok.\" }) {\n            return {\n                ok boolean\n            }\n        }\n    }\n}\n";

struct Env {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    config: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("ws");
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::create_dir_all(&config).expect("config");
    std::fs::write(ws.join("triage.as"), TRIAGE).expect("triage");
    std::fs::write(ws.join("one.as"), ONE).expect("one");
    Env {
        _tmp: tmp,
        ws: ws.canonicalize().expect("canon"),
        config,
    }
}

struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(e: &Env) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["serve", "--port", "0", "--workspace"])
        .arg(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let banner = keyless_tests::serve::read_banner(&mut reader);
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = reader.read_to_string(&mut sink);
    });
    Server {
        child,
        port: banner.port,
        token: banner.token,
    }
}

impl Server {
    fn call(&self, method: &str, path: &str, body: Option<&Value>, token: &str) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let res = match body {
            Some(b) => agent
                .post(&url)
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .send(b.to_string()),
            None if method == "GET" => agent
                .get(&url)
                .header("authorization", format!("Bearer {token}"))
                .call(),
            None => panic!("{method} needs a body here"),
        }
        .expect("request");
        let status = res.status().as_u16();
        let text = res.into_body().read_to_string().expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None, &self.token)
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.call("POST", path, Some(body), &self.token)
    }

    /// What the extension's tab does with a generation: take it, then answer it.
    fn claim_and_answer(&self, g: &Value, answer: &str) {
        let id = g["id"].as_str().expect("id");
        let (s, b) = self.post(
            &format!("/v1/generations/{id}/claim"),
            &json!({ "site": "chatgpt" }),
        );
        assert_eq!(s, 200, "{b}");
        let (s, b) = self.post(
            &format!("/v1/generations/{id}"),
            &json!({ "answer": answer }),
        );
        assert_eq!(s, 200, "{b}");
    }

    /// The extension's tab says it answers programs.
    fn tab_is_there(&self) {
        let (s, b) = self.post("/v1/chat-tab", &json!({ "site": "chatgpt" }));
        assert_eq!(s, 200, "{b}");
    }

    fn generations(&self) -> Vec<Value> {
        let (s, b) = self.get("/v1/generations");
        assert_eq!(s, 200, "{b}");
        let mut all = b.as_array().cloned().unwrap_or_default();
        all.reverse();
        all
    }
}

/// `as run FILE` in the workspace, started now.
fn start_run(e: &Env, file: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args([
            "as",
            "run",
            file,
            "--input",
            "\"Saving a file named 'a b' crashes.\"",
        ])
        .args(extra)
        .current_dir(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("as run")
}

fn finish(child: Child) -> Output {
    child.wait_with_output().expect("wait")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scripted tab: takes each generation as it comes and answers with the next of `answers`
/// (`Ok(text)` an answer, `Err("KA_… why")` a failure). Returns the generations it took.
fn tab(srv: &Server, answers: Vec<Result<&str, &str>>) -> Vec<Value> {
    let mut taken = Vec::new();
    let mut answers = answers.into_iter();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        srv.tab_is_there();
        let pending: Vec<Value> = srv
            .generations()
            .into_iter()
            .filter(|g| g["state"] == "pending")
            .collect();
        let Some(g) = pending.first() else {
            if !taken.is_empty() && srv.generations().iter().all(|g| g["state"] != "pending") {
                // Give the program a moment to ask its next attempt.
                std::thread::sleep(Duration::from_millis(300));
                if srv.generations().iter().all(|g| g["state"] != "pending") {
                    return taken;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let id = g["id"].as_str().expect("id").to_string();
        let (s, claimed) = srv.post(
            &format!("/v1/generations/{id}/claim"),
            &json!({ "site": "chatgpt" }),
        );
        assert_eq!(s, 200, "{claimed}");
        taken.push(claimed);
        let body = match answers.next().expect("an answer for each generation") {
            Ok(a) => json!({ "answer": a }),
            Err(e) => json!({ "error": e }),
        };
        let (s, b) = srv.post(&format!("/v1/generations/{id}"), &body);
        assert_eq!(s, 200, "{b}");
    }
    taken
}

#[test]
fn a_program_thinks_with_the_chat_tab_and_a_shape_mismatch_is_corrected_in_the_same_chat() {
    let e = env();
    let srv = serve(&e);
    srv.tab_is_there();
    let trace = e.ws.join("trace.json");
    let run = start_run(
        &e,
        "triage.as",
        &["--trace", trace.to_str().expect("utf-8")],
    );
    let taken = tab(
        &srv,
        vec![
            Ok("Here you are:\n```json\n{\"kind\": \"bug\", \"severity\": \"2\"}\n```"),
            Ok("```json\n{\"title\": \"Crash on spaces\", \"steps\": null}\n```"),
            Ok("```json\n{\"title\": \"Crash on spaces\", \"steps\": [\"Create a file named 'a b'\", \"Save it\"]}\n```"),
        ],
    );
    let out = finish(run);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        value,
        json!({
            "title": "Crash on spaces",
            "kind": "bug",
            "severity": 2,
            "steps": ["Create a file named 'a b'", "Save it"],
        })
    );
    // Exactly three messages reached the chat: two prompts and one correction.
    assert_eq!(taken.len(), 3, "{taken:#?}");
    let text = |i: usize| taken[i]["text"].as_str().unwrap_or("").to_string();
    assert!(text(0).contains("Classify the report."), "{}", text(0));
    assert!(
        text(0).contains("Saving a file named 'a b' crashes."),
        "{}",
        text(0)
    );
    assert!(text(0).contains("one fenced ```json block"), "{}", text(0));
    assert!(
        text(1).contains("Give a title and the steps."),
        "{}",
        text(1)
    );
    assert_eq!(taken[2]["attempt"], 2);
    assert!(
        text(2).contains(
            "Your previous answer was not accepted: \"steps\" is null; it must be a list"
        ),
        "{}",
        text(2)
    );
    assert!(
        !text(2).contains("Give a title"),
        "a correction is only the correction: {}",
        text(2)
    );
    // The trace names the model and the tab that answered, and keeps every attempt.
    let tr: Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("json");
    let gens: Vec<&Value> = tr["events"][0]["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "generate")
        .collect();
    assert_eq!(gens.len(), 2, "{tr}");
    assert_eq!(gens[0]["model"], "keyless://chat");
    assert_eq!(gens[0]["via"], "the chatgpt tab");
    assert_eq!(gens[1]["attempts"].as_array().map(Vec::len), Some(2));
    // The run is kept, as the dashboard lists it.
    let (_, runs) = srv.get("/v1/as/runs");
    assert_eq!(runs[0]["state"], "done", "{runs}");
    // Exactly once: the same answer again is harmless, another is refused, a second claim too.
    let id = taken[0]["id"].as_str().expect("id");
    let (s, _) = srv.post(
        &format!("/v1/generations/{id}"),
        &json!({ "answer": "Here you are:\n```json\n{\"kind\": \"bug\", \"severity\": \"2\"}\n```" }),
    );
    assert_eq!(s, 200);
    let (s, b) = srv.post(&format!("/v1/generations/{id}"), &json!({ "answer": "{}" }));
    assert_eq!(s, 409, "{b}");
    let (s, b) = srv.post(
        &format!("/v1/generations/{id}/claim"),
        &json!({ "site": "claude" }),
    );
    assert_eq!(s, 409, "{b}");
    assert_eq!(b["code"], "KA_AS_CHAT_BUSY");
    // A retried request (same id) is the same generation, never a second message.
    let again = json!({
        "id": id, "run": taken[0]["run"], "attempt": 1, "prompt": "other",
        "shape": taken[0]["shape"],
    });
    let before = srv.generations().len();
    let (s, b) = srv.post("/v1/generations", &again);
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["state"], "answered");
    assert_eq!(srv.generations().len(), before);
}

#[test]
fn each_failure_ends_the_program_with_its_own_code_and_nothing_is_asked_twice() {
    let e = env();
    // No serve at all.
    let out = finish(start_run(&e, "one.as", &[]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[KA_AS_CHAT_UNAVAILABLE]: keyless-host serve is not running"),
        "{}",
        stderr(&out)
    );
    let srv = serve(&e);
    // A serve, but no tab answers programs.
    let out = finish(start_run(&e, "one.as", &[]));
    assert!(
        stderr(&out).contains("error[KA_AS_CHAT_UNAVAILABLE]: no chat tab answers programs"),
        "{}",
        stderr(&out)
    );
    // The reply was truncated; then the chat is full; then the tab closed: one message each.
    // The tab's code for the first two is what keyless's own judgment of the page says (the
    // judgment the extension's overlay reports, core's `follow_generation`), not a code this
    // test writes; the closed tab's code is the extension worker's (extension/src/worker.ts).
    let truncated = page_code(
        "```json\n{\"ok\": tr",
        &PageObservation {
            quiet_ms: 31_000,
            waited_ms: 31_000,
            truncation_budget_seconds: 30,
            ..stopped()
        },
    );
    let exhausted = page_code(
        "",
        &PageObservation {
            exhausted: true,
            ..stopped()
        },
    );
    for (failure, code) in [
        (
            format!("{truncated} The reply stayed unfinished for 30 s."),
            "KA_REPLY_TRUNCATED",
        ),
        (
            format!("{exhausted} The chat says it is full."),
            "KA_CHAT_EXHAUSTED",
        ),
        (
            "KA_AS_CHAT_CLOSED the chatgpt tab was closed while the model answered".to_string(),
            "KA_AS_CHAT_CLOSED",
        ),
    ] {
        srv.tab_is_there();
        let before = srv.generations().len();
        let run = start_run(&e, "one.as", &[]);
        let taken = tab(&srv, vec![Err(failure.as_str())]);
        let out = finish(run);
        assert_eq!(out.status.code(), Some(1));
        let message = failure.split_once(' ').map_or("", |(_, m)| m);
        assert!(
            stderr(&out).contains(&format!("error[{code}]: {message}")),
            "{failure}: {}",
            stderr(&out)
        );
        assert_eq!(taken.len(), 1, "{failure}: asked once");
        assert_eq!(srv.generations().len(), before + 1, "{failure}: asked once");
    }
    // The user cancels in the dashboard (or the overlay).
    srv.tab_is_there();
    let run = start_run(&e, "one.as", &[]);
    let g = wait_pending(&srv);
    let (s, b) = srv.post(
        &format!("/v1/generations/{}/cancel", g["id"].as_str().expect("id")),
        &json!({ "by": "the dashboard" }),
    );
    assert_eq!(s, 200, "{b}");
    let out = finish(run);
    assert!(
        stderr(&out).contains("error[KA_AS_CANCELLED]: cancelled by the dashboard"),
        "{}",
        stderr(&out)
    );
    // Ctrl+C while the chat answers: the generation is cancelled, the tab stops.
    srv.tab_is_there();
    let run = start_run(&e, "one.as", &[]);
    let g = wait_pending(&srv);
    let pid = i32::try_from(run.id()).expect("pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("kill");
    let out = finish(run);
    assert!(stderr(&out).contains("KA_AS_CANCELLED"), "{}", stderr(&out));
    let now = srv
        .get(&format!(
            "/v1/generations/{}",
            g["id"].as_str().expect("id")
        ))
        .1;
    assert_eq!(now["state"], "cancelled", "{now}");
    // No answer within --model-timeout: cancelled at the host too.
    srv.tab_is_there();
    let out = finish(start_run(&e, "one.as", &["--model-timeout", "2"]));
    assert!(
        stderr(&out).contains("error[KA_AS_MODEL_TIMEOUT]: no chat tab took the request within 2s"),
        "{}",
        stderr(&out)
    );
    assert_eq!(srv.generations().last().expect("one")["state"], "cancelled");
    // A tab took it and saw an answer begun but never finished: the timeout says what the page
    // showed (through the sanitizer), not that the chat did not answer.
    srv.tab_is_there();
    let run = start_run(&e, "one.as", &["--model-timeout", "3"]);
    let g = wait_pending(&srv);
    let id = g["id"].as_str().expect("id");
    let (s, b) = srv.post(
        &format!("/v1/generations/{id}/claim"),
        &json!({ "site": "ChatGPT" }),
    );
    assert_eq!(s, 200, "{b}");
    let (s, b) = srv.post(
        &format!("/v1/generations/{id}/seen"),
        &json!({ "seen": "a reply that began a JSON answer but has not finished it\u{202e}" }),
    );
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b["seen"],
        "a reply that began a JSON answer but has not finished it<U+202E>"
    );
    let out = finish(run);
    assert!(
        stderr(&out).contains("error[KA_AS_MODEL_TIMEOUT]: no complete answer within 3s (--model-timeout); the ChatGPT tab showed a reply that began a JSON answer but has not finished it<U+202E>"),
        "{}",
        stderr(&out)
    );
}

/// A page that stopped writing, its stop signal seen.
fn stopped() -> PageObservation {
    PageObservation {
        site_streaming: false,
        stop_signal_seen: true,
        ..PageObservation::default()
    }
}

/// The code keyless's judgment of a `{ ok boolean }` reply `text` on `page` ends it with.
fn page_code(text: &str, page: &PageObservation) -> String {
    let shape = Shape::Object(vec![Field {
        name: "ok".into(),
        shape: Shape::Boolean,
        pos: Pos { line: 1, column: 1 },
    }]);
    let report = keyless_core::lang::chat::follow_generation(text, &shape, page);
    report
        .code
        .unwrap_or_else(|| panic!("no failure for {text:?}: {report:?}"))
        .to_string()
}

fn wait_pending(srv: &Server) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(g) = srv
            .generations()
            .into_iter()
            .find(|g| g["state"] == "pending")
        {
            return g;
        }
        assert!(Instant::now() < deadline, "no generation came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_program_at_a_time_and_a_program_token_reaches_the_generations_only() {
    let e = env();
    let srv = serve(&e);
    srv.tab_is_there();
    let first = start_run(&e, "one.as", &[]);
    let g = wait_pending(&srv);
    // A second program while the first holds the chat.
    let out = finish(start_run(&e, "one.as", &[]));
    assert!(
        stderr(&out).contains("error[KA_AS_CHAT_BUSY]: the chatgpt tab serves another program"),
        "{}",
        stderr(&out)
    );
    srv.claim_and_answer(&g, "{\"ok\": true}");
    let out = finish(first);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The first released the chat when it ended: the next program may use it at once.
    let next = start_run(&e, "one.as", &[]);
    let pairing = e.config.join("keyless").join("pairing.json");
    let client = format!("\"as-run-{}\"", next.id());
    let g = wait_pending(&srv);
    // While it runs, its token is on record (so its absence below is a revocation).
    let clients = std::fs::read_to_string(&pairing).unwrap_or_default();
    assert!(clients.contains(&client), "{client} not in {clients}");
    srv.claim_and_answer(&g, "{\"ok\": \"false\"}");
    let out = finish(next);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("json"),
        json!({ "ok": false })
    );
    // Each run's token is revoked when it ends: the entry seen above is gone, and no other.
    let clients = std::fs::read_to_string(&pairing).expect("pairing.json");
    assert!(!clients.contains(&client), "{clients}");
    assert!(!clients.contains("as-run-"), "{clients}");
    // A program's token reaches the generations and nothing else.
    let pairings = keyless_host::pairing::Pairings::new(pairing);
    let (_, token) = pairings.add_program(std::process::id()).expect("token");
    let (s, _) = srv.call("GET", "/v1/generations", None, &token);
    assert_eq!(s, 200);
    for path in [
        "/v1/sessions",
        "/v1/confirmations",
        "/v1/audit",
        "/v1/as/runs",
    ] {
        let (s, b) = srv.call("GET", path, None, &token);
        assert_eq!(s, 401, "{path}: {b}");
    }
    let (s, _) = srv.call(
        "POST",
        "/v1/chat-tab",
        Some(&json!({ "site": "x" })),
        &token,
    );
    assert_eq!(s, 401);
}

#[test]
fn a_run_started_through_the_api_asks_its_own_servers_chat() {
    let e = env();
    let srv = serve(&e);
    srv.tab_is_there();
    let (s, started) = srv.post("/v1/as/runs", &json!({ "file": "one.as" }));
    assert_eq!(s, 202, "{started}");
    let g = wait_pending(&srv);
    assert_eq!(g["run"], started["run"], "{g}");
    assert_eq!(g["file"], "one.as");
    srv.claim_and_answer(&g, "{\"ok\": true}");
    let run = started["run"].as_str().expect("run");
    let deadline = Instant::now() + Duration::from_secs(30);
    let detail = loop {
        let (_, d) = srv.get(&format!("/v1/as/runs/{run}"));
        if d["state"] != "running" || Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(detail["state"], "done", "{detail}");
    assert_eq!(detail["value"], json!({ "ok": true }));
    assert_eq!(
        detail["trace"]["events"][0]["events"][0]["via"],
        "the chatgpt tab"
    );
}

/// A fake Chat Completions server answering `answers` in order; records the prompts.
fn fake_openai(answers: Vec<&'static str>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut answers = answers.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length: ") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock().expect("log").push(
                req["messages"][0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            );
            let text = json!({
                "choices": [{ "message": { "role": "assistant", "content": answers.next().unwrap_or("") } }]
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (port, seen)
}

/// The same program, its import swapped for the fake OpenAI server, gives the same value from
/// the same answers: the provider is interchangeable.
#[test]
fn the_same_program_runs_unchanged_against_an_api() {
    let e = env();
    let answers = vec![
        "Here you are:\n```json\n{\"kind\": \"bug\", \"severity\": \"2\"}\n```",
        "```json\n{\"title\": \"Crash on spaces\", \"steps\": null}\n```",
        "```json\n{\"title\": \"Crash on spaces\", \"steps\": [\"Create a file named 'a b'\", \"Save it\"]}\n```",
    ];
    let (port, seen) = fake_openai(answers);
    std::fs::write(
        e.ws.join("api.as"),
        TRIAGE.replace("keyless://chat", "openai://gpt-4.1-mini"),
    )
    .expect("api.as");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args([
            "as",
            "run",
            "api.as",
            "--input",
            "\"Saving a file named 'a b' crashes.\"",
        ])
        .current_dir(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        value,
        json!({
            "title": "Crash on spaces",
            "kind": "bug",
            "severity": 2,
            "steps": ["Create a file named 'a b'", "Save it"],
        })
    );
    // The API has no memory: its retry carries the whole prompt and the correction.
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[2].contains("Give a title and the steps."),
        "{}",
        seen[2]
    );
    assert!(
        seen[2].contains("Your previous answer was not accepted"),
        "{}",
        seen[2]
    );
}

/// One program, two providers: the trace says which answered each generate.
#[test]
fn a_program_mixes_the_chat_with_an_api_and_the_trace_says_which_answered() {
    let e = env();
    let srv = serve(&e);
    srv.tab_is_there();
    let (port, seen) = fake_openai(vec!["{\"n\": 2}"]);
    std::fs::write(
        e.ws.join("mix.as"),
        "import llm Chat from \"keyless://chat\"\nimport llm Api from \"openai://gpt-4.1-mini\"\n\nmain agent A {\n    model Chat\n\n    main func(input) {\n        a = generate({ input: \"One.\" }) {\n            return {\n                n number\n            }\n        }\n        b = second({ n: a.n })\n        return { a: a.n, b: b.n }\n    }\n\n    func second(input) {\n        model Api\n        use input\n        return generate({ input: \"Two.\" }) {\n            return {\n                n number\n            }\n        }\n    }\n}\n",
    )
    .expect("mix.as");
    let trace = e.ws.join("mix-trace.json");
    let run = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["as", "run", "mix.as", "--trace"])
        .arg(&trace)
        .current_dir(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let taken = tab(&srv, vec![Ok("{\"n\": 1}")]);
    let out = finish(run);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("json"),
        json!({ "a": 1, "b": 2 })
    );
    assert_eq!(taken.len(), 1);
    assert_eq!(seen.lock().expect("seen").len(), 1);
    let tr = std::fs::read_to_string(&trace).expect("trace");
    let tr: Value = serde_json::from_str(&tr).expect("json");
    let main = &tr["events"][0]["events"];
    assert_eq!(main[0]["model"], "keyless://chat", "{tr}");
    assert_eq!(main[0]["via"], "the chatgpt tab", "{tr}");
    assert_eq!(
        main[1]["events"][0]["model"], "openai://gpt-4.1-mini",
        "{tr}"
    );
    assert!(main[1]["events"][0].get("via").is_none(), "{tr}");
}
