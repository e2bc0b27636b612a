//! The backups that make every batch undoable: before a batch overwrites or removes a file its
//! bytes go to `.agent/backups/<session>/<turn>-<batch>/<n>/<path>`, with a manifest of what
//! was saved and what was created, and the commit HEAD named when the batch began. Undo writes
//! back through the workspace's one write check, newest change first.

use super::workspace::Workspace;
use super::Failure;
use std::io;
use std::path::Path;

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
    /// Relative to `.agent`.
    dir: String,
    entries: Vec<BackupEntry>,
    /// The commit HEAD named when the batch began: undo tells the commits made after it.
    head: Option<String>,
    /// Entries are being recorded in bulk: the manifest is written once, by [`Self::in_bulk`].
    bulk: bool,
    /// Copies were written in bulk without their own flush: the filesystem is flushed before the
    /// manifest is written.
    unsynced: bool,
}

/// In bulk, the first copies of a batch are still flushed one by one.
const SYNCED_IN_BULK: usize = 32;

impl BatchBackup {
    /// # Errors
    /// When the `.agent` folder cannot be created.
    pub fn new(ws: &Workspace, session: &str, turn: u32, batch: u32) -> io::Result<Self> {
        ws.agent_dir()?;
        let head = super::git::open_here(ws.root())
            .and_then(|r| r.head().ok().and_then(|h| h.target()))
            .map(|oid| oid.to_string());
        Ok(Self {
            dir: format!("backups/{session}/{turn}-{batch}"),
            entries: Vec::new(),
            head,
            bulk: false,
            unsynced: false,
        })
    }

    /// Keeps the bytes of `rel` before they are overwritten or removed.
    ///
    /// # Errors
    /// KA_FILE_IO: the command must not go on without its backup.
    pub fn save(&mut self, ws: &Workspace, rel: &str, bytes: &[u8]) -> Result<(), Failure> {
        let n = self.entries.len() + 1;
        let at = format!("{}/{n}/{rel}", self.dir);
        // In bulk, past the first few, the copies are flushed to the disk all at once, before
        // the manifest names them (one flush of the filesystem costs less than hundreds of
        // files' own, and more than a few when a build just wrote much else).
        if self.bulk && n > SYNCED_IN_BULK {
            self.unsynced = true;
            ws.save_state_unsynced(&at, bytes)
        } else {
            ws.save_state(&at, bytes)
        }
        .map_err(|e| Failure::io("cannot back up", rel, &e))?;
        self.entries.push(BackupEntry {
            path: rel.to_string(),
            existed: true,
        });
        if self.bulk {
            return Ok(());
        }
        self.write_manifest(ws)
            .map_err(|e| Failure::io("cannot record the backup of", rel, &e))
    }

    /// Records a file the batch created, so undo can remove it.
    ///
    /// # Errors
    /// KA_FILE_IO when the manifest cannot be written.
    pub fn created(&mut self, ws: &Workspace, rel: &str) -> Result<(), Failure> {
        self.entries.push(BackupEntry {
            path: rel.to_string(),
            existed: false,
        });
        if self.bulk {
            return Ok(());
        }
        self.write_manifest(ws)
            .map_err(|e| Failure::io("cannot record", rel, &e))
    }

    /// Records what `f` saves and creates with one manifest write at its end, instead of one per
    /// entry (a command that made 10,000 files costs one write, not 10,000 growing ones). The
    /// manifest is written even when `f` fails, so what was saved is never lost.
    ///
    /// # Errors
    /// `f`'s failure, or KA_FILE_IO when the manifest cannot be written.
    pub fn in_bulk<T>(
        &mut self,
        ws: &Workspace,
        f: impl FnOnce(&mut Self) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        self.bulk = true;
        let out = f(self);
        self.bulk = false;
        // A flush that fails still leaves the copies written: the manifest names them anyway.
        if std::mem::take(&mut self.unsynced) {
            if let Err(e) = ws.sync_state() {
                tracing::warn!(error = %e, "the backup's copies are not flushed to the disk yet");
            }
        }
        let written = self
            .write_manifest(ws)
            .map_err(|e| Failure::io("cannot record the backup of", "the command's files", &e));
        let out = out?;
        written.map(|()| out)
    }

    fn write_manifest(&self, ws: &Workspace) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(&self.entries).map_err(io::Error::other)?;
        if let Some(head) = &self.head {
            let at = format!("{}/head", self.dir);
            if ws.agent()?.symlink_metadata(&at).is_err() {
                ws.save_state(&at, head.as_bytes())?;
            }
        }
        ws.save_state(&format!("{}/manifest.json", self.dir), &json)
    }
}

/// Restores a batch (see [`undo`]) and renames its backup folder to `*.undone`, so it cannot be
/// undone twice.
///
/// # Errors
/// When the backup cannot be read or restored.
pub fn undo_batch(ws: &Workspace, backup_dir: &Path) -> io::Result<Vec<String>> {
    let restored = undo(ws, backup_dir)?;
    std::fs::rename(backup_dir, backup_dir.with_extension("undone"))?;
    Ok(restored)
}

/// Restores a batch from its backup folder, newest change first. Returns the restored paths.
///
/// # Errors
/// When the manifest cannot be read or a file cannot be restored.
pub fn undo(ws: &Workspace, backup_dir: &Path) -> io::Result<Vec<String>> {
    let manifest = std::fs::read(backup_dir.join("manifest.json"))?;
    let entries: Vec<BackupEntry> = serde_json::from_slice(&manifest).map_err(io::Error::other)?;
    let mut restored = Vec::new();
    for (i, e) in entries.iter().enumerate().rev() {
        // A manifest is keyless's, but a write is a write: the one check decides.
        let target = ws
            .writable(&e.path)
            .map_err(|f| io::Error::other(f.reason))?;
        if e.existed {
            let saved = std::fs::read(backup_dir.join((i + 1).to_string()).join(&e.path))?;
            ws.write(&target, &saved, None)
                .map_err(|f| io::Error::other(f.reason))?;
        } else if ws
            .dir_of(&target)
            .is_ok_and(|d| d.symlink_metadata(&target.name).is_ok_and(|m| m.is_file()))
        {
            ws.remove_file(&target)
                .map_err(|f| io::Error::other(f.reason))?;
        }
        restored.push(e.path.clone());
    }
    Ok(restored)
}
