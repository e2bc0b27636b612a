//! Nothing keyless starts for the user runs what the model wrote: git for a push, the
//! version probes, an MCP stdio server, `doctor`'s probes and the user's own configuration files
//! that are links into the workspace. Each attack plants a program or a setting that writes a
//! canary outside the workspace, runs the real `keyless-host` the way a user would, and checks
//! the canary is absent; a positive control shows the same payload fires when run the way the
//! attack expects.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // the helpers fail the test loudly

mod common;

use common::{block, git, make_executable, reply, run_cmd, Fixture};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A program that writes `canary` and fails, as a planted one would.
fn plant(path: &Path, canary: &Path) {
    std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
    std::fs::write(
        path,
        format!("#!/bin/sh\necho fired >> '{}'\nexit 1\n", canary.display()),
    )
    .expect("plant");
    make_executable(path);
}

/// A folder of programs the launcher may trust: not in the workspace, not in a temp folder
/// (Cargo's per-target temp folder under `target/`).
fn trusted_bin(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trusted-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("trusted bin");
    d
}

/// `first` folders, then the test's own PATH.
fn path_with(first: &[&Path]) -> String {
    let mut parts: Vec<String> = first.iter().map(|p| p.display().to_string()).collect();
    parts.push(std::env::var("PATH").unwrap_or_default());
    parts.join(":")
}

fn fired(canary: &Path) -> bool {
    canary.exists()
}

/// The control: `line` run by `sh` in the workspace with `path` fires the payload.
fn control(fx: &Fixture, line: &str, path: &str, canary: &Path) {
    let _ = Command::new("sh")
        .args(["-c", line])
        .current_dir(fx.ws())
        .env("PATH", path)
        .env("HOME", fx.home())
        .output()
        .expect("sh");
    assert!(fired(canary), "the planted payload does not fire: {line}");
    std::fs::remove_file(canary).expect("reset the canary");
}

/// Attack 1: The push starts git, which starts ssh: a `node_modules/.bin/ssh` on the user's PATH (as
/// an absolute folder or a relative entry) is never the one run.
#[test]
fn the_push_never_runs_an_ssh_the_model_planted_on_path() {
    for relative in [false, true] {
        let fx = Fixture::new();
        let canary = fx.root.join("canary");
        plant(&fx.ws().join("node_modules/.bin/ssh"), &canary);
        git(
            &fx.ws(),
            &["remote", "set-url", "origin", "ssh://git@127.0.0.1:9/x.git"],
        );
        let planted = if relative {
            PathBuf::from("node_modules/.bin")
        } else {
            fx.ws().join("node_modules/.bin")
        };
        let path = path_with(&[&planted]);
        control(&fx, "git push origin HEAD:refs/heads/x", &path, &canary);
        let files = fx.reply_files(&[&reply(&[
            block("newfile", &[("CONTENT", "x\n")]).replace("@@newfile", "@@newfile a.txt"),
            block("commit", &[("MSG", "a change")]),
        ])]);
        let out = fx
            .host()
            .args(["run", "--yes", "--workspace"])
            .arg(fx.ws())
            .args(&files)
            .current_dir(fx.ws())
            .env("PATH", &path)
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !fired(&canary),
            "relative={relative}: the model's ssh ran:\n{text}"
        );
        // The commit is made; the push went to the real ssh, which could not connect.
        assert!(text.contains("the commit is made"), "{text}");
        assert!(git(&fx.ws(), &["log", "--format=%s", "-1"]).contains("a change"));
    }
}

/// `keyless-host run` of one `true` command in the fixture's workspace, with `path` as PATH.
fn run_true(fx: &Fixture, path: &str) -> std::process::Output {
    fx.host()
        .args(["run", "--workspace"])
        .arg(fx.ws())
        .args(fx.reply_files(&[&run_cmd("true")]))
        .env("PATH", path)
        .output()
        .expect("run")
}

/// Attack 2: The version probes at session start: `npm` is `#!/usr/bin/env node`, and a `.venv/bin/node`
/// of the model's comes first on PATH. The probe runs the trusted node (or none), never the
/// model's, and the next variant (the probe cache key changing) changes nothing.
#[test]
fn version_probes_never_run_a_node_the_model_planted() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    plant(&fx.ws().join(".venv/bin/node"), &canary);
    let bin = trusted_bin("probe");
    std::fs::write(
        bin.join("npm"),
        "#!/usr/bin/env node\nconsole.log('10.9.8');\n",
    )
    .expect("npm");
    make_executable(&bin.join("npm"));
    let path = path_with(&[&fx.ws().join(".venv/bin"), &bin]);
    control(&fx, "npm --version", &path, &canary);
    for round in 0..2 {
        let out = run_true(&fx, &path);
        assert!(
            !fired(&canary),
            "round {round}: a probe ran the model's node:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // The cache key changes: the probes run again.
        let _ = std::fs::remove_file(fx.ws().join(".agent/snapshot-cache.json"));
    }
    let _ = std::fs::remove_dir_all(bin);
}

/// The version probes run once while nothing they depend on changes, even when a probe writes a
/// file the cache key reads (rustup writes its settings the first time it runs in a fresh home):
/// the second run does not probe again.
#[test]
fn a_probe_that_writes_what_the_cache_key_reads_runs_once() {
    let fx = Fixture::new();
    let bin = trusted_bin("probe-once");
    let count = fx.root.join("probed");
    std::fs::write(
        bin.join("jq"),
        format!(
            "#!/bin/sh\necho x >> '{}'\necho 'jq 1.0' > '{}'\necho jq-1.7\n",
            count.display(),
            fx.home().join(".tool-versions").display()
        ),
    )
    .expect("jq");
    make_executable(&bin.join("jq"));
    let path = path_with(&[&bin]);
    let probes = || {
        std::fs::read_to_string(&count)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let mut after = Vec::new();
    for _ in 0..3 {
        let out = run_true(&fx, &path);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("session "),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        after.push(probes());
    }
    assert!(after[0] > 0, "the probe never ran jq: {after:?}");
    assert_eq!(after[1], after[0], "the second run probed again: {after:?}");
    assert_eq!(after[2], after[0], "{after:?}");
    let _ = std::fs::remove_dir_all(bin);
}

/// Attack 3: A user-declared MCP stdio server whose program is a `#!/usr/bin/env node` script (as npx
/// is) starts with a PATH the model cannot write: the planted node never runs.
#[test]
fn an_mcp_server_script_never_runs_a_node_the_model_planted() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    plant(&fx.ws().join(".venv/bin/node"), &canary);
    let bin = trusted_bin("mcp");
    std::fs::write(
        bin.join("fake-npx"),
        "#!/usr/bin/env node\nprocess.exit(3);\n",
    )
    .expect("npx");
    make_executable(&bin.join("fake-npx"));
    std::fs::create_dir_all(fx.user_config()).expect("config");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({"Mcp": {"Servers": {"files": {"Command": "fake-npx", "Args": ["-y", "server"]}}}})
            .to_string(),
    )
    .expect("keyless.json");
    let path = path_with(&[&fx.ws().join(".venv/bin"), &bin]);
    control(&fx, "fake-npx -y server", &path, &canary);
    for args in [&["mcp", "list"][..], &["doctor"][..]] {
        let out = fx
            .host()
            .args(args)
            .arg("--workspace")
            .arg(fx.ws())
            .env("PATH", &path)
            .output()
            .expect("keyless-host");
        assert!(
            !fired(&canary),
            "{args:?} ran the model's node:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(bin);
}

/// Attack 4: `doctor` runs `ssh -V` and `git --version` through the launcher: neither the model's ssh
/// nor its git on PATH.
#[test]
fn doctor_never_runs_the_models_ssh_or_git() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    for name in ["ssh", "git"] {
        plant(&fx.ws().join(".venv/bin").join(name), &canary);
    }
    let path = path_with(&[&fx.ws().join(".venv/bin")]);
    control(&fx, "ssh -V", &path, &canary);
    let out = fx
        .host()
        .args(["ssh", "add", "prod", "--host", "127.0.0.1", "--user", "u"])
        .output()
        .expect("ssh add");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fx
        .host()
        .args(["doctor", "--workspace"])
        .arg(fx.ws())
        .env("PATH", &path)
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!fired(&canary), "doctor ran a planted program:\n{text}");
    assert!(text.contains("git version"), "{text}");
}

/// Attack 7: A dotfiles workspace: the user's `~/.gitconfig` is a link to a file of the workspace. The
/// model cannot write it with a file command, a command's change is put back, and the host's
/// push never runs with it while the model could write it.
#[test]
fn the_users_config_files_linked_into_the_workspace_are_theirs() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("dotfiles")).expect("dotfiles");
    let original = "[user]\n\tname = Test\n";
    std::fs::write(ws.join("dotfiles/gitconfig"), original).expect("gitconfig");
    common::commit_all(&ws, "dotfiles");
    std::os::unix::fs::symlink(ws.join("dotfiles/gitconfig"), fx.home().join(".gitconfig"))
        .expect("link");
    git(
        &ws,
        &["remote", "set-url", "origin", "ssh://git@127.0.0.1:9/x.git"],
    );
    let payload = format!(
        "[core]\n\tsshCommand = \"sh -c 'echo fired >> {}' #\"\n",
        canary.display()
    );
    // Control: with that setting in the linked file, the user's next push runs it.
    std::fs::write(
        ws.join("dotfiles/gitconfig"),
        format!("{original}{payload}"),
    )
    .expect("w");
    let _ = Command::new("git")
        .args(["push", "origin", "HEAD:refs/heads/x"])
        .current_dir(&ws)
        .env("HOME", fx.home())
        .output()
        .expect("git push");
    assert!(fired(&canary), "the planted sshCommand does not fire");
    std::fs::remove_file(&canary).expect("reset");
    std::fs::write(ws.join("dotfiles/gitconfig"), original).expect("restore");
    // A file command: refused, with the reason.
    let edit = reply(&[block(
        "editfile",
        &[("FIND", "[user]"), ("REPLACE", &format!("{payload}[user]"))],
    )
    .replace("@@editfile", "@@editfile dotfiles/gitconfig")]);
    let (_, text) = fx.run(&[&edit], &["--yes"]);
    assert!(text.contains("KA_PATH_OUTSIDE"), "{text}");
    assert!(text.contains("your own configuration files"), "{text}");
    assert!(text.contains("note: your own configuration files are links into this workspace: ~/.gitconfig → dotfiles/gitconfig"), "{text}");
    // A command the user approved: the change does not stay.
    let append = format!("printf '%s' \"$(cat <<'EOF'\n{payload}EOF\n)\" >> dotfiles/gitconfig");
    let (_, text) = fx.run(&[&run_cmd(&append)], &["--yes"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("dotfiles/gitconfig")).expect("read"),
        original,
        "{text}"
    );
    // The next variant: the model renames the folder and makes a new one in its place.
    let swap = "mv dotfiles dotfiles2 && mkdir dotfiles && cp dotfiles2/gitconfig dotfiles/gitconfig && printf '[core]\\n\\tpager = x\\n' >> dotfiles/gitconfig";
    let (_, text) = fx.run(&[&run_cmd(swap)], &["--yes"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("dotfiles/gitconfig")).unwrap_or_default(),
        original,
        "{text}"
    );
    // The push: refused while git would read a file the model can write; the commit is made.
    let commit = reply(&[
        block("newfile", &[("CONTENT", "x\n")]).replace("@@newfile", "@@newfile a.txt"),
        block("commit", &[("MSG", "a change")]),
    ]);
    let (_, text) = fx.run(&[&commit], &["--yes"]);
    assert!(text.contains("KA_LAUNCH_REFUSED"), "{text}");
    assert!(
        text.contains("the commit is made, but not pushed"),
        "{text}"
    );
    assert!(!fired(&canary), "{text}");
}

/// The next variants of attack 7: a file the user's `~/.gitconfig` includes, a `~/.bashrc`
/// that links to a workspace file not written yet, and a `core.sshCommand` that names an ssh
/// config file in the workspace. Each is the user's: a file command is refused, the push is
/// refused while git names a file the model can write.
#[test]
fn config_the_user_pulls_in_from_the_workspace_is_theirs_too() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("dotfiles")).expect("dotfiles");
    std::fs::write(
        fx.home().join(".gitconfig"),
        format!(
            "[include]\n\tpath = {}\n[core]\n\tsshCommand = ssh -F {}\n",
            ws.join("dotfiles/gitconfig.local").display(),
            ws.join("dotfiles/ssh_config").display()
        ),
    )
    .expect("gitconfig");
    std::fs::write(ws.join("dotfiles/gitconfig.local"), "[user]\n\tname = T\n").expect("local");
    std::fs::write(ws.join("dotfiles/ssh_config"), "Host *\n").expect("ssh_config");
    std::os::unix::fs::symlink(ws.join("dotfiles/bashrc"), fx.home().join(".bashrc"))
        .expect("dangling link");
    common::commit_all(&ws, "dotfiles");
    git(
        &ws,
        &["remote", "set-url", "origin", "ssh://git@127.0.0.1:9/x.git"],
    );
    for (cmd, target) in [
        ("updatefile", "dotfiles/gitconfig.local"),
        ("newfile", "dotfiles/bashrc"),
    ] {
        let r = reply(&[block(cmd, &[("CONTENT", "[core]\n\tpager = x\n")])
            .replace(&format!("@@{cmd}"), &format!("@@{cmd} {target}"))]);
        let (_, text) = fx.run(&[&r], &["--yes"]);
        assert!(text.contains("KA_PATH_OUTSIDE"), "{target}: {text}");
    }
    assert!(!ws.join("dotfiles/bashrc").exists());
    // The model's ProxyCommand in the ssh config the user's git names: never run by the push.
    std::fs::write(
        ws.join("dotfiles/ssh_config"),
        format!(
            "Host *\n  ProxyCommand sh -c 'echo fired >> {}'\n",
            canary.display()
        ),
    )
    .expect("planted");
    let commit = reply(&[
        block("newfile", &[("CONTENT", "x\n")]).replace("@@newfile", "@@newfile a.txt"),
        block("commit", &[("MSG", "a change")]),
    ]);
    let (_, text) = fx.run(&[&commit], &["--yes"]);
    assert!(text.contains("KA_LAUNCH_REFUSED"), "{text}");
    assert!(!fired(&canary), "{text}");
}
