//! Attacks on the sandbox boundary, each against the real `keyless-host` binary in a temp folder.
//! A canary file outside the workspace (in the fixture's own temp folder) shows whether anything
//! the model wrote ran outside the sandbox.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // fixture helpers fail the test loudly

#[path = "../common/mod.rs"]
mod common;

mod kernel;

use common::{block, git, host_in, make_executable, reply, run_cmd, Fixture};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A shell script that writes `canary` (an absolute path) when it runs.
fn canary_script(canary: &Path) -> String {
    format!("#!/bin/sh\necho ran > '{}'\n", canary.display())
}

fn sandbox_line(fx: &Fixture) -> String {
    let (_, text) = host_in(
        fx,
        &["doctor", "--workspace", fx.ws().to_str().expect("utf8")],
    );
    text.lines()
        .find(|l| l.contains("sandbox"))
        .unwrap_or("")
        .to_string()
}

/// Under CI the sandbox must be whole: a CI machine without namespaces or Landlock would
/// otherwise go green with the sandbox untested.
fn required_under_ci(what: &str, line: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{what} missing under CI, so the sandbox would go untested: {line}"
    );
    eprintln!("{what} is not available here, its checks are skipped: {line}");
}

/// Whether mount and PID namespaces are available here (they are for root and on most distros).
/// Only a host that says they are unavailable skips the checks that need them, never under CI.
fn namespaces(fx: &Fixture) -> bool {
    let line = sandbox_line(fx);
    if line.contains("namespaces unavailable") || line.contains("UNAVAILABLE") {
        required_under_ci("mount and PID namespaces", &line);
        return false;
    }
    true
}

fn commit_reply(msg: &str) -> String {
    block("commit", &[("MSG", msg)]) + "@@next\n@@end\n@@eof\n"
}

#[test]
fn hooks_written_by_a_command_never_run() {
    let fx = Fixture::new();
    if !namespaces(&fx) {
        return;
    }
    let canary = fx.root.join("canary-hook");
    let script = canary_script(&canary);
    // A command that runs without confirmation plants a pre-push hook and a pre-commit hook.
    let line = format!(
        "printf \"{}\" > .git/hooks/pre-push; chmod +x .git/hooks/pre-push; cp .git/hooks/pre-push .git/hooks/pre-commit; echo planted",
        script.replace('"', "\\\"").replace('\n', "\\n")
    );
    // Positive control: the same line run directly by sh, then a commit, fires the hook.
    let control = Fixture::new();
    let out = Command::new("sh")
        .args(["-c", &line])
        .current_dir(control.ws())
        .output()
        .expect("sh");
    git(
        &control.ws(),
        &[
            "-c",
            "user.name=U",
            "-c",
            "user.email=u@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "control",
        ],
    );
    assert!(
        canary.exists(),
        "without keyless the planted hook does not run either: {out:?}"
    );
    std::fs::remove_file(&canary).expect("reset the canary");
    let plant = run_cmd(&line);
    let (_, text) = fx.run(
        &[
            &plant,
            &reply(&[block("newfile a.txt", &[("CONTENT", "a")])]),
            &commit_reply("a"),
        ],
        &["--mode", "auto"],
    );
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(!fx.ws().join(".git/hooks/pre-push").exists());
    assert!(!canary.exists(), "a hook ran outside the sandbox: {text}");
    assert!(
        git(
            &fx.root.join("origin.git"),
            &["log", "--format=%s", "feature"]
        )
        .starts_with("a\n"),
        "{text}"
    );
    // A command the user approved may write .git, but never its hooks or config.
    let (_, text) = fx.run(&[&plant], &["--mode", "ask", "--yes"]);
    assert!(text.contains("[approved by --yes]"), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(!fx.ws().join(".git/hooks/pre-push").exists());
    let (_, text) = fx.run(
        &[&run_cmd(
            "git config core.fsmonitor 'touch /tmp/x' && echo set",
        )],
        &["--mode", "ask", "--yes"],
    );
    assert!(
        !text.contains("\nset\n"),
        "an approved command changed .git/config: {text}"
    );
}

#[test]
fn hooks_and_config_planted_before_never_run_in_the_host() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let hooks = ws.join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("hooks");
    let mut canaries = Vec::new();
    for hook in [
        "pre-push",
        "pre-commit",
        "post-commit",
        "commit-msg",
        "reference-transaction",
    ] {
        let c = fx.root.join(format!("canary-{hook}"));
        std::fs::write(hooks.join(hook), canary_script(&c)).expect("hook");
        make_executable(&hooks.join(hook));
        canaries.push(c);
    }
    // Config that names programs: each writes its own canary when git runs it.
    let alt_hooks = ws.join("alt-hooks");
    std::fs::create_dir_all(&alt_hooks).expect("dir");
    let c = fx.root.join("canary-hookspath");
    std::fs::write(alt_hooks.join("pre-push"), canary_script(&c)).expect("hook");
    make_executable(&alt_hooks.join("pre-push"));
    canaries.push(c);
    let mut program = |name: &str| {
        let c = fx.root.join(format!("canary-{name}"));
        let p = format!("sh -c 'echo ran > {}' #", c.display());
        canaries.push(c);
        p
    };
    let settings = [
        ("core.hooksPath", alt_hooks.display().to_string()),
        ("core.fsmonitor", program("fsmonitor")),
        ("core.pager", program("pager")),
        ("core.sshCommand", program("ssh")),
        ("core.askPass", program("askpass")),
        ("credential.helper", format!("!{}", program("credential"))),
        ("remote.origin.receivepack", program("receivepack")),
        ("remote.origin.uploadpack", program("uploadpack")),
        ("gpg.program", program("gpg")),
        ("commit.gpgSign", "true".into()),
        ("diff.external", program("diff")),
    ];
    for (k, v) in &settings {
        git(&ws, &["config", k, v]);
    }
    let (_, text) = fx.run(
        &[
            &reply(&[block("newfile b.txt", &[("CONTENT", "b")])]),
            &commit_reply("b"),
        ],
        &["--mode", "auto"],
    );
    for c in &canaries {
        assert!(
            !c.exists(),
            "{} ran outside the sandbox: {text}",
            c.display()
        );
    }
    assert!(text.contains("pushed to origin/feature"), "{text}");
    assert!(git(
        &fx.root.join("origin.git"),
        &["log", "--format=%s", "feature"]
    )
    .starts_with("b\n"));
}

#[test]
fn push_goes_only_to_the_origin_recorded_at_session_start() {
    let fx = Fixture::new();
    let ws = fx.ws();
    git(&fx.root, &["init", "-q", "--bare", "evil.git"]);
    // A command cannot repoint origin (its config is read-only in the sandbox).
    let (_, text) = fx.run(
        &[&run_cmd(
            "git remote set-url origin ../evil.git; git remote get-url origin",
        )],
        &["--mode", "auto"],
    );
    if namespaces(&fx) {
        assert!(text.contains("../origin.git"), "{text}");
    }
    // If origin changed anyway after the session started, nothing is pushed there.
    let (_, text) = fx.run(&[&reply(&[block("say", &[("MSG", "hi")])])], &[]);
    let session = common::session_of(&text);
    git(&ws, &["remote", "set-url", "origin", "../evil.git"]);
    std::fs::write(ws.join("c.txt"), "c\n").expect("write");
    let (_, text) = fx.run(&[&commit_reply("c")], &["--session", &session, "--yes"]);
    assert!(
        text.contains("code: KA_GIT_FAILURE")
            && text.contains("not to ../origin.git as recorded at session start"),
        "{text}"
    );
    assert_eq!(
        git(&fx.root.join("evil.git"), &["for-each-ref"]),
        "",
        "nothing was pushed to the model's remote"
    );
}

#[test]
fn a_repository_made_during_the_session_is_not_used() {
    let fx = Fixture::new();
    let plain = fx.root.join("plain");
    std::fs::create_dir_all(&plain).expect("dir");
    // Another repository elsewhere, which a planted .git file would point to.
    git(&fx.root, &["init", "-q", "-b", "dev", "other"]);
    let other = fx.root.join("other");
    git(
        &other,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "theirs",
            "--author",
            "T <t@x>",
        ],
    );
    let plant = run_cmd(&format!(
        "printf 'gitdir: {}/.git\\n' > .git",
        other.display()
    ));
    // A repository the model makes itself, harmless enough for the git guard to keep.
    let made = run_cmd("git init -q -b dev . && echo made");
    let files = fx.reply_files(&[&plant, &made, &commit_reply("mine")]);
    let out = fx
        .host()
        .args([
            "run",
            "--mode",
            "auto",
            "--auto-init",
            "--protect",
            "release/*",
            "--workspace",
        ])
        .arg(&plain)
        .args(&files)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    // The .git file pointing elsewhere is taken away at once (the git guard)…
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(
        text.contains("a .git file pointing outside the workspace"),
        "{text}"
    );
    // …and the repository the model made is never the one @@commit uses.
    assert!(text.contains("code: KA_NOT_A_GIT_REPOSITORY"), "{text}");
    assert_eq!(
        git(&other, &["log", "--format=%s"]),
        "theirs\n",
        "the other repository is untouched"
    );
}

#[test]
fn agent_state_is_read_only_and_snapshot_scripts_are_confined() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let snap = ws.join(".agent/snapshot");
    std::fs::create_dir_all(&snap).expect("dir");
    let canary = fx.root.join("canary-snapshot");
    std::fs::write(
        snap.join("10-probe.sh"),
        format!("echo pwned > '{}'; echo probe ran\n", canary.display()),
    )
    .expect("write");
    let user_snap = fx.user_config().join("snapshot");
    std::fs::create_dir_all(&user_snap).expect("dir");
    std::fs::write(user_snap.join("20-user.sh"), "echo from the user config\n").expect("write");
    let (_, text) = host_in(&fx, &["prompt", "--workspace", ws.to_str().expect("utf8")]);
    assert!(text.contains("probe ran"), "{text}");
    assert!(text.contains("from the user config"), "{text}");
    assert!(
        !canary.exists(),
        "a snapshot script wrote outside the sandbox"
    );
    if !namespaces(&fx) {
        return;
    }
    let (_, text) = fx.run(
        &[&run_cmd(
            "echo 'echo hi' > .agent/snapshot/30-evil.sh; echo x > .agent/keyless.db; ls .agent",
        )],
        &["--mode", "auto"],
    );
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(!snap.join("30-evil.sh").exists());
}

#[test]
fn workspace_settings_cannot_widen_what_runs_until_approved() {
    let fx = Fixture::new();
    let ws = fx.ws();
    // The model cannot write keyless.json with a file command…
    let (_, text) = fx.run(
        &[&reply(&[block(
            "newfile keyless.json",
            &[("CONTENT", r#"{"Commands": {"Mode": "Auto"}}"#)],
        )])],
        &[],
    );
    assert!(text.contains("code: KA_PATH_OUTSIDE"), "{text}");
    assert!(!ws.join("keyless.json").exists());
    // …and when one is there (planted some other way), it does not widen anything unapproved.
    std::fs::write(
        ws.join("keyless.json"),
        r#"{"Commands": {"Mode": "Auto", "Network": true, "AllowList": ["*"]}, "Limits": {"MaxCommandsPerResponse": 7}}"#,
    )
    .expect("write");
    let touch = run_cmd("touch pwned.txt");
    let (_, text) = fx.run(&[&touch], &[]);
    assert!(text.contains("code: KA_COMMAND_DECLINED"), "{text}");
    assert!(!ws.join("pwned.txt").exists());
    let (_, cfg) = host_in(&fx, &["config", "--workspace", ws.to_str().expect("utf8")]);
    assert!(
        cfg.contains("Commands.Mode                      = Ask"),
        "{cfg}"
    );
    assert!(cfg.contains("not applied: Commands.Mode:"), "{cfg}");
    assert!(
        cfg.contains("Limits.MaxCommandsPerResponse      = 7"),
        "{cfg}"
    );
    // The user approves it: now it applies…
    let (out, text) = host_in(
        &fx,
        &[
            "config",
            "--approve",
            "--workspace",
            ws.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Commands.Mode                      = Auto"),
        "{text}"
    );
    let (_, text) = fx.run(&[&touch], &[]);
    assert!(ws.join("pwned.txt").exists(), "{text}");
    // …until it changes.
    std::fs::write(
        ws.join("keyless.json"),
        r#"{"Commands": {"Mode": "Auto", "Network": true, "AllowList": ["*", "rm *"]}}"#,
    )
    .expect("write");
    let (_, cfg) = host_in(&fx, &["config", "--workspace", ws.to_str().expect("utf8")]);
    assert!(
        cfg.contains("Commands.Mode                      = Ask"),
        "{cfg}"
    );
    if namespaces(&fx) {
        let (_, text) = fx.run(&[&run_cmd("echo '{}' > keyless.json")], &["--mode", "auto"]);
        assert!(text.contains("Read-only file system"), "{text}");
    }
}

#[test]
fn the_host_binary_in_the_workspace_is_protected() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let tools = ws.join("tools");
    std::fs::create_dir_all(&tools).expect("dir");
    let exe = tools.join("keyless-host");
    std::fs::copy(env!("CARGO_BIN_EXE_keyless-host"), &exe).expect("copy");
    make_executable(&exe);
    let files = fx.reply_files(&[
        &reply(&[block(
            "updatefile tools/keyless-host",
            &[("CONTENT", "#!/bin/sh\necho replaced")],
        )]),
        &run_cmd(
            "echo '#!/bin/sh' > tools/keyless-host; mv tools/keyless-host tools/old; echo done",
        ),
    ]);
    let out = Command::new(&exe)
        .env("XDG_CONFIG_HOME", fx.root.join("config"))
        .args([
            "run",
            "--mode",
            "auto",
            "--failure-mode",
            "continue",
            "--workspace",
        ])
        .arg(&ws)
        .args(&files)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("code: KA_PATH_OUTSIDE"), "{text}");
    let bytes = std::fs::read(&exe).expect("read");
    assert_eq!(
        bytes,
        std::fs::read(env!("CARGO_BIN_EXE_keyless-host")).expect("read"),
        "the host binary was changed: {text}"
    );
}

fn abstract_listener(name: &str) -> std::os::unix::net::UnixListener {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("addr");
    std::os::unix::net::UnixListener::bind_addr(&addr).expect("bind")
}
