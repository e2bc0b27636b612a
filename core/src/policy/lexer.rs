//! A shell lexer for the policy: it splits a command line into segments (simple commands) and
//! records, for each, its words, redirections, substitutions and here-documents, and every
//! construct it does not model, so the classifier never mistakes one for plain words.

use super::Tier;

/// One word after quote removal.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The text; a substitution appears as `$(…)`, a parameter as `$NAME`.
    pub text: String,
    /// Some part was quoted or escaped.
    pub quoted: bool,
    /// Holds a parameter expansion or a substitution: its value is not known here.
    pub expanded: bool,
    /// Holds an unquoted glob character or a leading `~`.
    pub glob: bool,
}

/// What a redirection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirKind {
    /// `< file`
    Read,
    /// `> file`, `>> file`, `>| file`, `>& file`
    Write,
    /// `2>&1`, `>&-`, `<&0`
    Dup,
    /// `<<EOF`
    HereDoc,
    /// `<<< word`
    HereString,
    /// `<> file`
    ReadWrite,
    /// `&> file`, `&>> file`: a redirection in bash, a background job in sh
    Both,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub kind: RedirKind,
    pub target: Word,
}

/// One simple command (or subshell) of a line.
#[derive(Debug, Default, Clone)]
pub(crate) struct Segment {
    /// The segment's source text, trimmed.
    pub text: String,
    /// `NAME=value` words before the program.
    pub assignments: Vec<Word>,
    /// The program and its arguments.
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Constructs that raise the segment to at least this tier, with the reason.
    pub notes: Vec<(Tier, String)>,
    /// Command texts inside substitutions and subshells, classified on their own.
    pub inner: Vec<String>,
    /// Its standard input comes from the previous segment's pipe.
    pub piped: bool,
    /// Ends with a single `&`.
    pub background: bool,
    /// The segment is `( … )`.
    pub subshell: bool,
    /// The body of a here-document fed to it, and whether its delimiter was quoted.
    pub heredoc: Option<(String, bool)>,
    /// The text of a here-string fed to it.
    pub herestring: Option<String>,
}

impl Segment {
    /// The program word.
    pub(crate) fn program(&self) -> Option<&Word> {
        self.words.first()
    }

    fn note(&mut self, tier: Tier, why: impl Into<String>) {
        self.notes.push((tier, why.into()));
    }

    fn is_blank(&self) -> bool {
        self.words.is_empty()
            && self.assignments.is_empty()
            && self.redirects.is_empty()
            && !self.subshell
            && self.notes.is_empty()
    }
}

/// The last path component of a program word.
pub(crate) fn base_name(word: &str) -> &str {
    word.rsplit(['/', '\\']).next().unwrap_or(word)
}

/// Whether a word is a `NAME=value` assignment.
pub(crate) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            name.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        }
        None => false,
    }
}

/// Characters a shell reads as plain word characters but a reader may see as a line break, or
/// that hide text: carriage return, NEL, the Unicode line and paragraph separators, and other
/// control characters.
fn is_deceptive(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

struct PendingHeredoc {
    segment: usize,
    delim: String,
    quoted: bool,
    strip_tabs: bool,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    segs: Vec<Segment>,
    seg: Segment,
    seg_start: usize,
    heredocs: Vec<PendingHeredoc>,
}

/// Splits a command line into its segments.
pub(crate) fn segments(line: &str) -> Vec<Segment> {
    let mut lx = Lexer {
        chars: line.chars().collect(),
        pos: 0,
        segs: Vec::new(),
        seg: Segment::default(),
        seg_start: 0,
        heredocs: Vec::new(),
    };
    lx.run();
    lx.segs
}

impl Lexer {
    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn slice(&self, from: usize, to: usize) -> String {
        self.chars[from.min(self.chars.len())..to.min(self.chars.len())]
            .iter()
            .collect()
    }

    fn end_segment(&mut self, end: usize, piped_next: bool) {
        let mut seg = std::mem::take(&mut self.seg);
        seg.text = self.slice(self.seg_start, end).trim().to_string();
        if !seg.is_blank() || !seg.text.is_empty() {
            self.segs.push(seg);
        }
        self.seg.piped = piped_next;
    }

    fn run(&mut self) {
        loop {
            while matches!(self.peek(0), Some(' ' | '\t')) {
                self.pos += 1;
            }
            let Some(c) = self.peek(0) else { break };
            match c {
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while self.peek(0).is_some_and(|n| n != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    let end = self.pos;
                    self.pos += 1;
                    self.end_segment(end, false);
                    self.read_heredoc_bodies();
                    self.seg_start = self.pos;
                }
                ';' => {
                    let end = self.pos;
                    self.pos += 1;
                    if self.peek(0) == Some(';') || self.peek(0) == Some('&') {
                        self.pos += 1;
                        self.seg
                            .note(Tier::Risky, "a case statement (;;) is not analysed");
                    }
                    self.end_segment(end, false);
                    self.seg_start = self.pos;
                }
                '&' => {
                    let end = self.pos;
                    match self.peek(1) {
                        Some('&') => {
                            self.pos += 2;
                            self.end_segment(end, false);
                            self.seg_start = self.pos;
                        }
                        Some('>') => {
                            self.pos += 2;
                            if self.peek(0) == Some('>') {
                                self.pos += 1;
                            }
                            let target = self.target();
                            self.seg.redirects.push(Redirect {
                                kind: RedirKind::Both,
                                target,
                            });
                        }
                        _ => {
                            self.pos += 1;
                            self.seg.background = true;
                            self.end_segment(end, false);
                            self.seg_start = self.pos;
                        }
                    }
                }
                '|' => {
                    let end = self.pos;
                    let (len, piped) = match self.peek(1) {
                        Some('|') => (2, false),
                        Some('&') => (2, true),
                        _ => (1, true),
                    };
                    self.pos += len;
                    self.end_segment(end, piped);
                    self.seg_start = self.pos;
                }
                '(' => {
                    self.pos += 1;
                    let inner = self.read_balanced('(', ')');
                    if self.seg.words.is_empty() && self.seg.assignments.is_empty() {
                        if inner.starts_with('(') {
                            self.seg
                                .note(Tier::Risky, "an arithmetic command (( )) is not analysed");
                        } else {
                            self.seg.subshell = true;
                            self.seg.note(Tier::Risky, "a subshell runs commands");
                        }
                        self.seg.inner.push(inner);
                    } else {
                        self.seg.note(
                            Tier::Risky,
                            "a parenthesis after a word (a function definition or extended glob) is not analysed",
                        );
                        self.seg.inner.push(inner);
                    }
                }
                ')' => {
                    self.pos += 1;
                    self.seg.note(Tier::Risky, "an unmatched ) is not analysed");
                }
                '<' | '>' => self.redirect(),
                c if c.is_ascii_digit() && self.fd_redirect_ahead() => {
                    while self.peek(0).is_some_and(|d| d.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    self.redirect();
                }
                _ => {
                    let before = self.pos;
                    let w = self.word();
                    if self.pos == before {
                        // Never loop on a character no rule consumes.
                        self.pos += 1;
                        self.seg
                            .note(Tier::Risky, format!("the character {c:?} is not analysed"));
                        continue;
                    }
                    if self.seg.words.is_empty() && !w.quoted && is_assignment(&w.text) {
                        self.seg.assignments.push(w);
                    } else {
                        self.seg.words.push(w);
                    }
                }
            }
        }
        let end = self.chars.len();
        self.end_segment(end, false);
        if let Some(h) = self.heredocs.first() {
            let seg = h.segment;
            if let Some(s) = self.segs.get_mut(seg) {
                s.note(Tier::Risky, "a here-document without its body");
            }
        }
    }

    /// Digits right before `<` or `>`: a file descriptor number.
    fn fd_redirect_ahead(&self) -> bool {
        let mut i = 0;
        while self.peek(i).is_some_and(|d| d.is_ascii_digit()) {
            i += 1;
        }
        matches!(self.peek(i), Some('<' | '>'))
    }

    fn at_word_end(c: char) -> bool {
        matches!(
            c,
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
        )
    }

    /// Reads one word at `pos`.
    fn word(&mut self) -> Word {
        let mut w = Word::default();
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            if Self::at_word_end(c) {
                if c == '(' && self.pos > start {
                    // `word(…)`: a function definition or an extended glob.
                    self.pos += 1;
                    let inner = self.read_balanced('(', ')');
                    self.seg.note(
                        Tier::Risky,
                        "a parenthesis after a word (a function definition or extended glob) is not analysed",
                    );
                    w.text.push('(');
                    w.text.push_str(&inner);
                    w.text.push(')');
                    continue;
                }
                break;
            }
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.peek(0) {
                        Some('\n') => self.pos += 1,
                        Some(n) => {
                            w.text.push(n);
                            w.quoted = true;
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    self.pos += 1;
                    w.quoted = true;
                    let mut closed = false;
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        if n == '\'' {
                            closed = true;
                            break;
                        }
                        w.text.push(n);
                    }
                    if !closed {
                        self.seg.note(Tier::Risky, "an unterminated quote");
                    }
                }
                '"' => {
                    self.pos += 1;
                    w.quoted = true;
                    self.double_quoted(&mut w);
                }
                '$' => self.dollar(&mut w, false),
                '`' => {
                    self.pos += 1;
                    let inner = self.read_backtick();
                    self.substitution(&mut w, inner);
                }
                '*' | '?' | '[' => {
                    w.glob = true;
                    w.text.push(c);
                    self.pos += 1;
                }
                '~' if w.text.is_empty() => {
                    w.glob = true;
                    w.text.push(c);
                    self.pos += 1;
                }
                c => {
                    if is_deceptive(c) {
                        self.seg.note(
                            Tier::Risky,
                            format!(
                                "the character U+{:04X} outside quotes is read differently by the shell and by a reader",
                                u32::from(c)
                            ),
                        );
                    }
                    w.text.push(c);
                    self.pos += 1;
                }
            }
        }
        w
    }

    /// The rest of a double-quoted string (after the opening quote).
    fn double_quoted(&mut self, w: &mut Word) {
        while let Some(n) = self.peek(0) {
            match n {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek(0) {
                        Some(m @ ('"' | '\\' | '$' | '`')) => {
                            w.text.push(m);
                            self.pos += 1;
                        }
                        Some('\n') => self.pos += 1,
                        _ => w.text.push('\\'),
                    }
                }
                '$' => self.dollar(w, true),
                '`' => {
                    self.pos += 1;
                    let inner = self.read_backtick();
                    self.substitution(w, inner);
                }
                n => {
                    w.text.push(n);
                    self.pos += 1;
                }
            }
        }
        self.seg.note(Tier::Risky, "an unterminated quote");
    }

    fn substitution(&mut self, w: &mut Word, inner: String) {
        self.seg
            .note(Tier::Risky, "command substitution runs another command");
        self.seg.inner.push(inner);
        w.text.push_str("$(…)");
        w.expanded = true;
    }

    /// A `$` at `pos`.
    fn dollar(&mut self, w: &mut Word, in_dq: bool) {
        match (self.peek(1), self.peek(2)) {
            (Some('('), Some('(')) => {
                self.pos += 3;
                let inner = self.read_balanced('(', ')');
                if self.peek(0) == Some(')') {
                    self.pos += 1;
                }
                if inner.contains("$(") || inner.contains('`') {
                    self.substitution(w, inner);
                } else {
                    w.text.push_str("$((…))");
                    w.expanded = true;
                }
            }
            (Some('('), _) => {
                self.pos += 2;
                let inner = self.read_balanced('(', ')');
                self.substitution(w, inner);
            }
            (Some('{'), _) => {
                self.pos += 2;
                let inner = self.read_balanced('{', '}');
                if inner.contains("$(") || inner.contains('`') {
                    // `${x:-$(cmd)}`: the inner text holds the substitution; classify it as a line.
                    self.substitution(w, inner);
                } else {
                    w.text.push_str("${");
                    w.text.push_str(&inner);
                    w.text.push('}');
                    w.expanded = true;
                }
            }
            (Some('\''), _) if !in_dq => {
                // $'…': ANSI-C quoting, data only.
                self.pos += 2;
                w.quoted = true;
                let mut closed = false;
                while let Some(n) = self.peek(0) {
                    self.pos += 1;
                    match n {
                        '\\' => {
                            if let Some(m) = self.peek(0) {
                                w.text.push('\\');
                                w.text.push(m);
                                self.pos += 1;
                            }
                        }
                        '\'' => {
                            closed = true;
                            break;
                        }
                        n => w.text.push(n),
                    }
                }
                if !closed {
                    self.seg.note(Tier::Risky, "an unterminated quote");
                }
            }
            (Some('"'), _) if !in_dq => {
                self.pos += 2;
                w.quoted = true;
                self.double_quoted(w);
            }
            (Some(c), _) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                w.text.push('$');
                while let Some(n) = self
                    .peek(0)
                    .filter(|n| n.is_ascii_alphanumeric() || *n == '_')
                {
                    w.text.push(n);
                    self.pos += 1;
                }
                w.expanded = true;
            }
            (Some(c), _) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 2;
                w.text.push('$');
                w.text.push(c);
                w.expanded = true;
            }
            _ => {
                self.pos += 1;
                w.text.push('$');
            }
        }
    }

    /// Reads until the bracket that closes one opened just before `pos`, honouring quotes.
    fn read_balanced(&mut self, open: char, close: char) -> String {
        let mut depth = 1;
        let mut out = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match quote {
                Some(q) => {
                    if c == q {
                        quote = None;
                    } else if c == '\\' && q == '"' {
                        if let Some(n) = self.peek(0) {
                            out.push(c);
                            out.push(n);
                            self.pos += 1;
                            continue;
                        }
                    }
                }
                None => match c {
                    '\'' | '"' => quote = Some(c),
                    '\\' => {
                        if let Some(n) = self.peek(0) {
                            out.push(c);
                            out.push(n);
                            self.pos += 1;
                            continue;
                        }
                    }
                    c if c == open => depth += 1,
                    c if c == close => {
                        depth -= 1;
                        if depth == 0 {
                            return out;
                        }
                    }
                    _ => {}
                },
            }
            out.push(c);
        }
        self.seg.note(Tier::Risky, format!("an unclosed {open}"));
        out
    }

    fn read_backtick(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '`' => return out,
                '\\' => {
                    if let Some(n) = self.peek(0) {
                        out.push(n);
                        self.pos += 1;
                    }
                }
                c => out.push(c),
            }
        }
        self.seg.note(Tier::Risky, "an unclosed backtick");
        out
    }

    /// A redirection target word (blanks skipped first).
    fn target(&mut self) -> Word {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let w = self.word();
        if w.text.is_empty() && !w.quoted {
            self.seg.note(Tier::Risky, "a redirection without a target");
        }
        w
    }

    /// A redirection operator at `pos` and its target.
    fn redirect(&mut self) {
        let op = self.peek(0).unwrap_or('>');
        self.pos += 1;
        let kind = if op == '<' {
            match self.peek(0) {
                Some('<') if self.peek(1) == Some('<') => {
                    self.pos += 2;
                    let w = self.target();
                    self.seg.herestring = Some(w.text.clone());
                    self.seg.redirects.push(Redirect {
                        kind: RedirKind::HereString,
                        target: w,
                    });
                    return;
                }
                Some('<') => {
                    self.pos += 1;
                    let strip_tabs = self.peek(0) == Some('-');
                    if strip_tabs {
                        self.pos += 1;
                    }
                    let w = self.target();
                    self.heredocs.push(PendingHeredoc {
                        segment: self.segs.len(),
                        delim: w.text.clone(),
                        quoted: w.quoted,
                        strip_tabs,
                    });
                    self.seg.redirects.push(Redirect {
                        kind: RedirKind::HereDoc,
                        target: w,
                    });
                    return;
                }
                Some('&') => {
                    self.pos += 1;
                    RedirKind::Dup
                }
                Some('>') => {
                    self.pos += 1;
                    RedirKind::ReadWrite
                }
                _ => RedirKind::Read,
            }
        } else {
            match self.peek(0) {
                Some('>' | '|') => {
                    self.pos += 1;
                    RedirKind::Write
                }
                Some('&') => {
                    self.pos += 1;
                    RedirKind::Dup
                }
                _ => RedirKind::Write,
            }
        };
        let target = self.target();
        let kind = if kind == RedirKind::Dup
            && !(target.text == "-"
                || (!target.text.is_empty() && target.text.bytes().all(|b| b.is_ascii_digit())))
        {
            // `>& file` writes the file (bash); `<& word` is not a descriptor either.
            if op == '>' {
                RedirKind::Write
            } else {
                RedirKind::Read
            }
        } else {
            kind
        };
        self.seg.redirects.push(Redirect { kind, target });
    }

    /// After a newline: the bodies of the here-documents its line opened.
    fn read_heredoc_bodies(&mut self) {
        let pending = std::mem::take(&mut self.heredocs);
        for h in pending {
            let mut body = String::new();
            let mut closed = false;
            while self.pos < self.chars.len() {
                let start = self.pos;
                let mut end = start;
                while end < self.chars.len() && self.chars[end] != '\n' {
                    end += 1;
                }
                let line: String = self.chars[start..end].iter().collect();
                self.pos = (end + 1).min(self.chars.len());
                let cmp = if h.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if cmp == h.delim {
                    closed = true;
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            let mut notes = Vec::new();
            let mut inner = Vec::new();
            if !h.quoted {
                // An unquoted delimiter: the body is expanded like a double-quoted string.
                let mut sub = Lexer {
                    chars: body.chars().collect(),
                    pos: 0,
                    segs: Vec::new(),
                    seg: Segment::default(),
                    seg_start: 0,
                    heredocs: Vec::new(),
                };
                let mut w = Word::default();
                sub.double_quoted(&mut w);
                notes.extend(
                    sub.seg
                        .notes
                        .into_iter()
                        .filter(|(_, why)| why != "an unterminated quote"),
                );
                inner = sub.seg.inner;
            }
            if let Some(seg) = self.segs.get_mut(h.segment) {
                if !closed {
                    seg.note(Tier::Risky, "a here-document without its end line");
                }
                seg.notes.extend(notes);
                seg.inner.extend(inner);
                seg.heredoc = Some((body, h.quoted));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &Segment) -> Vec<&str> {
        s.words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn splits_and_quotes() {
        let s = segments("echo 'a && b' \"c|d\" e\\;f; ls -la | wc -l && x || y & z");
        assert_eq!(s.len(), 6);
        assert_eq!(texts(&s[0]), ["echo", "a && b", "c|d", "e;f"]);
        assert_eq!(s[1].text, "ls -la");
        assert!(s[2].piped);
        assert!(s[4].background);
    }

    #[test]
    fn substitutions_anywhere() {
        for line in [
            "echo $(id)",
            "echo `id`",
            "echo \"$(id)\"",
            "cat < $(id)",
            "cat <<< \"$(id)\"",
            "echo ${x:-$(id)}",
            "echo $(( $(id) ))",
            "cat <<EOF\n$(id)\nEOF",
            "cat <<EOF\n`id`\nEOF",
        ] {
            let s = segments(line);
            assert!(
                s.iter().any(|g| g.inner.iter().any(|i| i.contains("id"))),
                "{line:?}: {s:?}"
            );
        }
        // A quoted delimiter keeps the body as data.
        let s = segments("cat <<'EOF'\n$(id)\nEOF");
        assert!(s[0].inner.is_empty());
        assert_eq!(s[0].heredoc.as_ref().map(|h| h.1), Some(true));
    }

    #[test]
    fn redirections() {
        let s = segments("cmd 2>&1 >out.txt <in.txt 2>/dev/null &>both >&file");
        let kinds: Vec<RedirKind> = s[0].redirects.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RedirKind::Dup,
                RedirKind::Write,
                RedirKind::Read,
                RedirKind::Write,
                RedirKind::Both,
                RedirKind::Write
            ]
        );
        assert_eq!(texts(&s[0]), ["cmd"]);
    }

    #[test]
    fn deceptive_characters_and_constructs() {
        for line in [
            "echo hello\u{2028}rm -rf /",
            "npm install\rrm -rf /",
            "echo a\u{85}b",
            "f() { ls; }",
            "git log @(x)",
            "(ls)",
        ] {
            let s = segments(line);
            assert!(
                s.iter()
                    .any(|g| g.notes.iter().any(|(t, _)| *t == Tier::Risky)),
                "{line:?}: {s:?}"
            );
        }
        // Inside quotes they are data.
        let s = segments("echo \"a\u{2028}b\"");
        assert!(s[0].notes.is_empty());
    }
}
