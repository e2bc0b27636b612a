//! `keyless-host doctor`: checks the configuration, the workspace, git, the sandbox and the tools,
//! and says what to fix.

use crate::config::load_config;
use crate::error::HostError;
use crate::exec::workspace::Workspace;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Ok,
    Warn,
    Fail,
}

struct Report {
    rows: Vec<(Level, &'static str, String)>,
}

impl Report {
    fn add(&mut self, level: Level, check: &'static str, detail: impl Into<String>) {
        self.rows.push((level, check, detail.into()));
    }
}

/// Each declared MCP server, started: its tools, or why it does not start.
fn mcp_rows(r: &mut Report, cfg: &keyless_core::keyless_json::KeylessConfig, root: &Path) {
    if cfg.mcp_servers.is_empty() {
        return;
    }
    let pool = match crate::mcp::Pool::new(cfg.mcp_servers.clone(), root.to_path_buf()) {
        Ok(p) => p,
        Err(e) => {
            r.add(Level::Fail, "mcp", format!("KA_MCP_UNAVAILABLE {e}"));
            return;
        }
    };
    for s in pool.status("doctor") {
        if s.state == "running" {
            let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
            r.add(
                Level::Ok,
                "mcp",
                format!(
                    "{} ({}, MCP {}): {} tools in {} ms: {}",
                    s.name,
                    s.transport,
                    keyless_core::text::printable(s.revision.as_deref().unwrap_or("?")),
                    s.tools.len(),
                    s.start_ms.unwrap_or(0),
                    names.join(", ")
                ),
            );
        } else {
            r.add(
                Level::Warn,
                "mcp",
                format!(
                    "{} ({}): {}",
                    s.name,
                    s.transport,
                    keyless_core::text::printable(&s.state)
                ),
            );
        }
    }
    pool.close_scope("doctor");
}

/// The SSH registry: readable, and the ssh client there.
fn ssh_rows(r: &mut Report, workspace: &Path) {
    match crate::ssh_registry::load() {
        Ok(list) if list.is_empty() => {}
        Ok(list) => {
            let launcher = crate::launch::Launcher::new(Some(workspace));
            let client = launcher
                .start("ssh", crate::launch::Purpose::Doctor)
                .map_err(|e| io::Error::other(e.to_string()))
                .and_then(|mut c| c.arg("-V").output());
            let level = if client.is_ok() {
                Level::Ok
            } else {
                Level::Warn
            };
            let names: Vec<String> = list
                .iter()
                .map(|c| {
                    format!(
                        "{} ({}@{}:{}, granted to {})",
                        c.name,
                        c.user,
                        c.host,
                        c.port,
                        if c.grants.is_empty() {
                            "no piece".to_string()
                        } else {
                            c.grants.join(", ")
                        }
                    )
                })
                .collect();
            r.add(
                level,
                "ssh",
                format!(
                    "{}{}",
                    names.join("; "),
                    if client.is_ok() {
                        ""
                    } else {
                        "; the ssh client is missing (install OpenSSH)"
                    }
                ),
            );
        }
        Err(e) => r.add(Level::Fail, "ssh", format!("KA_CONFIG_INVALID {e}")),
    }
}

/// Runs every check and prints one line each. Exit 1 when a check fails.
///
/// # Errors
/// Only when the output cannot be written.
pub fn run(workspace: &Path) -> Result<ExitCode, HostError> {
    let mut r = Report { rows: Vec::new() };
    let cfg = match load_config(workspace) {
        Ok(crate::config::Loaded {
            cfg,
            files,
            ignored,
        }) => {
            for i in &ignored {
                r.add(Level::Warn, "config", format!("KA_CONFIG_VALIDATION {i}"));
            }
            let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
            r.add(
                Level::Ok,
                "config",
                if names.is_empty() {
                    "defaults (no keyless.json)".to_string()
                } else {
                    names.join(", ")
                },
            );
            Some(cfg)
        }
        Err(e) => {
            r.add(Level::Fail, "config", format!("{} {e}", e.code()));
            None
        }
    };
    let ws = match Workspace::open(workspace) {
        Ok(ws) => {
            match ws.agent_dir() {
                Ok(dir) => match crate::store::Store::open(&dir.join("keyless.db")) {
                    Ok(_) => r.add(
                        Level::Ok,
                        "workspace",
                        format!(
                            "{} (.agent writable, session database opens)",
                            ws.root().display()
                        ),
                    ),
                    Err(e) => r.add(Level::Fail, "workspace", format!("{} {e}", e.code())),
                },
                Err(e) => r.add(
                    Level::Fail,
                    "workspace",
                    format!("KA_FILE_IO cannot create .agent: {e}"),
                ),
            }
            Some(ws)
        }
        Err(e) => {
            r.add(
                Level::Fail,
                "workspace",
                format!("KA_FILE_IO {}: {e}", workspace.display()),
            );
            None
        }
    };
    let launcher = crate::launch::Launcher::new(Some(workspace));
    match launcher
        .start("git", crate::launch::Purpose::Doctor)
        .map_err(|e| io::Error::other(e.to_string()))
        .and_then(|mut c| c.arg("--version").output())
    {
        Ok(o) if o.status.success() => r.add(
            Level::Ok,
            "git",
            String::from_utf8_lossy(&o.stdout).trim().to_string(),
        ),
        _ => r.add(
            Level::Warn,
            "git",
            "KA_GIT_NOT_INSTALLED: the git program is missing; @@commit can commit but not push",
        ),
    }
    if let (Some(ws), Some(cfg)) = (&ws, &cfg) {
        match git2::Repository::open(ws.root()) {
            Ok(repo) => {
                let branch = repo
                    .head()
                    .ok()
                    .and_then(|h| h.shorthand().ok().map(str::to_string))
                    .unwrap_or_else(|| "(unborn)".to_string());
                let protected = cfg
                    .protected_branches
                    .iter()
                    .any(|p| keyless_core::policy::pattern_matches(p, &branch));
                let origin = repo
                    .find_remote("origin")
                    .ok()
                    .and_then(|o| o.url().ok().map(str::to_string));
                let level = if protected { Level::Warn } else { Level::Ok };
                let mut d = format!("branch {branch}");
                if protected {
                    d.push_str(
                        " is protected (KA_BRANCH_PROTECTED on @@commit; create a feature branch)",
                    );
                }
                d.push_str(&match origin {
                    Some(u) => format!("; origin {u}"),
                    None => "; no origin remote (commits are not pushed)".into(),
                });
                r.add(level, "repository", d);
            }
            Err(_) if cfg.auto_init => r.add(
                Level::Ok,
                "repository",
                "not a repository yet; Git.AutoInit creates it on the first @@commit",
            ),
            Err(_) => r.add(
                Level::Warn,
                "repository",
                "KA_NOT_A_GIT_REPOSITORY: @@commit will fail (run git init, or set Git.AutoInit)",
            ),
        }
        let sandbox = crate::exec::sandbox::probe(ws.root(), cfg.network);
        let level = if sandbox.is_full() {
            Level::Ok
        } else {
            Level::Warn
        };
        r.add(level, "sandbox", sandbox.describe());
        let backend = crate::exec::limits::backend();
        let limits = crate::exec::limits::Limits::new(cfg.max_processes, cfg.max_memory_mib);
        r.add(
            if matches!(backend, crate::exec::limits::Backend::Rlimits) {
                Level::Warn
            } else {
                Level::Ok
            },
            "limits",
            format!(
                "each command: at most {} processes, {} MiB of memory; {}",
                limits.max_processes,
                limits.max_memory_bytes / 1024 / 1024,
                backend.describe()
            ),
        );
        if let Some(n) = crate::dirs::linked_notice(ws.root()) {
            r.add(Level::Warn, "your config", n);
        }
        let snap = crate::exec::snapshot::gather(ws.root(), String::new());
        let found = snap.tools.iter().filter(|(_, v)| v.is_some()).count();
        let missing = snap.missing();
        r.add(
            Level::Ok,
            "tools",
            format!(
                "{found} found; missing (KA_TOOL_MISSING): {}",
                if missing.is_empty() {
                    "none".into()
                } else {
                    missing.join(", ")
                }
            ),
        );
        for (name, outcome) in &snap.scripts {
            match outcome {
                keyless_core::environment::ScriptOutcome::Output(_) => {
                    r.add(Level::Ok, "snapshot", format!("{name} ran"))
                }
                keyless_core::environment::ScriptOutcome::Missing => r.add(
                    Level::Warn,
                    "snapshot",
                    format!("{name}: KA_SNAPSHOT_MISSING (it printed nothing)"),
                ),
                keyless_core::environment::ScriptOutcome::Failed(why) => r.add(
                    Level::Fail,
                    "snapshot",
                    format!("{name}: KA_SNAPSHOT_RUN_FAILED ({why})"),
                ),
            }
        }
    }
    if let (Some(ws), Some(cfg)) = (&ws, &cfg) {
        mcp_rows(&mut r, cfg, ws.root());
    }
    ssh_rows(&mut r, workspace);
    let regs = crate::native::registrations();
    if regs.is_empty() {
        r.add(
            Level::Warn,
            "pairing",
            "no browser knows keyless-host yet: run keyless-host install to pair the extension without a code",
        );
    }
    for (browser, file, check) in regs {
        let present = file
            .parent()
            .is_some_and(|d| crate::native::browser_present(&browser, d));
        match check {
            Ok(()) if !present => r.add(
                Level::Warn,
                "pairing",
                format!(
                    "{browser}: registered ({}), but {browser} is not installed here (no program on PATH, no profile)",
                    file.display()
                ),
            ),
            Ok(()) => r.add(
                Level::Ok,
                "pairing",
                format!(
                    "{browser}: the extension pairs without a code ({})",
                    file.display()
                ),
            ),
            Err(why) => r.add(
                Level::Warn,
                "pairing",
                format!(
                    "{browser}: {} is stale: {why}; run keyless-host install again",
                    file.display()
                ),
            ),
        }
    }
    let mut out = io::stdout().lock();
    for (level, check, detail) in &r.rows {
        let tag = match level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        writeln!(out, "{tag}  {check:<10}  {detail}").map_err(HostError::Write)?;
    }
    let worst = r.rows.iter().map(|(l, _, _)| *l).max().unwrap_or(Level::Ok);
    Ok(if worst == Level::Fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
