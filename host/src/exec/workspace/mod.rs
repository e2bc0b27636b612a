//! The workspace: every file command resolves its path beneath a directory handle, and writes are
//! atomic. (What a batch overwrites or removes is backed up first, by `backup.rs`, through
//! [`Workspace::save_state`].)
//!
//! No check is followed by a use of the same path: [`Workspace::resolve`] walks the path one
//! segment at a time with handle-relative, no-follow opens (cap-std, `openat` beneath the
//! workspace handle). A symlink is read, resolved as a workspace path, checked against the path
//! rules, and the walk restarts from the root; it is never followed by the kernel. The operation
//! itself then runs on the handle of the target's folder, so a folder swapped for a symlink
//! between the check and the write makes the write fail instead of landing outside.
//!
//! This module is the one place that changes the workspace: every write operation takes a
//! [`Writable`], which only [`Workspace::writable`] (the one own-file check) makes, and the
//! directory handle's changing methods are disallowed elsewhere (clippy.toml). The rest of this
//! module writes keyless's own state under `.agent` (state files such as backups, temp files, the
//! journal).
#![allow(clippy::disallowed_methods)]

mod write;
use super::Failure;
use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};
use keyless_core::Code;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use write::*;
pub use write::{write_atomic, write_atomic_in, TEMP_PATTERN};

/// keyless's own folder inside the workspace.
pub const AGENT_DIR: &str = ".agent";
/// The workspace settings file, written only by the user.
/// How many symlinks one path may pass through.
const MAX_SYMLINKS: usize = 40;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Where an in-place write records what it is about to write (see [`Workspace::recover_in_place`]).
const IN_PLACE: &str = "in-place";

/// Whether a process with this id runs (a signal 0 reaches it).
fn process_runs(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// A path resolved beneath the workspace: its workspace-relative form with every symlink
/// resolved, split into the folder and the last name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resolved workspace-relative path (`/`-separated).
    pub rel: String,
    /// Its folder, workspace-relative (empty for the root).
    pub dir: String,
    /// The last segment.
    pub name: String,
}

/// A target that passed [`Workspace::writable`], the one own-file check: the workspace's write
/// operations take only these, so no front end (file commands, `.as` tools and memory, undo, SSH
/// downloads) can write without asking it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writable(Target);

impl std::ops::Deref for Writable {
    type Target = Target;
    fn deref(&self) -> &Target {
        &self.0
    }
}

#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    dir: Dir,
    /// Real paths keyless owns that may sit inside the workspace (the user's keyless config
    /// folder, the host binary, the native-messaging manifests): nothing writes there.
    protected: Vec<PathBuf>,
    /// The user's own configuration files that are links into the workspace (a dotfiles
    /// repository): real path, and where their tools look for it (`~/.bashrc`).
    user_config: Vec<(PathBuf, PathBuf)>,
}

/// The names inside a git directory that steer git (or make the folder one): a write there is
/// never the model's.
const GIT_CONTROL: &[&str] = &[
    "head",
    "objects",
    "refs",
    "commondir",
    "config",
    "config.worktree",
    "gitdir",
    "hooks",
    "info",
    "modules",
    "worktrees",
    "packed-refs",
];

/// Whether a folder is a git directory to git (its `is_git_directory`): a `HEAD` file with
/// `objects/` and `refs/` folders, or with a `commondir` file. Such a folder anywhere is a
/// repository a user's `git` would use when run inside it.
#[must_use]
pub fn git_dir_like(d: &Dir) -> bool {
    looks_like_git_dir(|name| d.symlink_metadata(name).is_ok())
}

/// [`git_dir_like`]'s rule over a folder's entries: `has(name)` says whether the folder holds an
/// entry of that name. Git is looser than "a HEAD file and two folders": HEAD may be a symlink
/// (even a dangling one, read as a ref), and `objects` and `refs` pass when they are anything
/// git can enter, a symlink to a folder elsewhere included. So an entry of each name, of any
/// kind, is enough here.
pub fn looks_like_git_dir(has: impl Fn(&str) -> bool) -> bool {
    has("HEAD") && ((has("objects") && has("refs")) || has("commondir"))
}

fn nofollow_read() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true).follow(FollowSymlinks::No);
    // A FIFO the model made must not hold the host: opened without waiting for a writer it
    // reads as empty, and [`read_in`] refuses anything but a regular file.
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        o.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    o
}

/// Opens `name` in `d` to read it, never through a symlink.
///
/// # Errors
/// As the open.
pub fn open_read(d: &Dir, name: &str) -> io::Result<cap_std::fs::File> {
    d.open_with(name, &nofollow_read())
}

fn outside(rel: &str, why: impl std::fmt::Display) -> Failure {
    Failure::new(Code::PathOutside, format!("{rel}: {why}"))
}

impl Workspace {
    /// Opens a workspace folder (it must exist).
    ///
    /// # Errors
    /// When the folder does not exist or cannot be opened.
    pub fn open(dir: &Path) -> io::Result<Self> {
        let root = std::fs::canonicalize(dir)?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a folder", root.display()),
            ));
        }
        let handle = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        let user_config = crate::dirs::linked_user_config(&root)
            .into_iter()
            .map(|l| (root.join(&l.rel), l.home_path))
            .collect();
        Ok(Self {
            root,
            dir: handle,
            protected: crate::dirs::own_locations(),
            user_config,
        })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a workspace-relative path (see the module docs).
    ///
    /// # Errors
    /// KA_PATH_OUTSIDE for a path that breaks the rules or leaves the workspace through a
    /// symlink; KA_FILE_IO when a segment cannot be inspected.
    pub fn resolve(&self, rel: &str) -> Result<Target, Failure> {
        let norm = keyless_core::path::normalize(rel).map_err(|p| outside(rel, p))?;
        let mut pending: Vec<String> = norm.split('/').rev().map(str::to_string).collect();
        let mut done: Vec<String> = Vec::new();
        let mut hops = 0;
        let mut dir = self
            .dir
            .try_clone()
            .map_err(|e| Failure::io("cannot open the workspace for", rel, &e))?;
        // Once a segment is missing, the rest cannot hold a symlink: it is only named.
        let mut missing = false;
        while let Some(seg) = pending.pop() {
            if missing {
                done.push(seg);
                continue;
            }
            match dir.symlink_metadata(&seg) {
                Ok(m) if m.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINKS {
                        return Err(outside(rel, "too many symlinks"));
                    }
                    let link = dir
                        .read_link_contents(&seg)
                        .map_err(|e| Failure::io("cannot read the symlink in", rel, &e))?;
                    let joined = self.link_target(rel, &done, &link)?;
                    // Restart from the root with the link's target in place of the segment.
                    for s in joined.iter().rev() {
                        pending.push(s.clone());
                    }
                    done.clear();
                    dir = self
                        .dir
                        .try_clone()
                        .map_err(|e| Failure::io("cannot open the workspace for", rel, &e))?;
                }
                Ok(m) if m.is_dir() && !pending.is_empty() => {
                    dir = dir.open_dir_nofollow(&seg).map_err(|e| {
                        outside(rel, format!("{seg} changed while it was resolved ({e})"))
                    })?;
                    done.push(seg);
                }
                Ok(_) if !pending.is_empty() => {
                    return Err(Failure::new(
                        Code::FileIo,
                        format!("{rel}: {} is a file, not a folder", done_path(&done, &seg)),
                    ))
                }
                Ok(_) => done.push(seg),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    missing = true;
                    done.push(seg);
                }
                Err(e) => return Err(Failure::io("cannot inspect", rel, &e)),
            }
        }
        let name = done
            .pop()
            .ok_or_else(|| outside(rel, "the path names the workspace root"))?;
        let t = Target {
            rel: if done.is_empty() {
                name.clone()
            } else {
                format!("{}/{name}", done.join("/"))
            },
            dir: done.join("/"),
            name,
        };
        Ok(t)
    }

    /// A symlink's target as workspace segments, or KA_PATH_OUTSIDE when it leaves the workspace
    /// or enters `.git`/`.agent`.
    fn link_target(&self, rel: &str, at: &[String], link: &Path) -> Result<Vec<String>, Failure> {
        let text = link.to_string_lossy().replace('\\', "/");
        let mut out: Vec<String> = if link.is_absolute() {
            let inside = Path::new(&text).strip_prefix(&self.root).map_err(|_| {
                outside(
                    rel,
                    format!("follows a symlink out of the workspace (to {text})"),
                )
            })?;
            inside
                .to_string_lossy()
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        } else {
            at.to_vec()
        };
        if !link.is_absolute() {
            for s in text.split('/') {
                match s {
                    "" | "." => {}
                    ".." => {
                        if out.pop().is_none() {
                            return Err(outside(
                                rel,
                                format!("follows a symlink out of the workspace (to {text})"),
                            ));
                        }
                    }
                    s => out.push(s.to_string()),
                }
            }
        }
        if out.is_empty() {
            return Err(outside(rel, "follows a symlink to the workspace root"));
        }
        keyless_core::path::normalize(&out.join("/"))
            .map_err(|_| outside(rel, "follows a symlink into .git or .agent"))?;
        Ok(out)
    }

    /// Resolves a path something will write (create, overwrite, append to, remove, rename, make a
    /// folder): the one check every write path asks, whatever front end wants the write.
    ///
    /// Refused with KA_PATH_OUTSIDE: a path the rules refuse or that leaves the workspace
    /// (`.git` and `.agent` in any spelling a file system could take for them, see
    /// [`keyless_core::path::same_name`]); `keyless.json` at the root, in any such spelling; the
    /// user's keyless config folder, the host binary and the native-messaging manifests when the
    /// workspace holds them; the user's own configuration files (`~/.bashrc`, `~/.gitconfig`, …)
    /// that are links into the workspace; and git's control files in any folder git would take for a
    /// repository (a `HEAD` with `objects/` and `refs/`), or a write that would make one.
    ///
    /// # Errors
    /// KA_PATH_OUTSIDE; KA_FILE_IO when a folder cannot be inspected.
    pub fn writable(&self, rel: &str) -> Result<Writable, Failure> {
        let t = self.resolve(rel)?;
        if keyless_core::path::is_settings_file(&t.rel) {
            return Err(outside(
                &t.rel,
                "keyless.json holds keyless's own settings; only the user edits it",
            ));
        }
        let abs = self.root.join(&t.rel);
        if let Some(p) = self
            .protected
            .iter()
            .find(|p| abs.starts_with(p) || p.starts_with(&abs))
        {
            return Err(outside(
                &t.rel,
                format!("{} belongs to keyless itself", p.display()),
            ));
        }
        if let Some((_, home)) = self
            .user_config
            .iter()
            .find(|(p, _)| abs.starts_with(p) || p.starts_with(&abs))
        {
            return Err(outside(
                &t.rel,
                format!(
                    "{} is a link to this file: it is one of your own configuration files, which your shell, git or editor run or obey outside the sandbox; keyless never lets the model write it (edit it yourself)",
                    home.display()
                ),
            ));
        }
        self.refuse_git_control(&t)?;
        Ok(Writable(t))
    }

    /// The user's own configuration files that are links into this workspace: where each really
    /// is and where their tools look for it.
    #[must_use]
    pub fn user_config(&self) -> &[(PathBuf, PathBuf)] {
        &self.user_config
    }

    /// Refuses a write into git's control files of a folder git would take for a repository, and
    /// a write that would make a folder one (the folder's `config` or hooks would then steer the
    /// user's own `git` there, outside the sandbox).
    fn refuse_git_control(&self, t: &Target) -> Result<(), Failure> {
        let segments: Vec<&str> = t.rel.split('/').collect();
        let mut d = self
            .dir
            .try_clone()
            .map_err(|e| Failure::io("cannot open the workspace for", &t.rel, &e))?;
        for (i, seg) in segments.iter().enumerate() {
            let head = |name: &str| keyless_core::path::same_name(seg, name);
            let before = git_dir_like(&d);
            // The write makes an entry of its first segment's name here (a file or a folder).
            let after = looks_like_git_dir(|name| {
                d.symlink_metadata(name).is_ok() || head(&name.to_ascii_lowercase())
            });
            let control = GIT_CONTROL.iter().any(|c| head(c));
            if after && (!before || control) {
                let folder = if i == 0 {
                    "the workspace root".to_string()
                } else {
                    segments[..i].join("/")
                };
                return Err(outside(
                    &t.rel,
                    format!("{folder} is (or would become) a git repository, and its control files ({seg}) steer git outside the sandbox; keyless does not write them"),
                ));
            }
            if i + 1 == segments.len() {
                break;
            }
            d = match d.open_dir_nofollow(seg) {
                Ok(next) => next,
                // What does not exist yet holds no repository.
                Err(_) => break,
            };
        }
        Ok(())
    }

    /// The handle of a target's folder, to read it (never through a symlink: a segment that is
    /// one now fails).
    ///
    /// # Errors
    /// KA_FILE_NOT_FOUND, KA_FILE_IO, or KA_PATH_OUTSIDE when the folder changed into a symlink
    /// since it was resolved.
    pub fn dir_of(&self, t: &Target) -> Result<Dir, Failure> {
        self.open_dir(&t.dir, false, &t.rel)
    }

    /// The handle of a checked target's folder, to change it (a hard link, a database beside
    /// it). With `create`, missing folders are made, never through a symlink.
    ///
    /// # Errors
    /// As [`Workspace::dir_of`].
    pub fn dir_for_write(&self, t: &Writable, create: bool) -> Result<Dir, Failure> {
        self.open_dir(&t.dir, create, &t.rel)
    }

    /// Removes a checked target's file (never a folder, never through a symlink).
    ///
    /// # Errors
    /// KA_FILE_NOT_FOUND, KA_FILE_IO.
    pub fn remove_file(&self, t: &Writable) -> Result<(), Failure> {
        let d = self.dir_for_write(t, false)?;
        d.remove_file(&t.name).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => {
                Failure::new(Code::FileNotFound, format!("{} does not exist", t.rel))
            }
            _ => Failure::io("cannot delete", &t.rel, &e),
        })
    }

    /// Makes a checked target a folder (its parents too); an existing folder is fine, a file there
    /// is KA_FILE_ALREADY_EXISTS.
    ///
    /// # Errors
    /// KA_FILE_ALREADY_EXISTS, KA_FILE_IO.
    pub fn create_dir(&self, t: &Writable) -> Result<(), Failure> {
        let parent = self.dir_for_write(t, true)?;
        match parent.symlink_metadata(&t.name) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(Failure::new(
                Code::FileAlreadyExists,
                format!("{} exists and is a file", t.rel),
            )),
            Err(_) => match parent.create_dir(&t.name) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(Failure::io("cannot create", &t.rel, &e)),
            },
        }
    }

    /// Opens a checked target to append to (created when missing, never through a symlink).
    ///
    /// # Errors
    /// KA_FILE_IO.
    pub fn append(&self, t: &Writable) -> Result<std::fs::File, Failure> {
        let d = self.dir_for_write(t, true)?;
        let mut o = OpenOptions::new();
        o.append(true).create(true).follow(FollowSymlinks::No);
        d.open_with(&t.name, &o)
            .map(cap_std::fs::File::into_std)
            .map_err(|e| Failure::io("cannot open", &t.rel, &e))
    }

    /// Moves a checked file to another checked target without ever replacing one there (a hard
    /// link, then the old name goes; on another filesystem an atomic copy). KA_FILE_ALREADY_EXISTS
    /// when the destination exists, even one that appeared meanwhile.
    ///
    /// # Errors
    /// KA_FILE_ALREADY_EXISTS, KA_FILE_IO.
    pub fn move_file(&self, src: &Writable, dest: &Writable, bytes: &[u8]) -> Result<(), Failure> {
        let src_dir = self.dir_for_write(src, false)?;
        let dest_dir = self.dir_for_write(dest, true)?;
        match src_dir.hard_link(&src.name, &dest_dir, &dest.name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(Failure::new(
                    Code::FileAlreadyExists,
                    format!("{} already exists; movefile never overwrites", dest.rel),
                ))
            }
            // Another filesystem (or no hard links): copy atomically, then remove the source.
            Err(_) => self.write(dest, bytes, Some(&[]))?,
        }
        src_dir
            .remove_file(&src.name)
            .map_err(|e| Failure::io("cannot remove", &src.rel, &e))
    }

    /// A folder of the workspace by its relative path (`""` or `"."` is the root), opened through
    /// handles without following a symlink.
    ///
    /// # Errors
    /// A path outside the workspace, a symlink, or a folder that does not exist.
    pub fn open_folder(&self, rel: &str) -> Result<Dir, Failure> {
        let rel = rel.trim_end_matches('/');
        if rel.is_empty() || rel == "." {
            return self
                .dir
                .try_clone()
                .map_err(|e| Failure::io("cannot open the workspace for", ".", &e));
        }
        let t = self.resolve(rel)?;
        self.open_dir(&t.rel, false, &t.rel)
    }

    fn open_dir(&self, dir: &str, create: bool, rel: &str) -> Result<Dir, Failure> {
        let mut d = self
            .dir
            .try_clone()
            .map_err(|e| Failure::io("cannot open the workspace for", rel, &e))?;
        for seg in dir.split('/').filter(|s| !s.is_empty()) {
            d = match d.open_dir_nofollow(seg) {
                Ok(next) => next,
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    match d.create_dir(seg) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(Failure::io("cannot create the folder for", rel, &e)),
                    }
                    d.open_dir_nofollow(seg).map_err(|e| {
                        outside(rel, format!("{seg} changed while it was created ({e})"))
                    })?
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(Failure::new(
                        Code::FileNotFound,
                        format!("{rel} does not exist"),
                    ))
                }
                Err(e) => {
                    return Err(outside(
                        rel,
                        format!("{seg} is not a plain folder any more ({e})"),
                    ))
                }
            };
        }
        Ok(d)
    }

    /// A path for messages: relative to the workspace when inside it.
    #[must_use]
    pub fn display(&self, p: &Path) -> String {
        p.strip_prefix(&self.root)
            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
    }

    /// The `.agent` folder's handle, created on first use (never through a symlink).
    ///
    /// # Errors
    /// When the folder cannot be created, or `.agent` is not a plain folder.
    pub fn agent(&self) -> io::Result<Dir> {
        match self.dir.create_dir(AGENT_DIR) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        self.dir.open_dir_nofollow(AGENT_DIR).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{AGENT_DIR} is not a plain folder ({e}); keyless will not use it"),
            )
        })
    }

    /// Writes keyless's own state file `.agent/REL` (folders made as needed, never through a
    /// symlink; atomically). The path is keyless's, never the model's.
    ///
    /// # Errors
    /// When `.agent` cannot be written.
    pub fn save_state(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let (d, name) = self.state_folder(rel)?;
        write_atomic_in(&d, name, bytes)
    }

    /// The folder of the state file `.agent/REL` (made as needed, never through a symlink), and
    /// the file's name in it.
    fn state_folder<'a>(&self, rel: &'a str) -> io::Result<(Dir, &'a str)> {
        let agent = self.agent()?;
        let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let d = if folder.is_empty() {
            agent
        } else {
            agent.create_dir_all(folder)?;
            agent.open_dir_nofollow(folder)?
        };
        Ok((d, name))
    }

    /// Writes keyless's own state file `.agent/REL` that no earlier write named (a backup's copy
    /// of one file) without flushing it to the disk: [`Self::sync_state`] flushes many at once. A
    /// file of that name left by an earlier try is replaced atomically instead.
    ///
    /// # Errors
    /// When `.agent` cannot be written.
    pub fn save_state_unsynced(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let (d, name) = self.state_folder(rel)?;
        match write_new_then(&d, name, bytes, None, false) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => write_atomic_in(&d, name, bytes),
            other => other,
        }
    }

    /// Flushes every write to the filesystem that holds `.agent` (after
    /// [`Self::save_state_unsynced`]).
    ///
    /// # Errors
    /// When the flush fails.
    pub fn sync_state(&self) -> io::Result<()> {
        // A folder's own handle may not be open for reading (`O_PATH`): syncfs needs one that is.
        let f = self.agent()?.open(".")?;
        nix::unistd::syncfs(&f).map_err(io::Error::from)
    }

    /// Removes keyless's own state file `.agent/REL` (never through a symlink).
    ///
    /// # Errors
    /// NotFound when it does not exist; any other I/O failure.
    pub fn remove_state(&self, rel: &str) -> io::Result<()> {
        let agent = self.agent()?;
        let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let d = if folder.is_empty() {
            agent
        } else {
            agent.open_dir_nofollow(folder)?
        };
        d.remove_file(name)
    }

    /// The `.agent` folder, created on first use and excluded from git, with the start-up
    /// leftovers of an interrupted write removed.
    ///
    /// # Errors
    /// When the folder cannot be created.
    pub fn agent_dir(&self) -> io::Result<PathBuf> {
        self.agent()?;
        self.exclude_from_git()?;
        Ok(self.root.join(AGENT_DIR))
    }

    /// Adds `/.agent/` and keyless's temp-file pattern to `.git/info/exclude`, through handles.
    fn exclude_from_git(&self) -> io::Result<()> {
        let Ok(git) = self.dir.open_dir_nofollow(".git") else {
            return Ok(());
        };
        let Ok(info) = git.open_dir_nofollow("info") else {
            return Ok(());
        };
        let mut current = String::new();
        if let Ok(mut f) = info.open_with("exclude", &nofollow_read()) {
            let _ = f.read_to_string(&mut current);
        }
        let wanted = ["/.agent/", TEMP_PATTERN];
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|w| !current.lines().any(|l| l.trim() == *w))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut o = OpenOptions::new();
        o.append(true).create(true).follow(FollowSymlinks::No);
        let mut f = info.open_with("exclude", &o)?;
        if !current.is_empty() && !current.ends_with('\n') {
            writeln!(f)?;
        }
        for m in missing {
            writeln!(f, "{m}")?;
        }
        Ok(())
    }

    /// Removes what an interrupted run left: `.agent/tmp` and temp files recorded in its journal.
    pub fn clean_leftovers(&self) {
        self.recover_in_place();
        let Ok(agent) = self.agent() else { return };
        if let Ok(text) = agent.read_to_string(JOURNAL) {
            for rel in text.lines().filter(|l| !l.is_empty()) {
                if let Ok(t) = self.writable(rel) {
                    if is_temp_name(&t.name) {
                        let _ = self.remove_file(&t);
                    }
                }
            }
            let _ = agent.remove_file(JOURNAL);
        }
        let _ = agent.remove_dir_all("tmp");
    }

    /// Finishes the in-place writes a killed keyless left cut short: a file that holds the first
    /// part of its new bytes over its old ones gets its new bytes whole. A file that holds its old
    /// or its new bytes whole, or anything else (the user edited it since), is left as it is; the
    /// batch's backup still has the old bytes for `undo`. The records of a keyless that still runs
    /// are left to it.
    pub fn recover_in_place(&self) {
        // A workspace keyless never wrote in has nothing to finish (and gets no `.agent` here).
        if !self.root.join(AGENT_DIR).join(IN_PLACE).is_dir() {
            return;
        }
        let Ok(agent) = self.agent() else { return };
        let Ok(records) = agent.read_dir(IN_PLACE) else {
            return;
        };
        for entry in records.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next().and_then(|p| p.parse::<i32>().ok());
            if pid.is_some_and(|p| {
                p != i32::try_from(std::process::id()).unwrap_or(0) && process_runs(p)
            }) {
                continue;
            }
            let record = format!("{IN_PLACE}/{name}");
            let read = |part: &str| agent.read(format!("{record}/{part}")).ok();
            if let (Some(path), Some(old), Some(new)) = (read("path"), read("old"), read("new")) {
                let path = String::from_utf8_lossy(&path).into_owned();
                if let Ok(t) = self.writable(&path) {
                    let now = self.read(&t).unwrap_or_default();
                    if now != new && now != old && cut_short(&now, &old, &new) {
                        let _ = self.write(&t, &new, Some(&now));
                    }
                }
            }
            self.forget_in_place(&record);
        }
    }

    /// Removes an in-place write's record (`.agent/in-place/…`), its path first.
    fn forget_in_place(&self, record: &str) {
        for part in ["path", "new", "old"] {
            let _ = self.remove_state(&format!("{record}/{part}"));
        }
        if let Ok(agent) = self.agent() {
            let _ = agent.remove_dir(record);
        }
    }

    /// Reads a target's bytes (a file, never through a symlink).
    ///
    /// # Errors
    /// KA_FILE_NOT_FOUND, KA_FILE_IO (a folder, or unreadable).
    pub fn read(&self, t: &Target) -> Result<Vec<u8>, Failure> {
        let d = self.dir_of(t)?;
        read_in(&d, t, u64::MAX).map(Option::unwrap_or_default)
    }

    /// Reads a target's bytes as [`Workspace::read`] does, but at most `max` of them: `None`
    /// when the file holds more, without reading it into memory.
    ///
    /// # Errors
    /// As [`Workspace::read`].
    pub fn read_at_most(&self, t: &Target, max: u64) -> Result<Option<Vec<u8>>, Failure> {
        let d = self.dir_of(t)?;
        read_in(&d, t, max)
    }

    /// Writes `bytes` to a target atomically: a temp file beside keyless's own state (or, on
    /// another filesystem, beside the target), flushed, then renamed over the target through the
    /// folder's handle. The original's permissions are kept. `expect` guards against a concurrent
    /// writer: when given, the target must still hold exactly these bytes just before the rename.
    ///
    /// # Errors
    /// KA_FILE_IO; KA_FILE_CHANGED when the file changed since it was read. The target is then
    /// untouched and the temp file removed.
    pub fn write(&self, t: &Writable, bytes: &[u8], expect: Option<&[u8]>) -> Result<(), Failure> {
        let d = self.dir_for_write(t, true)?;
        if let Some(want) = expect {
            let record = format!(
                "{IN_PLACE}/{}-{}",
                std::process::id(),
                TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
            );
            let journal = || {
                self.save_state(&format!("{record}/old"), want)?;
                self.save_state(&format!("{record}/new"), bytes)?;
                // Written last: a record without its path is one that never began.
                self.save_state(&format!("{record}/path"), t.rel.as_bytes())
            };
            let done = write_in_place(&d, t, bytes, want, &journal);
            self.forget_in_place(&record);
            match done {
                InPlace::Written => return Ok(()),
                InPlace::Changed => return Err(changed_on_disk(t)),
                InPlace::Writer => {
                    return Err(Failure::new(
                        Code::FileChanged,
                        format!("another program has {} open for writing and may add to it at any moment; nothing was written. Retry when that program is done with it.", t.rel),
                    ))
                }
                InPlace::Failed(e) => return Err(Failure::io("cannot write", &t.rel, &e)),
                InPlace::Rename => {}
            }
        }
        let perms = d
            .symlink_metadata(&t.name)
            .ok()
            .filter(cap_std::fs::Metadata::is_file)
            .map(|m| m.permissions());
        let agent = self
            .agent()
            .map_err(|e| Failure::io("cannot prepare .agent for", &t.rel, &e))?;
        let tmp_name = temp_name(&t.name);
        // The temp file: in .agent/tmp when it can be renamed from there, else beside the target.
        let tmp_dir = agent
            .create_dir_all("tmp")
            .and_then(|()| agent.open_dir_nofollow("tmp"))
            .map_err(|e| Failure::io("cannot prepare .agent/tmp for", &t.rel, &e))?;
        write_new(&tmp_dir, &tmp_name, bytes, perms.clone())
            .map_err(|e| Failure::io("cannot write", &t.rel, &e))?;
        let check = |d: &Dir| -> Result<(), Failure> {
            if let Some(want) = expect {
                let now = read_in(d, t, u64::MAX).ok().flatten().unwrap_or_default();
                if now != want {
                    return Err(changed_on_disk(t));
                }
            }
            Ok(())
        };
        if let Err(f) = check(&d) {
            let _ = tmp_dir.remove_file(&tmp_name);
            return Err(f);
        }
        // Hold the original open: a writer that appends between the check above and the rename
        // below writes to it, and is seen after the rename.
        let original = expect
            .filter(|e| !e.is_empty())
            .and_then(|_| d.open_with(&t.name, &nofollow_read()).ok());
        match tmp_dir.rename(&tmp_name, &d, &t.name) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(18) => {
                // EXDEV: the target is on another filesystem; write the temp file beside it.
                let _ = tmp_dir.remove_file(&tmp_name);
                let record = format!("{}\n", join_rel(&t.dir, &tmp_name));
                let mut o = OpenOptions::new();
                o.append(true).create(true).follow(FollowSymlinks::No);
                if let Ok(mut j) = agent.open_with(JOURNAL, &o) {
                    let _ = j.write_all(record.as_bytes());
                }
                write_new(&d, &tmp_name, bytes, perms)
                    .map_err(|e| Failure::io("cannot write", &t.rel, &e))?;
                if let Err(f) = check(&d) {
                    let _ = d.remove_file(&tmp_name);
                    return Err(f);
                }
                d.rename(&tmp_name, &d, &t.name).map_err(|e| {
                    let _ = d.remove_file(&tmp_name);
                    Failure::io("cannot write", &t.rel, &e)
                })?;
            }
            Err(e) => {
                let _ = tmp_dir.remove_file(&tmp_name);
                return Err(Failure::io("cannot write", &t.rel, &e));
            }
        }
        if let (Some(want), Some(mut f)) = (expect, original) {
            // The original grew or changed after the check: put it back whole, with what the
            // other writer added, and report the conflict.
            let mut now = Vec::new();
            if f.seek(io::SeekFrom::Start(0)).is_ok()
                && f.read_to_end(&mut now).is_ok()
                && now != want
            {
                let _ = self.write(t, &now, None);
                return Err(Failure::new(
                    Code::FileChanged,
                    format!("{} changed on disk while the command ran (another program wrote it); its content is kept as the other program left it. Read it again, then retry.", t.rel),
                ));
            }
        }
        if let Ok(f) = d.open(".") {
            let _ = f.sync_all();
        }
        Ok(())
    }
}
