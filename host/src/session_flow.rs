//! The turn rules of a session, shared by `keyless-host run` and the HTTP API: store a batch's
//! outcome and move the session to its next turn and batch.

use crate::exec::batch::BatchOutcome;
use crate::store::{SessionState, Store, StoreError};
use keyless_core::{Control, Settings};

/// What a finished batch did to the turn.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    /// "done", "rejected".
    pub status: &'static str,
    /// The text the model receives.
    pub text: String,
    pub control: Option<&'static str>,
    /// Why the turn ended with this batch, if it did: "done", "MaxFormatRetries",
    /// "MaxIterationsPerTurn".
    pub turn_ended: Option<&'static str>,
}

/// Stores the outcome of batch `id` and advances `pos` (already saved when this returns).
/// `continue_turn` keeps a `@@done` from ending the turn (a piece moved on to its next movement).
///
/// # Errors
/// SQLite failures.
pub fn record(
    store: &Store,
    id: &str,
    pos: &mut SessionState,
    outcome: &BatchOutcome,
    settings: &Settings,
    raw_reply: &str,
    continue_turn: bool,
) -> Result<Step, StoreError> {
    let limits = settings.limits;
    let max_iterations = settings.effective_iterations_per_turn();
    let session = pos.id.clone();
    let (turn, batch) = (pos.turn, pos.batch);
    let step = match outcome {
        BatchOutcome::Rejected { correction } => {
            store.finish_batch(id, &session, "rejected", correction, None, &[])?;
            pos.invalid_in_a_row += 1;
            if pos.invalid_in_a_row >= limits.max_format_retries {
                let text = format!(
                    "turn {turn} stopped: {} invalid replies in a row (MaxFormatRetries = {}). The last reply, as received:\n{raw_reply}",
                    pos.invalid_in_a_row, limits.max_format_retries
                );
                Step {
                    status: "rejected",
                    text,
                    control: None,
                    turn_ended: Some("MaxFormatRetries"),
                }
            } else {
                pos.batch += 1;
                Step {
                    status: "rejected",
                    text: correction.clone(),
                    control: None,
                    turn_ended: None,
                }
            }
        }
        BatchOutcome::Executed {
            results,
            control,
            entries,
        } => {
            pos.invalid_in_a_row = 0;
            let c = if *control == Control::Done {
                "done"
            } else {
                "next"
            };
            store.finish_batch(id, &session, "done", results, Some(c), entries)?;
            let turn_ended = if *control == Control::Done && !continue_turn {
                Some("done")
            } else if batch >= max_iterations {
                Some("MaxIterationsPerTurn")
            } else {
                pos.batch += 1;
                None
            };
            Step {
                status: "done",
                text: results.clone(),
                control: Some(c),
                turn_ended,
            }
        }
    };
    if let Some(reason) = step.turn_ended {
        store.end_turn(&session, turn, reason)?;
        pos.turn += 1;
        pos.batch = 1;
        pos.invalid_in_a_row = 0;
    }
    store.save_position(pos)?;
    Ok(step)
}

/// Moves past a batch that was already stored (a retry), following its stored control.
///
/// # Errors
/// SQLite failures.
pub fn skip_stored(
    store: &Store,
    pos: &mut SessionState,
    control: Option<&str>,
) -> Result<(), StoreError> {
    if control == Some("done") {
        store.end_turn(&pos.id, pos.turn, "done")?;
        pos.turn += 1;
        pos.batch = 1;
    } else {
        pos.batch += 1;
    }
    store.save_position(pos)
}
