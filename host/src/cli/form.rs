//! A server's form (MCP elicitation) asked on the terminal, field by field.

use super::terminal::shown;
use std::collections::VecDeque;
use std::io::Write;

/// A server's form (MCP elicitation) on the terminal. The next `--answer` answers it first
/// (`accept` takes the defaults, `decline`, `cancel`, or one JSON object of values); else, with a
/// terminal, each field is asked in turn (Enter keeps its default); else it is declined. The
/// server's words are shown as its own, escaped; what keyless says goes to `out`.
pub fn terminal_form(
    server: &str,
    form: &keyless_core::elicit::Form,
    answers: &mut VecDeque<String>,
    interactive: bool,
    out: &mut dyn Write,
) -> keyless_core::elicit::Answer {
    use keyless_core::elicit::{Answer, Kind};
    let _ = writeln!(
        out,
        "[form] the MCP server \"{}\" asks: {}",
        shown(server),
        shown(form.message.trim_end())
    );
    if let Some(a) = answers.pop_front() {
        return match form.scripted(&a) {
            Ok(answer) => {
                let _ = writeln!(out, "[answer] {}", answer.action());
                answer
            }
            Err(e) => {
                let _ = writeln!(out, "[answer] {}: {e}; declined", shown(&a));
                Answer::Decline
            }
        };
    }
    if !interactive {
        let _ = writeln!(
            out,
            "[no answer: no terminal; pass --answer accept, decline, cancel or a JSON object]"
        );
        return Answer::Decline;
    }
    match super::terminal::read_line("Fill it in? [y]es, [n]o (decline), [c]ancel the call: ")
        .map(|a| a.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("y" | "yes") => {}
        Some("n" | "no") => return Answer::Decline,
        _ => return Answer::Cancel,
    }
    let mut typed = std::collections::BTreeMap::new();
    for f in &form.fields {
        let hint = match &f.kind {
            Kind::Text { .. } => "text".to_string(),
            Kind::Number { integer: true, .. } => "a whole number".to_string(),
            Kind::Number { .. } => "a number".to_string(),
            Kind::Boolean => "yes or no".to_string(),
            Kind::Choice { options } | Kind::Choices { options, .. } => options
                .iter()
                .enumerate()
                .map(|(i, (_, label))| format!("{} {}", i + 1, shown(label)))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let default = f
            .default
            .as_ref()
            .map(|d| format!(" [{}]", shown(&d.to_string())))
            .unwrap_or_default();
        if let Some(d) = &f.description {
            let _ = writeln!(out, "  {}", shown(d));
        }
        loop {
            let Some(line) = super::terminal::read_line(&format!(
                "{} ({hint}){}{default}: ",
                shown(f.label()),
                if f.required { " *" } else { "" }
            )) else {
                return Answer::Cancel;
            };
            if line.trim().is_empty() {
                if f.default.is_some() || !f.required {
                    break;
                }
                eprintln!("  required");
                continue;
            }
            match f.read(&line) {
                Ok(_) => {
                    typed.insert(f.name.clone(), line);
                    break;
                }
                Err(e) => eprintln!("  {e}"),
            }
        }
    }
    match form.accept_typed(&typed) {
        Ok(content) => Answer::Accept(content),
        Err(e) => {
            eprintln!("  {e}; declined");
            Answer::Decline
        }
    }
}
