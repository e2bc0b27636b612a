//! Undo of a batch's file changes, aware of git: a batch whose files a later commit recorded is
//! not restored under that commit (it would leave the old file under a newer HEAD); the commit is
//! reverted instead (a new commit) when it was not pushed, and the user is told how when it was.
//! One rule for `keyless-host undo` and the dashboard's Undo.

use super::backup::{undo_batch, BackupEntry};
use super::git::{self, GitSettings};
use super::workspace::Workspace;
use super::Failure;
use crate::store::Store;
use keyless_core::Code;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A batch's backup folder.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// The batch's id, as `log` prints it (when the database knows it).
    pub id: Option<String>,
    /// `<session>/<turn>-<batch>`.
    pub label: String,
    #[serde(skip)]
    pub dir: PathBuf,
    pub undone: bool,
    pub files: Vec<String>,
    /// When the batch last changed a file (Unix seconds).
    pub at: i64,
    /// The commit HEAD named when the batch began (backups made before keyless kept it: none).
    #[serde(skip)]
    pub head: Option<String>,
}

/// A commit that recorded a batch's files after it ran.
#[derive(Debug, Clone, Serialize)]
pub struct LaterCommit {
    pub id: String,
    pub summary: String,
    /// On origin already (reachable from a remote-tracking branch).
    pub pushed: bool,
}

/// Whether a batch can be undone.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum State {
    Undoable,
    Undone,
    Committed { commits: Vec<LaterCommit> },
}

fn backups(ws: &Workspace) -> PathBuf {
    ws.root().join(".agent").join("backups")
}

fn store(ws: &Workspace) -> Option<Store> {
    let db = ws.root().join(".agent").join("keyless.db");
    db.is_file().then(|| Store::open(&db).ok()).flatten()
}

/// `<session>/<turn>-<batch>` split, when it is one (no other path can be named).
fn parse_label(label: &str) -> Option<(&str, u32, u32)> {
    let (session, pos) = label.split_once('/')?;
    let (turn, batch) = pos.split_once('-')?;
    let ok = !session.is_empty()
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then_some(())?;
    Some((session, turn.parse().ok()?, batch.parse().ok()?))
}

fn read_found(ws: &Workspace, db: Option<&Store>, label: &str) -> Option<Found> {
    let (session, turn, batch) = parse_label(label)?;
    let dir = backups(ws).join(label);
    let undone_dir = dir.with_extension("undone");
    let (dir, undone) = if dir.join("manifest.json").is_file() {
        (dir, false)
    } else if undone_dir.join("manifest.json").is_file() {
        (undone_dir, true)
    } else {
        return None;
    };
    let manifest = dir.join("manifest.json");
    let entries: Vec<BackupEntry> = std::fs::read(&manifest)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())?;
    let mut files: Vec<String> = Vec::new();
    for e in entries {
        if !files.contains(&e.path) {
            files.push(e.path);
        }
    }
    let at = std::fs::metadata(&manifest)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let id = db
        .and_then(|s| s.batch_at(session, turn, batch).ok().flatten())
        .map(|(id, _)| id);
    let head = std::fs::read_to_string(dir.join("head"))
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| git2::Oid::from_str(h).is_ok());
    Some(Found {
        id,
        label: label.to_string(),
        dir,
        undone,
        files,
        at,
        head,
    })
}

/// Finds a batch by the id `log` prints or by `<session>/<turn>-<batch>`.
///
/// # Errors
/// KA_BATCH_NOT_FOUND when there is no such batch, KA_UNDO_REFUSED when it changed no files.
pub fn find(ws: &Workspace, which: &str) -> Result<Found, Failure> {
    let which = which.trim().trim_end_matches(".undone");
    let db = store(ws);
    let not_found = || {
        Failure::new(
            Code::BatchNotFound,
            format!("no batch `{which}` in {}; `keyless-host undo --list` shows the batches that can be undone", ws.root().display()),
        )
    };
    if which.contains('/') {
        return read_found(ws, db.as_ref(), which).ok_or_else(not_found);
    }
    let detail = db
        .as_ref()
        .and_then(|s| s.batch_detail(which).ok().flatten())
        .ok_or_else(not_found)?;
    let label = format!("{}/{}-{}", detail.session, detail.turn, detail.batch);
    read_found(ws, db.as_ref(), &label).ok_or_else(|| {
        Failure::new(
            Code::UndoRefused,
            format!("batch {which} changed no files: there is nothing to undo"),
        )
    })
}

/// Every batch that changed files, newest first.
#[must_use]
pub fn list(ws: &Workspace) -> Vec<(Found, State)> {
    let db = store(ws);
    let mut all = Vec::new();
    let Ok(sessions) = std::fs::read_dir(backups(ws)) else {
        return all;
    };
    for s in sessions.filter_map(Result::ok) {
        let Ok(batches) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for b in batches.filter_map(Result::ok) {
            let name = b.file_name().to_string_lossy().into_owned();
            let label = format!(
                "{}/{}",
                s.file_name().to_string_lossy(),
                name.trim_end_matches(".undone")
            );
            if let Some(f) = read_found(ws, db.as_ref(), &label) {
                if all.iter().all(|(o, _): &(Found, State)| o.label != f.label) {
                    let st = state(ws, &f);
                    all.push((f, st));
                }
            }
        }
    }
    all.sort_by(|a, b| b.0.at.cmp(&a.0.at).then_with(|| b.0.label.cmp(&a.0.label)));
    all
}

/// Whether the batch can be undone now.
#[must_use]
pub fn state(ws: &Workspace, f: &Found) -> State {
    if f.undone {
        return State::Undone;
    }
    let commits = later_commits(ws.root(), &f.files, f.head.as_deref(), f.at);
    if commits.is_empty() {
        State::Undoable
    } else {
        State::Committed { commits }
    }
}

/// The commits on HEAD made after the batch that changed one of `files`, newest first: those not
/// reachable from the commit HEAD named when the batch began (`head`), or, for a backup without
/// it, those made at or after `since`.
fn later_commits(
    root: &Path,
    files: &[String],
    head_then: Option<&str>,
    since: i64,
) -> Vec<LaterCommit> {
    let Some(repo) = git::open_here(root) else {
        return Vec::new();
    };
    let Some(head) = repo.head().ok().and_then(|h| h.peel_to_commit().ok()) else {
        return Vec::new();
    };
    let remotes: Vec<git2::Oid> = repo
        .references_glob("refs/remotes/*")
        .map(|refs| {
            refs.filter_map(Result::ok)
                .filter_map(|r| r.target())
                .collect()
        })
        .unwrap_or_default();
    let then = head_then.and_then(|h| git2::Oid::from_str(h).ok());
    let mut out = Vec::new();
    let mut at = Some(head);
    // First-parent history, newest first, back to the batch (500 commits at most).
    for _ in 0..500 {
        let Some(c) = at.take() else { break };
        let before_batch = match then {
            Some(t) => c.id() == t || repo.graph_descendant_of(t, c.id()).unwrap_or(false),
            None => c.time().seconds() < since,
        };
        if before_batch {
            break;
        }
        let parent = c.parent(0).ok();
        let touched = repo
            .diff_tree_to_tree(
                parent.as_ref().and_then(|p| p.tree().ok()).as_ref(),
                c.tree().ok().as_ref(),
                None,
            )
            .map(|d| {
                d.deltas().any(|delta| {
                    [delta.old_file().path(), delta.new_file().path()]
                        .into_iter()
                        .flatten()
                        .any(|p| files.iter().any(|f| Path::new(f) == p))
                })
            })
            .unwrap_or(false);
        if touched {
            let pushed = remotes
                .iter()
                .any(|r| *r == c.id() || repo.graph_descendant_of(*r, c.id()).unwrap_or(false));
            out.push(LaterCommit {
                id: c.id().to_string(),
                summary: summary(&c),
                pushed,
            });
        }
        at = parent;
    }
    out
}

fn summary(c: &git2::Commit<'_>) -> String {
    String::from_utf8_lossy(c.summary_bytes().unwrap_or_default()).into_owned()
}

fn short(id: &str) -> &str {
    id.get(..10).unwrap_or(id)
}

/// Why a batch cannot be undone, in words that say what to do instead.
#[must_use]
pub fn refusal(f: &Found, st: &State) -> Option<Failure> {
    let name = f.id.as_deref().unwrap_or(&f.label);
    match st {
        State::Undoable => None,
        State::Undone => Some(Failure::new(
            Code::UndoRefused,
            format!("batch {name} was already undone; nothing changed"),
        )),
        State::Committed { commits } => {
            let list: Vec<String> = commits
                .iter()
                .map(|c| {
                    format!(
                        "{} \"{}\"{}",
                        short(&c.id),
                        c.summary,
                        if c.pushed { " (pushed)" } else { "" }
                    )
                })
                .collect();
            let how = if commits.iter().any(|c| c.pushed) {
                format!(
                    "it was pushed, so take it back with a new commit others get too: `git revert {}` and push",
                    commits.iter().map(|c| short(&c.id)).collect::<Vec<_>>().join(" ")
                )
            } else {
                format!(
                    "`keyless-host undo --batch {name} --revert` makes a new commit that takes {} back",
                    if commits.len() == 1 { "it" } else { "them" }
                )
            };
            Some(Failure::new(
                Code::UndoRefused,
                format!(
                    "a later commit recorded this batch's files ({}): restoring them would leave old files under a newer commit; {how}",
                    list.join(", ")
                ),
            ))
        }
    }
}

/// What a file holds, as git names it (its blob id), or `None` when it is not a file.
fn state_of(ws: &Workspace, rel: &str) -> Option<String> {
    let t = ws.resolve(rel).ok()?;
    let bytes = ws.read(&t).ok()?;
    git2::Oid::hash_object(git2::ObjectType::Blob, &bytes)
        .ok()
        .map(|o| o.to_string())
}

/// The name of the file that records what a batch left its files as.
const AFTER: &str = "after.json";

/// Records what the batch left each of its files as (`after.json` beside the manifest), once the
/// batch has run: undo compares it with the files as they are, so a change made after the batch
/// (a later batch, a command, the user's editor) is never overwritten unasked.
pub fn seal(ws: &Workspace, session: &str, turn: u32, batch: u32) {
    let Some(f) = read_found(ws, None, &format!("{session}/{turn}-{batch}")) else {
        return;
    };
    let after: std::collections::BTreeMap<&str, Option<String>> = f
        .files
        .iter()
        .map(|p| (p.as_str(), state_of(ws, p)))
        .collect();
    if let Ok(json) = serde_json::to_vec_pretty(&after) {
        if let Err(e) = std::fs::write(f.dir.join(AFTER), json) {
            tracing::warn!(error = %e, batch = f.label, "cannot record what the batch left its files as");
        }
    }
}

/// The batch's files that changed after it ran (a batch sealed before keyless recorded this:
/// none can be told).
#[must_use]
pub fn changed_since(ws: &Workspace, f: &Found) -> Vec<String> {
    let Some(after) = std::fs::read(f.dir.join(AFTER)).ok().and_then(|b| {
        serde_json::from_slice::<std::collections::BTreeMap<String, Option<String>>>(&b).ok()
    }) else {
        return Vec::new();
    };
    after
        .into_iter()
        .filter(|(p, want)| state_of(ws, p) != *want)
        .map(|(p, _)| p)
        .collect()
}

/// What undo did to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    pub path: String,
    /// The batch had made the file: undo removed it.
    pub removed: bool,
}

/// Restores the batch's files when nothing refuses it. Unless `force`, a file that changed after
/// the batch ran stops it (KA_UNDO_REFUSED naming the files), so nothing is overwritten unasked.
///
/// # Errors
/// KA_UNDO_REFUSED (see [`refusal`]), or the restore's failure.
pub fn undo(ws: &Workspace, f: &Found, force: bool) -> Result<Vec<Restored>, Failure> {
    if let Some(refused) = refusal(f, &state(ws, f)) {
        return Err(refused);
    }
    if !force {
        let later = changed_since(ws, f);
        if !later.is_empty() {
            let name = f.id.as_deref().unwrap_or(&f.label);
            return Err(Failure::new(
                Code::UndoRefused,
                format!(
                    "{} changed after batch {name} ran (by a later batch, a command or you): undo would overwrite {}; nothing changed. Undo the later batches first, or `keyless-host undo --batch {name} --force` to put back the batch's versions anyway",
                    later.join(", "),
                    if later.len() == 1 { "it" } else { "them" }
                ),
            ));
        }
    }
    let restored = undo_batch(ws, &f.dir)
        .map_err(|e| Failure::new(Code::FileIo, format!("undo failed: {e}")))?;
    let mut out: Vec<Restored> = Vec::new();
    for path in restored {
        if out.iter().all(|r| r.path != path) {
            let removed = state_of(ws, &path).is_none();
            out.push(Restored { path, removed });
        }
    }
    Ok(out)
}

/// Reverts the unpushed commits that recorded the batch's files, newest first, each as a new
/// commit. Every file the revert changes is written through the workspace's one write check.
///
/// # Errors
/// When there is nothing to revert, a commit was pushed, the branch is protected, a file has
/// changes not committed, the revert conflicts, or a write is refused.
pub fn revert(ws: &Workspace, s: &GitSettings, f: &Found) -> Result<Vec<String>, Failure> {
    let commits = match state(ws, f) {
        State::Committed { commits } => commits,
        other => {
            return Err(refusal(f, &other).unwrap_or_else(|| {
                Failure::new(
                    Code::UndoRefused,
                    "no commit recorded this batch's files: `keyless-host undo` restores them",
                )
            }))
        }
    };
    if let Some(c) = commits.iter().find(|c| c.pushed) {
        return Err(Failure::new(
            Code::UndoRefused,
            format!(
                "{} was pushed: revert it with git (`git revert {}`) and push, so others get the change too",
                short(&c.id),
                short(&c.id)
            ),
        ));
    }
    let repo = git::open_here(ws.root()).ok_or_else(|| {
        Failure::new(Code::NotAGitRepository, "the workspace is not a repository")
    })?;
    let branch = git::branch_name(&repo)?;
    git::refuse_protected(s, &branch)?;
    let mut made = Vec::new();
    for c in &commits {
        made.push(revert_one(ws, s, &repo, &c.id)?);
    }
    // The batch is taken back: it is not reverted (or undone) a second time.
    let _ = std::fs::rename(&f.dir, f.dir.with_extension("undone"));
    Ok(made)
}

fn revert_one(
    ws: &Workspace,
    s: &GitSettings,
    repo: &git2::Repository,
    id: &str,
) -> Result<String, Failure> {
    let err = |what: &str, e: &git2::Error| git::git_err(what, e);
    let oid = git2::Oid::from_str(id).map_err(|e| err("bad commit id", &e))?;
    let commit = repo
        .find_commit(oid)
        .map_err(|e| err("cannot read the commit", &e))?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| err("cannot read HEAD", &e))?;
    let mut merged = repo
        .revert_commit(&commit, &head, 0, None)
        .map_err(|e| err("cannot revert", &e))?;
    if merged.has_conflicts() {
        return Err(Failure::new(
            Code::UndoRefused,
            format!(
                "reverting {} conflicts with later changes; resolve it with `git revert {}`",
                short(id),
                short(id)
            ),
        ));
    }
    let tree_id = merged
        .write_tree_to(repo)
        .map_err(|e| err("cannot write the tree", &e))?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| err("cannot read the tree", &e))?;
    let head_tree = head
        .tree()
        .map_err(|e| err("cannot read HEAD's tree", &e))?;
    let diff = repo
        .diff_tree_to_tree(Some(&head_tree), Some(&tree), None)
        .map_err(|e| err("cannot compare the trees", &e))?;
    // What changes, checked before anything is written: every path passes the one write check
    // and holds what HEAD has (no change of the user's is overwritten).
    let mut plan: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    for d in diff.deltas() {
        let path = d
            .new_file()
            .path()
            .or_else(|| d.old_file().path())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let t = ws.writable(&path)?;
        let now = ws.read_at_most(&t, u64::MAX).ok().flatten();
        let in_head = head_tree
            .get_path(Path::new(&path))
            .ok()
            .and_then(|e| repo.find_blob(e.id()).ok())
            .map(|b| b.content().to_vec());
        if now != in_head {
            return Err(Failure::new(
                Code::UndoRefused,
                format!("{path} has changes that are not committed; commit or discard them first"),
            ));
        }
        let new = match d.status() {
            git2::Delta::Deleted => None,
            _ => Some(
                repo.find_blob(d.new_file().id())
                    .map_err(|e| err("cannot read a file of the revert", &e))?
                    .content()
                    .to_vec(),
            ),
        };
        plan.push((path, new));
    }
    let mut index = repo.index().map_err(|e| err("cannot open the index", &e))?;
    for (path, new) in &plan {
        let t = ws.writable(path)?;
        match new {
            Some(bytes) => {
                ws.write(&t, bytes, None)?;
                index
                    .add_path(Path::new(path))
                    .map_err(|e| err("cannot stage", &e))?;
            }
            None => {
                ws.remove_file(&t)?;
                index
                    .remove_path(Path::new(path))
                    .map_err(|e| err("cannot stage", &e))?;
            }
        }
    }
    index
        .write()
        .map_err(|e| err("cannot write the index", &e))?;
    let sig = repo
        .signature()
        .or_else(|_| git2::Signature::now(&s.fallback_name, &s.fallback_email))
        .map_err(|e| err("no commit identity", &e))?;
    let message = format!(
        "Revert \"{}\"\n\nThis reverts commit {id}.\n",
        summary(&commit)
    );
    let new = repo
        .commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&head])
        .map_err(|e| err("cannot commit the revert", &e))?;
    Ok(format!(
        "{} Revert \"{}\"",
        short(&new.to_string()),
        summary(&commit)
    ))
}
