//! The user's diff of a file command: the files it may change are read before it runs and again
//! after, and core says what changed ([`keyless_core::diff`]).

use super::workspace::Workspace;
use keyless_core::diff::{file_diff, FileDiff, Side, MAX_DIFF_INPUT_BYTES};
use keyless_core::{Command, CommandKind, SectionName};

/// One side of a file as read from the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Absent,
    Bytes(Vec<u8>),
    TooLarge,
}

impl Read {
    fn side(&self) -> Side<'_> {
        match self {
            Self::Absent => Side::Absent,
            Self::Bytes(b) => Side::Bytes(b),
            Self::TooLarge => Side::TooLarge,
        }
    }
}

/// Reads `rel` beneath the workspace handle, at most the size core diffs. Anything that is not a
/// readable regular file counts as absent.
#[must_use]
pub fn read(ws: &Workspace, rel: &str) -> Read {
    let Ok(t) = ws.resolve(rel) else {
        return Read::Absent;
    };
    match ws.read_at_most(&t, MAX_DIFF_INPUT_BYTES as u64) {
        Ok(Some(b)) => Read::Bytes(b),
        Ok(None) => Read::TooLarge,
        Err(_) => Read::Absent,
    }
}

/// The paths a command may change: `(where the content was, where it is after)`.
#[must_use]
pub fn touched(cmd: &Command) -> Option<(String, String)> {
    let arg = cmd.argument.as_deref().unwrap_or("").to_string();
    match cmd.kind {
        CommandKind::NewFile
        | CommandKind::UpdateFile
        | CommandKind::EditFile
        | CommandKind::DeleteFile => Some((arg.clone(), arg)),
        CommandKind::MoveFile => Some((
            arg,
            cmd.section_text(SectionName::To)
                .unwrap_or("")
                .trim()
                .to_string(),
        )),
        CommandKind::SshDownload => cmd.transfer().map(|t| (t.to.to_string(), t.to.to_string())),
        _ => None,
    }
}

/// A file command as the policy judges it: its paths resolved as the workspace resolves them
/// (a link `v -> .vscode` makes `v/tasks.json` the editor's tasks file), and an edit of a
/// package manifest as the whole file it will write (an `@@updatefile` of it), so the
/// persistence table reads what the next install will read.
#[must_use]
pub fn as_judged(ws: &Workspace, cmd: &Command) -> Command {
    let mut c = cmd.clone();
    let real = |rel: &str| ws.resolve(rel).map_or_else(|_| rel.to_string(), |t| t.rel);
    if let Some(a) = c.argument.as_deref().filter(|_| cmd.kind.takes_path()) {
        c.argument = Some(real(a));
    }
    if cmd.kind == CommandKind::MoveFile {
        for s in &mut c.sections {
            if s.name == SectionName::To {
                s.text = real(s.text.trim());
            }
        }
    }
    if cmd.kind == CommandKind::EditFile {
        let manifest = c
            .argument
            .as_deref()
            .and_then(|a| a.rsplit('/').next())
            .is_some_and(|n| n == "package.json" || n == "composer.json");
        if manifest {
            if let Some(b) = Before::take(ws, cmd) {
                if let Some(new) = b.edited(cmd) {
                    c.kind = CommandKind::UpdateFile;
                    c.sections = vec![keyless_core::reply::Section {
                        name: SectionName::Content,
                        nonce: None,
                        text: String::from_utf8_lossy(&new).into_owned(),
                        line: cmd.line,
                    }];
                }
            }
        }
    }
    c
}

/// What a command is about to change, read before it runs.
#[derive(Debug)]
pub struct Before {
    from: String,
    to: String,
    old: Read,
}

impl Before {
    #[must_use]
    pub fn take(ws: &Workspace, cmd: &Command) -> Option<Self> {
        let (from, to) = touched(cmd)?;
        let old = read(ws, &from);
        Some(Self { from, to, old })
    }

    /// The change, once the command has run.
    #[must_use]
    pub fn after(&self, ws: &Workspace) -> Vec<FileDiff> {
        let new = read(ws, &self.to);
        let from = (self.from != self.to).then_some(self.from.as_str());
        file_diff(&self.to, from, self.old.side(), new.side())
            .into_iter()
            .collect()
    }

    /// An edit's result, when its FIND occurs once in the file as it is.
    #[must_use]
    pub fn edited(&self, cmd: &Command) -> Option<Vec<u8>> {
        let (Read::Bytes(old), Some(find), Some(replace)) = (
            &self.old,
            cmd.section_text(SectionName::Find),
            cmd.section_text(SectionName::Replace),
        ) else {
            return None;
        };
        let text = String::from_utf8_lossy(old);
        (text.matches(find).count() == 1).then(|| text.replacen(find, replace, 1).into_bytes())
    }

    /// What the command would change, before it runs (the preview a confirmation shows): the
    /// deletion; a new or rewritten file's content; an edit's replacement when its FIND occurs
    /// once; a move. Empty when it cannot be told beforehand.
    #[must_use]
    pub fn preview(&self, cmd: &Command) -> Vec<FileDiff> {
        let new: Vec<u8> = match cmd.kind {
            CommandKind::DeleteFile => return self.deletion(),
            CommandKind::NewFile | CommandKind::UpdateFile => cmd
                .section_text(SectionName::Content)
                .unwrap_or("")
                .as_bytes()
                .to_vec(),
            CommandKind::EditFile => match self.edited(cmd) {
                Some(new) => new,
                None => return Vec::new(),
            },
            CommandKind::MoveFile => match &self.old {
                Read::Bytes(b) => b.clone(),
                _ => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        let (from, old) = if cmd.kind == CommandKind::MoveFile {
            (Some(self.from.as_str()), Side::Absent)
        } else {
            (None, self.old.side())
        };
        file_diff(&self.to, from, old, Side::Bytes(&new))
            .into_iter()
            .collect()
    }

    /// What the command would change when it deletes the file (the preview a confirmation of
    /// `@@deletefile` shows).
    #[must_use]
    pub fn deletion(&self) -> Vec<FileDiff> {
        file_diff(&self.from, None, self.old.side(), Side::Absent)
            .into_iter()
            .collect()
    }
}

/// Everything that changed in the workspace since `base` (the commit a session started from):
/// committed, staged and not, new files included, keyless's own `.agent` left out. At most
/// `max_files` files; the diffs come from core.
#[must_use]
pub fn since_commit(ws: &Workspace, base: &str, max_files: usize) -> Vec<FileDiff> {
    let Some(repo) = super::git::open_here(ws.root()) else {
        return Vec::new();
    };
    let Some(tree) = git2::Oid::from_str(base)
        .ok()
        .and_then(|id| repo.find_commit(id).ok())
        .and_then(|c| c.tree().ok())
    else {
        return Vec::new();
    };
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let Ok(diff) = repo.diff_tree_to_workdir_with_index(Some(&tree), Some(&mut opts)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in diff.deltas() {
        if out.len() >= max_files {
            break;
        }
        let old_path = d
            .old_file()
            .path()
            .map(|p| p.to_string_lossy().into_owned());
        let new_path = d
            .new_file()
            .path()
            .map(|p| p.to_string_lossy().into_owned());
        let path = new_path
            .clone()
            .or_else(|| old_path.clone())
            .unwrap_or_default();
        if path == ".agent" || path.starts_with(".agent/") {
            continue;
        }
        let old = match d.status() {
            git2::Delta::Added | git2::Delta::Untracked => Read::Absent,
            _ => repo.find_blob(d.old_file().id()).map_or(Read::Absent, |b| {
                let c = b.content();
                if c.len() > MAX_DIFF_INPUT_BYTES {
                    Read::TooLarge
                } else {
                    Read::Bytes(c.to_vec())
                }
            }),
        };
        let new = match d.status() {
            git2::Delta::Deleted => Read::Absent,
            _ => read(ws, &path),
        };
        let from = old_path.filter(|o| *o != path);
        out.extend(file_diff(&path, from.as_deref(), old.side(), new.side()));
    }
    out
}
