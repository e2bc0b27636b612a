//! The handover: the message that carries a session to a fresh chat when its chat ends (the
//! site's length or usage limit, or a thread too long to keep the task in view). keyless writes
//! it from the session's record alone, with no model involved: the system prompt, the task as the
//! user wrote it, what has been done, the last results in full, the user's answers to `@@ask`,
//! the piece's current movement, and where the numbering goes on.
//!
//! It is bounded by a paste budget in characters. When the whole record does not fit, the oldest
//! batches are told more briefly first, then counted in one line; the last results message is
//! never cut. When even that does not fit, the whole handover goes as an attachment, the way long
//! results do ([`crate::site::attachment`]).

use crate::diff::FileDiff;
use crate::message::ResultStatus;
use crate::reply::CommandKind;
use crate::site::{attachment, Delivery, SiteAdapter};
use crate::turn::BatchStatus;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The paste budget `run --interactive`'s `:handover` uses when none is given: the
/// `max_paste_chars` most shipped site adapters name.
pub const DEFAULT_PASTE_CHARS: usize = 30_000;

/// What keyless recorded of a session: everything the handover is made from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub session: String,
    /// The system prompt as [`crate::message::system_prompt`] wrote it, without its task and
    /// movement (the handover gives both in sections of their own).
    pub system_prompt: String,
    /// The task as the user wrote it.
    pub task: Option<String>,
    /// Every batch, oldest first.
    pub batches: Vec<BatchRecord>,
    /// The files the session changed (their path, kind of change and line counts are read;
    /// their text is not).
    pub changed: Vec<FileDiff>,
    /// The commits `@@commit` made, oldest first.
    pub commits: Vec<CommitRecord>,
    /// The last message the model was sent (results or a format correction), as sent.
    pub last_results: Option<String>,
    /// The `@@ask` questions and the user's answers, oldest first.
    pub asks: Vec<AskRecord>,
    /// A piece session's current movement, as [`crate::message::movement_prompt`] writes it
    /// (its name, place in the piece, the commands it grants and its `@@done` choices).
    pub movement: Option<String>,
    /// The turn and batch numbers the next reply gets.
    pub next_turn: u32,
    pub next_batch: u32,
}

/// One batch of the session.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub turn: u32,
    pub batch: u32,
    pub status: BatchStatus,
    /// Its commands with how each ended (none for a rejected reply).
    pub commands: Vec<CommandLine>,
}

/// One command of a batch and how it ended.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandLine {
    pub number: u32,
    pub kind: CommandKind,
    /// As [`crate::Command::target`] names it (a path, a command line's first line, …).
    pub target: String,
    pub status: ResultStatus,
    pub code: Option<String>,
}

/// A commit `@@commit` made.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRecord {
    pub turn: u32,
    pub batch: u32,
    /// The result's first line (`committed 1a2b3c4d on <branch>: <subject>`).
    pub summary: String,
    pub pushed: bool,
}

/// An `@@ask` and its answer (`None`: not answered).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskRecord {
    pub turn: u32,
    pub batch: u32,
    pub question: String,
    pub answer: Option<String>,
}

/// A handover message and how it goes into the chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Handover {
    pub text: String,
    /// Paste when `text` fits the budget; else attach it (then `text` is the whole record).
    pub delivery: Delivery,
    /// Oldest batches told in brief (counts instead of each command).
    pub brief: usize,
    /// Oldest batches counted in one line.
    pub counted: usize,
}

/// How the batches are told: the oldest `counted` in one line, the next `brief` in brief, the
/// rest in full.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    counted: usize,
    brief: usize,
}

/// The handover for `record`, within `budget` characters when it can be: the oldest batches are
/// told in brief, then counted, until it fits. When it cannot fit, the whole record goes as an
/// attachment (`keyless-handover-t<turn>-b<batch>.txt`) with the note long results use.
#[must_use]
pub fn handover(record: &SessionRecord, budget: usize) -> Handover {
    let n = record.batches.len();
    let parts = Parts::of(record);
    // Each step tells one more of the oldest batches in less detail: first in brief, then
    // counted in the line before them.
    let shapes = (0..=n)
        .map(|brief| Shape { counted: 0, brief })
        .chain((1..=n).map(|counted| Shape {
            counted,
            brief: n - counted,
        }));
    for shape in shapes {
        let text = parts.render(record, shape);
        if text.chars().count() <= budget {
            return Handover {
                text,
                delivery: Delivery::Paste,
                brief: shape.brief,
                counted: shape.counted,
            };
        }
    }
    let text = parts.render(record, Shape::default());
    let delivery = attachment(
        &text,
        format!(
            "keyless-handover-t{}-b{}.txt",
            record.next_turn, record.next_batch
        ),
        ("The handover", "is"),
    );
    Handover {
        text,
        delivery,
        brief: 0,
        counted: 0,
    }
}

/// The handover for a chat site: its paste budget, and pasted whole when the site takes no
/// files (as long results are).
#[must_use]
pub fn handover_for_site(record: &SessionRecord, site: &SiteAdapter) -> Handover {
    let mut h = handover(record, site.max_paste_chars as usize);
    if site.selectors.file_input.is_none() {
        h.delivery = Delivery::Paste;
    }
    h
}

/// The sections that do not change with the shape, rendered once.
struct Parts {
    head: String,
    tail: String,
    full: Vec<String>,
    brief: Vec<String>,
}

impl Parts {
    fn of(r: &SessionRecord) -> Self {
        let mut head = format!(
            "[KEYLESSAGENT HANDOVER] session={} turn={} batch={}\n\
             This chat takes over a keyless session whose previous chat ended. keyless wrote this message from its own record of the session; no model wrote it. Read all of it, then continue the task.\n\n",
            r.session, r.next_turn, r.next_batch
        );
        // The prompt's last line asks the model to wait for a task, which follows here.
        let prompt = r.system_prompt.trim_end();
        head.push_str(
            prompt
                .strip_suffix(crate::message::WAIT_FOR_TASK)
                .unwrap_or(prompt)
                .trim_end(),
        );
        head.push_str("\n\n# Task\n");
        match r.task.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(t) => head.push_str(t),
            None => head.push_str("(The user gave the task in the chat; it is not recorded. Ask for it with @@ask if the record below does not show it.)"),
        }
        head.push_str("\n\n# What has been done\n");
        if r.batches.is_empty() {
            head.push_str("No batch has run yet.\n");
        } else {
            head.push_str("Batches, oldest first (#number command target: status):\n");
        }
        let tail = tail(r);
        Self {
            head,
            tail,
            full: r.batches.iter().map(full_line).collect(),
            brief: r.batches.iter().map(brief_line).collect(),
        }
    }

    fn render(&self, r: &SessionRecord, shape: Shape) -> String {
        let mut out = self.head.clone();
        if shape.counted > 0 {
            out.push_str(&counted_line(&r.batches[..shape.counted]));
            out.push('\n');
        }
        let briefs = shape.counted..shape.counted + shape.brief;
        for line in &self.brief[briefs.clone()] {
            out.push_str(line);
            out.push('\n');
        }
        for line in &self.full[briefs.end..] {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&self.tail);
        out
    }
}

/// Everything after the batch lines: files, commits, answers, movement, last results, and the
/// instruction to go on.
fn tail(r: &SessionRecord) -> String {
    let mut out = String::new();
    if !r.changed.is_empty() {
        out.push_str("Files changed (diff stat):\n");
        out.push_str(&crate::diff::stat(&r.changed));
    }
    if !r.commits.is_empty() {
        out.push_str("Commits:\n");
        for c in &r.commits {
            let _ = writeln!(
                out,
                "- turn {} batch {}: {} ({})",
                c.turn,
                c.batch,
                c.summary.trim(),
                if c.pushed {
                    "pushed to origin"
                } else {
                    "not pushed"
                }
            );
        }
    }
    if !r.asks.is_empty() {
        out.push_str("\n# The user's answers to @@ask\n");
        for a in &r.asks {
            let _ = writeln!(
                out,
                "- turn {} batch {} asked: {}",
                a.turn,
                a.batch,
                one_line(&a.question)
            );
            match &a.answer {
                Some(ans) => {
                    let _ = writeln!(out, "  answer: {}", one_line(ans));
                }
                None => out.push_str(
                    "  not answered: ask again with @@ask if you still need the answer.\n",
                ),
            }
        }
    }
    if let Some(m) = r.movement.as_deref().filter(|m| !m.trim().is_empty()) {
        out.push_str("\n# Current movement\n");
        out.push_str(m.trim_end());
        out.push('\n');
    }
    if let Some(last) = &r.last_results {
        out.push_str("\n# The last message keyless sent\n");
        out.push_str(last);
        if !last.ends_with('\n') {
            out.push('\n');
        }
    }
    let _ = write!(
        out,
        "\n# Continue\nContinue the task from where the record ends. Do not redo what is done: the workspace already holds it. Your next reply is turn={} batch={}; its results will carry those numbers. Reply in AgentScript v1 only, in one ~~~~agentscript block that ends with @@eof.",
        r.next_turn, r.next_batch
    );
    out
}

/// Newlines and runs of spaces as single spaces, so an entry stays on its line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn batch_ref(b: &BatchRecord) -> String {
    format!("- turn {} batch {}:", b.turn, b.batch)
}

/// The commands a batch line tells of: `say` and `next` are left out (they do nothing to tell).
fn told(b: &BatchRecord) -> impl Iterator<Item = &CommandLine> {
    b.commands
        .iter()
        .filter(|c| !matches!(c.kind, CommandKind::Say | CommandKind::Next))
}

/// What a batch that ran nothing says instead of its commands.
fn not_run(b: &BatchRecord) -> Option<&'static str> {
    match b.status {
        BatchStatus::Rejected => Some("rejected (format error); nothing ran"),
        BatchStatus::Interrupted | BatchStatus::Running => {
            Some("interrupted (the host stopped while it ran); not run again")
        }
        BatchStatus::Done if told(b).next().is_none() => Some("no commands"),
        BatchStatus::Done => None,
    }
}

fn full_line(b: &BatchRecord) -> String {
    let mut line = batch_ref(b);
    if let Some(why) = not_run(b) {
        let _ = write!(line, " {why}");
        return line;
    }
    let cmds: Vec<String> = told(b)
        .map(|c| {
            let mut s = format!("#{} {}", c.number, c.kind);
            let target = one_line(&c.target);
            if !target.is_empty() {
                let _ = write!(s, " {target}");
            }
            let _ = write!(s, ": {}", c.status.as_str());
            if let Some(code) = &c.code {
                let _ = write!(s, " {code}");
            }
            s
        })
        .collect();
    let _ = write!(line, " {}", cmds.join("; "));
    line
}

/// How the commands of `batches` ended, counted.
fn counts(batches: &[BatchRecord]) -> crate::message::BatchCounts {
    let mut c = crate::message::BatchCounts::default();
    for cmd in batches.iter().flat_map(told) {
        c.add(cmd.status, cmd.code.as_deref());
    }
    c
}

fn counts_text(c: crate::message::BatchCounts) -> String {
    let mut parts = vec![format!("{} ok", c.ok)];
    if c.failed > 0 {
        parts.push(format!("{} failed", c.failed));
    }
    if c.declined > 0 {
        parts.push(format!("{} declined", c.declined));
    }
    if c.skipped > 0 {
        parts.push(format!("{} skipped", c.skipped));
    }
    parts.join(", ")
}

fn brief_line(b: &BatchRecord) -> String {
    let mut line = batch_ref(b);
    if let Some(why) = not_run(b) {
        let _ = write!(line, " {why}");
        return line;
    }
    let mut kinds: Vec<&str> = Vec::new();
    for c in told(b) {
        if !kinds.contains(&c.kind.name()) {
            kinds.push(c.kind.name());
        }
    }
    let _ = write!(
        line,
        " {} ({})",
        kinds.join(", "),
        counts_text(counts(std::slice::from_ref(b)))
    );
    line
}

fn counted_line(batches: &[BatchRecord]) -> String {
    let (Some(first), Some(last)) = (batches.first(), batches.last()) else {
        return String::new();
    };
    let rejected = batches
        .iter()
        .filter(|b| b.status == BatchStatus::Rejected)
        .count();
    let commands: usize = batches.iter().map(|b| told(b).count()).sum();
    let mut line = format!(
        "- {} earlier {} (turn {} batch {} to turn {} batch {}): {commands} {} ({})",
        batches.len(),
        if batches.len() == 1 {
            "batch"
        } else {
            "batches"
        },
        first.turn,
        first.batch,
        last.turn,
        last.batch,
        if commands == 1 { "command" } else { "commands" },
        counts_text(counts(batches))
    );
    if rejected > 0 {
        let _ = write!(
            line,
            "; {rejected} rejected {}",
            if rejected == 1 { "reply" } else { "replies" }
        );
    }
    line
}
