//! The path rules every command argument passes before anything touches the disk.

use std::fmt;

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathProblem {
    Empty,
    Absolute,
    DriveLetter,
    Backslash,
    ParentSegment,
    ControlCharacter,
    Reserved(String),
    HomeShortcut,
    ForbiddenCharacter(char),
    NoTarget,
    TooLong,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathProblem::Empty => f.write_str("the path is empty"),
            PathProblem::Absolute => f.write_str("absolute paths are not allowed"),
            PathProblem::DriveLetter => f.write_str("drive-letter paths are not allowed"),
            PathProblem::Backslash => f.write_str("backslashes are not allowed; use /"),
            PathProblem::ParentSegment => f.write_str("\"..\" segments are not allowed"),
            PathProblem::ControlCharacter => f.write_str("control characters are not allowed"),
            PathProblem::Reserved(seg) => {
                write!(f, "paths inside {seg} are reserved and cannot be touched")
            }
            PathProblem::HomeShortcut => f.write_str("\"~\" (home) paths are not allowed"),
            PathProblem::ForbiddenCharacter(c) => write!(f, "the character '{c}' is not allowed"),
            PathProblem::NoTarget => f.write_str("the path names the workspace root itself"),
            PathProblem::TooLong => f.write_str("the path is longer than 1024 characters"),
        }
    }
}

const MAX_PATH_CHARS: usize = 1024;

fn reserved_segment(segment: &str) -> Option<&'static str> {
    // Windows ignores trailing dots and spaces, so ".git." is ".git" there.
    let bare = segment.trim_end_matches(['.', ' ']);
    if bare.eq_ignore_ascii_case(".git") {
        Some(".git")
    } else if bare.eq_ignore_ascii_case(".agent") {
        Some(".agent")
    } else {
        None
    }
}

/// A path that is already normal: ASCII letters, digits and `_-. /`, not absolute, no trailing
/// slash, and no empty, `.`-only, reserved or space-padded segment. One pass over the bytes.
fn is_plain(path: &str) -> bool {
    let b = path.as_bytes();
    let segment_ok = |seg: &[u8]| match seg {
        [] | [b' ', ..] | [.., b' '] => false,
        [b'.', ..] => {
            !seg.iter().all(|c| *c == b'.')
                // Only a segment starting with '.' can be reserved (".git", ".agent").
                && std::str::from_utf8(seg).is_ok_and(|s| reserved_segment(s).is_none())
        }
        _ => true,
    };
    if b.is_empty() || b.len() > MAX_PATH_CHARS || b[0] == b'/' || b[b.len() - 1] == b'/' {
        return false;
    }
    let mut start = 0;
    for (k, &c) in b.iter().enumerate() {
        if c == b'/' {
            if !segment_ok(&b[start..k]) {
                return false;
            }
            start = k + 1;
        } else if !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b' ')) {
            return false;
        }
    }
    segment_ok(&b[start..])
}

/// Validates a workspace-relative path and returns it normalised (`.` and empty segments removed,
/// no trailing slash).
///
/// # Errors
/// The first rule the path breaks.
pub fn normalize(path: &str) -> Result<String, PathProblem> {
    // Fast path: plain ASCII names with no `.`-only, empty or reserved segments need no work.
    if is_plain(path) {
        return Ok(path.to_string());
    }
    normalize_slow(path)
}

/// [`normalize`] without the fast path: every rule checked in order.
fn normalize_slow(path: &str) -> Result<String, PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(PathProblem::TooLong);
    }
    if path.chars().any(char::is_control) {
        return Err(PathProblem::ControlCharacter);
    }
    if path.starts_with("\\\\") || path.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(PathProblem::DriveLetter);
    }
    if path.contains('\\') {
        return Err(PathProblem::Backslash);
    }
    if let Some(c) = path
        .chars()
        .find(|c| matches!(c, '"' | '<' | '>' | '|' | '?' | '*'))
    {
        return Err(PathProblem::ForbiddenCharacter(c));
    }
    let mut out: Vec<&str> = Vec::new();
    for (i, segment) in path.split('/').enumerate() {
        match segment {
            "" | "." => {}
            ".." => return Err(PathProblem::ParentSegment),
            "~" if i == 0 => return Err(PathProblem::HomeShortcut),
            s => {
                if let Some(r) = reserved_segment(s) {
                    return Err(PathProblem::Reserved(r.to_string()));
                }
                out.push(s);
            }
        }
    }
    if out.is_empty() {
        return Err(PathProblem::NoTarget);
    }
    Ok(out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fast path never changes an answer: whatever it accepts, the full rules accept
        /// unchanged.
        #[test]
        fn the_fast_path_agrees_with_the_full_rules(path in "[a-zA-Z0-9_ ./\\-]{0,24}|(\\.git|\\.agent|\\.\\.|\\.| |a|/){0,6}") {
            if is_plain(&path) {
                prop_assert_eq!(normalize_slow(&path), Ok(path.clone()));
            }
            prop_assert_eq!(normalize(&path), normalize_slow(&path));
        }
    }

    #[test]
    fn accepts_and_normalises() {
        assert_eq!(normalize("src/a.rs").as_deref(), Ok("src/a.rs"));
        assert_eq!(normalize("./src//a.rs").as_deref(), Ok("src/a.rs"));
        assert_eq!(normalize("src/").as_deref(), Ok("src"));
        assert_eq!(normalize(".gitignore").as_deref(), Ok(".gitignore"));
        assert_eq!(
            normalize("docs/My File.md").as_deref(),
            Ok("docs/My File.md")
        );
        assert_eq!(
            normalize("a/.github/x.yml").as_deref(),
            Ok("a/.github/x.yml")
        );
        assert_eq!(normalize("ünï/çødé.txt").as_deref(), Ok("ünï/çødé.txt"));
    }

    #[test]
    fn refuses_every_spelling_of_escape() {
        let bad = [
            ("", PathProblem::Empty),
            ("/etc/passwd", PathProblem::Absolute),
            ("\\\\host\\share", PathProblem::Absolute),
            ("C:\\x", PathProblem::DriveLetter),
            ("C:x", PathProblem::DriveLetter),
            ("c:/x", PathProblem::DriveLetter),
            ("src\\a.rs", PathProblem::Backslash),
            ("../x", PathProblem::ParentSegment),
            ("a/../../x", PathProblem::ParentSegment),
            ("a/\0b", PathProblem::ControlCharacter),
            ("a\nb", PathProblem::ControlCharacter),
            (".git/config", PathProblem::Reserved(".git".into())),
            (
                "sub/.GIT/hooks/pre-commit",
                PathProblem::Reserved(".git".into()),
            ),
            (".git./config", PathProblem::Reserved(".git".into())),
            (".agent/keyless.db", PathProblem::Reserved(".agent".into())),
            ("~/x", PathProblem::HomeShortcut),
            ("a/*.rs", PathProblem::ForbiddenCharacter('*')),
            (".", PathProblem::NoTarget),
            ("./", PathProblem::NoTarget),
        ];
        for (path, problem) in bad {
            assert_eq!(normalize(path), Err(problem), "{path:?}");
        }
        assert_eq!(normalize(&"a".repeat(2000)), Err(PathProblem::TooLong));
    }
}
