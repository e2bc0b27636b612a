//! Batch planning: which commands of a valid reply run, which are skipped and why, and how a
//! failure at run time stops the rest.

use crate::config::{BatchFailureMode, Pace, Settings};
use crate::policy::Tier;
use crate::reply::{CommandKind, Control, OnError, Reply};
use serde::{Serialize, Serializer};
use std::fmt;

/// Why a command does not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// The pace allows only `limit` non-say commands per reply.
    PaceLimit { pace: Pace, limit: u32 },
    /// Batch pace: MaxCommandsPerResponse reached.
    BatchLimit { limit: u32 },
    /// It comes after a successful `@@done`.
    AfterDone,
    /// An earlier command failed and stopped the batch.
    BatchStopped { at: u32 },
    /// The user cancelled the batch (Ctrl+C in `run`, Stop in the overlay or the dashboard).
    Cancelled,
}

impl SkipReason {
    /// Limit skips are summarised in one line of the results; the others are listed one by one.
    #[must_use]
    pub fn is_limit(self) -> bool {
        matches!(
            self,
            SkipReason::PaceLimit { .. } | SkipReason::BatchLimit { .. }
        )
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::PaceLimit { pace, limit } => write!(
                f,
                "pace={pace}: only {limit} command(s) per response; send the next one after reading this result"
            ),
            SkipReason::BatchLimit { limit } => {
                write!(f, "batch limit is {limit} per response, resend them next")
            }
            SkipReason::AfterDone => f.write_str("after @@done"),
            SkipReason::BatchStopped { at } => write!(f, "batch stopped at command #{at}"),
            SkipReason::Cancelled => f.write_str("the user cancelled the batch"),
        }
    }
}

impl Serialize for SkipReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One block of the reply in the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEntry {
    pub number: u32,
    pub kind: CommandKind,
    pub run: bool,
    pub skip: Option<SkipReason>,
}

/// The plan for one batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub entries: Vec<PlanEntry>,
    pub effective_limit: u32,
    /// `Done` only when a `@@done` will take effect.
    pub control: Control,
}

impl Plan {
    #[must_use]
    pub fn entry(&self, number: u32) -> Option<&PlanEntry> {
        self.entries.iter().find(|e| e.number == number)
    }

    /// Marks everything after the failed command as skipped, except `@@say` blocks, which still
    /// reach the user. A later `@@done` is skipped too: the model must see the failure first.
    pub fn stop_after(&mut self, failed: u32) {
        self.skip_after(failed, SkipReason::BatchStopped { at: failed });
    }

    /// The user cancelled the batch after command `number` (0: before the first): the commands
    /// after it are skipped, and a `@@done` among them no longer ends the turn.
    pub fn cancel_after(&mut self, number: u32) {
        self.skip_after(number, SkipReason::Cancelled);
    }

    fn skip_after(&mut self, number: u32, reason: SkipReason) {
        for e in &mut self.entries {
            if e.number > number && e.run && e.kind != CommandKind::Say {
                e.run = false;
                e.skip = Some(reason);
            }
        }
        if !self
            .entries
            .iter()
            .any(|e| e.kind == CommandKind::Done && e.run)
        {
            self.control = Control::Next;
        }
    }
}

/// Plans a valid reply under the settings' effective command limit.
#[must_use]
pub fn plan(reply: &Reply, settings: &Settings) -> Plan {
    let limit = settings.effective_command_limit();
    let limit_reason = match settings.pace {
        Pace::Batch => SkipReason::BatchLimit { limit },
        pace => SkipReason::PaceLimit { pace, limit },
    };
    let mut counted = 0;
    let mut done = false;
    let mut limit_hit = false;
    let mut entries = Vec::with_capacity(reply.commands.len());
    for c in &reply.commands {
        let skip = match c.kind {
            CommandKind::Say => None,
            _ if done => Some(SkipReason::AfterDone),
            CommandKind::Next => None,
            // A @@done after skipped commands would end the turn with work unsent: hold it back.
            CommandKind::Done if limit_hit => Some(limit_reason),
            CommandKind::Done => {
                done = true;
                None
            }
            _ if counted < limit => {
                counted += 1;
                None
            }
            _ => {
                limit_hit = true;
                Some(limit_reason)
            }
        };
        entries.push(PlanEntry {
            number: c.number,
            kind: c.kind,
            run: skip.is_none(),
            skip,
        });
    }
    Plan {
        entries,
        effective_limit: limit,
        control: if done { Control::Done } else { Control::Next },
    }
}

/// Whether a failed command stops the rest of the batch. `tier` is the policy tier of a
/// runcommand; file commands, commit and others pass `None`.
#[must_use]
pub fn failure_stops_batch(
    mode: BatchFailureMode,
    kind: CommandKind,
    tier: Option<Tier>,
    on_error: Option<OnError>,
) -> bool {
    match on_error {
        Some(OnError::Continue) => return false,
        Some(OnError::Stop) => return true,
        None => {}
    }
    match mode {
        BatchFailureMode::Continue => false,
        BatchFailureMode::StopOnAnyFailure => true,
        BatchFailureMode::StopOnMutationFailure => match kind {
            // Probes are independent: a failing read never stops the batch.
            CommandKind::ReadFile | CommandKind::Ask | CommandKind::Say => false,
            CommandKind::RunCommand | CommandKind::Mcp => tier != Some(Tier::ReadOnly),
            _ => true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;
    use crate::reply::{Command, Options};

    fn reply(kinds: &[CommandKind]) -> Reply {
        Reply {
            commands: kinds
                .iter()
                .zip(1..)
                .map(|(k, n)| Command {
                    number: n,
                    kind: *k,
                    argument: None,
                    options: Options::default(),
                    sections: vec![],
                    line: n,
                })
                .collect(),
        }
    }

    use CommandKind::{Done, EditFile, NewFile, Next, RunCommand, Say};

    #[test]
    fn pace_skips_with_the_seed_text() {
        let s = Settings {
            pace: Pace::Step,
            ..Settings::default()
        };
        let p = plan(&reply(&[Say, NewFile, RunCommand, Done]), &s);
        let runs: Vec<bool> = p.entries.iter().map(|e| e.run).collect();
        assert_eq!(runs, [true, true, false, false]);
        assert_eq!(
            p.entries[2].skip.unwrap().to_string(),
            "pace=Step: only 1 command(s) per response; send the next one after reading this result"
        );
        assert_eq!(p.control, Control::Next);
    }

    #[test]
    fn batch_mode_uses_the_batch_limit_note() {
        let s = Settings {
            pace: Pace::Batch,
            limits: Limits {
                max_commands_per_response: 2,
                ..Limits::default()
            },
        };
        let p = plan(&reply(&[NewFile, NewFile, NewFile, Next]), &s);
        assert_eq!(
            p.entries[2].skip.unwrap().to_string(),
            "batch limit is 2 per response, resend them next"
        );
        assert!(p.entries[3].run, "@@next does not count");
    }

    #[test]
    fn after_done_skips_commands_but_not_say() {
        let p = plan(
            &reply(&[NewFile, Done, EditFile, Say]),
            &Settings::default(),
        );
        assert_eq!(p.entries[2].skip, Some(SkipReason::AfterDone));
        assert!(p.entries[3].run);
        assert_eq!(p.control, Control::Done);
    }

    #[test]
    fn stop_after_skips_later_done() {
        let mut p = plan(
            &reply(&[NewFile, RunCommand, Say, Done]),
            &Settings::default(),
        );
        p.stop_after(1);
        assert_eq!(
            p.entries[1].skip.unwrap().to_string(),
            "batch stopped at command #1"
        );
        assert!(p.entries[2].run);
        assert!(!p.entries[3].run);
        assert_eq!(p.control, Control::Next);
    }

    #[test]
    fn failure_modes() {
        use BatchFailureMode::*;
        assert!(!failure_stops_batch(
            StopOnMutationFailure,
            RunCommand,
            Some(Tier::ReadOnly),
            None
        ));
        assert!(failure_stops_batch(
            StopOnMutationFailure,
            RunCommand,
            Some(Tier::Build),
            None
        ));
        assert!(failure_stops_batch(
            StopOnMutationFailure,
            EditFile,
            None,
            None
        ));
        assert!(!failure_stops_batch(
            StopOnMutationFailure,
            CommandKind::ReadFile,
            None,
            None
        ));
        assert!(failure_stops_batch(
            StopOnAnyFailure,
            RunCommand,
            Some(Tier::ReadOnly),
            None
        ));
        assert!(!failure_stops_batch(Continue, EditFile, None, None));
        assert!(!failure_stops_batch(
            StopOnAnyFailure,
            RunCommand,
            None,
            Some(OnError::Continue)
        ));
        assert!(failure_stops_batch(
            Continue,
            RunCommand,
            None,
            Some(OnError::Stop)
        ));
    }
}

/// A batch's id: derived from the session, the turn, the batch number and a hash of the reply, so
/// a retried submission of the same reply maps to the same batch and never runs twice.
#[must_use]
pub fn batch_id(session: &str, turn: u32, batch: u32, reply: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(session.as_bytes());
    h.update([0]);
    h.update(turn.to_le_bytes());
    h.update(batch.to_le_bytes());
    h.update(Sha256::digest(reply.as_bytes()));
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod id_tests {
    #[test]
    fn batch_ids_are_stable_and_distinct() {
        let a = super::batch_id("s1", 1, 1, "@@next\n@@end\n@@eof\n");
        assert_eq!(a.len(), 16);
        assert_eq!(a, super::batch_id("s1", 1, 1, "@@next\n@@end\n@@eof\n"));
        assert_ne!(a, super::batch_id("s1", 1, 2, "@@next\n@@end\n@@eof\n"));
        assert_ne!(a, super::batch_id("s2", 1, 1, "@@next\n@@end\n@@eof\n"));
        assert_ne!(a, super::batch_id("s1", 1, 1, "@@done\n@@end\n@@eof\n"));
    }
}
