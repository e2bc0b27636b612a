//! `.as` programs (the `.as` specification calls them "AgentScript"; "AgentScript v1 replies" stay the reply
//! format): the tokenizer, the parser and its syntax tree, the semantic analyzer and the
//! formatter. Pure, like the rest of core; the host reads the files and runs the programs.
//!
//! ```text
//! source -> lexer -> parser -> AST -> analyzer -> (interpreter, next) -> trace + result
//! ```

pub mod analyze;
pub mod ast;
pub mod chat;
pub mod format;
pub mod ide;
pub mod interp;
pub mod lexer;
pub mod loose;
pub mod parser;
pub mod repl;
pub mod shape;

use serde::Serialize;

pub use crate::diag::{Diagnostic, Pos};

/// What `keyless-host as check --json` prints: `{"ok","diagnostics":[…]}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "AsCheckReport"))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    pub ok: bool,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses and analyzes one file on its own (agent imports are not followed; see
/// [`analyze::check_imports`] for the cycle check across files).
#[must_use]
pub fn check(src: &str) -> CheckReport {
    let (_, diagnostics) = diagnose(src);
    CheckReport {
        ok: diagnostics.is_empty(),
        diagnostics,
    }
}

/// Sorts problems by where they are: the one sort of the front end's problems (one copy of its
/// code in the wasm package, not one per place that sorts).
pub(crate) fn by_position(problems: &mut [Diagnostic]) {
    problems.sort_by_key(|d| (d.line, d.column));
}

/// Every problem of one file in one run: the syntax problems, and what the analyzer finds in
/// the rest of the file (parsing recovers past each slip). A problem that may only echo a slip
/// is left out: one on a line the parser skipped, or one naming something the skipped tokens
/// mention (what they declared is unknown to the rest). Also returns the program read, whole
/// when there were no syntax problems, else without what failed (for the import graph).
#[must_use]
pub fn diagnose(src: &str) -> (Option<ast::Program>, Vec<Diagnostic>) {
    let partial = parser::parse_partial(src);
    let Some(program) = partial.program else {
        return (None, partial.problems);
    };
    let analysis = analyze::analyze(&program);
    if partial.problems.is_empty() {
        return (Some(program), analysis);
    }
    let echo = |d: &Diagnostic| {
        d.line
            .is_some_and(|l| partial.skipped_lines.binary_search(&l).is_ok())
            || partial
                .skipped_names
                .iter()
                .any(|n| d.message.contains(&format!("\"{n}\"")))
    };
    let mut all = partial.problems;
    all.extend(analysis.into_iter().filter(|d| !echo(d)));
    by_position(&mut all);
    (Some(program), all)
}

/// A whole number literal's value (`12`, `2k` = 2000), or `None` for a fraction or one past
/// `u64`. Budgets, caps and counts must be whole numbers.
#[must_use]
pub fn whole_number(text: &str) -> Option<u64> {
    let (digits, scale) = match text.strip_suffix('k') {
        Some(d) => (d, 1000),
        None => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// A number literal's value (`0.5`, `2k`, `12`), as a program reads it when it runs.
#[must_use]
pub fn number_value(text: &str) -> Option<f64> {
    if let Some(n) = whole_number(text) {
        #[allow(clippy::cast_precision_loss)] // literals past 2^53 are rounded, like JSON's
        return Some(n as f64);
    }
    let (digits, scale) = match text.strip_suffix('k') {
        Some(d) => (d, 1000.0),
        None => (text, 1.0),
    };
    digits.parse::<f64>().ok().map(|v| v * scale)
}

/// The largest `.as` file read, in bytes.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;
/// The deepest nesting of blocks and expressions.
pub const MAX_DEPTH: u32 = 64;
/// The most retries `attempts` may ask for: a checker's error and the interpreter's refusal
/// both name it.
pub const MAX_RETRIES: u64 = 20;
