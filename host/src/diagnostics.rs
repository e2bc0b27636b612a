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
use keyless_core::diag::{Diagnostic, Severity};
use std::io::IsTerminal;

/// The diagnostic as text, styled for a terminal when `styled`. `source` is the text of the
/// diagnostic's file, for the snippet; without it (or when the line is past its end) the place is
/// given as a note. A diagnostic with a `key` (a piece's `movements[1].name`) names it before the
/// message.
#[must_use]
pub fn render_with(d: &Diagnostic, source: Option<&str>, styled: bool) -> String {
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let title = match d.key.as_deref().filter(|k| !k.is_empty()) {
        Some(key) => format!("{key}: {}", d.message),
        None => d.message.clone(),
    };
    let mut group = Group::with_title(level.primary_title(title).id(d.code.as_str()));
    let file = d.file.as_deref();
    let located = match (file, source) {
        (Some(file), Some(src)) => d.byte_range(src).map(|s| (file, src, s)),
        _ => None,
    };
    group = match located {
        Some((file, src, s)) => group.element(
            Snippet::source(src)
                .path(file)
                .annotation(AnnotationKind::Primary.span(s)),
        ),
        None => match (file, d.line, d.column) {
            (Some(file), Some(line), Some(column)) => {
                group.element(Level::NOTE.message(format!("at {file}:{line}:{column}")))
            }
            (Some(file), Some(line), None) => {
                group.element(Level::NOTE.message(format!("at {file}:{line}")))
            }
            (Some(file), None, _) => group.element(Level::NOTE.message(format!("in {file}"))),
            (None, Some(line), _) => group.element(Level::NOTE.message(format!("at line {line}"))),
            (None, None, _) => group,
        },
    };
    if let Some(h) = &d.help {
        group = group.element(Level::HELP.message(h.as_str()));
    }
    for n in &d.notes {
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
pub fn render(d: &Diagnostic, source: Option<&str>) -> String {
    let styled = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    render_with(d, source, styled)
}

/// The diagnostic as text for standard output (reports such as `check` and `piece validate`
/// print there): styled when it is a terminal and `NO_COLOR` is unset.
#[must_use]
pub fn render_out(d: &Diagnostic, source: Option<&str>) -> String {
    let styled = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    render_with(d, source, styled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use keyless_core::diag::{Code, Pos};

    #[test]
    fn a_report_shows_the_line_and_a_caret_under_the_word() {
        let src = "main agent A {\n    main func(input) {\n        return reslt\n    }\n}\n";
        let d = Diagnostic::at(
            Code::AsName,
            Pos {
                line: 3,
                column: 16,
            },
            "unknown name \"reslt\"",
        )
        .in_file("t.as")
        .with_help("did you mean \"result\"?")
        .with_note("in A.main");
        let text = render_with(&d, Some(src), false);
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
        let d = Diagnostic::at(Code::AsRuntime, Pos { line: 9, column: 1 }, "boom").in_file("t.as");
        let text = render_with(&d, Some("x"), false);
        assert!(text.contains("at t.as:9:1"), "{text}");
        // An end past the start underlines the whole span, across the words.
        let d = Diagnostic::at(
            Code::AsRuntime,
            Pos {
                line: 3,
                column: 16,
            },
            "boom",
        )
        .in_file("t.as")
        .with_end(Pos {
            line: 3,
            column: 21,
        });
        let text = render_with(&d, Some("a\nb\n        return r.slt\n"), false);
        assert!(
            text.ends_with("  |                ^^^^^\n")
                || text.ends_with("  |                ^^^^^"),
            "{text}"
        );
        // A warning with a key (a piece's place) and no column underlines the whole line.
        let d = Diagnostic::new(Code::PieceUnknownTool, Some(2), "\"nope\" is dropped")
            .with_severity(Severity::Warning)
            .with_key("movements[0].allowed_tools[1]")
            .in_file("p.yaml");
        let text = render_with(&d, Some("name: p\n  - nope  \n"), false);
        assert!(
            text.starts_with("warning[KA_PIECE_UNKNOWN_TOOL]: movements[0].allowed_tools[1]: \"nope\" is dropped"),
            "{text}"
        );
        assert!(text.contains("  |   ^^^^^^"), "{text}");
    }
}
