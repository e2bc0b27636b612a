//! `:handover` in `run --interactive`: the session's record, read back from the store, made into
//! a handover by core and printed for pasting into a fresh chat (or written as a file to attach
//! when it is over the paste budget, the way long results go).

use crate::error::HostError;
pub(super) use crate::handover::{record, Source};
use crate::store::SessionState;
use keyless_core::handover::{handover, DEFAULT_PASTE_CHARS};
use keyless_core::site::Delivery;
use std::io::Write;

/// The commands the interactive loop takes in place of a reply, for its prompt and `:help`.
pub(super) const COMMANDS_HELP: &str = "Commands (typed alone on a line instead of a reply):
  :handover [CHARS]  print a handover of this session for a new chat (paste budget CHARS, default 30000); the loop goes on with the next reply
  :help              this list";

/// The paste budget a `:handover` line names (`None`: the line is not `:handover`).
///
/// # Errors
/// A budget that is not a whole number of characters.
pub(super) fn budget(line: &str) -> Option<Result<usize, String>> {
    let mut words = line.split_whitespace();
    if words.next() != Some(":handover") {
        return None;
    }
    Some(match (words.next(), words.next()) {
        (None, _) => Ok(DEFAULT_PASTE_CHARS),
        (Some(n), None) => n
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!(":handover takes a paste budget in characters, not \"{n}\"")),
        (Some(_), Some(_)) => Err(":handover takes at most one word, the paste budget".into()),
    })
}

/// Prints the handover (copied to the clipboard when there is one), or, over the budget, writes
/// it to `.agent/handover/` and prints the note to paste beside the attached file.
///
/// # Errors
/// When the store cannot be read.
pub(super) fn print(
    out: &mut impl Write,
    src: &Source<'_>,
    pos: &SessionState,
    budget: usize,
) -> Result<(), HostError> {
    let record = record(src, pos).map_err(HostError::from)?;
    let h = handover(&record, budget);
    // The dashboard shows where the session went: a chat the user pastes into from here.
    src.store
        .add_move(src.session, "terminal", None, (pos.turn, pos.batch))
        .map_err(HostError::from)?;
    let chars = h.text.chars().count();
    match &h.delivery {
        Delivery::Paste => {
            let copied = super::clipboard::copy_to_clipboard(&h.text, src.ws.root());
            let _ = writeln!(
                out,
                "--- handover: {chars} characters, within the paste budget of {budget}{} ---\n{}\n--- end of handover ---\nPaste it into a new chat, then paste the model's replies here as before.",
                if copied { " (on the clipboard)" } else { "" },
                keyless_core::text::printable(&h.text)
            );
        }
        Delivery::Attach { file_name, note } => {
            let path = src
                .ws
                .agent_dir()
                .and_then(|dir| {
                    let dir = dir.join("handover");
                    std::fs::create_dir_all(&dir)?;
                    let path = dir.join(file_name);
                    std::fs::write(&path, &h.text)?;
                    Ok(path)
                })
                .map_err(|e| HostError::Coded {
                    code: keyless_core::Code::FileIo,
                    message: format!("cannot write .agent/handover/{file_name}: {e}"),
                })?;
            let copied = super::clipboard::copy_to_clipboard(note, src.ws.root());
            let _ = writeln!(
                out,
                "--- handover: {chars} characters, over the paste budget of {budget} ---\nThe handover is in {}. Attach that file to a new chat and paste this note with it{}:\n{}\n--- end of handover ---\nThen paste the model's replies here as before.",
                path.display(),
                if copied { " (on the clipboard)" } else { "" },
                keyless_core::text::printable(note)
            );
        }
    }
    Ok(())
}
