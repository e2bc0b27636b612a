//! When a streamed reply is complete: the watch verdict, `@@eof`, and the part a streaming parse may judge.

use super::*;
use crate::diag::Code;
use serde::{Deserialize, Serialize};

/// What the extension observed about the reply it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WatchInput {
    /// The reply contains at least one AgentScript command line (`@@…`).
    pub has_command: bool,
    /// The reply ends with `@@eof` (as the parser sees it).
    pub has_eof: bool,
    /// The site shows it is still generating (stop button, streaming flag).
    pub site_streaming: bool,
    /// The site's stop signal was seen at least once during this reply.
    pub stop_signal_seen: bool,
    /// Milliseconds since the reply's text last changed.
    pub quiet_ms: u64,
    /// Milliseconds since the message this reply answers was sent.
    pub waited_ms: u64,
    /// The page shows one of the site's "chat is full" phrases.
    pub exhausted: bool,
    /// The page shows one of the site's "usage limit reached" phrases.
    pub limited: bool,
    /// Whether a reply has appeared at all.
    pub has_reply: bool,
    /// Part of the reply could not be read from the page.
    pub incomplete: bool,
    pub truncation_budget_seconds: u32,
    pub reply_timeout_seconds: u32,
}

impl WatchInput {
    /// The watch's input for a reply's `text` as the page shows it: the format's facts (a command
    /// line began, its end marker is there) with the page's own.
    ///
    /// On a site with a `reply_done` mark, the reply streams until the mark shows and the text
    /// has then been quiet [`REPLY_DONE_QUIET_MS`] (AI Studio shows its last tokens after its Run
    /// button is back); the mark is the site's own signal, so no longer quiet is needed.
    #[must_use]
    pub fn of(text: &str, has_command: bool, has_eof: bool, page: &PageObservation) -> Self {
        WatchInput {
            has_command,
            has_eof,
            site_streaming: page.still_writing(),
            stop_signal_seen: page.stop_signal_seen || page.reply_done.is_some(),
            incomplete: page.incomplete,
            quiet_ms: page.quiet_ms,
            waited_ms: page.waited_ms,
            exhausted: page.exhausted,
            limited: page.limited,
            has_reply: !text.trim().is_empty(),
            truncation_budget_seconds: page.truncation_budget_seconds,
            reply_timeout_seconds: page.reply_timeout_seconds,
        }
    }
}

/// What to do with the reply now.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchVerdict {
    /// Keep following it.
    Waiting,
    /// `@@eof`, the site stopped, and the text was quiet: hand it to the host.
    Complete,
    /// The site stopped without `@@eof` and the text is not AgentScript at all: complete, and
    /// the parser's correction tells the model.
    CompleteWithoutEof,
    /// AgentScript without `@@eof` stayed that way longer than the budget: KA_REPLY_TRUNCATED.
    Truncated,
    /// No complete reply within the timeout: KA_REPLY_TIMEOUT.
    Timeout,
    /// The site says the chat is full: KA_CHAT_EXHAUSTED.
    Exhausted,
    /// The site says its usage limit was reached: KA_CHAT_LIMITED.
    Limited,
    /// The site finished, but part of the reply could not be read from the page:
    /// KA_REPLY_INCOMPLETE, and nothing of it runs.
    Incomplete,
}

impl WatchVerdict {
    /// The code to show for a verdict that ends the wait with a problem.
    #[must_use]
    pub fn code(self) -> Option<Code> {
        match self {
            WatchVerdict::Truncated => Some(Code::ReplyTruncated),
            WatchVerdict::Timeout => Some(Code::ReplyTimeout),
            WatchVerdict::Exhausted => Some(Code::ChatExhausted),
            WatchVerdict::Limited => Some(Code::ChatLimited),
            WatchVerdict::Incomplete => Some(Code::ReplyIncomplete),
            _ => None,
        }
    }
}

/// Completion needs the format's end marker and the site's own "stopped generating" signal; a
/// short quiet period too where the stop signal was never seen. A stall alone never completes a
/// reply.
#[must_use]
pub fn watch(i: &WatchInput) -> WatchVerdict {
    let budget_ms = u64::from(if i.truncation_budget_seconds == 0 {
        DEFAULT_TRUNCATION_BUDGET_SECONDS
    } else {
        i.truncation_budget_seconds
    }) * 1000;
    let timeout_ms = u64::from(if i.reply_timeout_seconds == 0 {
        DEFAULT_REPLY_TIMEOUT_SECONDS
    } else {
        i.reply_timeout_seconds
    }) * 1000;
    // A site's notice ends the wait once the site stopped (a full chat before a usage limit:
    // both need a new chat, and a full one needs it even after the limit resets).
    if i.exhausted && !i.site_streaming {
        return WatchVerdict::Exhausted;
    }
    if i.limited && !i.site_streaming {
        return WatchVerdict::Limited;
    }
    if i.has_reply && !i.site_streaming && i.incomplete {
        // The site's copy button may still answer for an editor the page script could not read
        // (its handler can write after an await): a short quiet first, and never complete.
        if i.quiet_ms >= QUIET_MS {
            return WatchVerdict::Incomplete;
        }
    } else if i.has_reply && !i.site_streaming {
        if i.has_eof && (i.stop_signal_seen || i.quiet_ms >= QUIET_MS) {
            return WatchVerdict::Complete;
        }
        if !i.has_command && i.quiet_ms >= QUIET_MS {
            return WatchVerdict::CompleteWithoutEof;
        }
    }
    if i.has_reply && i.has_command && !i.has_eof && i.quiet_ms >= budget_ms {
        return WatchVerdict::Truncated;
    }
    if i.waited_ms >= timeout_ms {
        return WatchVerdict::Timeout;
    }
    WatchVerdict::Waiting
}

/// How long the text must stay unchanged after a site's `reply_done` mark shows (Code Web Chat
/// waits 100 ms of quiet on AI Studio).
pub const REPLY_DONE_QUIET_MS: u64 = 150;
/// How long a reply whose `reply_done` mark has not shown must be quiet before it is judged
/// without the mark (a mark the site renamed must not hold every reply until the timeout).
pub const REPLY_DONE_WAIT_MS: u64 = 5_000;

/// Whether the reply ends with `@@eof`, ignoring blank lines and a closing fence after it.
#[must_use]
pub fn ends_with_eof(text: &str) -> bool {
    text.lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find(|l| !(l.starts_with("```") || l.starts_with("~~~")))
        .is_some_and(|l| l.eq_ignore_ascii_case("@@eof"))
}

/// The part of a reply a streaming parse may judge. While the site still writes, the last line
/// is unfinished, even when a closing fence line follows it (an open code block is rendered as a
/// closed one): a final fence-only line is dropped with the line break before it, and the partial
/// parse then leaves the line that is last unjudged.
#[must_use]
pub fn streaming_view(text: &str, site_streaming: bool) -> &str {
    if !site_streaming {
        return text;
    }
    let body = text.trim_end_matches(['\n', '\r', ' ', '\t']);
    let (before, last) = match body.rfind('\n') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => ("", body),
    };
    let fence = last.trim();
    let is_fence =
        fence.len() >= 3 && (fence.bytes().all(|b| b == b'`') || fence.bytes().all(|b| b == b'~'));
    if is_fence {
        before
    } else {
        text
    }
}

pub(super) fn has_command_line(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("@@"))
}
