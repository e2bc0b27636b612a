//! A bounded load test on loopback: the release `keyless-host serve` on a temp workspace, 8
//! concurrent clients each with its own session submitting small batches, plus the pure check
//! route. Prints requests/s, p50/p99 latency and the host's idle and peak memory.
//! Run with `cargo xtask bench` (it builds the host and sets KEYLESS_HOST_BIN).
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // a broken setup should stop the benchmark

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
const BATCHES_PER_CLIENT: usize = 25;
const CHECKS_PER_CLIENT: usize = 250;
const IDLE_CONNECTIONS: usize = 5_000;
const STATUS_UNDER_FLOOD: usize = 200;

/// This client opens thousands of sockets: lift its soft file limit to the hard one.
fn raise_file_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

fn request(port: u16, token: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        out.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default(),
    )
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn report(name: &str, mut lat: Vec<Duration>, wall: Duration) {
    lat.sort();
    #[allow(clippy::cast_precision_loss)]
    let rps = lat.len() as f64 / wall.as_secs_f64();
    println!(
        "{name:<28} {:>5} requests in {wall:>8.2?}: {rps:>7.0} req/s, p50 {:>8.2?}, p99 {:>8.2?}",
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
}

fn main() {
    let bin = keyless_tests::bench::host_bin();
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let mut child = Command::new(&bin)
        .args(["serve", "--port", "0", "--mode", "auto", "--workspace"])
        .arg(&ws)
        .env("XDG_CONFIG_HOME", tmp.path().join("config"))
        .env("RUST_LOG", "keyless_host=warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e} (run cargo xtask bench)"));
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let banner = keyless_tests::serve::read_banner(&mut reader);
    let (port, token) = (banner.port, banner.token);
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = reader.read_to_string(&mut sink);
    });
    std::thread::sleep(Duration::from_secs(1));
    let pid = child.id();
    println!("idle host: RSS {} KiB", rss_kib(pid, "VmRSS:"));

    // Pure route: parse + plan a reply, 8 clients at once.
    let reply = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/corpus/ok_seed_example.txt"
    ))
    .expect("reply");
    let body = serde_json::json!({ "reply": reply }).to_string();
    let start = Instant::now();
    let lat: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (token, body) = (&token, &body);
                s.spawn(move || {
                    (0..CHECKS_PER_CLIENT)
                        .map(|_| {
                            let t = Instant::now();
                            assert_eq!(request(port, token, "POST", "/v1/check", body).0, 200);
                            t.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client"))
            .collect()
    });
    report("POST /v1/check", lat, start.elapsed());

    // Sessions: each client its own session, small batches (serialised per workspace).
    let start = Instant::now();
    let lat: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let token = &token;
                s.spawn(move || {
                    let (_, b) = request(port, token, "POST", "/v1/sessions", "{}");
                    let v: serde_json::Value = serde_json::from_str(&b).expect("session");
                    let session = v["session"].as_str().expect("id").to_string();
                    (0..BATCHES_PER_CLIENT)
                        .map(|i| {
                            let reply = format!("@@mkdir c{c}/d{i}\n@@end\n@@next\n@@end\n@@eof\n");
                            let body = serde_json::json!({ "reply": reply }).to_string();
                            let t = Instant::now();
                            let (st, b) = request(
                                port,
                                token,
                                "POST",
                                &format!("/v1/sessions/{session}/replies"),
                                &body,
                            );
                            assert_eq!(st, 200, "{b}");
                            t.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client"))
            .collect()
    });
    report("POST …/replies (mkdir)", lat, start.elapsed());
    println!(
        "host after load: RSS {} KiB, peak {} KiB",
        rss_kib(pid, "VmRSS:"),
        rss_kib(pid, "VmHWM:")
    );

    // 5,000 connections that never send a request, then a client asking for /v1/status.
    raise_file_limit();
    let mut idle = Vec::new();
    for _ in 0..IDLE_CONNECTIONS {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => idle.push(c),
            Err(e) => {
                println!("opened {} idle connections, then: {e}", idle.len());
                break;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let lat: Vec<Duration> = (0..STATUS_UNDER_FLOOD)
        .map(|_| {
            let t = Instant::now();
            assert_eq!(request(port, &token, "GET", "/v1/status", "").0, 200);
            t.elapsed()
        })
        .collect();
    report(
        &format!("GET /v1/status, {} idle", idle.len()),
        lat,
        start.elapsed(),
    );
    println!(
        "host with {} idle connections: RSS {} KiB, peak {} KiB",
        idle.len(),
        rss_kib(pid, "VmRSS:"),
        rss_kib(pid, "VmHWM:")
    );
    drop(idle);
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "host after the idle connections closed: RSS {} KiB",
        rss_kib(pid, "VmRSS:")
    );
    let _ = child.kill();
    let _ = child.wait();
}
