//! Pieces, SSH, MCP servers and `.as` programs through serve, "always allow", step-up logins,
//! one serve per workspace and Ctrl+C.

use super::*;

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
