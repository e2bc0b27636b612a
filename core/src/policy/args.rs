//! Checks a program's arguments against its known-safe spec.
//!
//! Option syntax in a spec (see [`super::known`]):
//! - `*`: every argument is data (echo, printf, test);
//! - `-x`: a short flag (flags combine: `-la`);
//! - `-x=`: a short option with a value, attached (`-n5`) or as the next word;
//! - `--name`: a long flag; `--name=`: with a value (`--name=v` or the next word); `--name=?`: with
//!   an optional attached value;
//! - `-#`: a number given as an option (`head -20`);
//! - `-W*`: any word that starts with `-W` (compiler style, never combined).
//!
//! GNU programs accept any unambiguous prefix of a long option. An abbreviation is never on the
//! list, so it makes the line at least Execute, and an abbreviation of a risky option is risky.

use super::lexer::Word;

/// How many operands (non-option arguments) a program may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    Any,
    None,
    /// More than this many: the extra one is an output file.
    AtMost(usize),
}

/// What the arguments are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    Known,
    /// An option not on the list (or an abbreviation).
    Unknown(String),
    /// An option that runs a program or writes a file, with why.
    Risky(String, &'static str),
    /// An operand past the allowed number (an output file).
    ExtraOperand(String),
}

/// One known-safe program (or `program subcommand`).
#[derive(Debug)]
pub(crate) struct Spec {
    pub opts: &'static [&'static str],
    pub risky: &'static [(&'static str, &'static str)],
    pub operands: Operands,
}

fn risky_long(spec: &Spec, name: &str) -> Option<&'static str> {
    spec.risky.iter().find_map(|(opt, why)| {
        let hit = if opt.contains('*') {
            super::pattern::glob(opt, name)
        } else {
            opt.starts_with("--")
                && (name == *opt
                    // An unambiguous abbreviation (GNU getopt): `--in-pl` for `--in-place`.
                    || (name.len() >= 3 && opt.starts_with(name)))
        };
        hit.then_some(*why)
    })
}

fn risky_short(spec: &Spec, c: char) -> Option<&'static str> {
    spec.risky.iter().find_map(|(opt, why)| {
        let mut chars = opt.chars();
        (chars.next() == Some('-') && chars.next() == Some(c) && chars.next().is_none())
            .then_some(*why)
    })
}

fn risky_word(spec: &Spec, word: &str) -> Option<&'static str> {
    spec.risky.iter().find_map(|(opt, why)| {
        let hit = if opt.contains('*') {
            super::pattern::glob(opt, word)
        } else {
            word == *opt || word.starts_with(&format!("{opt}="))
        };
        hit.then_some(*why)
    })
}

/// The spec's entry for a long option: `Some(takes_value)`, where `Some(None)` is an optional
/// attached value.
fn long_entry(spec: &Spec, name: &str) -> Option<Option<bool>> {
    spec.opts.iter().find_map(|o| {
        if let Some(n) = o.strip_suffix("=?") {
            (n == name).then_some(None)
        } else if let Some(n) = o.strip_suffix('=') {
            (n == name).then_some(Some(true))
        } else {
            (*o == name).then_some(Some(false))
        }
    })
}

/// The spec's entry for a short flag: `Some(takes_value)`.
fn short_entry(spec: &Spec, c: char) -> Option<bool> {
    spec.opts.iter().find_map(|o| {
        let mut chars = o.chars();
        if chars.next() != Some('-') || chars.next() != Some(c) {
            return None;
        }
        match chars.as_str() {
            "" => Some(false),
            "=" => Some(true),
            _ => None,
        }
    })
}

fn prefix_pattern(spec: &Spec, word: &str) -> bool {
    spec.opts
        .iter()
        .any(|o| o.len() > 2 && o.ends_with('*') && word.starts_with(&o[..o.len() - 1]))
}

/// Checks the arguments (after the program word) against a spec.
pub(crate) fn check(spec: &Spec, args: &[Word]) -> Check {
    if spec.opts.first() == Some(&"*") {
        let mut operands = 0;
        for a in args {
            if let Some(why) = risky_word(spec, &a.text) {
                return Check::Risky(a.text.clone(), why);
            }
            if !a.text.starts_with('-') {
                operands += 1;
                if let Operands::AtMost(n) = spec.operands {
                    if operands > n {
                        return Check::ExtraOperand(a.text.clone());
                    }
                }
            }
        }
        return Check::Known;
    }
    let numbers = spec.opts.contains(&"-#");
    let mut operands = 0usize;
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let a = args[i].text.as_str();
        i += 1;
        let is_option = !options_done && a.len() > 1 && a.starts_with('-');
        if !is_option {
            operands += 1;
            if !options_done && a.starts_with('@') {
                // Some tools read more options from `@file`.
                if let Some(why) = risky_word(spec, a) {
                    return Check::Risky(a.to_string(), why);
                }
            }
            match spec.operands {
                Operands::Any => {}
                Operands::None => return Check::ExtraOperand(a.to_string()),
                Operands::AtMost(n) if operands > n => return Check::ExtraOperand(a.to_string()),
                Operands::AtMost(_) => {}
            }
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if let Some(why) = risky_word(spec, a) {
            return Check::Risky(a.to_string(), why);
        }
        if prefix_pattern(spec, a) {
            continue;
        }
        if a.starts_with("--") {
            let (name, value) = match a.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (a, None),
            };
            match long_entry(spec, name) {
                Some(Some(true)) => {
                    if value.is_none() {
                        i += 1; // the value is the next word
                    }
                }
                Some(Some(false)) if value.is_none() => {}
                Some(None) => {}
                _ => {
                    if let Some(why) = risky_long(spec, name) {
                        return Check::Risky(a.to_string(), why);
                    }
                    return Check::Unknown(a.to_string());
                }
            }
            continue;
        }
        let cluster = &a[1..];
        if numbers && cluster.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (k, c) in cluster.char_indices() {
            if let Some(why) = risky_short(spec, c) {
                return Check::Risky(a.to_string(), why);
            }
            match short_entry(spec, c) {
                Some(false) => {}
                Some(true) => {
                    if k + c.len_utf8() == cluster.len() {
                        i += 1; // the value is the next word
                    }
                    break;
                }
                None => return Check::Unknown(a.to_string()),
            }
        }
    }
    Check::Known
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace()
            .map(|t| Word {
                text: t.into(),
                ..Word::default()
            })
            .collect()
    }

    const SPEC: Spec = Spec {
        opts: &[
            "-n=",
            "-l",
            "-a",
            "--lines=",
            "--all",
            "--color=?",
            "-#",
            "-W*",
        ],
        risky: &[
            ("-o", "writes"),
            ("--output", "writes"),
            ("--in-place", "edits"),
        ],
        operands: Operands::AtMost(2),
    };

    #[test]
    fn options() {
        assert_eq!(
            check(&SPEC, &words("-la -n 5 --lines=3 --all f")),
            Check::Known
        );
        assert_eq!(
            check(&SPEC, &words("-n5 -20 --color --color=never -Wall")),
            Check::Known
        );
        assert_eq!(check(&SPEC, &words("--lines 3 a b")), Check::Known);
        assert_eq!(
            check(&SPEC, &words("a b c")),
            Check::ExtraOperand("c".into())
        );
        assert_eq!(check(&SPEC, &words("-x")), Check::Unknown("-x".into()));
        assert_eq!(check(&SPEC, &words("--al")), Check::Unknown("--al".into()));
        assert_eq!(
            check(&SPEC, &words("-lo out")),
            Check::Risky("-lo".into(), "writes")
        );
        assert_eq!(
            check(&SPEC, &words("--outp=x")),
            Check::Risky("--outp=x".into(), "writes")
        );
        assert_eq!(
            check(&SPEC, &words("--in-pl")),
            Check::Risky("--in-pl".into(), "edits")
        );
        // After `--` everything is an operand.
        assert_eq!(check(&SPEC, &words("-- -o")), Check::Known);
        // A value is never read as an option.
        assert_eq!(check(&SPEC, &words("-n -o")), Check::Known);
    }
}
