//! The confinement the wrapper applies to itself on Linux before it starts the command: the
//! namespaces and bind mounts, Landlock, the seccomp filter, and the small init that is PID 1.

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
        std::fs::write("/proc/self/setgroups", "deny").map_err(|e| format!("setgroups: {e}"))?;
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
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
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
        RulesetStatus::PartiallyEnforced | RulesetStatus::FullyEnforced => (in_use, in_use >= 6),
    })
}

/// The seccomp filter: no sockets but Unix ones (Unix, IP and netlink when the network is
/// allowed), and none of the calls that could undo the confinement.
fn seccomp(network: bool) -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
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

/// On SIGTERM (the host stopping the command), kills the process whose id is then in the
/// returned slot (the command's first process, once started), from a thread that looks every
/// 5 ms.
pub(super) fn kill_on_term() -> std::sync::Arc<std::sync::atomic::AtomicU32> {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let first = Arc::new(AtomicU32::new(0));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone());
    let slot = first.clone();
    std::thread::spawn(move || loop {
        let pid = slot.load(Ordering::SeqCst);
        if stop.load(Ordering::SeqCst) && pid != 0 {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    });
    first
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
