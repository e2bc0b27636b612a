//! `run` as a script and a person use it: exit codes, replies on stdin, a protected branch, the
//! interactive loop, what each batch changed, and undo.

use super::*;

/// Exit codes a script can tell apart: 0 only when the task reached @@done, 1 when
/// the format retries ran out, 3 when a command failed, 4 when the user declined, 5 when the turn
/// is not finished; the @@done message is shown, and the last results do not ask for @@done again.
#[test]
fn run_exit_codes_tell_how_the_task_ended() {
    let fx = Fixture::new();
    let done = "@@newfile ok.txt\n<<<CONTENT\nok\nCONTENT>>>\n@@end\n@@done\n<<<MSG\nAdded ok.txt.\nMSG>>>\n@@end\n@@eof\n";
    let (out, text) = fx.run(&[done], &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("The model says it is done:\nAdded ok.txt."),
        "{text}"
    );
    assert!(text.contains("The task is finished (@@done)."), "{text}");
    assert!(!text.contains("or finish with @@done"), "{text}");
    let failed = reply(&[block("runcommand", &[("CMD", "false")])]);
    let (out, text) = fx.run(&[&failed], &["--mode", "auto"]);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let risky = reply(&[block("runcommand", &[("CMD", "echo x > y.txt")])]);
    let (out, text) = fx.run(&[&risky], &["--mode", "ask"]);
    assert_eq!(out.status.code(), Some(4), "{text}");
    let bad = "@@nonsense\n@@end\n@@eof\n";
    let (out, text) = fx.run(&[bad, bad, bad], &[]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let going = reply(&[block("readfile README.md", &[])]);
    let (out, text) = fx.run(&[&going], &[]);
    assert_eq!(out.status.code(), Some(5), "{text}");
}

/// `run -` reads the replies from stdin, each up to its @@eof (fenced or not), one after another.
#[test]
fn run_reads_replies_from_stdin() {
    use std::io::Write;
    let fx = Fixture::new();
    let mut child = fx
        .host()
        .args(["run", "--mode", "auto", "--workspace"])
        .arg(fx.ws())
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let input = "~~~~agentscript\n@@newfile a.txt\n<<<CONTENT\na\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n~~~~\n@@newfile b.txt\n<<<CONTENT\nb\nCONTENT>>>\n@@end\n@@done\n@@end\n@@eof\n";
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("=== reply 1: stdin #1 (turn 1, batch 1"),
        "{text}"
    );
    assert!(
        text.contains("=== reply 2: stdin #2 (turn 1, batch 2"),
        "{text}"
    );
    assert_eq!(fx.read("a.txt"), b"a\n");
    assert_eq!(fx.read("b.txt"), b"b\n");
}

/// A branch per task: a session that starts on a protected branch works on
/// `keyless/<date>-<slug>`, the model is told the branch, @@commit lands there and is pushed, and
/// at @@done the user sees how to review and merge it. With Git.TaskBranch "" the commit is refused
/// before anyone is asked to approve it.
#[test]
fn a_task_on_a_protected_branch_gets_its_own_branch() {
    let fx = Fixture::new();
    let ws = fx.ws();
    git(&ws, &["branch", "-m", "feature", "main"]);
    git(&ws, &["push", "-q", "origin", "main"]);
    let r = reply(&[block("newfile fix.txt", &[("CONTENT", "fixed")])]);
    let done =
        "@@commit\n<<<MSG\nFix it\nMSG>>>\n@@end\n@@done\n<<<MSG\nFixed.\nMSG>>>\n@@end\n@@eof\n";
    let (out, text) = fx.run(
        &[&r, done],
        &["--mode", "auto", "--task", "Fix the failing test!"],
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    let branch = git(&ws, &["branch", "--show-current"]).trim().to_string();
    assert!(
        branch.starts_with("keyless/") && branch.ends_with("-fix-the-failing-test"),
        "{branch}"
    );
    assert!(
        text.contains(&format!("branch: main is protected (Git.ProtectedBranches: main), so this task works on a new branch, {branch}")),
        "{text}"
    );
    assert!(
        text.contains("committed") && text.contains(&format!("on {branch}")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "1 commit on {branch} since main: 1 file changed, +1 −0"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Merge them: git switch main && git merge {branch}"
        )),
        "{text}"
    );
    // main is untouched; the branch is on origin.
    assert_eq!(git(&ws, &["log", "--format=%s", "main"]), "init\n");
    assert_eq!(
        git(
            &fx.root.join("origin.git"),
            &["log", "--format=%s", &branch]
        ),
        "Fix it\ninit\n"
    );
    // The model is told: the prompt names the branch and the protection.
    let (_, prompt) = host_in(&fx, &["prompt", "--workspace", ws.to_str().expect("utf8")]);
    assert!(
        prompt.contains(&format!("You work on branch {branch}.")),
        "{prompt}"
    );
    assert!(prompt.contains("Protected branches (@@commit is refused there, KA_BRANCH_PROTECTED): main, master, release/*"), "{prompt}");
    assert!(prompt.contains("pushes the branch to origin"), "{prompt}");
    // Without a task branch, a commit on main is refused before the user is asked.
    git(&ws, &["switch", "-q", "main"]);
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        r#"{"Git": {"TaskBranch": ""}}"#,
    )
    .expect("config");
    let commit = "@@commit\n<<<MSG\nOn main\nMSG>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let (out, text) = fx.run(&[commit], &["--mode", "ask", "--yes"]);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("code: KA_BRANCH_PROTECTED"), "{text}");
    assert!(
        !text.contains("[approved by --yes]"),
        "asked before refusing: {text}"
    );
    assert_eq!(git(&ws, &["log", "--format=%s", "main"]), "init\n");
    // A template shaped like a remote's branch is refused as a setting; one whose first segment
    // is a remote of this repository gets the default name instead.
    std::fs::write(
        fx.user_config().join("keyless.json"),
        r#"{"Git": {"TaskBranch": "origin/main"}}"#,
    )
    .expect("config");
    let (out, _) = fx.run(&[commit], &["--mode", "ask"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("KA_CONFIG_VALIDATION") && err.contains("named like a remote's branch"),
        "{err}"
    );
    git(&ws, &["remote", "add", "fork", "../origin.git"]);
    std::fs::write(
        fx.user_config().join("keyless.json"),
        r#"{"Git": {"TaskBranch": "fork/{task}"}}"#,
    )
    .expect("config");
    let (_, text) = fx.run(&["@@done\n@@end\n@@eof\n"], &["--task", "Tidy up"]);
    assert!(text.contains("keyless/"), "{text}");
    assert!(git(&ws, &["branch", "--list", "fork/*"]).is_empty());
}

/// `run --interactive` under a pseudo-terminal, as a person uses it: the prompt to paste, each
/// pasted reply run, a confirmation answered on the terminal, the results to paste back, and the
/// end at @@done with the model's message and exit code 0.
#[test]
fn interactive_runs_a_pasted_conversation_on_a_terminal() {
    use std::io::{Read as _, Write as _};
    let fx = Fixture::new();
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut child = fx
        .host()
        .args(["run", "--interactive", "--task", "Say hello", "--workspace"])
        .arg(fx.ws())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(slave.try_clone().expect("slave"))
        .stdout(slave.try_clone().expect("slave"))
        .stderr(slave)
        .spawn()
        .expect("spawn");
    let mut master = std::fs::File::from(pty.master);
    // Reads what the terminal shows until `want` appears (or fails after 30 s).
    let flags = nix::fcntl::fcntl(&master, nix::fcntl::FcntlArg::F_GETFL).expect("flags");
    nix::fcntl::fcntl(
        &master,
        nix::fcntl::FcntlArg::F_SETFL(
            nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK,
        ),
    )
    .expect("nonblock");
    let mut shown = String::new();
    let mut wait_for = |master: &mut std::fs::File, want: &str| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut buf = [0u8; 4096];
        while !shown.contains(want) {
            assert!(
                std::time::Instant::now() < end,
                "waited for {want:?}; the terminal shows:\n{shown}"
            );
            match master.read(&mut buf) {
                Ok(n) if n > 0 => shown.push_str(&String::from_utf8_lossy(&buf[..n])),
                _ => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        let at = shown.find(want).unwrap_or(0) + want.len();
        shown.drain(..at);
    };
    wait_for(&mut master, "Paste this first message into your chat:");
    wait_for(&mut master, "# Task\r\nSay hello");
    wait_for(&mut master, "Paste the model's whole reply");
    master
        .write_all(b"@@runcommand\n<<<CMD\necho hello-from-the-terminal\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n")
        .expect("paste");
    wait_for(&mut master, "hello-from-the-terminal\r\nOUTPUT>>>");
    wait_for(&mut master, "Paste the results above into the chat.");
    // A command Ask mode confirms: asked on the terminal, answered there.
    master
        .write_all(
            b"@@runcommand\n<<<CMD\necho hi > greeting.txt\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n",
        )
        .expect("paste");
    wait_for(&mut master, "Run `echo hi > greeting.txt`? Risky");
    master.write_all(b"y\n").expect("answer");
    wait_for(
        &mut master,
        "#1 runcommand | echo hi > greeting.txt ---\r\nstatus: ok",
    );
    // A pasted reply that ends with a newline: the Enter after @@eof never answers the
    // confirmation shown after it (it would decline with the default, unseen).
    master
        .write_all(
            b"@@runcommand\n<<<CMD\necho hey >> greeting.txt\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n\n\n",
        )
        .expect("paste");
    wait_for(&mut master, "Run `echo hey >> greeting.txt`? Risky");
    std::thread::sleep(std::time::Duration::from_millis(300));
    master.write_all(b"y\n").expect("answer");
    wait_for(
        &mut master,
        "#1 runcommand | echo hey >> greeting.txt ---\r\nstatus: ok",
    );
    master
        .write_all(b"@@done\n<<<MSG\nI said hello.\nMSG>>>\n@@end\n@@eof\n")
        .expect("paste");
    wait_for(&mut master, "The model says it is done:\r\nI said hello.");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    assert_eq!(fx.read("greeting.txt"), b"hi\nhey\n");
}

#[test]
fn run_shows_what_each_batch_changed_and_log_shows_a_batch_diff() {
    let fx = Fixture::new();
    let r = reply(&[
        block(
            "updatefile README.md",
            &[("CONTENT", "# demo\n\nMore words.")],
        ),
        block("newfile src/app.py", &[("CONTENT", "print('hi')")]),
        block("runcommand", &[("CMD", "ls")]),
    ]);
    let (out, text) = fx.run(&[&r], &[]);
    assert!(out.status.code().is_some(), "{text}");
    // The stat, never pasted into the chat's results.
    assert!(
        text.contains("--- what this batch changed (--diff shows the lines) ---"),
        "{text}"
    );
    assert!(text.contains(" README.md  | 2 ++\n"), "{text}");
    assert!(text.contains(" src/app.py | 1 +\n"), "{text}");
    assert!(
        text.contains("2 files changed, 3 insertions(+), 0 deletions(-)"),
        "{text}"
    );
    let results = text
        .split("--- what this batch changed")
        .next()
        .expect("results");
    assert!(
        !results.contains("+More words."),
        "no diff in the chat's message"
    );
    // --diff: the lines.
    let fx2 = Fixture::new();
    let (_, text) = fx2.run(&[&r], &["--diff"]);
    assert!(
        text.contains("--- a/README.md\n+++ b/README.md\n"),
        "{text}"
    );
    assert!(text.contains("+More words.\n"), "{text}");
    assert!(
        text.contains("--- /dev/null\n+++ b/src/app.py\n@@ -0,0 +1 @@\n+print('hi')\n"),
        "{text}"
    );
    // log --diff ID: the same diff from the store.
    let id = batch_id(&text, 1);
    let (out, shown) = host_in(
        &fx2,
        &[
            "log",
            "--workspace",
            fx2.ws().to_str().expect("utf-8"),
            "--diff",
            &id,
        ],
    );
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("+More words.\n") && shown.contains(" src/app.py | 1 +"),
        "{shown}"
    );
    let (out, _) = host_in(
        &fx2,
        &[
            "log",
            "--workspace",
            fx2.ws().to_str().expect("utf-8"),
            "--diff",
            "nope",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_BATCH_NOT_FOUND"));
    // At @@done: what changed since the session's start commit, and later `log --diff SESSION`.
    let fx3 = Fixture::new();
    let done = "@@done\n<<<MSG\nThe readme says more.\nMSG>>>\n@@end\n@@eof\n";
    let (_, text) = fx3.run(&[&r, done], &[]);
    let session = common::session_of(&text);
    assert!(
        text.contains(&format!("What changed since the commit the session started from (changes not committed before it included) (--diff shows the lines; later: keyless-host log --diff {session}):\n README.md  | 2 ++\n src/app.py | 1 +\n2 files changed, 3 insertions(+), 0 deletions(-)")),
        "{text}"
    );
    let (_, shown) = host_in(
        &fx3,
        &[
            "log",
            "--workspace",
            fx3.ws().to_str().expect("utf-8"),
            "--diff",
            &session,
        ],
    );
    assert!(
        shown.starts_with(&format!(
            "session {session}: what differs from the commit it started from"
        )),
        "{shown}"
    );
    assert!(
        shown.contains("+More words.\n") && shown.contains("+print('hi')\n"),
        "{shown}"
    );
    // log: a header row and local times.
    let (_, log) = host_in(
        &fx2,
        &["log", "--workspace", fx2.ws().to_str().expect("utf-8")],
    );
    assert!(log.starts_with("WHEN "), "{log}");
    assert!(
        log.lines()
            .nth(1)
            .is_some_and(|l| l.as_bytes().get(4) == Some(&b'-')),
        "{log}"
    );
    // Every row's TARGET starts where its header does, whatever the ids' and codes' lengths.
    let at = log.find("TARGET").expect("TARGET");
    let rows: Vec<&str> = log
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("20") && l.chars().count() > at)
        .collect();
    assert!(!rows.is_empty(), "{log}");
    for row in rows {
        assert_eq!(
            row.chars().nth(at - 1),
            Some(' '),
            "misaligned: {row}\n{log}"
        );
        assert_ne!(row.chars().nth(at), Some(' '), "misaligned: {row}\n{log}");
    }
    // log --diff with no id: the newest batch.
    let (out, newest) = host_in(
        &fx2,
        &[
            "log",
            "--workspace",
            fx2.ws().to_str().expect("utf-8"),
            "--diff",
        ],
    );
    assert!(out.status.success(), "{newest}");
    assert!(newest.starts_with("batch "), "{newest}");
}

#[test]
fn undo_knows_about_commits_twice_and_bad_ids() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let w = ws.to_str().expect("utf-8");
    let edit = reply(&[block("updatefile README.md", &[("CONTENT", "# changed")])]);
    let commit = block("commit", &[("MSG", "Change the readme")]) + "@@next\n@@end\n@@eof\n";
    let (_, text) = fx.run(&[&edit, &commit], &["--yes", "--no-push"]);
    let first = batch_id(&text, 1);
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%s"]),
        "Change the readme\n"
    );
    // The batch's file is recorded by a later commit: undo refuses and says how to revert.
    let (out, _) = host_in(&fx, &["undo", "--workspace", w]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("KA_UNDO_REFUSED") && err.contains("a later commit recorded"),
        "{err}"
    );
    assert!(
        err.contains(&format!("undo --batch {first} --revert")),
        "{err}"
    );
    assert_eq!(
        fx.read("README.md"),
        b"# changed\n",
        "nothing restored under the commit"
    );
    // --list shows it, with the id log prints.
    let (_, list) = host_in(&fx, &["undo", "--workspace", w, "--list"]);
    assert!(
        list.contains(&first) && list.contains("committed in"),
        "{list}"
    );
    // --revert: a new commit that takes it back.
    let (out, shown) = host_in(
        &fx,
        &["undo", "--workspace", w, "--batch", &first, "--revert"],
    );
    assert!(
        out.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fx.read("README.md"), b"# demo\n");
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%s"]),
        "Revert \"Change the readme\"\n"
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    // A reverted batch is not reverted again.
    let (out, _) = host_in(
        &fx,
        &["undo", "--workspace", w, "--batch", &first, "--revert"],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("already undone"), "{err}");
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%s"]),
        "Revert \"Change the readme\"\n"
    );
    // A batch not committed: undone once, then "already undone".
    let again = reply(&[block("updatefile README.md", &[("CONTENT", "# again")])]);
    let (_, text) = fx.run(&[&again], &[]);
    let second = batch_id(&text, 1);
    let (out, shown) = host_in(&fx, &["undo", "--workspace", w, "--batch", &second]);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("1 file\n  restored README.md"), "{shown}");
    assert_eq!(fx.read("README.md"), b"# demo\n");
    let (out, _) = host_in(&fx, &["undo", "--workspace", w, "--batch", &second]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("KA_UNDO_REFUSED") && err.contains("already undone"),
        "{err}"
    );
    assert_eq!(fx.read("README.md"), b"# demo\n");
    // A bad id is KA_BATCH_NOT_FOUND, not an I/O error; so is a path-shaped one.
    for bad in ["nope", "../../etc/1-1", "s-x/1-9"] {
        let (out, _) = host_in(&fx, &["undo", "--workspace", w, "--batch", bad]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("KA_BATCH_NOT_FOUND"), "{bad}: {err}");
    }
    // A pushed commit: undo says to revert it with git and push.
    let edit2 = reply(&[block("updatefile README.md", &[("CONTENT", "# pushed")])]);
    let (_, text) = fx.run(&[&edit2, &commit], &["--yes"]);
    let third = batch_id(&text, 1);
    let (_, _) = host_in(&fx, &["undo", "--workspace", w, "--batch", &third]);
    let (out, _) = host_in(
        &fx,
        &["undo", "--workspace", w, "--batch", &third, "--revert"],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("was pushed") && err.contains("git revert"),
        "{err}"
    );
    assert_eq!(fx.read("README.md"), b"# pushed\n");
}
