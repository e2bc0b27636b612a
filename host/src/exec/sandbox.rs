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
mod linux {
    use super::{Report, WrapperArgs};
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};
    use nix::sys::signal::Signal;
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    use nix::unistd::{getgid, getuid, Pid};
    use std::path::{Path, PathBuf};

    /// Enters new mount and PID namespaces (and a user namespace when not root). The PID
    /// namespace applies to the children started afterwards.
    fn enter_namespaces() -> Result<(), String> {
        let root = getuid().is_root();
        let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
        if !root {
            flags |= CloneFlags::CLONE_NEWUSER;
        }
        let (uid, gid) = (getuid(), getgid());
        unshare(flags).map_err(|e| format!("namespaces unavailable ({e})"))?;
        if !root {
            // Keep the user's own ids: files created stay theirs, and no root appears inside.
            std::fs::write("/proc/self/setgroups", "deny")
                .map_err(|e| format!("setgroups: {e}"))?;
            std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
                .map_err(|e| format!("uid_map: {e}"))?;
            std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
                .map_err(|e| format!("gid_map: {e}"))?;
        }
        // Our mounts must never propagate back to the host.
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .map_err(|e| format!("private mounts: {e}"))
    }

    /// The flags a read-only remount must keep (a user namespace may not drop locked ones).
    fn kept_flags(path: &Path) -> MsFlags {
        use nix::sys::statvfs::{statvfs, FsFlags};
        let mut f = MsFlags::empty();
        if let Ok(s) = statvfs(path) {
            let fl = s.flags();
            for (st, ms) in [
                (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
                (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
                (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
                (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
                (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
                (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
            ] {
                if fl.contains(st) {
                    f |= ms;
                }
            }
        }
        f
    }

    fn bind(path: &Path, readonly: bool) -> Result<(), String> {
        mount(
            Some(path),
            path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("bind {}: {e}", path.display()))?;
        // A bind mount copies the flags of the mount it comes from, so a writable one inside a
        // read-only folder must be remounted writable explicitly.
        let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | kept_flags(path);
        if readonly {
            flags |= MsFlags::MS_RDONLY;
        } else {
            flags.remove(MsFlags::MS_RDONLY);
        }
        mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
            .map_err(|e| format!("remount {}: {e}", path.display()))?;
        Ok(())
    }

    /// Read-only bind mounts over the protected paths, then the private temp folder writable again
    /// (it lives under `.agent`).
    fn protect(a: &WrapperArgs) -> Result<(), String> {
        let writable: Vec<&Path> = std::iter::once(a.workspace.as_path())
            .chain(std::iter::once(a.tmp.as_path()))
            .chain(a.write.iter().map(PathBuf::as_path))
            .collect();
        // A pinned folder is a mount point: it cannot be renamed, replaced or removed, so the
        // read-only mounts inside it stay where git looks for them.
        for p in &a.pinned {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
                bind(p, false)?;
            }
        }
        for p in &a.readonly {
            // Only what exists and what a writable folder holds needs a mount.
            let Ok(meta) = std::fs::symlink_metadata(p) else {
                continue;
            };
            if meta.file_type().is_symlink() || !writable.iter().any(|w| p.starts_with(w)) {
                continue;
            }
            bind(p, true)?;
        }
        if a.tmp.is_dir() && a.readonly.iter().any(|r| a.tmp.starts_with(r)) {
            bind(&a.tmp, false)?;
        }
        // The user's credentials: an empty read-only folder over each folder, the empty
        // /dev/null over each file. What cannot be hidden (it vanished, it is the workspace's
        // parent) is skipped; the others still are.
        for h in &a.hidden {
            let Ok(meta) = std::fs::symlink_metadata(h) else {
                continue;
            };
            if a.workspace.starts_with(h) || meta.file_type().is_symlink() {
                continue;
            }
            let hidden = if meta.is_dir() {
                mount(
                    Some("tmpfs"),
                    h,
                    Some("tmpfs"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    Some("size=4k,mode=0500"),
                )
            } else {
                mount(
                    Some("/dev/null"),
                    h,
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                )
            };
            hidden.map_err(|e| format!("hide {}: {e}", h.display()))?;
        }
        if a.private_shm {
            mount(
                Some("tmpfs"),
                "/dev/shm",
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some("mode=1777,size=256m"),
            )
            .map_err(|e| format!("a private /dev/shm: {e}"))?;
        }
        Ok(())
    }

    /// Landlock at the best ABI the kernel offers. Returns (ABI in use, fully enforced).
    fn landlock(a: &WrapperArgs, shm: bool) -> Result<(u32, bool), String> {
        use landlock::{
            path_beneath_rules, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr,
            RulesetCreatedAttr, RulesetStatus, Scope, ABI,
        };
        let abi = ABI::V10;
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| e.to_string())?
            .scope(Scope::from_all(abi))
            .map_err(|e| e.to_string())?;
        if !a.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| e.to_string())?;
        }
        let devices = [
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/tty",
            "/dev/random",
            "/dev/urandom",
            "/dev/ptmx",
            "/dev/pts",
        ];
        let mut writable: Vec<&Path> = vec![a.workspace.as_path(), a.tmp.as_path()];
        writable.extend(a.write.iter().map(PathBuf::as_path));
        if shm {
            writable.push(Path::new("/dev/shm"));
        }
        let status = ruleset
            .create()
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(&writable, AccessFs::from_all(abi)))
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(devices, AccessFs::from_all(abi)))
            .map_err(|e| e.to_string())?
            .restrict_self()
            .map_err(|e| e.to_string())?;
        let in_use = match status.landlock {
            LandlockStatus::Available { effective_abi, .. } => effective_abi as u32,
            _ => 0,
        };
        // Best effort asks for the rights of every ABI this crate knows; what the kernel lacks is
        // named by its ABI. Everything keyless relies on (files, TCP, signal and abstract-socket
        // scoping) is there from ABI 6.
        Ok(match status.ruleset {
            RulesetStatus::NotEnforced => (0, false),
            RulesetStatus::PartiallyEnforced | RulesetStatus::FullyEnforced => {
                (in_use, in_use >= 6)
            }
        })
    }

    /// The seccomp filter: no sockets but Unix ones (Unix, IP and netlink when the network is
    /// allowed), and none of the calls that could undo the confinement.
    fn seccomp(network: bool) -> Result<(), String> {
        use seccompiler::{
            BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
            SeccompFilter, SeccompRule,
        };
        use std::collections::BTreeMap;
        // x32 system calls reach the kernel with this bit set and the x86_64 architecture.
        const X32: i64 = 0x4000_0000;
        let allowed_domains: &[i32] = if network {
            &[
                nix::libc::AF_UNIX,
                nix::libc::AF_INET,
                nix::libc::AF_INET6,
                nix::libc::AF_NETLINK,
            ]
        } else {
            &[nix::libc::AF_UNIX]
        };
        let socket_rule = || -> Result<Vec<SeccompRule>, String> {
            // One rule that matches when the domain is none of the allowed ones.
            let conds = allowed_domains
                .iter()
                .map(|d| {
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Ne,
                        u64::try_from(*d).unwrap_or(0),
                    )
                    .map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(vec![SeccompRule::new(conds).map_err(|e| e.to_string())?])
        };
        let denied: &[i64] = &[
            nix::libc::SYS_mount,
            nix::libc::SYS_umount2,
            nix::libc::SYS_pivot_root,
            nix::libc::SYS_unshare,
            nix::libc::SYS_setns,
            nix::libc::SYS_move_mount,
            nix::libc::SYS_open_tree,
            nix::libc::SYS_fsopen,
            nix::libc::SYS_fsmount,
            nix::libc::SYS_fsconfig,
            nix::libc::SYS_fspick,
            nix::libc::SYS_mount_setattr,
            nix::libc::SYS_io_uring_setup,
            nix::libc::SYS_io_uring_enter,
            nix::libc::SYS_io_uring_register,
            nix::libc::SYS_bpf,
            nix::libc::SYS_perf_event_open,
            nix::libc::SYS_keyctl,
            nix::libc::SYS_add_key,
            nix::libc::SYS_request_key,
            nix::libc::SYS_init_module,
            nix::libc::SYS_finit_module,
            nix::libc::SYS_delete_module,
            nix::libc::SYS_kexec_load,
            nix::libc::SYS_open_by_handle_at,
            nix::libc::SYS_name_to_handle_at,
            nix::libc::SYS_process_vm_writev,
            nix::libc::SYS_userfaultfd,
            // The machine's clock, power and swap (for a command run as root).
            nix::libc::SYS_settimeofday,
            nix::libc::SYS_clock_settime,
            nix::libc::SYS_adjtimex,
            nix::libc::SYS_clock_adjtime,
            nix::libc::SYS_reboot,
            nix::libc::SYS_swapon,
            nix::libc::SYS_swapoff,
            nix::libc::SYS_sethostname,
            nix::libc::SYS_setdomainname,
            nix::libc::SYS_acct,
            nix::libc::SYS_syslog,
        ];
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for nr in [nix::libc::SYS_socket, nix::libc::SYS_socket | X32] {
            rules.insert(nr, socket_rule()?);
        }
        for nr in denied {
            rules.insert(*nr, Vec::new());
            rules.insert(*nr | X32, Vec::new());
        }
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(|e: seccompiler::BackendError| e.to_string())?;
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(u32::try_from(nix::libc::EPERM).unwrap_or(1)),
            arch,
        )
        .map_err(|e| e.to_string())?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| e.to_string())?;
        nix::sys::prctl::set_no_new_privs().map_err(|e| e.to_string())?;
        seccompiler::apply_filter(&program).map_err(|e| e.to_string())
    }

    /// Confines this process (and so every child). Returns what holds.
    pub fn confine(a: &WrapperArgs) -> Result<Report, String> {
        let mut r = Report {
            network: a.network,
            ..Report::default()
        };
        // Die with the host (which may already be gone by the time this runs).
        match a.parent {
            Some(host) => die_with(host, exit_killed),
            None => {
                let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            }
        }
        match enter_namespaces() {
            Ok(()) => {
                protect(a)?;
                r.namespaces = true;
            }
            Err(why) => r.missing.push(format!(
                "{why}: .git and .agent are not write-protected (keyless checks git's files after each command instead), your home's credential folders are not hidden, /dev/shm is not writable, and background processes may outlive their command"
            )),
        }
        match landlock(a, a.private_shm && r.namespaces) {
            Ok((abi, full)) => {
                r.landlock_abi = abi;
                r.landlock_full = full;
                if abi == 0 {
                    r.missing.push("this kernel does not offer Landlock".into());
                } else if !full {
                    r.missing.push(format!(
                        "Landlock ABI {abi}{}{}",
                        if abi < 4 { " cannot restrict TCP" } else { "" },
                        " cannot scope signals and abstract Unix sockets (ABI 6)"
                    ));
                }
            }
            Err(e) => return Err(format!("Landlock: {e}")),
        }
        match seccomp(a.network) {
            Ok(()) => r.seccomp = true,
            Err(e) => r.missing.push(format!("seccomp unavailable ({e})")),
        }
        if let Err(e) = drop_capabilities() {
            r.missing
                .push(format!("capabilities could not be dropped ({e})"));
        }
        Ok(r)
    }

    /// The capabilities a command keeps: those that let root (in a container, say) use files
    /// that other users own, as a build run as root expects. Every other one (administration,
    /// modules, the clock, tracing, killing any process, raw I/O, …) is dropped from every set and
    /// from the bounding set, so neither the command nor anything it executes has it. Writes stay
    /// confined by Landlock whatever is kept.
    const KEPT_CAPABILITIES: &[caps::Capability] = &[
        caps::Capability::CAP_CHOWN,
        caps::Capability::CAP_DAC_OVERRIDE,
        caps::Capability::CAP_DAC_READ_SEARCH,
        caps::Capability::CAP_FOWNER,
        caps::Capability::CAP_FSETID,
        caps::Capability::CAP_SETUID,
        caps::Capability::CAP_SETGID,
        caps::Capability::CAP_NET_BIND_SERVICE,
    ];

    fn drop_capabilities() -> Result<(), String> {
        use caps::{CapSet, CapsHashSet};
        let kept: CapsHashSet = KEPT_CAPABILITIES.iter().copied().collect();
        if caps::read(None, CapSet::Permitted)
            .map_err(|e| e.to_string())?
            .is_empty()
        {
            // A user's process without capabilities, and no_new_privs keeps it so.
            return Ok(());
        }
        for cap in caps::all() {
            if !kept.contains(&cap) && caps::has_cap(None, CapSet::Bounding, cap).unwrap_or(false) {
                caps::drop(None, CapSet::Bounding, cap).map_err(|e| e.to_string())?;
            }
        }
        caps::clear(None, CapSet::Ambient).map_err(|e| e.to_string())?;
        for set in [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
            let now = caps::read(None, set).map_err(|e| e.to_string())?;
            let keep: CapsHashSet = now.intersection(&kept).copied().collect();
            caps::set(None, set, &keep).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Without a PID namespace: become the subreaper of the command's processes, so that those
    /// still running when it ends can be found and killed.
    pub fn subreaper() {
        let _ = nix::sys::prctl::set_child_subreaper(true);
    }

    /// Kills every process left below this one (orphans are reparented here as the subreaper),
    /// and reaps them.
    pub fn kill_descendants() {
        let me = std::process::id();
        for _ in 0..50 {
            let children = children_of(me);
            if children.is_empty() {
                break;
            }
            for c in &children {
                let _ = nix::sys::signal::kill(Pid::from_raw(*c), Signal::SIGKILL);
            }
            while let Ok(s) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                if s == WaitStatus::StillAlive {
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn children_of(pid: u32) -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| {
                        // pid (comm) state ppid …; comm may hold spaces and parentheses.
                        let rest = s.rsplit_once(')')?.1;
                        rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                    })
                    == Some(pid)
            })
            .collect()
    }

    /// A process's state and start time from `/proc/PID/stat` (the start time tells a process
    /// from a later one that got the same number).
    fn stat(pid: u32) -> Option<(char, u64)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // pid (comm) state ppid …; comm may hold spaces and parentheses.
        let rest = text.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let state = fields.first()?.chars().next()?;
        let start = fields.get(19)?.parse().ok()?;
        Some((state, start))
    }

    /// Whether `pid`, which started at `start`, is still running (a zombie is not: it has died
    /// and waits to be reaped, which a container's PID 1 may do late).
    fn alive(pid: u32, start: u64) -> bool {
        stat(pid).is_some_and(|(state, s)| s == start && !matches!(state, 'Z' | 'X'))
    }

    /// Ends this process with `parent`: `PR_SET_PDEATHSIG`, then (since the parent may have died
    /// before that, or the signal be missed) a check now and a watchdog every 20 ms that calls
    /// `end` once the parent is gone.
    pub(super) fn die_with(parent: u32, end: fn() -> !) {
        let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
        let Some((state, start)) = stat(parent) else {
            end()
        };
        if matches!(state, 'Z' | 'X') {
            end();
        }
        std::thread::spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_millis(20));
            if !alive(parent, start) {
                end();
            }
        });
    }

    fn exit_killed() -> ! {
        std::process::exit(137)
    }

    /// `__sandbox-init`: PID 1 of the command's namespace. Runs the command, reaps every orphan,
    /// and exits with the command's status; the kernel then kills whatever is left. It ends at
    /// once when the wrapper is gone (and the kernel kills the namespace with it).
    pub fn init_main(parent: u32, command: &str) -> std::process::ExitCode {
        die_with(parent, exit_killed);
        let child = match crate::launch::sandboxed::model_shell(command).spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("keyless sandbox: cannot start /bin/sh: {e}");
                return std::process::ExitCode::from(126);
            }
        };
        let main = Pid::from_raw(i32::try_from(child.id()).unwrap_or(-1));
        loop {
            match waitpid(None, None) {
                Ok(WaitStatus::Exited(p, code)) if p == main => {
                    return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
                }
                Ok(WaitStatus::Signaled(p, sig, _)) if p == main => {
                    return std::process::ExitCode::from(
                        128u8.saturating_add(u8::try_from(sig as i32).unwrap_or(0)),
                    )
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return std::process::ExitCode::from(1),
            }
        }
    }
}

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
