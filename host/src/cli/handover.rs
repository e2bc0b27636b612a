//! `:handover` in `run --interactive`: the session's record, read back from the store, made into
//! a handover by core and printed for pasting into a fresh chat (or written as a file to attach
//! when it is over the paste budget, the way long results go).

use crate::error::HostError;
use crate::exec::batch::ExecSettings;
use crate::exec::git::RepoRecord;
use crate::exec::workspace::Workspace;
use crate::store::{HistoryBatch, SessionState, Store};
use keyless_core::handover::{
    handover, AskRecord, BatchRecord, CommandLine, CommitRecord, SessionRecord, DEFAULT_PASTE_CHARS,
};
use keyless_core::message::ResultStatus;
use keyless_core::site::Delivery;
use keyless_core::{CommandKind, SectionName};
use std::io::Write;

/// The commands the interactive loop takes in place of a reply, for its prompt and `:help`.
pub(super) const COMMANDS_HELP: &str = "Commands (typed alone on a line instead of a reply):
  :handover [CHARS]  print a handover of this session for a new chat (paste budget CHARS, default 30000); the loop goes on with the next reply
  :help              this list";

/// What the session's record is read with.
pub(super) struct Source<'a> {
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
pub(super) fn record(src: &Source<'_>, pos: &SessionState) -> Result<SessionRecord, HostError> {
    let history = src.store.history(src.session).map_err(HostError::from)?;
    let task = src.store.task(src.session).map_err(HostError::from)?;
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

/// The paste budget a `:handover` line names (`None`: the line is not `:handover`).
///
/// # Errors
/// A budget that is not a whole number of characters.
pub(super) fn budget(line: &str) -> Option<Result<usize, String>> {
    let mut words = line.split_whitespace();
    if words.next() != Some(":handover") {
        return None;
    }
    Some(match (words.next(), words.next()) {
        (None, _) => Ok(DEFAULT_PASTE_CHARS),
        (Some(n), None) => n
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!(":handover takes a paste budget in characters, not \"{n}\"")),
        (Some(_), Some(_)) => Err(":handover takes at most one word, the paste budget".into()),
    })
}

/// Prints the handover (copied to the clipboard when there is one), or, over the budget, writes
/// it to `.agent/handover/` and prints the note to paste beside the attached file.
///
/// # Errors
/// When the store cannot be read.
pub(super) fn print(
    out: &mut impl Write,
    src: &Source<'_>,
    pos: &SessionState,
    budget: usize,
) -> Result<(), HostError> {
    let record = record(src, pos)?;
    let h = handover(&record, budget);
    let chars = h.text.chars().count();
    match &h.delivery {
        Delivery::Paste => {
            let copied = super::clipboard::copy_to_clipboard(&h.text, src.ws.root());
            let _ = writeln!(
                out,
                "--- handover: {chars} characters, within the paste budget of {budget}{} ---\n{}\n--- end of handover ---\nPaste it into a new chat, then paste the model's replies here as before.",
                if copied { " (on the clipboard)" } else { "" },
                keyless_core::text::printable(&h.text)
            );
        }
        Delivery::Attach { file_name, note } => {
            let path = src
                .ws
                .agent_dir()
                .and_then(|dir| {
                    let dir = dir.join("handover");
                    std::fs::create_dir_all(&dir)?;
                    let path = dir.join(file_name);
                    std::fs::write(&path, &h.text)?;
                    Ok(path)
                })
                .map_err(|e| HostError::Coded {
                    code: keyless_core::Code::FileIo,
                    message: format!("cannot write .agent/handover/{file_name}: {e}"),
                })?;
            let copied = super::clipboard::copy_to_clipboard(note, src.ws.root());
            let _ = writeln!(
                out,
                "--- handover: {chars} characters, over the paste budget of {budget} ---\nThe handover is in {}. Attach that file to a new chat and paste this note with it{}:\n{}\n--- end of handover ---\nThen paste the model's replies here as before.",
                path.display(),
                if copied { " (on the clipboard)" } else { "" },
                keyless_core::text::printable(note)
            );
        }
    }
    Ok(())
}
