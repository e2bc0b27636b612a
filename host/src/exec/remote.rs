//! SSH commands through the user's own OpenSSH client: `~/.ssh/config`, the agent and
//! known_hosts work unchanged, and a host key is never accepted blindly
//! (`StrictHostKeyChecking=yes`, `BatchMode=yes`: no prompt a model could answer).
//!
//! The remote command line is the model's (judged by the policy before it gets here); everything
//! else on ssh's command line comes from the registry the user keeps. Copies never hand a local
//! path to ssh or scp: an upload reads the file through the workspace handle and feeds it to
//! `cat > REMOTE`; a download reads `cat -- REMOTE` into an unnamed temp file and writes the
//! workspace through its handle, with a backup, like every other write.

use super::shell::{run_program, Io, ShellOutput};
use keyless_core::ssh::{shell_quote, Connection};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The most a download may bring into the workspace.
pub const MAX_DOWNLOAD_BYTES: u64 = 64 * 1024 * 1024;

/// How keyless runs ssh.
///
/// No connection sharing (ControlMaster): its socket would be an authenticated channel to the
/// server that any sandboxed command could connect to (the sandbox denies the network, not Unix
/// sockets), outside the policy and the grants. Each command opens its own connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SshOptions {
    /// `KEYLESS_SSH_CONFIG`: an ssh_config file used instead of `~/.ssh/config` (`ssh -F`).
    pub config_file: Option<PathBuf>,
    /// The ssh program, found by the launcher where the model cannot write; set by the executor
    /// for its workspace. `None`: the launcher's `ssh` with no workspace (benchmarks).
    pub program: Option<crate::launch::Program>,
    /// The workspace the launcher keeps ssh's PATH out of.
    pub workspace: Option<PathBuf>,
}

impl SshOptions {
    /// From the environment: `KEYLESS_SSH_CONFIG`.
    #[must_use]
    pub fn from_env() -> Self {
        Self {
            config_file: std::env::var_os("KEYLESS_SSH_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            program: None,
            workspace: None,
        }
    }

    /// The config files ssh reads (the one given with `-F`, else the user's and the system's).
    #[must_use]
    pub fn config_files(&self) -> Vec<PathBuf> {
        match &self.config_file {
            Some(f) => vec![f.clone()],
            None => {
                let mut v = vec![PathBuf::from("/etc/ssh/ssh_config")];
                if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
                    v.push(home.join(".ssh").join("config"));
                }
                v
            }
        }
    }
}

/// `ssh [options] -p PORT -l USER -- HOST REMOTE_COMMAND`.
#[must_use]
pub fn command(c: &Connection, opts: &SshOptions, remote: &str) -> Command {
    let launcher = crate::launch::Launcher::new(opts.workspace.as_deref());
    let program = opts.program.clone().unwrap_or_else(|| {
        launcher
            .program("ssh")
            .unwrap_or_else(|_| crate::launch::Program {
                path: PathBuf::from("/usr/bin/ssh"),
                interpreter: None,
            })
    });
    let mut cmd = launcher.command(&program, crate::launch::Purpose::Ssh);
    if let Some(f) = &opts.config_file {
        cmd.arg("-F").arg(f);
    }
    cmd.args([
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "ConnectTimeout=15",
        "-o",
        "LogLevel=ERROR",
    ]);
    // Never share a connection, whatever ~/.ssh/config says (see SshOptions); never hand the
    // remote side the user's agent, X display or port forwardings (a model's command there must
    // not reach further with them); never run a LocalCommand here.
    cmd.args([
        "-o",
        "ControlMaster=no",
        "-o",
        "ControlPath=none",
        "-a",
        "-x",
        "-o",
        "ClearAllForwardings=yes",
        "-o",
        "PermitLocalCommand=no",
    ]);
    cmd.arg("-p")
        .arg(c.port.to_string())
        .arg("-l")
        .arg(&c.user)
        .arg("--")
        .arg(&c.host)
        .arg(remote);
    cmd.env("KEYLESS", "1");
    cmd
}

/// Why ssh itself failed (exit 255), from what it printed.
#[must_use]
pub fn ssh_failure(output: &str) -> Option<(keyless_core::Code, String)> {
    let lower = output.to_ascii_lowercase();
    if lower.contains("host key verification failed")
        || lower.contains("remote host identification has changed")
        || lower.contains("no matching host key")
    {
        return Some((
            keyless_core::Code::SshHostKey,
            "the host key is not in known_hosts (or changed); keyless never accepts one blindly. Connect once yourself with ssh, check the fingerprint, and try again".into(),
        ));
    }
    let ssh_said = [
        "ssh: ",
        "permission denied (",
        "connection refused",
        "connection timed out",
        "connection closed by",
        "could not resolve hostname",
        "no route to host",
    ];
    ssh_said.iter().any(|s| lower.contains(s)).then(|| {
        (
            keyless_core::Code::SshFailed,
            "ssh could not connect or authenticate (exit 255)".into(),
        )
    })
}

/// Runs `line` on the connection.
///
/// # Errors
/// When ssh cannot be started.
pub fn exec(
    c: &Connection,
    opts: &SshOptions,
    line: &str,
    timeout: Duration,
    max_output_chars: usize,
    on_output: impl FnMut(&str) -> bool,
) -> std::io::Result<ShellOutput> {
    run_program(
        command(c, opts, line),
        Io::default(),
        timeout,
        max_output_chars,
        on_output,
    )
}

/// Writes `bytes` to `remote` on the connection.
///
/// # Errors
/// When ssh cannot be started.
pub fn upload(
    c: &Connection,
    opts: &SshOptions,
    bytes: Vec<u8>,
    remote: &str,
    timeout: Duration,
    on_output: impl FnMut(&str) -> bool,
) -> std::io::Result<ShellOutput> {
    let line = format!("cat > {}", shell_quote(remote));
    run_program(
        command(c, opts, &line),
        Io {
            input: Some(bytes),
            ..Io::default()
        },
        timeout,
        4000,
        on_output,
    )
}

/// Reads `remote` from the connection into an unnamed temp file: its bytes (at most
/// [`MAX_DOWNLOAD_BYTES`]) and how ssh ended.
///
/// # Errors
/// When ssh or the temp file cannot be started; a file larger than the cap.
pub fn download(
    c: &Connection,
    opts: &SshOptions,
    remote: &str,
    timeout: Duration,
    on_output: impl FnMut(&str) -> bool,
) -> std::io::Result<(ShellOutput, Vec<u8>)> {
    use std::io::{Read, Seek};
    let mut file = tempfile::tempfile()?;
    let line = format!("cat -- {}", shell_quote(remote));
    let out = run_program(
        command(c, opts, &line),
        Io {
            stdout_to: Some(file.try_clone()?),
            ..Io::default()
        },
        timeout,
        4000,
        on_output,
    )?;
    let len = file.metadata()?.len();
    if len > MAX_DOWNLOAD_BYTES {
        return Err(std::io::Error::other(format!(
            "the remote file is larger than {} MiB",
            MAX_DOWNLOAD_BYTES / 1024 / 1024
        )));
    }
    file.rewind()?;
    let mut bytes = Vec::new();
    file.take(MAX_DOWNLOAD_BYTES).read_to_end(&mut bytes)?;
    Ok((out, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_never_shares_forwards_or_prompts() {
        let c = Connection {
            id: "00000000-0000-4000-8000-000000000000".into(),
            name: "box".into(),
            host: "example.org".into(),
            user: "deploy".into(),
            port: 2222,
            owner: "me".into(),
            grants: vec![],
        };
        let cmd = command(&c, &SshOptions::default(), "uptime");
        let line = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        for needed in [
            "BatchMode=yes",
            "StrictHostKeyChecking=yes",
            "ControlMaster=no",
            "ControlPath=none",
            "ClearAllForwardings=yes",
            "PermitLocalCommand=no",
            " -a ",
            " -x ",
        ] {
            assert!(line.contains(needed), "{needed} missing: {line}");
        }
        // The destination comes after `--`, the remote command last.
        assert!(
            line.ends_with("-p 2222 -l deploy -- example.org uptime"),
            "{line}"
        );
    }

    #[test]
    fn remote_paths_are_one_literal_word() {
        assert_eq!(shell_quote("/srv/a b"), "'/srv/a b'");
        assert_eq!(shell_quote("x'y"), r"'x'\''y'");
    }
}
