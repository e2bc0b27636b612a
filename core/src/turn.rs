//! The turn engine: what a batch's outcome does to the session, decided once for `keyless-host
//! run` and the HTTP API. It takes the settings, the session's position, the piece run and the
//! batch's outcome, and returns a typed step: the batch's status, why the turn ended (if it did),
//! the text the model receives, the piece transition and the next position. No I/O: the host
//! stores what it returns.

use crate::message;
use crate::piece::run::{Directive, Fallback, PieceRun, RunState, Step};
use crate::{Control, Settings};
use serde::{Deserialize, Serialize};

/// A stored batch's status. Serialised to the strings the store and the API have always used.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchStatus {
    /// Begun and not finished; found again later, it was interrupted (the host stopped).
    Running,
    /// Executed (whatever its commands' outcomes).
    Done,
    /// The reply broke the format; nothing ran.
    Rejected,
    /// A `running` batch met again: it is never run a second time.
    Interrupted,
}

impl BatchStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Rejected => "rejected",
            Self::Interrupted => "interrupted",
        }
    }

    /// Reads the stored spelling back as it is (a `running` batch stays `running`).
    #[must_use]
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "running" => Some(Self::Running),
            "interrupted" => Some(Self::Interrupted),
            "done" => Some(Self::Done),
            "rejected" => Some(Self::Rejected),
            _ => None,
        }
    }

    /// The status of a batch read back from the store: one still `running` was interrupted.
    #[must_use]
    pub fn from_stored(s: &str) -> Option<Self> {
        match s {
            "running" | "interrupted" => Some(Self::Interrupted),
            "done" => Some(Self::Done),
            "rejected" => Some(Self::Rejected),
            _ => None,
        }
    }
}

/// Why a turn ended. Serialised to the strings the store and the API have always used.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TurnEnd {
    /// The model sent `@@done` (and no piece moved on to another movement).
    #[serde(rename = "done")]
    Done,
    /// `Limits.MaxFormatRetries` invalid replies in a row.
    MaxFormatRetries,
    /// The turn reached its batch budget.
    MaxIterationsPerTurn,
    /// The piece stopped on a question nobody answered (the seed's needs_user_input).
    #[serde(rename = "needs_user_input")]
    NeedsUserInput,
}

impl TurnEnd {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::MaxFormatRetries => "MaxFormatRetries",
            Self::MaxIterationsPerTurn => "MaxIterationsPerTurn",
            Self::NeedsUserInput => "needs_user_input",
        }
    }

    /// Why the turn ended, in the words every view shows (never the raw name).
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            Self::Done => "finished (@@done)",
            Self::NeedsUserInput => "waiting for your answer",
            Self::MaxIterationsPerTurn => "stopped: too many batches in a turn",
            Self::MaxFormatRetries => "stopped: the replies kept breaking the format",
        }
    }

    /// Reads the stored spelling back.
    #[must_use]
    pub fn from_name(s: &str) -> Option<Self> {
        [
            Self::Done,
            Self::MaxFormatRetries,
            Self::MaxIterationsPerTurn,
            Self::NeedsUserInput,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// Where a session stands: the turn and batch the next reply is, and the invalid replies in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub turn: u32,
    pub batch: u32,
    pub invalid_in_a_row: u32,
}

impl Position {
    /// The next turn's first batch.
    fn next_turn(self) -> Self {
        Self {
            turn: self.turn + 1,
            batch: 1,
            invalid_in_a_row: 0,
        }
    }
}

/// What a batch did, as the turn engine needs it (the host's owned form is its `BatchRun`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchReport<'a> {
    /// The reply broke the format; `correction` is the format-error message.
    Rejected { correction: &'a str },
    /// The batch ran; `results` is the results message.
    Executed { results: &'a str, control: Control },
}

/// What a finished batch does to the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnStep {
    pub status: BatchStatus,
    /// The text the model receives.
    pub text: String,
    pub control: Option<Control>,
    /// Why the turn ended with this batch, if it did.
    pub turn_ended: Option<TurnEnd>,
    /// Where the session stands after this batch.
    pub next: Position,
}

/// A piece's move after a batch: its `@@done`, or a `default_next` fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceMove {
    /// The piece goes on (another movement, an answer or subtasks): the turn does not end.
    pub continues: bool,
    /// The question the run stopped on. The host asks the user once and passes the answer (or
    /// none) to [`answer_question`].
    pub question: Option<String>,
    /// Why the run moved as it did (a limit, a fallback), ahead of where it now stands.
    why: String,
    /// The `[KEYLESSAGENT PIECE]` note (and the next movement's prompt) for the model.
    pub note: String,
}

impl PieceMove {
    /// A move with its note only (tests and refusals).
    #[must_use]
    pub fn note(continues: bool, note: &str) -> Self {
        Self {
            continues,
            question: None,
            why: String::new(),
            note: note.to_string(),
        }
    }

    /// The move a step of the run makes, with the text for where the run now stands.
    fn from_step(run: &PieceRun, step: &Step) -> Self {
        // An abort's reason already says why.
        if let RunState::Aborted { reason } = &step.state {
            return Self::note(false, &message::piece_aborted(reason));
        }
        let why = step
            .note
            .as_deref()
            .map(message::piece_note)
            .unwrap_or_default();
        let (continues, question, now) = match &step.state {
            RunState::Running { .. } => (true, None, message::movement_prompt(run)),
            RunState::NeedsUserInput { question, .. } => (
                false,
                Some(question.clone()),
                message::piece_needs_user_input(question),
            ),
            RunState::WaitingForSubtasks { .. } => {
                (true, None, message::piece_waiting_for_subtasks())
            }
            RunState::Complete | RunState::Aborted { .. } => {
                (false, None, message::piece_complete())
            }
        };
        Self {
            continues,
            question,
            note: format!("{why}{now}"),
            why,
        }
    }
}

/// What a finished batch does to the session's piece run: the `@@done` directive, or, when the
/// batch used up the turn's budget inside a movement, that movement's `default_next` (keyless's
/// "context overflow"). `None` when the piece does not move.
#[must_use]
pub fn move_piece(
    settings: &Settings,
    pos: Position,
    run: &mut PieceRun,
    control: Control,
    done: Option<&Directive>,
) -> Option<PieceMove> {
    if control != Control::Done {
        if pos.batch < settings.effective_iterations_per_turn() {
            return None;
        }
        let step = run.fall_back(Fallback::TurnBudget)?;
        return Some(PieceMove::from_step(run, &step));
    }
    let directive = done?;
    match run.apply(directive) {
        Ok(step) => Some(PieceMove::from_step(run, &step)),
        Err(e) => Some(PieceMove::note(
            true,
            &message::piece_refused(e.code(), &e.to_string()),
        )),
    }
}

/// The user's answer to the question a move stopped on. An answer continues the movement and
/// the model receives it; no answer (nobody to ask, an empty answer, a timeout) is the seed's
/// "ASK limit": the movement's `default_next` applies, and without one the run stays on its
/// question and the turn ends.
pub fn answer_question(run: &mut PieceRun, mv: &mut PieceMove, answer: Option<&str>) {
    if mv.question.is_none() {
        return;
    }
    match answer.map(str::trim).filter(|a| !a.is_empty()) {
        Some(a) if run.answer() => {
            mv.continues = true;
            mv.question = None;
            mv.note = format!(
                "{}{}\n\n{}",
                mv.why,
                message::piece_answered(a),
                message::movement_prompt(run)
            );
        }
        _ => {
            if let Some(step) = run.fall_back(Fallback::Unanswered) {
                let next = PieceMove::from_step(run, &step);
                *mv = PieceMove {
                    note: format!("{}{}", mv.why, next.note),
                    why: format!("{}{}", mv.why, next.why),
                    ..next
                };
            }
        }
    }
}

/// The step a finished batch makes: its status, the text for the model, whether the turn ended,
/// and the next position. `raw_reply` is quoted back when the format retries run out.
#[must_use]
pub fn after_batch(
    settings: &Settings,
    pos: Position,
    outcome: BatchReport<'_>,
    raw_reply: &str,
    piece: Option<&PieceMove>,
) -> TurnStep {
    let limits = settings.limits;
    let mut step = match outcome {
        BatchReport::Rejected { correction } => {
            let invalid = pos.invalid_in_a_row + 1;
            if invalid >= limits.max_format_retries {
                TurnStep {
                    status: BatchStatus::Rejected,
                    text: message::turn_stopped_format_retries(
                        pos.turn,
                        invalid,
                        limits.max_format_retries,
                        raw_reply,
                    ),
                    control: None,
                    turn_ended: Some(TurnEnd::MaxFormatRetries),
                    next: pos.next_turn(),
                }
            } else {
                TurnStep {
                    status: BatchStatus::Rejected,
                    text: correction.to_string(),
                    control: None,
                    turn_ended: None,
                    next: Position {
                        turn: pos.turn,
                        batch: pos.batch + 1,
                        invalid_in_a_row: invalid,
                    },
                }
            }
        }
        BatchReport::Executed { results, control } => {
            let continues = piece.is_some_and(|p| p.continues);
            let asking = piece.is_some_and(|p| p.question.is_some());
            let turn_ended = if control == Control::Done && !continues {
                Some(if asking {
                    TurnEnd::NeedsUserInput
                } else {
                    TurnEnd::Done
                })
            } else if pos.batch >= settings.effective_iterations_per_turn() {
                Some(TurnEnd::MaxIterationsPerTurn)
            } else {
                None
            };
            TurnStep {
                status: BatchStatus::Done,
                text: results.to_string(),
                control: Some(control),
                turn_ended,
                next: match turn_ended {
                    Some(_) => pos.next_turn(),
                    None => Position {
                        turn: pos.turn,
                        batch: pos.batch + 1,
                        invalid_in_a_row: 0,
                    },
                },
            }
        }
    };
    if let Some(p) = piece {
        step.text.push_str("\n\n");
        step.text.push_str(&p.note);
    }
    step
}

/// The position after a batch met again at the session's own position (a retry after the host
/// stopped mid-batch, or stopped between storing the batch and moving on). The batch is never run
/// again; the session moves past it as its stored control says.
#[must_use]
pub fn after_stored(pos: Position, control: Option<Control>) -> (Position, Option<TurnEnd>) {
    if control == Some(Control::Done) {
        (pos.next_turn(), Some(TurnEnd::Done))
    } else {
        (
            Position {
                turn: pos.turn,
                batch: pos.batch + 1,
                invalid_in_a_row: pos.invalid_in_a_row,
            },
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    fn settings(retries: u32) -> Settings {
        Settings {
            limits: Limits {
                max_format_retries: retries,
                ..Limits::default()
            },
            ..Settings::default()
        }
    }

    fn at(turn: u32, batch: u32, invalid: u32) -> Position {
        Position {
            turn,
            batch,
            invalid_in_a_row: invalid,
        }
    }

    /// One row per rule: the position, the outcome, and what must follow.
    #[test]
    fn turn_table() {
        let s = settings(3);
        let max = s.effective_iterations_per_turn();
        let rejected = BatchReport::Rejected { correction: "fix" };
        let next = BatchReport::Executed {
            results: "ok",
            control: Control::Next,
        };
        let done = BatchReport::Executed {
            results: "ok",
            control: Control::Done,
        };
        let rows: &[(
            Position,
            BatchReport<'_>,
            BatchStatus,
            Option<TurnEnd>,
            Position,
        )] = &[
            (
                at(1, 1, 0),
                rejected,
                BatchStatus::Rejected,
                None,
                at(1, 2, 1),
            ),
            (
                at(1, 2, 1),
                rejected,
                BatchStatus::Rejected,
                None,
                at(1, 3, 2),
            ),
            (
                at(1, 3, 2),
                rejected,
                BatchStatus::Rejected,
                Some(TurnEnd::MaxFormatRetries),
                at(2, 1, 0),
            ),
            (at(1, 3, 2), next, BatchStatus::Done, None, at(1, 4, 0)),
            (
                at(4, 7, 0),
                done,
                BatchStatus::Done,
                Some(TurnEnd::Done),
                at(5, 1, 0),
            ),
            (
                at(1, max, 0),
                next,
                BatchStatus::Done,
                Some(TurnEnd::MaxIterationsPerTurn),
                at(2, 1, 0),
            ),
            (
                at(1, max, 0),
                done,
                BatchStatus::Done,
                Some(TurnEnd::Done),
                at(2, 1, 0),
            ),
        ];
        for (i, (pos, outcome, status, ended, after)) in rows.iter().enumerate() {
            let step = after_batch(&s, *pos, *outcome, "the reply", None);
            assert_eq!(step.status, *status, "row {i}");
            assert_eq!(step.turn_ended, *ended, "row {i}");
            assert_eq!(step.next, *after, "row {i}");
        }
    }

    #[test]
    fn the_last_retry_quotes_the_reply_and_names_the_limit() {
        let step = after_batch(
            &settings(2),
            at(3, 2, 1),
            BatchReport::Rejected { correction: "fix" },
            "@@bogus",
            None,
        );
        assert_eq!(
            step.text,
            "turn 3 stopped: 2 invalid replies in a row (MaxFormatRetries = 2). The last reply, as received:\n@@bogus"
        );
    }

    #[test]
    fn a_piece_that_moves_on_keeps_the_turn_and_its_note_follows_the_results() {
        let moved = PieceMove::note(true, "[KEYLESSAGENT MOVEMENT] review");
        let step = after_batch(
            &settings(3),
            at(1, 2, 0),
            BatchReport::Executed {
                results: "[KEYLESSAGENT RESULTS]",
                control: Control::Done,
            },
            "",
            Some(&moved),
        );
        assert_eq!(step.turn_ended, None);
        assert_eq!(step.next, at(1, 3, 0));
        assert_eq!(
            step.text,
            "[KEYLESSAGENT RESULTS]\n\n[KEYLESSAGENT MOVEMENT] review"
        );
    }

    #[test]
    fn a_stored_batch_is_passed_as_its_control_says() {
        assert_eq!(
            after_stored(at(2, 3, 1), Some(Control::Next)),
            (at(2, 4, 1), None)
        );
        assert_eq!(after_stored(at(2, 3, 1), None), (at(2, 4, 1), None));
        assert_eq!(
            after_stored(at(2, 3, 1), Some(Control::Done)),
            (at(3, 1, 0), Some(TurnEnd::Done))
        );
    }

    #[test]
    fn statuses_and_end_reasons_keep_their_wire_strings() {
        for s in [
            BatchStatus::Running,
            BatchStatus::Done,
            BatchStatus::Rejected,
            BatchStatus::Interrupted,
        ] {
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::json!(s.as_str()))
            );
        }
        for e in [
            TurnEnd::Done,
            TurnEnd::MaxFormatRetries,
            TurnEnd::MaxIterationsPerTurn,
            TurnEnd::NeedsUserInput,
        ] {
            assert_eq!(
                serde_json::to_value(e).ok(),
                Some(serde_json::json!(e.as_str()))
            );
        }
        assert_eq!(
            BatchStatus::from_stored("running"),
            Some(BatchStatus::Interrupted)
        );
        assert_eq!(BatchStatus::from_stored("bogus"), None);
    }
}
