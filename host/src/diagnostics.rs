//! One renderer for the diagnostics keyless prints in a terminal, in rustc's layout
//! (annotate-snippets, the renderer rustc itself uses): the code, the message, the file, line and
//! column, the source line with a caret under the place, then help and notes.
//!
//! ```text
//! error[KA_AS_NAME]: unknown name "reslt"
//!  --> triage.as:12:16
//!    |
//! 12 |         return reslt
//!    |                ^^^^^
//!    |
//!    = help: did you mean "result"?
//! ```
//!
//! Colours only when standard error is a terminal and `NO_COLOR` is not set.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use std::io::IsTerminal;

/// A diagnostic to render: where the carrier came from does not matter (a static `.as` problem, a
/// run-time failure).
#[derive(Debug, Default, Clone)]
pub struct Report<'a> {
    pub code: &'a str,
    pub message: &'a str,
    /// The file as the user named it.
    pub file: Option<&'a str>,
    /// The file's text, for the snippet.
    pub source: Option<&'a str>,
    /// 1-based line and column (in characters); 0 when unknown. A line without a column (0)
    /// underlines the whole line.
    pub line: u32,
    pub column: u32,
    pub help: Option<&'a str>,
    /// Printed after the snippet, each as `= note: …` (the call stack of a run-time failure).
    pub notes: Vec<String>,
    pub warning: bool,
}

/// The byte range to underline: the word (or the one character) at the line and column.
fn span(source: &str, line: u32, column: u32) -> Option<std::ops::Range<usize>> {
    let start_of_line = if line <= 1 {
        0
    } else {
        let mut seen = 1;
        let mut at = None;
        for (i, b) in source.bytes().enumerate() {
            if b == b'\n' {
                seen += 1;
                if seen == line {
                    at = Some(i + 1);
                    break;
                }
            }
        }
        at?
    };
    let text = &source[start_of_line..];
    let text = &text[..text.find('\n').unwrap_or(text.len())];
    let text = text.strip_suffix('\r').unwrap_or(text);
    if column == 0 {
        // The whole line, without its indentation.
        let start = text.len() - text.trim_start().len();
        let end = text
            .trim_end()
            .len()
            .max(start + usize::from(!text.is_empty()));
        return Some(start_of_line + start..start_of_line + end.min(text.len()));
    }
    let col = usize::try_from(column - 1).ok()?;
    let start = text.char_indices().nth(col).map_or(text.len(), |(i, _)| i);
    let rest = &text[start..];
    let word = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(rest.len(), |(i, _)| i);
    let len = if word == 0 {
        rest.chars().next().map_or(0, char::len_utf8)
    } else {
        word
    };
    Some(start_of_line + start..start_of_line + start + len)
}

/// The diagnostic as text, styled for a terminal when `styled`.
#[must_use]
pub fn render_with(r: &Report<'_>, styled: bool) -> String {
    let level = if r.warning {
        Level::WARNING
    } else {
        Level::ERROR
    };
    let mut group = Group::with_title(level.primary_title(r.message).id(r.code));
    let located = match (r.file, r.source) {
        (Some(file), Some(src)) if r.line > 0 => {
            span(src, r.line, r.column).map(|s| (file, src, s))
        }
        _ => None,
    };
    group = match located {
        Some((file, src, s)) => group.element(
            Snippet::source(src)
                .path(file)
                .annotation(AnnotationKind::Primary.span(s)),
        ),
        None => match r.file {
            Some(file) if r.line > 0 && r.column > 0 => {
                group.element(Level::NOTE.message(format!("at {file}:{}:{}", r.line, r.column)))
            }
            Some(file) if r.line > 0 => {
                group.element(Level::NOTE.message(format!("at {file}:{}", r.line)))
            }
            Some(file) => group.element(Level::NOTE.message(format!("in {file}"))),
            None => group,
        },
    };
    if let Some(h) = r.help {
        group = group.element(Level::HELP.message(h));
    }
    for n in &r.notes {
        group = group.element(Level::NOTE.message(n.as_str()));
    }
    let report: [Group<'_>; 1] = [group];
    let renderer = if styled {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    renderer.render(&report)
}

/// The diagnostic as text for standard error: styled when it is a terminal and `NO_COLOR` is
/// unset.
#[must_use]
pub fn render(r: &Report<'_>) -> String {
    let styled = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    render_with(r, styled)
}

/// The diagnostic as text for standard output (reports such as `check` and `piece validate`
/// print there): styled when it is a terminal and `NO_COLOR` is unset.
#[must_use]
pub fn render_out(r: &Report<'_>) -> String {
    let styled = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    render_with(r, styled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_shows_the_line_and_a_caret_under_the_word() {
        let src = "main agent A {\n    main func(input) {\n        return reslt\n    }\n}\n";
        let text = render_with(
            &Report {
                code: "KA_AS_NAME",
                message: "unknown name \"reslt\"",
                file: Some("t.as"),
                source: Some(src),
                line: 3,
                column: 16,
                help: Some("did you mean \"result\"?"),
                notes: vec!["in A.main".into()],
                warning: false,
            },
            false,
        );
        assert!(
            text.starts_with("error[KA_AS_NAME]: unknown name \"reslt\"\n"),
            "{text}"
        );
        assert!(text.contains(" --> t.as:3:16\n"), "{text}");
        assert!(text.contains("3 |         return reslt\n"), "{text}");
        assert!(text.contains("  |                ^^^^^\n"), "{text}");
        assert!(text.contains("= help: did you mean \"result\"?"), "{text}");
        assert!(text.contains("= note: in A.main"), "{text}");
        // Out of range: no snippet, still the place.
        let text = render_with(
            &Report {
                code: "KA_AS_RUNTIME",
                message: "boom",
                file: Some("t.as"),
                source: Some("x"),
                line: 9,
                column: 1,
                ..Report::default()
            },
            false,
        );
        assert!(text.contains("at t.as:9:1"), "{text}");
    }
}
