//! What `keyless-host serve` shows in its terminal: the host's events told in words, one line
//! each, for a person watching (a reply arrived, a batch ran with its counts, a confirmation
//! waits, the task is done). The tracing log is for `--verbose`; this is the view.
//!
//! Invariants: pure (the host adds the time of day); every text from the model, a command or a
//! server goes through [`crate::text::printable`] on one line; an event a person need not see
//! (a chunk of output, a trace step) gives no line.

use crate::api::{AsRunState, GenerationState, HostEvent, PromptKind};
use crate::message::BatchCounts;
use crate::text::{printable, truncate_chars};
use crate::turn::BatchStatus;
use crate::turn::TurnEnd;
use std::collections::BTreeMap;

/// Longest piece of outside text in one line.
const SNIPPET: usize = 100;

/// A session's name in the view: short enough for a line, still telling sessions apart.
fn short(session: &str) -> String {
    truncate_chars(session, 16)
}

/// Outside text on one line, shown as it is.
fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    printable(&truncate_chars(&flat, SNIPPET))
}

/// "1 file", "2 files".
fn count(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A batch's counts in words: "3 commands: 2 ok, 1 failed".
#[must_use]
pub fn counts_words(c: &BatchCounts) -> String {
    let total = c.ok + c.failed + c.declined + c.skipped;
    if total == 0 {
        return "no commands".into();
    }
    let mut parts = Vec::new();
    for (n, word) in [
        (c.ok, "ok"),
        (c.failed, "failed"),
        (c.declined, "declined"),
        (c.skipped, "skipped"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    format!(
        "{}: {}",
        count(total, "command", "commands"),
        parts.join(", ")
    )
}

/// Follows the event stream and tells it; keeps the counts of each session's running batch.
#[derive(Debug, Default)]
pub struct Narrator {
    running: BTreeMap<String, (u32, u32, BatchCounts)>,
}

impl Narrator {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The line for one event, or none.
    pub fn line(&mut self, event: &HostEvent) -> Option<String> {
        match event {
            HostEvent::Session {
                session,
                turn,
                batch,
            } => Some(if *turn <= 1 && *batch <= 1 {
                format!("session {}: started", short(session))
            } else {
                format!(
                    "session {}: resumed at turn {turn}, batch {batch}",
                    short(session)
                )
            }),
            HostEvent::BatchStarted {
                session,
                turn,
                batch,
                ..
            } => {
                self.running
                    .insert(session.clone(), (*turn, *batch, BatchCounts::default()));
                Some(format!(
                    "session {}: reply received (turn {turn}, batch {batch}), running it",
                    short(session)
                ))
            }
            HostEvent::CommandFinished {
                session,
                status,
                code,
                ..
            } => {
                if let Some((_, _, c)) = self.running.get_mut(session) {
                    c.add(*status, code.as_deref());
                }
                None
            }
            HostEvent::BatchFinished {
                session,
                status,
                turn_ended,
                ..
            } => {
                let (turn, batch, counts) = self.running.remove(session).unwrap_or_default();
                let at = if turn > 0 {
                    format!(" (turn {turn}, batch {batch})")
                } else {
                    String::new()
                };
                let what = match status {
                    BatchStatus::Rejected => {
                        "the reply broke the format; nothing ran, the chat is told why".to_string()
                    }
                    BatchStatus::Interrupted => format!(
                        "interrupted after {}; the session can be resumed",
                        counts_words(&counts)
                    ),
                    _ => format!("{}; results go back to the chat", counts_words(&counts)),
                };
                let end = turn_ended.map_or(String::new(), |t| match t {
                    TurnEnd::Done => "\n  task done: the model finished (@@done)".to_string(),
                    other => format!("\n  the turn ended: {}", other.words()),
                });
                Some(format!(
                    "session {}: batch ran{at}: {what}{end}",
                    short(session)
                ))
            }
            HostEvent::Prompt {
                session,
                kind,
                text,
                ..
            } => {
                let what = match kind {
                    PromptKind::Confirm => "a command waits for your yes or no",
                    PromptKind::Ask => "the model asks you",
                    PromptKind::Form => "an MCP server asks you to fill in a form",
                    PromptKind::Login => "an MCP server asks you to log in again",
                };
                Some(format!(
                    "session {}: {what}: {} (answer in the chat's overlay or the dashboard)",
                    short(session),
                    one_line(text)
                ))
            }
            HostEvent::Undone { restored } => Some(format!(
                "undo: {} put back",
                count(
                    u32::try_from(restored.len()).unwrap_or(u32::MAX),
                    "file",
                    "files"
                )
            )),
            HostEvent::AsRun { run, state, error } => Some(match (state, error) {
                (AsRunState::Running, _) => format!("program {}: started", short(run)),
                (AsRunState::Done, _) => format!("program {}: done", short(run)),
                (AsRunState::Failed, e) => format!(
                    "program {}: failed: {}",
                    short(run),
                    one_line(e.as_deref().unwrap_or("no reason given"))
                ),
            }),
            HostEvent::Generation { generation: g } => {
                let who = format!("program {}", short(&g.run));
                let site = g.site.as_deref().map_or("the chat".to_string(), |s| {
                    format!("the {} tab", one_line(s))
                });
                match g.state {
                    GenerationState::Pending => {
                        Some(format!("{who}: asks the chat (attempt {})", g.attempt))
                    }
                    GenerationState::Claimed if g.seen.is_none() => {
                        Some(format!("{who}: {site} took the request"))
                    }
                    GenerationState::Claimed => None,
                    GenerationState::Answered => Some(format!("{who}: {site} answered")),
                    GenerationState::Failed | GenerationState::Cancelled => Some(format!(
                        "{who}: no answer from {site}: {}",
                        one_line(g.error.as_deref().unwrap_or("cancelled"))
                    )),
                }
            }
            HostEvent::Say { .. }
            | HostEvent::Output { .. }
            | HostEvent::CommandStarted { .. }
            | HostEvent::PromptClosed { .. }
            | HostEvent::AsTrace { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ResultStatus;

    fn finished(status: ResultStatus, code: Option<&str>) -> HostEvent {
        HostEvent::CommandFinished {
            session: "s1".into(),
            number: 1,
            command: "runcommand".into(),
            target: String::new(),
            status,
            code: code.map(str::to_string),
            diff: Vec::new(),
        }
    }

    #[test]
    fn a_turn_is_told_in_words_with_its_counts() {
        let mut n = Narrator::new();
        let started = n.line(&HostEvent::BatchStarted {
            session: "s1".into(),
            batch_id: "b".into(),
            turn: 2,
            batch: 1,
        });
        assert_eq!(
            started.as_deref(),
            Some("session s1: reply received (turn 2, batch 1), running it")
        );
        assert_eq!(n.line(&finished(ResultStatus::Ok, None)), None);
        n.line(&finished(ResultStatus::Ok, None));
        n.line(&finished(ResultStatus::Error, Some("KA_COMMAND_DECLINED")));
        let done = n.line(&HostEvent::BatchFinished {
            session: "s1".into(),
            batch_id: "b".into(),
            status: BatchStatus::Done,
            turn_ended: Some(TurnEnd::Done),
        });
        assert_eq!(
            done.as_deref(),
            Some("session s1: batch ran (turn 2, batch 1): 3 commands: 2 ok, 1 declined; results go back to the chat\n  task done: the model finished (@@done)")
        );
    }

    #[test]
    fn outside_text_is_one_sanitized_line_and_ended_turns_are_words() {
        let mut n = Narrator::new();
        let line = n
            .line(&HostEvent::Prompt {
                id: 1,
                session: "s1".into(),
                kind: PromptKind::Confirm,
                text: "Run\n`rm -rf x`\u{1b}[2J?\u{202e}".into(),
                tier: None,
                reason: None,
                preview: Vec::new(),
                offer: None,
                form: None,
            })
            .unwrap_or_default();
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(line.contains("<U+001B>[2J?<U+202E>"), "{line}");
        let ended = n
            .line(&HostEvent::BatchFinished {
                session: "s1".into(),
                batch_id: "b".into(),
                status: BatchStatus::Rejected,
                turn_ended: Some(TurnEnd::MaxFormatRetries),
            })
            .unwrap_or_default();
        assert!(
            ended.contains("the replies kept breaking the format"),
            "{ended}"
        );
        assert!(!ended.contains("MaxFormatRetries"), "{ended}");
    }
}
