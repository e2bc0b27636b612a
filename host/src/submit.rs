//! One submit path for `keyless-host run` and the HTTP API. Exactly once: the batch id is looked
//! up in the store, then begun, executed (one parse), and recorded. The turn rules (what the
//! outcome does to the session and its piece) are core's [`keyless_core::turn`]; this module only
//! reads and writes the store around them.

use crate::exec::batch::{BatchRun, ExecSettings, Executor, Prompter};
use crate::exec::git::RepoRecord;
use crate::exec::workspace::Workspace;
use crate::store::{SessionState, Store, StoreError};
use keyless_core::api::{PieceProgress, ReplyAnswer};
use keyless_core::turn::{self, BatchReport, BatchStatus, Position, TurnEnd};
use keyless_core::Control;
use std::path::Path;

/// Everything a batch runs against.
#[derive(Debug)]
pub struct Context<'a> {
    pub store: &'a Store,
    pub ws: &'a Workspace,
    /// The host's settings with the session's own mode and pace applied.
    pub cfg: &'a ExecSettings,
    pub repo: &'a RepoRecord,
    /// Someone judges the next reply before it is sent (the extension's views, through serve):
    /// the workspace's policy context is worked out after each batch and returned. The terminal
    /// judges each command as it runs, so `run` skips that look at the whole workspace.
    pub judge_next: bool,
}

/// What the submit path reports as it goes (the server turns these into its events).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    Started {
        batch_id: &'a str,
        turn: u32,
        batch: u32,
    },
    Finished {
        batch_id: &'a str,
        status: BatchStatus,
        turn_ended: Option<TurnEnd>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The batch is not the session's next one, or another submit stored it first.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Piece(#[from] crate::pieces::PieceError),
}

fn position(s: &SessionState) -> Position {
    Position {
        turn: s.turn,
        batch: s.batch,
        invalid_in_a_row: s.invalid_in_a_row,
    }
}

fn set_position(s: &mut SessionState, p: Position) {
    s.turn = p.turn;
    s.batch = p.batch;
    s.invalid_in_a_row = p.invalid_in_a_row;
}

/// Submits `reply` as batch `at` (default: the session's next batch) of session `pos`, which is
/// saved before this returns.
///
/// # Errors
/// Store failures, a batch that is not the session's next one, or a piece run that has ended.
pub fn submit(
    ctx: &Context<'_>,
    pos: &mut SessionState,
    reply: &str,
    at: Option<(u32, u32)>,
    prompter: &mut dyn Prompter,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<ReplyAnswer, SubmitError> {
    let store = ctx.store;
    let session = pos.id.clone();
    let (turn, batch) = at.unwrap_or((pos.turn, pos.batch));
    let id = keyless_core::plan::batch_id(&session, turn, batch, reply);
    if let Some(stored) = store.batch(&id)? {
        // Exactly once: a batch met again is answered from the store. One still "running" was
        // interrupted (the host stopped mid-batch) and is never run a second time.
        let status = BatchStatus::from_stored(&stored.status).unwrap_or(BatchStatus::Interrupted);
        let control = stored.control.as_deref().and_then(Control::from_name);
        // Met at the session's own position, the host stopped before moving past it: move now.
        let mut turn_ended = None;
        if (turn, batch) == (pos.turn, pos.batch) {
            let (next, ended) = turn::after_stored(position(pos), control);
            if let Some(reason) = ended {
                store.end_turn(&session, turn, reason.as_str())?;
            }
            set_position(pos, next);
            store.save_position(pos)?;
            turn_ended = ended;
        }
        let text = if status == BatchStatus::Interrupted {
            keyless_core::message::batch_interrupted(&id)
        } else {
            stored.text
        };
        let results = store.results(&id)?;
        let mut counts = keyless_core::message::BatchCounts::default();
        for r in &results {
            counts.add(r.status, r.code.as_deref());
        }
        let commands = results
            .iter()
            .map(|r| keyless_core::message::CommandEnd {
                number: r.number,
                status: r.status,
                code: r.code.clone(),
            })
            .collect();
        return Ok(ReplyAnswer {
            outcome: keyless_core::api::BatchOutcome::of(status, &counts),
            counts,
            commands,
            done_message: None,
            review: None,
            task_diff: Vec::new(),
            diff: results.into_iter().flat_map(|r| r.diff).collect(),
            batch_id: id,
            turn,
            batch,
            status,
            text,
            control,
            ended: turn_ended.map(|t| t.words().to_string()),
            turn_ended,
            stored: true,
            next_turn: pos.turn,
            next_batch: pos.batch,
            piece: None,
            // Kept by the last batch, or, where the terminal ran it, worked out now.
            context: match store
                .context(&session)?
                .and_then(|c| serde_json::from_str(&c).ok())
            {
                Some(c) => c,
                None => crate::exec::policy_context::context(ctx.ws.root(), None),
            },
        });
    }
    if (turn, batch) != (pos.turn, pos.batch) {
        return Err(SubmitError::Conflict(format!(
            "the session is at turn {} batch {}, not turn {turn} batch {batch}",
            pos.turn, pos.batch
        )));
    }
    // Loaded before the batch is begun: a run that has ended leaves no batch behind.
    let mut run = crate::pieces::resume(store, &session)?;
    if let Some(r) = run.as_mut() {
        crate::pieces::attach_tools(r, &ctx.cfg.tools, &session)?;
    }
    let ext = ctx.cfg.tools.extensions(
        run.as_ref()
            .map(|r| r.catalog().clone())
            .unwrap_or_default(),
    );
    let gate = run.as_ref().map(keyless_core::piece::run::PieceRun::tools);
    // Kept with the batch, so its views judge it as it ran.
    let gate_json = gate.as_ref().and_then(|g| serde_json::to_string(g).ok());
    if !store.begin_batch(&id, pos, reply, gate_json.as_deref())? {
        return Err(SubmitError::Conflict(format!(
            "batch {id} is already stored"
        )));
    }
    events(Event::Started {
        batch_id: &id,
        turn,
        batch,
    });
    let exec = Executor {
        ws: ctx.ws,
        cfg: ctx.cfg,
        session: &session,
        gate: gate.as_ref(),
        repo: ctx.repo,
        ext: Some(&ext),
    };
    let outcome = exec.execute(reply, turn, batch, prompter);
    let (core_outcome, control, entries, done) = match &outcome {
        BatchRun::Rejected { correction } => {
            (BatchReport::Rejected { correction }, None, &[][..], None)
        }
        BatchRun::Executed {
            results,
            control,
            entries,
            done,
            ..
        } => (
            BatchReport::Executed {
                results,
                control: *control,
            },
            Some(*control),
            entries.as_slice(),
            done.as_ref(),
        ),
    };
    let mut piece_move = match (run.as_mut(), control) {
        (Some(r), Some(c)) => turn::move_piece(&ctx.cfg.settings, position(pos), r, c, done),
        _ => None,
    };
    // The run stopped on a question: asked once, here, for this batch (a batch met again is
    // answered from the store above and asks nothing).
    if let (Some(r), Some(mv)) = (run.as_mut(), piece_move.as_mut()) {
        if let Some(question) = mv.question.clone() {
            let movement = r.movement().name.clone();
            let answer = prompter.piece_question(&question, &movement);
            turn::answer_question(r, mv, answer.as_deref());
        }
    }
    let step = turn::after_batch(
        &ctx.cfg.settings,
        position(pos),
        core_outcome,
        reply,
        piece_move.as_ref(),
    );
    store.finish_batch(
        &id,
        &session,
        step.status.as_str(),
        // The whole text the model received, piece note included: a batch met again is answered
        // with exactly it.
        &step.text,
        control.map(Control::as_str),
        entries,
    )?;
    if let Some(reason) = step.turn_ended {
        store.end_turn(&session, turn, reason.as_str())?;
    }
    set_position(pos, step.next);
    store.save_position(pos)?;
    let piece = match &run {
        Some(r) => {
            let snap = r.snapshot();
            crate::pieces::save(store, &session, &snap)?;
            Some(PieceProgress {
                state: snap.state,
                movement: snap.current,
                movement_runs: snap.movement_runs,
                tools: r.tools(),
            })
        }
        None => None,
    };
    // What the views judge the next reply with (the workspace may have changed).
    let context = if ctx.judge_next {
        refresh_context(store, &session, ctx.ws.root())?
    } else {
        // Nobody judges the next reply here: what was kept is out of date, so it goes.
        store.set_context(&session, "")?;
        keyless_core::policy::Context::default()
    };
    events(Event::Finished {
        batch_id: &id,
        status: step.status,
        turn_ended: step.turn_ended,
    });
    let (counts, commands, done_message, diff) = match &outcome {
        BatchRun::Executed {
            entries,
            done_message,
            ..
        } => (
            keyless_core::message::BatchCounts::of(entries),
            keyless_core::message::CommandEnd::of(entries),
            done_message.clone(),
            entries
                .iter()
                .flat_map(|e| e.diff.iter().cloned())
                .collect(),
        ),
        BatchRun::Rejected { .. } => (
            keyless_core::message::BatchCounts::default(),
            Vec::new(),
            None,
            Vec::new(),
        ),
    };
    let review = (step.turn_ended == Some(TurnEnd::Done))
        .then(|| crate::exec::git::review(ctx.ws.root(), ctx.repo))
        .flatten();
    let task_diff = match (&step.turn_ended, &ctx.repo.base_commit) {
        (Some(TurnEnd::Done), Some(base)) => crate::exec::diffs::since_commit(ctx.ws, base, 500),
        _ => Vec::new(),
    };
    Ok(ReplyAnswer {
        outcome: keyless_core::api::BatchOutcome::of(step.status, &counts),
        counts,
        commands,
        done_message,
        review,
        diff,
        task_diff,
        batch_id: id,
        turn,
        batch,
        status: step.status,
        text: step.text,
        control: step.control,
        ended: step.turn_ended.map(|t| t.words().to_string()),
        turn_ended: step.turn_ended,
        stored: false,
        next_turn: pos.turn,
        next_batch: pos.batch,
        piece,
        context,
    })
}

/// What the host knows of the workspace now, for the command policy ([`crate::exec::policy_context::context`]),
/// kept with the session: the views judge the next reply with it, and its batch is stored with it.
///
/// # Errors
/// SQLite failures.
pub fn refresh_context(
    store: &Store,
    session: &str,
    root: &Path,
) -> Result<keyless_core::policy::Context, StoreError> {
    let context = crate::exec::policy_context::context(root, None);
    if let Ok(json) = serde_json::to_string(&context) {
        store.set_context(session, &json)?;
    }
    Ok(context)
}

/// Records a new session's repository: on a protected branch the task gets a branch of its own
/// ([`crate::exec::git::start_session`]). Returns the record and, when a branch was made, what to
/// tell the user.
///
/// # Errors
/// SQLite failures.
pub fn start_repo(
    store: &Store,
    session: &str,
    root: &Path,
    git: &crate::exec::git::GitSettings,
    task: &str,
) -> Result<(RepoRecord, Option<String>), StoreError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    let (r, note) = crate::exec::git::start_session(root, git, task, now);
    store.set_repo(session, &r)?;
    Ok((r, note))
}

/// The repository recorded at the session's start; recorded now for a new session (or one made
/// before keyless recorded it).
///
/// # Errors
/// SQLite failures.
pub fn session_repo(store: &Store, session: &str, root: &Path) -> Result<RepoRecord, StoreError> {
    if let Some(r) = store.repo(session)? {
        return Ok(r);
    }
    let r = RepoRecord::capture(root);
    store.set_repo(session, &r)?;
    Ok(r)
}
