//! Gathers the environment snapshot: OS, shell, tool versions (probed in parallel, each under a
//! time cap, and cached per workspace until PATH or the tools change), and the snapshot scripts.

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

/// How long one version probe may take; a tool that answers later is listed as installed.
const PROBE_CAP: Duration = Duration::from_secs(3);

/// Runs `program arg` through the launcher (outside the workspace, PATH cut to the trusted
/// folders, so a `#!/usr/bin/env node` finds the same trusted `node`), killed after
/// [`PROBE_CAP`].
fn probe_once(
    launcher: &crate::launch::Launcher,
    program: &crate::launch::Program,
    arg: &str,
) -> Option<std::process::Output> {
    use std::io::Read as _;
    let mut child = launcher
        .command(program, crate::launch::Purpose::Probe)
        .arg(arg)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < PROBE_CAP => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_end(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    Some(std::process::Output {
        status,
        stdout,
        stderr,
    })
}

fn probe_tool(launcher: &crate::launch::Launcher, program: &crate::launch::Program) -> String {
    for arg in ["--version", "version"] {
        let Some(o) = probe_once(launcher, program, arg) else {
            return "installed".into();
        };
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
            return line.unwrap_or_else(|| "installed".into());
        }
    }
    "installed".into()
}

/// What the version probes depend on, cheap to read: each tool's resolved file (path, size,
/// modification time), PATH, and the files and variables that pick versions behind shims.
fn probe_key(
    workspace: &Path,
    found: &[(String, Option<std::path::PathBuf>)],
    launcher: &crate::launch::Launcher,
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    h.update(launcher.path_value().to_string_lossy().as_bytes());
    for (tool, path) in found {
        h.update(tool);
        if let Some(p) = path {
            let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            h.update(real.display().to_string());
            if let Ok(m) = std::fs::metadata(&real) {
                h.update(m.len().to_le_bytes());
                if let Ok(t) = m.modified().and_then(|t| {
                    t.duration_since(std::time::UNIX_EPOCH)
                        .map_err(std::io::Error::other)
                }) {
                    h.update(t.as_nanos().to_le_bytes());
                }
            }
        }
        h.update([0]);
    }
    for var in [
        "PYENV_VERSION",
        "RUSTUP_TOOLCHAIN",
        "NODE_VERSION",
        "JAVA_HOME",
        "GOROOT",
        "ASDF_DIR",
    ] {
        h.update(std::env::var(var).unwrap_or_default());
        h.update([0]);
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let pyenv = std::env::var_os("PYENV_ROOT").map(std::path::PathBuf::from);
    for f in [
        pyenv
            .or_else(|| home.as_ref().map(|h| h.join(".pyenv")))
            .map(|p| p.join("version")),
        home.as_ref().map(|h| h.join(".tool-versions")),
        home.as_ref().map(|h| h.join(".rustup/settings.toml")),
        home.as_ref().map(|h| h.join(".nvm/alias/default")),
    ]
    .into_iter()
    .flatten()
    {
        h.update(std::fs::read(f).unwrap_or_default());
        h.update([0]);
    }
    let _ = workspace;
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Cached {
    key: String,
    tools: Vec<(String, Option<String>)>,
}

/// Tool versions: from `.agent/snapshot-cache.json` when nothing they depend on changed, else
/// probed in parallel (each under [`PROBE_CAP`]) and cached.
fn tool_versions(workspace: &Path) -> Vec<(String, Option<String>)> {
    let launcher = crate::launch::Launcher::new(Some(workspace));
    // A tool the launcher refuses (its `#!` interpreter only where the model can write) is
    // listed as missing: it is never run outside the sandbox.
    let programs: Vec<(String, Option<crate::launch::Program>)> = PROBED_TOOLS
        .iter()
        .map(|t| ((*t).to_string(), launcher.program(t).ok()))
        .collect();
    let found: Vec<(String, Option<std::path::PathBuf>)> = programs
        .iter()
        .map(|(t, p)| (t.clone(), p.as_ref().map(|p| p.path.clone())))
        .collect();
    let key = probe_key(workspace, &found, &launcher);
    let cache = workspace.join(".agent").join("snapshot-cache.json");
    if let Some(c) = std::fs::read(&cache)
        .ok()
        .and_then(|b| serde_json::from_slice::<Cached>(&b).ok())
        .filter(|c| c.key == key)
    {
        return c.tools;
    }
    let handles: Vec<_> = programs
        .into_iter()
        .map(|(t, program)| {
            let launcher = launcher.clone();
            (
                t,
                program.map(|p| std::thread::spawn(move || probe_tool(&launcher, &p))),
            )
        })
        .collect();
    let tools: Vec<(String, Option<String>)> = handles
        .into_iter()
        .map(|(t, h)| {
            (
                t,
                h.map(|h| h.join().unwrap_or_else(|_| "installed".into())),
            )
        })
        .collect();
    if workspace.join(".agent").is_dir() {
        // The key of what the probes left: a probe may write a file the key reads (rustup writes
        // `~/.rustup/settings.toml` in a fresh home), and the next run reads the key after it.
        let key = probe_key(workspace, &found, &launcher);
        if let Ok(json) = serde_json::to_vec(&Cached {
            key,
            tools: tools.clone(),
        }) {
            let _ = super::workspace::write_atomic(&cache, &json);
        }
    }
    tools
}

/// The folders snapshot scripts come from: the user's own (`<config>/keyless/snapshot`), then the
/// workspace's `.agent/snapshot`.
fn script_dirs(workspace: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    if let Some(cfg) =
        crate::dirs::user_config_path().and_then(|p| p.parent().map(Path::to_path_buf))
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
                Ok(o) if !o.repairs.is_empty() => {
                    ScriptOutcome::Failed(super::gitguard::describe(&o.repairs))
                }
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
    let mut snapshot = gather(workspace, sandbox);
    snapshot.withheld = super::sandbox::command_env(&exec.pass_env).1;
    exec.missing_tools = snapshot.missing();
    snapshot
}

/// The snapshot for a workspace; `sandbox` is the sandbox status line. The variables withheld from
/// commands are those of a configuration that passes none (`gather_for` fills in the session's).
#[must_use]
pub fn gather(workspace: &Path, sandbox: String) -> EnvSnapshot {
    let tools = tool_versions(workspace);
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
        withheld: super::sandbox::command_env(&[]).1,
    }
}
