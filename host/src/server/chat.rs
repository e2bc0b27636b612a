//! The state `keyless://chat` keeps between requests: the generations programs asked the chat
//! tab for, the tab that answers them, and the run that holds the chat. The handlers in
//! `generations.rs` change it; `state.rs` owns one behind a lock.

use keyless_core::api::Generation;
use std::collections::BTreeMap;
use std::time::Instant;

/// The chat's generations and who may use the chat.
#[derive(Debug, Default)]
pub(crate) struct Chat {
    pub(super) all: BTreeMap<String, Generation>,
    /// The order generations were asked in (ids), oldest first.
    pub(super) order: Vec<String>,
    /// The tab that answers programs: its site, and when it last said so.
    pub(super) tab: Option<(String, Instant)>,
    /// The run holding the chat, and when it last asked or got an answer.
    pub(super) holder: Option<(String, Instant)>,
}
