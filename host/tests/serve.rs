//! `keyless-host serve` over real sockets on 127.0.0.1:0.
#![allow(clippy::expect_used)] // the Server helper fails the test loudly

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args(["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut first = String::new();
        BufReader::new(child.stdout.as_mut().expect("stdout"))
            .read_line(&mut first)
            .expect("banner");
        let addr = first.rsplit("http://").next().expect("address").trim();
        assert!(addr.starts_with("127.0.0.1:"), "{first}");
        let port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        Server { child, port }
    }

    /// Sends one raw HTTP/1.1 request and returns (status, body).
    fn request(
        &self,
        method: &str,
        path: &str,
        host: Option<&str>,
        content_type: Option<&str>,
        body: &[u8],
    ) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let host = host.map_or_else(|| format!("127.0.0.1:{}", self.port), str::to_string);
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        if let Some(ct) = content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).expect("write");
        let _ = s.write_all(body);
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

    fn json(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        let (status, text) = self.request(
            "POST",
            path,
            None,
            Some("application/json"),
            body.as_bytes(),
        );
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn status_check_policy_prompt() {
    let srv = Server::start();
    let (status, body) = srv.request("GET", "/v1/status", None, None, b"");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["name"], "keyless-host");

    let reply = std::fs::read_to_string(keyless_tests::corpus_dir().join("err_many_problems.txt"))
        .expect("reply");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(keyless_tests::corpus_dir().join("err_many_problems.json"))
            .expect("json"),
    )
    .expect("json");
    let (status, v) = srv.json(
        "/v1/check",
        &serde_json::json!({ "reply": reply }).to_string(),
    );
    assert_eq!(status, 200);
    assert_eq!(v, expected, "the server answers exactly like check --json");

    let (status, v) = srv.json("/v1/check", r#"{"reply":"@@mkdir a\n@@end\n@@mkdir b\n@@end\n@@next\n@@end\n@@eof\n","settings":{"pace":"Step"}}"#);
    assert_eq!(status, 200);
    assert_eq!(v["commands"][1]["run"], false);

    let (status, v) = srv.json(
        "/v1/policy",
        r#"{"command":"git push --force","mode":"Auto"}"#,
    );
    assert_eq!((status, v["decision"].as_str()), (200, Some("deny")));

    let (status, text) = srv.request("GET", "/v1/prompt?pace=step", None, None, b"");
    assert_eq!(status, 200);
    assert!(text.contains("Pace is Step"));
}

#[test]
fn hostile_requests_are_refused_with_codes() {
    let srv = Server::start();
    // DNS rebinding: a foreign Host.
    let (status, body) = srv.request("GET", "/v1/status", Some("evil.example:7457"), None, b"");
    assert_eq!(status, 403);
    assert!(body.contains("KA_COMMAND_DENIED"), "{body}");
    // Right host name, wrong port.
    let (status, _) = srv.request("GET", "/v1/status", Some("127.0.0.1:1"), None, b"");
    assert_eq!(status, 403);
    // text/plain bodies (the CSRF form a web page can send without CORS).
    let (status, body) = srv.request(
        "POST",
        "/v1/check",
        None,
        Some("text/plain"),
        br#"{"reply":"x"}"#,
    );
    assert_eq!(status, 415, "{body}");
    // Malformed JSON, unknown fields, bad settings.
    let (status, v) = srv.json("/v1/check", "{not json");
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("KA_CONFIG_INVALID"))
    );
    let (status, _) = srv.json("/v1/check", r#"{"reply":"x","surprise":1}"#);
    assert_eq!(status, 400);
    let (status, v) = srv.json(
        "/v1/check",
        r#"{"reply":"x","settings":{"limits":{"MaxCommandsPerResponse":0}}}"#,
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (422, Some("KA_CONFIG_VALIDATION"))
    );
    // Oversized body.
    let big = format!("{{\"reply\":\"{}\"}}", "a".repeat(2 << 20));
    let (status, _) = srv.request(
        "POST",
        "/v1/check",
        None,
        Some("application/json"),
        big.as_bytes(),
    );
    assert_eq!(status, 413);
    // Unknown route.
    let (status, body) = srv.request("GET", "/v1/nope", None, None, b"");
    assert_eq!(status, 404);
    assert!(body.contains("\"code\""), "{body}");
}

#[cfg(unix)]
#[test]
fn sigterm_shuts_down_gracefully() {
    let mut srv = Server::start();
    let (status, _) = srv.request("GET", "/v1/status", None, None, b"");
    assert_eq!(status, 200);
    let killed = Command::new("kill")
        .args(["-TERM", &srv.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = srv.child.wait().expect("wait");
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    srv.child
        .stdout
        .as_mut()
        .expect("stdout")
        .read_to_string(&mut rest)
        .expect("read");
    assert!(rest.contains("shutting down"), "{rest}");
}

#[test]
fn port_in_use_is_a_clear_error() {
    let srv = Server::start();
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["serve", "--port", &srv.port.to_string()])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("KA_CONFIG_VALIDATION") && err.contains("try --port"),
        "{err}"
    );
}
