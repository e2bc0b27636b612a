//! The MCP client against real servers from npm: `@modelcontextprotocol/server-filesystem` and
//! `server-everything` over stdio, and server-everything over Streamable HTTP on 127.0.0.1.
//! `mcp list`/`mcp call`, a piece's `@@mcp` (offered tools with their schemas, read-only tools of
//! a trusted server run unasked, others confirmed, tools outside the movement refused), a missing
//! required server stopping the session, a timeout, and `mcp://` in an `.as` program. A server of
//! the 2026-07-28 revision (tests/mcp/modern.mjs, on the official SDK v2) beside them.
#![allow(clippy::expect_used, clippy::panic)]
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test

mod common;

use common::{block, reply, Fixture};
use keyless_tests::mcp::{self, HttpServer};
use std::process::Output;

fn setup(http: Option<&HttpServer>) -> Option<Fixture> {
    if !mcp::available() {
        return None;
    }
    let fx = Fixture::new();
    let ws = fx.ws();
    let mut servers = serde_json::json!({
        "files": {
            "Command": "node",
            "Args": [mcp::server("server-filesystem"), ws],
            "TrustReadOnly": true
        },
        "everything": {
            "Command": "node",
            "Args": [mcp::server("server-everything"), "stdio"],
            "Env": {"KEYLESS_TEST_VALUE": "declared"}
        },
        "broken": {"Command": "/nonexistent/mcp-server"}
    });
    if let Some(h) = http {
        servers["remote"] = serde_json::json!({
            "Url": h.url,
            "Headers": {"X-Keyless-Test": "${KEYLESS_TEST_HEADER}"}
        });
    }
    std::fs::create_dir_all(fx.user_config()).expect("config");
    // The user's own keyless.json: trusted (a workspace file would need approval).
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({ "Mcp": { "Servers": servers } }).to_string(),
    )
    .expect("keyless.json");
    Some(fx)
}

/// Writes the `.as` program `source` as `name` in the workspace and runs it with `extra` arguments.
fn as_run(fx: &Fixture, name: &str, source: &str, extra: &[&str]) -> Output {
    let program = fx.ws().join(name);
    std::fs::write(&program, source).expect("program");
    fx.host()
        .args(["as", "run"])
        .arg(&program)
        .args(extra)
        .arg("--workspace")
        .arg(fx.ws())
        .output()
        .expect("as run")
}

/// What a run printed, standard output then standard error.
fn everything_said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn host(fx: &Fixture, args: &[&str]) -> Output {
    fx.host()
        .args(args)
        .arg("--workspace")
        .arg(fx.ws())
        .env("KEYLESS_TEST_HEADER", "h-value")
        .env("SECRET_TOKEN", "must-not-leak")
        .output()
        .expect("host")
}

const PIECE: &str = "name: mcp-test
description: MCP tools under test
max_movements: 3
initial_movement: look
required_mcp: [files, everything]
movements:
  - name: look
    edit: false
    persona: a reader
    instruction: read files
    allowed_tools: [Read, mcp__files__*, mcp__everything__echo, mcp__everything__trigger-long-running-operation]
    rules: []
";

fn run_piece(fx: &Fixture, piece: &str, replies: &[&str], extra: &[&str]) -> String {
    let file = fx.root.join("piece.yaml");
    std::fs::write(&file, piece).expect("piece");
    let (out, text) = fx.run(
        replies,
        &[&["--piece", &file.display().to_string()], extra].concat(),
    );
    format!(
        "{text}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    )
}

fn call(tool: &str, args: &str) -> String {
    reply(&[block(&format!("mcp {tool}"), &[("ARGS", args)])])
}

#[test]
fn mcp_list_and_call_reach_stdio_and_http_servers() {
    let http = HttpServer::start();
    let Some(fx) = setup(Some(&http)) else { return };
    let out = host(&fx, &["mcp", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let by = |name: &str| {
        list.as_array()
            .expect("list")
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .expect("server")
    };
    assert_eq!(by("files")["state"], "running", "{list}");
    assert_eq!(by("remote")["state"], "running", "{list}");
    assert!(by("broken")["state"]
        .as_str()
        .expect("state")
        .starts_with("KA_MCP_UNAVAILABLE"));
    // One server down: the listing says so in its exit status.
    assert_eq!(out.status.code(), Some(1));
    // readOnlyHint counts only for a server keyless.json trusts.
    let tools = by("files")["tools"].clone();
    let tool = |n: &str| {
        tools
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .expect("tool")
    };
    assert_eq!(tool("read_text_file")["read_only"], true);
    assert_eq!(tool("write_file")["read_only"], false);
    assert!(by("everything")["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .all(|t| t["read_only"] == false));
    // A call over Streamable HTTP.
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "remote.echo",
            "--args",
            r#"{"message":"over http"}"#,
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Echo: over http"),
        "{out:?}"
    );
    // A stdio server sees the variables it was given, not the host's secrets.
    let out = host(&fx, &["mcp", "call", "everything.get-env"]);
    let env = String::from_utf8_lossy(&out.stdout);
    assert!(env.contains("declared"), "{env}");
    assert!(!env.contains("must-not-leak"), "{env}");
    // Roots: the workspace folder, and nothing else.
    let out = host(&fx, &["mcp", "call", "everything.get-roots-list"]);
    let roots = String::from_utf8_lossy(&out.stdout);
    let ws = fx.ws().canonicalize().expect("ws");
    assert!(
        roots.contains(&format!("file://{}/", ws.display())),
        "{roots}"
    );
    assert!(
        roots.contains("1 root") || roots.matches("file://").count() == 1,
        "{roots}"
    );
    // A tool that declares an outputSchema answers with its structured content.
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "everything.get-structured-content",
            "--args",
            r#"{"location":"New York"}"#,
        ],
    );
    let structured: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
    assert!(structured["temperature"].is_number(), "{structured}");
    // Errors carry their codes.
    let out = host(&fx, &["mcp", "call", "everything.nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_MCP_UNKNOWN_TOOL"));
    let out = host(&fx, &["mcp", "call", "ghost.x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_MCP_NOT_CONFIGURED"));
}

#[test]
fn a_piece_offers_and_runs_its_mcp_tools() {
    let Some(fx) = setup(None) else { return };
    let readme = fx.ws().join("README.md").display().to_string();
    let read = call(
        "files.read_text_file",
        &format!(r#"{{"path": "{readme}"}}"#),
    );
    // Ask mode: a read-only tool of a trusted server runs unasked.
    let text = run_piece(&fx, PIECE, &[&read], &["--mode", "ask"]);
    assert!(text.contains("files.read_text_file (read-only)"), "{text}");
    assert!(text.contains("ARGS schema: {"), "{text}");
    assert!(text.contains("# demo"), "{text}");
    // A tool that writes is Risky: confirmed in Ask mode (declined here, so nothing is written).
    let target = fx.ws().join("made-by-mcp.txt").display().to_string();
    let write = call(
        "files.write_file",
        &format!(r#"{{"path": "{target}", "content": "x"}}"#),
    );
    let text = run_piece(&fx, PIECE, &[&write], &["--mode", "ask"]);
    assert!(text.contains("KA_COMMAND_DECLINED"), "{text}");
    assert!(!fx.ws().join("made-by-mcp.txt").exists());
    let text = run_piece(&fx, PIECE, &[&write], &["--mode", "auto"]);
    assert!(text.contains("status: ok"), "{text}");
    assert_eq!(fx.read("made-by-mcp.txt"), b"x");
    // A tool of a required server that the movement does not list is refused.
    let env = call("everything.get-env", "{}");
    let text = run_piece(&fx, PIECE, &[&env], &["--mode", "auto"]);
    assert!(
        text.contains("KA_COMMAND_DENIED") && text.contains("not offered"),
        "{text}"
    );
    // ARGS must be one JSON object.
    let bad = call("everything.echo", "[1, 2]");
    let text = run_piece(&fx, PIECE, &[&bad], &["--mode", "auto"]);
    assert!(text.contains("ARGS must be one JSON object"), "{text}");
    // A tool error comes back with its own code.
    let missing = call("files.read_text_file", r#"{"path": "/nonexistent/x"}"#);
    let text = run_piece(&fx, PIECE, &[&missing], &["--mode", "auto"]);
    assert!(text.contains("KA_MCP_TOOL_FAILED"), "{text}");
    // A call slower than its timeout is stopped.
    let slow = reply(&[block(
        "mcp everything.trigger-long-running-operation timeout=1",
        &[("ARGS", r#"{"duration": 20, "steps": 2}"#)],
    )]);
    let t = std::time::Instant::now();
    let text = run_piece(&fx, PIECE, &[&slow], &["--mode", "auto"]);
    assert!(text.contains("KA_TIMEOUT"), "{text}");
    assert!(t.elapsed() < std::time::Duration::from_secs(15));
}

#[test]
fn a_missing_required_server_stops_the_session_at_start() {
    let Some(fx) = setup(None) else { return };
    let ghost = PIECE.replace("[files, everything]", "[files, everything, ghost]");
    let text = run_piece(
        &fx,
        &ghost,
        &[&call("files.list_allowed_directories", "{}")],
        &[],
    );
    assert!(
        text.contains("KA_MCP_NOT_CONFIGURED") && text.contains("ghost"),
        "{text}"
    );
    assert!(!text.contains("session "), "no session may start: {text}");
    let broken = PIECE.replace("[files, everything]", "[files, everything, broken]");
    let text = run_piece(
        &fx,
        &broken,
        &[&call("files.list_allowed_directories", "{}")],
        &[],
    );
    assert!(text.contains("KA_MCP_UNAVAILABLE"), "{text}");
    // Validation: a tool of a server the piece does not require is refused.
    let file = fx.root.join("bad.yaml");
    std::fs::write(
        &file,
        PIECE.replace("mcp__everything__echo", "mcp__other__echo"),
    )
    .expect("piece");
    let out = fx
        .host()
        .args(["piece", "validate"])
        .arg(&file)
        .output()
        .expect("check");
    let all = everything_said(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("KA_PIECE_UNKNOWN_TOOL") && all.contains("other"),
        "{all}"
    );
}

#[test]
fn an_as_program_calls_mcp_tools() {
    let Some(fx) = setup(None) else { return };
    let out = as_run(
        &fx,
        "echo.as",
        "import tool Echo from \"mcp://everything/echo\"\nimport tool Sum from \"mcp://everything/get-sum\"\n\nmain agent Caller {\n    main func(input) {\n        said = Echo.call({ message: input })\n        sum = Sum.call({ a: 2, b: 40 })\n        return { said: said, sum: sum }\n    }\n}\n",
        &["--input", "\"hello\""],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Echo: hello"), "{text}");
    assert!(text.contains("42"), "{text}");
}

#[test]
fn a_server_the_model_could_write_is_never_started() {
    let Some(fx) = setup(None) else { return };
    // Files in the workspace are the model's: a script given to node, or a program there.
    let canary = fx.root.join("canary");
    let script = fx.ws().join("evil.js");
    std::fs::write(
        &script,
        format!(
            "require('fs').writeFileSync({:?}, 'ran')",
            canary.display().to_string()
        ),
    )
    .expect("script");
    let program = fx.ws().join("server.sh");
    std::fs::write(&program, format!("#!/bin/sh\ntouch {}\n", canary.display())).expect("program");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({"Mcp": {"Servers": {
            "script": {"Command": "node", "Args": [script]},
            "program": {"Command": program},
            "relative": {"Command": "./server.sh"}
        }}})
        .to_string(),
    )
    .expect("keyless.json");
    let out = host(&fx, &["mcp", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for s in list.as_array().expect("list") {
        let state = s["state"].as_str().expect("state");
        assert!(state.starts_with("KA_MCP_UNAVAILABLE"), "{s}");
    }
    let text = list.to_string();
    assert!(text.contains("is a file in the workspace"), "{text}");
    assert!(text.contains("server.sh is in the workspace"), "{text}");
    assert!(text.contains("only by name or absolute path"), "{text}");
    assert!(!canary.exists(), "a workspace file ran as an MCP server");
}

/// What keyless tells a server (recorded by tests/mcp/recorder.mjs, a server on the official
/// TypeScript SDK): `clientInfo` keyless-host and its version, protocol 2025-11-25, the roots
/// capability and the workspace as the one root; and a call it stops waiting for (its timeout)
/// is cancelled with `notifications/cancelled` for that request.
#[test]
fn keyless_introduces_itself_and_cancels_what_it_stops_waiting_for() {
    if !mcp::available() {
        return;
    }
    let fx = Fixture::new();
    let record = fx.home().join("record.jsonl");
    let recorder = mcp::own_server("recorder.mjs");
    std::fs::create_dir_all(fx.user_config()).expect("config");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({ "Mcp": { "Servers": { "recorder": {
            "Command": "node",
            "Args": [recorder],
            "Env": {"KEYLESS_RECORD": record}
        }}}})
        .to_string(),
    )
    .expect("keyless.json");
    let out = host(&fx, &["mcp", "call", "recorder.roots"]);
    assert!(out.status.success(), "{out:?}");
    let roots: serde_json::Value = serde_json::from_slice(&out.stdout).expect("roots");
    let ws = fx.ws().canonicalize().expect("ws");
    assert_eq!(
        roots,
        serde_json::json!([{"uri": format!("file://{}/", ws.display()), "name": "workspace"}])
    );
    let out = host(&fx, &["mcp", "call", "recorder.wait", "--timeout", "1"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("KA_TIMEOUT"),
        "{out:?}"
    );
    // The server learns of it (the notification may land just after the host exits).
    let lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !lines().iter().any(|l| l.get("aborted").is_some())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let seen = lines();
    let init = seen
        .iter()
        .find(|m| m["method"] == "initialize")
        .expect("initialize");
    assert_eq!(
        init["params"]["clientInfo"]["name"], "keyless-host",
        "{init}"
    );
    assert_eq!(
        init["params"]["clientInfo"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{init}"
    );
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(
        init["params"]["capabilities"]["roots"].is_object(),
        "{init}"
    );
    assert!(
        init["params"]["capabilities"].get("elicitation").is_none(),
        "{init}"
    );
    let call = seen
        .iter()
        .rev()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "wait")
        .expect("the call");
    let cancelled = seen
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled in {seen:?}"));
    assert_eq!(cancelled["params"]["requestId"], call["id"], "{cancelled}");
    // Progress is shown live, as the server's words, their escape sequences made visible.
    let out = host(&fx, &["mcp", "call", "recorder.steps"]);
    let said = String::from_utf8_lossy(&out.stderr);
    for i in 1..=3 {
        assert!(
            said.contains(&format!("[recorder] progress {i}/3: step {i}<U+001B>[2J\n")),
            "{said}"
        );
    }
    // A server whose tools change says so; the next use lists them again (one `.as` run, one
    // pool: `extra` exists only after `grow`).
    let out = as_run(
        &fx,
        "grow.as",
        "import tool Grow from \"mcp://recorder/grow\"\nimport tool Extra from \"mcp://recorder/extra\"\n\nmain agent G {\n    main func(input) {\n        first = Grow.call({})\n        return Extra.call({})\n    }\n}\n",
        &[],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("extra here"),
        "{out:?}"
    );
    // A server's form goes to the user (here --answer): values checked, defaults filled in.
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "recorder.ask",
            "--answer",
            r#"{"name": "Ann"}"#,
        ],
    );
    let answer: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(
        answer,
        serde_json::json!({"action": "accept", "content": {"name": "Ann", "count": 3, "go": false}})
    );
    // The server's words reach the terminal on standard error, their escape sequences shown.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("asks: Deploy <U+001B>[31mnow<U+001B>[0m?") && !said.contains('\u{1b}'),
        "{said}"
    );
    for (given, action) in [("decline", "decline"), ("cancel", "cancel")] {
        let out = host(&fx, &["mcp", "call", "recorder.ask", "--answer", given]);
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(answer["action"], action, "{answer}");
    }
    // A value that does not fit is not sent: the form is declined.
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "recorder.ask",
            "--answer",
            r#"{"name": "Ann", "count": 12}"#,
        ],
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["action"], "decline", "{answer}");
    // Nobody to answer (no terminal, no --answer): the capability is not offered at all.
    let out = host(&fx, &["mcp", "call", "recorder.ask"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no form"),
        "{out:?}"
    );
    let inits: Vec<serde_json::Value> = lines()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert!(inits
        .iter()
        .any(|m| m["params"]["capabilities"]["elicitation"]["form"].is_object()));
    assert!(inits
        .last()
        .is_some_and(|m| m["params"]["capabilities"].get("elicitation").is_none()));
}

/// `mcp login` against a server that needs one (tests/mcp/protected.mjs: the official SDK's
/// authorization server and bearer middleware on 127.0.0.1): "needs login" before, a browser
/// that follows the redirect back to keyless-host, the tokens in the user's config folder with
/// mode 0600 and nowhere else, an expired access token refreshed without asking, and `logout`.
#[test]
fn a_server_that_needs_a_login_is_logged_in_to_refreshed_and_logged_out_of() {
    use std::os::unix::fs::PermissionsExt;
    let Some(fx) = setup(None) else { return };
    let record = fx.root.join("record.jsonl");
    let server = HttpServer::protected(&record, 2);
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({ "Mcp": { "Servers": { "remote": { "Url": server.url } } } })
            .to_string(),
    )
    .expect("keyless.json");
    let recorded = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a record line"))
            .collect()
    };
    let grants = |kind: &str| recorded().iter().filter(|r| r["grant"] == kind).count();
    // Before the login: listed as needing one, with the command that does it.
    let out = host(&fx, &["mcp", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("needs login: run `keyless-host mcp login remote`"),
        "{listed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The login: the "browser" follows the authorization server's redirect to 127.0.0.1.
    let out = fx
        .host()
        .args(["mcp", "login", "remote", "--workspace"])
        .arg(fx.ws())
        .env("BROWSER", "curl -fsSL -o /dev/null")
        .output()
        .expect("login");
    let said = everything_said(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(grants("authorization_code"), 1, "{:?}", recorded());
    // Registered dynamically, with a loopback redirect, and the resource named.
    let first = recorded();
    let reg = first
        .iter()
        .find(|r| r.get("registered").is_some())
        .expect("a registration");
    assert!(
        reg["redirect_uris"][0]
            .as_str()
            .is_some_and(|u| u.starts_with("http://127.0.0.1:")),
        "{reg}"
    );
    let code = first
        .iter()
        .find(|r| r["grant"] == "authorization_code")
        .expect("code grant");
    assert_eq!(code["resource"], server.url.as_str(), "{code}");
    // The tokens: in the user's config folder, mode 0600, never on the terminal.
    let tokens_file = fx.user_config().join("mcp-tokens.json");
    let mode = std::fs::metadata(&tokens_file)
        .expect("the tokens file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let stored = std::fs::read_to_string(&tokens_file).expect("tokens");
    let access = |stored: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(stored).expect("tokens json");
        let text = v.to_string();
        // The access token, wherever the store keeps it.
        let at = text.find("\"access_token\":\"").expect("an access token") + 16;
        text[at..at + 36].to_string()
    };
    let first_token = access(&stored);
    assert!(!said.contains(&first_token), "{said}");
    let out = host(&fx, &["mcp", "call", "remote.whoami"]);
    let said = everything_said(&out);
    assert!(
        out.status.success() && said.contains("with mcp:tools"),
        "{said}"
    );
    assert!(!said.contains(&first_token), "{said}");
    // The access token lives 2 s: after it, the next call refreshes it by itself.
    std::thread::sleep(std::time::Duration::from_millis(2600));
    let out = host(&fx, &["mcp", "call", "remote.whoami"]);
    let said = everything_said(&out);
    assert!(
        out.status.success() && said.contains("with mcp:tools"),
        "{said}"
    );
    assert_eq!(grants("refresh_token"), 1, "{:?}", recorded());
    assert_eq!(grants("authorization_code"), 1, "no second login");
    let stored = std::fs::read_to_string(&tokens_file).expect("tokens");
    assert_ne!(
        access(&stored),
        first_token,
        "the refreshed token is stored"
    );
    assert_eq!(
        std::fs::metadata(&tokens_file)
            .expect("tokens")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    // Logged out: the tokens are gone and the server needs a login again.
    let out = host(&fx, &["mcp", "logout", "remote"]);
    assert!(out.status.success(), "{out:?}");
    let stored = std::fs::read_to_string(&tokens_file).unwrap_or_default();
    assert!(!stored.contains("access_token"), "{stored}");
    let out = host(&fx, &["mcp", "call", "remote.whoami"]);
    let said = everything_said(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("keyless-host mcp login remote"), "{said}");
}

/// `mcp login` opens the browser through the launcher. With no `$BROWSER`,
/// `xdg-open` is looked up only in PATH folders the model cannot write: a `.venv/bin/xdg-open`
/// of the model's first on PATH never runs, the trusted one does (and completes the login).
#[test]
fn mcp_login_never_opens_the_browser_with_a_program_the_model_planted() {
    let Some(fx) = setup(None) else { return };
    let record = fx.root.join("record.jsonl");
    let server = HttpServer::protected(&record, 60);
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({ "Mcp": { "Servers": { "remote": { "Url": server.url } } } })
            .to_string(),
    )
    .expect("keyless.json");
    let canary = fx.root.join("canary");
    let planted = fx.ws().join(".venv/bin/xdg-open");
    std::fs::create_dir_all(planted.parent().expect("folder")).expect("venv");
    std::fs::write(
        &planted,
        format!("#!/bin/sh\necho fired >> '{}'\n", canary.display()),
    )
    .expect("plant");
    common::make_executable(&planted);
    let trusted = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trusted-open-{}", std::process::id()));
    std::fs::create_dir_all(&trusted).expect("trusted");
    std::fs::write(
        trusted.join("xdg-open"),
        "#!/bin/sh\nexec curl -fsSL -o /dev/null \"$1\"\n",
    )
    .expect("opener");
    common::make_executable(&trusted.join("xdg-open"));
    let path = format!(
        "{}:{}:{}",
        planted.parent().expect("folder").display(),
        trusted.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The control: looked up on that PATH, the model's opener runs.
    let _ = std::process::Command::new("sh")
        .args(["-c", "xdg-open http://127.0.0.1:9/"])
        .env("PATH", &path)
        .output()
        .expect("sh");
    assert!(canary.exists(), "the planted opener does not fire");
    std::fs::remove_file(&canary).expect("reset");
    let out = fx
        .host()
        .args(["mcp", "login", "remote", "--workspace"])
        .arg(fx.ws())
        .env_remove("BROWSER")
        .env("PATH", &path)
        .output()
        .expect("login");
    let _ = std::fs::remove_dir_all(&trusted);
    let said = everything_said(&out);
    assert!(!canary.exists(), "the model's xdg-open ran: {said}");
    assert!(out.status.success(), "{said}");
}

/// A server of the 2026-07-28 revision (tests/mcp/modern.mjs, the official TypeScript SDK v2,
/// refusing `initialize`) beside one of 2025-11-25 (server-everything): keyless opens the new one
/// with `server/discover` and the old one with `initialize`, `mcp list` names each revision, and
/// the new server's input-required results (MRTR) go to the user as forms do, the call made again
/// with the answers and the request state echoed as it came.
#[test]
fn a_2026_07_28_server_is_opened_stateless_and_its_input_required_results_go_to_the_user() {
    let Some(fx) = setup(None) else {
        return;
    };
    let record = fx.home().join("modern.jsonl");
    let config = fx.user_config().join("keyless.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).expect("read")).expect("json");
    cfg["Mcp"]["Servers"]["modern"] = serde_json::json!({
        "Command": "node",
        "Args": [mcp::own_server("modern.mjs")],
        "Env": {"KEYLESS_RECORD": record}
    });
    std::fs::write(&config, cfg.to_string()).expect("write");
    let out = host(&fx, &["mcp", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    let line = |server: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("{server}  ")))
            .unwrap_or_else(|| panic!("{listed}"))
            .to_string()
    };
    assert!(line("modern").ends_with(", MCP 2026-07-28"), "{listed}");
    assert!(line("everything").ends_with(", MCP 2025-11-25"), "{listed}");
    assert!(
        listed.contains("  add (read-only)") || listed.contains("  add  "),
        "{listed}"
    );
    let out = host(
        &fx,
        &["mcp", "call", "modern.add", "--args", r#"{"a": 2, "b": 3}"#],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5", "{out:?}");
    // The server asks in its result; the user answers; the call is made again with the answer.
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "modern.deploy",
            "--args",
            r#"{"env": "staging"}"#,
            "--answer",
            r#"{"name": "Ann", "go": true}"#,
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "deployed staging for Ann (state env=staging)",
        "{out:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Deploy to staging?"),
        "{out:?}"
    );
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "modern.deploy",
            "--args",
            r#"{"env": "prod"}"#,
            "--answer",
            "decline",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "not deployed: decline",
        "{out:?}"
    );
    // The user's Cancel ends the call (the server cannot ask round after round), and a server
    // asking more forms at once than keyless puts before the user is refused.
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "modern.deploy",
            "--args",
            r#"{"env": "x"}"#,
            "--answer",
            "cancel",
        ],
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(
        everything_said(&out).contains("you cancelled the server's form"),
        "{out:?}"
    );
    let out = host(&fx, &["mcp", "call", "modern.survey", "--answer", "accept"]);
    assert!(!out.status.success(), "{out:?}");
    let said = everything_said(&out);
    assert!(
        said.contains("the server asks 5 forms at once; keyless puts at most 4 before you"),
        "{said}"
    );
    assert!(
        !said.contains("Question 1?"),
        "no form of it reached the user: {said}"
    );
    // Roots asked in a result are the workspace, as a request for them would get.
    let out = host(&fx, &["mcp", "call", "modern.roots"]);
    let ws = fx.ws().canonicalize().expect("ws");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("file://{}/", ws.display()),
        "{out:?}"
    );
    // An `.as` program uses it as it uses any server.
    let out = as_run(
        &fx,
        "modern.as",
        "import tool Add from \"mcp://modern/add\"\n\nmain agent A {\n    main func(input) {\n        return Add.call({\"a\": 40, \"b\": 2})\n    }\n}\n",
        &[],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("42"),
        "{out:?}"
    );
    // A piece's movement offers it and runs it. In `run` without a terminal nobody can answer a
    // form, so keyless does not offer forms and the server refuses to ask one: the call fails and
    // the model never answers in the user's place.
    let piece = "name: modern-test
description: a 2026-07-28 server in a piece
max_movements: 2
initial_movement: go
required_mcp: [modern]
movements:
  - name: go
    edit: false
    persona: an operator
    instruction: deploy
    allowed_tools: [mcp__modern__*]
    rules: []
";
    let text = run_piece(
        &fx,
        piece,
        &[&reply(&[
            block("mcp modern.add", &[("ARGS", r#"{"a": 20, "b": 1}"#)]),
            block("mcp modern.deploy", &[("ARGS", r#"{"env": "qa"}"#)]),
        ])],
        &["--mode", "auto"],
    );
    assert!(
        text.contains("#1 mcp | modern.add ---\nstatus: ok"),
        "{text}"
    );
    assert!(text.contains("<<<OUTPUT\n21\nOUTPUT>>>"), "{text}");
    assert!(
        text.contains("code: KA_MCP_UNAVAILABLE")
            && text.contains("do not declare the required capability"),
        "{text}"
    );
    // The same server over Streamable HTTP: the revision's headers, and its questions in results.
    let http_record = fx.home().join("modern-http.jsonl");
    let http = HttpServer::modern(&http_record);
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).expect("read")).expect("json");
    cfg["Mcp"]["Servers"]["remote-modern"] = serde_json::json!({"Url": http.url});
    std::fs::write(&config, cfg.to_string()).expect("write");
    let out = host(&fx, &["mcp", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("remote-modern  http: ") && l.ends_with(", MCP 2026-07-28")),
        "{listed}"
    );
    let out = host(
        &fx,
        &[
            "mcp",
            "call",
            "remote-modern.deploy",
            "--args",
            r#"{"env": "edge"}"#,
            "--answer",
            r#"{"name": "Cy", "go": false}"#,
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "held edge for Cy (state env=edge)",
        "{out:?}"
    );
    let over_http: Vec<serde_json::Value> = std::fs::read_to_string(&http_record)
        .expect("record")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !over_http.iter().any(|m| m["method"] == "initialize"),
        "{over_http:?}"
    );
    assert!(
        over_http
            .iter()
            .any(|m| m["params"]["name"] == "deploy" && m["params"]["requestState"] == "env=edge"),
        "{over_http:?}"
    );
    // On the wire: no `initialize` at all; every request says the revision and who keyless is.
    let seen: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .expect("record")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !seen.iter().any(|m| m["method"] == "initialize"),
        "{seen:?}"
    );
    assert_eq!(seen[0]["method"], "server/discover", "{seen:?}");
    for m in seen.iter().filter(|m| m.get("id").is_some()) {
        let meta = &m["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{m}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "keyless-host",
            "{m}"
        );
    }
    let retry = seen
        .iter()
        .find(|m| m["params"]["name"] == "deploy" && m["params"].get("inputResponses").is_some())
        .unwrap_or_else(|| panic!("no retry in {seen:?}"));
    assert_eq!(retry["params"]["requestState"], "env=staging", "{retry}");
    assert_eq!(
        retry["params"]["inputResponses"]["confirm"],
        serde_json::json!({"action": "accept", "content": {"name": "Ann", "go": true}}),
        "{retry}"
    );
}

/// A server whose authorization server lets no client register itself (only pre-registered
/// clients, or Client ID Metadata Documents, which need an https URL keyless has not): the login
/// fails with KA_MCP_UNAVAILABLE and names the setting that helps, `ClientId`.
#[test]
fn a_login_where_no_client_may_register_names_the_client_id_setting() {
    if !mcp::available() {
        return;
    }
    let fx = Fixture::new();
    let record = fx.home().join("record.jsonl");
    let server = HttpServer::protected_without_registration(&record);
    std::fs::create_dir_all(fx.user_config()).expect("config");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({ "Mcp": { "Servers": { "remote": {"Url": server.url} } } }).to_string(),
    )
    .expect("keyless.json");
    let out = fx
        .host()
        .args(["mcp", "login", "remote", "--workspace"])
        .arg(fx.ws())
        .env("BROWSER", "true")
        .output()
        .expect("login");
    let said = everything_said(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("KA_MCP_UNAVAILABLE"), "{said}");
    assert!(
        said.contains("put the client id it gives you in this server's entry of your keyless.json as \"ClientId\""),
        "{said}"
    );
}
