//! What the guard did, in words, and where what it took went: `.agent/quarantine/ID/PATH`.
#![allow(clippy::disallowed_methods)] // keyless moving aside what the guard does not keep

use super::Snapshot;
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

/// A change the guard made, for the command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    pub path: String,
    /// Why what the command left there was not kept.
    pub why: String,
    /// Where it went (`.agent/quarantine/…`), if anything was there.
    pub moved_to: Option<String>,
    /// Whether what was there before is back.
    pub restored: bool,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.why)?;
        match (&self.moved_to, self.restored) {
            (Some(to), true) => write!(f, "; moved to {to}, the previous one put back"),
            (Some(to), false) => write!(f, "; moved to {to}"),
            (None, true) => write!(f, "; put back"),
            (None, false) if self.path != "." => write!(f, "; it could not be moved or put back"),
            (None, false) => Ok(()),
        }
    }
}

/// `.agent/quarantine/ID/`: where what the guard does not keep goes, so nothing is lost.
pub(super) struct Quarantine<'a> {
    root: &'a Dir,
    id: String,
}

impl<'a> Quarantine<'a> {
    pub(super) fn new(root: &'a Dir) -> Self {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Quarantine {
            root,
            id: format!("{ms}-{}-{n}", std::process::id()),
        }
    }

    /// Moves `parent/name` (a file, a link, a whole folder) to the quarantine under `path`;
    /// removes it when it cannot be moved. Returns where it went.
    pub(super) fn take(
        &mut self,
        parent: &Dir,
        name: &std::ffi::OsStr,
        path: &str,
    ) -> Option<String> {
        let dest = format!("quarantine/{}/{path}", self.id);
        let (dest_folder, dest_name) = dest.rsplit_once('/').unwrap_or(("", dest.as_str()));
        let moved = open_agent_dir(self.root)
            .and_then(|agent| {
                agent.create_dir_all(dest_folder).ok()?;
                agent.open_dir_nofollow(dest_folder).ok()
            })
            .is_some_and(|to| parent.rename(name, &to, dest_name).is_ok());
        if moved {
            return Some(format!(".agent/{dest}"));
        }
        let is_dir = parent
            .symlink_metadata(name)
            .is_ok_and(|m| m.file_type().is_dir());
        let _ = if is_dir {
            parent.remove_dir_all(name)
        } else {
            parent.remove_file(name)
        };
        None
    }
}

fn open_agent_dir(root: &Dir) -> Option<Dir> {
    match root.create_dir(crate::exec::workspace::AGENT_DIR) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    root.open_dir_nofollow(crate::exec::workspace::AGENT_DIR)
        .ok()
}

/// The repairs as the command's reason, saying only what happened to each.
#[must_use]
pub fn describe(repairs: &[Repair]) -> String {
    let list: Vec<String> = repairs.iter().map(ToString::to_string).collect();
    let moved = repairs.iter().any(|r| r.moved_to.is_some() || r.restored);
    let unchecked = repairs.iter().any(|r| r.moved_to.is_none() && !r.restored);
    let head = match (moved, unchecked) {
        (true, false) => "the command changed files that run or steer programs outside the sandbox (git, keyless, your shell or editor, the next time they start); keyless moved them aside",
        (true, true) => "the command changed files that run or steer programs outside the sandbox (git, keyless, your shell or editor, the next time they start); keyless moved aside what it could, and says below what it could not",
        (false, _) => "keyless could not check everything this command may have changed among the files that steer git outside the sandbox",
    };
    format!("{head}: {}", list.join("; "))
}

/// Why a persistence file may not change under a command nobody confirmed.
pub(super) fn persist_why(path: &str, _after: &Snapshot) -> String {
    let who = keyless_core::policy::persistence::persistence(path, None, &Default::default())
        .map(|p| p.why)
        .unwrap_or_else(|| "your tools run it later".into());
    format!("a file your own tools run later ({who}), changed by a command that ran without your confirmation; ask for it with a command you confirm, or a file command")
}
