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
    let chars = text.chars().count();
    if chars <= site.max_paste_chars as usize || site.selectors.file_input.is_none() {
        return Delivery::Paste;
    }
    let file_name = format!("keyless-results-t{turn}-b{batch}.txt");
    let header = text.lines().next().unwrap_or("");
    let note = format!(
        "{header}\nThe full results ({chars} characters) are in the attached file {file_name}. Read all of it, then continue in AgentScript v1 only."
    );
    Delivery::Attach { file_name, note }
}
