//! Allow-list patterns (`Commands.AllowList`, `--allow`, a movement's `allowed_commands`).

/// Whether `command` matches an allow-list pattern. Patterns are words; `*` inside a word matches
/// any characters, and a final `*` word matches any remaining words (including none).
#[must_use]
pub fn pattern_matches(pattern: &str, command: &str) -> bool {
    let pat: Vec<&str> = pattern.split_whitespace().collect();
    let words: Vec<&str> = command.split_whitespace().collect();
    match_words(&pat, &words)
}

fn match_words(pat: &[&str], words: &[&str]) -> bool {
    match (pat.split_first(), words.split_first()) {
        (None, None) => true,
        (Some((&"*", [])), _) => true,
        (Some((p, prest)), Some((w, wrest))) => glob(p, w) && match_words(prest, wrest),
        _ => false,
    }
}

/// Whether `w` matches the wildcard pattern `p` (`*` any characters, `?` one).
pub(crate) fn glob(p: &str, w: &str) -> bool {
    let p: Vec<char> = p.chars().collect();
    let w: Vec<char> = w.chars().collect();
    // Iterative wildcard match with backtracking to the last star.
    let (mut pi, mut wi, mut star, mut mark) = (0, 0, None, 0);
    while wi < w.len() {
        if pi < p.len() && (p[pi] == w[wi] || p[pi] == '?') {
            pi += 1;
            wi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = wi;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            wi = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}
