//! Renders a reply back to canonical AgentScript v1 text. `parse(render(r)) == r` for every reply
//! whose payloads can be written (the round-trip property test holds this).

use crate::reply::{Command, OnError, Reply};
use std::fmt::Write as _;

/// Picks a closing marker that no line of `text` equals, adding a nonce when needed.
fn closer_for(name: &str, nonce: Option<&str>, text: &str) -> Option<String> {
    let clash = |closer: &str| text.lines().any(|l| l.trim().eq_ignore_ascii_case(closer));
    if let Some(n) = nonce {
        let c = format!("{name}:{n}>>>");
        if !clash(&c) {
            return Some(n.to_string());
        }
    } else if !clash(&format!("{name}>>>")) {
        return None;
    }
    let mut i = 1u32;
    loop {
        let n = format!("k{i}");
        if !clash(&format!("{name}:{n}>>>")) {
            return Some(n);
        }
        i += 1;
    }
}

/// Renders one command block.
pub fn render_command(out: &mut String, c: &Command) {
    let _ = write!(out, "@@{}", c.kind);
    if let Some(arg) = &c.argument {
        let _ = write!(out, " {arg}");
    }
    let o = &c.options;
    if let Some(e) = o.on_error {
        let _ = write!(
            out,
            " on_error={}",
            match e {
                OnError::Continue => "continue",
                OnError::Stop => "stop",
            }
        );
    }
    if let Some(t) = o.timeout_seconds {
        let _ = write!(out, " timeout={t}");
    }
    if let Some(n) = &o.next {
        let _ = write!(out, " next={n}");
    }
    if let Some(s) = o.status {
        let _ = write!(out, " status={}", s.as_str());
    }
    out.push('\n');
    for s in &c.sections {
        let nonce = closer_for(s.name.as_str(), s.nonce.as_deref(), &s.text);
        let suffix = nonce.map(|n| format!(":{n}")).unwrap_or_default();
        let _ = writeln!(out, "<<<{}{suffix}", s.name);
        if !s.text.is_empty() {
            out.push_str(&s.text);
            out.push('\n');
        }
        let _ = writeln!(out, "{}{suffix}>>>", s.name);
    }
    out.push_str("@@end\n");
}

/// Renders a whole reply, ending with `@@eof`.
#[must_use]
pub fn render_reply(reply: &Reply) -> String {
    let mut out = String::new();
    for c in &reply.commands {
        render_command(&mut out, c);
    }
    out.push_str("@@eof\n");
    out
}
