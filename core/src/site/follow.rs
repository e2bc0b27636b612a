//! The overlay's follower: the report on a reply as it streams, parsed incrementally.

use super::*;
use crate::check::{Checked, CommandView};
use crate::config::Settings;
use crate::diag::{Code, Diagnostic};
use crate::policy::verdict::Judge;
use crate::reply::{Command, Control};
use serde::{Deserialize, Serialize};

/// The page-side facts `follow` takes besides the text (the text decides `@@eof` and commands).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageObservation {
    pub site_streaming: bool,
    /// The site's stop signal was seen at least once during this reply.
    pub stop_signal_seen: bool,
    /// Whether the newest reply shows the adapter's `reply_done` mark; `None` when the adapter
    /// has none.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub reply_done: Option<bool>,
    /// Part of the reply sits where the page does not show all of it (a code editor that keeps
    /// only its visible lines), and the page script could not read it.
    pub incomplete: bool,
    pub quiet_ms: u64,
    pub waited_ms: u64,
    pub exhausted: bool,
    /// The page shows one of the site's "usage limit reached" phrases.
    pub limited: bool,
    pub truncation_budget_seconds: u32,
    pub reply_timeout_seconds: u32,
}

impl PageObservation {
    /// Whether the site may still add to the reply: its stop signal shows, or its `reply_done`
    /// mark does not yet (or showed less than [`REPLY_DONE_QUIET_MS`] after the last change). A
    /// mark that never shows (the site changed it) is awaited [`REPLY_DONE_WAIT_MS`] of quiet at
    /// most: then the stop signal and `@@eof` decide, as on a site without one. Where no stop
    /// signal was seen at all during the reply (the adapter's is not recognized, or the site has
    /// none), the site may be writing until the text has been quiet for [`QUIET_MS`]: meanwhile
    /// the last line stays unjudged, so a half-written `@@ru` is never shown as a problem.
    #[must_use]
    pub fn still_writing(&self) -> bool {
        self.site_streaming
            || (!self.stop_signal_seen && self.reply_done.is_none() && self.quiet_ms < QUIET_MS)
            || match self.reply_done {
                Some(false) => self.quiet_ms < REPLY_DONE_WAIT_MS,
                Some(true) => self.quiet_ms < REPLY_DONE_QUIET_MS,
                None => false,
            }
    }
}

/// Everything the overlay shows about the reply it follows, and what to do with it now.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowReport {
    pub verdict: WatchVerdict,
    /// The code of a verdict that ends the wait with a problem.
    #[cfg_attr(feature = "ts", ts(type = "Code | null"))]
    pub code: Option<Code>,
    /// `true` once the reply is complete and `diagnostics` are final.
    pub r#final: bool,
    pub ok: bool,
    pub diagnostics: Vec<Diagnostic>,
    pub commands: Vec<CommandView>,
    pub control: Option<Control>,
    pub correction: Option<String>,
    /// Complete lines examined so far.
    pub lines: u32,
}

/// Follows a reply while it streams: what is certain so far (the partial parse) with each
/// command's policy tier, and the verdict on completion. Once the verdict completes the reply,
/// the report is the full check: the same verdict and correction the host will give.
#[must_use]
pub fn follow(
    text: &str,
    settings: &Settings,
    judge: &Judge,
    page: &PageObservation,
) -> FollowReport {
    Follower::new(*settings, judge.clone()).update(text, page)
}

/// A reply followed update by update. Each update parses only what follows the last block the
/// previous update saw closed (when the text before it is unchanged), and decides the policy only
/// for commands it has not seen, so an update costs about the size of what streamed in since.
/// Pure: the extension's worker keeps one per tab.
#[derive(Debug, Clone)]
pub struct Follower {
    settings: Settings,
    judge: Judge,
    /// The text of the last update.
    text: String,
    checkpoint: Option<crate::parse::Checkpoint>,
    /// Policy verdicts by command number, with the command line they were decided for.
    verdicts: Vec<Option<(String, crate::policy::Verdict)>>,
}

impl Follower {
    #[must_use]
    pub fn new(settings: Settings, judge: Judge) -> Self {
        Self {
            settings,
            judge,
            text: String::new(),
            checkpoint: None,
            verdicts: Vec::new(),
        }
    }

    /// A command's verdict (`policy::verdict::Judge::verdict`); a runcommand's is computed once per command
    /// line while the reply streams.
    fn verdict(&mut self, c: &Command) -> Option<crate::policy::Verdict> {
        let Some(line) = crate::policy::verdict::policed_line(c) else {
            return self.judge.verdict(c);
        };
        let slot = c.number as usize;
        if self.verdicts.len() <= slot {
            self.verdicts.resize(slot + 1, None);
        }
        if let Some((seen, v)) = &self.verdicts[slot] {
            if seen == line {
                return Some(v.clone());
            }
        }
        let v = self.judge.verdict(c)?;
        self.verdicts[slot] = Some((line.to_string(), v.clone()));
        Some(v)
    }

    fn row(&mut self, c: &Command, run: Option<bool>, skip: Option<String>) -> CommandView {
        let v = self.verdict(c);
        CommandView::new(c, run, skip, v)
    }

    /// The page's text now, and what the page shows about it.
    pub fn update(&mut self, text: &str, page: &PageObservation) -> FollowReport {
        let verdict = watch(&WatchInput::of(
            text,
            has_command_line(text),
            ends_with_eof(text),
            page,
        ));
        let complete = matches!(
            verdict,
            WatchVerdict::Complete | WatchVerdict::CompleteWithoutEof | WatchVerdict::Truncated
        );
        if complete {
            let Checked {
                out,
                planned,
                correction,
            } = crate::check::checked_with(text, &self.settings, &self.judge.offered());
            let commands = out
                .reply
                .commands
                .iter()
                .map(|c| {
                    let e = planned.as_ref().and_then(|p| p.entry(c.number));
                    self.row(
                        c,
                        Some(e.is_some_and(|e| e.run)),
                        e.and_then(|e| e.skip).map(|s| s.to_string()),
                    )
                })
                .collect();
            return FollowReport {
                verdict,
                code: verdict.code(),
                r#final: true,
                ok: out.ok(),
                correction,
                control: planned.map(|p| p.control),
                commands,
                lines: u32::try_from(text.lines().count()).unwrap_or(u32::MAX),
                diagnostics: out.diagnostics,
            };
        }
        let view = streaming_view(text, page.still_writing());
        // The checkpoint holds while the text before it is what the last update saw.
        let same = self.checkpoint.as_ref().is_some_and(|cp| {
            view.len() >= cp.offset
                && self.text.len() >= cp.offset
                && view.as_bytes()[..cp.offset] == self.text.as_bytes()[..cp.offset]
        });
        let from = self.checkpoint.take().filter(|_| same);
        let offered = self.judge.offered();
        let (out, next) =
            crate::parse::parse_partial_resumable(view, &self.settings.limits, &offered, from);
        self.checkpoint = next;
        self.text.clear();
        self.text.push_str(view);
        let commands = out
            .reply
            .commands
            .iter()
            .map(|c| self.row(c, None, None))
            .collect();
        // Without a recognized stop signal (none seen during the reply, no done mark), the page
        // may still be writing anything until the text is quiet: no problem shows meanwhile (a
        // site's own streaming marks, a half-written line), the rows do.
        let unsure = !page.site_streaming
            && !page.stop_signal_seen
            && page.reply_done.is_none()
            && page.quiet_ms < QUIET_MS;
        let diagnostics = if unsure { Vec::new() } else { out.diagnostics };
        FollowReport {
            verdict,
            code: verdict.code(),
            r#final: false,
            ok: diagnostics.is_empty(),
            commands,
            control: out.reply.control(),
            correction: None,
            lines: out.complete_lines,
            diagnostics,
        }
    }
}
