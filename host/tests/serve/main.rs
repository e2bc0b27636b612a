//! `keyless-host serve` over real sockets on 127.0.0.1:0, with a real workspace: pairing, every
//! hostile request refused, sessions, exactly-once retries, serialized submits, confirmations,
//! the event stream, cancel, and a restart in the middle of a session.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // the helpers fail the test loudly

mod routes;
mod sessions;
mod tools;

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
