//! Bounds on one sandboxed command: how many processes it may have at once and how much memory
//! it may use (keyless.json's `Commands.MaxProcesses` and `Commands.MaxMemoryMiB`), so that a
//! build script that forks or allocates without end starves neither `serve` nor the desktop.
//!
//! Where the system lets keyless make control groups, each command gets one of its own:
//! - cgroup v2 (the unified hierarchy) where the host's group is delegated to the user (a
//!   systemd user session): the host moves itself into a leaf `keyless-host` of its own group,
//!   enables the `pids`, `memory` and `cpu` controllers there, and makes `keyless-cmd-N` beside it
//!   with `pids.max`, `memory.max` (and `memory.swap.max`) and a lower `cpu.weight`;
//! - cgroup v1 where its `pids`, `memory` and `cpu` hierarchies are writable (a root container):
//!   `pids.max`, `memory.limit_in_bytes` and `cpu.shares` in a group of the command's own.
//!
//! The sandbox wrapper joins the command's group first thing, before it starts anything, so
//! nothing the command starts escapes it. The runner reads the group's events every tick: the process limit reached
//! stops the command at once (`KA_LIMIT_PROCESSES`); the kernel's out-of-memory kill inside the
//! group is `KA_LIMIT_MEMORY`.
//!
//! Elsewhere the command gets resource limits instead: `RLIMIT_NPROC` (the user's processes now
//! plus the command's allowance; the sandbox drops the capabilities that would lift it) and
//! `RLIMIT_DATA` (per process). A fork refused there shows in the command's output, which is how
//! the limit is told.

use keyless_core::Code;
use std::path::{Path, PathBuf};

/// The limits of one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_processes: u32,
    pub max_memory_bytes: u64,
}

impl Limits {
    /// From the settings: `max_memory_mib` `None` is three quarters of the machine's memory.
    #[must_use]
    pub fn new(max_processes: u32, max_memory_mib: Option<u32>) -> Self {
        let bytes = match max_memory_mib {
            Some(m) => u64::from(m) * 1024 * 1024,
            None => machine_memory().map_or(u64::MAX / 4, |m| m / 4 * 3),
        };
        Limits {
            max_processes,
            max_memory_bytes: bytes,
        }
    }
}

/// The machine's memory, from `/proc/meminfo`.
#[must_use]
pub fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// How commands are bounded on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// cgroup v2: the folder the command groups are made in.
    V2(PathBuf),
    /// cgroup v1: the host's own `pids`, `memory` and `cpu` groups (those that are writable).
    V1 {
        pids: PathBuf,
        memory: Option<PathBuf>,
        cpu: Option<PathBuf>,
    },
    /// Resource limits of each process.
    Rlimits,
}

impl Backend {
    /// In words, for `doctor` and the bench.
    #[must_use]
    pub fn describe(&self) -> &'static str {
        match self {
            Backend::V2(_) => "a cgroup v2 group per command (pids, memory, cpu)",
            Backend::V1 { .. } => "a cgroup v1 group per command (pids, memory, cpu)",
            Backend::Rlimits => {
                "resource limits per process (RLIMIT_NPROC, RLIMIT_DATA): no control groups can be made here"
            }
        }
    }
}

/// The backend, found once per process (`KEYLESS_LIMITS=rlimit` forces the fallback, for tests).
#[must_use]
pub fn backend() -> &'static Backend {
    static B: std::sync::OnceLock<Backend> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        if std::env::var("KEYLESS_LIMITS").as_deref() == Ok("rlimit") {
            return Backend::Rlimits;
        }
        v2().or_else(v1).unwrap_or(Backend::Rlimits)
    })
}

fn own_group(controller: Option<&str>) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        match controller {
            None => (ctrls.is_empty()).then(|| path.to_string()),
            Some(c) => ctrls.split(',').any(|x| x == c).then(|| path.to_string()),
        }
    })
}

fn writable_dir(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// cgroup v2 with the pids and memory controllers delegated to the host's group.
fn v2() -> Option<Backend> {
    let root = Path::new("/sys/fs/cgroup");
    if !root.join("cgroup.controllers").is_file() {
        return None;
    }
    let own = root.join(own_group(None)?.trim_start_matches('/'));
    let available = std::fs::read_to_string(own.join("cgroup.controllers")).ok()?;
    let has = |c: &str| available.split_whitespace().any(|x| x == c);
    if !has("pids") || !has("memory") || !writable_dir(&own) {
        return None;
    }
    // The no-internal-process rule: the host leaves its group for a leaf of its own, so that
    // the group can hand its controllers to the command groups.
    let leaf = own.join("keyless-host");
    if std::fs::create_dir(&leaf).is_err() && !leaf.is_dir() {
        return None;
    }
    let procs = std::fs::read_to_string(own.join("cgroup.procs")).ok()?;
    for pid in procs.split_whitespace() {
        // Every process of the group (the host's own threads move with it).
        let _ = std::fs::write(leaf.join("cgroup.procs"), pid);
    }
    let wanted: Vec<&str> = ["pids", "memory", "cpu"]
        .into_iter()
        .filter(|c| has(c))
        .collect();
    let line: Vec<String> = wanted.iter().map(|c| format!("+{c}")).collect();
    std::fs::write(own.join("cgroup.subtree_control"), line.join(" ")).ok()?;
    let enabled = std::fs::read_to_string(own.join("cgroup.subtree_control")).ok()?;
    (enabled.contains("pids") && enabled.contains("memory")).then_some(Backend::V2(own))
}

/// cgroup v1 with writable `pids` (and, when there, `memory` and `cpu`) hierarchies.
fn v1() -> Option<Backend> {
    let at = |controller: &str, folder: &str| -> Option<PathBuf> {
        let base = Path::new("/sys/fs/cgroup").join(folder);
        let own = base.join(own_group(Some(controller))?.trim_start_matches('/'));
        (own.is_dir() && writable_dir(&own)).then_some(own)
    };
    let pids = at("pids", "pids")?;
    let memory = at("memory", "memory");
    let cpu = at("cpu", "cpu").or_else(|| at("cpu", "cpu,cpuacct"));
    Some(Backend::V1 { pids, memory, cpu })
}

/// The group of one command (removed when dropped), or the rlimit fallback.
#[derive(Debug)]
pub struct CommandGroup {
    limits: Limits,
    /// The folders the command's process joins (each one's `cgroup.procs` or `tasks`).
    joins: Vec<PathBuf>,
    /// Where the pids events are read: v2 `pids.events`, v1 `pids.events`.
    pids_events: Option<PathBuf>,
    /// v2 `memory.events`; v1 `memory.oom_control` (its `oom_kill` line).
    memory_events: Option<PathBuf>,
    /// The events as they read before the command started.
    pids_before: u64,
    oom_before: u64,
    /// The user's processes before the command started (the rlimit fallback).
    user_processes: u64,
    /// The fallback's count: ticks seen, and whether the count went over the limit.
    ticks: std::sync::atomic::AtomicU32,
    over: std::sync::atomic::AtomicBool,
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn counter(file: &Path, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

impl CommandGroup {
    /// A group for one command with `limits`.
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("keyless-cmd-{}-{n}", std::process::id());
        let mut g = CommandGroup {
            limits,
            joins: Vec::new(),
            pids_events: None,
            memory_events: None,
            pids_before: 0,
            oom_before: 0,
            user_processes: 0,
            ticks: std::sync::atomic::AtomicU32::new(0),
            over: std::sync::atomic::AtomicBool::new(false),
        };
        match backend() {
            Backend::V2(base) => {
                let dir = base.join(&name);
                if std::fs::create_dir(&dir).is_ok() {
                    let _ = std::fs::write(dir.join("pids.max"), limits.max_processes.to_string());
                    let _ =
                        std::fs::write(dir.join("memory.max"), limits.max_memory_bytes.to_string());
                    let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                    let _ = std::fs::write(dir.join("cpu.weight"), "50");
                    g.pids_events = Some(dir.join("pids.events"));
                    g.memory_events = Some(dir.join("memory.events"));
                    g.joins.push(dir);
                }
            }
            Backend::V1 { pids, memory, cpu } => {
                let dir = pids.join(&name);
                if std::fs::create_dir(&dir).is_ok() {
                    let _ = std::fs::write(dir.join("pids.max"), limits.max_processes.to_string());
                    g.pids_events = Some(dir.join("pids.events"));
                    g.joins.push(dir);
                }
                if let Some(m) = memory {
                    let dir = m.join(&name);
                    if std::fs::create_dir(&dir).is_ok() {
                        let _ = std::fs::write(
                            dir.join("memory.limit_in_bytes"),
                            limits.max_memory_bytes.to_string(),
                        );
                        // With swap accounting, the same bound for memory and swap together.
                        let _ = std::fs::write(
                            dir.join("memory.memsw.limit_in_bytes"),
                            limits.max_memory_bytes.to_string(),
                        );
                        g.memory_events = Some(dir.join("memory.oom_control"));
                        g.joins.push(dir);
                    }
                }
                if let Some(c) = cpu {
                    let dir = c.join(&name);
                    if std::fs::create_dir(&dir).is_ok() {
                        let _ = std::fs::write(dir.join("cpu.shares"), "512");
                        g.joins.push(dir);
                    }
                }
            }
            Backend::Rlimits => {}
        }
        if g.joins.is_empty() {
            g.user_processes = user_processes();
        }
        if let Some(p) = &g.pids_events {
            g.pids_before = counter(p, "max");
        }
        if let Some(m) = &g.memory_events {
            g.oom_before = counter(m, "oom_kill");
        }
        g
    }

    /// Whether the command is in a control group of its own (else it has resource limits).
    #[must_use]
    pub fn grouped(&self) -> bool {
        !self.joins.is_empty()
    }

    /// The sandbox wrapper's arguments that put it, first thing, in the group (`--join FILE`,
    /// each group's `cgroup.procs` or `tasks`), or give it the resource limits
    /// (`--max-procs N --max-data BYTES`). Everything the command starts is the wrapper's
    /// descendant, so nothing escapes either.
    #[must_use]
    pub fn wrapper_args(&self) -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = Vec::new();
        if self.grouped() {
            for d in &self.joins {
                let f = if d.join("cgroup.procs").exists() {
                    d.join("cgroup.procs")
                } else {
                    d.join("tasks")
                };
                a.push("--join".into());
                a.push(f.into());
            }
        } else {
            let nproc = self
                .user_processes
                .saturating_add(u64::from(self.limits.max_processes));
            a.push("--max-procs".into());
            a.push(nproc.to_string().into());
            a.push("--max-data".into());
            a.push(self.limits.max_memory_bytes.to_string().into());
        }
        a
    }

    /// Whether the command reached its process limit since it started (asked every tick): its
    /// group's events, or, without a group, a count of the processes under `root` (the wrapper)
    /// every fifth tick: `RLIMIT_NPROC` does not hold for root, whom the kernel exempts.
    #[must_use]
    pub fn processes_exhausted(&self, root: u32) -> bool {
        if let Some(p) = self.pids_events.as_deref() {
            return counter(p, "max") > self.pids_before;
        }
        let tick = self
            .ticks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.over.load(std::sync::atomic::Ordering::Relaxed) {
            return true;
        }
        if tick % 5 != 0 {
            return false;
        }
        let over = descendants(root) > u64::from(self.limits.max_processes);
        if over {
            self.over.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        over
    }

    /// The limit the command hit, as its code and reason; `output` is what it printed and
    /// `failed` whether it ended badly (the fallback reads refused forks in the output of a
    /// command that failed).
    #[must_use]
    pub fn report(&self, output: &str, failed: bool) -> Option<(Code, String)> {
        let procs = || {
            (
                Code::LimitProcesses,
                if self.grouped() {
                    format!(
                        "the command reached its limit of {} processes (Commands.MaxProcesses) and was stopped with everything it started",
                        self.limits.max_processes
                    )
                } else {
                    format!(
                        "the command reached its limit of {} processes (Commands.MaxProcesses) and was stopped with everything it started (or the system refused its further processes)",
                        self.limits.max_processes
                    )
                },
            )
        };
        if self.over.load(std::sync::atomic::Ordering::Relaxed)
            || self
                .pids_events
                .as_deref()
                .is_some_and(|p| counter(p, "max") > self.pids_before)
        {
            return Some(procs());
        }
        if self
            .memory_events
            .as_deref()
            .is_some_and(|m| counter(m, "oom_kill") > self.oom_before)
        {
            return Some((
                Code::LimitMemory,
                format!(
                    "the command used more than its {} MiB of memory (Commands.MaxMemoryMiB): the kernel stopped its largest process",
                    self.limits.max_memory_bytes / 1024 / 1024
                ),
            ));
        }
        if !self.grouped() && failed {
            let lower = output.to_ascii_lowercase();
            if lower.contains("fork: resource temporarily unavailable")
                || lower.contains("fork: retry")
                || lower.contains("cannot fork")
                || lower.contains("can't fork")
            {
                return Some(procs());
            }
            if lower.contains("cannot allocate memory")
                || lower.contains("out of memory")
                || lower.contains("memoryerror")
            {
                return Some((
                    Code::LimitMemory,
                    format!(
                        "the command asked for more than its {} MiB of memory (Commands.MaxMemoryMiB)",
                        self.limits.max_memory_bytes / 1024 / 1024
                    ),
                ));
            }
        }
        None
    }
}

impl Drop for CommandGroup {
    fn drop(&mut self) {
        // The command and everything it started have ended (its PID namespace is gone); a group
        // that still holds a process is left for the next start's cleanup.
        for d in &self.joins {
            for _ in 0..50 {
                if std::fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// How many processes (threads included) descend from `root`, from `/proc`'s parent links.
fn descendants(root: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut parent: std::collections::HashMap<u32, (u32, u64)> = std::collections::HashMap::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid … num_threads …`: the name may hold spaces and parentheses.
        let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ppid = fields.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        let threads = fields.get(17).and_then(|t| t.parse().ok()).unwrap_or(1);
        parent.insert(pid, (ppid, threads));
    }
    let mut count = 0;
    for (&pid, &(_, threads)) in &parent {
        let mut at = pid;
        for _ in 0..4096 {
            if at == root {
                count += threads;
                break;
            }
            match parent.get(&at) {
                Some(&(p, _)) if p != 0 && p != at => at = p,
                _ => break,
            }
        }
    }
    count
}

/// How many processes the user has now (the rlimit fallback's base: `RLIMIT_NPROC` counts them
/// all).
fn user_processes() -> u64 {
    let uid = nix::unistd::getuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        use std::os::unix::fs::MetadataExt;
        if e.metadata().is_ok_and(|m| m.uid() == uid) {
            // Threads count too.
            n += std::fs::read_dir(e.path().join("task")).map_or(1, |t| t.count() as u64);
        }
    }
    n
}

/// What the sandbox wrapper does first (`--join`, `--max-procs`, `--max-data`): join the
/// command's groups, or take the resource limits.
///
/// # Errors
/// A group that cannot be joined (the command must not run unbounded).
pub fn enter(
    join: &[PathBuf],
    max_procs: Option<u64>,
    max_data: Option<u64>,
) -> Result<(), String> {
    use nix::sys::resource::{setrlimit, Resource};
    for f in join {
        std::fs::write(f, std::process::id().to_string()).map_err(|e| {
            format!(
                "cannot join the command's control group {}: {e}",
                f.display()
            )
        })?;
    }
    if let Some(n) = max_procs {
        setrlimit(Resource::RLIMIT_NPROC, n, n)
            .map_err(|e| format!("cannot limit the command's processes: {e}"))?;
    }
    if let Some(b) = max_data {
        setrlimit(Resource::RLIMIT_DATA, b, b)
            .map_err(|e| format!("cannot limit the command's memory: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_to_three_quarters_of_memory() {
        let l = Limits::new(64, None);
        if let Some(m) = machine_memory() {
            assert_eq!(l.max_memory_bytes, m / 4 * 3);
        }
        assert_eq!(
            Limits::new(64, Some(100)).max_memory_bytes,
            100 * 1024 * 1024
        );
    }
}
