//! What a command changed, kept for undo: the working tree written as a git tree before and
//! after each `@@runcommand`, through a private index and object store, and every file that
//! differs recorded in the batch's backup like a file command's.
//!
//! Invariants:
//! - nothing is written to the user's repository: the store is `.agent/undo.git`, a bare
//!   repository whose object lookups fall back on the user's objects (`objects/info/alternates`),
//!   so a tracked file's unchanged bytes are never copied, and whose index (seeded from the
//!   user's, for its file stat cache) makes a snapshot cost what changed, not the tree's size;
//! - a process looks at the whole tree once (its first snapshot); after that, while the
//!   workspace's change journal ([`super::journal`]) vouches for every folder, a snapshot adds to
//!   the index kept in memory only the paths the journal saw change, and anything it cannot vouch
//!   for (a lost event queue, a `.gitignore` changed, a changed file with another hard link, a
//!   command run outside the sandbox) makes the next snapshot a whole one again;
//! - bytes are kept exactly: `info/attributes` turns off every filter and line-ending conversion
//!   (it outranks the workspace's `.gitattributes`), and `core.autocrlf` is off;
//! - what a snapshot leaves out is said, never guessed: ignored files (`.gitignore`), files over
//!   [`MAX_FILE`], symbolic links and nested repositories are not kept for undo (docs/executor.md).

use super::backup::BatchBackup;
use super::workspace::Workspace;
use super::Failure;
use git2::{Delta, FileMode, IndexAddOption, Oid, Repository};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A file larger than this is not kept for undo (a data file a build writes is not copied).
pub const MAX_FILE: u64 = 32 * 1024 * 1024;

/// The private store of a workspace's snapshots (kept open for the life of the process, with
/// its index in memory).
pub struct Shots {
    store: Arc<Mutex<Store>>,
}

struct Store {
    repo: Repository,
    /// The last snapshot this process took: the index holds exactly it.
    last: Option<Oid>,
}

impl std::fmt::Debug for Shots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shots").finish_non_exhaustive()
    }
}

/// The stores this process has open, by workspace (a few at most).
static OPEN: Mutex<Vec<(PathBuf, Arc<Mutex<Store>>)>> = Mutex::new(Vec::new());

/// One snapshot: the tree of the working tree at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shot(Oid);

fn err(e: impl std::fmt::Display) -> git2::Error {
    git2::Error::from_str(&e.to_string())
}

impl Shots {
    /// Opens (or makes) `.agent/undo.git` for the workspace.
    ///
    /// # Errors
    /// When `.agent` or the store cannot be made.
    pub fn open(ws: &Workspace) -> Result<Self, git2::Error> {
        let dir = ws.agent_dir().map_err(err)?.join("undo.git");
        let mut all = OPEN.lock().map_err(err)?;
        if let Some((_, s)) = all.iter().find(|(d, _)| *d == dir) {
            // Still the same store (undo or a new session may have made it again).
            if dir.join("HEAD").is_file() {
                return Ok(Self { store: s.clone() });
            }
        }
        all.retain(|(d, _)| *d != dir);
        if !dir.join("HEAD").is_file() {
            make(&dir, ws.root())?;
        }
        let repo = Repository::open_bare(&dir)?;
        repo.set_workdir(ws.root(), false)?;
        let store = Arc::new(Mutex::new(Store { repo, last: None }));
        all.push((dir, store.clone()));
        if all.len() > 8 {
            all.remove(0);
        }
        Ok(Self { store })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Store>, git2::Error> {
        self.store.lock().map_err(err)
    }

    /// The working tree as it is now (ignored files, links and files over [`MAX_FILE`] aside).
    ///
    /// # Errors
    /// When a file cannot be read or the store written.
    ///
    /// `journal`: the command ran in the sandbox, so the workspace's change journal saw every
    /// change it made (a command outside it can write through links the journal cannot see).
    pub fn take(&self, journal: bool) -> Result<Shot, git2::Error> {
        let mut st = self.lock()?;
        let root = st.repo.workdir().map(Path::to_path_buf).unwrap_or_default();
        let real = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        // Taken every time, so what the journal reports is always relative to this snapshot.
        let changed =
            super::journal::running(&real).and_then(|j| j.lock().ok().map(|mut j| j.take_paths()));
        if let (true, Some(_), Some(super::journal::Changed::Some(paths))) =
            (journal, st.last, changed)
        {
            if let Some(shot) = incremental(&st.repo, &root, paths)? {
                st.last = Some(shot.0);
                return Ok(shot);
            }
        }
        let shot = whole(&st.repo, &root)?;
        st.last = Some(shot.0);
        Ok(shot)
    }

    /// Takes the first snapshot of this process ahead of time (a session's start, while the model
    /// writes its first reply), so that the first command's snapshots are as cheap as the later
    /// ones. Does nothing when this process has a snapshot of the workspace already.
    ///
    /// # Errors
    /// As [`Shots::take`].
    pub fn prime(&self) -> Result<(), git2::Error> {
        if self.lock()?.last.is_none() {
            self.take(true)?;
        }
        Ok(())
    }

    /// Records in `backup` every file that differs between `before` and `after`: the bytes it
    /// had, or that it did not exist. Returns the paths, in the order recorded.
    ///
    /// # Errors
    /// When the store cannot be read, or the backup written (the command's result says so).
    pub fn record(
        &self,
        ws: &Workspace,
        before: Shot,
        after: Shot,
        backup: &mut BatchBackup,
    ) -> Result<Vec<String>, Failure> {
        let st = self.lock().map_err(|e| {
            Failure::new(
                keyless_core::Code::FileIo,
                format!("cannot tell what the command changed: {}", e.message()),
            )
        })?;
        let repo = &st.repo;
        let io = |e: git2::Error| {
            Failure::new(
                keyless_core::Code::FileIo,
                format!("cannot tell what the command changed: {}", e.message()),
            )
        };
        if before == after {
            return Ok(Vec::new());
        }
        let old = repo.find_tree(before.0).map_err(io)?;
        let new = repo.find_tree(after.0).map_err(io)?;
        let diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(io)?;
        backup.in_bulk(ws, |backup| keep_deltas(ws, repo, &diff, backup))
    }
}

/// Each file of `diff` into `backup`: its bytes before, or that it did not exist. Returns the
/// paths, in the order recorded.
fn keep_deltas(
    ws: &Workspace,
    repo: &Repository,
    diff: &git2::Diff<'_>,
    backup: &mut BatchBackup,
) -> Result<Vec<String>, Failure> {
    let io = |e: git2::Error| {
        Failure::new(
            keyless_core::Code::FileIo,
            format!("cannot tell what the command changed: {}", e.message()),
        )
    };
    let mut changed = Vec::new();
    for d in diff.deltas() {
        let (o, n) = (d.old_file(), d.new_file());
        let Some(rel) = n
            .path()
            .or_else(|| o.path())
            .and_then(Path::to_str)
            .map(str::to_string)
        else {
            continue;
        };
        // keyless's own files and the user's config are never written back by undo.
        if ws.writable(&rel).is_err() {
            continue;
        }
        match d.status() {
            Delta::Added => backup.created(ws, &rel)?,
            Delta::Deleted | Delta::Modified | Delta::Typechange
                if o.mode() == FileMode::Blob || o.mode() == FileMode::BlobExecutable =>
            {
                let blob = repo.find_blob(o.id()).map_err(io)?;
                backup.save(ws, &rel, blob.content())?;
            }
            _ => continue,
        }
        changed.push(rel);
    }
    Ok(changed)
}

fn keep(m: &std::fs::Metadata) -> bool {
    m.is_file() && m.len() <= MAX_FILE
}

/// The whole working tree into the index, in one walk: git's comparison of the index with the
/// working tree (each file's stat against the index's, so an unchanged file is not read) names
/// every file made, changed, turned into another kind or removed since, and only those entries
/// change. The index is written for the next process's stat cache.
fn whole(repo: &Repository, root: &Path) -> Result<Shot, git2::Error> {
    let mut index = repo.index()?;
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_typechange(true)
        .ignore_submodules(true);
    let diff = repo.diff_index_to_workdir(Some(&index), Some(&mut opts))?;
    let changed: Vec<(PathBuf, Delta)> = diff
        .deltas()
        .filter_map(|d| {
            let p = d.new_file().path().or_else(|| d.old_file().path())?;
            Some((p.to_path_buf(), d.status()))
        })
        .collect();
    drop(diff);
    for (p, status) in changed {
        match status {
            Delta::Deleted => index.remove_path(&p)?,
            Delta::Untracked | Delta::Modified | Delta::Typechange | Delta::Added => {
                match std::fs::symlink_metadata(root.join(&p)) {
                    // A file that grew past the bound, or became a link, is left out; so is a
                    // folder (a repository nested in the workspace, which git does not enter).
                    Ok(m) if keep(&m) => index.add_path(&p)?,
                    Ok(m) if m.is_dir() => {}
                    _ => {
                        let _ = index.remove_path(&p);
                    }
                }
            }
            _ => {}
        }
    }
    // Only a stat cache for the next process: a write another process holds the lock of (or a
    // process stopped in the middle of one left locked) costs that process a slower first look.
    if let Err(e) = index.write() {
        tracing::debug!(error = %e.message(), "the undo store's index is not saved");
    }
    Ok(Shot(index.write_tree()?))
}

/// The last snapshot with only `paths` looked at again; `None` when they cannot say it all (the
/// caller then takes a whole one).
fn incremental(
    repo: &Repository,
    root: &Path,
    paths: std::collections::HashSet<String>,
) -> Result<Option<Shot>, git2::Error> {
    let mut index = repo.index()?;
    let mut paths: Vec<String> = paths.into_iter().collect();
    paths.sort();
    for rel in &paths {
        let p = Path::new(rel);
        let meta = std::fs::symlink_metadata(root.join(p));
        // Another link to a changed file (one in the sandbox's temp folder, say) may be written
        // where the journal sees only that link.
        if meta.as_ref().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_file() && m.nlink() > 1
        }) {
            return Ok(None);
        }
        if rel == ".agent" || rel.starts_with(".agent/") || rel.split('/').any(|c| c == ".git") {
            continue;
        }
        // Ignore rules changed: what is kept may change anywhere.
        if rel.rsplit('/').next() == Some(".gitignore") {
            return Ok(None);
        }
        if in_nested_repo(root, rel) {
            continue;
        }
        match meta {
            Ok(m) if m.is_dir() => {
                // A folder made or moved in: everything in it, and nothing that is gone.
                let mut add = |path: &Path, _: &[u8]| -> i32 {
                    i32::from(!std::fs::symlink_metadata(root.join(path)).is_ok_and(|m| keep(&m)))
                };
                let spec = [rel.as_str()];
                index.add_all(spec, IndexAddOption::DISABLE_PATHSPEC_MATCH, Some(&mut add))?;
                index.update_all(spec, None)?;
                let _ = index.remove_path(p);
            }
            Ok(m) if keep(&m) => {
                let _ = index.remove_dir(p, 0);
                if repo.is_path_ignored(p)? {
                    let _ = index.remove_path(p);
                } else {
                    index.add_path(p)?;
                }
            }
            _ => {
                let _ = index.remove_path(p);
                let _ = index.remove_dir(p, 0);
            }
        }
    }
    Ok(Some(Shot(index.write_tree()?)))
}

/// Whether `rel` is inside (or is) a repository nested in the workspace, which snapshots leave
/// out as `add_all` does.
fn in_nested_repo(root: &Path, rel: &str) -> bool {
    let mut at = root.to_path_buf();
    for seg in rel.split('/') {
        at.push(seg);
        if std::fs::symlink_metadata(at.join(".git")).is_ok() {
            return true;
        }
    }
    false
}

/// Makes the store: bare, its objects falling back on the user's repository, no filters.
fn make(dir: &Path, root: &Path) -> Result<(), git2::Error> {
    let repo = Repository::init_bare(dir)?;
    let mut cfg = repo.config()?;
    cfg.set_bool("core.autocrlf", false)?;
    cfg.set_str("core.safecrlf", "false")?;
    cfg.set_bool("core.symlinks", true)?;
    let info = dir.join("info");
    std::fs::create_dir_all(&info).map_err(err)?;
    std::fs::write(
        info.join("attributes"),
        "* -text -filter -ident -eol -diff\n",
    )
    .map_err(err)?;
    std::fs::write(info.join("exclude"), "/.agent/\n/.git\n").map_err(err)?;
    if let Some(user) = super::git::open_here(root) {
        let objects = user.commondir().join("objects");
        if objects.is_dir() {
            std::fs::write(
                dir.join("objects").join("info").join("alternates"),
                format!("{}\n", objects.display()),
            )
            .map_err(err)?;
            // The user's index knows every tracked file's stat: unchanged files are not read.
            if user.workdir().is_some_and(|w| same(w, root)) {
                let _ = std::fs::copy(user.path().join("index"), dir.join("index"));
            }
        }
    }
    Ok(())
}

fn same(a: &Path, b: &Path) -> bool {
    std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
}
