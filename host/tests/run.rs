//! `keyless-host run` / `undo` on real temp workspaces: real git repositories with a bare repo as
//! origin, checked with the git CLI; line endings, BOMs, backups, symlinks, the command policy,
//! timeouts and output caps.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

mod common;

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

#[test]
fn killed_mid_batch_leaves_no_partial_file() {
    // A batch of 8 large updatefiles (4 files, 2 versions each, about 230 KB apiece, the reply
    // near MaxResponseChars' 2,000,000, and each version a different length) is killed at the very moment one of its writes becomes visible on disk:
    // the test watches the target file's metadata (inode, length, modification time; a stat,
    // which never waits on keyless's write lease) and kills keyless-host as soon as it changes.
    // A write that puts the bytes into the file itself takes long enough for the kill to land in
    // the middle of it; a temp file renamed over the target is whole the moment it shows. Every
    // file must then be wholly one version (the original or one complete update), compared
    // byte for byte, and every kill must have landed between two of the batch's writes.
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
    for trial in 0..trials {
        // This trial kills at the write of version `w` to file `t`.
        let (t, w) = (trial % FILES, trial / FILES);
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
        "only {mid_batch} of {trials} kills landed between two writes"
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
    // The batch is running: its first write is there.
    assert!(common::wait_until(
        std::time::Duration::from_secs(10),
        || fx.ws().join("appended.txt").exists()
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
