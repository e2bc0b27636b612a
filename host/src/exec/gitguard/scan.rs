//! The scan: every git control point of the workspace, and the files that steer programs or that
//! the user's tools run, found through directory handles without following a symlink. A scan
//! lists again only the folders that may have changed since the last one: those the change
//! journal ([`super::super::journal`]) saw change, or, without it, those whose stamp moved.

use super::super::journal::{Changed, Journal};
use super::super::workspace::{looks_like_git_dir, open_read};
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The deepest folder the scan enters, and the most entries it reads: past them the guard says it
/// could not look everywhere.
pub(super) const MAX_DEPTH: usize = 256;
pub(super) const MAX_ENTRIES: usize = 2_000_000;
/// A control file is read up to this size (a config is refused long before).
const MAX_READ: u64 = 1 << 20;

/// One control point as it is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    File { bytes: Vec<u8>, mode: u32 },
    Link(PathBuf),
    Dir,
    Other,
}

/// Every git control point of the workspace.
#[derive(Debug, Default, Clone)]
pub(super) struct Snapshot {
    /// Workspace-relative path → what is there.
    pub(super) nodes: BTreeMap<String, Node>,
    /// The folders git takes for repositories, workspace-relative.
    pub(super) gitdirs: BTreeSet<String>,
    /// The scan stopped at a limit (too deep or too many entries): what it did not see is not
    /// known.
    pub(super) incomplete: bool,
    /// The folders the scan did not enter because they are deeper than [`MAX_DEPTH`]
    /// (workspace-relative): the guard cannot check them, so it moves them aside.
    pub(super) frontier: BTreeSet<String>,
    /// The scan stopped at [`MAX_ENTRIES`], or found more persistence files than it reads.
    pub(super) too_many: bool,
    /// Files the user's own tools run later ([`keyless_core::policy::persistence`]), as they are:
    /// a command that ran without the user's confirmation may not change them.
    pub(super) persist: BTreeMap<String, Node>,
    entries: usize,
    /// Files that steer programs ([`keyless_core::policy::steering`]), found on the way.
    pub(super) steering: Vec<String>,
    /// More steering files were found than [`MAX_STEERING`]: the list is not whole.
    pub(super) steering_cut: bool,
    /// Symlinks, with their targets as they read, found on the way (the policy judges reads
    /// through the ones that lead out: [`keyless_core::policy::reads`]).
    pub(super) links: Vec<(String, String)>,
    /// Every plain folder scanned, with what its listing held, so that the next scan reads again
    /// only the folders that changed (see [`Folder`]).
    folders: Arc<HashMap<String, Arc<Folder>>>,
    /// The plain folders that hold a `.git` entry (whose contents are read at every scan).
    dotgits: Vec<String>,
    /// When the scan started.
    at: Option<std::time::SystemTime>,
    /// The folders the scan could not look into ([`Opaque`]), by their folder and name as on
    /// disk, with their device and inode: a repository in one could hold hooks git runs.
    pub(super) opaque: BTreeMap<(String, OsString), (u64, u64)>,
    /// The persistence context the folders' persistence lists were judged with: a scan with
    /// another one reuses none of them.
    pctx: Option<keyless_core::policy::Context>,
}

/// Why a folder is opaque to the scan: the host cannot open or list it (its permissions: git
/// still runs a hook in a folder it may only search), or its name is not UTF-8 (the scan names
/// paths as text). What a command does there cannot be checked.
pub(super) fn opaque_why(name: &OsStr) -> &'static str {
    if name.to_str().is_none() {
        "its name is not UTF-8, and keyless looks only through folders whose names are"
    } else {
        "its permissions keep keyless from listing it"
    }
}

/// A path for people: what is not UTF-8 in `name` as `\xNN`.
pub(super) fn shown(parent: &str, name: &OsStr) -> String {
    #[cfg(unix)]
    let text = {
        use std::os::unix::ffi::OsStrExt;
        let mut t = String::new();
        for chunk in name.as_bytes().utf8_chunks() {
            t.push_str(chunk.valid());
            for b in chunk.invalid() {
                t.push_str(&format!("\\x{b:02X}"));
            }
        }
        t
    };
    #[cfg(not(unix))]
    let text = name.to_string_lossy().into_owned();
    join(parent, &text)
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
    /// Its entries whose names are not UTF-8 and that matter (folders, files in a persistence
    /// folder): opaque at every scan.
    odd: Vec<OsString>,
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

pub(super) fn join(rel: &str, name: &str) -> String {
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
    ///
    /// With the change `journal` and what it saw change since `prev`, a folder it watched and saw
    /// no entry of change is taken from `prev`; when it saw nothing change at all, only the
    /// contents of the control points are read again ([`Snapshot::refreshed`]).
    fn take(
        dir: &Dir,
        root: &Path,
        prev: Option<&Snapshot>,
        journal: Option<(&mut Journal, Changed)>,
    ) -> Self {
        let pctx = super::super::persistence::persistence_context(root);
        // A folder's persistence list holds under the context it was judged with; a folder the
        // scan could not look into is tried again at every scan.
        let prev = prev.filter(|p| !p.incomplete && p.pctx.as_ref() == Some(&pctx));
        let journal = journal.filter(|(j, _)| j.working());
        if let (Some(p), Some((_, Changed::Some(dirty)))) = (prev, journal.as_ref()) {
            if dirty.is_empty() && p.opaque.is_empty() {
                return p.refreshed(dir, root);
            }
        }
        let mut scan = Scan {
            root_dir: dir,
            root,
            pctx: &pctx,
            prev,
            journal,
            folders: HashMap::new(),
            out: Snapshot {
                at: Some(std::time::SystemTime::now()),
                pctx: Some(pctx.clone()),
                ..Snapshot::default()
            },
        };
        if let Ok(d) = dir.try_clone() {
            scan.visit(Some(d), "", 0);
        }
        scan.out.folders = Arc::new(std::mem::take(&mut scan.folders));
        controls_outside(&mut scan.out, dir, root);
        scan.out
    }

    /// The same listing as this snapshot's (the journal saw no folder change since), with every
    /// control point's contents read again: the `.git` entries, each repository's control files,
    /// the persistence files, `keyless.json` and the user's linked configuration.
    fn refreshed(&self, dir: &Dir, root: &Path) -> Self {
        let mut out = Snapshot {
            nodes: BTreeMap::new(),
            gitdirs: self.gitdirs.clone(),
            incomplete: false,
            frontier: BTreeSet::new(),
            too_many: self.too_many,
            persist: BTreeMap::new(),
            entries: self.entries,
            steering: self.steering.clone(),
            steering_cut: self.steering_cut,
            links: self.links.clone(),
            folders: self.folders.clone(),
            dotgits: self.dotgits.clone(),
            at: Some(std::time::SystemTime::now()),
            opaque: BTreeMap::new(),
            pctx: self.pctx.clone(),
        };
        for f in &self.dotgits {
            if let Some(n) = open_folder(dir, f).and_then(|d| node(&d, ".git")) {
                out.nodes.insert(join(f, ".git"), n);
            }
        }
        for g in &self.gitdirs {
            if let Some(d) = open_folder(dir, g) {
                read_controls(&mut out, &d, g);
            }
        }
        for p in self.persist.keys() {
            let (folder, name) = p.rsplit_once('/').unwrap_or(("", p.as_str()));
            if let Some(n) = open_folder(dir, folder).and_then(|d| node(&d, name)) {
                out.persist.insert(p.clone(), n);
            }
        }
        controls_outside(&mut out, dir, root);
        out
    }
}

/// A repository folder's control files: `config`, `config.worktree`, `commondir`, and `hooks/` and
/// `info/` with their files (read at every scan, whatever the journal says).
fn read_controls(out: &mut Snapshot, dir: &Dir, rel: &str) {
    for name in ["config", "config.worktree", "commondir"] {
        if let Some(n) = node(dir, name) {
            out.nodes.insert(join(rel, name), n);
        }
    }
    for folder in ["hooks", "info"] {
        let Some(n) = node(dir, folder) else { continue };
        let is_dir = n == Node::Dir;
        out.nodes.insert(join(rel, folder), n);
        if !is_dir {
            continue;
        }
        // A hooks folder git may search but keyless may not list still runs its hooks.
        let Ok(d) = dir.open_dir_nofollow(folder) else {
            note_opaque(out, dir, rel, OsStr::new(folder));
            continue;
        };
        let Ok(entries) = d.entries() else {
            note_opaque(out, dir, rel, OsStr::new(folder));
            continue;
        };
        for e in entries.flatten() {
            out.entries += 1;
            // git runs hooks and reads info files by names that are UTF-8.
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if let Some(n) = node(&d, &name) {
                out.nodes.insert(join(&join(rel, folder), &name), n);
            }
        }
    }
}

/// A folder the scan cannot look into (`name` in `parent`, whose handle is `dir`), noted when it
/// is one.
fn note_opaque(out: &mut Snapshot, dir: &Dir, parent: &str, name: &OsStr) {
    let Ok(m) = dir.symlink_metadata(name) else {
        return;
    };
    if !m.is_dir() {
        return;
    }
    #[cfg(unix)]
    let id = {
        use cap_std::fs::MetadataExt as _;
        (m.dev(), m.ino())
    };
    #[cfg(not(unix))]
    let id = (0, 0);
    out.opaque
        .insert((parent.to_string(), name.to_os_string()), id);
}

/// The control points outside repositories: `keyless.json` and the user's linked config.
fn controls_outside(out: &mut Snapshot, dir: &Dir, root: &Path) {
    // The workspace's settings file: only the user writes it (a command that makes or
    // changes it is put back, like git's control files). So are the user's own
    // configuration files that are links into the workspace (a dotfiles repository).
    if let Some(n) = node(dir, keyless_core::path::SETTINGS_FILE) {
        out.nodes
            .insert(keyless_core::path::SETTINGS_FILE.to_string(), n);
    }
    for rel in super::linked_config(root) {
        let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        if let Some(n) = open_folder(dir, folder).and_then(|d| node(&d, name)) {
            out.nodes.insert(rel, n);
        }
    }
}

/// One scan: the workspace, the last scan it may take unchanged folders from, and what it found.
struct Scan<'a> {
    root_dir: &'a Dir,
    root: &'a Path,
    /// Where the files the user's tools run are (the hooks folder, PATH folders, linked config).
    pctx: &'a keyless_core::policy::Context,
    prev: Option<&'a Snapshot>,
    /// The change journal and the folders it saw change since `prev`.
    journal: Option<(&'a mut Journal, Changed)>,
    /// The plain folders listed or taken from `prev` so far.
    folders: HashMap<String, Arc<Folder>>,
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

    /// Folder `rel` could not be opened or listed: opaque when it is a folder (not when it is
    /// gone). The workspace itself unreadable: nothing is known.
    fn note_unopenable(&mut self, rel: &str) {
        if rel.is_empty() {
            self.out.incomplete = true;
            self.out.too_many = true;
            return;
        }
        let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        if let Some(d) = open_folder(self.root_dir, parent) {
            note_opaque(&mut self.out, &d, parent, OsStr::new(name));
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
        // With the journal, a folder it watches and saw no entry of change lists as before;
        // without it, a folder whose stamp did not move (and is not too recent to tell).
        let (stamp, same) = match (&self.journal, self.prev) {
            (Some((j, dirty)), Some(p)) => (
                None,
                (j.watched(rel) && !dirty.contains(rel))
                    .then(|| p.folders.get(rel).cloned())
                    .flatten(),
            ),
            (Some(_), None) => (None, None),
            (None, prev) => {
                let stamp = Stamp::of(&self.root.join(rel));
                let same = stamp.zip(prev).and_then(|(stamp, p)| {
                    p.folders
                        .get(rel)
                        .filter(|f| f.stamp == stamp && p.at.is_some_and(|at| !stamp.racy(at)))
                        .cloned()
                });
                (stamp, same)
            }
        };
        {
            if let Some(f) = same {
                if f.dotgit {
                    self.out.dotgits.push(rel.to_string());
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
                if !f.odd.is_empty() {
                    if let Some(d) = open_folder(self.root_dir, rel) {
                        for name in &f.odd {
                            note_opaque(&mut self.out, &d, rel, name);
                        }
                    }
                }
                for sub in &f.subdirs {
                    self.visit(None, sub, depth + 1);
                }
                // The sandbox's temp folder is made inside `.agent`, which is not watched: made
                // since the root was last listed, it is looked at all the same.
                if rel.is_empty() && !f.subdirs.iter().any(|s| s == SANDBOX_TMP) {
                    match open_folder(self.root_dir, SANDBOX_TMP) {
                        Some(t) => self.visit(Some(t), SANDBOX_TMP, depth + 2),
                        None => self.note_unopenable(SANDBOX_TMP),
                    }
                }
                self.folders.insert(rel.to_string(), f);
                return;
            }
        }
        let Some(dir) = handle.or_else(|| open_folder(self.root_dir, rel)) else {
            self.note_unopenable(rel);
            return;
        };
        self.walk(&dir, rel, depth, stamp);
    }

    fn walk(&mut self, dir: &Dir, rel: &str, depth: usize, stamp: Option<Stamp>) {
        // Watched before it is listed: a change made after the listing is always seen.
        if let Some((j, _)) = self.journal.as_mut() {
            j.watch(rel, dir);
        }
        let Ok(entries) = dir.entries() else {
            self.note_unopenable(rel);
            return;
        };
        // One listing: whether the folder is a repository comes from it, with no more calls.
        let mut odd = Vec::new();
        let listing: Vec<(String, cap_std::fs::FileType)> = entries
            .flatten()
            .filter_map(|e| {
                let ft = e.file_type().ok()?;
                let raw = e.file_name();
                match raw.to_str() {
                    Some(name) => Some((name.to_string(), ft)),
                    None => {
                        odd.push((raw, ft));
                        None
                    }
                }
            })
            .collect();
        self.out.entries += listing.len() + odd.len();
        let has = |name: &str| listing.iter().any(|(n, _)| n == name);
        // A folder that looks like a repository but holds a `.git` is a working tree to git (it
        // looks at `.git` first, and at the folder itself only when `.git` is not a repository):
        // both are read, and its other folders are walked like any working tree's.
        let both = has(".git");
        if looks_like_git_dir(has) && !both {
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
            odd: Vec::new(),
        };
        let gitdir_too = both && looks_like_git_dir(has);
        if gitdir_too {
            self.gitdir(dir, rel, depth);
        }
        let persist_folder = !rel.starts_with(".agent")
            && keyless_core::policy::persistence::in_persistence_folder(rel, self.pctx);
        // A name that is not UTF-8 is never looked into: a folder so named, or a file in a
        // folder whose files the user's tools run, is opaque.
        for (name, ft) in odd {
            if ft.is_dir() || (persist_folder && !rel.starts_with(".agent")) {
                note_opaque(&mut self.out, dir, rel, &name);
                folder.odd.push(name);
            }
        }
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
                let tmp = SANDBOX_TMP;
                if let Ok(agent) = dir.open_dir_nofollow(&name) {
                    match agent.open_dir_nofollow("sandbox-tmp") {
                        Ok(t) => {
                            folder.subdirs.push(tmp.to_string());
                            self.visit(Some(t), tmp, depth + 2);
                        }
                        Err(_) => {
                            note_opaque(&mut self.out, &agent, ".agent", OsStr::new("sandbox-tmp"))
                        }
                    }
                }
                continue;
            }
            if name == ".git" {
                folder.dotgit = true;
                self.out.dotgits.push(rel.to_string());
                if let Some(n) = node(dir, &name) {
                    self.out.nodes.insert(path.clone(), n);
                }
            }
            if ft.is_dir() && gitdir_too && matches!(name.as_str(), "modules" | "worktrees") {
                // Walked as the repository's own, above.
            } else if ft.is_dir() {
                folder.subdirs.push(path.clone());
                match dir.open_dir_nofollow(&name) {
                    Ok(sub) => self.visit(Some(sub), &path, depth + 1),
                    Err(_) => note_opaque(&mut self.out, dir, rel, OsStr::new(&name)),
                }
            } else if keyless_core::policy::steering::is_steering_file(&path) {
                folder.steering.push(path.clone());
                self.note_steering(path);
            }
        }
        // A folder that is a repository too is listed again at every scan, as repositories are.
        if (stamp.is_some() || self.journal.is_some()) && !gitdir_too {
            self.folders.insert(rel.to_string(), Arc::new(folder));
        }
    }

    /// A repository folder: its control files, then the repositories in its `modules/` and
    /// `worktrees/` (not its objects and refs, which steer nothing).
    fn gitdir(&mut self, dir: &Dir, rel: &str, depth: usize) {
        self.out.gitdirs.insert(rel.to_string());
        read_controls(&mut self.out, dir, rel);
        for folder in ["modules", "worktrees"] {
            if let Ok(d) = dir.open_dir_nofollow(folder) {
                self.visit(Some(d), &join(rel, folder), depth + 1);
            }
        }
    }
}

/// The sandbox's temp folder, the one folder of `.agent` a command may write.
const SANDBOX_TMP: &str = ".agent/sandbox-tmp";

/// The last scan of each workspace this process guarded: the next scan lists again only the
/// folders that changed since (a few workspaces at most: serve has one).
static LAST: std::sync::Mutex<Vec<(PathBuf, Arc<Snapshot>)>> = std::sync::Mutex::new(Vec::new());

/// Scans a workspace, from its last scan when there is one, and keeps the result for the next.
///
/// The workspace's change journal is held for the whole scan: what it saw change is taken once,
/// and the scan it is relative to is the last one kept, so two scans never share one set of
/// changes.
pub(super) fn scan(dir: &Dir, root: &Path) -> Arc<Snapshot> {
    let journal = super::super::journal::of(root);
    let mut held = journal.as_ref().and_then(|j| j.lock().ok());
    let changed = held.as_mut().map(|j| j.take_folders());
    let prev = LAST
        .lock()
        .ok()
        .and_then(|l| l.iter().find(|(r, _)| r == root).map(|(_, s)| s.clone()));
    let j = held.as_deref_mut().zip(changed);
    let s = Arc::new(Snapshot::take(dir, root, prev.as_deref(), j));
    if let Ok(mut l) = LAST.lock() {
        l.retain(|(r, _)| r != root);
        l.push((root.to_path_buf(), s.clone()));
        if l.len() > 4 {
            l.remove(0);
        }
    }
    s
}

/// A workspace folder by its relative path, through handles, never through a symlink.
pub(super) fn open_folder(root: &Dir, rel: &str) -> Option<Dir> {
    let mut d = root.try_clone().ok()?;
    for seg in rel.split('/').filter(|s| !s.is_empty()) {
        d = d.open_dir_nofollow(seg).ok()?;
    }
    Some(d)
}
