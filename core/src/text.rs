//! Small text helpers shared by the parser and the message renderers.

/// The first `max` characters of `s`, with `…` appended when something was cut.
#[must_use]
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((idx, _)) => format!("{}…", &s[..idx]),
    }
}

/// Number of Unicode scalar values, counted only when the byte length could exceed `limit`.
#[must_use]
pub fn chars_over(s: &str, limit: usize) -> Option<usize> {
    if s.len() <= limit {
        return None;
    }
    let n = s.chars().count();
    (n > limit).then_some(n)
}

/// Characters that reorder or hide text where a person reads it: direction marks, embeddings,
/// overrides and isolates, zero-width and invisible spaces and fillers, the byte-order mark,
/// soft hyphens, interlinear annotations and tag characters (inclusive ranges of code points).
/// The joiners (U+200C, U+200D) and variation selectors are not here: scripts and emoji need them.
/// The extension's views read the same table (`extension/src/generated/core.ts`).
pub const HIDDEN_RANGES: &[(u32, u32)] = &[
    (0x00ad, 0x00ad),
    (0x034f, 0x034f),
    (0x061c, 0x061c),
    (0x115f, 0x1160),
    (0x17b4, 0x17b5),
    (0x180b, 0x180e),
    (0x200b, 0x200b),
    (0x200e, 0x200f),
    (0x2028, 0x202e),
    (0x205f, 0x206f),
    (0x3164, 0x3164),
    (0xfeff, 0xfeff),
    (0xffa0, 0xffa0),
    (0xfff9, 0xfffb),
    (0xe0000, 0xe007f),
];

/// Whether `c` is shown as its code point by [`printable`]: a control character other than
/// newline and tab, or one of [`HIDDEN_RANGES`].
#[must_use]
pub fn is_hidden(c: char) -> bool {
    let n = u32::from(c);
    (c.is_control() && c != '\n' && c != '\t')
        || HIDDEN_RANGES.iter().any(|(a, b)| (*a..=*b).contains(&n))
}

/// Text from outside (the model's, a command's, an MCP server's) as a person reads it, on a page
/// or a terminal: every character that could hide, reorder or restyle what is shown (terminal
/// escape sequences and every other control character but newline and tab, direction overrides,
/// invisible characters: [`is_hidden`]) is shown as its code point, `<U+202E>`, so what a person
/// reads is what runs. A carriage return right before a newline stays (a CRLF line).
#[must_use]
pub fn printable(s: &str) -> String {
    if !s.chars().any(is_hidden) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\r' && it.peek() == Some(&'\n') {
            out.push(c);
        } else if is_hidden(c) {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Escapes a snippet for a one-line, double-quoted display.
#[must_use]
pub fn escape_snippet(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Quotes a line of the reply for a diagnostic: trimmed, escaped, at most 60 characters.
#[must_use]
pub fn quote(line: &str) -> String {
    format!("\"{}\"", escape_snippet(&truncate_chars(line.trim(), 60)))
}

/// `word` as one word for a POSIX shell: single-quoted, `'` written `'\''`. The shell reads it as
/// one literal argument whatever it holds (no expansion, no splitting).
#[must_use]
pub fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Levenshtein distance, bounded to short words (names), for "did you mean" hints.
#[must_use]
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Where a 1-based line of a text sits in JS string positions: UTF-16 code-unit offsets
/// `start..end`, the line break (`\n` or `\r\n`) excluded.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Utf16Span {
    pub line: u32,
    pub start: u32,
    pub end: u32,
}

/// The UTF-16 span of each requested line (`None` past the end), in one pass over the text.
#[must_use]
pub fn utf16_line_spans(text: &str, lines: &[u32]) -> Vec<Option<Utf16Span>> {
    let mut starts = Vec::new();
    let mut pos: u32 = 0;
    let mut line_start: u32 = 0;
    let mut content_end: u32 = 0;
    for c in text.chars() {
        let w = u32::try_from(c.len_utf16()).unwrap_or(2);
        if c == '\n' {
            starts.push((line_start, content_end));
            pos = pos.saturating_add(w);
            line_start = pos;
            content_end = pos;
            continue;
        }
        pos = pos.saturating_add(w);
        if c != '\r' {
            content_end = pos;
        }
    }
    starts.push((line_start, content_end));
    lines
        .iter()
        .map(|&line| {
            let i = usize::try_from(line).ok()?.checked_sub(1)?;
            starts
                .get(i)
                .map(|&(start, end)| Utf16Span { line, start, end })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(truncate_chars("abcdef", 3), "abc…");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("ééé", 2), "éé…");
        assert_eq!(chars_over("ééé", 3), None);
        assert_eq!(chars_over("éééé", 3), Some(4));
        assert_eq!(
            escape_snippet("a\"b\\c\n\t\u{1}"),
            "a\\\"b\\\\c\\n\\t\\u{1}"
        );
        assert_eq!(edit_distance("newfle", "newfile"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn utf16_spans_count_code_units() {
        // "a😀" is 3 UTF-16 units; the CRLF is not part of the line.
        let t = "a\u{1F600}\r\nb\n\n";
        let spans = utf16_line_spans(t, &[1, 2, 3, 4, 5, 0]);
        let at = |l: u32, s: u32, e: u32| {
            Some(Utf16Span {
                line: l,
                start: s,
                end: e,
            })
        };
        assert_eq!(
            spans,
            vec![
                at(1, 0, 3),
                at(2, 5, 6),
                at(3, 7, 7),
                at(4, 8, 8),
                None,
                None
            ]
        );
    }

    #[test]
    fn printable_shows_what_a_screen_would_act_on() {
        assert_eq!(
            printable("Deploy \u{1b}[31mnow\u{1b}[0m?"),
            "Deploy <U+001B>[31mnow<U+001B>[0m?"
        );
        // Cursor up and erase line: a line of a diff cannot be hidden.
        assert_eq!(
            printable("a\n\u{1b}[1A\u{1b}[2Kb"),
            "a\n<U+001B>[1A<U+001B>[2Kb"
        );
        // OSC 52 (clipboard) is shown, not sent to the terminal.
        assert_eq!(
            printable("x\u{1b}]52;c;ZXZpbA==\u{7}"),
            "x<U+001B>]52;c;ZXZpbA==<U+0007>"
        );
        assert_eq!(
            printable("x\u{9b}1;2Hy\rz\u{0}"),
            "x<U+009B>1;2Hy<U+000D>z<U+0000>"
        );
        assert_eq!(
            printable("abc\u{202e}fed\u{2066}"),
            "abc<U+202E>fed<U+2066>"
        );
        assert_eq!(
            printable("a\u{200e}b\u{200b}c\u{feff}d\u{061c}\u{e0041}"),
            "a<U+200E>b<U+200B>c<U+FEFF>d<U+061C><U+E0041>"
        );
        assert_eq!(printable("👩\u{200d}💻"), "👩\u{200d}💻");
        assert_eq!(printable("crlf\r\nline"), "crlf\r\nline");
        assert_eq!(
            printable("two\nlines\tand a tab\u{1b}"),
            "two\nlines\tand a tab<U+001B>"
        );
        assert_eq!(printable("é ✓ 日本"), "é ✓ 日本");
    }

    proptest::proptest! {
        #[test]
        fn printable_leaves_no_control_but_newline_and_tab(s in "\\PC*|[\\x00-\\x7f\\u{9b}\\u{202e}]*") {
            let p = printable(&s);
            let bare = p.replace("\r\n", "\n");
            proptest::prop_assert!(bare.chars().all(|c| !is_hidden(c)));
            proptest::prop_assert!(!p.contains('\u{202e}'), "a direction override is left");
            // Idempotent: what is shown once is shown the same again.
            proptest::prop_assert_eq!(printable(&p), p);
        }
    }
}
