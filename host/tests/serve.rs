//! `keyless-host serve` over real sockets on 127.0.0.1:0, with a real workspace: pairing, every
//! hostile request refused, sessions, exactly-once retries, serialized submits, confirmations,
//! the event stream, cancel, and a restart in the middle of a session.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // the helpers fail the test loudly

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const EXT: &str = "abcdefghijklmnopabcdefghijklmnop";

struct Server {
    child: Child,
    port: u16,
    code: String,
    token: String,
    /// What serve wrote to stderr (its log).
    log: std::sync::Arc<std::sync::Mutex<String>>,
    /// What serve wrote to stdout after its banner (the view).
    out: std::sync::Arc<std::sync::Mutex<String>>,
}

fn spawn(workspace: &Path, config: &Path, extra: &[&str]) -> Server {
    spawn_env(workspace, config, extra, &[])
}

fn spawn_env(workspace: &Path, config: &Path, extra: &[&str], vars: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["serve", "--port", "0", "--workspace"])
        .arg(workspace)
        .args(extra)
        .env("XDG_CONFIG_HOME", config)
        .envs(vars.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    {
        let log = log.clone();
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).unwrap_or(0) > 0 {
                if let Ok(mut l) = log.lock() {
                    l.push_str(&line);
                }
                line.clear();
            }
        });
    }
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let keyless_tests::serve::Banner {
        port, code, token, ..
    } = keyless_tests::serve::read_banner(&mut reader);
    // Keep draining stdout so the server never blocks on a full pipe.
    let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    {
        let out = out.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                if let Ok(mut o) = out.lock() {
                    o.push_str(&line);
                }
                line.clear();
            }
        });
    }
    Server {
        child,
        port,
        code,
        token,
        log,
        out,
    }
}

struct Req<'a> {
    method: &'a str,
    path: &'a str,
    body: &'a [u8],
    host: Option<&'a str>,
    content_type: Option<&'a str>,
    origin: Option<&'a str>,
    token: Option<&'a str>,
}

impl Server {
    /// `POST /v1/pair` with `code` for the extension `id`, sent with `origin`.
    fn pair(&self, code: &str, id: &str, origin: Option<&str>) -> (u16, String) {
        let b = serde_json::json!({"code": code, "extension_id": id}).to_string();
        self.raw(&Req {
            method: "POST",
            path: "/v1/pair",
            body: b.as_bytes(),
            host: None,
            content_type: Some("application/json"),
            origin,
            token: None,
        })
    }

    fn raw(&self, r: &Req<'_>) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let host = r
            .host
            .map_or_else(|| format!("127.0.0.1:{}", self.port), str::to_string);
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
            r.method,
            r.path,
            r.body.len()
        );
        if let Some(ct) = r.content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        if let Some(o) = r.origin {
            head.push_str(&format!("Origin: {o}\r\n"));
        }
        if let Some(t) = r.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).expect("write");
        let _ = s.write_all(r.body);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let (s, b) = self.raw(&Req {
            method: "GET",
            path,
            body: b"",
            host: None,
            content_type: None,
            origin: None,
            token: Some(&self.token),
        });
        (
            s,
            serde_json::from_str(&b).unwrap_or(serde_json::Value::Null),
        )
    }

    fn post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        self.post_as(path, body, &self.token, None)
    }

    fn post_as(
        &self,
        path: &str,
        body: &serde_json::Value,
        token: &str,
        origin: Option<&str>,
    ) -> (u16, serde_json::Value) {
        let b = body.to_string();
        let (s, t) = self.raw(&Req {
            method: "POST",
            path,
            body: b.as_bytes(),
            host: None,
            content_type: Some("application/json"),
            origin,
            token: Some(token),
        });
        (
            s,
            serde_json::from_str(&t).unwrap_or(serde_json::Value::Null),
        )
    }

    fn session(&self) -> String {
        let (s, v) = self.post("/v1/sessions", &serde_json::json!({}));
        assert_eq!(s, 200, "{v}");
        v["session"].as_str().expect("session").to_string()
    }

    /// Sends a reply request and returns the open connection without reading the answer (the
    /// caller hangs up by dropping it, or kills the host meanwhile).
    fn send_reply_unread(&self, session: &str, body: &str) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let head = format!(
            "POST /v1/sessions/{session}/replies HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            self.token,
            body.len()
        );
        s.write_all(head.as_bytes()).expect("write");
        s
    }

    /// Sends a reply request body (JSON text) again, as a retrying client does.
    fn resend(&self, session: &str, body: &str) -> (u16, serde_json::Value) {
        self.post(
            &format!("/v1/sessions/{session}/replies"),
            &serde_json::from_str(body).expect("json"),
        )
    }

    /// The event stream, read as it comes (subscribed when this returns).
    fn events(&self) -> Events {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            stream,
            "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\r\n",
            self.port, self.token
        )
        .expect("write");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = text.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("lock")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let events = Events { text };
        // The answer's head arrives once the server has subscribed this stream.
        events.wait_for("text/event-stream");
        events
    }

    /// Sends `reply`, asks to cancel once the event stream shows `running` (the command has
    /// started, or printed what the test waits for), and returns the answer with how long the
    /// cancel took to answer.
    fn reply_then_cancel(
        &self,
        session: &str,
        reply: &str,
        running: &str,
    ) -> (serde_json::Value, Duration) {
        let events = self.events();
        std::thread::scope(|s| {
            let t = s.spawn(move || self.reply(session, reply));
            events.wait_for(running);
            let asked = Instant::now();
            self.post(
                &format!("/v1/sessions/{session}/cancel"),
                &serde_json::json!({}),
            );
            let v = t.join().expect("reply");
            (v, asked.elapsed())
        })
    }

    fn reply(&self, session: &str, reply: &str) -> serde_json::Value {
        let (s, v) = self.post(
            &format!("/v1/sessions/{session}/replies"),
            &serde_json::json!({ "reply": reply }),
        );
        assert_eq!(s, 200, "{v}");
        v
    }
}

/// What the event stream has shown so far.
struct Events {
    text: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Events {
    fn now(&self) -> String {
        self.text.lock().expect("lock").clone()
    }

    /// Waits until the stream has shown `want` (at most 30 s: then the test fails).
    fn wait_for(&self, want: &str) {
        let start = Instant::now();
        while !self.now().contains(want) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the event stream never showed {want:?}:\n{}",
                self.now()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Env {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    config: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let config = tmp.path().join("config");
    Env {
        ws,
        config,
        _tmp: tmp,
    }
}

fn run_cmd(cmd: &str) -> String {
    format!("@@runcommand\n<<<CMD\n{cmd}\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n")
}

#[test]
fn pure_routes_answer_like_the_cli() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &[]);
    let (s, v) = srv.get("/v1/status");
    assert_eq!(s, 200);
    assert_eq!(v["name"], "keyless-host");
    let reply = std::fs::read_to_string(keyless_tests::corpus_dir().join("err_many_problems.txt"))
        .expect("reply");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(keyless_tests::corpus_dir().join("err_many_problems.json"))
            .expect("json"),
    )
    .expect("json");
    let (s, v) = srv.post("/v1/check", &serde_json::json!({ "reply": reply }));
    assert_eq!(
        (s, &v),
        (200, &expected),
        "the server answers exactly like check --json"
    );
    let (s, v) = srv.post(
        "/v1/policy",
        &serde_json::json!({"command": "git push --force", "mode": "Auto"}),
    );
    assert_eq!((s, v["decision"].as_str()), (200, Some("deny")));
}

#[test]
fn pairing_binds_a_token_to_an_extension_origin() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &[]);
    let origin = format!("chrome-extension://{EXT}");
    let pair = |code: &str, origin: Option<&str>| srv.pair(code, EXT, origin);
    assert_eq!(
        pair(&srv.code, Some("https://evil.example")).0,
        403,
        "a web page cannot pair"
    );
    // Not a code at all (0 and O are in no code): refused before it is compared, so no try.
    let (s, body) = pair("WRONG-CODE", Some(&origin));
    assert_eq!(s, 400, "{body}");
    assert!(body.contains("is not in a pairing code"), "{body}");
    let (s, body) = pair("", Some(&origin));
    assert_eq!(s, 400, "{body}");
    assert!(body.contains("enter the pairing code"), "{body}");
    // A wrong code says so, and how many tries are left.
    let (s, body) = pair("ABCD-2345", Some(&origin));
    assert_eq!(s, 401, "{body}");
    assert!(
        body.contains("this code is wrong or was already used; 2 more tries before pairing locks"),
        "{body}"
    );
    let (s, body) = pair(&srv.code, Some(&origin));
    assert_eq!(s, 200, "{body}");
    let token = serde_json::from_str::<serde_json::Value>(&body).expect("json")["token"]
        .as_str()
        .expect("token")
        .to_string();
    assert_eq!(
        pair(&srv.code, Some(&origin)).0,
        401,
        "the code is single use"
    );
    // The token works from its extension, and only there.
    let (s, _) = srv.post_as(
        "/v1/check",
        &serde_json::json!({"reply": "@@next\n@@end\n@@eof\n"}),
        &token,
        Some(&origin),
    );
    assert_eq!(s, 200);
    let (s, v) = srv.post_as(
        "/v1/check",
        &serde_json::json!({"reply": "x"}),
        &token,
        Some("chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba"),
    );
    assert_eq!((s, v["code"].as_str()), (403, Some("KA_UNAUTHORIZED")));
    let (s, v) = srv.post_as(
        "/v1/check",
        &serde_json::json!({"reply": "x"}),
        &token,
        Some("http://localhost:3000"),
    );
    assert_eq!((s, v["code"].as_str()), (403, Some("KA_UNAUTHORIZED")));
    // Acting as the extension: a session and a batch with the paired token and the extension's Origin.
    let (s, v) = srv.post_as(
        "/v1/sessions",
        &serde_json::json!({}),
        &token,
        Some(&origin),
    );
    assert_eq!(s, 200, "{v}");
    let sid = v["session"].as_str().expect("session").to_string();
    let (s, v) = srv.post_as(
        &format!("/v1/sessions/{sid}/replies"),
        &serde_json::json!({"reply": run_cmd("ls")}),
        &token,
        Some(&origin),
    );
    assert_eq!((s, v["status"].as_str()), (200, Some("done")), "{v}");
    // The token is stored hashed with mode 0600; pair --reset revokes it.
    let file = e.config.join("keyless").join("pairing.json");
    assert!(!std::fs::read_to_string(&file)
        .expect("pairing file")
        .contains(&token));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777,
            0o600
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["pair", "--reset"])
        .env("XDG_CONFIG_HOME", &e.config)
        .output()
        .expect("reset");
    assert!(out.status.success());
    let (s, v) = srv.post_as(
        "/v1/check",
        &serde_json::json!({"reply": "x"}),
        &token,
        Some(&origin),
    );
    assert_eq!((s, v["code"].as_str()), (401, Some("KA_UNAUTHORIZED")));
}

/// Firefox: the add-on pairs with its internal UUID, and its token works only with
/// that `moz-extension://` origin: not another UUID's, not a Chrome origin of the same letters.
#[test]
fn a_firefox_add_on_pairs_with_its_moz_extension_origin() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &[]);
    let uuid = "4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7c";
    let origin = format!("moz-extension://{uuid}");
    let pair = |id: &str, origin: &str| srv.pair(&srv.code, id, Some(origin));
    // The id and the Origin must agree; an id of no browser's form is refused first.
    let (s, body) = pair(uuid, "moz-extension://11111111-2222-4333-8444-555555555555");
    assert_eq!(s, 403, "{body}");
    let (s, body) = pair("keyless@keyless.dev", &origin);
    assert_eq!(s, 400, "{body}");
    assert!(body.contains("Firefox extension's internal UUID"), "{body}");
    let (s, body) = pair(uuid, &origin);
    assert_eq!(s, 200, "{body}");
    let token = serde_json::from_str::<serde_json::Value>(&body).expect("json")["token"]
        .as_str()
        .expect("token")
        .to_string();
    let check = |origin: Option<&str>| {
        srv.post_as(
            "/v1/check",
            &serde_json::json!({"reply": "@@next\n@@end\n@@eof\n"}),
            &token,
            origin,
        )
        .0
    };
    assert_eq!(check(Some(&origin)), 200);
    assert_eq!(
        check(Some("moz-extension://11111111-2222-4333-8444-555555555555")),
        403
    );
    assert_eq!(check(Some(&format!("chrome-extension://{uuid}"))), 403);
    assert_eq!(check(Some("https://chatgpt.com")), 403);
}

#[test]
fn hostile_requests_are_refused_and_nothing_runs() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    let body = serde_json::json!({"reply": run_cmd("touch pwned.txt")}).to_string();
    let path = format!("/v1/sessions/{session}/replies");
    let base = Req {
        method: "POST",
        path: &path,
        body: body.as_bytes(),
        host: None,
        content_type: Some("application/json"),
        origin: None,
        token: Some(&srv.token),
    };
    let lookalike = format!("http://127.0.0.1:{}.evil.example", srv.port);
    let cases: Vec<(Req<'_>, u16)> = vec![
        (
            Req {
                token: None,
                ..base
            },
            401,
        ),
        (
            Req {
                token: Some("0000"),
                ..base
            },
            401,
        ),
        (
            Req {
                host: Some("evil.example:7457"),
                ..base
            },
            403,
        ),
        (
            Req {
                host: Some("127.0.0.1:1"),
                ..base
            },
            403,
        ),
        (
            Req {
                origin: Some("https://evil.example"),
                ..base
            },
            403,
        ),
        (
            Req {
                origin: Some(&lookalike),
                ..base
            },
            403,
        ),
        (
            Req {
                content_type: Some("text/plain"),
                ..base
            },
            415,
        ),
        (
            Req {
                body: b"{not json",
                ..base
            },
            400,
        ),
        (
            Req {
                body: br#"{"reply":"x","surprise":1}"#,
                ..base
            },
            400,
        ),
        (
            Req {
                path: "/v1/nope",
                ..base
            },
            404,
        ),
    ];
    for (i, (req, want)) in cases.iter().enumerate() {
        let (s, b) = srv.raw(req);
        assert_eq!(s, *want, "case {i}: {b}");
        assert!(b.contains("\"code\":\"KA_"), "case {i}: {b}");
    }
    let big = format!("{{\"reply\":\"{}\"}}", "a".repeat(2 << 20));
    assert_eq!(
        srv.raw(&Req {
            body: big.as_bytes(),
            ..base
        })
        .0,
        413
    );
    assert!(!e.ws.join("pwned.txt").exists(), "nothing executed");
}

#[test]
fn a_retried_batch_runs_once_and_submits_are_serialized() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    let reply = run_cmd("echo x >> appended.txt");
    let first = srv.reply(&session, &reply);
    assert_eq!(
        (first["status"].as_str(), first["stored"].as_bool()),
        (Some("done"), Some(false)),
        "{first}"
    );
    assert!(first["text"]
        .as_str()
        .expect("text")
        .starts_with("[KEYLESSAGENT RESULTS] turn=1 batch=1"));
    // The same POST again (same turn and batch): the stored answer, nothing runs.
    for _ in 0..3 {
        let (s, v) = srv.post(
            &format!("/v1/sessions/{session}/replies"),
            &serde_json::json!({"reply": reply, "turn": 1, "batch": 1}),
        );
        assert_eq!((s, v["stored"].as_bool()), (200, Some(true)), "{v}");
        assert_eq!(v["text"], first["text"]);
    }
    assert_eq!(
        std::fs::read_to_string(e.ws.join("appended.txt")).expect("read"),
        "x\n"
    );
    // Two sessions submit at once: one batch at a time, never interleaved.
    let (a, b) = (srv.session(), srv.session());
    let loop_cmd = |tag: &str| {
        run_cmd(&format!(
            "for i in 1 2 3 4 5 6 7 8 9 10; do echo {tag}$i >> both.txt; sleep 0.02; done"
        ))
    };
    let (ra, rb) = (loop_cmd("A"), loop_cmd("B"));
    std::thread::scope(|s| {
        let (srv, a, b, ra, rb) = (&srv, &a, &b, &ra, &rb);
        let t1 = s.spawn(move || srv.reply(a, ra));
        let t2 = s.spawn(move || srv.reply(b, rb));
        t1.join().expect("a");
        t2.join().expect("b");
    });
    let lines: Vec<String> = std::fs::read_to_string(e.ws.join("both.txt"))
        .expect("read")
        .lines()
        .map(|l| l[..1].to_string())
        .collect();
    let switches = lines.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!((lines.len(), switches), (20, 1), "{lines:?}");
    let (s, v) = srv.get(&format!("/v1/sessions/{session}"));
    assert_eq!((s, v["batch"].as_u64()), (200, Some(2)), "{v}");
}

#[test]
fn confirmations_events_and_cancel() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "ask"]);
    let session = srv.session();
    // Listen to the event stream.
    let events = srv.events();
    let wait_prompt = || -> serde_json::Value {
        let start = Instant::now();
        loop {
            let (_, v) = srv.get("/v1/confirmations");
            if let Some(p) = v.as_array().and_then(|a| a.first()).cloned() {
                return p;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no confirmation appeared"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let (r1, r2, r3) = (
        run_cmd("echo approved > ok.txt && echo done-output"),
        run_cmd("echo nope > no.txt"),
        run_cmd("echo started; sleep 30"),
    );
    std::thread::scope(|s| {
        let (srv, session, wait_prompt) = (&srv, &session, &wait_prompt);
        // Approve: a Risky command in Ask mode waits for the user.
        let t = s.spawn(move || srv.reply(session, &r1));
        let p = wait_prompt();
        assert_eq!(
            (p["kind"].as_str(), p["tier"].as_str()),
            (Some("confirm"), Some("Risky")),
            "{p}"
        );
        let (st, _) = srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"approve": true}),
        );
        assert_eq!(st, 200);
        let v = t.join().expect("reply");
        assert!(
            v["text"]
                .as_str()
                .expect("text")
                .contains("status: ok | exit code: 0"),
            "{v}"
        );
        assert_eq!(
            std::fs::read_to_string(e.ws.join("ok.txt")).expect("read"),
            "approved\n"
        );
        // Decline, saying why: the model is told.
        let t = s.spawn(move || srv.reply(session, &r2));
        let p = wait_prompt();
        // The terminal shows the question waiting.
        let out = wait_text(&srv.out, "waits for your yes or no");
        assert!(
            out.contains("a command waits for your yes or no: echo nope > no.txt (answer in the chat's overlay or the dashboard)"),
            "{out}"
        );
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"approve": false, "answer": "write it under tmp/ instead"}),
        );
        let v = t.join().expect("reply");
        let text = v["text"].as_str().expect("text");
        assert!(text.contains("code: KA_COMMAND_DECLINED"), "{v}");
        assert!(
            text.contains("and says: write it under tmp/ instead"),
            "{v}"
        );
        assert!(!e.ws.join("no.txt").exists());
        // Cancel a long command: KA_CANCELLED with the output so far.
        // (echo and sleep are ReadOnly: it runs without a confirmation.)
        let t = s.spawn(move || srv.reply(session, &r3));
        // The command is running once its first output has come.
        events.wait_for("started\\n");
        let started = Instant::now();
        srv.post(
            &format!("/v1/sessions/{session}/cancel"),
            &serde_json::json!({}),
        );
        let v = t.join().expect("reply");
        assert!(started.elapsed() < Duration::from_secs(10));
        let text = v["text"].as_str().expect("text");
        assert!(
            text.contains("code: KA_CANCELLED") && text.contains("<<<OUTPUT\nstarted\n"),
            "{v}"
        );
    });
    // The last batch's end is on the stream (the answer above may come first).
    events.wait_for("KA_CANCELLED");
    let ev = events.now();
    for want in [
        "\"type\":\"batch_started\"",
        "\"type\":\"prompt\"",
        "\"type\":\"output\"",
        "done-output",
        "\"type\":\"batch_finished\"",
    ] {
        assert!(
            ev.contains(want),
            "missing {want} in the event stream:\n{ev}"
        );
    }
}

#[test]
fn a_restarted_host_resumes_the_session() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    srv.reply(&session, &run_cmd("echo one >> log.txt"));
    drop(srv);
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"resume": session}));
    assert_eq!((s, v["batch"].as_u64()), (200, Some(2)), "{v}");
    assert!(v["prompt"]
        .as_str()
        .expect("prompt")
        .contains("# Environment"));
    let v = srv.reply(&session, &run_cmd("echo two >> log.txt"));
    assert!(
        v["text"]
            .as_str()
            .expect("text")
            .starts_with("[KEYLESSAGENT RESULTS] turn=1 batch=2"),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("log.txt")).expect("read"),
        "one\ntwo\n"
    );
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"resume": "s-nope"}));
    assert_eq!((s, v["code"].as_str()), (404, Some("KA_SESSION_NOT_FOUND")));
}

/// Waits until `buf` holds `want` (10 s at most), then gives it back.
fn wait_text(buf: &std::sync::Mutex<String>, want: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let now = buf.lock().map(|b| b.clone()).unwrap_or_default();
        if now.contains(want) || Instant::now() > until {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_terminal_tells_what_happens_and_the_log_waits_for_verbose() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    srv.reply(
        &session,
        "@@runcommand\n<<<CMD\necho hi\nCMD>>>\n@@end\n@@runcommand\n<<<CMD\necho two\nCMD>>>\n@@end\n@@done\n@@end\n@@eof\n",
    );
    let out = wait_text(&srv.out, "task done");
    assert!(
        out.contains("reply received (turn 1, batch 1), running it"),
        "{out}"
    );
    assert!(
        out.contains("batch ran (turn 1, batch 1): 2 commands: 2 ok; results go back to the chat"),
        "{out}"
    );
    assert!(
        out.contains("task done: the model finished (@@done)"),
        "{out}"
    );
    // No request trace without --verbose: the 5-second confirmations poll is not shown.
    for _ in 0..3 {
        assert_eq!(srv.get("/v1/confirmations").0, 200);
    }
    let log = srv.log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(!log.contains("/v1/confirmations"), "{log}");
    assert!(!out.contains("/v1/confirmations"), "{out}");
    drop(srv);
    // --verbose: the log is there, on stderr.
    let srv = spawn(&e.ws, &e.config, &["--verbose"]);
    assert_eq!(srv.get("/v1/confirmations").0, 200);
    let log = wait_text(&srv.log, "/v1/confirmations");
    assert!(log.contains("/v1/confirmations"), "{log}");
}

#[test]
fn the_local_token_survives_a_restart_so_an_open_dashboard_reconnects() {
    let e = env();
    let first = spawn(&e.ws, &e.config, &[]);
    let token = first.token.clone();
    drop(first);
    let second = spawn(&e.ws, &e.config, &[]);
    assert_eq!(second.token, token);
    let file = e.config.join("keyless").join("local-token");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file)
            .expect("local-token")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Resetting the pairings makes a new one.
    drop(second);
    let reset = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["pair", "--reset"])
        .env("XDG_CONFIG_HOME", &e.config)
        .output()
        .expect("setup");
    assert!(reset.status.success(), "{reset:?}");
    assert!(!file.exists());
    let third = spawn(&e.ws, &e.config, &[]);
    assert_ne!(third.token, token);
}

#[cfg(unix)]
#[test]
fn sigterm_shuts_down_gracefully() {
    let e = env();
    let mut srv = spawn(&e.ws, &e.config, &[]);
    assert_eq!(srv.get("/v1/status").0, 200);
    let killed = Command::new("kill")
        .args(["-TERM", &srv.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = srv.child.wait().expect("wait");
    assert!(status.success(), "{status}");
    // A SIGTERM the moment the banner is out is caught too (the handlers are installed before
    // it is printed): once failed in CI, when the server had not yet polled its shutdown future.
    for _ in 0..5 {
        let mut srv = spawn(&e.ws, &e.config, &[]);
        let killed = Command::new("kill")
            .args(["-TERM", &srv.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = srv.child.wait().expect("wait");
        assert!(status.success(), "{status}");
    }
}

#[test]
fn port_in_use_is_a_clear_error() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &[]);
    // A serve for another folder on the same port (for this folder, see one_serve_per_workspace).
    let other = e.ws.with_file_name("other");
    std::fs::create_dir_all(&other).expect("other");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["serve", "--port", &srv.port.to_string(), "--workspace"])
        .arg(&other)
        .env("XDG_CONFIG_HOME", &e.config)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("KA_CONFIG_VALIDATION") && err.contains("try --port"),
        "{err}"
    );
    // A serve that refused to start leaves no `.agent` behind in a folder it made it in.
    assert!(!other.join(".agent").exists(), "{err}");
}

#[test]
fn a_piece_session_gates_commands_and_moves_through_movements() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.get("/v1/pieces");
    assert_eq!(s, 200);
    let names: Vec<&str> = v
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"plan-implement-review") && names.contains(&"fix-loop"),
        "{v}"
    );
    // The seed's SSH example is refused as piece_yaml, with the sentinel finding.
    let seed = std::fs::read_to_string(
        keyless_tests::corpus_dir()
            .parent()
            .expect("tests")
            .join("pieces/err_seed_ssh_example.yaml"),
    )
    .expect("yaml");
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"piece_yaml": seed}));
    assert_eq!(s, 400);
    assert!(
        v["message"]
            .as_str()
            .expect("msg")
            .contains("KA_PIECE_SENTINEL"),
        "{v}"
    );

    let (s, v) = srv.post(
        "/v1/sessions",
        &serde_json::json!({"piece": "plan-implement-review"}),
    );
    assert_eq!(s, 200, "{v}");
    assert!(
        v["prompt"]
            .as_str()
            .expect("prompt")
            .contains("[KEYLESSAGENT MOVEMENT] plan (movement 1 of at most 12"),
        "{v}"
    );
    let session = v["session"].as_str().expect("id").to_string();
    // The views get what the host judges with: the allow-list and the movement's tools.
    assert_eq!(v["gate"]["movement"], "plan", "{v}");
    assert!(
        v["gate"]["command_patterns"]
            .as_array()
            .is_some_and(|p| p.iter().any(|x| x == "ls *")),
        "{v}"
    );
    assert!(v["allow"].is_array(), "{v}");
    // plan cannot write files, and runs only its listed commands.
    let r = "@@runcommand on_error=continue\n<<<CMD\nls && rm -rf src\nCMD>>>\n@@end\n@@runcommand\n<<<CMD\nls\nCMD>>>\n@@end\n@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let v = srv.reply(&session, r);
    assert_eq!(v["piece"]["tools"]["movement"], "plan", "{v}");
    // The dashboard's view of that batch judges it as it ran, in movement "plan": the write and
    // the segment outside allowed_commands are denied, with the movement's reasons.
    let (s, b) = srv.get(&format!(
        "/v1/batches/{}",
        v["batch_id"].as_str().expect("id")
    ));
    assert_eq!(s, 200, "{b}");
    let views: Vec<(String, String)> = b["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| {
            (
                c["decision"].as_str().unwrap_or("").to_string(),
                c["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(views[0].0, "deny", "{views:?}");
    assert!(
        views[0]
            .1
            .contains("not in this movement's allowed_commands"),
        "{views:?}"
    );
    assert_eq!(views[1].0, "run", "{views:?}");
    assert_eq!(views[2].0, "deny", "{views:?}");
    assert!(
        views[2]
            .1
            .contains("@@newfile is not allowed in movement \"plan\""),
        "{views:?}"
    );
    let text = v["text"].as_str().expect("text");
    assert!(
        text.contains(
            "code: KA_COMMAND_DENIED\nreason: @@newfile is not allowed in movement \"plan\""
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "reason: movement \"plan\": \"rm -rf src\" is not in this movement's allowed_commands"
        ),
        "{text}"
    );
    assert!(
        text.contains("--- result 2/3 | #2 runcommand | ls ---\nstatus: ok"),
        "{text}"
    );
    assert!(!e.ws.join("a.txt").exists());
    // A refused transition keeps the turn and lists the allowed directives.
    let v = srv.reply(&session, "@@done next=review\n@@end\n@@eof\n");
    let text = v["text"].as_str().expect("text");
    assert!(text.contains("[KEYLESSAGENT PIECE] KA_PIECE_TRANSITION movement \"plan\" has no rule leading to \"review\"; allowed: @@done next=implement"), "{text}");
    assert_eq!(v["turn_ended"], serde_json::Value::Null);
    // Moving on hands over the next movement, which may edit.
    let v = srv.reply(&session, "@@done next=implement\n@@end\n@@eof\n");
    assert!(
        v["text"]
            .as_str()
            .expect("text")
            .contains("[KEYLESSAGENT MOVEMENT] implement (movement 2"),
        "{v}"
    );
    assert_eq!(v["piece"]["movement"], "implement");
    let v = srv.reply(
        &session,
        "@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@done next=review\n@@end\n@@eof\n",
    );
    assert!(
        v["text"].as_str().expect("text").contains("status: ok"),
        "{v}"
    );
    assert_eq!(v["piece"]["movement"], "review");
    let v = srv.reply(&session, "@@done\n@@end\n@@eof\n");
    assert_eq!(v["turn_ended"], "done", "{v}");
    assert_eq!(v["piece"]["state"]["state"], "complete", "{v}");
    // A finished piece takes no more replies.
    let (s, v) = srv.post(
        &format!("/v1/sessions/{session}/replies"),
        &serde_json::json!({"reply": "@@next\n@@end\n@@eof\n"}),
    );
    assert_eq!(s, 409, "{v}");
}

#[test]
fn a_client_that_disconnects_mid_batch_gets_the_result_later() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    let body =
        serde_json::json!({"reply": run_cmd("echo x >> slow.txt; sleep 1"), "turn": 1, "batch": 1})
            .to_string();
    let events = srv.events();
    {
        // Send the request, and hang up once its batch has started (mid-batch).
        let _conn = srv.send_reply_unread(&session, &body);
        events.wait_for(&format!(
            "\"type\":\"batch_started\",\"session\":\"{session}\""
        ));
    }
    // The abandoned batch runs to its end all the same.
    events.wait_for(&format!(
        "\"type\":\"batch_finished\",\"session\":\"{session}\""
    ));
    assert_eq!(
        std::fs::read_to_string(e.ws.join("slow.txt")).expect("the abandoned batch still ran"),
        "x\n"
    );
    let (s, v) = srv.resend(&session, &body);
    assert_eq!(
        (s, v["stored"].as_bool(), v["status"].as_str()),
        (200, Some(true), Some("done")),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("slow.txt")).expect("read"),
        "x\n",
        "not run twice"
    );
}

/// A host killed mid-batch leaves the batch "running". Sent again after a restart, it is answered
/// as interrupted, never run a second time, and the session moves past it: the same rule as
/// `keyless-host run` (one submit path).
#[test]
fn an_interrupted_batch_is_answered_never_rerun_and_passed() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    let slow = run_cmd("echo ran >> log.txt && sleep 30");
    let body = serde_json::json!({"reply": slow, "turn": 1, "batch": 1}).to_string();
    {
        let _conn = srv.send_reply_unread(&session, &body);
        let log = e.ws.join("log.txt");
        let start = Instant::now();
        while !log.exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(log.exists(), "the batch started");
    }
    drop(srv); // kill -9 mid-batch
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.resend(&session, &body);
    assert_eq!(
        (s, v["stored"].as_bool(), v["status"].as_str()),
        (200, Some(true), Some("interrupted")),
        "{v}"
    );
    assert!(
        v["text"]
            .as_str()
            .expect("text")
            .contains("was interrupted while it ran"),
        "{v}"
    );
    assert_eq!(
        (v["next_turn"].as_u64(), v["next_batch"].as_u64()),
        (Some(1), Some(2)),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("log.txt")).expect("read"),
        "ran\n",
        "not run twice"
    );
    let v = srv.reply(&session, &run_cmd("echo next >> log.txt"));
    assert!(
        v["text"]
            .as_str()
            .expect("text")
            .starts_with("[KEYLESSAGENT RESULTS] turn=1 batch=2"),
        "{v}"
    );
}

#[test]
fn wrong_pairing_codes_lock_pairing_for_a_growing_delay() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &[]);
    let origin = format!("chrome-extension://{EXT}");
    let pair = |code: &str| {
        let b = serde_json::json!({"code": code, "extension_id": EXT}).to_string();
        srv.raw(&Req {
            method: "POST",
            path: "/v1/pair",
            body: b.as_bytes(),
            host: None,
            content_type: Some("application/json"),
            origin: Some(&origin),
            token: None,
        })
    };
    for left in ["2 more tries", "1 more try"] {
        let (s, b) = pair("AAAA-AAAA");
        assert_eq!(s, 401);
        assert!(b.contains(left), "{b}");
    }
    let (s, b) = pair("AAAA-AAAA");
    assert_eq!(s, 429, "{b}");
    assert!(
        b.contains("KA_RATE_LIMITED")
            && b.contains("this code is wrong or was already used; pairing is locked for 2 s after 3 wrong codes")
            && b.contains("\"retry_after_seconds\":2"),
        "{b}"
    );
    // Locked: even the right code waits.
    let (s, b) = pair(&srv.code);
    assert_eq!(s, 429, "{b}");
    assert!(b.contains("\"message\":\"pairing is locked for"), "{b}");
    std::thread::sleep(Duration::from_millis(2200));
    let (s, b) = pair(&srv.code);
    assert_eq!(s, 200, "{b}");
    let log = srv.log.lock().expect("log").clone();
    assert!(
        log.contains("pairing: wrong code") && log.contains("locked_seconds=2"),
        "{log}"
    );
}

#[test]
fn slow_idle_and_flooding_connections_cannot_hold_the_server() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &[]);
    // A flood of connections that never send a request: more than the cap.
    let mut idle = Vec::new();
    for _ in 0..1100 {
        match TcpStream::connect(("127.0.0.1", srv.port)) {
            Ok(c) => idle.push(c),
            Err(_) => break,
        }
    }
    let start = Instant::now();
    let (status, _) = srv.get("/v1/status");
    assert_eq!(status, 200, "a client got through the flood");
    eprintln!(
        "/v1/status behind {} idle connections: {:?}",
        idle.len(),
        start.elapsed()
    );
    // A client that never finishes its headers is closed at the header deadline.
    let mut slow = TcpStream::connect(("127.0.0.1", srv.port)).expect("connect");
    slow.write_all(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("write");
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let n = slow.read(&mut buf).unwrap_or(0);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(15),
        "a slow-header connection stayed open {waited:?} ({n} bytes)"
    );
    // A body that never completes is answered with KA_TIMEOUT at the body deadline.
    let mut slow_body = TcpStream::connect(("127.0.0.1", srv.port)).expect("connect");
    let head = format!(
        "POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{\"reply\"",
        srv.port, srv.token
    );
    slow_body.write_all(head.as_bytes()).expect("write");
    slow_body
        .set_read_timeout(Some(Duration::from_secs(40)))
        .expect("timeout");
    let mut out = Vec::new();
    let _ = slow_body.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("KA_TIMEOUT"), "{text}");
    drop(idle);
    assert_eq!(srv.get("/v1/status").0, 200);
}

#[test]
fn cancel_holds_under_continuous_output() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    let (v, took) = srv.reply_then_cancel(&session, &run_cmd("yes"), "y\\ny\\n");
    eprintln!("cancel under `yes` answered after {took:?}");
    assert!(took < Duration::from_secs(5), "cancel took {took:?}");
    assert!(
        v["text"]
            .as_str()
            .expect("text")
            .contains("code: KA_CANCELLED"),
        "{v}"
    );
}

/// Through the API, @@deletefile in Ask mode is a confirmation like a Risky runcommand: it shows
/// as `@@deletefile PATH` with its tier, a decline keeps the file, an approval deletes it.
#[test]
fn deletefile_waits_for_the_user_in_ask_mode() {
    let e = env();
    std::fs::write(e.ws.join("gone.txt"), "keep me\n").expect("write");
    let srv = spawn(&e.ws, &e.config, &["--mode", "ask"]);
    let session = srv.session();
    let del = "@@deletefile gone.txt\n@@end\n@@next\n@@end\n@@eof\n";
    for approve in [false, true] {
        std::thread::scope(|s| {
            let t = s.spawn(|| srv.reply(&session, del));
            let p = first_prompt(&srv);
            assert_eq!(
                (p["kind"].as_str(), p["tier"].as_str(), p["text"].as_str()),
                (
                    Some("confirm"),
                    Some("Risky"),
                    Some("@@deletefile gone.txt")
                ),
                "{p}"
            );
            srv.post(
                &format!("/v1/confirmations/{}", p["id"]),
                &serde_json::json!({ "approve": approve }),
            );
            let v = t.join().expect("reply");
            let text = v["text"].as_str().expect("text");
            if approve {
                assert!(text.contains("status: ok"), "{text}");
            } else {
                assert!(text.contains("code: KA_COMMAND_DECLINED"), "{text}");
            }
        });
        assert_eq!(e.ws.join("gone.txt").exists(), !approve);
    }
}

/// Stopping serve while a batch waits for a confirmation: nobody can answer any more, so the
/// batch ends declined and is recorded, and serve exits instead of waiting up to 15 minutes.
#[test]
fn stopping_serve_declines_what_waits_for_an_answer() {
    let e = env();
    let mut srv = spawn(&e.ws, &e.config, &["--mode", "ask"]);
    let session = srv.session();
    let (port, token) = (srv.port, srv.token.clone());
    let waiting = std::thread::spawn(move || {
        // The reply's answer never comes back: the connection closes with the server.
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let body = serde_json::json!({ "reply": run_cmd("echo x > stopped.txt") }).to_string();
        write!(
            s,
            "POST /v1/sessions/{session}/replies HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut sink = String::new();
        let _ = s.read_to_string(&mut sink);
    });
    let start = Instant::now();
    loop {
        let (_, v) = srv.get("/v1/confirmations");
        if v.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no confirmation");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = srv.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill")
        .success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = srv.child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "serve still waits for an answer nobody can give"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    waiting.join().expect("client");
    assert!(
        !e.ws.join("stopped.txt").exists(),
        "a declined command never runs"
    );
    // The batch is recorded, declined.
    let log = keyless_in(&e, &["log", "--json"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("KA_COMMAND_DECLINED"), "{log}");
}

/// ASK is a real question: a piece's `@@done status=needs_user_input` stops the run
/// on one question the user answers through the API (as the overlay and the dashboard do); the
/// answer resumes the movement and reaches the model. The same batch sent again while the
/// question waits, and after, raises no second question.
#[test]
fn a_piece_question_waits_for_the_user_and_the_answer_resumes_it() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.post(
        "/v1/sessions",
        &serde_json::json!({"piece": "plan-implement-review"}),
    );
    assert_eq!(s, 200, "{v}");
    let session = v["session"].as_str().expect("session").to_string();
    let ask = "@@done status=needs_user_input\n<<<MSG\nPostgres or SQLite?\nMSG>>>\n@@end\n@@eof\n";
    let pending = || -> Vec<serde_json::Value> {
        let (_, v) = srv.get("/v1/confirmations");
        v.as_array().cloned().unwrap_or_default()
    };
    std::thread::scope(|sc| {
        let first = sc.spawn(|| srv.reply(&session, ask));
        let start = Instant::now();
        while pending().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(20), "no question");
            std::thread::sleep(Duration::from_millis(50));
        }
        // The same reply again (a retrying client) waits behind the first and asks nothing.
        let again = sc.spawn(|| {
            srv.post(
                &format!("/v1/sessions/{session}/replies"),
                &serde_json::json!({"reply": ask, "turn": 1, "batch": 1}),
            )
        });
        let list = pending();
        assert_eq!(list.len(), 1, "one question: {list:?}");
        let p = &list[0];
        assert_eq!(
            (p["kind"].as_str(), p["text"].as_str()),
            (Some("ask"), Some("Postgres or SQLite?")),
            "{p}"
        );
        assert!(
            p["reason"]
                .as_str()
                .is_some_and(|r| r.contains("movement \"plan\" (needs_user_input)")),
            "{p}"
        );
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"answer": "Postgres"}),
        );
        let v = first.join().expect("reply");
        let text = v["text"].as_str().expect("text");
        assert!(
            text.contains(
                "[KEYLESSAGENT PIECE] The user answered: Postgres\n\n[KEYLESSAGENT MOVEMENT] plan"
            ),
            "{text}"
        );
        assert_eq!(v["turn_ended"], serde_json::Value::Null, "{v}");
        assert_eq!(v["piece"]["state"]["state"], "running", "{v}");
        // The retry answers only once it has its result: a question of its own would have to be
        // answered first, so until it returns, none may show (no timed wait: its return is the
        // event).
        let start = Instant::now();
        while !again.is_finished() {
            let list = pending();
            if !list.is_empty() {
                // Answered, so the retry's thread ends and the failure is reported, not a hang.
                for p in &list {
                    srv.post(
                        &format!("/v1/confirmations/{}", p["id"]),
                        &serde_json::json!({"answer": "SQLite"}),
                    );
                }
                panic!("the retry asked again: {list:?}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the retry never answered"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let (s, again) = again.join().expect("again");
        assert_eq!((s, again["stored"].as_bool()), (200, Some(true)), "{again}");
        assert_eq!(again["text"], v["text"]);
    });
    assert!(pending().is_empty(), "no question left behind");
    // Unanswered (the answer is empty): the run stays on its question and the turn ends.
    std::thread::scope(|sc| {
        let t = sc.spawn(|| srv.reply(&session, ask));
        let start = Instant::now();
        let p = loop {
            if let Some(p) = pending().first().cloned() {
                break p;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no question");
            std::thread::sleep(Duration::from_millis(50));
        };
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"answer": "  "}),
        );
        let v = t.join().expect("reply");
        assert_eq!(v["turn_ended"], "needs_user_input", "{v}");
        assert_eq!(v["piece"]["state"]["state"], "needs_user_input", "{v}");
        assert_eq!(
            v["piece"]["state"]["question"], "Postgres or SQLite?",
            "{v}"
        );
    });
}

impl Server {
    /// A PUT or DELETE with the token (and a JSON body for PUT).
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let b = body.map(ToString::to_string).unwrap_or_default();
        let (s, t) = self.raw(&Req {
            method,
            path,
            body: b.as_bytes(),
            host: None,
            content_type: body.map(|_| "application/json"),
            origin: None,
            token: Some(&self.token),
        });
        (
            s,
            serde_json::from_str(&t).unwrap_or(serde_json::Value::Null),
        )
    }
}

/// The piece API: PUT stores a workspace piece under strict validation and answers
/// refusals with the findings' codes, paths and lines; GET reads a piece back; DELETE removes
/// the workspace's piece only, uncovering the built-in one it hid. Nothing is written through a
/// symlinked `.agent/pieces`.
#[test]
fn the_piece_api_stores_checks_and_deletes_workspace_pieces() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let good = "name: mine\ndescription: one movement\nmax_movements: 3\ninitial_movement: look\nmovements:\n  - name: look\n    edit: false\n    persona: reviewer\n    instruction: Look around.\n    allowed_tools: [Read, Bash]\n    allowed_commands: [\"ls *\"]\n    rules: []\n";
    let (s, v) = srv.send(
        "PUT",
        "/v1/pieces/mine",
        Some(&serde_json::json!({ "yaml": good })),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["shadows"], serde_json::Value::Null, "{v}");
    let file = e.ws.join(".agent/pieces/mine.yaml");
    assert_eq!(std::fs::read_to_string(&file).expect("stored"), good);
    let (_, list) = srv.get("/v1/pieces");
    let mine = list
        .as_array()
        .and_then(|a| a.iter().find(|p| p["name"] == "mine"))
        .cloned()
        .expect("listed");
    assert_eq!(mine["editable"], true, "{mine}");
    let (s, v) = srv.get("/v1/pieces/mine");
    assert_eq!(
        (s, v["yaml"].as_str(), v["editable"].as_bool()),
        (200, Some(good), Some(true)),
        "{v}"
    );
    // A session starts it by name.
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"piece": "mine"}));
    assert_eq!(s, 200, "{v}");
    // Strict validation: an unknown key (a warning in lenient mode) refuses the piece, with its
    // code, path and line; nothing changes on disk.
    let typo = good.replace("    rules: []\n", "    rules: []\n    persna: x\n");
    let (s, v) = srv.send(
        "PUT",
        "/v1/pieces/mine",
        Some(&serde_json::json!({ "yaml": typo })),
    );
    assert_eq!(
        (s, v["code"].as_str()),
        (422, Some("KA_PIECE_UNKNOWN_KEY")),
        "{v}"
    );
    let f = &v["findings"][0];
    assert_eq!(
        (f["key"].as_str(), f["line"].as_u64()),
        (Some("movements[0].persna"), Some(13)),
        "{v}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), good);
    // The name inside must be the name it is saved as.
    let (s, v) = srv.send(
        "PUT",
        "/v1/pieces/other",
        Some(&serde_json::json!({ "yaml": good })),
    );
    assert_eq!(
        (s, v["code"].as_str()),
        (422, Some("KA_PIECE_FORMAT")),
        "{v}"
    );
    assert_eq!(
        (
            v["findings"][0]["key"].as_str(),
            v["findings"][0]["line"].as_u64()
        ),
        (Some("name"), Some(1)),
        "{v}"
    );
    // Names that are not file names, and bodies that are not the contract.
    for bad in ["..%2Fescape", "a.b", "%20"] {
        let (s, v) = srv.send(
            "PUT",
            &format!("/v1/pieces/{bad}"),
            Some(&serde_json::json!({ "yaml": good })),
        );
        assert_eq!(s, 400, "{bad}: {v}");
    }
    let (s, _) = srv.send(
        "PUT",
        "/v1/pieces/mine",
        Some(&serde_json::json!({ "yaml": good, "extra": 1 })),
    );
    assert_eq!(s, 400);
    // Shadowing a built-in is allowed and said; DELETE uncovers it.
    let fix = good.replace("name: mine", "name: fix-loop");
    let (s, v) = srv.send(
        "PUT",
        "/v1/pieces/fix-loop",
        Some(&serde_json::json!({ "yaml": fix })),
    );
    assert_eq!((s, v["shadows"].as_str()), (200, Some("built-in")), "{v}");
    let (s, v) = srv.send("DELETE", "/v1/pieces/fix-loop", None);
    assert_eq!((s, v["now"].as_str()), (200, Some("built-in")), "{v}");
    let (s, v) = srv.send("DELETE", "/v1/pieces/fix-loop", None);
    assert_eq!(
        (s, v["code"].as_str()),
        (404, Some("KA_PIECE_NOT_FOUND")),
        "{v}"
    );
    let (s, v) = srv.send("DELETE", "/v1/pieces/mine", None);
    assert_eq!((s, v["now"].clone()), (200, serde_json::Value::Null), "{v}");
    assert!(!file.exists());
    // A symlinked .agent/pieces is never written through.
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::remove_dir(e.ws.join(".agent/pieces")).expect("empty");
    std::os::unix::fs::symlink(outside.path(), e.ws.join(".agent/pieces")).expect("symlink");
    let (s, v) = srv.send(
        "PUT",
        "/v1/pieces/mine",
        Some(&serde_json::json!({ "yaml": good })),
    );
    assert_eq!((s, v["code"].as_str()), (422, Some("KA_FILE_IO")), "{v}");
    assert!(
        std::fs::read_dir(outside.path())
            .expect("dir")
            .next()
            .is_none(),
        "nothing written outside"
    );
}

/// The shipped `ssh-ops` piece through `serve` against a real sshd: the session's prompt offers
/// `@@sshexec` with the usable connection, the command runs there, and the batch's view shows it
/// with its connection and tier.
#[test]
fn the_ssh_ops_piece_runs_through_serve() {
    if !keyless_tests::sshd::available() {
        return;
    }
    let e = env();
    let sshd = keyless_tests::sshd::Sshd::start(&e._tmp.path().join("sshd"));
    let ssh = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .arg("ssh")
            .args(args)
            .env("XDG_CONFIG_HOME", &e.config)
            .env("USER", &sshd.user)
            .output()
            .expect("ssh cli");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let port = sshd.port.to_string();
    ssh(&[
        "add",
        "box",
        "--host",
        "127.0.0.1",
        "--user",
        &sshd.user,
        "--port",
        &port,
    ]);
    ssh(&["grant", "box", "--piece", "ssh-ops"]);
    let cfg = sshd.client_config.display().to_string();
    let srv = spawn_env(
        &e.ws,
        &e.config,
        &["--mode", "autosafe"],
        &[
            ("KEYLESS_SSH_CONFIG", cfg.as_str()),
            ("USER", sshd.user.as_str()),
        ],
    );
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"piece": "ssh-ops"}));
    assert_eq!(s, 200, "{v}");
    let prompt = v["prompt"].as_str().expect("prompt");
    assert!(prompt.contains("@@sshexec CONNECTION"), "{prompt}");
    assert!(prompt.contains("box ("), "{prompt}");
    assert!(
        v["gate"]["commands"]
            .as_array()
            .is_some_and(|c| c.iter().any(|k| k == "sshexec")),
        "{v}"
    );
    let session = v["session"].as_str().expect("id").to_string();
    // AutoSafe: Execute on another machine waits for the user unless allow-listed; the
    // confirmation names the connection and the tier, as the overlay shows it.
    let r = "@@sshexec box\n<<<CMD\nuptime\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let v = std::thread::scope(|scope| {
        let (srv, session) = (&srv, &session);
        let t = scope.spawn(move || srv.reply(session, r));
        let start = Instant::now();
        let p = loop {
            let (_, v) = srv.get("/v1/confirmations");
            if let Some(p) = v.as_array().and_then(|a| a.first()).cloned() {
                break p;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no confirmation");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(p["tier"], "Execute", "{p}");
        assert!(
            p["text"].as_str().unwrap_or("").contains("ssh box: uptime"),
            "{p}"
        );
        let (st, _) = srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"approve": true}),
        );
        assert_eq!(st, 200);
        t.join().expect("reply")
    });
    assert!(
        v["text"].as_str().unwrap_or("").contains("load average"),
        "{v}"
    );
    // In Auto, a long remote command runs unasked and cancel stops it.
    let (st, _) = srv.post(
        &format!("/v1/sessions/{session}/settings"),
        &serde_json::json!({"mode": "Auto"}),
    );
    assert_eq!(st, 200);
    let long =
        "@@sshexec box\n<<<CMD\necho started; sleep 30\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let (c, took) = srv.reply_then_cancel(&session, long, "started\\n");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let text = c["text"].as_str().unwrap_or("");
    assert!(
        text.contains("KA_CANCELLED") && text.contains("<<<OUTPUT\nstarted"),
        "{c}"
    );
    let (s, b) = srv.get(&format!(
        "/v1/batches/{}",
        v["batch_id"].as_str().expect("id")
    ));
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["commands"][0]["command"], "sshexec", "{b}");
    assert_eq!(b["commands"][0]["target"], "box: uptime", "{b}");
    assert_eq!(b["commands"][0]["tier"], "Execute", "{b}");
}

/// A session whose piece requires an MCP server starts it; SIGTERM stops serve cleanly (its MCP
/// runtime is dropped on an async thread without a panic) and the server process goes with it.
#[test]
fn mcp_servers_start_with_a_piece_session_and_stop_with_serve() {
    if !keyless_tests::mcp::available() {
        return;
    }
    let e = env();
    let mark = format!("keyless-mark-{}", std::process::id());
    std::fs::create_dir_all(e.config.join("keyless")).expect("config");
    std::fs::write(
        e.config.join("keyless/keyless.json"),
        serde_json::json!({"Mcp": {"Servers": {"everything": {
            "Command": "node",
            "Args": [keyless_tests::mcp::server("server-everything"), "stdio"],
            "Env": {"KEYLESS_TEST_MARK": mark}
        }}}})
        .to_string(),
    )
    .expect("keyless.json");
    let piece = "name: echo\ndescription: d\nmax_movements: 2\ninitial_movement: talk\nrequired_mcp: [everything]\nmovements:\n  - name: talk\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [mcp__everything__echo, mcp__everything__trigger-long-running-operation]\n    rules: []\n";
    let mut srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"piece_yaml": piece}));
    assert_eq!(s, 200, "{v}");
    assert!(
        v["prompt"]
            .as_str()
            .unwrap_or("")
            .contains("everything.echo"),
        "{v}"
    );
    let session = v["session"].as_str().expect("id").to_string();
    let r = "@@mcp everything.echo\n<<<ARGS\n{\"message\": \"over serve\"}\nARGS>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let v = srv.reply(&session, r);
    assert!(
        v["text"]
            .as_str()
            .unwrap_or("")
            .contains("Echo: over serve"),
        "{v}"
    );
    let running = || {
        std::fs::read_dir("/proc")
            .expect("proc")
            .filter_map(Result::ok)
            .any(|p| {
                std::fs::read(p.path().join("environ"))
                    .is_ok_and(|env| env.windows(mark.len()).any(|w| w == mark.as_bytes()))
            })
    };
    assert!(running(), "the server runs for the session");
    // Cancel stops a tool call as it stops a command.
    let long = "@@mcp everything.trigger-long-running-operation\n<<<ARGS\n{\"duration\": 30, \"steps\": 3}\nARGS>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let (v, took) = srv.reply_then_cancel(&session, long, "\"type\":\"command_started\"");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        v["text"].as_str().unwrap_or("").contains("KA_CANCELLED"),
        "{v}"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &srv.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = srv.child.wait().expect("wait");
    let log = srv.log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(status.success(), "{status}\n{log}");
    assert!(!log.contains("panicked"), "{log}");
    let start = Instant::now();
    while running() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the MCP server outlived serve"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A program started through the API that exhausts memory ends only itself (its own
/// process), is recorded as failed with KA_AS_LIMIT, and the server goes on serving; a normal
/// program still streams its trace and keeps its record.
#[test]
fn an_as_program_cannot_take_the_server_down() {
    let e = env();
    std::fs::write(
        e.ws.join("bomb.as"),
        "main agent A {\n    main func(input) {\n        x = [1]\n        repeat * 40 {\n            x = [x, x]\n        }\n        return none\n    }\n}\n",
    )
    .expect("bomb");
    std::fs::write(
        e.ws.join("ok.as"),
        "main agent A {\n    func twice(n) {\n        return [n, n]\n    }\n    main func(input) {\n        return twice(input)\n    }\n}\n",
    )
    .expect("ok");
    let srv = spawn(&e.ws, &e.config, &[]);
    let wait_for = |run: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, d) = srv.get(&format!("/v1/as/runs/{run}"));
            if d["state"] != "running" || Instant::now() > deadline {
                return d;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let (s, started) = srv.post("/v1/as/runs", &serde_json::json!({ "file": "bomb.as" }));
    assert_eq!(s, 202, "{started}");
    let d = wait_for(started["run"].as_str().expect("run"));
    assert_eq!(d["state"], "failed", "{d}");
    assert!(
        d["error"].as_str().unwrap_or("").starts_with("KA_AS_LIMIT"),
        "{d}"
    );
    // The server is still here, and runs the next program.
    let (s, started) = srv.post(
        "/v1/as/runs",
        &serde_json::json!({ "file": "ok.as", "input": 7 }),
    );
    assert_eq!(s, 202, "{started}");
    let d = wait_for(started["run"].as_str().expect("run"));
    assert_eq!(d["state"], "done", "{d}");
    assert_eq!(d["value"], serde_json::json!([7, 7]), "{d}");
    assert_eq!(d["trace"]["events"][0]["func"], "main", "{d}");
    assert_eq!(d["trace"]["events"][0]["events"][0]["func"], "twice", "{d}");
}

/// `keyless-host ARGS --workspace WS` with the test's config folder.
fn keyless_in(e: &Env, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(args)
        .arg("--workspace")
        .arg(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .output()
        .expect("keyless-host")
}

/// The first waiting confirmation (at most 20 s).
fn first_prompt(srv: &Server) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let (_, v) = srv.get("/v1/confirmations");
        if let Some(p) = v.as_array().and_then(|a| a.first()).cloned() {
            return p;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no confirmation");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a reply that must not ask: a confirmation that appears is declined and fails the test.
fn reply_unasked(srv: &Server, session: &str, reply: &str) -> serde_json::Value {
    std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(session, reply));
        while !t.is_finished() {
            let (_, v) = srv.get("/v1/confirmations");
            if let Some(p) = v.as_array().and_then(|a| a.first()) {
                srv.post(
                    &format!("/v1/confirmations/{}", p["id"]),
                    &serde_json::json!({ "approve": false }),
                );
                panic!("asked although a rule allows it: {p}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        t.join().expect("reply")
    })
}

/// "Always allow": the confirmation offers the exact line and the pattern keyless would
/// save; the rule is kept in the user's config folder (mode 0600), never in the workspace; a later
/// matching line runs unasked, a wider line is still asked, a Denied line is still denied, and
/// `allow remove` takes it back. A @@deletefile's confirmation shows the diff it will make, and
/// every file command's result carries its diff on the event stream and in the answer.
#[test]
fn always_allow_previews_and_diffs_through_serve() {
    let e = env();
    std::fs::write(e.ws.join("data.json"), "{\"b\": 1, \"a\": 2}\n").expect("write");
    std::fs::write(e.ws.join("gone.txt"), "keep me\n").expect("write");
    let before: Vec<_> = std::fs::read_dir(&e.ws)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|d| d.file_name())
        .collect();
    let srv = spawn(&e.ws, &e.config, &["--mode", "ask"]);
    let session = srv.session();
    let line = "python3 -m json.tool data.json";
    std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, &run_cmd(line)));
        let p = first_prompt(&srv);
        assert_eq!(p["offer"]["exact"]["text"], line, "{p}");
        assert_eq!(p["offer"]["like"]["text"], "python3 -m json.tool *", "{p}");
        assert_eq!(p["offer"]["like"]["tier"], "Execute", "{p}");
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({ "approve": true, "always": "like" }),
        );
        let v = t.join().expect("reply");
        assert!(
            v["text"].as_str().is_some_and(|t| t.contains("status: ok")),
            "{v}"
        );
    });
    // Kept in the user's config folder, private; nothing new in the workspace but keyless's .agent.
    let rules = e.config.join("keyless").join("always.json");
    let kept = std::fs::read_to_string(&rules).expect("always.json");
    assert!(kept.contains("python3 -m json.tool *"), "{kept}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&rules)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    let after: Vec<_> = std::fs::read_dir(&e.ws)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|d| d.file_name())
        .filter(|n| n != ".agent")
        .collect();
    assert_eq!(after.len(), before.len(), "{after:?}");
    // A later line the rule covers runs unasked…
    let v = reply_unasked(
        &srv,
        &session,
        &run_cmd("python3 -m json.tool data.json --sort-keys"),
    );
    assert!(
        v["text"].as_str().is_some_and(|t| t.contains("status: ok")),
        "{v}"
    );
    // …a wider one (a read outside the workspace: Risky) is asked…
    std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, &run_cmd("python3 -m json.tool /etc/hostname")));
        let p = first_prompt(&srv);
        assert_eq!(p["tier"], "Risky", "{p}");
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({ "approve": false }),
        );
        t.join().expect("reply");
    });
    // …and a Denied one is denied.
    let v = reply_unasked(
        &srv,
        &session,
        &run_cmd("python3 -m json.tool data.json && rm -rf /"),
    );
    assert!(
        v["text"]
            .as_str()
            .is_some_and(|t| t.contains("KA_COMMAND_DENIED")),
        "{v}"
    );
    // The list and the removal.
    let list = keyless_in(&e, &["allow", "list"]);
    let shown = String::from_utf8_lossy(&list.stdout);
    assert!(
        shown.contains("1. like    python3 -m json.tool *   (up to Execute)"),
        "{shown}"
    );
    let rm = keyless_in(&e, &["allow", "remove", "1"]);
    assert!(
        rm.status.success(),
        "{}",
        String::from_utf8_lossy(&rm.stderr)
    );
    std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, &run_cmd(line)));
        let p = first_prompt(&srv);
        assert_eq!(
            p["tier"], "Execute",
            "asked again once the rule is gone: {p}"
        );
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({ "approve": true }),
        );
        t.join().expect("reply");
    });
    // A line with a control character (an escape sequence could dress it up as another line in a
    // terminal) gets no "always" offer at all.
    std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, &run_cmd("touch pwned.txt #\u{1b}[2K\rRun `ls`?")));
        let p = first_prompt(&srv);
        assert!(p["offer"].is_null(), "{p}");
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({ "approve": true, "always": "exact" }),
        );
        t.join().expect("reply");
    });
    assert!(!std::fs::read_to_string(&rules)
        .expect("rules")
        .contains("pwned"));
    // The deletefile preview, and the diffs of the results.
    let del = "@@deletefile gone.txt\n@@end\n@@newfile made.txt\n<<<CONTENT\nfresh\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n";
    std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, del));
        let p = first_prompt(&srv);
        assert_eq!(p["preview"][0]["change"], "deleted", "{p}");
        assert!(
            p["preview"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("-keep me")),
            "{p}"
        );
        assert!(p["offer"].is_null(), "a deletefile offers no rule: {p}");
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({ "approve": true }),
        );
        let v = t.join().expect("reply");
        let diff = &v["diff"];
        assert_eq!(diff[0]["path"], "gone.txt", "{v}");
        assert_eq!(diff[1]["change"], "added", "{v}");
        assert_eq!(diff[1]["added"], 1, "{v}");
        assert!(
            !v["text"].as_str().unwrap_or("").contains("+fresh"),
            "no diff in the chat's text"
        );
        let (_, b) = srv.get(&format!(
            "/v1/batches/{}",
            v["batch_id"].as_str().expect("id")
        ));
        assert_eq!(
            b["commands"][1]["result"]["diff"][0]["path"], "made.txt",
            "{b}"
        );
        assert_eq!(b["outcome"], "ok", "{b}");
    });
}

/// Step-up through serve: a server that refuses the stored login for one tool
/// (403 insufficient_scope, tests/mcp/protected.mjs) makes the call wait for the user; approved,
/// the login page opens in the "browser" (curl follows the redirect back to keyless-host), the
/// call is tried again and answers. Declined, the model is told the user did not log in.
#[test]
fn a_call_that_needs_more_access_asks_the_user_to_log_in_again() {
    if !keyless_tests::mcp::available() {
        return;
    }
    let e = env();
    let record = e.ws.parent().expect("tmp").join("record.jsonl");
    // Access tokens live 2 s: the one the step-up gets is refreshed by itself afterwards.
    let remote = keyless_tests::mcp::HttpServer::protected(&record, 2);
    std::fs::create_dir_all(e.config.join("keyless")).expect("config");
    std::fs::write(
        e.config.join("keyless/keyless.json"),
        serde_json::json!({"Mcp": {"Servers": {"remote": {"Url": remote.url}}}}).to_string(),
    )
    .expect("keyless.json");
    let browser = ("BROWSER", "curl -fsSL -o /dev/null");
    let login = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["mcp", "login", "remote", "--workspace"])
        .arg(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .env(browser.0, browser.1)
        .output()
        .expect("login");
    assert!(login.status.success(), "{login:?}");
    let grants = || {
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"grant\":\"authorization_code\""))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(grants().len(), 1);
    let piece = "name: admin\ndescription: d\nmax_movements: 3\ninitial_movement: talk\nrequired_mcp: [remote]\nmovements:\n  - name: talk\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [mcp__remote__admin, mcp__remote__whoami]\n    rules: []\n";
    let srv = spawn_env(&e.ws, &e.config, &["--mode", "auto"], &[browser]);
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"piece_yaml": piece}));
    assert_eq!(s, 200, "{v}");
    let session = v["session"].as_str().expect("id").to_string();
    let admin = "@@mcp remote.admin\n<<<ARGS\n{}\nARGS>>>\n@@end\n@@next\n@@end\n@@eof\n";
    // Declined: the model hears that the user did not log in; nothing was asked of the server.
    let v = std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, admin));
        let p = first_prompt(&srv);
        assert_eq!(p["kind"], "login", "{p}");
        assert!(
            p["text"].as_str().unwrap_or("").contains("\"remote\""),
            "{p}"
        );
        assert!(
            p["reason"]
                .as_str()
                .unwrap_or("")
                .contains("mcp:tools admin"),
            "{p}"
        );
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"approve": false}),
        );
        t.join().expect("reply")
    });
    let text = v["text"].as_str().unwrap_or("");
    assert!(
        text.contains("KA_MCP_UNAVAILABLE") && text.contains("keyless-host mcp login remote"),
        "{v}"
    );
    assert_eq!(grants().len(), 1, "no login without the user");
    // Approved: logged in again with the scope the server asked for, and the call answers.
    let v = std::thread::scope(|s| {
        let t = s.spawn(|| srv.reply(&session, admin));
        let p = first_prompt(&srv);
        assert_eq!(p["kind"], "login", "{p}");
        srv.post(
            &format!("/v1/confirmations/{}", p["id"]),
            &serde_json::json!({"approve": true}),
        );
        t.join().expect("reply")
    });
    let text = v["text"].as_str().unwrap_or("");
    assert!(text.contains("admin done"), "{v}");
    let g = grants();
    assert_eq!(g.len(), 2, "{g:?}");
    assert!(g[1].contains("\"admin\""), "{g:?}");
    // The tokens never reach the model: the approved call's text holds neither the access token
    // nor the refresh token that call was made with (read now, before the refresh below
    // replaces them).
    for secret in stored_tokens(&e.config) {
        assert!(!text.contains(&secret), "{v}");
    }
    // Once that token expired, the next call refreshes it without asking: the connection was
    // started again with the client of the new login.
    std::thread::sleep(Duration::from_millis(2600));
    let v = reply_unasked(&srv, &session, admin);
    let text = v["text"].as_str().unwrap_or("");
    assert!(text.contains("admin done"), "{v}");
    let refreshed = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .matches("\"grant\":\"refresh_token\"")
        .count();
    assert!(refreshed >= 1, "no refresh");
    assert_eq!(grants().len(), 2, "no third login");
    // Nor the refreshed ones, in the text of the call that used them.
    for secret in stored_tokens(&e.config) {
        assert!(!text.contains(&secret), "{v}");
    }
}

/// The access and refresh tokens `mcp-tokens.json` holds now (at least one access token).
fn stored_tokens(config: &Path) -> Vec<String> {
    fn walk(v: &serde_json::Value, found: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match v.as_str() {
                        Some(s) if k == "access_token" || k == "refresh_token" => {
                            found.push((k.clone(), s.to_string()));
                        }
                        _ => walk(v, found),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let stored = std::fs::read_to_string(config.join("keyless/mcp-tokens.json")).expect("tokens");
    let mut found = Vec::new();
    walk(
        &serde_json::from_str(&stored).expect("tokens json"),
        &mut found,
    );
    assert!(
        found.iter().any(|(k, _)| k == "access_token"),
        "no access token in {stored}"
    );
    found.into_iter().map(|(_, t)| t).collect()
}

/// What `serve.json` names (the serve the popup and `as run` find).
fn serve_json(config: &Path) -> serde_json::Value {
    let path = config.join("keyless").join("serve.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("serve.json")
}

#[cfg(unix)]
fn stop(srv: &mut Server) {
    let killed = Command::new("kill")
        .args(["-TERM", &srv.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    assert!(srv.child.wait().expect("wait").success());
}

#[cfg(unix)]
#[test]
fn one_serve_per_workspace() {
    let e = env();
    let first = spawn(&e.ws, &e.config, &[]);
    assert_eq!(serve_json(&e.config)["port"], first.port);
    // A second serve for the same folder, on another port (what the port error suggests):
    // it says where the first one listens and ends; the first keeps serving and keeps serve.json.
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["serve", "--port", "0", "--workspace"])
        .arg(&e.ws)
        .env("XDG_CONFIG_HOME", &e.config)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("KA_CONFIG_VALIDATION"), "{err}");
    assert!(err.contains("already runs for"), "{err}");
    assert!(
        err.contains(&format!("http://127.0.0.1:{}", first.port)),
        "{err}"
    );
    assert!(err.contains(&format!("pid {}", first.child.id())), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    assert_eq!(first.get("/v1/status").0, 200);
    assert_eq!(serve_json(&e.config)["port"], first.port);

    // A serve for another folder takes serve.json while it runs and gives it back when it ends.
    let other = e.ws.with_file_name("other");
    std::fs::create_dir_all(&other).expect("other");
    let mut second = spawn(&other, &e.config, &[]);
    assert_eq!(serve_json(&e.config)["port"], second.port);
    stop(&mut second);
    assert_eq!(serve_json(&e.config)["port"], first.port);

    // A serve that is gone without a word (killed) holds nothing: the next one takes over.
    drop(first);
    let again = spawn(&e.ws, &e.config, &[]);
    assert_ne!(again.port, 0);
    assert_eq!(again.get("/v1/status").0, 200);
    assert_eq!(serve_json(&e.config)["port"], again.port);
}

/// Ctrl-C in serve cancels the running command (its session resumable) and serve ends, long
/// before the command would have: the batch's result is KA_CANCELLED, recorded for the next serve.
#[cfg(unix)]
#[test]
fn ctrl_c_cancels_the_running_command_and_serve_ends() {
    let e = env();
    let mut srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let session = srv.session();
    let events = srv.events();
    let body =
        serde_json::json!({ "reply": run_cmd("echo started; sleep 30; echo finished > late.txt") })
            .to_string();
    let _pending = srv.send_reply_unread(&session, &body);
    events.wait_for("started");
    let asked = Instant::now();
    let sent = Command::new("kill")
        .args(["-INT", &srv.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    // `sleep 30` would keep it for 30 s; cancelled, serve ends on its own well before.
    let mut ended = None;
    while asked.elapsed() < Duration::from_secs(20) {
        if let Some(status) = srv.child.try_wait().expect("wait") {
            ended = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = ended.expect("serve still runs 20 s after Ctrl-C");
    eprintln!("serve ended {:?} after Ctrl-C", asked.elapsed());
    assert!(status.success(), "{status}");
    assert!(!e.ws.join("late.txt").exists());
    // The next serve has the batch, cancelled, and the session goes on from it.
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.get(&format!("/v1/sessions/{session}"));
    assert_eq!(s, 200, "{v}");
    let id = v["batches"][0]["id"]
        .as_str()
        .expect("batch id")
        .to_string();
    let (_, b) = srv.get(&format!("/v1/batches/{id}"));
    assert_eq!(
        b["commands"][0]["result"]["code"].as_str(),
        Some("KA_CANCELLED"),
        "{b}"
    );
    let (s, v) = srv.post("/v1/sessions", &serde_json::json!({"resume": session}));
    assert_eq!(s, 200, "{v}");
}

/// A second Ctrl-C ends serve at once, whatever is still finishing.
#[cfg(unix)]
#[test]
fn a_second_ctrl_c_quits_at_once() {
    let e = env();
    let mut srv = spawn(&e.ws, &e.config, &[]);
    for _ in 0..2 {
        let sent = Command::new("kill")
            .args(["-INT", &srv.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
    }
    let status = srv.child.wait().expect("wait");
    // Either the first Ctrl-C's clean exit (0) or the second's (130): never the default
    // action of SIGINT (killed by the signal).
    assert!(
        status.code() == Some(0) || status.code() == Some(130),
        "{status}"
    );
}
