//! What every rater shares: the call a rater is given ([`Call`]), the way back into the
//! classifier for a command that runs another (wrappers, `sh -c`, `find -exec`), and the helpers
//! that read options (`has_flag`, `option_values`, `has_option`, `within_workspace`).
//!
//! The rater families do not import each other; whatever two of them need lives here. The
//! classifier reaches a rater as function pointers in the [`Call`], so that a family that rates
//! the command it runs needs no import of the module that dispatches to it.

use super::super::args::{check, Check, Spec};
use super::super::lexer::Word;
use super::super::{rated, Context, Rated, Tier, MAX_DEPTH};

/// A rater: the rating of one command whose program the table names.
pub(super) type Rater = fn(&Call) -> Rated;

/// The programs a rater rates, in groups.
pub(super) type Names = &'static [&'static [&'static str]];

/// Programs that download: piped into an interpreter they are `curl | sh`.
pub(super) const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "iwr",
    "invoke-webrequest",
    "irm",
    "invoke-restmethod",
    "aria2c",
    "http",
    "https",
    "xh",
];

/// One command to rate, and the classifier to rate the commands it runs.
pub(super) struct Call<'a> {
    /// The program's name: without folder or Windows extension, lower case.
    pub name: &'a str,
    /// The whole command, the program word first.
    pub words: &'a [Word],
    /// Nesting depth (`sh -c`, wrappers, `$(…)`).
    pub depth: u32,
    pub ctx: &'a Context,
    /// Rates a command given as words at a depth.
    pub classify_words: fn(&[Word], u32, &Context) -> Rated,
    /// Rates a shell line at a depth.
    pub classify_line: fn(&str, u32, &Context) -> Rated,
}

impl<'a> Call<'a> {
    /// The arguments, after the program word.
    pub fn args(&self) -> &'a [Word] {
        &self.words[1..]
    }

    /// The arguments' texts.
    pub fn texts(&self) -> Vec<&'a str> {
        texts(self.args())
    }

    /// A program that runs another, the inner command starting at word `inner_start`: at least
    /// Risky, and as bad as what it runs.
    pub fn wrapper(&self, inner_start: usize) -> Rated {
        let prog = self.name;
        let words = self.words;
        let base = rated(Tier::Risky, format!("{prog} runs another program"));
        if self.depth >= MAX_DEPTH {
            return base;
        }
        let inner = &words[inner_start.min(words.len())..];
        if inner.is_empty() {
            return base;
        }
        let inner_r = (self.classify_words)(inner, self.depth + 1, self.ctx);
        if inner_r.0 > Tier::Risky {
            return (inner_r.0, format!("{prog} runs: {}", inner_r.1));
        }
        base
    }

    /// A wrapper whose inner command follows its options; those in `takes_value` take the next
    /// word.
    pub fn wrapper_skip(&self, takes_value: &[&str]) -> Rated {
        let words = self.words;
        let mut i = 1;
        while i < words.len() && words[i].text.starts_with('-') {
            if takes_value.contains(&words[i].text.as_str()) {
                i += 1;
            }
            i += 1;
        }
        self.wrapper(i)
    }

    /// A program that runs a shell line (`sh -c`, `eval`): at least Risky, and as bad as the line.
    pub fn shell_string(&self, inner: &str) -> Rated {
        let prog = self.name;
        let base = rated(Tier::Risky, format!("{prog} runs a command string"));
        if self.depth >= MAX_DEPTH {
            return base;
        }
        let inner_r = (self.classify_line)(inner, self.depth + 1, self.ctx);
        if inner_r.0 > Tier::Risky {
            return (inner_r.0, format!("{prog} runs: {}", inner_r.1));
        }
        base
    }

    /// Rates a command this one runs, one level deeper.
    pub fn inner_words(&self, words: &[Word]) -> Rated {
        (self.classify_words)(words, self.depth + 1, self.ctx)
    }
}

/// What keyless says of a program it knows nothing about: Risky.
pub(super) fn unknown_program(name: &str) -> Rated {
    rated(Tier::Risky, format!("{name} is not a known program"))
}

/// What keyless says of a program whose arguments it does not analyse because it can change
/// files, processes or remote systems, or run other programs, whatever they are: Risky.
pub(super) fn changes_things(name: &str) -> Rated {
    rated(
        Tier::Risky,
        format!("{name} can change files, processes or remote systems, or run other programs"),
    )
}

pub(super) fn texts(words: &[Word]) -> Vec<&str> {
    words.iter().map(|w| w.text.as_str()).collect()
}

pub(super) fn to_words(texts: &[&str]) -> Vec<Word> {
    texts
        .iter()
        .map(|t| Word {
            text: (*t).to_string(),
            ..Word::default()
        })
        .collect()
}

/// A known-safe program's arguments, checked against its spec.
pub(super) fn rate_known(name: &str, tier: Tier, does: &str, spec: &Spec, args: &[Word]) -> Rated {
    match check(spec, args) {
        Check::Known => rated(tier, format!("{name} {does}")),
        Check::Unknown(opt) => rated(
            Tier::Execute.max(tier),
            format!("{name}: the option {opt} is not on keyless's known-safe list"),
        ),
        Check::Risky(opt, why) => rated(Tier::Risky, format!("{name} {opt}: {why}")),
        Check::ExtraOperand(op) => rated(
            Tier::Risky,
            format!("{name}: the extra operand {op} is an output file it writes"),
        ),
    }
}

pub(super) fn has_flag(args: &[&str], short: char, longs: &[&str]) -> bool {
    args.iter().any(|a| {
        longs
            .iter()
            .any(|l| *a == *l || a.starts_with(&format!("{l}=")))
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a.len() > 1
                && a[1..].contains(short)
                && a[1..].bytes().all(|b| b.is_ascii_alphabetic()))
    })
}

/// Whether a relative folder or file stays beneath the workspace: not absolute, not `~`, no
/// variable, and never above the start with `..`.
pub(super) fn within_workspace(d: &str) -> bool {
    if d.is_empty()
        || d.starts_with('/')
        || d.starts_with('~')
        || d.contains('$')
        || d.contains('\\')
        || d.contains(':')
        || d == "-"
    {
        return false;
    }
    let mut depth: i32 = 0;
    for seg in d.split('/') {
        match seg {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// The value of `--name=V` or `--name V` among `args` (before a bare `--`), for each use.
pub(super) fn option_values<'a>(args: &[&'a str], names: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() && args[i] != "--" {
        let x = args[i];
        for n in names {
            if x == *n {
                out.push(args.get(i + 1).copied().unwrap_or(""));
            } else if let Some(v) = x.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                out.push(v);
            }
        }
        i += 1;
    }
    out
}

/// Whether one of `names` is given among `args` (before a bare `--`), alone or as `--name=V`.
pub(super) fn has_option(args: &[&str], names: &[&str]) -> bool {
    args.iter().take_while(|x| **x != "--").any(|x| {
        names
            .iter()
            .any(|n| x == n || x.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
    })
}
