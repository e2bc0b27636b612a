//! How a message goes into the chat: pasted, or attached as a file.

use super::*;
use serde::Serialize;

/// How a message goes into the chat.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Delivery {
    /// Paste the text into the composer.
    Paste,
    /// Attach the text as a file and paste `note` in the composer; paste the whole text when the
    /// upload fails (KA_ATTACHMENT_UPLOAD_FAILED).
    Attach { file_name: String, note: String },
}

/// Paste when the site accepts the text's length, else attach it as a file (when the site takes
/// files). `header` is the first line of the message.
#[must_use]
pub fn delivery(text: &str, site: &SiteAdapter, turn: u32, batch: u32) -> Delivery {
    if fits_paste(text, site) {
        return Delivery::Paste;
    }
    attachment(
        text,
        format!("keyless-results-t{turn}-b{batch}.txt"),
        ("The full results", "are"),
    )
}

/// The site takes `text` pasted: it is within the paste budget, or the site takes no files.
#[must_use]
pub fn fits_paste(text: &str, site: &SiteAdapter) -> bool {
    text.chars().count() <= site.max_paste_chars as usize || site.selectors.file_input.is_none()
}

/// `text` as the attachment `file_name`, with the note pasted beside it: the message's first line,
/// then where `what` is (“The full results” are, “The handover” is) and what to do with it.
#[must_use]
pub fn attachment(text: &str, file_name: String, what: (&str, &str)) -> Delivery {
    let (what, verb) = what;
    let chars = text.chars().count();
    let header = text.lines().next().unwrap_or("");
    let note = format!(
        "{header}\n{what} ({chars} characters) {verb} in the attached file {file_name}. Read all of it, then continue in AgentScript v1 only."
    );
    Delivery::Attach { file_name, note }
}
