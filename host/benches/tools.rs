//! MCP and SSH figures, printed (nothing about time is asserted). Run with `cargo xtask bench`.
//!
//! - MCP: time to the first tool result from nothing running (what a session start with a
//!   required server adds: spawn, initialize, tools/list, one call), then the call overhead: a
//!   call through keyless's client (rmcp) against the same request written by hand to the
//!   server's stdin and its answer read back (the server's own time plus the pipe).
//! - SSH: one `true` through keyless's runner against bare `ssh` with the same options, each a
//!   fresh connection to a real sshd on 127.0.0.1 (keyless never shares connections).
//! - The launcher: what finding a program where the model cannot write (its `#!` interpreter
//!   included) and cutting PATH and the environment add to starting `git --version`, against a
//!   plain spawn of the same program.
//! - The limits: what a command's control group costs (made, entered, removed), and a sandboxed
//!   `true` with its limits, by the backend this machine has.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken setup should stop the benchmark

use keyless_core::mcp::ServerConfig;
use keyless_core::ssh::Connection;
use keyless_host::exec::remote::{self, SshOptions};
use keyless_host::mcp::Pool;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn everything() -> BTreeMap<String, ServerConfig> {
    let mut servers = BTreeMap::new();
    servers.insert(
        "everything".to_string(),
        ServerConfig {
            command: Some("node".into()),
            args: vec![
                keyless_tests::mcp::server("server-everything")
                    .display()
                    .to_string(),
                "stdio".into(),
            ],
            ..ServerConfig::default()
        },
    );
    servers
}

fn args(message: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let mut m = serde_json::Map::new();
    m.insert("message".into(), message.into());
    Some(m)
}

fn mcp() {
    if !keyless_tests::mcp::available() {
        return;
    }
    let cwd = std::env::temp_dir();
    let mut firsts = Vec::new();
    for i in 0..5 {
        let t = Instant::now();
        let pool = Pool::new(everything(), cwd.clone()).expect("pool");
        let out = pool
            .call(
                "bench",
                "everything",
                "echo",
                args("hi"),
                Duration::from_secs(30),
                &mut keyless_host::mcp::Nobody,
            )
            .expect("first call");
        assert!(out.text.contains("hi"));
        firsts.push(t.elapsed());
        drop(pool);
        let _ = i;
    }
    println!(
        "MCP, first tool result from nothing running (server-everything over stdio; median of 5): {:>7.1} ms",
        ms(median(firsts))
    );
    let pool = Pool::new(everything(), cwd.clone()).expect("pool");
    pool.tools("bench", "everything").expect("start");
    let calls: Vec<Duration> = (0..200)
        .map(|i| {
            let t = Instant::now();
            pool.call(
                "bench",
                "everything",
                "echo",
                args(&format!("m{i}")),
                Duration::from_secs(30),
                &mut keyless_host::mcp::Nobody,
            )
            .expect("call");
            t.elapsed()
        })
        .collect();
    let through = median(calls);
    let by_hand = raw_stdio_calls(200);
    println!(
        "MCP, one echo call through keyless's client (median of 200):                         {:>7.3} ms",
        ms(through)
    );
    println!(
        "MCP, the same request by hand on the server's stdio (its own time + pipe; median of 200): {:>7.3} ms",
        ms(by_hand)
    );
    println!(
        "MCP, client overhead per call:                                                       {:>7.3} ms",
        ms(through.saturating_sub(by_hand))
    );
}

/// The echo request written to server-everything's stdin as JSON-RPC lines, timed to its answer.
fn raw_stdio_calls(n: usize) -> Duration {
    let mut child = Command::new("node")
        .arg(keyless_tests::mcp::server("server-everything"))
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut send = |text: String, wait_for: Option<u64>| -> Duration {
        let t = Instant::now();
        input.write_all(text.as_bytes()).expect("write");
        input.write_all(b"\n").expect("write");
        input.flush().expect("flush");
        if let Some(id) = wait_for {
            loop {
                line.clear();
                output.read_line(&mut line).expect("read");
                let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                if v["id"] == id {
                    break;
                }
            }
        }
        t.elapsed()
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})
        .to_string(),
        Some(0),
    );
    send(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        None,
    );
    let times: Vec<Duration> = (1..=n as u64)
        .map(|id| {
            send(
                serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": format!("m{id}")}}})
                .to_string(),
                Some(id),
            )
        })
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    median(times)
}

fn ssh() {
    if !keyless_tests::sshd::available() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let sshd = keyless_tests::sshd::Sshd::start(tmp.path());
    let conn = Connection {
        id: "00000000-0000-4000-8000-000000000000".into(),
        name: "bench".into(),
        host: "127.0.0.1".into(),
        user: sshd.user.clone(),
        port: sshd.port,
        owner: sshd.user.clone(),
        grants: vec!["*".into()],
    };
    let opts = SshOptions {
        config_file: Some(sshd.client_config.clone()),
        program: None,
        workspace: None,
    };
    let through: Vec<Duration> = (0..20)
        .map(|_| {
            let t = Instant::now();
            let out = remote::exec(&conn, &opts, "true", Duration::from_secs(30), 8000, |_| {
                true
            })
            .expect("ssh");
            assert_eq!(out.exit_code, Some(0), "{}", out.output);
            t.elapsed()
        })
        .collect();
    let bare: Vec<Duration> = (0..20)
        .map(|_| {
            let t = Instant::now();
            let status = Command::new("ssh")
                .arg("-F")
                .arg(&sshd.client_config)
                .args([
                    "-p",
                    &sshd.port.to_string(),
                    "-l",
                    &sshd.user,
                    "127.0.0.1",
                    "true",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("ssh");
            assert!(status.success());
            t.elapsed()
        })
        .collect();
    println!(
        "SSH exec round trip of `true` through keyless's runner (median of 20):  {:>7.1} ms",
        ms(median(through))
    );
    println!(
        "bare `ssh -p PORT -l USER 127.0.0.1 true`, same key and known_hosts (median of 20): {:>7.1} ms",
        ms(median(bare))
    );
}

/// The sandbox wrapper is this binary (`/proc/self/exe __sandbox …`): it acts as the host then.
fn main() -> std::process::ExitCode {
    if let Some(code) = keyless_host::cli::wrapper_entry() {
        return code;
    }
    bench();
    std::process::ExitCode::SUCCESS
}

fn bench() {
    launcher();
    limits();
    mcp();
    ssh();
}

/// The launcher's cost per program it starts.
fn launcher() {
    let ws = tempfile::tempdir().expect("ws");
    let launcher = keyless_host::launch::Launcher::new(Some(ws.path()));
    let Ok(git) = launcher.program("git") else {
        println!("launcher: no git on this machine; skipped");
        return;
    };
    let resolve: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            let l = keyless_host::launch::Launcher::new(Some(ws.path()));
            let _ = l.program("git").expect("git");
            t.elapsed()
        })
        .collect();
    let through: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            let l = keyless_host::launch::Launcher::new(Some(ws.path()));
            let p = l.program("git").expect("git");
            let out = l
                .command(&p, keyless_host::launch::Purpose::Git)
                .arg("--version")
                .output()
                .expect("git");
            assert!(out.status.success());
            t.elapsed()
        })
        .collect();
    let bare: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(&git.path)
                .arg("--version")
                .output()
                .expect("git");
            assert!(out.status.success());
            t.elapsed()
        })
        .collect();
    println!(
        "launcher: resolve git in trusted PATH folders, #! checked (median of 200):      {:>7.3} ms",
        ms(median(resolve))
    );
    println!(
        "launcher: `git --version` through the launcher (resolve, cut PATH and env; median of 30): {:>7.2} ms",
        ms(median(through))
    );
    println!(
        "plain spawn of the same git --version (median of 30):                          {:>7.2} ms",
        ms(median(bare))
    );
}

/// The control group (or resource limits) of each sandboxed command.
fn limits() {
    use keyless_host::exec::limits::{backend, CommandGroup, Limits};
    let limits = Limits::new(1024, None);
    println!("limits: {}", backend().describe());
    let group: Vec<Duration> = (0..100)
        .map(|_| {
            let t = Instant::now();
            drop(CommandGroup::new(limits));
            t.elapsed()
        })
        .collect();
    println!(
        "limits: a command's group made and removed (median of 100):                    {:>7.3} ms",
        ms(median(group))
    );
    let ws = tempfile::tempdir().expect("ws");
    let spec = keyless_host::exec::sandbox::spec_for(ws.path(), false, false);
    let run = |spec: &keyless_host::exec::sandbox::Spec| -> Vec<Duration> {
        (0..20)
            .map(|_| {
                let t = Instant::now();
                let out = keyless_host::exec::shell::run(
                    "true",
                    Some(spec),
                    ws.path(),
                    Duration::from_secs(30),
                    1000,
                    |_| true,
                )
                .expect("run");
                assert_eq!(out.exit_code, Some(0), "{}", out.output);
                t.elapsed()
            })
            .collect()
    };
    println!(
        "limits: a sandboxed `true` with its limits, guard included (median of 20):     {:>7.2} ms",
        ms(median(run(&spec)))
    );
}
