//! Gathers the environment snapshot: OS, shell, tool versions (probed in parallel, each with a
//! short timeout), and the user's scripts in `.agent/snapshot/`.

use super::shell;
use keyless_core::environment::{EnvSnapshot, ScriptOutcome, PROBED_TOOLS};
use std::path::Path;
use std::time::Duration;

/// A version line without terminal escapes, at most 60 characters.
fn clean(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip an ANSI sequence: ESC [ … letter.
            if chars.peek() == Some(&'[') {
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        if !c.is_control() {
            out.push(c);
        }
    }
    keyless_core::text::truncate_chars(out.trim(), 60)
}

fn probe_tool(tool: &str, workspace: &Path) -> Option<String> {
    // Only from PATH folders the model cannot write, and run outside the workspace: a tool may
    // read settings from its working folder (rust-toolchain.toml, .npmrc, go.mod …).
    let program = super::programs::trusted(tool, workspace)?;
    let neutral = std::env::temp_dir();
    for arg in ["--version", "version"] {
        let out = std::process::Command::new(&program)
            .arg(arg)
            .current_dir(&neutral)
            .stdin(std::process::Stdio::null())
            .output();
        match out {
            Err(_) => return None,
            Ok(o) => {
                let text = if o.stdout.is_empty() {
                    o.stderr
                } else {
                    o.stdout
                };
                let line = String::from_utf8_lossy(&text)
                    .lines()
                    .map(clean)
                    .find(|l| !l.is_empty());
                if o.status.success() {
                    return Some(line.unwrap_or_else(|| "installed".into()));
                }
            }
        }
    }
    Some("installed".into())
}

/// The folders snapshot scripts come from: the user's own (`<config>/keyless/snapshot`), then the
/// workspace's `.agent/snapshot`.
fn script_dirs(workspace: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    if let Some(cfg) =
        crate::cli::user_config_path().and_then(|p| p.parent().map(Path::to_path_buf))
    {
        v.push(cfg.join("snapshot"));
    }
    v.push(workspace.join(".agent").join("snapshot"));
    v
}

/// Runs the snapshot scripts, in name order, each in the sandbox (network denied), like any
/// command: a script is never trusted to run unconfined.
fn scripts(workspace: &Path) -> Vec<(String, ScriptOutcome)> {
    let mut files: Vec<std::path::PathBuf> = script_dirs(workspace)
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.filter_map(Result::ok).map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort_by_key(|p| p.file_name().map(std::ffi::OsStr::to_os_string));
    let spec = super::sandbox::spec_for(workspace, false, false);
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let line = format!("sh '{}'", p.display().to_string().replace('\'', "'\\''"));
            let outcome = match shell::run(
                &line,
                Some(&spec),
                workspace,
                Duration::from_secs(10),
                4_000,
                |_| true,
            ) {
                Err(e) => ScriptOutcome::Failed(format!("cannot run: {e}")),
                Ok(o) if o.timed_out => ScriptOutcome::Failed("timed out after 10s".into()),
                Ok(o) if o.exit_code != Some(0) => ScriptOutcome::Failed(format!(
                    "exit code {}: {}",
                    o.exit_code.map_or("none".into(), |c| c.to_string()),
                    o.output.trim()
                )),
                Ok(o) if o.output.trim().is_empty() => ScriptOutcome::Missing,
                Ok(o) => ScriptOutcome::Output(o.output),
            };
            (name, outcome)
        })
        .collect()
}

/// Start-up for `serve` and `run`: probes the configured sandbox, gathers the snapshot with its
/// status line, and records the missing tools in `exec` so a gated command can name them.
#[must_use]
pub fn gather_for(workspace: &Path, exec: &mut super::batch::ExecSettings) -> EnvSnapshot {
    let sandbox = if exec.sandbox {
        super::sandbox::probe(workspace, exec.network).describe()
    } else {
        "off".to_string()
    };
    let snapshot = gather(workspace, sandbox);
    exec.missing_tools = snapshot.missing();
    snapshot
}

/// The snapshot for a workspace; `sandbox` is the sandbox status line.
#[must_use]
pub fn gather(workspace: &Path, sandbox: String) -> EnvSnapshot {
    let handles: Vec<_> = PROBED_TOOLS
        .iter()
        .map(|t| {
            let ws = workspace.to_path_buf();
            (
                t.to_string(),
                std::thread::spawn(move || probe_tool(t, &ws)),
            )
        })
        .collect();
    let tools = handles
        .into_iter()
        .map(|(t, h)| (t, h.join().unwrap_or(None)))
        .collect();
    let shell = std::env::var("SHELL").map_or_else(
        |_| "/bin/sh".to_string(),
        |s| format!("{s} (commands run in /bin/sh)"),
    );
    EnvSnapshot {
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        shell,
        tools,
        scripts: scripts(workspace),
        sandbox,
    }
}
