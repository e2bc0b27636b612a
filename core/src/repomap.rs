//! The repository map of a session's first prompt: the tracked files with their sizes and, for
//! source files, their top-level symbols, most relevant first, within a budget of characters,
//! so the model starts knowing where things are instead of spending turns looking around
//! (Aider's repository map is the model).
//!
//! Invariants: pure (the host lists the files, reads the symbols with tree-sitter and says which
//! changed lately); the text never exceeds the budget; every name from the repository goes
//! through [`crate::text::printable`]; the order depends only on the input.

use crate::text::printable;
use std::fmt::Write as _;

/// The default budget, in characters (`Agent.RepoMapChars`).
pub const DEFAULT_BUDGET: u32 = 4_000;
/// Most symbols listed for one file.
const MAX_SYMBOLS: usize = 12;

/// One tracked file as the host found it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MapFile {
    /// Relative, with `/`.
    pub path: String,
    pub bytes: u64,
    /// How recently it changed: 0 for a file changed in the working tree, then 1, 2, … by the
    /// newest commit that touched it; `None` when not among the recent ones.
    pub recent: Option<u32>,
    /// Its top-level symbols, in file order (`class Parser`, `def parse`, `fn main`).
    pub symbols: Vec<String>,
}

/// What the host gathered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepoMap {
    pub files: Vec<MapFile>,
    /// Tracked files that were not read (past the host's own bound).
    pub unread: usize,
}

/// `1.2 KB`, `340 B`.
#[allow(clippy::cast_precision_loss)] // one decimal shown
fn size(bytes: u64) -> String {
    match bytes {
        0..=999 => format!("{bytes} B"),
        1_000..=999_999 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// The words of a task that may name a file or a symbol (three characters or more).
fn words(task: &str) -> Vec<String> {
    let mut out: Vec<String> = task
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '/' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '.' || c == '-' || c == '/'))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The bare name of a symbol line (`class Parser(Base)` → `parser`).
fn symbol_name(symbol: &str) -> String {
    symbol
        .split_whitespace()
        .last()
        .unwrap_or("")
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("")
        .to_lowercase()
}

/// How relevant a file is to the task: named in it (by path, file name or stem), defining a
/// symbol it names, then changed lately, then holding symbols at all.
fn score(f: &MapFile, task: &[String]) -> (u32, u32, u32) {
    let path = f.path.to_lowercase();
    let name = path.rsplit('/').next().unwrap_or(&path);
    let stem = name.split('.').next().unwrap_or(name);
    let named = task.iter().any(|w| {
        *w == path
            || *w == name
            || (stem.len() >= 3 && *w == stem)
            || path.ends_with(&format!("/{w}"))
    });
    let defines = f.symbols.iter().any(|s| {
        let n = symbol_name(s);
        n.len() >= 3 && task.contains(&n)
    });
    let mention = match (named, defines) {
        (true, true) => 3,
        (true, false) => 2,
        (false, true) => 1,
        (false, false) => 0,
    };
    let recent = f.recent.map_or(0, |r| 100u32.saturating_sub(r));
    (mention, recent, u32::from(!f.symbols.is_empty()))
}

/// The map as the prompt shows it, at most `budget` characters: the most relevant files first,
/// each `path (size): symbols`; what does not fit is counted on the last line. Empty when the
/// budget is 0 or there are no files.
#[must_use]
pub fn render(map: &RepoMap, task: Option<&str>, budget: u32) -> String {
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    if budget == 0 || map.files.is_empty() {
        return String::new();
    }
    let task = words(task.unwrap_or(""));
    let mut order: Vec<&MapFile> = map.files.iter().collect();
    // Most relevant first; shallow paths before deep ones; then by path (a stable order).
    order.sort_by(|a, b| {
        score(b, &task)
            .cmp(&score(a, &task))
            .then_with(|| {
                a.path
                    .matches('/')
                    .count()
                    .cmp(&b.path.matches('/').count())
            })
            .then_with(|| a.path.cmp(&b.path))
    });
    let total = map.files.len() + map.unread;
    let head = format!(
        "{total} tracked file{}, the most relevant first (size; top-level symbols). Read a file before you change it.\n",
        if total == 1 { "" } else { "s" }
    );
    let mut out = head;
    let mut shown = 0usize;
    for f in &order {
        let mut line = format!("{} ({})", printable(&f.path), size(f.bytes));
        if !f.symbols.is_empty() {
            let syms: Vec<String> = f
                .symbols
                .iter()
                .take(MAX_SYMBOLS)
                .map(|s| printable(s))
                .collect();
            let _ = write!(line, ": {}", syms.join(", "));
            if f.symbols.len() > MAX_SYMBOLS {
                let _ = write!(line, ", … {} more", f.symbols.len() - MAX_SYMBOLS);
            }
        }
        line.push('\n');
        // Room for the closing line is kept.
        let rest = total - shown - 1;
        let closing = if rest > 0 { 60 } else { 0 };
        if out.chars().count() + line.chars().count() + closing > budget {
            // A long symbol list may still fit without its symbols.
            let bare = format!("{} ({})\n", printable(&f.path), size(f.bytes));
            if out.chars().count() + bare.chars().count() + closing > budget {
                break;
            }
            out.push_str(&bare);
        } else {
            out.push_str(&line);
        }
        shown += 1;
    }
    let rest = total - shown;
    if rest > 0 {
        let _ = writeln!(out, "… and {rest} more (git ls-files lists them).");
    }
    if out.chars().count() > budget {
        // A budget smaller than the head itself: nothing useful fits.
        return String::new();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: u64, recent: Option<u32>, symbols: &[&str]) -> MapFile {
        MapFile {
            path: path.into(),
            bytes,
            recent,
            symbols: symbols.iter().map(|s| (*s).to_string()).collect(),
        }
    }

    fn sample() -> RepoMap {
        RepoMap {
            files: vec![
                file("README.md", 900, None, &[]),
                file("calc/ops.py", 1_234, None, &["def add", "def divide"]),
                file("calc/cli.py", 700, Some(1), &["def main"]),
                file("tests/test_ops.py", 400, Some(0), &["def test_divide"]),
            ],
            unread: 0,
        }
    }

    #[test]
    fn what_the_task_names_comes_first_then_what_changed() {
        let text = render(
            &sample(),
            Some("divide(1, 0) should raise ValueError"),
            4_000,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "4 tracked files, the most relevant first (size; top-level symbols). Read a file before you change it.");
        assert_eq!(lines[1], "calc/ops.py (1.2 KB): def add, def divide");
        assert_eq!(lines[2], "tests/test_ops.py (400 B): def test_divide");
        assert_eq!(lines[3], "calc/cli.py (700 B): def main");
        assert_eq!(lines[4], "README.md (900 B)");
    }

    #[test]
    fn the_budget_is_never_exceeded_and_the_rest_is_counted() {
        let mut map = sample();
        for i in 0..500 {
            map.files.push(file(
                &format!("src/m{i}.py"),
                10,
                None,
                &["def f", "class C"],
            ));
        }
        for budget in [0, 50, 200, 1_000, 4_000] {
            let text = render(&map, None, budget);
            assert!(
                text.chars().count() <= budget as usize,
                "{budget}: {}",
                text.len()
            );
            if budget >= 200 {
                assert!(
                    text.ends_with("more (git ls-files lists them).\n"),
                    "{text}"
                );
            }
        }
        assert_eq!(render(&map, None, 0), "");
    }

    #[test]
    fn names_are_shown_as_they_are() {
        let map = RepoMap {
            files: vec![file("a\u{202e}b.py", 1, None, &["def \u{1b}[2Jx"])],
            unread: 0,
        };
        let text = render(&map, None, 1_000);
        assert!(text.contains("a<U+202E>b.py"), "{text}");
        assert!(text.contains("def <U+001B>[2Jx"), "{text}");
    }
}
