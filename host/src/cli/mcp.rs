//! `keyless-host mcp list | call`: the MCP servers keyless.json declares, started here.

use super::args::WorkspaceDir;
use crate::config::{load_config, warn_ignored, Loaded};
use crate::error::HostError;
use crate::mcp::Pool;
use clap::Subcommand;
use keyless_core::Code;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// Start every declared server and show its state and tools.
    List {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Print the servers and tools as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool: `keyless-host mcp call SERVER.TOOL --args '{"k": "v"}'`.
    Call {
        /// SERVER.TOOL
        tool: String,
        /// The arguments: one JSON object.
        #[arg(long)]
        args: Option<String>,
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// Answers the server's next form (elicitation), in order: accept (its defaults),
        /// decline, cancel, or one JSON object of values. Without it, a terminal asks.
        #[arg(long = "answer", value_name = "ANSWER")]
        answers: Vec<String>,
    },
    /// Log in to a remote server that needs authorization (OAuth): opens the browser ($BROWSER,
    /// else xdg-open; the URL is printed too), receives the answer on 127.0.0.1, and keeps the
    /// tokens in your keyless config folder (mode 0600).
    Login {
        /// The server's name in keyless.json (Mcp.Servers), with a Url.
        server: String,
        #[command(flatten)]
        workspace: WorkspaceDir,
    },
    /// Forget the tokens of a server you logged in to.
    Logout {
        /// The server's name in keyless.json (Mcp.Servers).
        server: String,
        #[command(flatten)]
        workspace: WorkspaceDir,
    },
}

fn coded(code: Code, message: impl Into<String>) -> HostError {
    HostError::Coded {
        code,
        message: message.into(),
    }
}

fn pool(workspace: &std::path::Path) -> Result<Pool, HostError> {
    let Loaded { cfg, ignored, .. } = load_config(workspace)?;
    warn_ignored(&ignored);
    if cfg.mcp_servers.is_empty() {
        return Err(coded(
            Code::McpNotConfigured,
            "keyless.json declares no MCP server (Mcp.Servers); see docs/mcp-ssh.md",
        ));
    }
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    Pool::new(cfg.mcp_servers, root).map_err(|e| coded(Code::McpUnavailable, e.to_string()))
}

/// The declared server `name` of the workspace's configuration.
fn declared(
    workspace: &std::path::Path,
    name: &str,
) -> Result<keyless_core::mcp::ServerConfig, HostError> {
    let Loaded { cfg, ignored, .. } = load_config(workspace)?;
    warn_ignored(&ignored);
    cfg.mcp_servers.get(name).cloned().ok_or_else(|| {
        coded(
            Code::McpNotConfigured,
            format!("MCP server \"{name}\" is not declared in keyless.json (Mcp.Servers)"),
        )
    })
}

pub fn mcp_cmd(cmd: McpCmd) -> Result<ExitCode, HostError> {
    let mut out = std::io::stdout().lock();
    match cmd {
        McpCmd::Login { server, workspace } => {
            let cfg = declared(&workspace.dir, &server)?;
            crate::mcp_auth::login(
                &server,
                &cfg,
                Some(&workspace.dir),
                None,
                &mut std::io::stderr(),
                &mut || false,
            )
            .map_err(|e| coded(Code::McpUnavailable, format!("login to \"{server}\": {e}")))?;
            let _ = writeln!(
                out,
                "logged in to MCP server \"{server}\"; its tokens are in {}",
                crate::mcp_auth::tokens_path().unwrap_or_default().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        McpCmd::Logout { server, workspace } => {
            let cfg = declared(&workspace.dir, &server)?;
            let url = cfg.url.ok_or_else(|| {
                coded(
                    Code::McpUnavailable,
                    format!("MCP server \"{server}\" has no Url"),
                )
            })?;
            let path = crate::mcp_auth::tokens_path().map_err(|e| coded(Code::FileIo, e))?;
            let had = crate::mcp_auth::FileStore::new(path, &url)
                .forget()
                .map_err(|e| coded(Code::FileIo, e))?;
            let _ = writeln!(
                out,
                "{}",
                if had {
                    format!("logged out of MCP server \"{server}\"")
                } else {
                    format!("no tokens were kept for MCP server \"{server}\"")
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        McpCmd::List { workspace, json } => {
            let pool = pool(&workspace.dir)?;
            let status = pool.status("cli");
            let all_up = status.iter().all(|s| s.state == "running");
            if json {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&status).unwrap_or_default()
                );
            } else {
                for s in &status {
                    let _ = writeln!(
                        out,
                        "{}  {}  {}{}{}",
                        s.name,
                        s.transport,
                        // The server's words (its errors, its revision) as text a terminal
                        // shows, never acts on.
                        keyless_core::text::printable(&s.state),
                        s.start_ms
                            .map(|ms| format!(" ({ms} ms)"))
                            .unwrap_or_default(),
                        s.revision
                            .as_deref()
                            .map(|r| format!(", MCP {}", keyless_core::text::printable(r)))
                            .unwrap_or_default()
                    );
                    if s.trust_read_only {
                        let _ = writeln!(out, "  trusts its read-only hints");
                    }
                    for t in &s.tools {
                        let _ = writeln!(
                            out,
                            "  {}{}  {}",
                            t.name,
                            if t.read_only { " (read-only)" } else { "" },
                            keyless_core::text::truncate_chars(
                                t.description.lines().next().unwrap_or(""),
                                90
                            )
                        );
                    }
                }
            }
            pool.close_scope("cli");
            Ok(if all_up {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        McpCmd::Call {
            tool,
            args,
            workspace,
            timeout,
            answers,
        } => {
            let (server, name) = tool
                .split_once('.')
                .ok_or_else(|| coded(Code::ParseBadArgument, "write the tool as SERVER.TOOL"))?;
            let args = match args.as_deref() {
                None => None,
                Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(serde_json::Value::Object(m)) => Some(m),
                    _ => {
                        return Err(coded(
                            Code::ParseBadArgument,
                            "--args must be one JSON object",
                        ))
                    }
                },
            };
            let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
            let mut user = FormsOnTheTerminal {
                answers: answers.into(),
                interactive,
            };
            let answering = interactive || !user.answers.is_empty();
            let t = Instant::now();
            let mut started = Duration::ZERO;
            let mut stepped_up = false;
            let r = loop {
                let pool = pool(&workspace.dir)?.answering(answering);
                pool.tools("cli", server)
                    .map_err(|e| coded(e.code(), e.to_string()))?;
                started = started.max(t.elapsed());
                let r = pool.call(
                    "cli",
                    server,
                    name,
                    args.clone(),
                    Duration::from_secs(timeout),
                    &mut user,
                );
                // Closed before the answer is shown, failed or not: what keyless still had to
                // tell the server (a call's cancellation) leaves before the process ends.
                pool.close_scope("cli");
                match r {
                    // The server asks for more than the token grants (step-up): log in again
                    // with its challenge, where someone can (a terminal, or $BROWSER), once.
                    Err(crate::mcp::McpError::NeedsLogin { challenge, .. })
                        if !stepped_up
                            && (interactive || std::env::var_os("BROWSER").is_some()) =>
                    {
                        stepped_up = true;
                        eprintln!(
                            "keyless-host: MCP server \"{server}\" asks for more access for this call; logging in again"
                        );
                        let cfg = declared(&workspace.dir, server)?;
                        crate::mcp_auth::login(
                            server,
                            &cfg,
                            Some(&workspace.dir),
                            Some(&challenge),
                            &mut std::io::stderr(),
                            &mut || false,
                        )
                        .map_err(|e| {
                            coded(Code::McpUnavailable, format!("login to \"{server}\": {e}"))
                        })?;
                    }
                    other => break other,
                }
            };
            let r = r.map_err(|e| coded(e.code(), e.to_string()))?;
            let _ = writeln!(out, "{}", r.text);
            eprintln!(
                "keyless-host: {tool}: server ready in {} ms, call {} ms{}",
                started.as_millis(),
                r.duration.as_millis(),
                if r.is_error {
                    " (the tool reported an error)"
                } else {
                    ""
                }
            );
            Ok(if r.is_error {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// `mcp call`'s user: `--answer` and the terminal answer the server's forms.
struct FormsOnTheTerminal {
    answers: std::collections::VecDeque<String>,
    interactive: bool,
}

impl crate::mcp::CallUser for FormsOnTheTerminal {
    fn progress(&mut self, server: &str, line: &str) {
        eprintln!(
            "[{}] {}",
            super::terminal::shown(server),
            super::terminal::shown(line)
        );
    }

    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        // The tool's answer is standard output; the form's lines go to standard error.
        super::form::terminal_form(
            server,
            form,
            &mut self.answers,
            self.interactive,
            &mut std::io::stderr(),
        )
    }
}
