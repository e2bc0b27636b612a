//! The sandbox every runcommand (and every snapshot script) runs in.
//!
//! The host starts a command through itself: `keyless-host __sandbox … -- COMMAND`. That wrapper
//! confines itself, then starts the command, so no `unsafe` is needed. On Linux, in this order:
//!
//! 1. `PR_SET_PDEATHSIG`: the wrapper dies with the host, even on a kill -9 of the host;
//! 2. new mount and PID namespaces (inside a new user namespace when the host is not root);
//! 3. read-only bind mounts over keyless's own files: `.agent`, `keyless.json`, `.git/hooks`,
//!    `.git/config`, `.git/info`, `.git/commondir`, `.git/config.worktree` (with `.git` itself
//!    pinned as a mount point, so it cannot be renamed or replaced), the whole `.git` for commands
//!    the user did not approve (and a `.git` file always), the user's keyless config folder, the
//!    host binary and the native-messaging manifests when they live in a writable folder; a
//!    private tmpfs on `/dev/shm`;
//! 4. Landlock at the best ABI the kernel offers: writes only in the workspace, the session's
//!    private temp folder and a few `/dev` files; TCP denied unless the network is allowed;
//!    signals and abstract Unix sockets scoped to the sandbox (ABI 6+);
//! 5. a seccomp filter: sockets other than Unix ones are refused unless the network is allowed,
//!    and the calls that could undo the confinement (mount, unshare, setns, ptrace of others via
//!    `process_vm_*`, io_uring, bpf, keyctl, kernel modules, open_by_handle_at) fail with EPERM;
//! 6. the command runs under a small init (`__sandbox-init`) that is PID 1 of the new PID
//!    namespace: when the command ends, init ends, and the kernel kills every process the command
//!    started, `setsid` and double forks included.
//!
//! Where a step is unavailable the rest still applies, and [`Report`] says what holds; `doctor`,
//! `run` and `serve` print it.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the sandbox enforces on this machine (the wrapper's `--probe` answer).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The Landlock ABI in use (0: none).
    pub landlock_abi: u32,
    /// Every requested Landlock restriction is enforced.
    pub landlock_full: bool,
    /// The seccomp socket filter is installed.
    pub seccomp: bool,
    /// Mount and PID namespaces: read-only protection of keyless's files, and every process of a
    /// command ends with it.
    pub namespaces: bool,
    /// Whether the network is allowed (Commands.Network).
    pub network: bool,
    /// What could not be applied, for the user.
    pub missing: Vec<String>,
}

impl Report {
    /// Nothing is enforced.
    #[must_use]
    pub fn unavailable(why: impl Into<String>) -> Self {
        Self {
            missing: vec![why.into()],
            ..Self::default()
        }
    }

    /// Every layer holds.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.landlock_full && self.seccomp && self.namespaces
    }

    /// Whether anything confines commands at all.
    #[must_use]
    pub fn is_enforced(&self) -> bool {
        self.landlock_abi > 0 || self.namespaces
    }

    /// One line for `run`, `serve`, `doctor` and the system prompt.
    #[must_use]
    pub fn describe(&self) -> String {
        let net = if self.network {
            "network allowed"
        } else {
            "network denied"
        };
        if !self.is_enforced() {
            return format!(
                "UNAVAILABLE ({}): commands run without confinement, limited only by the command policy",
                self.missing.join("; ")
            );
        }
        let mut parts = Vec::new();
        if self.landlock_abi > 0 {
            parts.push(format!(
                "Landlock ABI {}{}",
                self.landlock_abi,
                if self.landlock_full { "" } else { " (partial)" }
            ));
        }
        if self.seccomp {
            parts.push("seccomp socket filter".to_string());
        }
        if self.namespaces {
            parts.push("mount+PID namespaces".to_string());
        }
        let head = if self.is_full() {
            "enforced"
        } else {
            "partly enforced"
        };
        let mut line = format!(
            "{head} ({}): writes only in the workspace and a private temp folder; .agent, keyless.json and git's hooks, config and info read-only; .git read-only unless you approved the command; git's control files checked after every command; a private /dev/shm; every process ends with its command; {net}; reads outside the workspace are allowed, except your home's credential folders and files (~/.ssh, ~/.aws, ~/.netrc, browser profiles, …), which are hidden",
            parts.join(", ")
        );
        if !self.missing.is_empty() {
            line.push_str(&format!("; missing: {}", self.missing.join("; ")));
        }
        line
    }
}

/// How one command is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub workspace: PathBuf,
    /// The private temp folder (`TMPDIR`), writable.
    pub tmp: PathBuf,
    /// Other folders the command may write.
    pub write: Vec<PathBuf>,
    /// Paths that stay read-only inside the sandbox (bind mounts), when they exist.
    pub readonly: Vec<PathBuf>,
    /// Folders that stay writable but cannot be renamed, replaced or removed themselves (each a
    /// mount point of its own): the `.git` an approved command may write.
    pub pinned: Vec<PathBuf>,
    /// A private `/dev/shm` (a tmpfs of the command's own mount namespace), writable; without
    /// namespaces `/dev/shm` is not writable at all, since it is shared with the user's programs.
    pub private_shm: bool,
    pub network: bool,
    /// The secret-looking environment variables the command still gets (keyless.json's
    /// `Programs.Env`, named exactly); every other one is withheld
    /// ([`keyless_core::secrets::withheld`]).
    pub pass_env: Vec<String>,
    /// Where credentials live in the user's home ([`keyless_core::secrets::HOME_SECRETS`]):
    /// hidden from the command (an empty read-only folder or file mounted over each).
    pub hidden: Vec<PathBuf>,
    /// How many processes and how much memory the command may have ([`super::limits`]).
    pub limits: super::limits::Limits,
}

/// The user's credential folders and files that exist ([`keyless_core::secrets::HOME_SECRETS`]
/// under `$HOME`, and keyless's own [`keyless_core::secrets::KEYLESS_SECRETS`] in its config
/// folder: pairing and MCP tokens), each resolved to where it really is; none that holds the
/// workspace.
#[must_use]
pub fn hidden_paths(workspace: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let config = crate::dirs::user_config_dir();
    let real_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let in_home = home.iter().flat_map(|h| {
        keyless_core::secrets::HOME_SECRETS
            .iter()
            .map(move |rel| h.join(rel))
    });
    let in_config = config.iter().flat_map(|c| {
        keyless_core::secrets::KEYLESS_SECRETS
            .iter()
            .map(move |rel| c.join(rel))
    });
    let mut out: Vec<PathBuf> = in_home
        .chain(in_config)
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| !real_ws.starts_with(p) && p != Path::new("/"))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The user's environment as a confined command gets it: without the variables whose name looks
/// like a secret or whose value like a credential, unless `pass` names them exactly. Returns the
/// kept variables and the names withheld.
#[must_use]
pub fn command_env(
    pass: &[String],
) -> (Vec<(std::ffi::OsString, std::ffi::OsString)>, Vec<String>) {
    let mut kept = Vec::new();
    let mut withheld = Vec::new();
    for (k, v) in std::env::vars_os() {
        let name = k.to_string_lossy();
        let value = v.to_string_lossy();
        if keyless_core::secrets::withheld(&name, &value, Some(pass)) {
            withheld.push(name.into_owned());
        } else {
            kept.push((k, v));
        }
    }
    withheld.sort();
    (kept, withheld)
}

/// The private temp folder of a workspace's sandboxed commands: `.agent/sandbox-tmp`. Inside the
/// sandbox it is the only writable place under `.agent` (a bind mount of its own).
#[must_use]
pub fn private_tmp(workspace: &Path) -> PathBuf {
    workspace.join(".agent").join("sandbox-tmp")
}

/// The paths keyless protects inside the sandbox. `approved`: the user saw and approved the
/// command, so it may write `.git`, but never its hooks, config, info, `commondir` or
/// `config.worktree`; a `.git` file (a `gitdir:` link) is always read-only.
#[must_use]
pub fn protected_paths(workspace: &Path, approved: bool) -> Vec<PathBuf> {
    let git = workspace.join(".git");
    let git_is_dir = std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir());
    let mut v = Vec::new();
    if approved && git_is_dir {
        for name in ["hooks", "config", "info", "commondir", "config.worktree"] {
            v.push(git.join(name));
        }
    } else {
        v.push(git);
    }
    v.push(workspace.join(".agent"));
    v.push(workspace.join(keyless_core::path::SETTINGS_FILE));
    // The user's own keyless configuration, the host binary and the native-messaging manifests,
    // when a writable folder holds them; the user's own configuration files that are links into
    // the workspace (a dotfiles repository).
    v.extend(crate::dirs::own_locations());
    v.extend(
        crate::dirs::linked_user_config(workspace)
            .into_iter()
            .map(|l| crate::dirs::real_path(workspace).join(l.rel)),
    );
    v
}

/// The spec for a command in `workspace`.
#[must_use]
pub fn spec_for(workspace: &Path, network: bool, approved: bool) -> Spec {
    let git = workspace.join(".git");
    let pinned = if approved && std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
        vec![git]
    } else {
        Vec::new()
    };
    Spec {
        workspace: workspace.to_path_buf(),
        tmp: private_tmp(workspace),
        write: Vec::new(),
        readonly: protected_paths(workspace, approved),
        pinned,
        private_shm: Path::new("/dev/shm").is_dir(),
        network,
        pass_env: Vec::new(),
        hidden: hidden_paths(workspace),
        limits: super::limits::Limits::new(keyless_core::keyless_json::DEFAULT_MAX_PROCESSES, None),
    }
}

/// The wrapper's arguments for a spec (after the program).
#[must_use]
pub fn wrapper_args(spec: &Spec) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = vec!["__sandbox".into(), "--workspace".into()];
    a.push(spec.workspace.clone().into());
    a.push("--tmp".into());
    a.push(spec.tmp.clone().into());
    for w in &spec.write {
        a.push("--write".into());
        a.push(w.clone().into());
    }
    for r in &spec.readonly {
        a.push("--readonly".into());
        a.push(r.clone().into());
    }
    for p in &spec.pinned {
        a.push("--pin".into());
        a.push(p.clone().into());
    }
    for h in &spec.hidden {
        a.push("--hide".into());
        a.push(h.clone().into());
    }
    if spec.private_shm {
        a.push("--private-shm".into());
    }
    a.push("--parent".into());
    a.push(std::process::id().to_string().into());
    if spec.network {
        a.push("--network".into());
    }
    a
}

/// Whether sandboxed commands' writes are confined to the workspace and their private folders on
/// this machine (Landlock enforced): asked once per process.
#[must_use]
pub fn confines_writes(workspace: &Path) -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| probe(workspace, false).landlock_abi > 0)
}

/// Asks the wrapper what it can enforce here.
#[must_use]
pub fn probe(workspace: &Path, network: bool) -> Report {
    let spec = spec_for(workspace, network, false);
    let _ = std::fs::create_dir_all(&spec.tmp);
    let out = crate::launch::sandboxed::host_binary()
        .args(wrapper_args(&spec))
        .arg("--probe")
        .arg("--")
        .arg("true")
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) => serde_json::from_slice::<Report>(&o.stdout).unwrap_or_else(|_| {
            Report::unavailable(format!(
                "the sandbox probe answered {:?}",
                String::from_utf8_lossy(&o.stdout).trim()
            ))
        }),
        Err(e) => Report::unavailable(format!("cannot run the sandbox probe: {e}")),
    }
}

/// The arguments of `keyless-host __sandbox`.
#[derive(Debug, Clone)]
pub struct WrapperArgs {
    pub workspace: PathBuf,
    pub tmp: PathBuf,
    pub write: Vec<PathBuf>,
    pub readonly: Vec<PathBuf>,
    pub pinned: Vec<PathBuf>,
    pub hidden: Vec<PathBuf>,
    pub private_shm: bool,
    pub network: bool,
    pub probe: bool,
    /// The host's process id: the wrapper ends with it.
    pub parent: Option<u32>,
    pub command: String,
}

#[cfg(target_os = "linux")]
mod linux;

fn exit_status_code(status: std::process::ExitStatus) -> std::process::ExitCode {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return std::process::ExitCode::from(
                128u8.saturating_add(u8::try_from(sig).unwrap_or(0)),
            );
        }
    }
    std::process::ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1))
}

/// `keyless-host __sandbox …`: confine, then run the command (or, with `--probe`, print what
/// holds as JSON and exit).
#[must_use]
pub fn wrapper_main(a: &WrapperArgs) -> std::process::ExitCode {
    #[cfg(target_os = "linux")]
    {
        // The host stops a command (its deadline, a cancel) with SIGTERM to this wrapper: the
        // command's first process is killed, and the wrapper returns as when the command ends,
        // once every process of the command is gone (the kernel empties the PID namespace
        // before its init is reaped; without namespaces the wrapper kills every descendant).
        // So the git guard's check never runs while a process of the command could still write.
        // Set up before the namespaces: a process may start no thread once it has entered a
        // PID namespace of its own.
        let first = linux::kill_on_term();
        let report = match linux::confine(a) {
            Ok(r) => r,
            Err(e) => {
                if a.probe {
                    println!(
                        "{}",
                        serde_json::to_string(&Report::unavailable(e)).unwrap_or_default()
                    );
                    return std::process::ExitCode::SUCCESS;
                }
                eprintln!("keyless sandbox: {e}");
                return std::process::ExitCode::from(126);
            }
        };
        if a.probe {
            println!("{}", serde_json::to_string(&report).unwrap_or_default());
            return std::process::ExitCode::SUCCESS;
        }
        let child = if report.namespaces {
            // The first child becomes PID 1 of the new PID namespace.
            crate::launch::sandboxed::host_binary()
                .arg("__sandbox-init")
                .arg("--parent")
                .arg(std::process::id().to_string())
                .arg("--")
                .arg(&a.command)
                .spawn()
        } else {
            linux::subreaper();
            crate::launch::sandboxed::model_shell(&a.command).spawn()
        };
        if let Ok(c) = &child {
            first.store(c.id(), std::sync::atomic::Ordering::SeqCst);
        }
        let status = match child.and_then(|mut c| c.wait()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("keyless sandbox: cannot start the command: {e}");
                return std::process::ExitCode::from(126);
            }
        };
        if !report.namespaces {
            linux::kill_descendants();
        }
        exit_status_code(status)
    }
    #[cfg(not(target_os = "linux"))]
    {
        if a.probe {
            println!(
                "{}",
                serde_json::to_string(&Report::unavailable("the sandbox is Linux-only"))
                    .unwrap_or_default()
            );
            return std::process::ExitCode::SUCCESS;
        }
        match crate::launch::sandboxed::model_shell(&a.command).status() {
            Ok(s) => exit_status_code(s),
            Err(_) => std::process::ExitCode::from(126),
        }
    }
}

/// `keyless-host __sandbox-init --parent PID -- COMMAND` (see the module docs).
#[must_use]
pub fn init_main(parent: u32, command: &str) -> std::process::ExitCode {
    #[cfg(target_os = "linux")]
    {
        linux::init_main(parent, command)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = parent;
        match crate::launch::sandboxed::model_shell(command).status() {
            Ok(s) => exit_status_code(s),
            Err(_) => std::process::ExitCode::from(126),
        }
    }
}
