//! Folders the git guard cannot look into: one whose permissions keep it from being listed (git
//! still runs a hook in a folder it may only search) and one whose name is not UTF-8. What a
//! command makes there is moved aside; one that was there before makes every command confirmed.

use super::*;

/// Someone whose permissions hold: as root (whose override lets it list any folder) the test
/// gives the fixture to `nobody` and starts every program as `nobody` (with `setpriv`).
struct User {
    nobody: bool,
}

impl User {
    fn of(fx: &common::Fixture) -> Self {
        let uid = Command::new("id").arg("-u").output().expect("id");
        let nobody = String::from_utf8_lossy(&uid.stdout).trim() == "0";
        if nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&fx.root)
                .status()
                .expect("chown")
                .success();
            assert!(ok, "chown");
        }
        User { nobody }
    }

    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        if self.nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// `keyless-host run` on `replies` in the fixture's workspace.
    fn run(&self, fx: &common::Fixture, replies: &[&str], extra: &[&str]) -> String {
        let files = fx.reply_files(replies);
        let out = self
            .cmd(env!("CARGO_BIN_EXE_keyless-host"))
            .env("XDG_CONFIG_HOME", fx.root.join("config"))
            .env("HOME", fx.home())
            .arg("run")
            .arg("--workspace")
            .arg(fx.ws())
            .args(extra)
            .args(&files)
            .output()
            .expect("run");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// The user's own git in `dir`, later: status (fsmonitor) and a commit (hooks).
    fn git(&self, fx: &common::Fixture, dir: &Path) {
        users_git_with(dir, || {
            let mut c = self.cmd("git");
            c.env("HOME", fx.home());
            c
        });
    }

    /// The positive control: `line` by `sh` in a fresh fixture's workspace, then the user's git
    /// in `sub`: the canary is written.
    fn control(&self, line: &str, canary: &Path, sub: &str) {
        let fx = common::Fixture::new();
        let me = User::of(&fx);
        let _ = std::fs::remove_file(canary);
        let out = me
            .cmd("sh")
            .args(["-c", line])
            .current_dir(fx.ws())
            .output()
            .expect("sh");
        me.git(&fx, &fx.ws().join(sub));
        assert!(
            canary.exists(),
            "without keyless the payload does not run either: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_file(canary);
        let _ = Command::new("chmod")
            .args(["-R", "u+rwx"])
            .arg(fx.ws())
            .status();
    }
}

/// A hook written into a repository whose hooks folder the command then makes unlistable
/// (`chmod 311`: git may still search it and run the hook by its name).
#[test]
fn a_hook_in_a_folder_keyless_cannot_list_is_moved_aside() {
    let fx = common::Fixture::new();
    let me = User::of(&fx);
    let canary = fx.root.join("canary-unlistable");
    let line = format!(
        "git init -q sub && printf '#!/bin/sh\\necho ran > {}\\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit && chmod 311 sub/.git/hooks; echo done",
        canary.display()
    );
    let text = me.run(&fx, &[&common::run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(
        text.contains("its permissions keep keyless from listing it"),
        "{text}"
    );
    assert!(text.contains(".agent/quarantine/"), "{text}");
    me.git(&fx, &fx.ws().join("sub"));
    canary_gone(std::slice::from_ref(&canary), &text);
    me.control(&line, &canary, "sub");
}

/// The next variant: a whole repository in a folder made unreadable (`chmod 100`), and the user's
/// git started inside it.
#[test]
fn a_repository_in_a_folder_keyless_cannot_open_is_moved_aside() {
    let fx = common::Fixture::new();
    let me = User::of(&fx);
    let canary = fx.root.join("canary-unopenable");
    let line = format!(
        "mkdir -p locked && git init -q locked/r && git -C locked/r config core.fsmonitor \"{}\" && chmod 100 locked; echo done",
        fsmonitor(&canary)
    );
    let text = me.run(&fx, &[&common::run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(!fx.ws().join("locked").exists(), "{text}");
    me.git(&fx, &fx.ws().join("locked/r"));
    canary_gone(std::slice::from_ref(&canary), &text);
    // Nothing is lost: the folder, readable again, is in the quarantine with its repository.
    let moved = text
        .split_whitespace()
        .find(|w| w.starts_with(".agent/quarantine/") && w.contains("locked"))
        .map(|w| w.trim_end_matches([';', ',', ')']))
        .expect("where it went");
    assert!(fx.ws().join(moved).join("r/.git/config").exists(), "{text}");
    me.control(&line, &canary, "locked/r");
}

/// A repository in a folder whose name is not UTF-8.
#[cfg(target_os = "linux")]
#[test]
fn a_repository_in_a_folder_whose_name_is_not_utf8_is_moved_aside() {
    use std::os::unix::ffi::OsStrExt;
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-not-utf8");
    let line = format!(
        "d=\"$(printf 'x\\377')\"; git init -q \"$d/r\" && git -C \"$d/r\" config core.fsmonitor \"{}\"; echo done",
        fsmonitor(&canary)
    );
    let name = std::ffi::OsStr::from_bytes(b"x\xff");
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(text.contains("x\\xFF"), "{text}");
    assert!(text.contains("its name is not UTF-8"), "{text}");
    assert!(!fx.ws().join(name).exists(), "{text}");
    users_git(&fx.ws().join(name).join("r"));
    canary_gone(std::slice::from_ref(&canary), &text);
    let control = common::Fixture::new();
    runs_without_keyless(&control.ws(), &line, &[canary], || {
        users_git(&control.ws().join(name).join("r"));
    });
}

/// A folder of the user's that keyless cannot list, there before the command: it is left as it
/// is (it is the user's), and every command is confirmed while it is there, with the reason
/// naming it. Readable again, commands are judged as before.
#[test]
fn a_folder_keyless_cannot_list_makes_every_command_confirmed() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("private")).expect("dir");
    let me = User::of(&fx);
    let mode = |m: &str| {
        let ok = Command::new("chmod")
            .arg(m)
            .arg(ws.join("private"))
            .status()
            .expect("chmod")
            .success();
        assert!(ok);
    };
    mode("000");
    let text = me.run(&fx, &[&common::run_cmd("echo hi")], &[]);
    assert!(text.contains("[declined: no terminal"), "{text}");
    assert!(
        text.contains("cannot look into the folder private"),
        "{text}"
    );
    assert!(ws.join("private").exists(), "{text}");
    mode("755");
    let text = me.run(&fx, &[&common::run_cmd("echo hi")], &[]);
    assert!(!text.contains("declined"), "{text}");
    assert!(text.contains("status: ok"), "{text}");
}
