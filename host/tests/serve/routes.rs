//! The API's routes, pairing and its refusals, confirmations and events, and the server's own
//! life: restarts, the terminal view, signals, a port in use.

use super::*;

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
