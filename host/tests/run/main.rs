//! `keyless-host run` / `undo` on real temp workspaces: real git repositories with a bare repo as
//! origin, checked with the git CLI; line endings, BOMs, backups, symlinks, the command policy,
//! timeouts and output caps.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // fixture helpers fail the test loudly

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod handover;
mod sessions;

use common::{block, git, host_in, reply, Fixture};
use std::process::Command;

#[test]
fn multi_turn_session_commits_and_pushes_to_a_bare_origin() {
    let fx = Fixture::new();
    let r1 = reply(&[
        block(
            "newfile src/lib.rs",
            &[("CONTENT", "pub fn one() -> u32 {\n    1\n}")],
        ),
        block("newfile docs/notes.md", &[("CONTENT", "notes")]),
    ]);
    let r2 = reply(&[
        block(
            "editfile src/lib.rs",
            &[("FIND", "    1"), ("REPLACE", "    2")],
        ),
        block("deletefile docs/notes.md", &[]),
        block("runcommand", &[("CMD", "cat src/lib.rs")]),
    ]);
    let r3 = block("commit", &[("MSG", "Add lib")]) + "@@done\n@@end\n@@eof\n";
    // Ask mode: the user approves the deletefile and the commit.
    let (out, text) = fx.run(&[&r1, &r2, &r3], &["--yes"]);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[KEYLESSAGENT RESULTS] turn=1 batch=3"),
        "{text}"
    );
    assert!(
        text.contains("<<<OUTPUT\npub fn one() -> u32 {\n    2\n}\nOUTPUT>>>"),
        "{text}"
    );
    assert!(text.contains("turn 1 done."), "{text}");
    // The git CLI sees the commit on the bare origin, with the deletion and without .agent.
    let origin = fx.root.join("origin.git");
    let log = git(&origin, &["log", "--format=%s", "feature"]);
    assert_eq!(log, "Add lib\ninit\n");
    let files = git(&origin, &["ls-tree", "-r", "--name-only", "feature"]);
    assert_eq!(
        files, "README.md\nsrc/lib.rs\n",
        "notes.md was created and deleted; .agent never committed"
    );
    assert_eq!(
        git(&fx.ws(), &["status", "--porcelain"]),
        "",
        "nothing left uncommitted"
    );
    assert_eq!(
        git(
            &fx.ws(),
            &["rev-parse", "--abbrev-ref", "feature@{upstream}"]
        ),
        "origin/feature\n"
    );
}

#[test]
fn verified_line_matches_sha256sum() {
    let fx = Fixture::new();
    let content = "line one\n\"quoted\" and \\ backslash\n\ttab";
    let (_, text) = fx.run(
        &[&reply(&[block("newfile a/b.txt", &[("CONTENT", content)])])],
        &[],
    );
    let sum = Command::new("sha256sum")
        .arg(fx.ws().join("a/b.txt"))
        .output()
        .expect("sha256sum");
    let sha = String::from_utf8_lossy(&sum.stdout)[..8].to_string();
    let bytes = fx.read("a/b.txt");
    let want = format!("verified: path=a/b.txt bytes={} lines=3 sha={sha} first=\"line one\\n\\\"quoted\\\" and \\\\ backslash\\n\\ttab\\n\"", bytes.len());
    assert!(text.contains(&want), "{text}\nwant {want}");
}

#[test]
fn line_endings_follow_editorconfig_gitattributes_and_siblings() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::write(
        ws.join(".editorconfig"),
        "root = true\n[*.cmd]\nend_of_line = crlf\n",
    )
    .expect("write");
    std::fs::write(ws.join(".gitattributes"), "*.ps1 text eol=crlf\n").expect("write");
    std::fs::create_dir_all(ws.join("win")).expect("dir");
    std::fs::write(ws.join("win/old.txt"), "a\r\nb\r\n").expect("write");
    let r = reply(&[
        block("newfile x.cmd", &[("CONTENT", "echo 1\necho 2")]),
        block("newfile y.ps1", &[("CONTENT", "a\nb")]),
        block("newfile win/new.txt", &[("CONTENT", "c\nd")]),
        block("newfile plain.txt", &[("CONTENT", "e\nf")]),
    ]);
    let (out, text) = fx.run(&[&r], &["--pace", "batch"]);
    // The batch ran; the task goes on (exit 5: no @@done yet).
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert_eq!(fx.read("x.cmd"), b"echo 1\r\necho 2\r\n", ".editorconfig");
    assert_eq!(
        fx.read("y.ps1"),
        b"a\r\nb\r\n",
        ".gitattributes via libgit2"
    );
    assert_eq!(
        fx.read("win/new.txt"),
        b"c\r\nd\r\n",
        "dominant sibling ending"
    );
    assert_eq!(fx.read("plain.txt"), b"e\nf\n", "platform default");
}

#[test]
fn crlf_and_bom_files_keep_their_form() {
    let fx = Fixture::new();
    std::fs::write(
        fx.ws().join("w.cs"),
        b"\xef\xbb\xbfusing A;\r\nclass B {}\r\n",
    )
    .expect("write");
    let r1 = reply(&[block(
        "editfile w.cs",
        &[("FIND", "class B {}"), ("REPLACE", "class B\n{\n}")],
    )]);
    let r2 = reply(&[block(
        "updatefile w.cs",
        &[("CONTENT", "using C;\nclass D {}")],
    )]);
    let (out, text) = fx.run(&[&r1], &[]);
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert_eq!(
        fx.read("w.cs"),
        b"\xef\xbb\xbfusing A;\r\nclass B\r\n{\r\n}\r\n",
        "100% CRLF with BOM after editfile"
    );
    fx.run(&[&r2], &[]);
    assert_eq!(
        fx.read("w.cs"),
        b"\xef\xbb\xbfusing C;\r\nclass D {}\r\n",
        "updatefile keeps BOM and CRLF"
    );
}

#[test]
fn file_command_failures_carry_their_codes() {
    let fx = Fixture::new();
    std::fs::write(fx.ws().join("dup.txt"), "x\ny\nx\n").expect("write");
    // A FIFO (which a command could make) is refused at once, never waited on.
    let made = Command::new("mkfifo")
        .arg(fx.ws().join("pipe"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let r = reply(&[
        block("newfile README.md", &[("CONTENT", "again")]),
        block("editfile dup.txt", &[("FIND", "x"), ("REPLACE", "z")]),
        block(
            "editfile dup.txt",
            &[("FIND", "nothing like it"), ("REPLACE", "z")],
        ),
        block("movefile dup.txt", &[("TO", "README.md")]),
        block("readfile missing.txt", &[]),
        block("readfile pipe", &[]),
        block("editfile pipe", &[("FIND", "x"), ("REPLACE", "z")]),
    ]);
    let (_, text) = fx.run(
        &[&r],
        &[
            "--pace",
            "batch",
            "--max-commands",
            "10",
            "--failure-mode",
            "continue",
        ],
    );
    assert!(
        text.contains(
            "status: error | code: KA_FILE_ALREADY_EXISTS\nreason: README.md already exists"
        ),
        "{text}"
    );
    assert!(text.contains("code: KA_FIND_NOT_UNIQUE\nreason: FIND text matched 2 times (must match exactly once), at lines 1, 3"), "{text}");
    assert!(
        text.contains("reason: FIND text matched 0 times (must match exactly once)"),
        "{text}"
    );
    assert!(
        text.contains("reason: README.md already exists; movefile never overwrites"),
        "{text}"
    );
    assert!(
        text.contains("code: KA_FILE_NOT_FOUND\nreason: missing.txt does not exist"),
        "{text}"
    );
    assert_eq!(
        text.matches("code: KA_FILE_IO\nreason: pipe is not a regular file")
            .count(),
        2,
        "{text}"
    );
    assert_eq!(fx.read("dup.txt"), b"x\ny\nx\n", "nothing changed");
}

#[test]
fn a_failure_stops_the_batch_and_a_later_done() {
    let fx = Fixture::new();
    let r = block(
        "editfile README.md",
        &[("FIND", "absent"), ("REPLACE", "x")],
    ) + &block("newfile later.txt", &[("CONTENT", "x")])
        + &block("say", &[("MSG", "still said")])
        + "@@done\n@@end\n@@eof\n";
    let (_, text) = fx.run(&[&r], &[]);
    assert!(text.contains("--- result 2/3 | #2 newfile | later.txt ---\nstatus: skipped\nreason: batch stopped at command #1"), "{text}");
    // The held-back @@done is listed too, so the model knows the turn did not end.
    assert!(
        text.contains(
            "--- result 3/3 | #4 done ---\nstatus: skipped\nreason: batch stopped at command #1"
        ),
        "{text}"
    );
    assert!(text.contains("[say] still said"), "{text}");
    assert!(
        !text.contains("turn 1 done."),
        "a failure skips the later @@done: {text}"
    );
    assert!(!fx.ws().join("later.txt").exists());
}

#[test]
fn symlinks_out_of_the_workspace_are_refused() {
    let fx = Fixture::new();
    let outside = fx.root.join("outside");
    std::fs::create_dir_all(&outside).expect("dir");
    std::fs::write(outside.join("secret.txt"), "secret\n").expect("write");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, fx.ws().join("link")).expect("symlink");
        std::os::unix::fs::symlink(fx.ws().join(".git"), fx.ws().join("gitlink")).expect("symlink");
    }
    let r = reply(&[
        block("readfile link/secret.txt", &[]),
        block("newfile link/new.txt", &[("CONTENT", "x")]),
        block("readfile gitlink/config", &[]),
    ]);
    let (_, text) = fx.run(&[&r], &["--failure-mode", "continue"]);
    assert!(text.contains("code: KA_PATH_OUTSIDE\nreason: link/secret.txt: follows a symlink out of the workspace"), "{text}");
    assert!(
        text.contains(
            "code: KA_PATH_OUTSIDE\nreason: link/new.txt: follows a symlink out of the workspace"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "code: KA_PATH_OUTSIDE\nreason: gitlink/config: follows a symlink into .git or .agent"
        ),
        "{text}"
    );
    assert!(!outside.join("new.txt").exists());
}

#[test]
fn policy_modes_deny_confirm_and_run() {
    let fx = Fixture::new();
    let r = reply(&[
        block("runcommand", &[("CMD", "git push --force")]),
        block("runcommand", &[("CMD", "echo hi > hi.txt")]),
        block("runcommand", &[("CMD", "git status --short")]),
    ]);
    // Ask mode without a terminal and without --yes: Risky is declined, Denied never runs.
    let (_, text) = fx.run(&[&r], &["--failure-mode", "continue"]);
    assert!(
        text.contains("code: KA_COMMAND_DENIED\nreason: denied by the command policy: force-push"),
        "{text}"
    );
    assert!(text.contains("code: KA_COMMAND_DECLINED"), "{text}");
    assert!(
        text.contains(
            "--- result 3/3 | #3 runcommand | git status --short ---\nstatus: ok | exit code: 0"
        ),
        "{text}"
    );
    assert!(!fx.ws().join("hi.txt").exists());
    // Auto mode runs the Risky command; Denied is still denied.
    let (_, text) = fx.run(&[&r], &["--mode", "auto", "--failure-mode", "continue"]);
    assert!(text.contains("code: KA_COMMAND_DENIED"), "{text}");
    assert_eq!(fx.read("hi.txt"), b"hi\n");
}

#[test]
fn timeouts_kill_the_whole_process_group() {
    let fx = Fixture::new();
    let marker = fx.root.join("marker");
    let bg = common::unique_seconds(3);
    let cmd = format!(
        "(sleep {bg}; touch {}) & sleep {}",
        marker.display(),
        common::unique_seconds(30)
    );
    let r = reply(&[block("runcommand timeout=1", &[("CMD", &cmd)])]);
    let started = std::time::Instant::now();
    let (_, text) = fx.run(&[&r], &["--mode", "auto"]);
    assert!(
        text.contains("status: error | code: KA_TIMEOUT | duration: 1."),
        "{text}"
    );
    assert!(text.contains("reason: killed after 1s (timeout)"), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // The background child is gone before it could write its marker: the group was killed.
    assert!(
        common::processes_with(&format!("sleep {bg}")).is_empty(),
        "the background child outlived the timeout"
    );
    assert!(
        !marker.exists(),
        "the background child was killed with the group"
    );
}

#[test]
fn output_is_capped_with_head_and_tail() {
    let fx = Fixture::new();
    // 20 MB of output; the results keep 8000 characters.
    let r = reply(&[block(
        "runcommand",
        &[(
            "CMD",
            "echo START; head -c 20000000 /dev/zero | tr '\\0' x; echo; echo END",
        )],
    )]);
    let (_, text) = fx.run(&[&r], &["--mode", "auto"]);
    assert!(
        text.contains("<<<OUTPUT\nSTART\n"),
        "{}",
        &text[..text.len().min(500)]
    );
    assert!(text.contains("characters omitted …]"));
    assert!(
        text.contains("x\nEND\n\nOUTPUT>>>") || text.contains("x\nEND\nOUTPUT>>>"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert!(text.len() < 20_000, "capped: {} bytes", text.len());
}

#[test]
fn undo_restores_a_batch() {
    let fx = Fixture::new();
    std::fs::write(fx.ws().join("keep.txt"), "original\n").expect("write");
    let r = reply(&[
        block("updatefile keep.txt", &[("CONTENT", "changed")]),
        block("newfile fresh.txt", &[("CONTENT", "new")]),
        block("deletefile README.md", &[]),
    ]);
    fx.run(&[&r], &[]);
    assert_eq!(fx.read("keep.txt"), b"changed\n");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["undo", "--workspace"])
        .arg(fx.ws())
        .output()
        .expect("undo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fx.read("keep.txt"), b"original\n");
    assert_eq!(fx.read("README.md"), b"# demo\n");
    assert!(!fx.ws().join("fresh.txt").exists());
    assert_eq!(git(&fx.ws(), &["status", "--porcelain"]), "?? keep.txt\n");
}

#[test]
fn git_refusals() {
    let fx = Fixture::new();
    git(&fx.ws(), &["checkout", "-q", "-b", "main"]);
    // No task branch: the session stays on main.
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        r#"{"Git": {"TaskBranch": ""}}"#,
    )
    .expect("config");
    let r = block("commit", &[("MSG", "x")]) + "@@next\n@@end\n@@eof\n";
    let (_, text) = fx.run(&[&r], &["--yes"]);
    assert!(
        text.contains(
            "code: KA_BRANCH_PROTECTED\nreason: branch \"main\" is protected (pattern \"main\")"
        ),
        "{text}"
    );
    let plain = fx.root.join("plain");
    std::fs::create_dir_all(&plain).expect("dir");
    let f = fx.root.join("c.txt");
    std::fs::write(&f, &r).expect("write");
    let out = fx
        .host()
        .arg("run")
        .arg("--yes")
        .arg("--workspace")
        .arg(&plain)
        .arg(&f)
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stdout).contains("code: KA_NOT_A_GIT_REPOSITORY"));
    // Git.AutoInit would make the repository on master, which is protected: the commit is
    // refused before anyone is asked, and no repository is made.
    let out = fx
        .host()
        .arg("run")
        .arg("--auto-init")
        .arg("--workspace")
        .arg(&plain)
        .arg(&f)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("code: KA_BRANCH_PROTECTED\nreason: branch \"master\" is protected"),
        "{text}"
    );
    assert!(!plain.join(".git").exists(), "nothing was made: {text}");
    let out = fx
        .host()
        .arg("run")
        .arg("--yes")
        .arg("--auto-init")
        .arg("--protect")
        .arg("release/*")
        .arg("--workspace")
        .arg(&plain)
        .arg(&f)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not pushed: the repository had no remote named origin at session start"),
        "{text}"
    );
    assert!(plain.join(".git").is_dir());
}

/// Folders that hold the user's own files are refused as workspaces, with KA_WORKSPACE_REFUSED
/// and what to do; without --workspace, only a git repository other than keyless's checkout is
/// taken, and (with no terminal to ask on) anything else is refused naming --workspace.
#[test]
fn workspaces_that_hold_the_users_files_are_refused() {
    let fx = Fixture::new();
    let home = fx.home();
    let cfg = fx.user_config();
    for d in [
        home.join("proj"),
        home.join(".ssh/keys"),
        cfg.join("snapshot"),
    ] {
        std::fs::create_dir_all(&d).expect("dir");
    }
    let r = fx.reply_files(&["@@done\n@@end\n@@eof\n"]);
    let refused = |ws: &std::path::Path, why: &str| {
        let out = fx
            .host()
            .arg("run")
            .arg("--workspace")
            .arg(ws)
            .arg(&r[0])
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(2)
                && err.starts_with("keyless-host: KA_WORKSPACE_REFUSED")
                && err.contains(why)
                && err.contains("--workspace"),
            "{}: {err}",
            ws.display()
        );
    };
    refused(std::path::Path::new("/"), "the root of the file system");
    refused(&home, "holds your home folder");
    refused(&fx.root, "holds your home folder");
    refused(&home.join("proj/.."), "holds your home folder");
    refused(&cfg.join("snapshot"), "inside your keyless config folder");
    refused(&home.join(".ssh/keys"), "where your credentials live");
    // A symlink to the home is the home.
    std::os::unix::fs::symlink(&home, fx.root.join("h")).expect("link");
    refused(&fx.root.join("h"), "holds your home folder");
    // Without --workspace: a folder that is not a repository, and keyless's own checkout.
    let no_ws = |cwd: &std::path::Path, why: &str| {
        let out = fx
            .host()
            .arg("run")
            .arg(&r[0])
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(2)
                && err.contains(why)
                && err.contains("pass --workspace DIR"),
            "{err}"
        );
    };
    no_ws(&home.join("proj"), "is not a git repository");
    let checkout = fx.root.join("keyless");
    for f in ["core/src/lib.rs", "host/src/main.rs"] {
        std::fs::create_dir_all(checkout.join(f).parent().expect("parent")).expect("dir");
        std::fs::write(checkout.join(f), "").expect("write");
    }
    std::fs::write(
        checkout.join("Cargo.toml"),
        "[workspace]\nmembers = [\"core\", \"host\"]\n",
    )
    .expect("write");
    git(&checkout, &["init", "-q"]);
    no_ws(&checkout, "keyless's own source checkout");
    // The fixture's repository is taken as it is.
    let out = fx
        .host()
        .arg("run")
        .arg(&r[0])
        .current_dir(fx.ws())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn format_retries_stop_the_turn() {
    let fx = Fixture::new();
    let bad = "@@bogus\n@@end\n@@eof\n";
    let (out, text) = fx.run(&[bad, bad, bad], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text.matches("[KEYLESSAGENT FORMAT ERROR]").count(),
        2,
        "{text}"
    );
    assert!(text.contains("turn 1 stopped: 3 invalid replies in a row (MaxFormatRetries = 3). The last reply, as received:\n@@bogus"), "{text}");
}

/// The id `run` prints for its Nth reply (`=== reply N …, id ID)`).
fn batch_id(run_output: &str, n: usize) -> String {
    run_output
        .lines()
        .filter(|l| l.starts_with("=== reply "))
        .nth(n - 1)
        .and_then(|l| l.rsplit_once("id "))
        .map(|(_, id)| id.trim_end_matches(')').to_string())
        .expect("batch id")
}
