//! Text-file decisions the executor applies: BOM and line endings, the editfile match, and
//! `.editorconfig` `end_of_line`. Pure: callers pass bytes and file contents in.

use crate::text::{edit_distance, truncate_chars};
use serde::Serialize;

const BOM: &str = "\u{feff}";

/// A line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Eol {
    Lf,
    CrLf,
}

impl Eol {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::CrLf => "\r\n",
        }
    }

    /// The platform default when nothing else decides.
    #[must_use]
    pub const fn platform() -> Eol {
        if cfg!(windows) {
            Eol::CrLf
        } else {
            Eol::Lf
        }
    }
}

/// A decoded text file: BOM, dominant ending, and LF-normalised text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    pub bom: bool,
    /// The dominant ending, when the file has any line ending.
    pub eol: Option<Eol>,
    /// The text without BOM, with every CRLF turned into LF.
    pub text: String,
}

/// Counts (CRLF, lone LF) endings.
#[must_use]
pub fn count_endings(text: &str) -> (usize, usize) {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    (crlf, lf)
}

/// The dominant ending; ties go to CRLF only when there are no lone LFs.
#[must_use]
pub fn dominant(text: &str) -> Option<Eol> {
    match count_endings(text) {
        (0, 0) => None,
        (crlf, lf) if crlf > lf => Some(Eol::CrLf),
        _ => Some(Eol::Lf),
    }
}

impl TextFile {
    /// Decodes UTF-8 bytes; `None` for anything that is not UTF-8 text.
    #[must_use]
    pub fn decode(bytes: &[u8]) -> Option<TextFile> {
        let s = std::str::from_utf8(bytes).ok()?;
        if s.contains('\0') {
            return None;
        }
        let (bom, body) = match s.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        Some(TextFile {
            bom,
            eol: dominant(body),
            text: body.replace("\r\n", "\n"),
        })
    }

    /// Encodes LF text with this file's BOM and the given ending (every line, so a CRLF file stays
    /// 100% CRLF).
    #[must_use]
    pub fn encode(text: &str, bom: bool, eol: Eol) -> Vec<u8> {
        let mut out = String::with_capacity(text.len() + 16);
        if bom {
            out.push_str(BOM);
        }
        let normalized = text.replace("\r\n", "\n");
        match eol {
            Eol::Lf => out.push_str(&normalized),
            Eol::CrLf => out.push_str(&normalized.replace('\n', "\r\n")),
        }
        out.into_bytes()
    }
}

/// Whole-file content from a payload: the payload's lines, each ending in a newline.
#[must_use]
pub fn file_content(payload: &str) -> String {
    if payload.is_empty() {
        String::new()
    } else {
        format!("{payload}\n")
    }
}

/// Why an editfile FIND did not match exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum EditMiss {
    /// No match; the lines of the file closest to FIND's first line, as (1-based line, text).
    None {
        closest: Vec<(usize, String)>,
        whitespace_hint: Option<usize>,
    },
    /// Several matches, at these 1-based lines.
    Many { lines: Vec<usize> },
}

impl EditMiss {
    /// The reason text for the results message.
    #[must_use]
    pub fn reason(&self) -> String {
        match self {
            EditMiss::None {
                closest,
                whitespace_hint,
            } => {
                let mut r = String::from("FIND text matched 0 times (must match exactly once)");
                if let Some(line) = whitespace_hint {
                    r.push_str(&format!("\nFIND matches at line {line} if indentation and trailing spaces are ignored: copy the lines exactly."));
                }
                if !closest.is_empty() {
                    r.push_str("\nclosest lines in the file:");
                    for (n, text) in closest {
                        r.push_str(&format!("\n  {n:>5} | {}", truncate_chars(text, 120)));
                    }
                }
                r
            }
            EditMiss::Many { lines } => {
                // Overlapping occurrences can share a line: each line is named once.
                let mut distinct = lines.clone();
                distinct.dedup();
                let shown: Vec<String> =
                    distinct.iter().take(20).map(ToString::to_string).collect();
                let more = if distinct.len() > 20 {
                    format!(" and {} more", distinct.len() - 20)
                } else {
                    String::new()
                };
                format!(
                    "FIND text matched {} times (must match exactly once), at lines {}{more}; add surrounding lines to FIND to make it unique",
                    lines.len(),
                    shown.join(", ")
                )
            }
        }
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// Replaces the single occurrence of `find` in LF text.
///
/// # Errors
/// [`EditMiss`] when `find` occurs zero or several times.
pub fn apply_edit(text: &str, find: &str, replace: &str) -> Result<String, EditMiss> {
    let find = find.replace("\r\n", "\n");
    let starts = occurrences(text, &find);
    match starts.as_slice() {
        [one] => {
            let mut out = String::with_capacity(text.len() + replace.len());
            out.push_str(&text[..*one]);
            out.push_str(&replace.replace("\r\n", "\n"));
            out.push_str(&text[one + find.len()..]);
            Ok(out)
        }
        [] => Err(EditMiss::None {
            closest: closest_lines(text, &find),
            whitespace_hint: loose_match(text, &find),
        }),
        many => Err(EditMiss::Many {
            lines: many.iter().map(|b| line_of(text, *b)).collect(),
        }),
    }
}

/// Where `find` starts in `text`, overlapping occurrences included: in `aaa`, `aa` occurs twice
/// (the seed's "fails unless FIND matches exactly once" counts every position).
fn occurrences(text: &str, find: &str) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(find.as_bytes());
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(hit) = text
        .get(from..)
        .and_then(|rest| finder.find(rest.as_bytes()))
    {
        let at = from + hit;
        starts.push(at);
        // The next try starts one character further, so an overlapping occurrence is found too.
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    starts
}

/// The line where FIND matches when each line is compared trimmed.
fn loose_match(text: &str, find: &str) -> Option<usize> {
    let want: Vec<&str> = find.lines().map(str::trim).collect();
    if want.is_empty() || want.iter().all(|l| l.is_empty()) {
        return None;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    (0..lines.len().saturating_sub(want.len() - 1))
        .find(|&i| lines[i..i + want.len()] == want[..])
        .map(|i| i + 1)
}

/// Up to three lines most like FIND's first non-blank line.
fn closest_lines(text: &str, find: &str) -> Vec<(usize, String)> {
    let Some(first) = find.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return Vec::new();
    };
    let mut scored: Vec<(usize, usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .take(20_000)
        .map(|(i, l)| (edit_distance(l.trim(), first), i + 1, l))
        .collect();
    scored.sort_by_key(|(d, i, _)| (*d, *i));
    let limit = first.chars().count().max(4);
    scored
        .into_iter()
        .filter(|(d, _, _)| *d < limit)
        .take(3)
        .map(|(_, i, l)| (i, l.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// .editorconfig

/// The `end_of_line` EditorConfig gives `rel_path` (relative to the workspace, with `/`). `chain`
/// holds the `.editorconfig` files from the workspace root down to the file's folder, each as its
/// folder (relative to the workspace, `""` for the root) and its text. A file that says
/// `root = true` hides the files above it; later sections and nearer files win; `unset` clears.
///
/// Sections are parsed and matched by ec4rs, a maintained implementation of the EditorConfig
/// specification (globs: nested and numeric-range braces, character classes and escapes, `/`
/// anchored to the file's folder), which the official core tests check in
/// `core/tests/editorconfig_suite.rs`.
#[must_use]
pub fn editorconfig_eol(chain: &[(&str, &str)], rel_path: &str) -> Option<Eol> {
    let parsed: Vec<(&str, Option<ec4rs::ConfigParser<&[u8]>>)> = chain
        .iter()
        .map(|(dir, text)| {
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            (*dir, ec4rs::ConfigParser::new(text.as_bytes()).ok())
        })
        .collect();
    let start = parsed
        .iter()
        .rposition(|(_, p)| p.as_ref().is_some_and(|p| p.is_root))
        .unwrap_or(0);
    let mut eol = None;
    for (dir, parser) in parsed.into_iter().skip(start) {
        let Some(mut parser) = parser else { continue };
        let rel = if dir.is_empty() {
            Some(rel_path)
        } else {
            rel_path.strip_prefix(dir).and_then(|r| r.strip_prefix('/'))
        };
        let Some(rel) = rel else { continue };
        // A line that is neither a section, a pair nor a comment ends what can be read of the file.
        while let Ok(section) = parser.read_section() {
            if !section.applies_to(rel) {
                continue;
            }
            // Err(true): the value is `unset`; Err(false): the section does not set it.
            match section
                .props()
                .get_raw_for_key("end_of_line")
                .into_result()
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Ok("lf") => eol = Some(Eol::Lf),
                Ok("crlf") => eol = Some(Eol::CrLf),
                Err(true) => eol = None,
                _ => {}
            }
        }
    }
    eol
}

// ---------------------------------------------------------------------------------------------
// Streaming output cap

/// Keeps the head and the tail of a stream of output within `max` characters, in bounded memory.
#[derive(Debug, Clone)]
pub struct OutputCap {
    max_head: usize,
    max_tail: usize,
    head: String,
    head_chars: usize,
    tail: std::collections::VecDeque<char>,
    omitted: u64,
}

impl OutputCap {
    #[must_use]
    pub fn new(max: usize) -> Self {
        let max_head = max / 2;
        Self {
            max_head,
            max_tail: max - max_head,
            head: String::new(),
            head_chars: 0,
            tail: std::collections::VecDeque::new(),
            omitted: 0,
        }
    }

    /// Adds output (lossily decoded by the caller).
    pub fn push(&mut self, s: &str) {
        let mut rest = s;
        // Fill the head first.
        while self.head_chars < self.max_head {
            let Some(c) = rest.chars().next() else { return };
            self.head.push(c);
            self.head_chars += 1;
            rest = &rest[c.len_utf8()..];
        }
        let n = rest.chars().count();
        if n >= self.max_tail {
            // The chunk alone fills the tail: keep only its last characters.
            self.omitted += (self.tail.len() + n - self.max_tail) as u64;
            self.tail.clear();
            self.tail.extend(rest.chars().skip(n - self.max_tail));
            return;
        }
        for c in rest.chars() {
            self.tail.push_back(c);
            if self.tail.len() > self.max_tail {
                self.tail.pop_front();
                self.omitted += 1;
            }
        }
    }

    /// Total characters seen.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.head_chars as u64 + self.tail.len() as u64 + self.omitted
    }

    /// The kept text, with the cut marked.
    #[must_use]
    pub fn finish(&self) -> String {
        let tail: String = self.tail.iter().collect();
        if self.omitted == 0 {
            format!("{}{tail}", self.head)
        } else {
            format!(
                "{}\n[… {} characters omitted …]\n{tail}",
                self.head, self.omitted
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_file_stays_crlf_with_bom() {
        let f = TextFile::decode(b"\xef\xbb\xbfa\r\nb\r\nc\r\n").unwrap();
        assert!(f.bom);
        assert_eq!(f.eol, Some(Eol::CrLf));
        assert_eq!(f.text, "a\nb\nc\n");
        let edited = apply_edit(&f.text, "b", "x\ny").unwrap();
        assert_eq!(
            TextFile::encode(&edited, f.bom, Eol::CrLf),
            b"\xef\xbb\xbfa\r\nx\r\ny\r\nc\r\n"
        );
        assert!(TextFile::decode(b"\xff\xfe").is_none());
        assert!(TextFile::decode(b"a\0b").is_none());
    }

    #[test]
    fn edit_misses_explain_themselves() {
        let text = "fn a() {}\nfn b() {}\nfn a() {}\n    let x = 1;\n";
        match apply_edit(text, "fn a() {}", "") {
            Err(EditMiss::Many { lines }) => assert_eq!(lines, [1, 3]),
            other => panic!("{other:?}"),
        }
        // Overlapping occurrences count: "aa" is in "aaa" twice, "abab" in "ababab" twice.
        for (text, find) in [
            ("aaa\n", "aa"),
            ("x ababab y\n", "abab"),
            ("é\né\né\n", "é\né"),
        ] {
            let miss = apply_edit(text, find, "z").unwrap_err();
            assert!(
                miss.reason()
                    .starts_with("FIND text matched 2 times (must match exactly once), at lines 1"),
                "{text:?} {find:?}: {}",
                miss.reason()
            );
        }
        assert_eq!(apply_edit("ab\nab\n", "ab\nab", "x").unwrap(), "x\n");
        let miss = apply_edit(text, "fn c() {}", "").unwrap_err();
        assert!(miss.reason().starts_with("FIND text matched 0 times (must match exactly once)\nclosest lines in the file:\n      1 | fn a() {}"), "{}", miss.reason());
        let miss = apply_edit(text, "let x = 1;   ", "").unwrap_err();
        assert!(
            miss.reason().contains("matches at line 4 if indentation"),
            "{}",
            miss.reason()
        );
    }

    #[test]
    fn editorconfig() {
        let cfg = "root = true\n[*]\nend_of_line = lf\n[*.{bat,cmd}]\nend_of_line = crlf\n[docs/**.md]\nend_of_line = crlf\n";
        let root = [("", cfg)];
        assert_eq!(editorconfig_eol(&root, "src/a.rs"), Some(Eol::Lf));
        assert_eq!(editorconfig_eol(&root, "tools/run.cmd"), Some(Eol::CrLf));
        assert_eq!(editorconfig_eol(&root, "docs/deep/x.md"), Some(Eol::CrLf));
        assert_eq!(editorconfig_eol(&root, "x.md"), Some(Eol::Lf));
        // A nearer file wins; `unset` clears; root = true hides the files above.
        let sub = "[*.rs]\nend_of_line = crlf\n[*.md]\nend_of_line = unset\n";
        let chain = [("", cfg), ("src", sub)];
        assert_eq!(editorconfig_eol(&chain, "src/a.rs"), Some(Eol::CrLf));
        assert_eq!(editorconfig_eol(&chain, "src/a.md"), None);
        assert_eq!(editorconfig_eol(&chain, "b.rs"), Some(Eol::Lf));
        let rooted = [("", cfg), ("src", "root = true\n[*.md]\nindent_size = 2\n")];
        assert_eq!(editorconfig_eol(&rooted, "src/a.rs"), None);
    }

    #[test]
    fn output_cap_streams_in_bounded_memory() {
        let mut cap = OutputCap::new(10);
        for _ in 0..1000 {
            cap.push("abcdefghij");
        }
        assert_eq!(cap.total(), 10_000);
        assert_eq!(cap.finish(), "abcde\n[… 9990 characters omitted …]\nfghij");
        let mut small = OutputCap::new(100);
        small.push("hello");
        assert_eq!(small.finish(), "hello");
    }
}
