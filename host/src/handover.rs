//! A session's record for a handover to a new chat ([`keyless_core::handover`]), read back from
//! the store: the same for `run --interactive`'s `:handover` and `serve`'s
//! `POST /v1/sessions/{id}/handover`.

use crate::exec::batch::ExecSettings;
use crate::exec::git::RepoRecord;
use crate::exec::workspace::Workspace;
use crate::store::{HistoryBatch, SessionState, Store, StoreError};
use keyless_core::handover::{AskRecord, BatchRecord, CommandLine, CommitRecord, SessionRecord};
use keyless_core::message::ResultStatus;
use keyless_core::{CommandKind, SectionName};

/// What the session's record is read with.
#[derive(Debug)]
pub struct Source<'a> {
    pub store: &'a Store,
    pub ws: &'a Workspace,
    pub repo: &'a RepoRecord,
    pub exec: &'a ExecSettings,
    pub session: &'a str,
    /// The system prompt without its task and movement.
    pub system_prompt: &'a str,
}

/// The session's record as the store holds it, with the next reply's numbers.
///
/// # Errors
/// When the store cannot be read.
pub fn record(src: &Source<'_>, pos: &SessionState) -> Result<SessionRecord, StoreError> {
    let history = src.store.history(src.session)?;
    let task = src.store.task(src.session)?;
    let movement = crate::pieces::resume(src.store, src.session)
        .ok()
        .flatten()
        .map(|mut run| {
            let _ = crate::pieces::attach_tools(&mut run, &src.exec.tools, src.session);
            keyless_core::message::movement_prompt(&run)
        });
    let changed = match &src.repo.base_commit {
        Some(base) => crate::exec::diffs::since_commit(src.ws, base, 500),
        None => stored_changes(&history),
    };
    let limits = &src.exec.settings.limits;
    let mut commits = Vec::new();
    let mut asks = Vec::new();
    for b in &history {
        let reply = keyless_core::parse(&b.reply, limits).reply;
        for r in &b.results {
            match r.kind {
                CommandKind::Commit if r.status == ResultStatus::Ok => {
                    if let Some(note) = r.note.as_deref().filter(|n| n.starts_with("committed ")) {
                        commits.push(CommitRecord {
                            turn: b.turn,
                            batch: b.batch,
                            summary: note.lines().next().unwrap_or("").to_string(),
                            pushed: note.lines().any(|l| l.starts_with("pushed to ")),
                        });
                    }
                }
                CommandKind::Ask => {
                    let question = reply
                        .commands
                        .iter()
                        .find(|c| c.number == r.number && c.kind == CommandKind::Ask)
                        .and_then(|c| c.section_text(SectionName::Msg))
                        .map_or_else(|| r.target.clone(), |q| q.trim().to_string());
                    asks.push(AskRecord {
                        turn: b.turn,
                        batch: b.batch,
                        question,
                        answer: r.note.clone().filter(|_| r.status == ResultStatus::Ok),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(SessionRecord {
        session: src.session.to_string(),
        system_prompt: src.system_prompt.to_string(),
        task,
        batches: history.iter().map(batch_record).collect(),
        changed,
        commits,
        last_results: history
            .last()
            .map(|b| b.text.clone())
            .filter(|t| !t.is_empty()),
        asks,
        movement,
        next_turn: pos.turn,
        next_batch: pos.batch,
    })
}

fn batch_record(b: &HistoryBatch) -> BatchRecord {
    BatchRecord {
        turn: b.turn,
        batch: b.batch,
        status: b.status,
        commands: b
            .results
            .iter()
            .map(|r| CommandLine {
                number: r.number,
                kind: r.kind,
                target: r.target.clone(),
                status: r.status,
                code: r.code.clone(),
            })
            .collect(),
    }
}

/// Without a commit to compare with: each file's latest stored change.
fn stored_changes(history: &[HistoryBatch]) -> Vec<keyless_core::diff::FileDiff> {
    let mut out: Vec<keyless_core::diff::FileDiff> = Vec::new();
    for d in history
        .iter()
        .flat_map(|b| &b.results)
        .flat_map(|r| &r.diff)
    {
        out.retain(|o| o.path != d.path);
        out.push(d.clone());
    }
    out
}
