//! SSH commands against a real sshd on 127.0.0.1 (Debian's openssh-server, temp host and user
//! keys): exec, upload, download, known_hosts never accepted blindly, the seed's refusals
//! (declared, allowed, owned, granted), a timeout, confirmation in Ask mode, and the shipped
//! `ssh-ops` piece through `run --piece`.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)]

mod common;

use common::{block, reply, Fixture};
use keyless_tests::sshd::{self, Sshd};
use std::path::{Path, PathBuf};
use std::process::Output;

struct Env {
    fx: Fixture,
    sshd: Sshd,
    id: String,
}

const PIECE: &str = "name: ops-test
description: SSH tools under test
max_movements: 3
initial_movement: ops
movements:
  - name: ops
    edit: true
    persona: an operator
    instruction: check the host
    allowed_tools: [SshExec, SshUpload, SshDownload, Read]
    allowed_ssh_connections: ['*']
    rules: []
";

impl Env {
    fn new() -> Option<Self> {
        if !sshd::available() {
            return None;
        }
        let fx = Fixture::new();
        let sshd = Sshd::start(&fx.root.join("sshd"));
        let mut e = Env {
            fx,
            sshd,
            id: String::new(),
        };
        let port = e.sshd.port.to_string();
        let user = e.sshd.user.clone();
        let out = e.ssh_cli(&[
            "add",
            "box",
            "--host",
            "127.0.0.1",
            "--user",
            &user,
            "--port",
            &port,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        e.id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        std::fs::write(e.fx.root.join("ops.yaml"), PIECE).expect("piece");
        Some(e)
    }

    fn ssh_cli(&self, args: &[&str]) -> Output {
        self.fx
            .host()
            .arg("ssh")
            .args(args)
            .env("USER", &self.sshd.user)
            .output()
            .expect("ssh cli")
    }

    fn grant(&self, piece: &str) {
        let out = self.ssh_cli(&["grant", "box", "--piece", piece]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `run` with the piece file, the test's ssh_config and `extra` flags; returns stdout.
    fn run(&self, replies: &[&str], piece: &str, config: &Path, extra: &[&str]) -> String {
        self.run_env(replies, piece, config, extra, &[])
    }

    /// [`Env::run`] with more environment variables (later ones win).
    fn run_env(
        &self,
        replies: &[&str],
        piece: &str,
        config: &Path,
        extra: &[&str],
        vars: &[(&str, &std::ffi::OsStr)],
    ) -> String {
        let files = self.fx.reply_files(replies);
        let out = self
            .fx
            .host()
            .arg("run")
            .arg("--workspace")
            .arg(self.fx.ws())
            .args(["--piece", piece])
            .args(extra)
            .args(&files)
            .env("USER", &self.sshd.user)
            .env("KEYLESS_SSH_CONFIG", config)
            .envs(vars.iter().copied())
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        format!(
            "{text}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    }

    fn piece(&self) -> String {
        self.fx.root.join("ops.yaml").display().to_string()
    }
}

fn exec(conn: &str, line: &str) -> String {
    reply(&[block(&format!("sshexec {conn}"), &[("CMD", line)])])
}

#[test]
fn exec_runs_on_the_connection_and_is_confirmed_in_ask_mode() {
    let Some(e) = Env::new() else { return };
    e.grant("ops-test");
    let cfg = e.sshd.client_config.clone();
    // Auto: it runs; the output comes back like a runcommand's.
    let text = e.run(
        &[&exec("box", "echo remote-$((6*7)); whoami")],
        &e.piece(),
        &cfg,
        &["--mode", "auto"],
    );
    assert!(text.contains("remote-42"), "{text}\n{}", e.sshd.log());
    assert!(text.contains(&e.sshd.user), "{text}");
    // By id as well as by name.
    let text = e.run(
        &[&exec(&e.id, "echo by-id")],
        &e.piece(),
        &cfg,
        &["--mode", "auto"],
    );
    // The header echoes the command line: the word must be in the output.
    assert!(text.contains("<<<OUTPUT\nby-id\nOUTPUT>>>"), "{text}");
    // Ask: even a read-only line is at least Execute on another machine, so it is confirmed;
    // nobody answers here, so it is declined and never reaches the server.
    let marker = e.sshd.dir.join("ran-in-ask");
    let line = format!("echo x > {}", marker.display());
    let text = e.run(&[&exec("box", &line)], &e.piece(), &cfg, &["--mode", "ask"]);
    assert!(text.contains("KA_COMMAND_DECLINED"), "{text}");
    assert!(!marker.exists());
    // A failing remote command is a failure with its exit code.
    let text = e.run(
        &[&exec("box", "exit 3")],
        &e.piece(),
        &cfg,
        &["--mode", "auto"],
    );
    assert!(
        text.contains("KA_COMMAND_FAILED") && text.contains("code 3"),
        "{text}"
    );
}

#[test]
fn upload_and_download_copy_files_through_the_workspace() {
    let Some(e) = Env::new() else { return };
    e.grant("*");
    let cfg = e.sshd.client_config.clone();
    std::fs::write(e.fx.ws().join("deploy.conf"), b"port=80\n\x00binary\xff").expect("local");
    let remote = e.sshd.dir.join("remote.conf");
    let up = reply(&[block(
        &format!("sshupload box deploy.conf TO {}", remote.display()),
        &[],
    )]);
    let text = e.run(&[&up], &e.piece(), &cfg, &["--mode", "auto"]);
    assert!(text.contains("uploaded 16 bytes"), "{text}");
    assert_eq!(
        std::fs::read(&remote).expect("uploaded"),
        b"port=80\n\x00binary\xff"
    );
    // Download into the workspace, over an existing file (backed up, so undo restores it).
    std::fs::write(&remote, b"from the server\n").expect("remote");
    std::fs::write(e.fx.ws().join("copy.txt"), b"old\n").expect("old");
    let down = reply(&[block(
        &format!("sshdownload box {} TO copy.txt", remote.display()),
        &[],
    )]);
    let text = e.run(&[&down], &e.piece(), &cfg, &["--mode", "auto"]);
    assert!(text.contains("downloaded 16 bytes"), "{text}");
    assert_eq!(e.fx.read("copy.txt"), b"from the server\n");
    let out =
        e.fx.host()
            .args(["undo", "--workspace"])
            .arg(e.fx.ws())
            .output()
            .expect("undo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(e.fx.read("copy.txt"), b"old\n");
    // The workspace side is a workspace path: escapes are refused before anything runs.
    let escape = reply(&[block(
        &format!("sshdownload box {} TO ../outside.txt", remote.display()),
        &[],
    )]);
    let text = e.run(&[&escape], &e.piece(), &cfg, &["--mode", "auto"]);
    assert!(text.contains("Bad argument on \"@@sshdownload\""), "{text}");
    assert!(!e.fx.root.join("outside.txt").exists());
    // A symlink in the workspace does not lead the upload outside it.
    std::os::unix::fs::symlink(e.fx.root.join("sshd/id_user"), e.fx.ws().join("key"))
        .expect("symlink");
    let leak = reply(&[block(
        &format!("sshupload box key TO {}", e.sshd.dir.join("leak").display()),
        &[],
    )]);
    let text = e.run(&[&leak], &e.piece(), &cfg, &["--mode", "auto"]);
    assert!(
        text.contains("KA_PATH_OUTSIDE") || text.contains("KA_FILE_IO"),
        "{text}"
    );
    assert!(!e.sshd.dir.join("leak").exists());
}

#[test]
fn an_unknown_host_key_is_never_accepted() {
    let Some(e) = Env::new() else { return };
    e.grant("*");
    let unknown = e.sshd.unknown_host_config.clone();
    let text = e.run(
        &[&exec("box", "echo should-not-run")],
        &e.piece(),
        &unknown,
        &["--mode", "auto"],
    );
    assert!(text.contains("KA_SSH_HOST_KEY"), "{text}");
    assert!(!text.contains("\nshould-not-run"), "{text}");
    // The empty known_hosts stays empty: nothing was learnt on the way.
    assert_eq!(
        std::fs::read_to_string(e.sshd.dir.join("empty_known_hosts")).expect("read"),
        ""
    );
}

#[test]
fn refusals_follow_the_seeds_table() {
    let Some(e) = Env::new() else { return };
    let cfg = e.sshd.client_config.clone();
    let marker = e.sshd.dir.join("ran");
    let line = format!("touch {}", marker.display());
    // Registered and allowed, but not granted to this piece.
    let text = e.run(
        &[&exec("box", &line)],
        &e.piece(),
        &cfg,
        &["--mode", "auto"],
    );
    assert!(text.contains("KA_SSH_NOT_GRANTED"), "{text}");
    // Granted, but another local user's connection.
    e.grant("ops-test");
    let text = e.run_env(
        &[&exec("box", &line)],
        &e.piece(),
        &cfg,
        &["--mode", "auto"],
        &[("USER", "mallory".as_ref())],
    );
    assert!(text.contains("KA_SSH_NOT_OWNER"), "{text}");
    // Unknown connection.
    let text = e.run(
        &[&exec("nope", &line)],
        &e.piece(),
        &cfg,
        &["--mode", "auto"],
    );
    assert!(text.contains("KA_SSH_UNKNOWN_CONNECTION"), "{text}");
    // A movement that lists another id.
    let other = PIECE.replace("['*']", "['00000000-0000-4000-8000-000000000000']");
    let file: PathBuf = e.fx.root.join("other.yaml");
    std::fs::write(&file, other).expect("piece");
    e.grant("*");
    let text = e.run(
        &[&exec("box", &line)],
        &file.display().to_string(),
        &cfg,
        &["--mode", "auto"],
    );
    assert!(text.contains("KA_SSH_NOT_ALLOWED"), "{text}");
    // A movement without SshExec: the command is unknown there, as in AgentScript v1.
    let read_only = PIECE.replace("[SshExec, SshUpload, SshDownload, Read]", "[Read]");
    let file: PathBuf = e.fx.root.join("read.yaml");
    std::fs::write(&file, read_only).expect("piece");
    let text = e.run(
        &[&exec("box", &line)],
        &file.display().to_string(),
        &cfg,
        &["--mode", "auto"],
    );
    assert!(text.contains("Unknown command \"@@sshexec\""), "{text}");
    // And without a piece at all.
    let (_, text) = e.fx.run(&[&exec("box", &line)], &["--mode", "auto"]);
    assert!(text.contains("Unknown command \"@@sshexec\""), "{text}");
    assert!(!marker.exists(), "a refused command reached the server");
}

#[test]
fn a_remote_command_that_outlives_its_timeout_is_stopped() {
    let Some(e) = Env::new() else { return };
    e.grant("*");
    let cfg = e.sshd.client_config.clone();
    // 3 s: long enough for the connection and the first line on a loaded machine (1 s was not,
    // under CI), far below the command's 30.
    let slow = reply(&[block(
        "sshexec box timeout=3",
        &[("CMD", "echo started; sleep 30")],
    )]);
    let t = std::time::Instant::now();
    let text = e.run(&[&slow], &e.piece(), &cfg, &["--mode", "auto"]);
    assert!(
        text.contains("KA_TIMEOUT") && text.contains("<<<OUTPUT\nstarted"),
        "{text}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn the_shipped_ssh_ops_piece_runs_health_checks() {
    let Some(e) = Env::new() else { return };
    e.grant("ssh-ops");
    let cfg = e.sshd.client_config.clone();
    let check = reply(&[block("sshexec box", &[("CMD", "uptime; df -h /")])]);
    let text = e.run(&[&check], "ssh-ops", &cfg, &["--mode", "auto"]);
    // The movement prompt offers the command and names the usable connection.
    assert!(text.contains("@@sshexec CONNECTION"), "{text}");
    assert!(
        text.contains(&format!("box ({}@127.0.0.1:{}", e.sshd.user, e.sshd.port)),
        "{text}"
    );
    assert!(text.contains("load average"), "{text}");
}

#[test]
fn an_ssh_planted_on_path_in_the_workspace_is_never_run() {
    let Some(e) = Env::new() else { return };
    e.grant("*");
    let bin = e.fx.ws().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let canary = e.fx.root.join("planted-ran");
    std::fs::write(
        bin.join("ssh"),
        format!("#!/bin/sh\ntouch {}\n", canary.display()),
    )
    .expect("ssh");
    std::fs::set_permissions(
        bin.join("ssh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let text = e.run_env(
        &[&exec("box", "echo real-ssh")],
        &e.piece(),
        &e.sshd.client_config,
        &["--mode", "auto"],
        &[("PATH", path.as_ref())],
    );
    assert!(text.contains("<<<OUTPUT\nreal-ssh\nOUTPUT>>>"), "{text}");
    assert!(!canary.exists(), "the workspace's ssh ran");
}

#[test]
fn the_remote_side_never_gets_the_users_agent() {
    let Some(e) = Env::new() else { return };
    e.grant("*");
    // The user's own agent, and an ssh config that forwards it to every host.
    let sock = e.fx.root.join("agent.sock");
    let agent = std::process::Command::new("ssh-agent")
        .arg("-a")
        .arg(&sock)
        .output()
        .expect("ssh-agent");
    assert!(agent.status.success());
    let pid = String::from_utf8_lossy(&agent.stdout)
        .split("SSH_AGENT_PID=")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .map(str::to_string)
        .expect("agent pid");
    let config = e.fx.root.join("forwarding_config");
    let base = std::fs::read_to_string(&e.sshd.client_config).expect("config");
    std::fs::write(&config, format!("{base}  ForwardAgent yes\n")).expect("config");
    let text = e.run_env(
        &[&exec("box", "echo \"agent=[$SSH_AUTH_SOCK]\"")],
        &e.piece(),
        &config,
        &["--mode", "auto"],
        &[("SSH_AUTH_SOCK", sock.as_os_str())],
    );
    let _ = std::process::Command::new("kill").arg(&pid).status();
    assert!(text.contains("agent=[]"), "{text}");
}
