//! The piece run state machine. Pure: the host feeds it the model's control directives and asks it
//! what the current movement allows.
//!
//! - start at `initial_movement` (one movement run);
//! - `@@done next=X` moves to X when one of the current movement's rules names X;
//! - `@@done` completes (COMPLETE), `@@done status=aborted` aborts (ABORT), `@@ask` waits for the
//!   user (ASK) and [`PieceRun::resume`] continues the same movement;
//! - every move into a movement is a movement run; the run aborts when it would exceed
//!   `max_movements`;
//! - loops: entering a movement that was already visited, without any new movement entered since,
//!   is a revisit. When revisits of the target exceed its `max_consecutive_revisits` (default 3),
//!   the run follows the target's `default_next` (a movement or COMPLETE/ABORT/ASK), else aborts.

use super::tools::{effective, EffectiveTools};
use super::{Movement, Piece, WAIT_SUBTASKS};
use crate::reply::{Command, CommandKind, DoneStatus};
use serde::{Deserialize, Serialize};

/// Where a run stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    Running {
        movement: String,
    },
    /// `@@ask`: waiting for the user's answer, then the same movement goes on.
    Asking {
        movement: String,
    },
    /// Only in runs stored by an older host, whose rule sent the run to WAIT_SUBTASKS: resuming
    /// goes on in the same movement. A run now follows the "SpawnSubTask unavailable" fallback
    /// instead (see `subtasks_unavailable`) and never stops here.
    WaitingForSubtasks {
        movement: String,
    },
    Complete,
    Aborted {
        reason: String,
    },
}

/// Why WAIT_SUBTASKS cannot be waited for.
const NO_SUBTASKS: &str = "keyless runs no subtasks (SpawnSubTask is unavailable)";

/// A control directive from the model, as the piece sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `@@done next=<movement>`
    Next(String),
    /// `@@done` (status success)
    Complete,
    /// `@@done status=aborted`
    Abort,
    /// `@@ask`
    Ask,
}

impl Directive {
    /// The directive a `@@done` block carries.
    #[must_use]
    pub fn from_done(cmd: &Command) -> Option<Directive> {
        if cmd.kind != CommandKind::Done {
            return None;
        }
        Some(match (&cmd.options.next, cmd.options.status) {
            (Some(n), _) => Directive::Next(n.clone()),
            (None, Some(DoneStatus::Aborted)) => Directive::Abort,
            (None, _) => Directive::Complete,
        })
    }
}

/// Why a directive was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("the run is not in a movement (it is {0})")]
    NotRunning(String),
    #[error("movement \"{from}\" has no rule leading to \"{to}\"; allowed: {allowed}")]
    NotAllowed {
        from: String,
        to: String,
        allowed: String,
    },
}

impl TransitionError {
    #[must_use]
    pub fn code(&self) -> crate::diag::Code {
        crate::diag::Code::PieceTransition
    }
}

/// One step taken, for the host to report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub from: String,
    pub state: RunState,
    /// Set when a limit redirected or ended the run.
    pub note: Option<String>,
}

/// A running piece.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PieceRun {
    #[serde(skip)]
    piece: Piece,
    state: RunState,
    current: usize,
    movement_runs: u32,
    visited: Vec<bool>,
    revisits: Vec<u32>,
    history: Vec<String>,
}

impl PieceRun {
    /// Starts at the initial movement. The piece must have passed validation.
    #[must_use]
    pub fn start(piece: Piece) -> Self {
        let current = piece.movement_index(&piece.initial_movement).unwrap_or(0);
        let n = piece.movements.len();
        let mut visited = vec![false; n];
        if n > 0 {
            visited[current] = true;
        }
        let name = piece
            .movements
            .get(current)
            .map(|m| m.name.clone())
            .unwrap_or_default();
        Self {
            state: RunState::Running {
                movement: name.clone(),
            },
            current,
            movement_runs: 1,
            visited,
            revisits: vec![0; n],
            history: vec![name],
            piece,
        }
    }

    #[must_use]
    pub fn state(&self) -> &RunState {
        &self.state
    }

    #[must_use]
    pub fn piece(&self) -> &Piece {
        &self.piece
    }

    #[must_use]
    pub fn movement(&self) -> &Movement {
        &self.piece.movements[self.current]
    }

    #[must_use]
    pub fn movement_runs(&self) -> u32 {
        self.movement_runs
    }

    /// Movements entered so far, in order.
    #[must_use]
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// The current movement's effective tools (allowed commands and runcommand patterns).
    #[must_use]
    pub fn tools(&self) -> EffectiveTools {
        effective(&self.piece, self.movement())
    }

    /// Continues the same movement after an `@@ask` was answered.
    pub fn resume(&mut self) {
        if let RunState::Asking { movement } = &self.state {
            self.state = RunState::Running {
                movement: movement.clone(),
            };
        }
    }

    /// Applies a directive of the model.
    ///
    /// # Errors
    /// When the run is not in a movement, or no rule of the current movement allows the move.
    pub fn apply(&mut self, d: &Directive) -> Result<Step, TransitionError> {
        let RunState::Running { movement } = &self.state else {
            return Err(TransitionError::NotRunning(format!("{:?}", self.state)));
        };
        let from = movement.clone();
        let (state, note) = match d {
            Directive::Complete => (RunState::Complete, None),
            Directive::Abort => (
                RunState::Aborted {
                    reason: "the model aborted the task".into(),
                },
                None,
            ),
            Directive::Ask => (
                RunState::Asking {
                    movement: from.clone(),
                },
                None,
            ),
            Directive::Next(to) => {
                let m = self.movement();
                if !m.rules.iter().any(|r| r.next == *to) {
                    let mut allowed: Vec<String> = m
                        .rules
                        .iter()
                        .map(|r| format!("@@done next={}", r.next))
                        .collect();
                    allowed.push("@@done".into());
                    allowed.push("@@done status=aborted".into());
                    return Err(TransitionError::NotAllowed {
                        from,
                        to: to.clone(),
                        allowed: allowed.join(", "),
                    });
                }
                if to == WAIT_SUBTASKS {
                    self.subtasks_unavailable()
                } else {
                    self.enter(to)
                }
            }
        };
        self.state = state.clone();
        Ok(Step { from, state, note })
    }

    /// A rule led to WAIT_SUBTASKS. keyless runs no subtasks, so the seed's fallback for
    /// "SpawnSubTask unavailable" applies: the movement's `default_next`; without one the run ends.
    /// Either way the note says why, so the model is never left waiting.
    fn subtasks_unavailable(&mut self) -> (RunState, Option<String>) {
        let m = self.movement();
        let name = m.name.clone();
        let why = format!("WAIT_SUBTASKS: {NO_SUBTASKS}");
        match m.default_next.clone().as_deref() {
            None | Some(WAIT_SUBTASKS) => {
                let reason = format!("{why}, and movement \"{name}\" has no other default_next");
                (
                    RunState::Aborted {
                        reason: reason.clone(),
                    },
                    Some(reason),
                )
            }
            Some("COMPLETE") => (
                RunState::Complete,
                Some(format!("{why}; default_next COMPLETE")),
            ),
            Some("ABORT") => {
                let reason = format!("{why}; default_next ABORT");
                (
                    RunState::Aborted {
                        reason: reason.clone(),
                    },
                    Some(reason),
                )
            }
            Some("ASK") => (
                RunState::Asking { movement: name },
                Some(format!("{why}; default_next ASK")),
            ),
            Some(next) => {
                let next = next.to_string();
                let (state, more) = self.enter(&next);
                let note = match more {
                    Some(m) => format!("{why}; following default_next \"{next}\"; {m}"),
                    None => format!("{why}; following default_next \"{next}\""),
                };
                (state, Some(note))
            }
        }
    }

    /// Moves into movement `to`, applying the movement and revisit limits.
    fn enter(&mut self, to: &str) -> (RunState, Option<String>) {
        let mut target = to.to_string();
        let mut note = None;
        // A default_next chain is followed at most once per movement, so it always ends.
        for _ in 0..=self.piece.movements.len() {
            let Some(idx) = self.piece.movement_index(&target) else {
                return (
                    RunState::Aborted {
                        reason: format!("unknown movement \"{target}\""),
                    },
                    note,
                );
            };
            if self.visited[idx] {
                self.revisits[idx] += 1;
            } else {
                self.revisits.iter_mut().for_each(|r| *r = 0);
            }
            let m = &self.piece.movements[idx];
            if self.revisits[idx] > m.revisit_limit() {
                let why = format!(
                    "movement \"{}\" was revisited more than {} times in a row",
                    m.name,
                    m.revisit_limit()
                );
                match m.default_next.as_deref() {
                    Some("COMPLETE") => {
                        return (
                            RunState::Complete,
                            Some(format!("{why}; default_next COMPLETE")),
                        )
                    }
                    Some("ASK") => {
                        return (
                            RunState::Asking {
                                movement: self.movement().name.clone(),
                            },
                            Some(format!("{why}; default_next ASK")),
                        )
                    }
                    Some("ABORT") | None => {
                        return (
                            RunState::Aborted {
                                reason: why.clone(),
                            },
                            Some(why),
                        )
                    }
                    Some(WAIT_SUBTASKS) => {
                        // Its own fallback is WAIT_SUBTASKS, which keyless cannot wait for.
                        let reason =
                            format!("{why}; its default_next is WAIT_SUBTASKS, and {NO_SUBTASKS}");
                        return (
                            RunState::Aborted {
                                reason: reason.clone(),
                            },
                            Some(reason),
                        );
                    }
                    Some(next) => {
                        self.revisits[idx] = 0;
                        note = Some(format!("{why}; following default_next \"{next}\""));
                        target = next.to_string();
                        continue;
                    }
                }
            }
            if self.movement_runs >= self.piece.max_movements {
                let reason = format!("max_movements ({}) reached", self.piece.max_movements);
                return (
                    RunState::Aborted {
                        reason: reason.clone(),
                    },
                    Some(reason),
                );
            }
            self.movement_runs += 1;
            self.visited[idx] = true;
            self.current = idx;
            self.history.push(m.name.clone());
            return (
                RunState::Running {
                    movement: m.name.clone(),
                },
                note,
            );
        }
        (
            RunState::Aborted {
                reason: "default_next loop".into(),
            },
            note,
        )
    }

    /// The run's state without the piece, to store between requests.
    #[must_use]
    pub fn snapshot(&self) -> RunSnapshot {
        RunSnapshot {
            state: self.state.clone(),
            current: self.movement().name.clone(),
            movement_runs: self.movement_runs,
            visited: self
                .piece
                .movements
                .iter()
                .zip(&self.visited)
                .filter(|(_, v)| **v)
                .map(|(m, _)| m.name.clone())
                .collect(),
            revisits: self
                .piece
                .movements
                .iter()
                .zip(&self.revisits)
                .filter(|(_, r)| **r > 0)
                .map(|(m, r)| (m.name.clone(), *r))
                .collect(),
            history: self.history.clone(),
        }
    }

    /// Rebuilds a run of `piece` from a snapshot. Names the piece no longer has are ignored.
    #[must_use]
    pub fn restore(piece: Piece, snap: RunSnapshot) -> Self {
        let mut run = PieceRun::start(piece);
        if let Some(idx) = run.piece.movement_index(&snap.current) {
            run.current = idx;
        }
        for (i, m) in run.piece.movements.iter().enumerate() {
            run.visited[i] = snap.visited.contains(&m.name);
            run.revisits[i] = snap
                .revisits
                .iter()
                .find(|(n, _)| *n == m.name)
                .map_or(0, |(_, r)| *r);
        }
        run.movement_runs = snap.movement_runs.max(1);
        run.history = snap.history;
        run.state = snap.state;
        run
    }
}

/// A stored piece run (see [`PieceRun::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSnapshot {
    pub state: RunState,
    pub current: String,
    pub movement_runs: u32,
    pub visited: Vec<String>,
    pub revisits: Vec<(String, u32)>,
    pub history: Vec<String>,
}
