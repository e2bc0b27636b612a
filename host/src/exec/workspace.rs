//! The workspace: every path goes through [`Workspace::resolve`], writes are atomic, and anything
//! overwritten or removed is backed up first.

use super::Failure;
use keyless_core::Code;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// keyless's own folder inside the workspace.
pub const AGENT_DIR: &str = ".agent";

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// Opens a workspace folder (it must exist).
    ///
    /// # Errors
    /// When the folder does not exist or cannot be resolved.
    pub fn open(dir: &Path) -> io::Result<Self> {
        let root = fs::canonicalize(dir)?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a folder", root.display()),
            ));
        }
        Ok(Self { root })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a workspace-relative path. Applies the path rules, then walks the path one segment
    /// at a time: a symlink is followed only when its target stays inside the workspace and out of
    /// `.git` and `.agent`.
    ///
    /// # Errors
    /// KA_PATH_OUTSIDE for a path that breaks the rules or escapes; KA_FILE_IO when a segment cannot
    /// be inspected.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, Failure> {
        let norm = keyless_core::path::normalize(rel)
            .map_err(|p| Failure::new(Code::PathOutside, format!("{rel}: {p}")))?;
        let mut cur = self.root.clone();
        let mut segments = norm.split('/').peekable();
        while let Some(seg) = segments.next() {
            cur.push(seg);
            match fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    let target = fs::canonicalize(&cur).map_err(|_| {
                        Failure::new(
                            Code::PathOutside,
                            format!(
                                "{rel}: {} is a symlink whose target does not exist",
                                self.display(&cur)
                            ),
                        )
                    })?;
                    self.check_inside(rel, &target)?;
                    cur = target;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // The rest does not exist yet, so it cannot hold a symlink.
                    for rest in segments.by_ref() {
                        cur.push(rest);
                    }
                    break;
                }
                Err(e) => return Err(Failure::io("cannot inspect", rel, &e)),
            }
        }
        Ok(cur)
    }

    fn check_inside(&self, rel: &str, target: &Path) -> Result<(), Failure> {
        let Ok(inside) = target.strip_prefix(&self.root) else {
            return Err(Failure::new(
                Code::PathOutside,
                format!(
                    "{rel}: follows a symlink out of the workspace (to {})",
                    target.display()
                ),
            ));
        };
        let reserved = inside.components().any(|c| {
            let s = c.as_os_str().to_string_lossy().to_ascii_lowercase();
            let s = s.trim_end_matches(['.', ' ']);
            s == ".git" || s == ".agent"
        });
        if reserved {
            return Err(Failure::new(
                Code::PathOutside,
                format!("{rel}: follows a symlink into .git or .agent"),
            ));
        }
        Ok(())
    }

    /// A path for messages: relative to the workspace when inside it.
    #[must_use]
    pub fn display(&self, p: &Path) -> String {
        p.strip_prefix(&self.root)
            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
    }

    /// The `.agent` folder, created on first use and excluded from git.
    ///
    /// # Errors
    /// When the folder cannot be created.
    pub fn agent_dir(&self) -> io::Result<PathBuf> {
        let dir = self.root.join(AGENT_DIR);
        fs::create_dir_all(&dir)?;
        let exclude = self.root.join(".git").join("info").join("exclude");
        if exclude.parent().is_some_and(Path::is_dir) {
            let current = fs::read_to_string(&exclude).unwrap_or_default();
            if !current
                .lines()
                .any(|l| l.trim() == "/.agent/" || l.trim() == ".agent/" || l.trim() == "/.agent")
            {
                let mut f = fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&exclude)?;
                if !current.is_empty() && !current.ends_with('\n') {
                    writeln!(f)?;
                }
                writeln!(f, "/.agent/")?;
            }
        }
        Ok(dir)
    }
}

/// Writes `bytes` to `path` atomically: a temp file in the same folder, flushed to disk, then
/// renamed over the target. The original's permissions are kept. Parents must exist.
///
/// # Errors
/// Any I/O failure; the target is then untouched and the temp file removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.keyless-{}-{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Ok(meta) = fs::metadata(path) {
            fs::set_permissions(&tmp, meta.permissions())?;
        }
        fs::rename(&tmp, path)?;
        #[cfg(unix)]
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// What a backup entry restores.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackupEntry {
    /// Workspace-relative path of the original.
    pub path: String,
    /// True when the original existed (its bytes are in the backup folder); false when the batch
    /// created the file, so undo removes it.
    pub existed: bool,
}

/// The backups of one batch: `.agent/backups/<session>/<turn>-<batch>/<n>/<path>` plus a manifest.
#[derive(Debug)]
pub struct BatchBackup {
    dir: PathBuf,
    entries: Vec<BackupEntry>,
}

impl BatchBackup {
    /// # Errors
    /// When the `.agent` folder cannot be created.
    pub fn new(ws: &Workspace, session: &str, turn: u32, batch: u32) -> io::Result<Self> {
        let dir = ws
            .agent_dir()?
            .join("backups")
            .join(session)
            .join(format!("{turn}-{batch}"));
        Ok(Self {
            dir,
            entries: Vec::new(),
        })
    }

    /// Copies the bytes at `abs` before they are overwritten or removed.
    ///
    /// # Errors
    /// KA_FILE_IO: the command must not go on without its backup.
    pub fn save(&mut self, rel: &str, abs: &Path) -> Result<(), Failure> {
        let n = self.entries.len() + 1;
        let dest = self.dir.join(n.to_string()).join(rel);
        let go = || -> io::Result<()> {
            if let Some(p) = dest.parent() {
                fs::create_dir_all(p)?;
            }
            fs::copy(abs, &dest)?;
            Ok(())
        };
        go().map_err(|e| Failure::io("cannot back up", rel, &e))?;
        self.entries.push(BackupEntry {
            path: rel.to_string(),
            existed: true,
        });
        self.write_manifest()
            .map_err(|e| Failure::io("cannot record the backup of", rel, &e))
    }

    /// Records a file the batch created, so undo can remove it.
    ///
    /// # Errors
    /// KA_FILE_IO when the manifest cannot be written.
    pub fn created(&mut self, rel: &str) -> Result<(), Failure> {
        self.entries.push(BackupEntry {
            path: rel.to_string(),
            existed: false,
        });
        self.write_manifest()
            .map_err(|e| Failure::io("cannot record", rel, &e))
    }

    fn write_manifest(&self) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let json = serde_json::to_vec_pretty(&self.entries).map_err(io::Error::other)?;
        write_atomic(&self.dir.join("manifest.json"), &json)
    }
}

/// Restores a batch (see [`undo`]) and renames its backup folder to `*.undone`, so it cannot be
/// undone twice.
///
/// # Errors
/// When the backup cannot be read or restored.
pub fn undo_batch(ws: &Workspace, backup_dir: &Path) -> io::Result<Vec<String>> {
    let restored = undo(ws, backup_dir)?;
    fs::rename(backup_dir, backup_dir.with_extension("undone"))?;
    Ok(restored)
}

/// Restores a batch from its backup folder, newest change first. Returns the restored paths.
///
/// # Errors
/// When the manifest cannot be read or a file cannot be restored.
pub fn undo(ws: &Workspace, backup_dir: &Path) -> io::Result<Vec<String>> {
    let manifest = fs::read(backup_dir.join("manifest.json"))?;
    let entries: Vec<BackupEntry> = serde_json::from_slice(&manifest).map_err(io::Error::other)?;
    let mut restored = Vec::new();
    for (i, e) in entries.iter().enumerate().rev() {
        let target = ws
            .resolve(&e.path)
            .map_err(|f| io::Error::other(f.reason))?;
        if e.existed {
            let saved = fs::read(backup_dir.join((i + 1).to_string()).join(&e.path))?;
            if let Some(p) = target.parent() {
                fs::create_dir_all(p)?;
            }
            write_atomic(&target, &saved)?;
        } else if target.is_file() {
            fs::remove_file(&target)?;
        }
        restored.push(e.path.clone());
    }
    Ok(restored)
}
