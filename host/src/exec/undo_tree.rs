//! What a command changed, kept for undo: the working tree written as a git tree before and
//! after each `@@runcommand`, through a private index and object store, and every file that
//! differs recorded in the batch's backup like a file command's.
//!
//! Invariants:
//! - nothing is written to the user's repository: the store is `.agent/undo.git`, a bare
//!   repository whose object lookups fall back on the user's objects (`objects/info/alternates`),
//!   so a tracked file's unchanged bytes are never copied, and whose index (seeded from the
//!   user's, for its file stat cache) makes a snapshot cost what changed, not the tree's size;
//! - bytes are kept exactly: `info/attributes` turns off every filter and line-ending conversion
//!   (it outranks the workspace's `.gitattributes`), and `core.autocrlf` is off;
//! - what a snapshot leaves out is said, never guessed: ignored files (`.gitignore`), files over
//!   [`MAX_FILE`], symbolic links and nested repositories are not kept for undo (docs/executor.md).

use super::backup::BatchBackup;
use super::workspace::Workspace;
use super::Failure;
use git2::{Delta, FileMode, IndexAddOption, Oid, Repository};
use std::path::Path;

/// A file larger than this is not kept for undo (a data file a build writes is not copied).
pub const MAX_FILE: u64 = 32 * 1024 * 1024;

/// The private store of a workspace's snapshots.
pub struct Shots {
    repo: Repository,
}

impl std::fmt::Debug for Shots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shots")
            .field("store", &self.repo.path())
            .finish()
    }
}

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
        if !dir.join("HEAD").is_file() {
            make(&dir, ws.root())?;
        }
        let repo = Repository::open_bare(&dir)?;
        repo.set_workdir(ws.root(), false)?;
        Ok(Self { repo })
    }

    /// The working tree as it is now (ignored files, links and files over [`MAX_FILE`] aside).
    ///
    /// # Errors
    /// When a file cannot be read or the store written.
    pub fn take(&self) -> Result<Shot, git2::Error> {
        let root = self
            .repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut index = self.repo.index()?;
        let mut keep = |path: &Path, _: &[u8]| -> i32 {
            let keep = std::fs::symlink_metadata(root.join(path))
                .is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE);
            i32::from(!keep)
        };
        index.add_all(["*"], IndexAddOption::DEFAULT, Some(&mut keep))?;
        index.update_all(["*"], None)?;
        // A file that grew past the bound, or became a link, since the last snapshot is left out.
        let stale: Vec<Vec<u8>> = index
            .iter()
            .filter(|e| {
                let p = root.join(String::from_utf8_lossy(&e.path).as_ref());
                !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE)
            })
            .map(|e| e.path)
            .collect();
        for p in stale {
            index.remove_path(Path::new(String::from_utf8_lossy(&p).as_ref()))?;
        }
        index.write()?;
        Ok(Shot(index.write_tree()?))
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
        let io = |e: git2::Error| {
            Failure::new(
                keyless_core::Code::FileIo,
                format!("cannot tell what the command changed: {}", e.message()),
            )
        };
        if before == after {
            return Ok(Vec::new());
        }
        let old = self.repo.find_tree(before.0).map_err(io)?;
        let new = self.repo.find_tree(after.0).map_err(io)?;
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(io)?;
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
                    let blob = self.repo.find_blob(o.id()).map_err(io)?;
                    backup.save(ws, &rel, blob.content())?;
                }
                _ => continue,
            }
            changed.push(rel);
        }
        Ok(changed)
    }
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
