//! The host's HTTP API (`/v1`): every request body, answer and event, defined once. The host
//! serialises and reads these; the extension, the dashboard and the playground use their
//! TypeScript, generated from them by `cargo xtask contract` (see [`crate::typescript`]).
//!
//! Request fields that name a mode or a pace stay text here, so that the host reads them with the
//! core's own parser and a bad value is answered with its `KA_` code, not a serde message.

use crate::check::CommandView;
use crate::config::{Limits, Mode, Pace};
use crate::diag::Diagnostic;
use crate::piece::run::RunState;
use crate::piece::tools::EffectiveTools;
use crate::policy::Tier;
use crate::reply::Control;
use crate::turn::{BatchStatus, TurnEnd};
use serde::{Deserialize, Serialize};

pub use crate::message::ResultStatus;

mod chat;
pub use chat::*;

/// Every error answer: `{"code": "KA_…", "message": "…"}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    #[cfg_attr(feature = "ts", ts(type = "Code"))]
    pub code: crate::Code,
    pub message: String,
    /// A refused piece's findings (`PUT /v1/pieces/{name}`), each with its key and line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<Diagnostic>>", optional))]
    pub findings: Vec<Diagnostic>,
    /// When the request may be tried again, in seconds (a pairing lock): also the `Retry-After`
    /// header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub retry_after_seconds: Option<u64>,
}

/// `POST /v1/pair`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairRequest {
    /// The code `keyless-host serve` or `keyless-host pair` printed (case, spaces and dashes do
    /// not matter: [`crate::pairing::read_code`]).
    pub code: String,
    pub extension_id: String,
}

/// The answer to `POST /v1/pair`: the bearer token for every later request.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paired {
    pub token: String,
    pub extension_id: String,
}

/// `GET /v1/status`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub name: String,
    pub version: String,
    pub api: String,
    pub workspace: String,
    /// The host's default mode and pace (a session may choose its own).
    pub mode: Mode,
    pub pace: Pace,
}

/// Settings a client sends: the pace and the limits (each optional; the defaults otherwise).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SettingsRequest {
    #[cfg_attr(feature = "ts", ts(as = "Option<Pace>", optional))]
    pub pace: Option<String>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub limits: Option<Limits>,
}

/// `POST /v1/check`: the answer is a [`crate::check::CheckReport`].
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    pub reply: String,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub settings: Option<SettingsRequest>,
}

/// `POST /v1/policy`: the answer is a [`crate::policy::Verdict`].
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRequest {
    pub command: String,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<Mode>", optional))]
    pub mode: Option<String>,
    /// Extra allow patterns, as in keyless.json's `allow`.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<String>>", optional))]
    pub allow: Vec<String>,
}

/// `POST /v1/sessions`: a new session, or `resume` an old one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionRequest {
    /// Resume this session.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub resume: Option<String>,
    /// Follow a piece, by name (see `GET /v1/pieces`).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub piece: Option<String>,
    /// Follow a piece given as YAML (validated strictly).
    #[cfg_attr(feature = "ts", ts(optional))]
    pub piece_yaml: Option<String>,
    /// Ask, AutoSafe or Auto for this session (default: the host's `--mode`).
    #[cfg_attr(feature = "ts", ts(as = "Option<Mode>", optional))]
    pub mode: Option<String>,
    /// Step, Balanced or Batch for this session (default: the host's pace).
    #[cfg_attr(feature = "ts", ts(as = "Option<Pace>", optional))]
    pub pace: Option<String>,
    /// The user's task: the prompt ends with it, under `# Task`.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub task: Option<String>,
}

/// The answer to `POST /v1/sessions`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStarted {
    pub session: String,
    pub turn: u32,
    pub batch: u32,
    /// The whole first message for the chat: the system prompt, the movement, the task.
    pub prompt: String,
    /// Whether the session follows a piece.
    pub piece: bool,
    pub mode: Mode,
    pub pace: Pace,
    /// The host's configured allow-list (keyless.json `allow`), which views judge commands with.
    pub allow: Vec<String>,
    /// In a piece session, the current movement's tools (see [`CoreOptions::gate`]).
    pub gate: Option<EffectiveTools>,
    /// What the host knows of the workspace, which views judge commands with (see
    /// [`CoreOptions::context`]).
    pub context: crate::policy::Context,
    /// The branch the session works on.
    pub branch: Option<String>,
    /// When keyless made a branch for the task (the session started on a protected one): what to
    /// tell the user.
    pub branch_note: Option<String>,
}

/// One row of `GET /v1/sessions`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub session: String,
    /// Unix seconds.
    pub created_at: i64,
    pub turn: u32,
    pub batch: u32,
    pub piece: bool,
    /// The task the user gave (the first message's `# Task`), when there was one.
    #[serde(default)]
    pub task: Option<String>,
    /// The branch the session works on (its task branch, else the one it started on).
    #[serde(default)]
    pub branch: Option<String>,
    /// Ask, AutoSafe or Auto, when the session set its own.
    #[serde(default)]
    pub mode: Option<String>,
    /// Where the session stands, in words ([`session_state`]).
    #[serde(default)]
    pub state: String,
    /// The new chats the session was continued in, oldest first.
    #[serde(default)]
    pub moves: Vec<SessionMove>,
}

/// A session continued in a new chat ([`HandoverRequest`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMove {
    /// The chat site it went to (the adapter's name, or `terminal` for `:handover`).
    pub site: String,
    /// The browser tab it went to, when the extension moved it.
    #[serde(default)]
    pub tab: Option<u32>,
    /// Unix seconds.
    pub at: i64,
    /// The turn and batch the new chat starts with.
    pub turn: u32,
    pub batch: u32,
}

/// `POST /v1/sessions/{id}/handover`: the session continues in a new chat on `site`; the
/// answer is the handover message core makes from the session's record, for that site's paste
/// budget.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverRequest {
    /// The site's adapter name.
    pub site: String,
    /// Its paste budget in characters (the adapter's `max_paste_chars`).
    pub max_paste_chars: u32,
    /// Whether it takes files: over the budget the handover is attached, else pasted whole.
    pub uploads: bool,
    /// The tab the session goes to.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tab: Option<u32>,
}

/// The answer to a [`HandoverRequest`].
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandoverAnswer {
    /// The handover (the whole record when it is attached).
    pub text: String,
    pub delivery: crate::site::Delivery,
    /// The turn and batch the new chat's first reply carries.
    pub turn: u32,
    pub batch: u32,
}

/// Where a session stands, in words: from its last batch's status and how its last turn ended.
#[must_use]
pub fn session_state(last_batch: Option<BatchStatus>, last_end: Option<TurnEnd>) -> String {
    match (last_batch, last_end) {
        (Some(BatchStatus::Running), _) => "running a batch".into(),
        (_, Some(end)) => end.words().into(),
        (Some(BatchStatus::Interrupted), None) => "interrupted (the host stopped)".into(),
        (Some(_), None) => "waiting for the model's next reply".into(),
        (None, None) => "started; no reply yet".into(),
    }
}

/// How a batch went, for the colour every view gives it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchOutcome {
    /// Every command that ran succeeded.
    Ok,
    /// A command failed or was denied.
    Failed,
    /// The user declined a command (and none failed).
    Declined,
    /// The reply broke the format; nothing ran.
    Rejected,
    Running,
    Interrupted,
    /// Nothing to run (only control directives).
    Empty,
}

impl BatchOutcome {
    #[must_use]
    pub fn of(status: BatchStatus, counts: &crate::message::BatchCounts) -> Self {
        match status {
            BatchStatus::Running => Self::Running,
            BatchStatus::Rejected => Self::Rejected,
            BatchStatus::Interrupted => Self::Interrupted,
            BatchStatus::Done if counts.failed > 0 => Self::Failed,
            BatchStatus::Done if counts.declined > 0 => Self::Declined,
            BatchStatus::Done if counts.ok + counts.skipped == 0 => Self::Empty,
            BatchStatus::Done => Self::Ok,
        }
    }
}

/// One batch of a session.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSummary {
    pub id: String,
    pub turn: u32,
    pub batch: u32,
    pub status: BatchStatus,
    pub control: Option<Control>,
    /// How its commands ended.
    pub counts: crate::message::BatchCounts,
    /// The colour it gets: a batch with a failed command is never "ok".
    pub outcome: BatchOutcome,
    /// Whether Undo can take it back.
    pub undo: UndoState,
}

/// `GET /v1/sessions/{id}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDetail {
    pub session: String,
    pub turn: u32,
    pub batch: u32,
    pub batches: Vec<BatchSummary>,
}

/// `POST /v1/sessions/{id}/settings`, and its answer ([`SessionSettings`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSettingsRequest {
    #[cfg_attr(feature = "ts", ts(as = "Option<Mode>", optional))]
    pub mode: Option<String>,
    #[cfg_attr(feature = "ts", ts(as = "Option<Pace>", optional))]
    pub pace: Option<String>,
}

/// A session's mode and pace.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSettings {
    pub mode: Mode,
    pub pace: Pace,
}

/// `POST /v1/sessions/{id}/replies`: one batch. A retry sends the same turn and batch.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyRequest {
    pub reply: String,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub turn: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub batch: Option<u32>,
}

/// Where a piece run stands after a batch.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceProgress {
    pub state: RunState,
    pub movement: String,
    pub movement_runs: u32,
    /// The current movement's tools, which the next reply is judged with.
    pub tools: EffectiveTools,
}

/// The answer to a reply.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyAnswer {
    pub batch_id: String,
    pub turn: u32,
    pub batch: u32,
    /// `done` (executed), `rejected` (format correction), `interrupted` (stored as running).
    pub status: BatchStatus,
    /// The text to send back to the chat.
    pub text: String,
    pub control: Option<Control>,
    pub turn_ended: Option<TurnEnd>,
    /// Why the turn ended, in the words every view shows ([`TurnEnd::words`]).
    #[serde(default)]
    pub ended: Option<String>,
    /// True when the answer comes from the store (a retry): nothing ran now.
    pub stored: bool,
    pub next_turn: u32,
    pub next_batch: u32,
    /// For a piece session: where the run stands after this batch.
    pub piece: Option<PieceProgress>,
    /// What the host knows of the workspace after this batch, for judging the next reply.
    pub context: crate::policy::Context,
    /// How the batch's commands ended (all zero for a rejected reply).
    pub counts: crate::message::BatchCounts,
    /// How each command ended (empty for a rejected reply).
    #[serde(default)]
    pub commands: Vec<crate::message::CommandEnd>,
    /// The colour every view gives the batch.
    pub outcome: BatchOutcome,
    /// What the model said with the `@@done` that finished the task (its MSG).
    pub done_message: Option<String>,
    /// When the task finished: what it left in the repository and how to merge it.
    pub review: Option<String>,
    /// What the batch's file commands changed, command by command (for the user; the chat gets
    /// the `verified:` lines).
    #[serde(default)]
    pub diff: Vec<crate::diff::FileDiff>,
    /// When the task finished: everything it changed since the commit the session started from
    /// (committed or not), for the user's review.
    #[serde(default)]
    pub task_diff: Vec<crate::diff::FileDiff>,
}

/// The answer to `POST /v1/sessions/{id}/cancel`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequested {
    pub session: String,
    pub cancel_requested: bool,
}

/// One row of `GET /v1/pieces`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceSummary {
    pub name: String,
    pub description: String,
    /// Where it was found: the workspace's `.agent/pieces/`, the user's `pieces/`, or
    /// `built-in`.
    pub source: String,
    /// True for a workspace piece, which `PUT` and `DELETE /v1/pieces/{name}` change.
    pub editable: bool,
}

/// `GET /v1/pieces/{name}`: the piece a name resolves to, as text.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceText {
    pub name: String,
    pub source: String,
    pub yaml: String,
    /// True for a workspace piece (`.agent/pieces/`), which `PUT` and `DELETE` change.
    pub editable: bool,
}

/// `PUT /v1/pieces/{name}`: the piece's YAML, validated strictly before it is stored.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieceWrite {
    pub yaml: String,
}

/// The answer to `PUT /v1/pieces/{name}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceSaved {
    pub name: String,
    /// The file it was written to.
    pub source: String,
    /// Warnings of the strict validation (errors refuse the piece).
    pub warnings: Vec<Diagnostic>,
    /// What the name resolved to before, when the new piece now hides it ("built-in", a user
    /// piece's path), or `null`.
    pub shadows: Option<String>,
}

/// The answer to `DELETE /v1/pieces/{name}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceDeleted {
    pub name: String,
    pub deleted: bool,
    /// What the name resolves to now (a user or built-in piece it hid), or `null`.
    pub now: Option<String>,
}

/// One command's stored result.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRecord {
    pub number: u32,
    pub status: ResultStatus,
    pub code: Option<String>,
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<i64>,
    /// What the command changed in the workspace's files.
    #[serde(default)]
    pub diff: Vec<crate::diff::FileDiff>,
}

/// One command of a stored batch: the view every front end shows, and what happened to it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchCommand {
    #[serde(flatten)]
    pub view: CommandView,
    pub result: Option<CommandRecord>,
}

/// `GET /v1/batches/{id}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchDetail {
    pub session: String,
    pub turn: u32,
    pub batch: u32,
    pub status: BatchStatus,
    pub control: Option<Control>,
    /// The reply as the model wrote it.
    pub reply: String,
    /// The text the model received (results or correction).
    pub text: String,
    pub commands: Vec<BatchCommand>,
    pub outcome: BatchOutcome,
    /// Whether the dashboard's Undo can take the batch back.
    pub undo: UndoState,
    /// Why it cannot, and what to do instead (a later commit recorded the files, …).
    pub undo_note: Option<String>,
}

/// Whether a batch can be undone.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoState {
    /// Its file changes can be restored.
    Undoable,
    /// It was undone already.
    Undone,
    /// A later commit recorded its files: revert the commit instead.
    Committed,
    /// It changed no files.
    NoChanges,
}

/// The answer to `POST /v1/batches/{id}/undo`: the workspace paths put back.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undone {
    pub restored: Vec<String>,
}

/// One line of `GET /v1/audit`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Unix seconds.
    pub at: i64,
    pub session: String,
    pub batch: String,
    pub command: String,
    pub target: String,
    pub status: ResultStatus,
    pub code: Option<String>,
}

/// What a waiting question asks.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptKind {
    /// Run this command? (yes or no)
    Confirm,
    /// The model's `@@ask`: a free-text answer.
    Ask,
    /// An MCP server's form (elicitation): fill it in, decline, or cancel the tool call.
    Form,
    /// An MCP server asks for more access than the stored login grants (step-up): log in again
    /// in the browser now? (yes or no)
    Login,
}

/// A question waiting for the user (`GET /v1/confirmations`, and the `prompt` event).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingPrompt {
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub id: u64,
    pub session: String,
    pub kind: PromptKind,
    pub text: String,
    pub tier: Option<Tier>,
    pub reason: Option<String>,
    /// What a confirmed command will change in the workspace's files.
    #[serde(default)]
    pub preview: Vec<crate::diff::FileDiff>,
    /// What the user may tell keyless to stop asking about in this workspace.
    #[serde(default)]
    pub offer: Option<crate::policy::always::AllowOffer>,
    /// A `form` prompt's fields (the MCP server's requested schema, read).
    #[serde(default)]
    pub form: Option<crate::elicit::Form>,
}

/// `POST /v1/confirmations/{id}`: approve a confirmation, or answer a question.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptAnswer {
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub approve: bool,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub answer: Option<String>,
    /// With `approve`: remember the offer's `exact` or `like` rule for this workspace.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub always: Option<crate::policy::always::RuleKind>,
    /// A form's values by field name, with `approve` (omitted fields take their defaults).
    #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, unknown>"))]
    pub values: Option<serde_json::Map<String, serde_json::Value>>,
    /// A form without `approve`: cancel the whole tool call rather than decline the form.
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub cancel: bool,
}

/// The answer to `POST /v1/confirmations/{id}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answered {
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub id: u64,
    pub answered: bool,
}

/// One event of `GET /v1/events` (server-sent, one JSON object per `data:` line).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostEvent {
    /// A session was created or resumed.
    Session {
        session: String,
        turn: u32,
        batch: u32,
    },
    BatchStarted {
        session: String,
        batch_id: String,
        turn: u32,
        batch: u32,
    },
    BatchFinished {
        session: String,
        batch_id: String,
        status: BatchStatus,
        turn_ended: Option<TurnEnd>,
    },
    CommandStarted {
        session: String,
        number: u32,
        command: String,
        target: String,
    },
    CommandFinished {
        session: String,
        number: u32,
        command: String,
        target: String,
        status: ResultStatus,
        code: Option<String>,
        /// What the command changed in the workspace's files.
        #[serde(default)]
        diff: Vec<crate::diff::FileDiff>,
    },
    /// A `@@say` message.
    Say { session: String, text: String },
    /// A chunk of a running command's output.
    Output { session: String, text: String },
    /// A question now waits for the user.
    Prompt {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        id: u64,
        session: String,
        kind: PromptKind,
        text: String,
        tier: Option<Tier>,
        reason: Option<String>,
        #[serde(default)]
        preview: Vec<crate::diff::FileDiff>,
        #[serde(default)]
        offer: Option<crate::policy::always::AllowOffer>,
        #[serde(default)]
        form: Option<crate::elicit::Form>,
    },
    /// The question was answered, or timed out.
    PromptClosed {
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        id: u64,
        session: String,
    },
    /// A batch was undone.
    Undone { restored: Vec<String> },
    /// An `.as` run started, finished or failed.
    AsRun {
        run: String,
        state: AsRunState,
        error: Option<String>,
    },
    /// One event of a running `.as` program's trace, as it happens (a call when it returns).
    AsTrace {
        run: String,
        event: crate::lang::interp::TraceEvent,
    },
    /// A `keyless://chat` generation was asked for, claimed by a tab, answered, failed or
    /// cancelled (the whole request each time).
    Generation { generation: Generation },
}

/// `POST /v1/as/runs`: run a program of the workspace.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AsRunRequest {
    /// The `.as` file, relative to the workspace.
    pub file: String,
    #[cfg_attr(feature = "ts", ts(type = "unknown", optional))]
    pub input: serde_json::Value,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub agent: Option<String>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub func: Option<String>,
    /// A scripted model (the answers, in order) instead of the program's providers.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub mock: Option<Vec<String>>,
}

/// Where an `.as` run stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AsRunState {
    Running,
    Done,
    Failed,
}

/// One row of `GET /v1/as/runs`; also the answer to `POST`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsRunSummary {
    pub run: String,
    pub file: String,
    /// Unix seconds.
    pub started_at: i64,
    pub state: AsRunState,
    /// `KA_… message` of a failed run.
    pub error: Option<String>,
}

/// `GET /v1/as/runs/{run}`: the summary, the value and the whole trace.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AsRunDetail {
    #[serde(flatten)]
    pub summary: AsRunSummary,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub value: serde_json::Value,
    /// The whole trace (see docs/language.md, Trace).
    pub trace: crate::lang::interp::Trace,
}

impl HostEvent {
    /// The session the event concerns (`undone` concerns the workspace).
    #[must_use]
    pub fn session(&self) -> Option<&str> {
        match self {
            Self::Session { session, .. }
            | Self::BatchStarted { session, .. }
            | Self::BatchFinished { session, .. }
            | Self::CommandStarted { session, .. }
            | Self::CommandFinished { session, .. }
            | Self::Say { session, .. }
            | Self::Output { session, .. }
            | Self::Prompt { session, .. }
            | Self::PromptClosed { session, .. } => Some(session),
            Self::Undone { .. }
            | Self::AsRun { .. }
            | Self::AsTrace { .. }
            | Self::Generation { .. } => None,
        }
    }
}

/// The settings the wasm exports take (`checkReply`, `followReply`, `ReplyFollower`, …): each
/// optional, the defaults otherwise.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CoreOptions {
    #[cfg_attr(feature = "ts", ts(as = "Option<Pace>", optional))]
    pub pace: Option<String>,
    #[cfg_attr(feature = "ts", ts(as = "Option<Mode>", optional))]
    pub mode: Option<String>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub limits: Option<Limits>,
    /// Extra allow patterns, as in keyless.json's `allow`.
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<String>>", optional))]
    pub allow: Vec<String>,
    /// In a piece session, the current movement's tools: what it refuses, and its
    /// `allowed_commands` in place of `allow`.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub gate: Option<EffectiveTools>,
    /// What the host knows of the workspace (programs the shell would take from folders the
    /// model can write, files that steer programs), as the session start and each reply's answer
    /// give it: the executor judges with the same.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub context: Option<crate::policy::Context>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_carry_their_type_and_session() {
        let e = HostEvent::BatchFinished {
            session: "s-1".into(),
            batch_id: "b".into(),
            status: BatchStatus::Done,
            turn_ended: Some(TurnEnd::MaxIterationsPerTurn),
        };
        let v = serde_json::to_value(&e).expect("serialises");
        assert_eq!(v["type"], "batch_finished");
        assert_eq!(v["status"], "done");
        assert_eq!(v["turn_ended"], "MaxIterationsPerTurn");
        assert_eq!(e.session(), Some("s-1"));
        let back: HostEvent = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, e);
    }

    #[test]
    fn result_status_reads_back_what_it_writes() {
        for s in [ResultStatus::Ok, ResultStatus::Error, ResultStatus::Skipped] {
            assert_eq!(ResultStatus::from_name(s.as_str()), Some(s));
        }
        assert_eq!(ResultStatus::from_name("fine"), None);
    }

    #[test]
    fn requests_refuse_unknown_fields() {
        let e = serde_json::from_str::<ReplyRequest>(r#"{"reply":"x","turns":1}"#);
        assert!(e.is_err());
        let s: SessionRequest = serde_json::from_str(r#"{"task":"fix it"}"#).expect("reads");
        assert_eq!(s.task.as_deref(), Some("fix it"));
    }
}
