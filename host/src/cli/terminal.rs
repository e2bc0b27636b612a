//! The terminal under `run` and `mcp call`: a line read after its question, Ctrl+C, and the
//! model's or a server's text escaped before it is shown next to a question.

use std::io::{self, BufRead, IsTerminal, Write};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Ctrl+C in `run`: the first sets `flag`, which cancels the running command (its whole process
/// group ends; its output so far is kept, as KA_CANCELLED), skips the rest of the batch and ends
/// the run once the session is recorded. A second Ctrl+C while the flag is set exits at once (130).
///
/// # Errors
/// When the handlers cannot be installed.
pub fn on_ctrl_c(flag: &Arc<AtomicBool>) -> io::Result<()> {
    #[cfg(unix)]
    {
        use signal_hook::consts::SIGINT;
        // Order matters: the exit is armed by a flag that is already set, so it fires on the second.
        signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(flag))?;
        signal_hook::flag::register(SIGINT, Arc::clone(flag))?;
    }
    #[cfg(not(unix))]
    let _ = flag;
    Ok(())
}

/// Text from the model as a terminal shows it: control characters escaped (`\u{1b}`), so an
/// escape sequence in a command line cannot redraw the prompt the user answers.
#[must_use]
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&keyless_core::text::printable(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out
}

#[must_use]
pub fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// Asks `prompt` on stderr and reads the answer typed after it; `None` at the end of input.
pub(super) fn read_line(prompt: &str) -> Option<String> {
    // An answer is read only from what is typed after the question shows: what came before
    // (the newline after a pasted reply's @@eof, a key pressed while a command ran) is
    // dropped, or it would answer the question with its default unseen. A terminal in its
    // line mode hands std one line per read, so nothing typed ahead sits in std's buffer.
    #[cfg(unix)]
    if stdin_is_terminal() {
        let _ = nix::sys::termios::tcflush(io::stdin(), nix::sys::termios::FlushArg::TCIFLUSH);
    }
    eprint!("{prompt}");
    let _ = io::stderr().flush();
    let mut line = String::new();
    io::stdin()
        .lock()
        .read_line(&mut line)
        .ok()
        .filter(|n| *n > 0)?;
    Some(line.trim_end().to_string())
}
