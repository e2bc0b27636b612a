//! Chat-site adapters as data, and the browser-side decisions the extension asks the core for:
//! which adapter serves a page, when a streamed reply is complete, how a results message is
//! delivered, and what the selector doctor says. Pure: the extension passes in what it observed.
//!
//! The adapters ship in `core/data/sites.json`; a user may override any selector (or add a site)
//! with a JSON object of the same shape in the extension's options page, without a new release.

mod adapters;
mod delivery;
mod doctor;
mod follow;
mod pick;
mod thread;
mod watch;

pub use adapters::*;
pub use delivery::*;
pub use doctor::*;
pub use follow::*;
pub use pick::*;
pub use thread::*;
pub use watch::*;

use crate::config::Mode;
use serde::Serialize;

/// The adapters that ship with keyless.
pub const DEFAULT_SITES_JSON: &str = include_str!("../../data/sites.json");

/// How long the reply text must stay unchanged, after the site stopped generating and `@@eof`
/// arrived, before the reply counts as complete — only on a page whose stop signal was never
/// seen during this reply (a broken `streaming` selector, or a reply too quick to show it). Where
/// the stop signal was seen, `@@eof` and its end are decisive.
pub const QUIET_MS: u64 = 700;
/// No complete reply this long after the message was sent: KA_REPLY_TIMEOUT.
pub const DEFAULT_REPLY_TIMEOUT_SECONDS: u32 = 600;
/// `Browser.TruncationBudgetSeconds` when nobody set it.
pub const DEFAULT_TRUNCATION_BUDGET_SECONDS: u32 = 90;
/// The port `keyless-host serve` listens on unless told otherwise, on 127.0.0.1.
pub const DEFAULT_PORT: u16 = 7457;

/// The extension's settings as they start, decided here so the extension, the host and the
/// documentation agree (the worker asks the wasm core for them).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", ts(rename = "Settings"))]
pub struct ExtensionDefaults {
    pub host_url: String,
    pub mode: Mode,
    pub pace: crate::Pace,
    /// No piece: a plain session.
    pub piece: String,
    pub auto_send: bool,
    pub truncation_budget_seconds: u32,
    pub reply_timeout_seconds: u32,
    /// JSON text of selector overrides keyed by site id; empty for none.
    pub selector_overrides: String,
    /// Suggest continuing in a new chat when a thread passes its site's `long_thread_chars`.
    pub suggest_new_chat: bool,
}

#[must_use]
pub fn extension_defaults() -> ExtensionDefaults {
    ExtensionDefaults {
        host_url: format!("http://127.0.0.1:{DEFAULT_PORT}"),
        mode: Mode::default(),
        pace: crate::Pace::default(),
        piece: String::new(),
        auto_send: true,
        truncation_budget_seconds: DEFAULT_TRUNCATION_BUDGET_SECONDS,
        reply_timeout_seconds: DEFAULT_REPLY_TIMEOUT_SECONDS,
        selector_overrides: String::new(),
        suggest_new_chat: true,
    }
}

#[cfg(test)]
mod tests;
