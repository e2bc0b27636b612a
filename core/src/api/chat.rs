//! The wire types of `keyless://chat`: a `.as` program's generations, and the chat tab that
//! answers them (`/v1/generations`, `/v1/chat-tab`).

use serde::{Deserialize, Serialize};

/// `POST /v1/generations`: a `.as` program's `generate` on `keyless://chat` (sent by
/// `keyless-host as run`). The `id` is the caller's: sending the same request again (a retry)
/// gives the same generation, never a second one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationRequest {
    pub id: String,
    /// The `.as` run asking.
    pub run: String,
    /// The program's file, for the overlay and the dashboard.
    #[serde(default)]
    pub file: String,
    /// 1 for a generate's first attempt; 2, 3, … for its retries after a shape mismatch.
    pub attempt: u32,
    /// The program's whole prompt.
    pub prompt: String,
    /// Why the previous attempt's answer was refused (attempts after the first).
    #[serde(default)]
    pub correction: Option<String>,
    /// The shape the answer must fit (core's `lang::ast::Shape`, as JSON).
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub shape: serde_json::Value,
}

/// Where a generation stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GenerationState {
    /// Waiting for the chat tab to take it.
    Pending,
    /// A tab pasted it and follows the reply.
    Claimed,
    Answered,
    /// The tab could not get an answer (`error` says why, with its code).
    Failed,
    Cancelled,
}

impl GenerationState {
    /// Whether the generation has ended (an answer, a failure or a cancel).
    #[must_use]
    pub fn finished(self) -> bool {
        matches!(self, Self::Answered | Self::Failed | Self::Cancelled)
    }
}

/// A generation as the host keeps it: the request, the text pasted into the chat, and its end.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    pub id: String,
    pub run: String,
    pub file: String,
    pub attempt: u32,
    /// What the chat is sent (core's `lang::chat::message`).
    pub text: String,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub shape: serde_json::Value,
    /// The shape as the prompt shows it.
    pub shape_text: String,
    pub state: GenerationState,
    /// The chat site whose tab took it.
    pub site: Option<String>,
    /// The reply's text, as read from the page.
    pub answer: Option<String>,
    /// `KA_… message` of a failed or cancelled generation.
    pub error: Option<String>,
    /// What the tab last saw of the reply, in words (core's `GenerationReport::seen`): a
    /// timeout says it, rather than that the chat did not answer.
    #[serde(default)]
    pub seen: Option<String>,
    /// Unix milliseconds: asked, taken by a tab, ended.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub asked_at: u64,
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub claimed_at: Option<u64>,
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub ended_at: Option<u64>,
}

/// `POST /v1/generations/{id}`: the tab's answer, or why there is none. Sending the same answer
/// again is harmless; a different one after the first is refused.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationAnswer {
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub answer: Option<String>,
    /// `KA_… message`: the reply was truncated, the chat is full, the tab closed, ….
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub error: Option<String>,
}

/// `POST /v1/generations/{id}/claim`: a tab takes a generation (the first claim wins).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationClaim {
    /// The chat site of the tab (its adapter's name).
    pub site: String,
}

/// `POST /v1/generations/{id}/seen`: what the tab sees of the reply, each time it changes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationSeen {
    /// At most 200 characters; longer is cut.
    pub seen: String,
}

/// `POST /v1/chat-tab`: the tab that answers programs says it is there (every 20 s while it
/// is), or that it no longer is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatTabReport {
    /// The chat site's adapter name; `null` when the user turned answering programs off.
    pub site: Option<String>,
}

/// The answer to `POST /v1/chat-tab`: the generations waiting for a tab.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatTabState {
    pub pending: Vec<Generation>,
}
