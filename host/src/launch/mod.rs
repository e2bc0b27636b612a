//! The one launcher: every process keyless starts for the user outside the sandbox (git for a
//! push and its config check, the version probes, MCP stdio servers, the browser for a login,
//! `doctor`'s probes, the clipboard, ssh) is made here, and nowhere else (`clippy.toml` disallows
//! `Command::new` elsewhere; the sandbox's own wrapper is started by [`sandboxed`]).
//!
//! Invariants, for every process it makes:
//! - the program is an absolute path found in a PATH folder the model cannot write (absolute, not
//!   in the workspace, not in a temp folder, not writable by others), and its real file (links
//!   resolved) is not somewhere the model can write either;
//! - a `#!` script's interpreter counts as a program of the line: an absolute one is checked like
//!   the program, `#!/usr/bin/env NAME` is resolved through the same trusted folders (and the child
//!   gets only those folders as PATH, so `env` finds the same one);
//! - the child's PATH holds only those trusted folders;
//! - it starts in a folder outside the workspace (`/`, or the user's home for MCP servers);
//! - its environment is cut to what its purpose needs ([`Purpose`]), and a variable whose value
//!   names a place the model can write is dropped.
//!
//! What is refused is a [`Refused`], which callers report with `KA_LAUNCH_REFUSED`.
#![allow(clippy::disallowed_methods)] // the one place that makes processes outside the sandbox

pub mod sandboxed;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Why keyless will not start a program outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// What a process is started for: it decides the environment it gets and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// git for a push (and its config check): ssh-agent, proxies, git's own settings.
    Git,
    /// ssh for an `@@sshexec` and its copies: the agent socket only.
    Ssh,
    /// `--version` probes: the variables that pick a version behind a shim.
    Probe,
    /// An MCP stdio server: the harmless variables of the reference MCP clients; its own `Env` is
    /// added by the caller. Starts in the user's home.
    McpServer,
    /// The browser for an MCP login, the clipboard: the display.
    Desktop,
    /// `doctor`'s version lines.
    Doctor,
}

/// Variables every launched program gets when they are set.
const BASE_ENV: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "SHELL",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

const GIT_ENV: &[&str] = &[
    "SSH_AUTH_SOCK",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_SSH_VARIANT",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "SSH_ASKPASS_REQUIRE",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "GNUPGHOME",
];

const SSH_ENV: &[&str] = &["SSH_AUTH_SOCK"];

const PROBE_ENV: &[&str] = &[
    "PYENV_ROOT",
    "PYENV_VERSION",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_HOME",
    "NVM_DIR",
    "NVM_BIN",
    "NODE_VERSION",
    "VOLTA_HOME",
    "JAVA_HOME",
    "GOROOT",
    "GOPATH",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "SDKMAN_DIR",
    "DENO_DIR",
    "BUN_INSTALL",
];

const DESKTOP_ENV: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_CURRENT_DESKTOP",
    "XDG_SESSION_TYPE",
    "XDG_DATA_DIRS",
    "XDG_CONFIG_DIRS",
    "XAUTHORITY",
];

/// Variables whose value is a socket, a display or a temp folder, not a program or a file a
/// program obeys: not checked for model-writable places.
const NOT_A_PROGRAM: &[&str] = &[
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
];

/// What an MCP stdio server inherits, like the reference MCP clients (PATH is the launcher's);
/// anything else it needs is in its `Env`.
pub const MCP_ENV: &[&str] = &["HOME", "LOGNAME", "SHELL", "TERM", "USER", "LANG", "TMPDIR"];

impl Purpose {
    fn env_names(self) -> Vec<&'static str> {
        let extra: &[&str] = match self {
            Purpose::McpServer => return MCP_ENV.to_vec(),
            Purpose::Git => GIT_ENV,
            Purpose::Ssh => SSH_ENV,
            Purpose::Probe => PROBE_ENV,
            Purpose::Desktop => DESKTOP_ENV,
            Purpose::Doctor => &[],
        };
        BASE_ENV.iter().chain(extra).copied().collect()
    }
}

/// A program that may run outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Absolute, in a trusted folder.
    pub path: PathBuf,
    /// The interpreter its `#!` line names, when it is a script (resolved, checked).
    pub interpreter: Option<PathBuf>,
}

/// The launcher of one workspace (or of none: `mcp login` outside a project).
#[derive(Debug, Clone)]
pub struct Launcher {
    workspace: Option<PathBuf>,
    /// The folders a sandboxed command can write (real paths).
    writable: Vec<PathBuf>,
    /// The trusted PATH folders, in PATH order.
    dirs: Vec<PathBuf>,
}

/// Temp folders: a sandboxed command can write them where the kernel does not confine writes,
/// and every other program of the user can.
fn temp_roots() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for t in [
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ] {
        v.push(std::fs::canonicalize(&t).unwrap_or(t));
    }
    v.sort();
    v.dedup();
    v
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Writable by other users (and not a sticky folder's own file): anyone could plant a program.
fn others_can_write(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o002 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        false
    }
}

impl Launcher {
    /// The launcher for `workspace` (`None`: no workspace, only the temp folders are the model's).
    #[must_use]
    pub fn new(workspace: Option<&Path>) -> Self {
        let mut writable = temp_roots();
        if let Some(ws) = workspace {
            writable.push(crate::dirs::real_path(ws));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for d in std::env::split_paths(&path) {
            if !d.is_absolute() {
                continue;
            }
            let Ok(real) = std::fs::canonicalize(&d) else {
                continue;
            };
            if writable
                .iter()
                .any(|w| real.starts_with(w) || d.starts_with(w))
                || others_can_write(&real)
                || dirs.contains(&real)
            {
                continue;
            }
            dirs.push(real);
        }
        Launcher {
            workspace: workspace.map(Path::to_path_buf),
            writable,
            dirs,
        }
    }

    /// The PATH folders the launcher trusts, in PATH order (real paths).
    #[must_use]
    pub fn trusted_dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Whether `p` (links resolved as far as it exists) is somewhere the model can write: the
    /// workspace, a temp folder.
    #[must_use]
    pub fn model_writable(&self, p: &Path) -> bool {
        // Where the kernel would go (links and `..` resolved), and where the name says.
        let real = crate::dirs::real_path(p);
        let named = lexical(p);
        self.writable
            .iter()
            .any(|w| real.starts_with(w) || named.starts_with(w))
    }

    /// Whether a file a launched program reads (a config file, a local origin) is one the model
    /// can write: in the workspace, or in a temp folder where the kernel does not confine the
    /// sandbox's writes to the workspace.
    #[must_use]
    pub fn config_writable(&self, p: &Path) -> bool {
        let real = crate::dirs::real_path(p);
        let named = lexical(p);
        let in_ws = self.workspace.as_deref().is_some_and(|ws| {
            let ws = crate::dirs::real_path(ws);
            real.starts_with(&ws) || named.starts_with(&ws)
        });
        in_ws || (!self.confined() && self.model_writable(p))
    }

    /// Whether sandboxed commands' writes are confined to the workspace here (Landlock).
    fn confined(&self) -> bool {
        self.workspace
            .as_deref()
            .is_some_and(crate::exec::sandbox::confines_writes)
    }

    /// `name` in the trusted PATH folders.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<PathBuf> {
        if name.is_empty() || name.contains('/') {
            return None;
        }
        self.dirs
            .iter()
            .map(|d| d.join(name))
            .find(|p| is_executable(p) && !self.model_writable(p))
    }

    /// The program `name` (a bare name looked up in the trusted folders, or an absolute path),
    /// checked with its `#!` interpreter.
    ///
    /// # Errors
    /// A relative path, a program not found in a trusted folder, one (or its interpreter) where
    /// the model can write.
    pub fn program(&self, name: &str) -> Result<Program, Refused> {
        let path = if name.contains('/') {
            let p = PathBuf::from(name);
            if !p.is_absolute() {
                return Err(Refused(format!(
                    "{name} is a relative path: keyless starts programs outside the sandbox only by name or absolute path"
                )));
            }
            if !is_executable(&p) {
                return Err(Refused(format!("{name} is not an executable file")));
            }
            p
        } else {
            self.find(name).ok_or_else(|| {
                Refused(format!(
                    "{name} is not in a PATH folder the model cannot write (absolute, outside the workspace and the temp folders)"
                ))
            })?
        };
        self.checked(path, 0)
    }

    fn checked(&self, path: PathBuf, depth: u32) -> Result<Program, Refused> {
        if self.model_writable(&path) {
            return Err(Refused(format!(
                "{} is in the workspace or a temp folder (or a link to one), which the model can write",
                path.display()
            )));
        }
        let interpreter = match shebang(&path) {
            None => None,
            Some(_) if depth >= 4 => {
                return Err(Refused(format!(
                    "{}: #! interpreters nested too deeply",
                    path.display()
                )))
            }
            Some(words) => Some(self.interpreter(&path, &words, depth)?),
        };
        Ok(Program { path, interpreter })
    }

    /// The program a `#!` line runs: an absolute interpreter, or the one `env` looks up.
    fn interpreter(&self, script: &Path, words: &[String], depth: u32) -> Result<PathBuf, Refused> {
        let first = words.first().map_or("", String::as_str);
        let base = first.rsplit('/').next().unwrap_or(first);
        let named = if base == "env" {
            // `env [-S] [-i] [NAME=VALUE]… PROGRAM …`
            let mut rest = words[1..]
                .iter()
                .flat_map(|w| w.split_whitespace())
                .filter(|w| !w.starts_with('-') && !w.contains('='));
            let program = rest.next().ok_or_else(|| {
                Refused(format!(
                    "{}: its #! line runs env without a program",
                    script.display()
                ))
            })?;
            if program.contains('/') {
                program.to_string()
            } else {
                let found = self.find(program).ok_or_else(|| {
                    Refused(format!(
                        "{}: its #! line runs {program}, which is not in a PATH folder the model cannot write",
                        script.display()
                    ))
                })?;
                // `env` itself must be trusted too.
                self.checked(PathBuf::from(first), depth + 1)?;
                return self.checked(found, depth + 1).map(|p| p.path);
            }
        } else {
            first.to_string()
        };
        let p = PathBuf::from(&named);
        if !p.is_absolute() {
            return Err(Refused(format!(
                "{}: its #! line names {named}, a relative path",
                script.display()
            )));
        }
        self.checked(p, depth + 1).map(|p| p.path)
    }

    /// The PATH a launched program gets: the trusted folders only.
    #[must_use]
    pub fn path_value(&self) -> OsString {
        std::env::join_paths(&self.dirs).unwrap_or_default()
    }

    /// The environment for `purpose`: [`BASE_ENV`] and the purpose's own variables, when set,
    /// without those naming a place the model can write; PATH cut to the trusted folders.
    #[must_use]
    pub fn environment(&self, purpose: Purpose) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = vec![("PATH".into(), self.path_value())];
        for name in purpose.env_names() {
            let Some(v) = std::env::var_os(name) else {
                continue;
            };
            if !NOT_A_PROGRAM.contains(&name) && self.names_writable_place(&v) {
                continue;
            }
            out.push((name.into(), v));
        }
        out
    }

    /// Whether a value (a variable's, a setting's) names, as a word or a `:`-separated part of
    /// one, an absolute or `~/` path where the model can write.
    #[must_use]
    pub fn names_writable_place(&self, v: impl AsRef<std::ffi::OsStr>) -> bool {
        let text = v.as_ref().to_string_lossy();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        text.split(|c: char| {
            c.is_whitespace() || c == ':' || c == '=' || c == '\'' || c == '"' || c == ','
        })
        .filter_map(|w| match (w.strip_prefix("~/"), &home) {
            (Some(rest), Some(h)) => Some(h.join(rest)),
            _ => w.starts_with('/').then(|| PathBuf::from(w)),
        })
        .any(|p| self.config_writable(&p))
    }

    /// Where programs start: `/` (nothing there steers a program), or the user's home for MCP
    /// servers (as their documentation expects), when it is not a place the model can write.
    #[must_use]
    pub fn working_dir(&self, purpose: Purpose) -> PathBuf {
        if purpose == Purpose::McpServer {
            if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
                if home.is_absolute() && !self.model_writable(&home) {
                    return home;
                }
            }
        }
        PathBuf::from("/")
    }

    /// A command for `program`, ready to get its arguments.
    #[must_use]
    pub fn command(&self, program: &Program, purpose: Purpose) -> std::process::Command {
        let mut c = std::process::Command::new(&program.path);
        c.env_clear()
            .envs(self.environment(purpose))
            .current_dir(self.working_dir(purpose));
        c
    }

    /// The same, for tokio (MCP stdio servers).
    #[must_use]
    pub fn tokio_command(&self, program: &Program, purpose: Purpose) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&program.path);
        c.env_clear()
            .envs(self.environment(purpose))
            .current_dir(self.working_dir(purpose));
        c
    }

    /// `name` resolved and made into a command in one step.
    ///
    /// # Errors
    /// As [`Launcher::program`].
    pub fn start(&self, name: &str, purpose: Purpose) -> Result<std::process::Command, Refused> {
        let p = self.program(name)?;
        Ok(self.command(&p, purpose))
    }

    /// The workspace this launcher guards, if any.
    #[must_use]
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// The config files among `files` (absolute) that the model can write
    /// ([`Launcher::config_writable`]).
    #[must_use]
    pub fn writable_among(&self, files: &[PathBuf]) -> Vec<PathBuf> {
        files
            .iter()
            .filter(|f| self.config_writable(f))
            .cloned()
            .collect()
    }
}

/// `p` with `.` and `..` taken away by their names (`/a/ws/../o` is `/a/o`), before links are
/// resolved: a path that only passes through a folder is not in it.
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The words of a file's `#!` line, if it has one.
fn shebang(path: &Path) -> Option<Vec<String>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).ok()?;
    let head = &buf[..n];
    let rest = head.strip_prefix(b"#!")?;
    let line = rest.split(|b| *b == b'\n').next()?;
    let text = String::from_utf8_lossy(line);
    let mut words = text.split_whitespace();
    let first = words.next()?.to_string();
    // Linux passes everything after the interpreter as one argument.
    let arg: String = words.collect::<Vec<_>>().join(" ");
    Some(if arg.is_empty() {
        vec![first]
    } else {
        vec![first, arg]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn shebang_words_are_read_as_linux_passes_them() {
        let d = tempfile::tempdir().unwrap();
        let s = script(d.path(), "a", "#!/usr/bin/env -S node --foo\nx\n");
        assert_eq!(
            shebang(&s),
            Some(vec!["/usr/bin/env".into(), "-S node --foo".into()])
        );
        let s = script(d.path(), "b", "echo hi\n");
        assert_eq!(shebang(&s), None);
    }

    #[test]
    fn a_program_or_interpreter_in_the_workspace_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let l = Launcher::new(Some(ws.path()));
        let s = script(ws.path(), "tool", "#!/bin/sh\n");
        assert!(l.program(&s.display().to_string()).is_err());
        assert!(l.program("tool/x").is_err());
    }
}
