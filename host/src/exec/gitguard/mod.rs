//! The git guard: what a sandboxed command did to git's control files, put back.
//!
//! A repository's config, hooks and `commondir`, and a `.git` file's `gitdir:` line, steer the
//! user's own `git` later, outside the sandbox (a hook, `core.fsmonitor`, a pager, an alias). The
//! sandbox mounts the workspace repository's hooks, config and info read-only and pins `.git`
//! itself, but a command can still make a repository anywhere (`git init sub`), copy one, or, where
//! the kernel offers no namespaces, write everything. So around every sandboxed command the host
//! takes a snapshot of every git control point in the workspace, and afterwards:
//! - what is unchanged stays;
//! - what changed or appeared stays only when core's rules prove it harmless
//!   ([`keyless_core::gitcontrol`]): a config of settings that never name a program, a `.sample`
//!   hook, the standard worktree `commondir`, a `.git` file pointing at a repository inside the
//!   workspace, or a byte-for-byte copy of one of the user's own files;
//! - anything else is moved aside to `.agent/quarantine/ID/PATH` (nothing is deleted) and what was
//!   there before is put back.
//!
//! The workspace's `keyless.json` is a control point too: only the user writes it (a command that
//! makes or changes it is put back, so no setting of the model's reaches the next session).
//!
//! A control point is: every entry named `.git` at any depth, and in every folder git takes for a
//! repository (`HEAD` with `objects` and `refs`, or with `commondir`, each of any kind, as git
//! accepts symlinks and dangling HEADs: the workspace's `.git`,
//! its `modules/` and `worktrees/`, a nested or bare repository): `config`, `config.worktree`,
//! `commondir`, `hooks/` and `info/` with their files. The scan goes through directory handles and
//! never follows a symlink; `.agent` is skipped except the sandbox's temp folder. On the way it
//! notes the files that steer programs, which the command policy judges with ([`context`]).
#![allow(clippy::disallowed_methods)] // keyless putting back git's own control files, never the model's write

mod repair;
pub use repair::{describe, Repair};
use repair::{persist_why, Quarantine};

use super::workspace::{looks_like_git_dir, open_read, write_atomic_in};
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use keyless_core::gitcontrol;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The deepest folder the scan enters, and the most entries it reads: past them the guard says it
/// could not look everywhere.
const MAX_DEPTH: usize = 256;
const MAX_ENTRIES: usize = 2_000_000;
/// A control file is read up to this size (a config is refused long before).
const MAX_READ: u64 = 1 << 20;

/// One control point as it is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File { bytes: Vec<u8>, mode: u32 },
    Link(PathBuf),
    Dir,
    Other,
}

/// Every git control point of the workspace.
#[derive(Debug, Default, Clone)]
struct Snapshot {
    /// Workspace-relative path → what is there.
    nodes: BTreeMap<String, Node>,
    /// The folders git takes for repositories, workspace-relative.
    gitdirs: BTreeSet<String>,
    /// The scan stopped at a limit (too deep or too many entries): what it did not see is not
    /// known.
    incomplete: bool,
    /// The folders the scan did not enter because they are deeper than [`MAX_DEPTH`]
    /// (workspace-relative): the guard cannot check them, so it moves them aside.
    frontier: BTreeSet<String>,
    /// The scan stopped at [`MAX_ENTRIES`], or found more persistence files than it reads.
    too_many: bool,
    /// Files the user's own tools run later ([`keyless_core::policy::persistence`]), as they are:
    /// a command that ran without the user's confirmation may not change them.
    persist: BTreeMap<String, Node>,
    entries: usize,
    /// Files that steer programs ([`keyless_core::policy::steering`]), found on the way.
    steering: Vec<String>,
    /// More steering files were found than [`MAX_STEERING`]: the list is not whole.
    steering_cut: bool,
    /// Symlinks, with their targets as they read, found on the way (the policy judges reads
    /// through the ones that lead out: [`keyless_core::policy::reads`]).
    links: Vec<(String, String)>,
    /// Every plain folder scanned, with what its listing held, so that the next scan reads again
    /// only the folders that changed (see [`Folder`]).
    folders: std::collections::HashMap<String, Folder>,
    /// When the scan started.
    at: Option<std::time::SystemTime>,
}

/// A folder as a scan found it: its identity and change time, and what of its listing matters
/// (its subfolders, whether it holds a `.git`, its steering files). Adding, removing or renaming
/// an entry changes a folder's modification time, so a folder whose stamp is unchanged (and not
/// too recent to tell, as git's index does with "racy" timestamps) lists the same names, and its
/// listing need not be read again; the contents of its `.git` entry are read every time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Folder {
    stamp: Stamp,
    /// Subfolders, workspace-relative (`.agent/sandbox-tmp` for the root's `.agent`).
    subdirs: Vec<String>,
    dotgit: bool,
    steering: Vec<String>,
    links: Vec<(String, String)>,
    /// Its persistence files (read again at every scan: their contents change without the
    /// folder's times).
    persist: Vec<String>,
}

/// The most persistence files the guard reads: past it, every command is confirmed.
const MAX_PERSIST: usize = 4_000;

/// A folder's device, inode, and modification and change times (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        m.is_dir().then(|| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Changed within two seconds before `at`: a change made in the same clock tick as the scan
    /// would leave the times as they were, so such a folder is always read again.
    fn racy(&self, at: std::time::SystemTime) -> bool {
        let secs = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.mtime.0.max(self.ctime.0) >= secs.saturating_sub(2)
    }
}

/// The most steering files listed: past it the list says it is not whole, and every program a
/// file can steer is at least Execute.
const MAX_STEERING: usize = 500;

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

fn mode_of(m: &cap_std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt;
        m.permissions().mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        0
    }
}

fn node(dir: &Dir, name: &str) -> Option<Node> {
    let m = dir.symlink_metadata(name).ok()?;
    let ft = m.file_type();
    Some(if ft.is_symlink() {
        Node::Link(dir.read_link_contents(name).unwrap_or_default())
    } else if ft.is_dir() {
        Node::Dir
    } else if ft.is_file() {
        let mut bytes = Vec::new();
        if let Ok(f) = open_read(dir, name) {
            let _ = f.take(MAX_READ).read_to_end(&mut bytes);
        }
        Node::File {
            bytes,
            mode: mode_of(&m),
        }
    } else {
        Node::Other
    })
}

impl Snapshot {
    /// Scans the workspace `root` (its handle `dir`); with `prev`, a folder whose stamp is
    /// unchanged is taken from it instead of being listed again.
    fn take(dir: &Dir, root: &Path, prev: Option<&Snapshot>) -> Self {
        let pctx = super::persistence::persistence_context(root);
        let mut scan = Scan {
            root_dir: dir,
            root,
            pctx: &pctx,
            prev: prev.filter(|p| !p.incomplete),
            out: Snapshot {
                at: Some(std::time::SystemTime::now()),
                ..Snapshot::default()
            },
        };
        if let Ok(d) = dir.try_clone() {
            scan.visit(Some(d), "", 0);
        }
        // The workspace's settings file: only the user writes it (a command that makes or
        // changes it is put back, like git's control files). So are the user's own
        // configuration files that are links into the workspace (a dotfiles repository).
        if let Some(n) = node(dir, keyless_core::path::SETTINGS_FILE) {
            scan.out
                .nodes
                .insert(keyless_core::path::SETTINGS_FILE.to_string(), n);
        }
        for rel in linked_config(root) {
            let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
            if let Some(n) = open_folder(dir, folder).and_then(|d| node(&d, name)) {
                scan.out.nodes.insert(rel, n);
            }
        }
        scan.out
    }
}

/// One scan: the workspace, the last scan it may take unchanged folders from, and what it found.
struct Scan<'a> {
    root_dir: &'a Dir,
    root: &'a Path,
    /// Where the files the user's tools run are (the hooks folder, PATH folders, linked config).
    pctx: &'a keyless_core::policy::Context,
    prev: Option<&'a Snapshot>,
    out: Snapshot,
}

impl Scan<'_> {
    /// A persistence file of folder `dir`, read now.
    fn note_persist(&mut self, dir: &Dir, rel: &str, name: &str) {
        if self.out.persist.len() >= MAX_PERSIST {
            self.out.too_many = true;
            self.out.incomplete = true;
            return;
        }
        if let Some(n) = node(dir, name) {
            self.out.persist.insert(join(rel, name), n);
        }
    }

    /// A steering file for the list, which stops at [`MAX_STEERING`] and then says it is not
    /// whole (the policy then judges every steerable program as steered).
    fn note_steering(&mut self, path: String) {
        if self.out.steering.len() < MAX_STEERING {
            self.out.steering.push(path);
        } else {
            self.out.steering_cut = true;
        }
    }

    /// One folder: taken from `prev` when unchanged, else listed (through `handle`, or a handle
    /// opened beneath the root, never through a symlink).
    fn visit(&mut self, handle: Option<Dir>, rel: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.out.incomplete = true;
            self.out.frontier.insert(rel.to_string());
            return;
        }
        if self.out.entries > MAX_ENTRIES {
            self.out.incomplete = true;
            self.out.too_many = true;
            return;
        }
        let stamp = Stamp::of(&self.root.join(rel));
        if let (Some(stamp), Some(p)) = (stamp, self.prev) {
            let same = p
                .folders
                .get(rel)
                .filter(|f| f.stamp == stamp && p.at.is_some_and(|at| !stamp.racy(at)));
            if let Some(f) = same {
                let f = f.clone();
                if f.dotgit {
                    if let Some(n) = open_folder(self.root_dir, rel).and_then(|d| node(&d, ".git"))
                    {
                        self.out.nodes.insert(join(rel, ".git"), n);
                    }
                }
                for st in &f.steering {
                    self.note_steering(st.clone());
                }
                if !f.persist.is_empty() {
                    if let Some(d) = open_folder(self.root_dir, rel) {
                        for p in &f.persist {
                            let name = p.rsplit('/').next().unwrap_or(p);
                            self.note_persist(&d, rel, name);
                        }
                    }
                }
                self.out.links.extend(f.links.iter().cloned());
                for sub in &f.subdirs {
                    self.visit(None, sub, depth + 1);
                }
                self.out.folders.insert(rel.to_string(), f);
                return;
            }
        }
        let Some(dir) = handle.or_else(|| open_folder(self.root_dir, rel)) else {
            return;
        };
        self.walk(&dir, rel, depth, stamp);
    }

    fn walk(&mut self, dir: &Dir, rel: &str, depth: usize, stamp: Option<Stamp>) {
        let Ok(entries) = dir.entries() else { return };
        // One listing: whether the folder is a repository comes from it, with no more calls.
        let listing: Vec<(String, cap_std::fs::FileType)> = entries
            .flatten()
            .filter_map(|e| {
                Some((
                    e.file_name().to_string_lossy().into_owned(),
                    e.file_type().ok()?,
                ))
            })
            .collect();
        self.out.entries += listing.len();
        if looks_like_git_dir(|name| listing.iter().any(|(n, _)| n == name)) {
            // Its own symlinks still count for the reads of the policy (a folder made to look
            // like a repository must not hide a link out).
            for (name, ft) in &listing {
                if ft.is_symlink() {
                    if let Ok(target) = dir.read_link_contents(name) {
                        self.out
                            .links
                            .push((join(rel, name), target.to_string_lossy().into_owned()));
                    }
                }
            }
            self.gitdir(dir, rel, depth);
            return;
        }
        let mut folder = Folder {
            stamp: stamp.unwrap_or(Stamp {
                dev: 0,
                ino: 0,
                mtime: (0, 0),
                ctime: (0, 0),
            }),
            subdirs: Vec::new(),
            dotgit: false,
            steering: Vec::new(),
            links: Vec::new(),
            persist: Vec::new(),
        };
        let persist_folder = !rel.starts_with(".agent")
            && keyless_core::policy::persistence::in_persistence_folder(rel, self.pctx);
        for (name, ft) in listing {
            if !ft.is_dir()
                && !rel.starts_with(".agent")
                && (persist_folder || keyless_core::policy::persistence::is_persistence_name(&name))
                && keyless_core::policy::persistence::persistence(
                    &join(rel, &name),
                    None,
                    self.pctx,
                )
                .is_some()
            {
                folder.persist.push(join(rel, &name));
                self.note_persist(dir, rel, &name);
            }
            if ft.is_symlink() && name != ".git" {
                if let Ok(target) = dir.read_link_contents(&name) {
                    let link = (join(rel, &name), target.to_string_lossy().into_owned());
                    folder.links.push(link.clone());
                    self.out.links.push(link);
                }
            }
            if !ft.is_dir()
                && name != ".git"
                && !keyless_core::policy::steering::is_steering_name(&name)
            {
                continue;
            }
            let path = join(rel, &name);
            if path == ".agent" {
                // Symlinks a checkout put in .agent count for the reads of the policy.
                if let Ok(agent) = dir.open_dir_nofollow(&name) {
                    for e in agent.entries().into_iter().flatten().flatten() {
                        if e.file_type().is_ok_and(|t| t.is_symlink()) {
                            let n = e.file_name().to_string_lossy().into_owned();
                            if let Ok(target) = agent.read_link_contents(&n) {
                                let link = (join(&path, &n), target.to_string_lossy().into_owned());
                                folder.links.push(link.clone());
                                self.out.links.push(link);
                            }
                        }
                    }
                }
                // keyless's own state is read-only in the sandbox; its temp folder is not.
                let tmp = ".agent/sandbox-tmp";
                if let Some(t) = dir
                    .open_dir_nofollow(&name)
                    .ok()
                    .and_then(|agent| agent.open_dir_nofollow("sandbox-tmp").ok())
                {
                    folder.subdirs.push(tmp.to_string());
                    self.visit(Some(t), tmp, depth + 2);
                }
                continue;
            }
            if name == ".git" {
                folder.dotgit = true;
                if let Some(n) = node(dir, &name) {
                    self.out.nodes.insert(path.clone(), n);
                }
            }
            if ft.is_dir() {
                folder.subdirs.push(path.clone());
                if let Ok(sub) = dir.open_dir_nofollow(&name) {
                    self.visit(Some(sub), &path, depth + 1);
                }
            } else if keyless_core::policy::steering::is_steering_file(&path) {
                folder.steering.push(path.clone());
                self.note_steering(path);
            }
        }
        if stamp.is_some() {
            self.out.folders.insert(rel.to_string(), folder);
        }
    }

    /// A repository folder: its control files, then the repositories in its `modules/` and
    /// `worktrees/` (not its objects and refs, which steer nothing).
    fn gitdir(&mut self, dir: &Dir, rel: &str, depth: usize) {
        self.out.gitdirs.insert(rel.to_string());
        for name in ["config", "config.worktree", "commondir"] {
            if let Some(n) = node(dir, name) {
                self.out.nodes.insert(join(rel, name), n);
            }
        }
        for folder in ["hooks", "info"] {
            let Some(n) = node(dir, folder) else { continue };
            let is_dir = n == Node::Dir;
            self.out.nodes.insert(join(rel, folder), n);
            if !is_dir {
                continue;
            }
            let Ok(d) = dir.open_dir_nofollow(folder) else {
                continue;
            };
            let Ok(entries) = d.entries() else { continue };
            for e in entries.flatten() {
                self.out.entries += 1;
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(n) = node(&d, &name) {
                    self.out.nodes.insert(join(&join(rel, folder), &name), n);
                }
            }
        }
        for folder in ["modules", "worktrees"] {
            if let Ok(d) = dir.open_dir_nofollow(folder) {
                self.visit(Some(d), &join(rel, folder), depth + 1);
            }
        }
    }
}

/// What a control path is, for the rules.
enum Kind<'a> {
    /// The workspace's `keyless.json`.
    Settings,
    /// An entry named `.git`.
    DotGit,
    /// `config` or `config.worktree` of a repository.
    Config,
    /// `commondir` of repository `gitdir`.
    Commondir {
        gitdir: &'a str,
    },
    /// `hooks` or `info` itself.
    Folder,
    /// A file in `hooks/` (its name) or `info/`.
    Hook {
        name: &'a str,
    },
    Info {
        gitdir: &'a str,
    },
    /// One of the user's own configuration files, a link from their home into the workspace.
    UserConfig,
}

fn kind<'a>(path: &'a str, gitdirs: &BTreeSet<String>, linked: &[String]) -> Option<Kind<'a>> {
    if path == keyless_core::path::SETTINGS_FILE {
        return Some(Kind::Settings);
    }
    if linked.iter().any(|l| l == path) {
        return Some(Kind::UserConfig);
    }
    let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
    if name == ".git" && !gitdirs.contains(parent) {
        return Some(Kind::DotGit);
    }
    if gitdirs.contains(parent) {
        return match name {
            "config" | "config.worktree" => Some(Kind::Config),
            "commondir" => Some(Kind::Commondir { gitdir: parent }),
            "hooks" | "info" => Some(Kind::Folder),
            _ => None,
        };
    }
    let (gitdir, folder) = parent.rsplit_once('/').unwrap_or(("", parent));
    if gitdirs.contains(gitdir) {
        return match folder {
            "hooks" => Some(Kind::Hook { name }),
            "info" => Some(Kind::Info { gitdir }),
            _ => None,
        };
    }
    None
}

/// The guard of one command: the snapshot from before it ran.
#[derive(Debug)]
pub struct Guard {
    root: PathBuf,
    dir: Dir,
    before: Snapshot,
    /// The user's configuration files that are links into the workspace (workspace-relative).
    linked: Vec<String>,
    /// The command runs without the user's confirmation, outside Auto mode: it may not change a
    /// file the user's tools run later (a build script writing `.envrc` is put back).
    pub unconfirmed: bool,
}

impl Guard {
    /// Takes the snapshot of `workspace` (call right before the command starts).
    ///
    /// # Errors
    /// When the workspace cannot be opened.
    pub fn take(workspace: &Path) -> io::Result<Self> {
        let dir = Dir::open_ambient_dir(workspace, cap_std::ambient_authority())?;
        let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        let before = scan(&dir, &root);
        let linked = linked_config(&root);
        Ok(Guard {
            root,
            dir,
            before,
            linked,
            unconfirmed: true,
        })
    }

    /// The files that steer programs, as the snapshot found them (the policy's context).
    #[must_use]
    pub fn steering(&self) -> &[String] {
        &self.before.steering
    }

    /// What the snapshot tells the policy beyond its lists: whether the steering list is whole,
    /// whether the workspace holds symlinks, whether the guard could look everywhere.
    #[must_use]
    pub fn facts(&self) -> ScanFacts {
        facts_of(&self.before, &self.root)
    }

    /// The symlinks that lead out of the workspace, as the snapshot found them, and whether
    /// that list is whole.
    #[must_use]
    pub fn links_out(&self) -> (Vec<String>, bool) {
        links_out(&self.before, &self.root)
    }

    /// Compares with the workspace now (call once the command and every process it started have
    /// ended), puts back what may not stay, and says what it did.
    #[must_use]
    pub fn check(self) -> Vec<Repair> {
        let after = Snapshot::take(&self.dir, &self.root, Some(&self.before));
        let mut repairs = Vec::new();
        let mut quarantine = Quarantine::new(&self.dir);
        for (path, now) in &after.nodes {
            let was = self.before.nodes.get(path);
            if was == Some(now) {
                continue;
            }
            if let Err(why) = self.acceptable(path, now, &after) {
                repairs.push(self.put_back(path, Some(now), was, why, &mut quarantine));
            }
        }
        // A control file of a repository that is still there, gone: put it back.
        for (path, was) in &self.before.nodes {
            if after.nodes.contains_key(path) {
                continue;
            }
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            let grand = parent.rsplit_once('/').map_or("", |(p, _)| p);
            let of_live_repo = after.gitdirs.contains(parent)
                || (after.gitdirs.contains(grand)
                    && matches!(parent.rsplit('/').next(), Some("hooks" | "info")));
            let settings =
                path == keyless_core::path::SETTINGS_FILE || self.linked.iter().any(|l| l == path);
            if settings || (of_live_repo && !path.ends_with("/.git") && path != ".git") {
                repairs.push(self.put_back(
                    path,
                    None,
                    Some(was),
                    "the command removed it".into(),
                    &mut quarantine,
                ));
            }
        }
        // Files the user's tools run later, changed by a command nobody confirmed: put back.
        if self.unconfirmed {
            for (path, now) in &after.persist {
                let was = self.before.persist.get(path);
                if was != Some(now) {
                    let why = persist_why(path, &after);
                    repairs.push(self.put_back(path, Some(now), was, why, &mut quarantine));
                }
            }
            for (path, was) in &self.before.persist {
                if !after.persist.contains_key(path) {
                    let why = format!("{}; the command removed it", persist_why(path, &after));
                    repairs.push(self.put_back(path, None, Some(was), why, &mut quarantine));
                }
            }
        }
        // Folders deeper than the scan goes cannot be checked: a repository there could hold a
        // hook or an fsmonitor that the user's own git runs (through a gitlink, a `cd`). They
        // are moved aside whole, never left unchecked.
        for rel in &after.frontier {
            let why = format!(
                "a folder deeper than {MAX_DEPTH} folders, which keyless cannot look through (a repository in it could hold hooks or config git would run)"
            );
            repairs.push(self.put_back(rel, Some(&Node::Dir), None, why, &mut quarantine));
        }
        // What the guard put back changes folders; the next scan reads those again anyway.
        remember(&self.root, &after);
        if after.too_many {
            repairs.push(Repair {
                path: ".".into(),
                why: format!("the workspace holds more than {MAX_ENTRIES} entries, more than keyless looks through: repositories past them were not checked, and nothing there was moved or put back; until it holds fewer, every command is confirmed"),
                moved_to: None,
                restored: false,
            });
        }
        repairs
    }

    /// Whether what the command left at `path` may stay (the module docs' rules).
    fn acceptable(&self, path: &str, now: &Node, after: &Snapshot) -> Result<(), String> {
        let copy_of_users = |now: &Node| {
            matches!(now, Node::File { .. })
                && self.before.nodes.iter().any(|(p, n)| {
                    n == now
                        && p.rsplit('/').next() == path.rsplit('/').next()
                        && kind(p, &self.before.gitdirs, &self.linked).is_some()
                })
        };
        match kind(path, &after.gitdirs, &self.linked) {
            None => Ok(()),
            Some(Kind::DotGit) => match now {
                Node::Dir => Ok(()),
                Node::File { bytes, .. } => self.gitdir_line(path, bytes, after),
                Node::Link(_) => Err("a .git that is a symlink".into()),
                Node::Other => Err("a .git that is not a file or folder".into()),
            },
            Some(Kind::Config) => match now {
                _ if copy_of_users(now) => Ok(()),
                Node::File { bytes, .. } => {
                    let text = String::from_utf8_lossy(bytes);
                    let gitdir = path.rsplit_once('/').map_or("", |(p, _)| p);
                    let base = self.root.join(gitdir);
                    let inside = |v: &str| self.inside(&base, v);
                    gitcontrol::vet_config(&text, &inside).map_err(|r| {
                        format!("a git config the command wrote ({r})")
                    })
                }
                _ => Err("a git config that is not a file".into()),
            },
            Some(Kind::Commondir { gitdir }) => match now {
                Node::File { bytes, .. }
                    if gitdir.rsplit_once('/').is_some_and(|(p, _)| p.ends_with("worktrees"))
                        && gitcontrol::is_standard_commondir(&String::from_utf8_lossy(bytes)) =>
                {
                    Ok(())
                }
                _ if copy_of_users(now) => Ok(()),
                _ => Err("a commondir the command wrote (it sends git to another repository's config and hooks)".into()),
            },
            Some(Kind::Folder) => match now {
                Node::Dir => Ok(()),
                _ => Err("git's hooks or info folder replaced by something else".into()),
            },
            Some(Kind::Hook { name }) => match now {
                Node::File { .. } if gitcontrol::is_sample_hook(name) => Ok(()),
                Node::Dir => Ok(()),
                _ if copy_of_users(now) => Ok(()),
                _ => Err("a git hook the command wrote (git runs it outside the sandbox)".into()),
            },
            Some(Kind::Settings) => Err(
                "keyless.json holds keyless's own settings; only the user writes it".into(),
            ),
            Some(Kind::UserConfig) => Err(
                "one of your own configuration files (your home links it into the workspace); only you write it".into(),
            ),
            Some(Kind::Info { gitdir }) => {
                if self.before.gitdirs.contains(gitdir) {
                    Err("the command changed git's info folder".into())
                } else {
                    Ok(())
                }
            }
        }
    }

    /// A `.git` file's `gitdir:` line must name a repository inside the workspace.
    fn gitdir_line(&self, path: &str, bytes: &[u8], after: &Snapshot) -> Result<(), String> {
        let text = String::from_utf8_lossy(bytes);
        let target = text
            .strip_prefix("gitdir:")
            .map(str::trim)
            .ok_or("a .git file without a gitdir: line")?;
        let folder = path.rsplit_once('/').map_or("", |(p, _)| p);
        let real = std::fs::canonicalize(self.root.join(folder).join(target))
            .map_err(|_| format!("a .git file pointing at {target}, which does not exist"))?;
        let rel = real
            .strip_prefix(&self.root)
            .map_err(|_| format!("a .git file pointing outside the workspace ({target})"))?;
        if after.gitdirs.contains(&rel.to_string_lossy().into_owned()) {
            Ok(())
        } else {
            Err(format!(
                "a .git file pointing at {target}, which is not a repository"
            ))
        }
    }

    /// Whether `v` (relative to `base`, or absolute) names a place inside the workspace.
    fn inside(&self, base: &Path, v: &str) -> bool {
        let p = base.join(v);
        let mut real = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => {
                    real.pop();
                }
                std::path::Component::CurDir => {}
                other => real.push(other),
            }
        }
        let real = std::fs::canonicalize(&real).unwrap_or(real);
        real.starts_with(&self.root)
    }

    fn put_back(
        &self,
        path: &str,
        now: Option<&Node>,
        was: Option<&Node>,
        why: String,
        quarantine: &mut Quarantine,
    ) -> Repair {
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        let mut repair = Repair {
            path: path.to_string(),
            why,
            moved_to: None,
            restored: false,
        };
        let Some(parent) = open_folder(&self.dir, folder) else {
            repair
                .why
                .push_str("; its folder is gone, nothing to put back");
            return repair;
        };
        if now.is_some() {
            repair.moved_to = quarantine.take(&parent, name, path);
        }
        repair.restored = match was {
            Some(Node::File { bytes, mode }) => write_atomic_in(&parent, name, bytes)
                .and_then(|()| set_mode(&parent, name, *mode))
                .is_ok(),
            Some(Node::Link(target)) => parent.symlink_contents(target, name).is_ok(),
            Some(Node::Dir) => parent.create_dir(name).is_ok(),
            Some(Node::Other) | None => false,
        };
        repair
    }
}

fn set_mode(d: &Dir, name: &str, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt;
        d.set_permissions(name, cap_std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (d, name, mode);
        Ok(())
    }
}

/// The last scan of each workspace this process guarded: the next scan lists again only the
/// folders that changed since (a few workspaces at most: serve has one).
static LAST: std::sync::Mutex<Vec<(PathBuf, Snapshot)>> = std::sync::Mutex::new(Vec::new());

/// Scans a workspace, from its last scan when there is one, and keeps the result for the next.
fn scan(dir: &Dir, root: &Path) -> Snapshot {
    let prev = LAST
        .lock()
        .ok()
        .and_then(|l| l.iter().find(|(r, _)| r == root).map(|(_, s)| s.clone()));
    let s = Snapshot::take(dir, root, prev.as_ref());
    remember(root, &s);
    s
}

fn remember(root: &Path, s: &Snapshot) {
    if let Ok(mut l) = LAST.lock() {
        l.retain(|(r, _)| r != root);
        l.push((root.to_path_buf(), s.clone()));
        if l.len() > 4 {
            l.remove(0);
        }
    }
}

/// A workspace folder by its relative path, through handles, never through a symlink.
fn open_folder(root: &Dir, rel: &str) -> Option<Dir> {
    let mut d = root.try_clone().ok()?;
    for seg in rel.split('/').filter(|s| !s.is_empty()) {
        d = d.open_dir_nofollow(seg).ok()?;
    }
    Some(d)
}

/// The user's configuration files that are links into the workspace at `root` (real path),
/// workspace-relative: control points like keyless.json.
pub(super) fn linked_config(root: &Path) -> Vec<String> {
    crate::dirs::linked_user_config(root)
        .into_iter()
        .map(|l| l.rel)
        .collect()
}

/// The most symlinks leading out that the context lists (it travels with every session); with
/// more, every relative read is judged as possibly leading out.
const MAX_LINKS_OUT: usize = 1_000;

/// The links that lead out, and whether the list is whole: the scan looked everywhere, the
/// resolver finished, and no more than [`MAX_LINKS_OUT`] lead out.
fn links_out(s: &Snapshot, root: &Path) -> (Vec<String>, bool) {
    let found = keyless_core::policy::reads::links_out(&s.links, &root.to_string_lossy());
    let whole = found.complete && !s.incomplete && found.out.len() <= MAX_LINKS_OUT;
    let mut out = found.out;
    out.truncate(MAX_LINKS_OUT);
    (out, whole)
}

/// What a scan tells the policy ([`super::policy_context`]).
#[derive(Debug, Clone, Default)]
pub struct ScanFacts {
    pub steering: Vec<String>,
    /// The steering list is not whole.
    pub steering_unknown: bool,
    pub links_out: Vec<String>,
    /// The list of links that lead out is whole.
    pub links_whole: bool,
    pub links_any: bool,
    /// The guard cannot look through the whole workspace.
    pub unguarded: bool,
}

fn facts_of(s: &Snapshot, root: &Path) -> ScanFacts {
    let (links_out, links_whole) = links_out(s, root);
    ScanFacts {
        steering: s.steering.clone(),
        steering_unknown: s.steering_cut || s.incomplete,
        links_out,
        links_whole,
        links_any: !s.links.is_empty(),
        unguarded: s.too_many,
    }
}

/// A scan of `workspace` now (from the last one where folders did not change), for the policy;
/// `None` when the workspace cannot be read.
#[must_use]
pub fn scan_facts(workspace: &Path) -> Option<ScanFacts> {
    let d = Dir::open_ambient_dir(workspace, cap_std::ambient_authority()).ok()?;
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    Some(facts_of(&scan(&d, &root), &root))
}
