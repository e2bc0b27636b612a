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
}

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
        })
    }

    /// Keeps the bytes of `rel` before they are overwritten or removed.
    ///
    /// # Errors
    /// KA_FILE_IO: the command must not go on without its backup.
    pub fn save(&mut self, ws: &Workspace, rel: &str, bytes: &[u8]) -> Result<(), Failure> {
        let n = self.entries.len() + 1;
        ws.save_state(&format!("{}/{n}/{rel}", self.dir), bytes)
            .map_err(|e| Failure::io("cannot back up", rel, &e))?;
        self.entries.push(BackupEntry {
            path: rel.to_string(),
            existed: true,
        });
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
        self.write_manifest(ws)
            .map_err(|e| Failure::io("cannot record", rel, &e))
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
