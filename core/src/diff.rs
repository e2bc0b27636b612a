//! What a change did to a file, for the user: a unified diff (the `similar` crate's Myers diff,
//! maintained and pure), its counts, and a bounded text. The model keeps its `verified:` line; the
//! diff goes to the overlay, the dashboard and the terminal.

use serde::{Deserialize, Serialize};
use similar::{ChangeTag, TextDiff};

/// Larger sides are not diffed: the diff says so and gives the sizes.
pub const MAX_DIFF_INPUT_BYTES: usize = 1 << 20;
/// Lines of diff text kept; the rest is counted in a last "diff too large" line.
pub const MAX_DIFF_LINES: usize = 400;

/// What happened to the file.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Modified,
    Deleted,
    Moved,
}

/// One file's change.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    /// The file's path now (for a deleted file, the path it had).
    pub path: String,
    /// Where a moved file was.
    pub from: Option<String>,
    pub change: Change,
    /// Lines added and removed (0 when the diff was not computed, see `note`).
    pub added: u32,
    pub removed: u32,
    /// The unified diff (`--- a/…`, `+++ b/…`, hunks), bounded to [`MAX_DIFF_LINES`] lines.
    pub text: String,
    /// Why there are no lines to show, or why they stop: a binary file, a file too large to diff,
    /// a move that kept the content.
    pub note: Option<String>,
}

fn is_text(b: &[u8]) -> Option<&str> {
    if b.contains(&0) {
        return None;
    }
    std::str::from_utf8(b).ok()
}

fn bytes(n: usize) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// One side of a change, as the host read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side<'a> {
    /// No file there.
    Absent,
    Bytes(&'a [u8]),
    /// A file larger than [`MAX_DIFF_INPUT_BYTES`] (not read).
    TooLarge,
}

impl<'a> Side<'a> {
    fn content(self) -> &'a [u8] {
        match self {
            Self::Bytes(b) => b,
            Self::Absent | Self::TooLarge => &[],
        }
    }

    /// `None` is no file.
    #[must_use]
    pub fn of(bytes: Option<&'a [u8]>) -> Self {
        bytes.map_or(Self::Absent, |b| {
            if b.len() > MAX_DIFF_INPUT_BYTES {
                Self::TooLarge
            } else {
                Self::Bytes(b)
            }
        })
    }
}

/// The change from `old` (at `from`, or at `path` when `from` is `None`) to `new` (at `path`).
/// Returns `None` when nothing changed.
#[must_use]
pub fn file_diff(path: &str, from: Option<&str>, old: Side<'_>, new: Side<'_>) -> Option<FileDiff> {
    let moved = from.is_some_and(|f| f != path);
    let change = match (old, new) {
        (Side::Absent, Side::Absent) => return None,
        (Side::Absent, _) => Change::Added,
        (_, Side::Absent) => Change::Deleted,
        (Side::Bytes(o), Side::Bytes(n)) if o == n && !moved => return None,
        _ if moved => Change::Moved,
        _ => Change::Modified,
    };
    let old_name = from.filter(|_| moved).unwrap_or(path);
    let mut d = FileDiff {
        path: path.to_string(),
        from: from.filter(|_| moved).map(str::to_string),
        change,
        added: 0,
        removed: 0,
        text: String::new(),
        note: None,
    };
    let bytes_of = |s: Side<'_>| match s {
        Side::Bytes(b) => Some(b.len()),
        Side::Absent => Some(0),
        Side::TooLarge => None,
    };
    let (Some(_), Some(_)) = (bytes_of(old), bytes_of(new)) else {
        d.note = Some(format!(
            "diff too large: the file is over {} (diffs are shown for files up to that size)",
            bytes(MAX_DIFF_INPUT_BYTES)
        ));
        return Some(d);
    };
    let (o, n) = (old.content(), new.content());
    if moved && o == n {
        d.note = Some("moved; the content is unchanged".into());
        return Some(d);
    }
    let (Some(ot), Some(nt)) = (is_text(o), is_text(n)) else {
        d.note = Some(format!(
            "binary file: {} → {}",
            bytes(o.len()),
            bytes(n.len())
        ));
        return Some(d);
    };
    let diff = TextDiff::from_lines(ot, nt);
    for c in diff.iter_all_changes() {
        match c.tag() {
            ChangeTag::Insert => d.added += 1,
            ChangeTag::Delete => d.removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let a = if old != Side::Absent {
        format!("a/{old_name}")
    } else {
        "/dev/null".into()
    };
    let b = if new != Side::Absent {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    let full = diff
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(true)
        .header(&a, &b)
        .to_string();
    let total = full.lines().count();
    if total > MAX_DIFF_LINES {
        let mut kept: String = full
            .split_inclusive('\n')
            .take(MAX_DIFF_LINES)
            .collect::<String>();
        if !kept.ends_with('\n') {
            kept.push('\n');
        }
        d.text = kept;
        d.note = Some(format!(
            "diff too large: {} more lines not shown (+{} -{} in all)",
            total - MAX_DIFF_LINES,
            d.added,
            d.removed
        ));
    } else {
        d.text = full;
    }
    Some(d)
}

/// The name a stat line shows: `from → to` for a move.
fn shown_name(d: &FileDiff) -> String {
    crate::text::printable(&match &d.from {
        Some(f) => format!("{f} → {}", d.path),
        None => d.path.clone(),
    })
}

/// One line per file, as `git diff --stat` prints it: ` path | 5 +++--` (or what happened when
/// there are no lines to count), then the totals.
#[must_use]
pub fn stat(diffs: &[FileDiff]) -> String {
    if diffs.is_empty() {
        return String::new();
    }
    let width = diffs
        .iter()
        .map(|d| shown_name(d).chars().count())
        .max()
        .unwrap_or(0)
        .min(60);
    let mut out = String::new();
    for d in diffs {
        let name = shown_name(d);
        let bar = match (&d.note, d.added + d.removed) {
            (Some(note), 0) => note.split(':').next().unwrap_or(note).to_string(),
            (_, 0) => match d.change {
                Change::Added => "new, empty".into(),
                Change::Deleted => "deleted, was empty".into(),
                _ => "0".into(),
            },
            (_, n) => {
                // Ten marks at most, in proportion, so a long line never wraps.
                let scale = |x: u32| {
                    if n <= 10 {
                        x as usize
                    } else {
                        (x as usize * 10).div_ceil(n as usize)
                    }
                };
                format!(
                    "{n} {}{}",
                    "+".repeat(scale(d.added)),
                    "-".repeat(scale(d.removed))
                )
            }
        };
        out.push_str(&format!(" {name:<width$} | {bar}\n"));
    }
    out.push_str(&totals(diffs));
    out.push('\n');
    out
}

/// `2 files changed, 7 insertions(+), 1 deletion(-)`. A file edited twice (two diffs) is one
/// file.
#[must_use]
pub fn totals(diffs: &[FileDiff]) -> String {
    let files = diffs
        .iter()
        .map(|d| d.path.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let add: u32 = diffs.iter().map(|d| d.added).sum();
    let del: u32 = diffs.iter().map(|d| d.removed).sum();
    let s = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}, {}, {}",
        s(files, "file changed", "files changed"),
        s(add as usize, "insertion(+)", "insertions(+)"),
        s(del as usize, "deletion(-)", "deletions(-)")
    )
}

/// The diffs one after the other, each note on a line of its own (for the terminal and `log`),
/// as a person may read them: escape sequences and characters that hide or reorder text are
/// shown as their code points ([`crate::text::printable`]), so a file cannot hide a line of its
/// own diff, move the cursor or write the clipboard.
#[must_use]
pub fn render(diffs: &[FileDiff]) -> String {
    let mut out = String::new();
    for d in diffs {
        if d.text.is_empty() {
            let what = d.note.clone().unwrap_or_else(|| {
                match d.change {
                    Change::Added => "new, empty file",
                    Change::Deleted => "deleted, was empty",
                    Change::Moved => "moved",
                    Change::Modified => "changed",
                }
                .to_string()
            });
            out.push_str(&format!("{}: {what}\n", shown_name(d)));
            continue;
        }
        out.push_str(&crate::text::printable(&d.text));
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if let Some(note) = &d.note {
            out.push_str(&format!("… {}\n", crate::text::printable(note)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(path: &str, from: Option<&str>, old: Option<&str>, new: Option<&str>) -> FileDiff {
        file_diff(
            path,
            from,
            Side::of(old.map(str::as_bytes)),
            Side::of(new.map(str::as_bytes)),
        )
        .unwrap_or_else(|| FileDiff {
            path: "(unchanged)".into(),
            from: None,
            change: Change::Modified,
            added: 0,
            removed: 0,
            text: String::new(),
            note: None,
        })
    }

    #[test]
    fn unchanged_is_no_diff() {
        assert_eq!(
            file_diff("a", None, Side::Bytes(b"x\n"), Side::Bytes(b"x\n")),
            None
        );
        assert_eq!(file_diff("a", None, Side::Absent, Side::Absent), None);
    }

    #[test]
    fn fixtures() {
        let cases = [
            d("app.py", None, Some("a\nb\nc\n"), Some("a\nB\nc\nd\n")),
            d("new.txt", None, None, Some("hello\nworld\n")),
            d("gone.txt", None, Some("bye\n"), None),
            d("b.txt", Some("a.txt"), Some("same\n"), Some("same\n")),
            d("b.txt", Some("a.txt"), Some("one\n"), Some("two\n")),
            d("no-eol.txt", None, Some("x"), Some("y")),
        ];
        insta::assert_snapshot!(render(&cases));
        insta::assert_snapshot!("stat", stat(&cases));
    }

    #[test]
    fn binary_and_large_are_described() {
        let bin = file_diff(
            "x.bin",
            None,
            Side::Bytes(b"\0\x01"),
            Side::Bytes(b"\0\x02\x03"),
        )
        .unwrap_or_else(|| unreachable!());
        assert_eq!(bin.note.as_deref(), Some("binary file: 2 B → 3 B"));
        assert!(bin.text.is_empty());
        let big = "x\n".repeat(MAX_DIFF_INPUT_BYTES);
        let large = file_diff(
            "big",
            None,
            Side::Bytes(b"x\n"),
            Side::of(Some(big.as_bytes())),
        )
        .unwrap_or_else(|| unreachable!());
        assert_eq!(large.change, Change::Modified);
        assert!(large
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("diff too large: the file is over 1.0 MiB")));
        let fresh =
            file_diff("big", None, Side::Absent, Side::TooLarge).unwrap_or_else(|| unreachable!());
        assert_eq!(fresh.change, Change::Added);
    }

    #[test]
    fn long_diffs_are_cut_with_a_line_that_says_so() {
        let new: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let diff = file_diff("long", None, Side::Bytes(b""), Side::Bytes(new.as_bytes()))
            .unwrap_or_else(|| unreachable!());
        assert_eq!(diff.added, 1000);
        assert_eq!(diff.text.lines().count(), MAX_DIFF_LINES);
        assert_eq!(
            diff.note.as_deref(),
            Some("diff too large: 603 more lines not shown (+1000 -0 in all)")
        );
    }

    proptest::proptest! {
        /// The counts agree with the diff text's own + and - lines whenever it is whole.
        #[test]
        fn counts_match_the_text(old in "[ab\n]{0,40}", new in "[ab\n]{0,40}") {
            if let Some(diff) = file_diff("f", None, Side::Bytes(old.as_bytes()), Side::Bytes(new.as_bytes())) {
                let plus = diff.text.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count();
                let minus = diff.text.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).count();
                proptest::prop_assert_eq!(plus, diff.added as usize);
                proptest::prop_assert_eq!(minus, diff.removed as usize);
            }
        }
    }
}
