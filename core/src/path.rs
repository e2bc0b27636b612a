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

/// The workspace settings file, written only by the user.
pub const SETTINGS_FILE: &str = "keyless.json";

/// Code points some file systems drop from names (HFS+ ignores them, which is why git refuses
/// them in `.git`), invisible formatting characters, and combining marks (a decomposed spelling
/// of a letter on a normalising file system).
fn ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{0300}'..='\u{036F}'
            | '\u{180B}'..='\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
    )
}

/// A file name as the most forgiving file system could see it: invisible and combining code
/// points dropped, fullwidth ASCII made ASCII, the letters that case-fold onto ASCII ones (the
/// Kelvin sign, long s, dotless i, capital I with a dot) made those, ASCII lower case, and the
/// trailing dots and spaces Windows ignores removed. Two names with the same fold may be one file
/// somewhere (a case-insensitive or normalising disk, a Windows share), so keyless's own names
/// (all ASCII) are compared by their fold. Other letters are kept as they are: none folds onto an
/// ASCII letter, so they never make a name equal to one of keyless's.
#[must_use]
pub fn fold_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
            '\u{017F}' => 's',
            '\u{0131}' | '\u{0130}' => 'i',
            '\u{212A}' => 'k',
            _ => c,
        };
        if !ignorable(c) {
            out.push(c.to_ascii_lowercase());
        }
    }
    let kept = out.trim_end_matches(['.', ' ']).len();
    out.truncate(kept);
    out
}

/// Whether `folded` is a Windows 8.3 short name of `long` (`.git` → `git~1`, `keyless.json` →
/// `keyles~1.jso`): the first six characters of the stem, `~`, digits, and the first three of
/// the extension.
fn short_alias(folded: &str, long: &str) -> bool {
    let long = long.trim_start_matches('.');
    let (stem, ext) = long.rsplit_once('.').unwrap_or((long, ""));
    let (f_stem, f_ext) = folded.rsplit_once('.').unwrap_or((folded, ""));
    let Some((head, digits)) = f_stem.split_once('~') else {
        return false;
    };
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !head.is_empty()
        && stem.chars().take(6).eq(head.chars())
        && ext.chars().take(3).eq(f_ext.chars())
}

/// Whether a file name is `name` (one of keyless's own) on some file system: the same fold, or
/// its 8.3 short name.
#[must_use]
pub fn same_name(segment: &str, name: &str) -> bool {
    let folded = fold_name(segment);
    folded == name || short_alias(&folded, name)
}

fn reserved_segment(segment: &str) -> Option<&'static str> {
    [".git", ".agent"]
        .into_iter()
        .find(|r| same_name(segment, r))
}

/// Whether a normalised workspace path names the workspace settings file (any spelling a file
/// system could take for `keyless.json` at the root).
#[must_use]
pub fn is_settings_file(rel: &str) -> bool {
    !rel.contains('/') && same_name(rel, SETTINGS_FILE)
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

    #[test]
    fn every_spelling_of_keyless_own_names_is_reserved() {
        for seg in [
            ".GIT",
            ".Git ",
            ".git.. ",
            ".g\u{200C}it",
            ".gi\u{FEFF}t",
            ".\u{FF47}it",
            ".gı\u{0307}t",
            ".G\u{0130}T",
            "GIT~1",
            "git~12",
            ".agen\u{0074}\u{0301}",
            ".AGENT",
            "AGENT~1",
        ] {
            let want = if fold_name(seg).contains("ag") || seg.starts_with('A') {
                ".agent"
            } else {
                ".git"
            };
            assert_eq!(
                normalize(&format!("x/{seg}/y")),
                Err(PathProblem::Reserved(want.into())),
                "{seg:?}"
            );
        }
        for name in [
            "keyless.json",
            "KEYLESS.JSON",
            "Keyless.json.",
            "\u{212A}eyless.json",
            "keyle\u{017F}\u{017F}.json",
            "keyless.j\u{FF53}on",
            "key\u{200B}less.json",
            "KEYLES~1.JSO",
        ] {
            assert!(is_settings_file(name), "{name:?}");
        }
        for name in [
            "keyless.json5",
            "a/keyless.json",
            "keyless-json",
            "git~",
            "gitx~1",
        ] {
            assert!(!is_settings_file(name), "{name:?}");
        }
        for ok in [".github", ".gitignore", "git", "agents", ".gi", "git~a"] {
            assert!(normalize(ok).is_ok(), "{ok}");
        }
    }
}
