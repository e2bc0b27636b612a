//! The piece run state machine. Pure: the host feeds it the model's control directives and asks it
//! what the current movement allows.
//!
//! - start at `initial_movement` (one movement run);
//! - `@@done next=X` moves to X when one of the current movement's rules names X;
//! - `@@done` completes (COMPLETE), `@@done status=aborted` aborts (ABORT), `@@done
//!   status=needs_user_input` stops the run on a question for the user (ASK, the seed's
//!   needs_user_input state) and [`PieceRun::answer`] continues the same movement;
//! - every move into a movement is a movement run; the run aborts when it would exceed
//!   `max_movements`;
//! - loops: entering a movement that was already visited, without any new movement entered since,
//!   is a revisit. When revisits of the target exceed its `max_consecutive_revisits` (default 3),
//!   the run follows the target's `default_next` (a movement or COMPLETE/ABORT/ASK), else aborts;
//! - the other triggers of `default_next` (the seed's "context overflow, ASK limit, SpawnSubTask
//!   unavailable") are [`Fallback`]s, as keyless maps them.

use super::tools::EffectiveTools;
use super::{Movement, Piece, WAIT_SUBTASKS};
use crate::reply::{Command, CommandKind, DoneStatus, SectionName};
use serde::{Deserialize, Serialize};

/// Where a run stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    Running {
        movement: String,
    },
    /// The seed's needs_user_input: the run stopped on `question`; the user's answer continues
    /// `movement`.
    NeedsUserInput {
        movement: String,
        question: String,
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

/// `why` with its first letter in capitals, to start a sentence.
fn capitalised(why: &str) -> String {
    let mut c = why.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
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
    /// `@@done status=needs_user_input`; its MSG is the question (may be empty).
    Ask { question: String },
}

/// A trigger of the seed's engine-internal fallback (`default_next`) other than a revisit limit,
/// as keyless maps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// "context overflow": keyless cannot see the model's context, so the turn's batch budget
    /// (`MaxIterationsPerTurn`) running out inside a movement stands for it.
    TurnBudget,
    /// "ASK limit": the question was not answered (nobody could be asked, the answer was empty,
    /// or it timed out).
    Unanswered,
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
            (None, Some(DoneStatus::NeedsUserInput)) => Directive::Ask {
                question: cmd
                    .section_text(SectionName::Msg)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            },
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
    /// The running MCP servers' tools and the SSH registry, set by the host at session start.
    #[serde(skip)]
    catalog: super::tools::Catalog,
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
            catalog: super::tools::Catalog::default(),
        }
    }

    /// What the host found at session start: MCP tools and SSH connections.
    pub fn set_catalog(&mut self, catalog: super::tools::Catalog) {
        self.catalog = catalog;
    }

    #[must_use]
    pub fn catalog(&self) -> &super::tools::Catalog {
        &self.catalog
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
        super::tools::effective_with(&self.piece, self.movement(), &self.catalog)
    }

    /// The question the run stopped on, if it waits for the user.
    #[must_use]
    pub fn question(&self) -> Option<&str> {
        match &self.state {
            RunState::NeedsUserInput { question, .. } => Some(question),
            _ => None,
        }
    }

    /// The user answered the run's question: the same movement goes on, and the revisit counts
    /// start again (the user chose to go on). False when no question was waiting.
    pub fn answer(&mut self) -> bool {
        let RunState::NeedsUserInput { movement, .. } = &self.state else {
            return false;
        };
        self.state = RunState::Running {
            movement: movement.clone(),
        };
        self.revisits.iter_mut().for_each(|r| *r = 0);
        true
    }

    /// Makes a run that stopped ready for the next reply: a question left open was answered in
    /// the chat (the only way the model could have gone on), and a run stored waiting for
    /// subtasks goes on in the same movement.
    pub fn resume(&mut self) {
        match &self.state {
            RunState::NeedsUserInput { .. } => {
                self.answer();
            }
            RunState::WaitingForSubtasks { movement } => {
                self.state = RunState::Running {
                    movement: movement.clone(),
                };
            }
            _ => {}
        }
    }

    /// Follows the current movement's `default_next` for `trigger`. `None` (and nothing changes)
    /// when the trigger does not apply: the turn budget applies to a running movement, the ASK
    /// limit to a waiting question; and a movement without `default_next`, or (for an
    /// unanswered question) whose `default_next` is ASK again, keeps its state.
    pub fn fall_back(&mut self, trigger: Fallback) -> Option<Step> {
        let from = self.movement().name.clone();
        let why = match (trigger, &self.state) {
            (Fallback::TurnBudget, RunState::Running { .. }) => format!(
                "the turn's batch budget (MaxIterationsPerTurn) ran out in movement \"{from}\" \
                 (keyless's context overflow)"
            ),
            (Fallback::Unanswered, RunState::NeedsUserInput { .. }) => {
                format!("the question of movement \"{from}\" was not answered (the ASK limit)")
            }
            _ => return None,
        };
        match self.movement().default_next.as_deref() {
            None => return None,
            Some("ASK") if trigger == Fallback::Unanswered => return None,
            Some(_) => {}
        }
        let (state, note) = self.follow_default(&why)?;
        self.state = state.clone();
        Some(Step {
            from,
            state,
            note: Some(note),
        })
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
            Directive::Ask { question } => {
                let question = if question.is_empty() {
                    format!("The model needs your input to go on with movement \"{from}\".")
                } else {
                    question.clone()
                };
                (
                    RunState::NeedsUserInput {
                        movement: from.clone(),
                        question,
                    },
                    None,
                )
            }
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
        let why = format!("WAIT_SUBTASKS: {NO_SUBTASKS}");
        match self.follow_default(&why) {
            Some((state, note)) => (state, Some(note)),
            None => {
                let reason = format!(
                    "{why}, and movement \"{}\" has no other default_next",
                    self.movement().name
                );
                (
                    RunState::Aborted {
                        reason: reason.clone(),
                    },
                    Some(reason),
                )
            }
        }
    }

    /// The current movement's `default_next`, followed because of `why`: the new state and the
    /// note for the model. `None` when the movement has none.
    fn follow_default(&mut self, why: &str) -> Option<(RunState, String)> {
        let next = self.movement().default_next.clone()?;
        if let Some(done) = self.sentinel(&next, why) {
            return Some(done);
        }
        let (state, more) = self.enter(&next);
        let note = match more {
            Some(m) => format!("{why}; following default_next \"{next}\"; {m}"),
            None => format!("{why}; following default_next \"{next}\""),
        };
        Some((state, note))
    }

    /// Where a `default_next` that is a sentinel (COMPLETE, ABORT, ASK, WAIT_SUBTASKS) leads,
    /// with the note; `None` for a movement name. An ASK stops in the current movement.
    fn sentinel(&self, next: &str, why: &str) -> Option<(RunState, String)> {
        let aborted = |reason: String| {
            (
                RunState::Aborted {
                    reason: reason.clone(),
                },
                reason,
            )
        };
        Some(match next {
            "COMPLETE" => (RunState::Complete, format!("{why}; default_next COMPLETE")),
            "ABORT" => aborted(format!("{why}; default_next ABORT")),
            "ASK" => {
                let movement = self.movement().name.clone();
                (
                    RunState::NeedsUserInput {
                        question: format!(
                            "{}. How should movement \"{movement}\" go on? Your answer is passed \
                             to the model.",
                            capitalised(why)
                        ),
                        movement,
                    },
                    format!("{why}; default_next ASK"),
                )
            }
            WAIT_SUBTASKS => aborted(format!(
                "{why}; its default_next is WAIT_SUBTASKS, and {NO_SUBTASKS}"
            )),
            _ => return None,
        })
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
                let Some(next) = m.default_next.clone() else {
                    return (
                        RunState::Aborted {
                            reason: why.clone(),
                        },
                        Some(why),
                    );
                };
                if let Some((state, note)) = self.sentinel(&next, &why) {
                    return (state, Some(note));
                }
                self.revisits[idx] = 0;
                note = Some(format!("{why}; following default_next \"{next}\""));
                target = next;
                continue;
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
    #[serde(deserialize_with = "stored_state")]
    pub state: RunState,
    pub current: String,
    pub movement_runs: u32,
    pub visited: Vec<String>,
    pub revisits: Vec<(String, u32)>,
    pub history: Vec<String>,
}

/// [`RunState`] as stored, older spellings included: hosts before needs_user_input stored a run
/// waiting for an answer as `asking`, without a question.
#[derive(Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum StoredState {
    Running {
        movement: String,
    },
    #[serde(alias = "asking")]
    NeedsUserInput {
        movement: String,
        #[serde(default)]
        question: String,
    },
    WaitingForSubtasks {
        movement: String,
    },
    Complete,
    Aborted {
        reason: String,
    },
}

fn stored_state<'de, D: serde::Deserializer<'de>>(d: D) -> Result<RunState, D::Error> {
    Ok(match StoredState::deserialize(d)? {
        StoredState::Running { movement } => RunState::Running { movement },
        StoredState::NeedsUserInput { movement, question } => {
            RunState::NeedsUserInput { movement, question }
        }
        StoredState::WaitingForSubtasks { movement } => RunState::WaitingForSubtasks { movement },
        StoredState::Complete => RunState::Complete,
        StoredState::Aborted { reason } => RunState::Aborted { reason },
    })
}
