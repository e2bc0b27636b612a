//! The extension commands of AgentScript v1 (docs/agentscript-extensions.md): `@@mcp`,
//! `@@sshexec`, `@@sshupload` and `@@sshdownload`. They reach the executor only when the current
//! movement offers them (the parser knows them only then); here they pass the movement's gate,
//! the SSH checks (declared, allowed, owned, granted: `keyless_core::ssh::permit`) and the policy
//! (core's `Judge`: an SSH line at least Execute, an upload Risky, an MCP tool Risky unless a
//! trusted server marks it read-only), are confirmed when the mode asks, and run with the same
//! timeout, cancel and output cap as runcommand.

use super::backup::BatchBackup;
use super::batch::{admit, process_outcome, Executor, Prompter};
use super::files::{self, FileCtx};
use super::remote::{self, SshOptions};
use super::tools::Extensions;
use super::Failure;
use keyless_core::message::CommandOutcome;
use keyless_core::policy::Tier;
use keyless_core::ssh::Connection;
use keyless_core::textfile::OutputCap;
use keyless_core::{Code, Command, CommandKind, SectionName};
use std::time::Duration;

type Ran = (Result<CommandOutcome, Failure>, Option<Tier>);

impl Executor<'_> {
    pub(super) fn run_extension(
        &self,
        cmd: &Command,
        backup: &mut BatchBackup,
        prompter: &mut dyn Prompter,
    ) -> Ran {
        let (Some(gate), Some(ext)) = (self.gate, self.ext) else {
            return (
                Err(Failure::new(
                    Code::CommandDenied,
                    format!("@@{} is offered only by a piece movement's tools", cmd.kind),
                )),
                None,
            );
        };
        let conn = if cmd.kind.is_ssh() {
            let key = cmd.connection().unwrap_or("");
            match keyless_core::ssh::permit(
                &ext.catalog.ssh,
                &gate.piece,
                &gate.movement,
                gate.ssh_connections.as_deref(),
                key,
                &ext.catalog.user,
            ) {
                Ok(c) => Some(c.clone()),
                Err(r) => return (Err(Failure::new(r.code(), r.to_string())), None),
            }
        } else {
            None
        };
        let Some(verdict) = self
            .judge(super::persistence::persistence_context(self.ws.root()))
            .verdict(cmd)
        else {
            return (
                Err(Failure::new(
                    Code::Internal,
                    "no verdict on an extension command",
                )),
                None,
            );
        };
        let tier = Some(verdict.tier);
        if let Err(f) = admit(cmd, &verdict, prompter) {
            return (Err(f), tier);
        }
        let timeout = Duration::from_secs(u64::from(
            cmd.options
                .timeout_seconds
                .unwrap_or(self.cfg.timeout_seconds),
        ));
        // The host runs ssh outside the sandbox, through the launcher: never one the model could
        // have put on PATH, never with a config file the model can write.
        let launcher = crate::launch::Launcher::new(Some(self.ws.root()));
        let ssh = SshOptions {
            program: launcher.program("ssh").ok(),
            workspace: Some(self.ws.root().to_path_buf()),
            ..ext.ssh.clone()
        };
        if conn.is_some() && ssh.program.is_none() {
            return (
                Err(Failure::new(
                    Code::CommandNotFound,
                    "ssh (OpenSSH's client) is not in a PATH folder outside the workspace; install openssh-client",
                )),
                tier,
            );
        }
        if let (Some(_), Some(file)) = (
            conn.as_ref(),
            launcher.writable_among(&ssh.config_files()).first(),
        ) {
            return (
                Err(Failure::new(
                    Code::LaunchRefused,
                    format!(
                        "ssh would read {}, which is in the workspace (or a temp folder) where the model can write; nothing ran",
                        file.display()
                    ),
                )),
                tier,
            );
        }
        let outcome = match (cmd.kind, conn) {
            (CommandKind::Mcp, _) => self.mcp_call(cmd, ext, timeout, prompter),
            (CommandKind::SshExec, Some(c)) => self.ssh_exec(cmd, &c, &ssh, timeout, prompter),
            (CommandKind::SshUpload, Some(c)) => self.ssh_upload(cmd, &c, &ssh, timeout, prompter),
            (CommandKind::SshDownload, Some(c)) => {
                self.ssh_download(cmd, &c, &ssh, timeout, backup, prompter)
            }
            _ => Err(Failure::new(
                Code::Internal,
                "extension command without its target",
            )),
        };
        (outcome, tier)
    }

    fn max_output(&self) -> usize {
        self.cfg.settings.limits.max_command_output_chars as usize
    }

    fn mcp_call(
        &self,
        cmd: &Command,
        ext: &Extensions,
        timeout: Duration,
        prompter: &mut dyn Prompter,
    ) -> Result<CommandOutcome, Failure> {
        let (server, tool) = cmd
            .mcp_tool()
            .ok_or_else(|| Failure::new(Code::Internal, "@@mcp without SERVER.TOOL"))?;
        let pool = ext
            .mcp
            .as_ref()
            .ok_or_else(|| Failure::new(Code::McpNotConfigured, "no MCP server is declared"))?;
        let args = match cmd.section_text(SectionName::Args).map(str::trim) {
            None | Some("") => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(m)) => Some(m),
                _ => {
                    return Err(Failure::new(
                        Code::ParseBadArgument,
                        "ARGS must be one JSON object",
                    ))
                }
            },
        };
        let call = |prompter: &mut dyn Prompter| {
            pool.call(
                self.session,
                server,
                tool,
                args.clone(),
                timeout,
                &mut Waiting(prompter),
            )
        };
        let out = match call(prompter) {
            // The server asks for more than the login grants (step-up): the user may log in
            // again now, and the call is tried once more.
            Err(crate::mcp::McpError::NeedsLogin { challenge, .. }) => {
                step_up(pool, self.session, server, &challenge, prompter)?;
                call(prompter)
            }
            other => other,
        }
        .map_err(|e| Failure::new(e.code(), e.to_string()))?;
        let mut cap = OutputCap::new(self.max_output());
        cap.push(&out.text);
        let ms = u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX);
        let output = Some(cap.finish());
        Ok(if out.is_error {
            CommandOutcome::Error {
                code: Code::McpToolFailed,
                reason: format!("{server}.{tool} answered with an error"),
                exit_code: None,
                duration_ms: Some(ms),
                output,
            }
        } else {
            CommandOutcome::Ok {
                exit_code: None,
                duration_ms: Some(ms),
                verified: None,
                output,
            }
        })
    }

    fn ssh_exec(
        &self,
        cmd: &Command,
        c: &Connection,
        opts: &SshOptions,
        timeout: Duration,
        prompter: &mut dyn Prompter,
    ) -> Result<CommandOutcome, Failure> {
        let line = cmd.section_text(SectionName::Cmd).unwrap_or("").trim();
        let out = remote::exec(c, opts, line, timeout, self.max_output(), |chunk| {
            if !chunk.is_empty() {
                prompter.output(chunk);
            }
            !prompter.cancel_requested()
        })
        .map_err(|e| Failure::new(Code::CommandFailed, format!("cannot start ssh: {e}")))?;
        Ok(ssh_outcome(&out, timeout))
    }

    fn ssh_upload(
        &self,
        cmd: &Command,
        c: &Connection,
        opts: &SshOptions,
        timeout: Duration,
        prompter: &mut dyn Prompter,
    ) -> Result<CommandOutcome, Failure> {
        let t = cmd
            .transfer()
            .ok_or_else(|| Failure::new(Code::Internal, "@@sshupload without its paths"))?;
        let bytes = files::read_bytes(self.ws, t.from)?;
        let n = bytes.len();
        let out = remote::upload(c, opts, bytes, t.to, timeout, |_| {
            !prompter.cancel_requested()
        })
        .map_err(|e| Failure::new(Code::CommandFailed, format!("cannot start ssh: {e}")))?;
        Ok(match ssh_outcome(&out, timeout) {
            CommandOutcome::Ok {
                exit_code,
                duration_ms,
                ..
            } => CommandOutcome::Ok {
                exit_code,
                duration_ms,
                verified: None,
                output: Some(format!(
                    "uploaded {n} bytes from {} to {}:{}",
                    t.from, c.name, t.to
                )),
            },
            failed => failed,
        })
    }

    fn ssh_download(
        &self,
        cmd: &Command,
        c: &Connection,
        opts: &SshOptions,
        timeout: Duration,
        backup: &mut BatchBackup,
        prompter: &mut dyn Prompter,
    ) -> Result<CommandOutcome, Failure> {
        let t = cmd
            .transfer()
            .ok_or_else(|| Failure::new(Code::Internal, "@@sshdownload without its paths"))?;
        // The local path is checked before anything is fetched.
        self.ws.writable(t.to)?;
        let (out, bytes) =
            remote::download(c, opts, t.from, timeout, |_| !prompter.cancel_requested()).map_err(
                |e| {
                    Failure::new(
                        Code::CommandFailed,
                        format!("download from {}: {e}", c.name),
                    )
                },
            )?;
        let ran = ssh_outcome(&out, timeout);
        let CommandOutcome::Ok { duration_ms, .. } = ran else {
            return Ok(ran);
        };
        let mut ctx = FileCtx {
            ws: self.ws,
            backup,
            max_output_chars: self.max_output(),
        };
        let written = files::put_bytes(&mut ctx, t.to, &bytes)?;
        Ok(match written {
            CommandOutcome::Ok { verified, .. } => CommandOutcome::Ok {
                exit_code: Some(0),
                duration_ms,
                verified,
                output: Some(format!(
                    "downloaded {} bytes from {}:{} to {}",
                    bytes.len(),
                    c.name,
                    t.from,
                    t.to
                )),
            },
            other => other,
        })
    }
}

/// A finished ssh as the model reads it: like a local process, except that exit 255 is ssh's own
/// failure (host key, connection, authentication) with its code.
fn ssh_outcome(out: &super::shell::ShellOutput, timeout: Duration) -> CommandOutcome {
    let outcome = process_outcome(out, timeout);
    if out.exit_code == Some(255) {
        if let Some((code, reason)) = remote::ssh_failure(&out.output) {
            if let CommandOutcome::Error {
                exit_code,
                duration_ms,
                output,
                ..
            } = outcome
            {
                return CommandOutcome::Error {
                    code,
                    reason,
                    exit_code,
                    duration_ms,
                    output,
                };
            }
        }
    }
    outcome
}

/// Logs in to `server` again with its `challenge`, when the user says so: the login page opens
/// in their browser (`$BROWSER`, else the desktop's opener) and its lines go to the live output.
fn step_up(
    pool: &crate::mcp::Pool,
    session: &str,
    server: &str,
    challenge: &str,
    prompter: &mut dyn Prompter,
) -> Result<(), Failure> {
    let cfg = pool
        .config(server)
        .map_err(|e| Failure::new(e.code(), e.to_string()))?;
    let scope = cfg
        .url
        .as_deref()
        .and_then(|u| crate::mcp_auth::challenge_scope(challenge, u));
    let refused = || {
        Failure::new(
            Code::McpUnavailable,
            format!("MCP server \"{server}\" needs the user to log in again for this; the user did not (`keyless-host mcp login {server}`)"),
        )
    };
    if !prompter.log_in_again(server, scope.as_deref()) {
        return Err(refused());
    }
    let user = std::cell::RefCell::new(prompter);
    let mut stop = || user.borrow_mut().cancel_requested();
    crate::mcp_auth::login(
        server,
        cfg,
        Some(pool.workspace()),
        Some(challenge),
        &mut LiveOutput(&user),
        &mut stop,
    )
    .map_err(|e| {
        Failure::new(
            Code::McpUnavailable,
            format!("logging in to MCP server \"{server}\" again: {e}"),
        )
    })?;
    // The connection still holds the old client: the retry starts a fresh one.
    pool.restart(session, server);
    Ok(())
}

/// What keyless says while it waits (a login's URL), as live output.
struct LiveOutput<'a, 'p>(&'a std::cell::RefCell<&'p mut dyn Prompter>);

impl std::io::Write for LiveOutput<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().output(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The batch's prompter as the user waiting on an MCP call: it cancels, and it answers the
/// server's forms.
struct Waiting<'a>(&'a mut dyn Prompter);

impl crate::mcp::CallUser for Waiting<'_> {
    fn cancel_requested(&mut self) -> bool {
        self.0.cancel_requested()
    }

    fn progress(&mut self, server: &str, line: &str) {
        self.0.progress(server, line);
    }

    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        self.0.elicit(server, form)
    }
}
