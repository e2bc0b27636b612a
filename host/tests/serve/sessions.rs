//! Sessions through serve: pieces and their movements, batches a client left or a host lost,
//! connections that try to hold the server, and what waits for the user.

use super::*;

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
    // A body that never completes is answered with KA_TIMEOUT at the body deadline (started
    // first: its deadline runs while the slow headers wait for theirs).
    let mut slow_body = TcpStream::connect(("127.0.0.1", srv.port)).expect("connect");
    let head = format!(
        "POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{\"reply\"",
        srv.port, srv.token
    );
    slow_body.write_all(head.as_bytes()).expect("write");
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

/// `POST /v1/sessions/{id}/handover`: core's handover of the session for a site's paste budget
/// (attached over it when the site takes files, pasted whole when it does not), with the next
/// reply's numbers; the move is listed with the session for the dashboard.
#[test]
fn a_session_is_handed_over_to_a_new_chat() {
    let e = env();
    let srv = spawn(&e.ws, &e.config, &["--mode", "auto"]);
    let (s, v) = srv.post(
        "/v1/sessions",
        &serde_json::json!({"task": "Write notes, then list them."}),
    );
    assert_eq!(s, 200, "{v}");
    let session = v["session"].as_str().expect("id").to_string();
    let first = v["prompt"].as_str().expect("prompt").to_string();
    let answer = srv.reply(
        &session,
        "@@newfile notes/a.txt\n<<<CONTENT\nfirst note\nCONTENT>>>\n@@end\n@@runcommand\n<<<CMD\nls notes\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n",
    );
    let results = answer["text"].as_str().expect("results").to_string();
    let path = format!("/v1/sessions/{session}/handover");
    let (s, h) = srv.post(
        &path,
        &serde_json::json!({"site": "claude", "max_paste_chars": 100_000, "uploads": true, "tab": 7}),
    );
    assert_eq!(s, 200, "{h}");
    let text = h["text"].as_str().expect("text");
    assert!(
        text.starts_with(&format!(
            "[KEYLESSAGENT HANDOVER] session={session} turn=1 batch=2\n"
        )),
        "{text}"
    );
    assert_eq!(h["delivery"]["kind"], "paste", "{h}");
    assert_eq!(
        (h["turn"].as_u64(), h["batch"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(
        text.contains("# Task\nWrite notes, then list them."),
        "{text}"
    );
    assert!(
        text.contains("- turn 1 batch 1: #1 newfile notes/a.txt: ok; #2 runcommand ls notes: ok"),
        "{text}"
    );
    // The last results whole, and the system prompt's own sections as the first message had them.
    assert!(text.contains(results.trim_end()), "{text}");
    let git = first
        .split("\n# Git\n")
        .nth(1)
        .and_then(|g| g.split("\n\n").next())
        .expect("the first message's Git section");
    assert!(text.contains(git), "{text}");
    // Over a small budget: attached on a site that takes files, pasted whole on one that does not.
    let (_, small) = srv.post(
        &path,
        &serde_json::json!({"site": "chatgpt", "max_paste_chars": 500, "uploads": true}),
    );
    assert_eq!(small["delivery"]["kind"], "attach", "{small}");
    assert_eq!(
        small["text"], h["text"],
        "the attachment holds the whole record"
    );
    let (_, pasted) = srv.post(
        &path,
        &serde_json::json!({"site": "deepseek", "max_paste_chars": 500, "uploads": false}),
    );
    assert_eq!(pasted["delivery"]["kind"], "paste", "{pasted}");
    // The dashboard's list says where the session went.
    let (_, list) = srv.get("/v1/sessions");
    let moves = list
        .as_array()
        .and_then(|a| a.iter().find(|s| s["session"] == session.as_str()))
        .map(|s| s["moves"].clone())
        .expect("the session");
    assert_eq!(moves[0]["site"], "claude", "{moves}");
    assert_eq!(moves[0]["tab"], 7, "{moves}");
    assert_eq!(moves[0]["batch"], 2, "{moves}");
    assert_eq!(moves.as_array().map(Vec::len), Some(3), "{moves}");
    // An unknown session is its code, not a handover.
    let (s, v) = srv.post(
        "/v1/sessions/s-nope/handover",
        &serde_json::json!({"site": "claude", "max_paste_chars": 1000, "uploads": true}),
    );
    assert_eq!(s, 404, "{v}");
}
