//! The workspace's change journal: what changed in its folders since the git guard, or the undo
//! store, last looked, learned from the kernel (inotify) instead of a walk, so that a command
//! costs what it changed rather than the size of the tree.
//!
//! Invariants:
//! - a folder is *clean* for the guard only when it has been watched since before the guard last
//!   listed it, and no entry of it has been made, removed or renamed since; what the journal cannot
//!   vouch for (a folder it does not watch, a lost event queue, a watch the kernel refused, its own
//!   folder moved) is reported as changed, so the caller reads it again: a bound gives the slow
//!   answer, never a wrong one;
//! - a watch is added through the folder's own handle (`/proc/self/fd/N`), so the folder watched
//!   is exactly the one listed, never one a symlink swapped in on the way;
//! - events are read before every look, and the kernel queues an event in the very system call
//!   that made the change: when a command and every process it started have ended, all it did is
//!   in the queue;
//! - the journal is per process: a new process trusts nothing from an earlier one and starts with
//!   a full look.
//!
//! Limits (docs/security.md): writes through a shared mapping after the file was closed make no
//! event, and neither do writes to a file through a hard link outside every watched folder (or
//! through one removed before the look: the event names only the link written through); the
//! undo store therefore takes a full snapshot when a changed file has more than one link, which
//! covers the first case and not the second, and the guard re-reads every control file's
//! contents at each look whatever the journal says.

use cap_std::fs::Dir;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The most paths the undo side keeps between two looks: past it, it is told "everything".
const MAX_PATHS: usize = 200_000;

/// What changed since a consumer last looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    /// Not known: look at everything.
    All,
    /// These workspace-relative paths (folders for the guard; files and folders for undo).
    Some(HashSet<String>),
}

impl Changed {
    /// Whether `rel` may have changed.
    #[must_use]
    pub fn contains(&self, rel: &str) -> bool {
        match self {
            Changed::All => true,
            Changed::Some(s) => s.contains(rel),
        }
    }
}

#[derive(Debug)]
struct Side {
    all: bool,
    set: HashSet<String>,
}

impl Side {
    fn new() -> Self {
        Self {
            all: true,
            set: HashSet::new(),
        }
    }

    fn take(&mut self) -> Changed {
        let out = if self.all {
            Changed::All
        } else {
            Changed::Some(std::mem::take(&mut self.set))
        };
        self.all = false;
        self.set.clear();
        out
    }

    fn add(&mut self, rel: String) {
        if self.all {
            return;
        }
        if self.set.len() >= MAX_PATHS {
            self.all = true;
            self.set.clear();
            return;
        }
        self.set.insert(rel);
    }
}

/// One workspace's journal.
#[derive(Debug)]
pub struct Journal {
    #[cfg(target_os = "linux")]
    fd: nix::sys::inotify::Inotify,
    #[cfg(target_os = "linux")]
    by_wd: HashMap<nix::sys::inotify::WatchDescriptor, Vec<String>>,
    #[cfg(target_os = "linux")]
    by_rel: BTreeMap<String, nix::sys::inotify::WatchDescriptor>,
    /// Folders whose listing changed, for the guard.
    folders: Side,
    /// Paths that changed in any way, for the undo store.
    paths: Side,
    /// The kernel refused a watch for want of room: the journal vouches for nothing.
    broken: bool,
    /// Events read since the journal started (for the figures of `cargo xtask bench`).
    events: u64,
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

fn under(path: &str, folder: &str) -> bool {
    folder.is_empty()
        || path == folder
        || (path.len() > folder.len()
            && path.starts_with(folder)
            && path.as_bytes()[folder.len()] == b'/')
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{join, under, Journal, Side};
    use nix::errno::Errno;
    use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify};
    use std::collections::{BTreeMap, HashMap};

    pub(super) fn open() -> Option<Journal> {
        let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        Some(Journal {
            fd,
            by_wd: HashMap::new(),
            by_rel: BTreeMap::new(),
            folders: Side::new(),
            paths: Side::new(),
            broken: false,
            events: 0,
        })
    }

    const LISTING: F = F::IN_CREATE
        .union(F::IN_DELETE)
        .union(F::IN_MOVED_FROM)
        .union(F::IN_MOVED_TO);

    impl Journal {
        pub(super) fn add(&mut self, rel: &str, dir: &cap_std::fs::Dir) -> bool {
            use std::os::fd::AsRawFd;
            if self.broken {
                return false;
            }
            let mask = LISTING
                | F::IN_MODIFY
                | F::IN_CLOSE_WRITE
                | F::IN_ATTRIB
                | F::IN_DELETE_SELF
                | F::IN_MOVE_SELF
                | F::IN_ONLYDIR;
            let proc = format!("/proc/self/fd/{}", dir.as_raw_fd());
            match self.fd.add_watch(proc.as_str(), mask) {
                Ok(wd) => {
                    if let Some(old) = self.by_rel.insert(rel.to_string(), wd) {
                        if old != wd {
                            self.forget_wd(old, rel);
                        }
                    }
                    let rels = self.by_wd.entry(wd).or_default();
                    if !rels.iter().any(|r| r == rel) {
                        rels.push(rel.to_string());
                    }
                    true
                }
                Err(Errno::ENOSPC | Errno::ENOMEM | Errno::ENOENT) => {
                    // No room for more watches (or no /proc): from now on nothing is vouched for.
                    self.broken = true;
                    false
                }
                Err(_) => false,
            }
        }

        fn forget_wd(&mut self, wd: nix::sys::inotify::WatchDescriptor, rel: &str) {
            if let Some(rels) = self.by_wd.get_mut(&wd) {
                rels.retain(|r| r != rel);
                if rels.is_empty() {
                    self.by_wd.remove(&wd);
                    let _ = self.fd.rm_watch(wd);
                }
            }
        }

        /// Stops vouching for `folder` and everything beneath it (it was removed or moved).
        fn drop_tree(&mut self, folder: &str) {
            let gone: Vec<(String, nix::sys::inotify::WatchDescriptor)> = self
                .by_rel
                .range(folder.to_string()..)
                .take_while(|(r, _)| r.starts_with(folder))
                .filter(|(r, _)| under(r, folder))
                .map(|(r, w)| (r.clone(), *w))
                .collect();
            for (r, w) in gone {
                self.by_rel.remove(&r);
                self.forget_wd(w, &r);
                self.folders.add(r);
            }
        }

        pub(super) fn drain(&mut self) {
            loop {
                let events = match self.fd.read_events() {
                    Ok(e) if !e.is_empty() => e,
                    Ok(_) | Err(Errno::EAGAIN) => return,
                    Err(Errno::EINTR) => continue,
                    Err(_) => {
                        self.lost();
                        return;
                    }
                };
                for e in events {
                    self.events += 1;
                    if e.mask.contains(F::IN_Q_OVERFLOW) {
                        self.lost();
                        continue;
                    }
                    let Some(rels) = self.by_wd.get(&e.wd).cloned() else {
                        continue;
                    };
                    if e.mask.contains(F::IN_IGNORED) {
                        for r in &rels {
                            if self.by_rel.get(r) == Some(&e.wd) {
                                self.by_rel.remove(r);
                            }
                            self.folders.add(r.clone());
                        }
                        self.by_wd.remove(&e.wd);
                        continue;
                    }
                    if e.mask
                        .intersects(F::IN_DELETE_SELF | F::IN_MOVE_SELF | F::IN_UNMOUNT)
                    {
                        for r in rels {
                            if r.is_empty() {
                                self.lost();
                            } else {
                                self.paths.add(r.clone());
                                self.drop_tree(&r);
                            }
                        }
                        continue;
                    }
                    let Some(name) = e.name.as_ref().map(|n| n.to_string_lossy().into_owned())
                    else {
                        continue;
                    };
                    for r in rels {
                        let path = join(&r, &name);
                        if e.mask.intersects(LISTING) {
                            self.folders.add(r.clone());
                            // Whatever the entry is now, the folder once watched under this name
                            // may not be it: a folder renamed over an empty one (MOVED_TO) is
                            // another inode, whose old one's DELETE_SELF can come late (a handle
                            // to it passed over a socket outlives the command).
                            self.drop_tree(&path);
                        }
                        self.paths.add(path);
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Journal;
    pub(super) fn open() -> Option<Journal> {
        None
    }
    impl Journal {
        pub(super) fn add(&mut self, _rel: &str, _dir: &cap_std::fs::Dir) -> bool {
            false
        }
        pub(super) fn drain(&mut self) {}
    }
}

impl Journal {
    /// The event queue was lost: everything is to be looked at again.
    fn lost(&mut self) {
        self.folders.all = true;
        self.folders.set.clear();
        self.paths.all = true;
        self.paths.set.clear();
    }

    /// Whether the journal can vouch for anything (no watch was refused for want of room).
    #[must_use]
    pub fn working(&self) -> bool {
        !self.broken
    }

    /// Watches folder `rel` (through its handle `dir`), before it is listed. `false` when the
    /// kernel refused: the folder is then never taken as clean.
    pub fn watch(&mut self, rel: &str, dir: &Dir) -> bool {
        self.add(rel, dir)
    }

    /// Whether folder `rel` is watched.
    #[must_use]
    pub fn watched(&self, rel: &str) -> bool {
        #[cfg(target_os = "linux")]
        {
            !self.broken && self.by_rel.contains_key(rel)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = rel;
            false
        }
    }

    /// The folders whose listing may have changed since the guard last looked (events read now).
    pub fn take_folders(&mut self) -> Changed {
        self.drain();
        if self.broken {
            return Changed::All;
        }
        self.folders.take()
    }

    /// The paths that may have changed since the undo store last looked (events read now).
    pub fn take_paths(&mut self) -> Changed {
        self.drain();
        if self.broken {
            return Changed::All;
        }
        self.paths.take()
    }

    /// How many folders are watched, and how many events were read (for the bench).
    #[must_use]
    pub fn figures(&self) -> (usize, u64) {
        #[cfg(target_os = "linux")]
        {
            (self.by_rel.len(), self.events)
        }
        #[cfg(not(target_os = "linux"))]
        {
            (0, self.events)
        }
    }
}

/// The journals of the workspaces this process looked at (a few at most: serve has one per task).
static JOURNALS: Mutex<Vec<(PathBuf, Arc<Mutex<Journal>>)>> = Mutex::new(Vec::new());

/// The journal of workspace `root` (its real path), started on first use; `None` where the
/// kernel offers no inotify, or it cannot be started (every look is then a full one).
#[must_use]
pub fn of(root: &Path) -> Option<Arc<Mutex<Journal>>> {
    let mut all = JOURNALS.lock().ok()?;
    if let Some((_, j)) = all.iter().find(|(r, _)| r == root) {
        return Some(j.clone());
    }
    let j = Arc::new(Mutex::new(imp::open()?));
    all.push((root.to_path_buf(), j.clone()));
    if all.len() > 8 {
        all.remove(0);
    }
    Some(j)
}

/// The journal of `root` if one is running (never starts one).
#[must_use]
pub fn running(root: &Path) -> Option<Arc<Mutex<Journal>>> {
    let all = JOURNALS.lock().ok()?;
    all.iter().find(|(r, _)| r == root).map(|(_, j)| j.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_is_by_whole_segments() {
        assert!(under("a/b", "a"));
        assert!(under("a", "a"));
        assert!(!under("ab", "a"));
        assert!(under("x", ""));
    }
}
