//! `keyless-host undo` and `log`: the batches a workspace's sessions ran, their diffs, and
//! restoring one batch's files.

use super::terminal::shown;
use crate::config::{exec_settings, load_config, Loaded};
use crate::error::HostError;
use crate::exec::workspace::Workspace;
use crate::store::Store;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

/// The workspace as undo and log read it: a write a killed keyless left half done is finished
/// first, so what they list and restore is what the files hold.
fn open_workspace(workspace: &Path) -> Result<Workspace, HostError> {
    let ws = Workspace::open(workspace).map_err(|source| HostError::Read {
        path: workspace.display().to_string(),
        source,
    })?;
    ws.recover_in_place();
    Ok(ws)
}

/// `keyless-host undo`: restores one batch's files (the newest that can be undone by default),
/// lists the batches, or reverts the commits that recorded a batch.
///
/// # Errors
/// KA_BATCH_NOT_FOUND, KA_UNDO_REFUSED (undone already, or a later commit recorded the files),
/// or the restore's failure.
pub fn undo_cmd(
    workspace: &Path,
    batch: Option<&str>,
    list: bool,
    revert: bool,
    force: bool,
) -> Result<ExitCode, HostError> {
    use crate::exec::undo::{self, State};
    let ws = open_workspace(workspace)?;
    let fail = |f: crate::exec::Failure| HostError::Coded {
        code: f.code,
        message: f.reason,
    };
    let mut out = io::stdout().lock();
    if list {
        let all = undo::list(&ws);
        if all.is_empty() {
            let _ = writeln!(
                out,
                "No batch changed files in {} yet.",
                ws.root().display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let _ = writeln!(
            out,
            "{:<16} {:<22} {:<20} {:>5}  STATE",
            "ID", "BATCH", "WHEN", "FILES"
        );
        for (f, st) in &all {
            let state = match st {
                State::Undoable => "can be undone".to_string(),
                State::Undone => "undone".to_string(),
                State::Committed { commits } => format!(
                    "committed in {}{}",
                    commits
                        .iter()
                        .map(|c| c.id.get(..10).unwrap_or(&c.id))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if commits.iter().any(|c| c.pushed) {
                        " (pushed)"
                    } else {
                        " (--revert)"
                    }
                ),
            };
            let _ = writeln!(
                out,
                "{:<16} {:<22} {:<20} {:>5}  {state}",
                f.id.as_deref().unwrap_or("-"),
                f.label,
                local_time(f.at),
                f.files.len()
            );
            // The batch's files, whoever changed them (file commands and commands alike).
            const SHOWN: usize = 6;
            let mut names: Vec<String> = f
                .files
                .iter()
                .take(SHOWN)
                .map(|p| keyless_core::text::printable(p))
                .collect();
            if f.files.len() > SHOWN {
                names.push(format!("+{} more", f.files.len() - SHOWN));
            }
            let _ = writeln!(out, "{:<16} {}", "", names.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let found = match batch {
        Some(b) => undo::find(&ws, b).map_err(fail)?,
        // The newest batch not undone yet: `undo` again goes one batch further back, and a batch
        // a commit recorded stops it with the reason.
        None => undo::list(&ws)
            .into_iter()
            .find(|(_, st)| !matches!(st, State::Undone))
            .map(|(f, _)| f)
            .ok_or_else(|| HostError::Coded {
                code: keyless_core::Code::BatchNotFound,
                message: format!(
                    "no batch in {} is left to undo (`keyless-host undo --list` shows them all)",
                    ws.root().display()
                ),
            })?,
    };
    let name = found.id.clone().unwrap_or_else(|| found.label.clone());
    if revert {
        let Loaded { cfg, .. } = load_config(ws.root())?;
        let exec = exec_settings(&cfg, false, ws.root(), false);
        let made = undo::revert(&ws, &exec.git, &found).map_err(fail)?;
        let _ = writeln!(out, "reverted the commits that recorded batch {name}:");
        for m in made {
            let _ = writeln!(out, "  new commit {m}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let restored = undo::undo(&ws, &found, force).map_err(fail)?;
    let _ = writeln!(
        out,
        "undid batch {name} ({}): {} {}",
        found.label,
        restored.len(),
        if restored.len() == 1 { "file" } else { "files" }
    );
    for r in restored {
        let what = if r.removed {
            "removed (the batch made it)"
        } else {
            "restored"
        };
        let _ = writeln!(out, "  {what} {}", keyless_core::text::printable(&r.path));
    }
    Ok(ExitCode::SUCCESS)
}

/// Unix seconds as the local date and time (`YYYY-MM-DD HH:MM:SS`).
fn local_time(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0).map_or_else(
        || secs.to_string(),
        |t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        },
    )
}

/// `keyless-host log --diff ID`: a batch's commands and the diffs of the files they changed; for
/// a session's id, everything the session changed since the commit it started from.
///
/// # Errors
/// KA_BATCH_NOT_FOUND, or the database cannot be read.
pub fn log_diff_cmd(workspace: &Path, batch: &str, json: bool) -> Result<ExitCode, HostError> {
    let db = workspace.join(".agent").join("keyless.db");
    let not_found = || HostError::Coded {
        code: keyless_core::Code::BatchNotFound,
        message: if batch.is_empty() {
            format!(
                "no batch in {} yet: nothing has run there",
                crate::dirs::real_path(workspace).display()
            )
        } else {
            format!(
                "no batch or session `{batch}` in {} (the BATCH and SESSION columns of `keyless-host log` have the ids)",
                crate::dirs::real_path(workspace).display()
            )
        },
    };
    if !db.is_file() {
        return Err(not_found());
    }
    let store = Store::open(&db).map_err(HostError::from)?;
    // `log --diff` with no id: the newest batch.
    let newest;
    let batch = if batch.is_empty() {
        newest = store
            .newest_batch()
            .map_err(HostError::from)?
            .ok_or_else(not_found)?;
        newest.as_str()
    } else {
        batch
    };
    if store.session(batch).is_ok() {
        let base = store
            .repo(batch)
            .map_err(HostError::from)?
            .and_then(|r| r.base_commit);
        let ws = open_workspace(workspace)?;
        let all = base
            .as_deref()
            .map(|b| crate::exec::diffs::since_commit(&ws, b, 500))
            .unwrap_or_default();
        let mut out = io::stdout().lock();
        if json {
            let _ = serde_json::to_writer(&mut out, &all);
            let _ = writeln!(out);
        } else if base.is_none() {
            let _ = writeln!(out, "session {batch} started outside a git repository (or before its first commit): there is no commit to compare with; `log --diff BATCH` shows each batch.");
        } else if all.is_empty() {
            let _ = writeln!(
                out,
                "Nothing differs from the commit session {batch} started from."
            );
        } else {
            let _ = write!(
                out,
                "session {batch}: what differs from the commit it started from (changes not committed before it included):\n{}\n{}",
                keyless_core::diff::stat(&all),
                keyless_core::diff::render(&all)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let detail = store
        .batch_detail(batch)
        .map_err(HostError::from)?
        .ok_or_else(not_found)?;
    let results = store.results(batch).map_err(HostError::from)?;
    let mut out = io::stdout().lock();
    if json {
        let _ = serde_json::to_writer(&mut out, &results);
        let _ = writeln!(out);
        return Ok(ExitCode::SUCCESS);
    }
    let _ = writeln!(
        out,
        "batch {batch}: session {}, turn {}, batch {} ({})",
        detail.session,
        detail.turn,
        detail.batch,
        detail.status.as_str()
    );
    let all: Vec<keyless_core::diff::FileDiff> = results
        .iter()
        .flat_map(|r| r.diff.iter().cloned())
        .collect();
    if all.is_empty() {
        let _ = writeln!(out, "It changed no files.");
    } else {
        let _ = write!(
            out,
            "{}\n{}",
            keyless_core::diff::stat(&all),
            keyless_core::diff::render(&all)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `keyless-host log`: the audit trail of file changes and commands.
///
/// # Errors
/// When the workspace or its database cannot be read, or the session is unknown.
pub fn log_cmd(
    workspace: &Path,
    session: Option<&str>,
    limit: u32,
    json: bool,
) -> Result<ExitCode, HostError> {
    let ws = open_workspace(workspace)?;
    let db = ws.root().join(".agent").join("keyless.db");
    if !db.is_file() {
        return Err(HostError::Usage(format!(
            "{} no sessions in this workspace yet (expected on first run)",
            keyless_core::Code::SessionNotFound
        )));
    }
    let store = Store::open(&db).map_err(HostError::from)?;
    if let Some(s) = session {
        store.session(s).map_err(HostError::from)?;
    }
    let entries = store.audit(session, limit).map_err(HostError::from)?;
    let mut out = io::stdout().lock();
    if json {
        let _ = serde_json::to_writer(&mut out, &entries);
        let _ = writeln!(out);
    } else {
        // Columns as wide as their widest cell, so TARGET lines up whatever the ids' lengths.
        let rows: Vec<[String; 6]> = entries
            .iter()
            .map(|e| {
                let status = match e.code.as_deref() {
                    Some(c) => format!("{} {c}", e.status.as_str()),
                    None => e.status.as_str().to_string(),
                };
                [
                    local_time(e.at),
                    shown(&e.session),
                    shown(&e.batch),
                    e.command.clone(),
                    status,
                    shown(&e.target),
                ]
            })
            .collect();
        let head = ["WHEN", "SESSION", "BATCH", "COMMAND", "STATUS", "TARGET"];
        let mut width = head.map(|h| h.chars().count());
        for r in &rows {
            for (w, cell) in width.iter_mut().zip(r.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 6]| {
            let mut s = String::new();
            for (i, (cell, w)) in cells.iter().zip(width.iter()).enumerate() {
                if i == 5 {
                    s.push_str(cell);
                } else {
                    s.push_str(&format!("{cell:<w$}  "));
                }
            }
            s
        };
        let _ = writeln!(out, "{}", line(head));
        for r in &rows {
            let _ = writeln!(out, "{}", line(r.each_ref().map(String::as_str)));
        }
        let _ = writeln!(
            out,
            "{} entr{} (times are local; `log --diff BATCH` shows what a batch changed)",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
