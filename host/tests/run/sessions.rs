//! Sessions of `run`: a killed batch, an interrupted one, keyless.json, missing tools, pieces,
//! confirmations, Ctrl+C and questions.

use super::*;

#[test]
fn killed_mid_batch_leaves_no_partial_file() {
    // A batch of 8 large updatefiles (4 files, 2 versions each, about 230 KB apiece, the reply
    // near MaxResponseChars' 2,000,000, and each version a different length) is killed at the very moment one of its writes becomes visible on disk:
    // the test watches the target file's metadata (inode, length, modification time; a stat,
    // which never waits on keyless's write lease) and kills keyless-host as soon as it changes.
    // A write that puts the bytes into the file itself takes long enough for the kill to land in
    // the middle of it; a temp file renamed over the target is whole the moment it shows. Every
    // file must then be wholly one version (the original or one complete update), compared
    // byte for byte, once keyless starts again in the workspace (an in-place write is recorded
    // before it begins and finished at the next start), and every kill must have landed between
    // two of the batch's writes.
    let fx = Fixture::new();
    const FILES: usize = 4;
    const VERSIONS: usize = 2;
    let versions: Vec<String> = (0..VERSIONS)
        .map(|v| format!("version {v} of the file\n").repeat(10_000 + 1_000 * v))
        .collect();
    let mut blocks = vec![block("newfile started.txt", &[("CONTENT", "started")])];
    for version in &versions {
        for f in 0..FILES {
            blocks.push(block(
                &format!("updatefile f{f}.txt"),
                &[("CONTENT", version.trim_end())],
            ));
        }
    }
    let r = reply(&blocks);
    let file = fx.root.join("big.txt");
    std::fs::write(&file, &r).expect("write");
    let key = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
    };
    let state = |got: &str| -> usize {
        if got == "original\n" {
            0
        } else {
            versions
                .iter()
                .position(|v| v == got)
                .map_or(usize::MAX, |i| i + 1)
        }
    };
    let trials = FILES * VERSIONS;
    let mut mid_batch = 0;
    // Every write is a kill's target at least once; where a loaded machine let the batch run on
    // past a kill, the targets are taken again (at most twice more), and every trial's files are
    // checked all the same.
    for trial in 0..trials * 3 {
        if trial >= trials && mid_batch + 2 >= trials {
            break;
        }
        // This trial kills at the write of version `w` to file `t`.
        let (t, w) = (trial % FILES, (trial / FILES) % VERSIONS);
        for f in 0..FILES {
            std::fs::write(fx.ws().join(format!("f{f}.txt")), "original\n").expect("write");
        }
        let _ = std::fs::remove_file(fx.ws().join("started.txt"));
        let target = fx.ws().join(format!("f{t}.txt"));
        let mut before = key(&target);
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args([
                "run",
                "--pace",
                "batch",
                "--max-commands",
                "100",
                "--max-response-chars",
                "2000000",
                "--max-file-content-chars",
                "300000",
                "--workspace",
            ])
            .arg(fx.ws())
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        // Polled with no sleep: the kill follows the first sign of the write at once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let mut poll = |what: &str, done: &mut dyn FnMut() -> bool| {
            while !done() {
                assert!(
                    std::time::Instant::now() < deadline
                        && child.try_wait().expect("wait").is_none(),
                    "trial {trial}: the batch ended, or took too long, before {what}"
                );
            }
        };
        // The state the write of version `w` starts from: the original as written above, or
        // version w-1 whole (its length: the versions' lengths all differ).
        if w > 0 {
            let from_len = versions[w - 1].len() as u64;
            poll(
                &format!("f{t}.txt reached the state write {w} starts from"),
                &mut || {
                    before = key(&target);
                    before.is_some_and(|k| k.1 == from_len)
                },
            );
        }
        poll(&format!("f{t}.txt's write {w} came"), &mut || {
            key(&target) != before
        });
        let _ = child.kill();
        let _ = child.wait();
        // The next keyless start in the workspace finishes a write the kill cut short.
        let listed = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args(["undo", "--list", "--workspace"])
            .arg(fx.ws())
            .output()
            .expect("undo --list");
        assert!(listed.status.success(), "{listed:?}");
        // The marker is the batch's first write: the kill came inside the batch.
        assert!(
            fx.ws().join("started.txt").exists(),
            "trial {trial}: killed before the batch began"
        );
        let mut states = std::collections::BTreeSet::new();
        for f in 0..FILES {
            let got = std::fs::read_to_string(fx.ws().join(format!("f{f}.txt"))).expect("read");
            let at = state(&got);
            assert!(
                at != usize::MAX,
                "trial {trial} (killed at f{t}.txt's write {w}): f{f}.txt is neither the original \
                 nor a whole version ({} bytes, starting {:?})",
                got.len(),
                got.get(..40).unwrap_or(&got)
            );
            states.insert(at);
        }
        // Files at different versions: the kill came between two of the batch's writes.
        if states.len() > 1 {
            mid_batch += 1;
        }
    }
    assert!(
        mid_batch + 2 >= trials,
        "only {mid_batch} kills landed between two writes, {} needed",
        trials - 2
    );
}

#[test]
fn an_interrupted_batch_never_runs_twice_and_sessions_resume() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let ws_s = ws.to_str().expect("utf8");
    // A sleep this test alone runs, so it can tell its own process from every other.
    let sleep = common::unique_seconds(30);
    let r = reply(&[block(
        "runcommand",
        &[("CMD", &format!("echo x >> appended.txt; sleep {sleep}"))],
    )]);
    let f = fx.root.join("append.txt");
    std::fs::write(&f, &r).expect("write");
    let f_s = f.to_str().expect("utf8");
    // The host is killed while the batch runs.
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["run", "--mode", "auto", "--workspace", ws_s, f_s])
        .env("XDG_CONFIG_HOME", fx.root.join("config"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().expect("stdout")),
        &mut first,
    )
    .expect("banner");
    let session = first
        .strip_prefix("session ")
        .and_then(|t| t.split(' ').next())
        .expect("session")
        .to_string();
    // The batch is running: its first write is there (the file exists as soon as the shell opens
    // it, before `echo` writes, so the test waits for the bytes, not the name).
    assert!(common::wait_until(
        std::time::Duration::from_secs(10),
        || std::fs::read(fx.ws().join("appended.txt")).is_ok_and(|b| b == b"x\n")
    ));
    child.kill().expect("kill");
    let _ = child.wait();
    // The command's own processes end with the host (none of another test's is touched).
    assert!(
        common::wait_until(std::time::Duration::from_secs(10), || {
            common::processes_with(&format!("sleep {sleep}")).is_empty()
        }),
        "the command outlived a kill -9 of the host"
    );
    assert_eq!(fx.read("appended.txt"), b"x\n");
    // Resuming the session with the same reply: the stored batch is not run again.
    let (_, text) = host_in(
        &fx,
        &[
            "run",
            "--mode",
            "auto",
            "--session",
            &session,
            "--workspace",
            ws_s,
            f_s,
        ],
    );
    assert!(
        text.contains("was interrupted while it ran (the host stopped); it is not run again"),
        "{text}"
    );
    assert_eq!(fx.read("appended.txt"), b"x\n");
    // The session goes on at batch 2 with the next reply.
    let r2 = reply(&[block("runcommand", &[("CMD", "echo y >> appended.txt")])]);
    let f2 = fx.root.join("append2.txt");
    std::fs::write(&f2, &r2).expect("write");
    let (_, text) = host_in(
        &fx,
        &[
            "run",
            "--mode",
            "auto",
            "--session",
            &session,
            "--workspace",
            ws_s,
            f2.to_str().expect("utf8"),
        ],
    );
    assert!(text.contains("(turn 1, batch 2,"), "{text}");
    assert_eq!(fx.read("appended.txt"), b"x\ny\n");
    // The audit trail has the finished command once.
    let (_, log) = host_in(&fx, &["log", "--workspace", ws_s, "--session", &session]);
    assert_eq!(log.matches("runcommand").count(), 1, "{log}");
    assert!(log.contains("\n1 entry ("), "{log}");
    // Unknown sessions are KA_SESSION_NOT_FOUND.
    let (out, _) = host_in(&fx, &["run", "--session", "nope", "--workspace", ws_s, f_s]);
    assert_eq!(out.status.code(), Some(2));
    // The code leads, unwrapped (it used to read "KA_CONFIG_VALIDATION KA_SESSION_NOT_FOUND …").
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "keyless-host: KA_SESSION_NOT_FOUND no saved session \"nope\"\n"
    );
}

#[test]
fn keyless_json_layers_and_errors() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let ws_s = ws.to_str().expect("utf8");
    std::fs::create_dir_all(fx.root.join("config/keyless")).expect("dir");
    std::fs::write(
        fx.root.join("config/keyless/keyless.json"),
        r#"{"Commands": {"Mode": "AutoSafe", "AllowList": ["npm test"]}}"#,
    )
    .expect("write");
    std::fs::write(ws.join("keyless.json"), r#"{"Agent": {"Pace": "Step"}}"#).expect("write");
    let (out, text) = host_in(&fx, &["config", "--workspace", ws_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Commands.Mode                      = AutoSafe"),
        "{text}"
    );
    assert!(text.contains("config/keyless/keyless.json)"), "{text}");
    assert!(
        text.contains("Agent.Pace                         = Step"),
        "{text}"
    );
    assert!(
        text.contains(
            "Git.AutoInit                       = false                        (default)"
        ),
        "{text}"
    );
    // The workspace's Step pace applies to run.
    let r = reply(&[block("mkdir a", &[]), block("mkdir b", &[])]);
    let (_, text) = fx.run(&[&r], &[]);
    assert!(
        text.contains("pace=Step: only 1 command(s) per response"),
        "{text}"
    );
    // Broken files: KA_CONFIG_INVALID with line and column, KA_CONFIG_VALIDATION for values.
    std::fs::write(
        ws.join("keyless.json"),
        "{\n  \"Agent\": {\"Pace\": \"Step\",}\n}",
    )
    .expect("write");
    let (out, _) = host_in(&fx, &["config", "--workspace", ws_s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("KA_CONFIG_INVALID") && err.contains("keyless.json:2:"),
        "{err}"
    );
    std::fs::write(
        ws.join("keyless.json"),
        r#"{"Limits": {"MaxCommandsPerResponse": 500}}"#,
    )
    .expect("write");
    let (out, _) = host_in(&fx, &["config", "--workspace", ws_s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("KA_CONFIG_VALIDATION")
            && err.contains("Limits.MaxCommandsPerResponse: 500 is out of range (1..=100)"),
        "{err}"
    );
}

#[test]
fn missing_tools_are_refused_before_starting() {
    let fx = Fixture::new();
    let r = reply(&[
        block("runcommand", &[("CMD", "node -e 1")]),
        block("runcommand", &[("CMD", "echo still here")]),
    ]);
    let f = fx.root.join("tools.txt");
    std::fs::write(&f, &r).expect("write");
    // With an empty PATH every probed tool is missing; /bin/sh is started by its full path.
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args([
            "run",
            "--mode",
            "auto",
            "--failure-mode",
            "continue",
            "--workspace",
        ])
        .arg(fx.ws())
        .arg(&f)
        .env("PATH", fx.root.join("empty-path"))
        .env("XDG_CONFIG_HOME", fx.root.join("config"))
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("code: KA_TOOL_MISSING\nreason: node is listed as Missing in the environment; the process was not started. Do not retry it."), "{text}");
    assert!(text.contains("<<<OUTPUT\nstill here\nOUTPUT>>>"), "{text}");
}

#[test]
fn doctor_and_snapshot_scripts() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let snap = ws.join(".agent").join("snapshot");
    std::fs::create_dir_all(&snap).expect("dir");
    std::fs::write(
        snap.join("10-db.sh"),
        "echo 'database: postgres 16 on 127.0.0.1:5432'\n",
    )
    .expect("write");
    std::fs::write(snap.join("20-empty.sh"), "true\n").expect("write");
    let (out, text) = host_in(&fx, &["prompt", "--workspace", ws.to_str().expect("utf8")]);
    assert!(out.status.success());
    assert!(text.contains("# Environment\nOS: "), "{text}");
    assert!(
        text.contains("10-db.sh:\ndatabase: postgres 16 on 127.0.0.1:5432"),
        "{text}"
    );
    assert!(text.contains("20-empty.sh: KA_SNAPSHOT_MISSING"), "{text}");
    let (out, text) = host_in(&fx, &["doctor", "--workspace", ws.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ok    repository  branch feature; origin ../origin.git"),
        "{text}"
    );
    assert!(
        text.contains("warn  snapshot    20-empty.sh: KA_SNAPSHOT_MISSING"),
        "{text}"
    );
    std::fs::write(snap.join("30-broken.sh"), "echo oops >&2; exit 3\n").expect("write");
    std::fs::write(ws.join("keyless.json"), "{ nope").expect("write");
    let (out, text) = host_in(&fx, &["doctor", "--workspace", ws.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL  config      KA_CONFIG_INVALID"),
        "{text}"
    );
}

/// `run --piece` follows a piece exactly as a `serve` session does: the same gate, the same
/// refused transition, the same movement hand-over, and a finished piece takes no more replies.
#[test]
fn run_follows_a_piece_like_the_api() {
    let fx = Fixture::new();
    let plan = "@@runcommand on_error=continue\n<<<CMD\nls && rm -rf src\nCMD>>>\n@@end\n@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let refused = "@@done next=review\n@@end\n@@eof\n";
    let moved = "@@done next=implement\n@@end\n@@eof\n";
    let write =
        "@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@done next=review\n@@end\n@@eof\n";
    let finish = "@@done\n@@end\n@@eof\n";
    let (out, text) = fx.run(
        &[plan, refused, moved, write, finish],
        &["--piece", "plan-implement-review", "--mode", "auto"],
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[KEYLESSAGENT MOVEMENT] plan (movement 1 of at most 12"),
        "{text}"
    );
    assert!(
        text.contains(
            "code: KA_COMMAND_DENIED\nreason: @@newfile is not allowed in movement \"plan\""
        ),
        "{text}"
    );
    assert!(text.contains("[KEYLESSAGENT PIECE] KA_PIECE_TRANSITION movement \"plan\" has no rule leading to \"review\"; allowed: @@done next=implement"), "{text}");
    assert!(
        text.contains("[KEYLESSAGENT MOVEMENT] implement (movement 2"),
        "{text}"
    );
    assert!(text.contains("[KEYLESSAGENT PIECE] complete."), "{text}");
    assert!(text.contains("turn 1 done."), "{text}");
    assert!(fx.ws().join("a.txt").exists(), "implement may write");
    // The session's piece has ended: resuming it with another reply is refused with its code.
    let session = common::session_of(&text);
    let (out, text) = fx.run(&["@@next\n@@end\n@@eof\n"], &["--session", &session]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        err.contains("KA_PIECE_TRANSITION") && err.contains("has ended"),
        "{err}"
    );
    // An unknown piece is a clear error naming the pieces there are.
    let (out, _) = fx.run(&[finish], &["--piece", "no-such-piece"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("KA_CONFIG_VALIDATION")
            && err.contains("no piece named \"no-such-piece\"")
            && err.contains("fix-loop"),
        "{err}"
    );
}

/// The seed: "deletefile — Backs up, then deletes (confirmed in Ask mode)"; its tier table puts
/// deletes and git writes in Risky, so @@deletefile and @@commit are confirmed in Ask and AutoSafe
/// like `rm` and `git commit` through runcommand, and run unasked in Auto. With no terminal and no
/// --yes there is no way to ask: the command is declined and nothing is lost.
#[test]
fn deletefile_and_commit_are_confirmed_like_the_same_writes_through_runcommand() {
    let fx = Fixture::new();
    let r = reply(&[
        block("deletefile README.md", &[]),
        block("commit", &[("MSG", "Remove the readme")]),
    ]);
    let head = git(&fx.ws(), &["rev-parse", "HEAD"]);
    for mode in ["ask", "autosafe"] {
        let (_, text) = fx.run(&[&r], &["--mode", mode, "--failure-mode", "continue"]);
        assert!(
            text.contains("[declined: no terminal to confirm; pass --yes to approve] @@deletefile README.md  (Risky: deletefile deletes a file (it is backed up first))"),
            "{mode}: {text}"
        );
        assert!(
            text.contains("--- result 1/2 | #1 deletefile | README.md ---\nstatus: error | code: KA_COMMAND_DECLINED"),
            "{mode}: {text}"
        );
        assert!(
            text.contains("--- result 2/2 | #2 commit | Remove the readme ---\nstatus: error | code: KA_COMMAND_DECLINED"),
            "{mode}: {text}"
        );
        assert_eq!(fx.read("README.md"), b"# demo\n", "{mode}");
        assert_eq!(
            git(&fx.ws(), &["rev-parse", "HEAD"]),
            head,
            "{mode}: no commit"
        );
    }
    // Approved on the terminal (--yes): both run.
    let (_, text) = fx.run(&[&r], &["--mode", "ask", "--yes"]);
    assert!(
        text.contains("[approved by --yes] @@deletefile README.md"),
        "{text}"
    );
    assert!(
        text.contains("[approved by --yes] @@commit Remove the readme"),
        "{text}"
    );
    assert!(!fx.ws().join("README.md").exists(), "{text}");
    assert_eq!(
        git(&fx.ws(), &["log", "-1", "--format=%s"]),
        "Remove the readme\n"
    );
    // Auto: nothing is asked.
    std::fs::write(fx.ws().join("README.md"), "# again\n").expect("write");
    let (_, text) = fx.run(&[&r], &["--mode", "auto"]);
    assert!(
        !text.contains("[declined") && !text.contains("[approved"),
        "{text}"
    );
    assert!(!fx.ws().join("README.md").exists(), "{text}");
}

/// The seed: "KA_CANCELLED — the command was cancelled by the user (Ctrl+C); partial output is
/// kept". The first Ctrl+C ends the running command's whole group, keeps its output, skips the rest
/// of the batch and the remaining replies, records the session and exits 130.
#[test]
fn ctrl_c_cancels_the_running_command_and_the_rest() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let sleep = common::unique_seconds(4);
    let cmd = format!("echo partial; touch started.txt; sleep {sleep}; touch after.txt");
    let r1 = reply(&[
        block("runcommand", &[("CMD", &cmd)]),
        block("newfile later.txt", &[("CONTENT", "x")]),
    ]);
    let r2 = reply(&[block("newfile second.txt", &[("CONTENT", "y")])]);
    let files = fx.reply_files(&[&r1, &r2]);
    let child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .arg("run")
        .arg("--mode")
        .arg("auto")
        .arg("--workspace")
        .arg(&ws)
        .args(&files)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let start = std::time::Instant::now();
    while !ws.join("started.txt").exists() {
        assert!(start.elapsed().as_secs() < 30, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(
        text.contains("--- result 1/2 | #1 runcommand |")
            && text.contains("code: KA_CANCELLED")
            && text.contains("<<<OUTPUT\npartial"),
        "{text}"
    );
    assert!(
        text.contains("--- result 2/2 | #2 newfile | later.txt ---\nstatus: skipped")
            && text.contains("the user cancelled the batch"),
        "{text}"
    );
    assert!(text.contains("KA_CANCELLED cancelled (Ctrl+C)"), "{text}");
    assert!(!text.contains("reply 2 of 2"), "{text}");
    assert!(!ws.join("later.txt").exists() && !ws.join("second.txt").exists());
    // Nothing of the command lives on: no process holds its command line or its sleep any
    // more (the only ones that could still write after.txt), and it never did.
    assert!(
        common::wait_until(std::time::Duration::from_secs(30), || {
            common::processes_with(&sleep).is_empty()
        }),
        "the command's group outlived Ctrl+C: {:?}",
        common::processes_with(&sleep)
    );
    assert!(
        !ws.join("after.txt").exists(),
        "the command's group outlived Ctrl+C"
    );
    // The session and the cancelled batch are recorded.
    let log = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["log", "--json", "--workspace"])
        .arg(&ws)
        .output()
        .expect("log");
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("KA_CANCELLED"), "{log}");
}

/// A @@done that a stopped batch or the pace held back is listed as skipped, with its reason, and
/// counted: the model learns that the turn did not end.
#[test]
fn a_held_back_done_is_listed_as_skipped() {
    let fx = Fixture::new();
    let stopped = reply(&[
        block("newfile README.md", &[("CONTENT", "again")]),
        block("newfile d.txt", &[("CONTENT", "x")]),
    ])
    .replace(
        "@@next\n@@end\n",
        "@@done\n<<<MSG\nAll set.\nMSG>>>\n@@end\n",
    );
    let (_, text) = fx.run(&[&stopped], &["--mode", "auto"]);
    assert!(
        text.contains("--- result 3/3 | #3 done | All set. ---\nstatus: skipped\nreason: batch stopped at command #1"),
        "{text}"
    );
    assert!(!text.contains("turn 1 done."), "{text}");
    let paced = reply(&[
        block("newfile e.txt", &[("CONTENT", "x")]),
        block("newfile f.txt", &[("CONTENT", "x")]),
    ])
    .replace("@@next\n@@end\n", "@@done\n@@end\n");
    let (_, text) = fx.run(&[&paced], &["--mode", "auto", "--pace", "step"]);
    assert!(
        text.contains("--- result 1/3 | #1 newfile | e.txt ---")
            && text.contains("--- skipped 2 commands: pace=Step"),
        "{text}"
    );
}

/// A keyless.json error names its file and key once, with the detail after (it used to read
/// "Commands.Mode: Commands.Mode: unknown value …").
#[test]
fn config_errors_name_the_key_once() {
    let fx = Fixture::new();
    let ws = fx.ws();
    for (json, want) in [
        (
            r#"{"Commands":{"Mode":"fast"}}"#,
            "keyless.json: Commands.Mode: unknown value \"fast\" (expected one of: Ask, AutoSafe, Auto)\n",
        ),
        (
            r#"{"Limits":{"MaxCommandsPerResponse":0}}"#,
            "keyless.json: Limits.MaxCommandsPerResponse: 0 is out of range (1..=100)\n",
        ),
        (
            r#"{"Limits":{"MaxFileContentChars":70000}}"#,
            "keyless.json: Limits.MaxFileContentChars: 70000 is larger than Limits.MaxResponseChars (60000); one payload cannot exceed the whole reply\n",
        ),
    ] {
        std::fs::write(ws.join("keyless.json"), json).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args(["config", "--workspace"])
            .arg(&ws)
            .output()
            .expect("config");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("keyless-host: KA_CONFIG_VALIDATION "), "{err}");
        assert!(err.ends_with(want), "{err}");
    }
}

/// allowed_commands is the seed's "Bash command allowlist (overrides default)": in its movement a
/// matching command runs as an allow-listed one does (here an Execute line in AutoSafe, with no
/// configured allow-list), the Denied tier still holds, and an empty list offers no runcommand.
#[test]
fn allowed_commands_override_the_allow_list() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::write(ws.join("hello.py"), "print('hello from python')\n").expect("write");
    let piece = |allowed: &str| {
        format!(
            "name: gate\ndescription: d\nmax_movements: 5\ninitial_movement: work\nmovements:\n  - name: work\n    edit: true\n    persona: p\n    instruction: i\n    allowed_tools: [Read, Bash]\n    allowed_commands: {allowed}\n    rules: []\n"
        )
    };
    let file = fx.root.join("gate.yaml");
    std::fs::write(&file, piece(r#"["python3 hello.py", "git push *"]"#)).expect("write");
    let file_s = file.to_str().expect("utf8");
    let r = reply(&[block("runcommand", &[("CMD", "python3 hello.py")])]);
    let (_, text) = fx.run(&[&r], &["--mode", "autosafe", "--piece", file_s]);
    assert!(text.contains("hello from python"), "{text}");
    assert!(!text.contains("[declined"), "{text}");
    // Without the piece the same line asks (and, with no terminal, is declined).
    let (_, text) = fx.run(&[&r], &["--mode", "autosafe"]);
    assert!(text.contains("code: KA_COMMAND_DECLINED"), "{text}");
    // Denied stays denied, whatever the list says.
    let push = reply(&[block("runcommand", &[("CMD", "git push --force")])]);
    let (_, text) = fx.run(&[&push], &["--mode", "auto", "--piece", file_s]);
    assert!(text.contains("code: KA_COMMAND_DENIED"), "{text}");
    // An empty list: runcommand is not offered, and is refused.
    std::fs::write(&file, piece("[]")).expect("write");
    let (_, text) = fx.run(&[&r], &["--mode", "auto", "--piece", file_s]);
    let offered = text
        .lines()
        .find(|l| l.starts_with("Commands you may use in this movement:"))
        .expect("the movement's commands");
    assert!(!offered.contains("runcommand"), "{offered}");
    assert!(text.contains("code: KA_COMMAND_DENIED"), "{text}");
    assert!(!text.contains("hello from python"), "{text}");
}

/// ASK is a real question in `run` too: `--answer` (or the terminal) answers the
/// piece's question and the movement goes on; with no way to ask, the turn stops on the question
/// and the next reply of the session (after the user answered in the chat) resumes the run.
#[test]
fn run_asks_the_pieces_question() {
    let fx = Fixture::new();
    let ask = "@@done status=needs_user_input\n<<<MSG\nWhich database?\nMSG>>>\n@@end\n@@eof\n";
    let (out, text) = fx.run(
        &[ask],
        &["--piece", "plan-implement-review", "--answer", "PostgreSQL"],
    );
    // Answered, the movement goes on: the task is not finished yet.
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.contains("[ask] Which database?\n[answer] PostgreSQL"),
        "{text}"
    );
    assert!(
        text.contains(
            "[KEYLESSAGENT PIECE] The user answered: PostgreSQL\n\n[KEYLESSAGENT MOVEMENT] plan"
        ),
        "{text}"
    );
    assert!(!text.contains("stopped"), "{text}");
    let (out, text) = fx.run(&[ask], &["--piece", "plan-implement-review"]);
    // Waiting for the user's answer: not finished.
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.contains("needs_user_input: the run waits for the user's answer to: Which database?"),
        "{text}"
    );
    assert!(
        text.contains("turn 1 stopped: the piece waits for your answer (needs_user_input)"),
        "{text}"
    );
    let session = common::session_of(&text);
    let (out, text) = fx.run(
        &["@@done next=implement\n@@end\n@@eof\n"],
        &["--session", &session],
    );
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.contains("[KEYLESSAGENT MOVEMENT] implement (movement 2"),
        "{text}"
    );
}
