//! The command policy: split a command line into segments, classify each into a risk tier, and
//! decide run / confirm / deny for a mode.
//!
//! The splitter is a small shell lexer. It honours quotes and escapes, and it notices what a shell
//! could do behind a reader's back: command and process substitution, redirections, subshells,
//! here-documents and `VAR=value` prefixes. Programs that run other programs (sudo, env, xargs,
//! `sh -c`, `find -exec`, …) are unwrapped and the inner command is classified too, so that
//! `sudo shutdown` is Denied, not just Risky.

use crate::config::Mode;
use serde::Serialize;
use std::fmt;

/// Risk tiers, ordered from harmless to never-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Tier {
    ReadOnly,
    Build,
    Execute,
    Risky,
    Denied,
}

impl Tier {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::ReadOnly => "ReadOnly",
            Tier::Build => "Build",
            Tier::Execute => "Execute",
            Tier::Risky => "Risky",
            Tier::Denied => "Denied",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens to a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Run,
    Confirm,
    Deny,
}

impl Decision {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Decision::Run => "run",
            Decision::Confirm => "confirm",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One classified segment of a command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentVerdict {
    pub text: String,
    pub tier: Tier,
    pub reason: String,
}

/// A classified command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    pub tier: Tier,
    pub segments: Vec<SegmentVerdict>,
}

/// The decision for a command line under a mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub tier: Tier,
    pub decision: Decision,
    /// The deciding segment's reason, e.g. "segment 2: redirection writes a file".
    pub reason: String,
    pub segments: Vec<SegmentVerdict>,
}

/// Nesting depth for `sh -c`, `$(…)` and wrappers.
const MAX_DEPTH: u32 = 4;
/// Command lines longer than this are classified Risky without analysis.
const MAX_ANALYSED_CHARS: usize = 16_384;

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    Pipe,
    Other,
}

#[derive(Debug, Default, Clone)]
struct Word {
    /// The word after quote removal.
    text: String,
    /// An unquoted glob character or a leading `~` made it into the word.
    unquoted_special: bool,
}

#[derive(Debug, Default, Clone)]
struct RawSegment {
    text: String,
    words: Vec<Word>,
    /// Notes that raise the tier to at least Risky: (reason).
    risky: Vec<String>,
    /// Inner command texts of substitutions, classified recursively.
    inner: Vec<String>,
    /// Joined to the previous segment by a pipe.
    piped: bool,
    /// The body of a here-document fed to this segment.
    heredoc: Option<String>,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    heredoc_delim: Option<String>,
}

impl Lexer {
    fn new(src: &str) -> Self {
        Self {
            chars: src.chars().collect(),
            pos: 0,
            heredoc_delim: None,
        }
    }

    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    /// Reads until the parenthesis that closes one opened just before `pos`, honouring quotes.
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
        out
    }

    /// Splits the whole line into segments.
    fn segments(mut self) -> Vec<RawSegment> {
        let mut segs = Vec::new();
        let mut seg = RawSegment::default();
        let mut word = Word::default();
        let mut in_word = false;
        let mut seg_start = 0usize;
        let mut heredoc_pending = false;

        macro_rules! end_word {
            () => {
                if in_word {
                    seg.words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            };
        }
        macro_rules! end_segment {
            ($sep:expr, $end:expr) => {{
                end_word!();
                seg.text = self.slice(seg_start, $end).trim().to_string();
                if !seg.text.is_empty() || !seg.words.is_empty() {
                    segs.push(std::mem::take(&mut seg));
                } else {
                    seg = RawSegment::default();
                }
                seg.piped = $sep == Sep::Pipe;
            }};
        }

        while let Some(c) = self.peek(0) {
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.peek(0) {
                        Some('\n') => self.pos += 1, // line continuation
                        Some(n) => {
                            word.text.push(n);
                            in_word = true;
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    self.pos += 1;
                    in_word = true;
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        if n == '\'' {
                            break;
                        }
                        word.text.push(n);
                    }
                }
                '"' => {
                    self.pos += 1;
                    in_word = true;
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        match n {
                            '"' => break,
                            '\\' => {
                                if let Some(m) = self.peek(0) {
                                    word.text.push(m);
                                    self.pos += 1;
                                }
                            }
                            '`' => {
                                let inner = self.read_backtick();
                                seg.risky
                                    .push("command substitution runs another command".into());
                                seg.inner.push(inner);
                            }
                            '$' if self.peek(0) == Some('(') && self.peek(1) != Some('(') => {
                                self.pos += 1;
                                let inner = self.read_balanced('(', ')');
                                seg.risky
                                    .push("command substitution runs another command".into());
                                seg.inner.push(inner);
                            }
                            n => word.text.push(n),
                        }
                    }
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.read_backtick();
                    seg.risky
                        .push("command substitution runs another command".into());
                    seg.inner.push(inner);
                    in_word = true;
                    word.text.push_str("$SUBST");
                }
                '$' if self.peek(1) == Some('(') && self.peek(2) == Some('(') => {
                    // Arithmetic expansion: harmless unless it hides a substitution.
                    self.pos += 3;
                    let inner = self.read_balanced('(', ')');
                    if inner.contains("$(") || inner.contains('`') {
                        seg.risky
                            .push("command substitution runs another command".into());
                        seg.inner.push(inner);
                    }
                    if self.peek(0) == Some(')') {
                        self.pos += 1;
                    }
                    in_word = true;
                    word.text.push_str("$ARITH");
                }
                '$' if self.peek(1) == Some('(') => {
                    self.pos += 2;
                    let inner = self.read_balanced('(', ')');
                    seg.risky
                        .push("command substitution runs another command".into());
                    seg.inner.push(inner);
                    in_word = true;
                    word.text.push_str("$SUBST");
                }
                '<' | '>' if self.peek(1) == Some('(') => {
                    self.pos += 2;
                    let inner = self.read_balanced('(', ')');
                    seg.risky
                        .push("process substitution runs another command".into());
                    seg.inner.push(inner);
                    in_word = true;
                    word.text.push_str("$PROC");
                }
                '(' if !in_word => {
                    self.pos += 1;
                    let inner = self.read_balanced('(', ')');
                    seg.risky.push("a subshell runs commands".into());
                    seg.inner.push(inner);
                }
                '>' | '<' => {
                    // A redirection; an all-digit word before it is its file descriptor.
                    if in_word
                        && word.text.bytes().all(|b| b.is_ascii_digit())
                        && !word.unquoted_special
                    {
                        word = Word::default();
                        in_word = false;
                    } else {
                        end_word!();
                    }
                    self.redirection(&mut seg, &mut heredoc_pending);
                }
                '&' if self.peek(1) == Some('>') => {
                    end_word!();
                    self.pos += 1;
                    self.redirection(&mut seg, &mut heredoc_pending);
                }
                '&' | '|' | ';' | '\n' => {
                    let end = self.pos;
                    let sep = match (c, self.peek(1)) {
                        ('&', Some('&')) | ('|', Some('|')) | (';', Some(';')) => {
                            self.pos += 2;
                            Sep::Other
                        }
                        ('|', Some('&')) => {
                            self.pos += 2;
                            Sep::Pipe
                        }
                        ('|', _) => {
                            self.pos += 1;
                            Sep::Pipe
                        }
                        _ => {
                            self.pos += 1;
                            Sep::Other
                        }
                    };
                    if c == '&' && self.pos == end + 1 {
                        seg.risky.push("runs in the background".into());
                    }
                    if c == '\n' && heredoc_pending {
                        // The here-document body follows: data for the command, not commands.
                        heredoc_pending = false;
                        seg.heredoc = Some(self.read_heredoc_body());
                    }
                    end_segment!(sep, end);
                    seg_start = self.pos;
                }
                '#' if !in_word => {
                    // A comment runs to the end of the line.
                    while let Some(n) = self.peek(0) {
                        if n == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                c if c.is_whitespace() => {
                    end_word!();
                    self.pos += 1;
                }
                c => {
                    if matches!(c, '*' | '?' | '[') || (c == '~' && !in_word) {
                        word.unquoted_special = true;
                    }
                    word.text.push(c);
                    in_word = true;
                    self.pos += 1;
                }
            }
        }
        if in_word {
            seg.words.push(word);
        }
        seg.text = self.slice(seg_start, self.chars.len()).trim().to_string();
        if !seg.text.is_empty() || !seg.words.is_empty() {
            segs.push(seg);
        }
        segs
    }

    fn slice(&self, from: usize, to: usize) -> String {
        self.chars[from.min(self.chars.len())..to.min(self.chars.len())]
            .iter()
            .collect()
    }

    /// Reads one redirection operator (at `pos`) and its target.
    fn redirection(&mut self, seg: &mut RawSegment, heredoc_pending: &mut bool) {
        let op = self.peek(0).unwrap_or('>');
        self.pos += 1;
        if op == '<' {
            if self.peek(0) == Some('<') {
                self.pos += 1;
                if self.peek(0) == Some('<') {
                    // Here-string: data on stdin.
                    self.pos += 1;
                    let _ = self.read_target();
                    return;
                }
                if self.peek(0) == Some('-') {
                    self.pos += 1;
                }
                let delim = self.read_target();
                *heredoc_pending = true;
                self.heredoc_delim = Some(delim);
                return;
            }
            if self.peek(0) == Some('&') {
                self.pos += 1;
            }
            let _ = self.read_target(); // reading a file is not a write
            return;
        }
        // Output: >, >>, >|, >&N
        if matches!(self.peek(0), Some('>' | '|')) {
            self.pos += 1;
        }
        if self.peek(0) == Some('&') {
            self.pos += 1;
            let target = self.read_target();
            if target == "-" || target.bytes().all(|b| b.is_ascii_digit()) {
                return; // descriptor duplication
            }
            seg.risky
                .push(format!("redirection writes a file ({target})"));
            return;
        }
        let target = self.read_target();
        if target == "/dev/null"
            || target.eq_ignore_ascii_case("nul")
            || target == "/dev/stderr"
            || target == "/dev/stdout"
        {
            return;
        }
        if target.starts_with("/dev/sd")
            || target.starts_with("/dev/nvme")
            || target.starts_with("/dev/disk")
            || target.starts_with("/dev/hd")
        {
            seg.risky
                .push(format!("DENY:redirection writes to a raw disk ({target})"));
            return;
        }
        seg.risky
            .push(format!("redirection writes a file ({target})"));
    }

    fn read_target(&mut self) -> String {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let mut out = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                '\'' | '"' => {
                    self.pos += 1;
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        if n == c {
                            break;
                        }
                        out.push(n);
                    }
                }
                c if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')') => {
                    break
                }
                c => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        out
    }

    fn read_heredoc_body(&mut self) -> String {
        let Some(delim) = self.heredoc_delim.take() else {
            return String::new();
        };
        let mut body = String::new();
        // pos is just after the newline that ended the here-document's command line.
        loop {
            let start = self.pos;
            if start >= self.chars.len() {
                return body;
            }
            let mut end = start;
            while end < self.chars.len() && self.chars[end] != '\n' {
                end += 1;
            }
            let line: String = self.chars[start..end].iter().collect();
            self.pos = (end + 1).min(self.chars.len());
            if line.trim() == delim {
                return body;
            }
            body.push_str(&line);
            body.push('\n');
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Classification

fn base_program(word: &str) -> String {
    let name = word
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(word)
        .to_ascii_lowercase();
    for ext in [".exe", ".cmd", ".bat", ".com"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return stem.to_string();
        }
    }
    name
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        }
        None => false,
    }
}

struct Ctx {
    depth: u32,
}

type Verdict1 = (Tier, String);

fn v(tier: Tier, reason: impl Into<String>) -> Verdict1 {
    (tier, reason.into())
}

fn max_v(a: Verdict1, b: Verdict1) -> Verdict1 {
    if b.0 > a.0 {
        b
    } else {
        a
    }
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox",
];
const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "iwr",
    "invoke-webrequest",
    "irm",
    "invoke-restmethod",
    "aria2c",
    "http",
    "xh",
];
const PIPE_EXECUTORS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "python",
    "python3",
    "python2",
    "py",
    "node",
    "perl",
    "ruby",
    "php",
    "iex",
    "invoke-expression",
    "pwsh",
    "powershell",
    "cmd",
    "sudo",
    "source",
    "eval",
    "deno",
    "bun",
];
const VERSION_PROBE_PROGRAMS: &[&str] = &[
    "git",
    "node",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "bun",
    "deno",
    "python",
    "python3",
    "py",
    "pip",
    "pip3",
    "cargo",
    "rustc",
    "rustup",
    "dotnet",
    "go",
    "java",
    "javac",
    "gcc",
    "g++",
    "cc",
    "clang",
    "clang++",
    "make",
    "cmake",
    "tsc",
    "ruby",
    "perl",
    "php",
    "mvn",
    "gradle",
    "docker",
    "kubectl",
    "curl",
    "wget",
    "ls",
    "cat",
    "grep",
    "sed",
    "awk",
    "uv",
    "poetry",
    "pytest",
    "jest",
    "vitest",
    "eslint",
    "prettier",
    "ruff",
    "mypy",
    "black",
    "terraform",
    "swift",
    "zig",
    "ninja",
    "meson",
    "bazel",
    "sqlite3",
    "psql",
    "gh",
    "nvm",
    "conda",
];

fn classify_segment(seg: &RawSegment, ctx: &Ctx) -> Verdict1 {
    let mut verdict;
    let mut words: Vec<&Word> = seg.words.iter().collect();
    // Leading VAR=value assignments.
    let mut assigned = false;
    while words.first().is_some_and(|w| is_assignment(&w.text)) {
        assigned = true;
        words.remove(0);
    }
    if words.is_empty() {
        verdict = if assigned {
            v(Tier::Risky, "sets a shell variable")
        } else {
            v(Tier::ReadOnly, "nothing to run")
        };
    } else {
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        verdict = classify_words(&texts, &words, ctx);
        if assigned {
            verdict = max_v(
                verdict,
                v(
                    Tier::Risky,
                    "a VAR=value prefix changes the program's environment",
                ),
            );
        }
    }
    for note in &seg.risky {
        if let Some(deny) = note.strip_prefix("DENY:") {
            verdict = max_v(verdict, v(Tier::Denied, deny));
        } else {
            verdict = max_v(verdict, v(Tier::Risky, note.clone()));
        }
    }
    let prog = words
        .first()
        .map(|w| base_program(&w.text))
        .unwrap_or_default();
    if let Some(body) = &seg.heredoc {
        if PIPE_EXECUTORS.contains(&prog.as_str()) {
            let inner_v = classify_line(body, ctx.depth + 1);
            verdict = max_v(
                verdict,
                v(Tier::Risky, format!("{prog} runs a here-document script")),
            );
            if inner_v.0 == Tier::Denied {
                verdict = max_v(
                    verdict,
                    v(
                        Tier::Denied,
                        format!("the here-document runs: {}", inner_v.1),
                    ),
                );
            }
        }
    }
    for inner in &seg.inner {
        let inner_v = classify_line(inner, ctx.depth + 1);
        if inner_v.0 == Tier::Denied {
            verdict = max_v(
                verdict,
                v(
                    Tier::Denied,
                    format!("runs a denied command inside: {}", inner_v.1),
                ),
            );
        }
        // A shell given a download to run is curl | sh in disguise.
        if PIPE_EXECUTORS.contains(&prog.as_str()) || prog == "." {
            let first = inner
                .split_whitespace()
                .next()
                .map(base_program)
                .unwrap_or_default();
            if DOWNLOADERS.contains(&first.as_str()) {
                verdict = max_v(
                    verdict,
                    v(Tier::Denied, "runs code downloaded from the network"),
                );
            }
        }
    }
    verdict
}

fn short_flags(word: &str) -> Option<&str> {
    word.strip_prefix('-')
        .filter(|rest| !rest.starts_with('-') && !rest.is_empty())
}

fn has_flag(args: &[&str], short: char, longs: &[&str]) -> bool {
    args.iter().any(|a| {
        longs
            .iter()
            .any(|l| a == l || a.starts_with(&format!("{l}=")))
            || short_flags(a)
                .is_some_and(|f| f.contains(short) && f.bytes().all(|b| b.is_ascii_alphabetic()))
    })
}

fn first_non_option<'a>(args: &[&'a str]) -> Option<&'a str> {
    args.iter().copied().find(|a| !a.starts_with('-'))
}

fn classify_words(texts: &[&str], words: &[&Word], ctx: &Ctx) -> Verdict1 {
    let program_word = texts[0];
    let prog = base_program(program_word);
    let args = &texts[1..];
    let whole = texts.join(" ");

    if whole.contains(":(){") || whole.contains(":() {") {
        return v(Tier::Denied, "a fork bomb");
    }
    // A program given by path that is not a system one: a script of the workspace or elsewhere.
    if program_word.contains('/') || program_word.contains('\\') {
        let system = [
            "/usr/bin/",
            "/bin/",
            "/usr/local/bin/",
            "/usr/sbin/",
            "/sbin/",
        ]
        .iter()
        .any(|p| program_word.starts_with(p));
        if !system && !matches!(prog.as_str(), "gradlew" | "mvnw") {
            return v(
                Tier::Risky,
                format!("runs a script by path ({program_word})"),
            );
        }
    }
    if args.len() == 1
        && matches!(
            args[0],
            "--version" | "-version" | "-V" | "--help" | "version" | "-h"
        )
        && VERSION_PROBE_PROGRAMS.contains(&prog.as_str())
    {
        return v(
            Tier::ReadOnly,
            format!("{prog} {} only prints information", args[0]),
        );
    }
    if args.len() == 1
        && args[0] == "-v"
        && matches!(
            prog.as_str(),
            "node" | "npm" | "yarn" | "pnpm" | "bun" | "deno" | "go"
        )
    {
        return v(Tier::ReadOnly, format!("{prog} -v only prints its version"));
    }

    match prog.as_str() {
        // --- read-only probes ---
        "ls" | "dir" | "cat" | "type" | "echo" | "printf" | "pwd" | "head" | "wc" | "tree"
        | "stat" | "file" | "du" | "df" | "which" | "whoami" | "date" | "uname" | "printenv"
        | "true" | "false" | "test" | "[" | "diff" | "cmp" | "cut" | "tr" | "basename"
        | "dirname" | "realpath" | "readlink" | "sha256sum" | "sha1sum" | "md5sum" | "b2sum"
        | "cksum" | "less" | "more" | "jq" | "yq" | "grep" | "egrep" | "fgrep" | "nl"
        | "column" | "hexdump" | "xxd" | "od" | "strings" | "id" | "hostname" | "ps" | "free"
        | "uptime" | "nproc" | "lsof" | "env_info" | "seq" | "expr" | "comm" | "join" | "paste"
        | "fold" | "fmt" | "rev" | "tac" | "look" | "where" | "whereis" | "get-childitem"
        | "get-content" | "select-string" | "get-location" | "findstr" | "tail" | "man"
        | "sleep" | "cal" | "locale" | "getconf" | "lscpu" | "lsblk" | "ldd" | "nm" | "objdump"
        | "readelf" | "size" | "arch" | "tty" | "groups" | "users" | "who" | "w" | "last"
        | "bc" | "dc" | "factor" | "numfmt" | "shuf" | "zcat" | "zgrep" | "bzcat" | "xzcat"
        | "base64" | "base32" | "iconv" | "ag" | "ack" | "fd" | "fdfind" | "bat" | "exa"
        | "eza" | "wslpath" | "cygpath" | "git-ls" => {
            if prog == "tail" || prog == "head" || prog == "cat" || prog == "less" {
                return v(Tier::ReadOnly, format!("{prog} only reads"));
            }
            if matches!(prog.as_str(), "iconv" | "base64" | "base32")
                && has_flag(args, 'o', &["--output"])
            {
                return v(Tier::Risky, format!("{prog} -o writes a file"));
            }
            v(Tier::ReadOnly, format!("{prog} only reads"))
        }
        "command" => {
            if args.first().is_some_and(|a| *a == "-v" || *a == "-V") {
                v(Tier::ReadOnly, "command -v only looks a program up")
            } else {
                wrapper(&prog, args, 0, ctx)
            }
        }
        "sort" => {
            if has_flag(args, 'o', &["--output"]) {
                v(Tier::Risky, "sort -o writes a file")
            } else {
                v(Tier::ReadOnly, "sort only reads")
            }
        }
        "uniq" => {
            let positional = args.iter().filter(|a| !a.starts_with('-')).count();
            if positional >= 2 {
                v(Tier::Risky, "uniq with an output file writes it")
            } else {
                v(Tier::ReadOnly, "uniq only reads")
            }
        }
        "find" => classify_find(args, ctx),
        "rg" | "ripgrep" => {
            if args
                .iter()
                .any(|a| *a == "--pre" || a.starts_with("--pre=") || a.starts_with("--pre-glob"))
            {
                v(Tier::Risky, "rg --pre runs another program on every file")
            } else {
                v(Tier::ReadOnly, "rg only reads")
            }
        }
        "sed" | "gsed" => classify_sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => {
            let script = first_non_option(args).unwrap_or("");
            if has_flag(args, 'f', &["--file"])
                || args
                    .iter()
                    .any(|a| *a == "-i" || a.starts_with("--include"))
            {
                v(
                    Tier::Risky,
                    "awk runs a script file or an in-place extension",
                )
            } else if script.contains("system")
                || script.contains('>')
                || script.contains('|')
                || script.contains("getline")
            {
                v(
                    Tier::Risky,
                    "the awk program can run commands or write files",
                )
            } else {
                v(Tier::ReadOnly, "awk only reads")
            }
        }
        "env" => {
            // `env` alone prints the environment; with a command it is a wrapper.
            let mut i = 0;
            while i < args.len() && (args[i].starts_with('-') || is_assignment(args[i])) {
                if matches!(args[i], "-u" | "-C" | "-S" | "--unset" | "--chdir") {
                    i += 1;
                }
                i += 1;
            }
            if i >= args.len() {
                v(Tier::ReadOnly, "env only prints the environment")
            } else {
                wrapper(&prog, args, i, ctx)
            }
        }
        "sudo" | "doas" => wrapper_skip(
            &prog,
            args,
            &["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D"],
            ctx,
        ),
        "nice" => wrapper_skip(&prog, args, &["-n", "--adjustment"], ctx),
        "ionice" => wrapper_skip(&prog, args, &["-c", "-n", "-p", "-t"], ctx),
        "stdbuf" => wrapper_skip(&prog, args, &["-i", "-o", "-e"], ctx),
        "nohup" | "time" | "exec" | "builtin" | "unbuffer" | "caffeinate" | "strace" | "ltrace"
        | "chroot" | "setsid" | "flock" | "script" | "runuser" | "su" | "taskset" | "proot"
        | "firejail" | "systemd-run" | "start" | "start-process" | "call" => {
            wrapper_skip(&prog, args, &[], ctx)
        }
        "timeout" | "gtimeout" => {
            // timeout [options] DURATION COMMAND…
            let mut i = 0;
            while i < args.len() && args[i].starts_with('-') {
                if matches!(args[i], "-s" | "-k" | "--signal" | "--kill-after") {
                    i += 1;
                }
                i += 1;
            }
            wrapper(&prog, args, i + 1, ctx)
        }
        "watch" => wrapper_skip(&prog, args, &["-n", "--interval", "-d"], ctx),
        "xargs" => wrapper_skip(
            &prog,
            args,
            &[
                "-I",
                "-i",
                "-n",
                "-P",
                "-d",
                "-L",
                "-l",
                "-s",
                "-E",
                "-e",
                "-a",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
                "--replace",
            ],
            ctx,
        ),
        "parallel" => v(Tier::Risky, "parallel runs other commands"),
        "eval" => {
            let inner = args.join(" ");
            shell_string("eval", &inner, ctx)
        }
        "source" | "." => v(
            Tier::Risky,
            format!("{prog} runs a script in the current shell"),
        ),
        s if SHELLS.contains(&s) => {
            if let Some(pos) = args.iter().position(|a| {
                *a == "-c" || (short_flags(a).is_some_and(|f| f.ends_with('c')) && a.len() <= 4)
            }) {
                let inner = args.get(pos + 1).copied().unwrap_or("");
                shell_string(&prog, inner, ctx)
            } else {
                v(Tier::Risky, format!("{prog} runs a shell script"))
            }
        }
        "cmd" => {
            if let Some(pos) = args
                .iter()
                .position(|a| a.eq_ignore_ascii_case("/c") || a.eq_ignore_ascii_case("/k"))
            {
                shell_string("cmd", &args[pos + 1..].join(" "), ctx)
            } else {
                v(Tier::Risky, "cmd runs a shell")
            }
        }
        "powershell" | "pwsh" => {
            if let Some(pos) = args.iter().position(|a| {
                let l = a.to_ascii_lowercase();
                l == "-c" || l == "-command" || l == "-encodedcommand" || l == "-e" || l == "-ec"
            }) {
                let flag = args[pos].to_ascii_lowercase();
                if flag.starts_with("-e") {
                    return v(Tier::Risky, "powershell runs an encoded command");
                }
                shell_string(&prog, &args[pos + 1..].join(" "), ctx)
            } else {
                v(Tier::Risky, "powershell runs a script")
            }
        }

        // --- denied outright ---
        "shutdown" | "reboot" | "halt" | "poweroff" | "stop-computer" | "restart-computer"
        | "format" | "format-volume" | "clear-disk" | "diskpart" | "fdisk" | "sfdisk"
        | "parted" | "wipefs" | "mkswap" | "mkfs" | "cryptsetup" => v(
            Tier::Denied,
            format!("{prog} can destroy the machine or its disks"),
        ),
        p if p.starts_with("mkfs.") => v(Tier::Denied, format!("{prog} formats a disk")),
        "init" | "telinit" if args.first().is_some_and(|a| matches!(*a, "0" | "6")) => {
            v(Tier::Denied, "init 0/6 shuts the machine down")
        }
        "systemctl" => {
            if args.iter().any(|a| {
                matches!(
                    *a,
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "rescue"
                        | "emergency"
                )
            }) {
                v(
                    Tier::Denied,
                    "systemctl power actions shut the machine down",
                )
            } else if args
                .iter()
                .any(|a| matches!(*a, "status" | "list-units" | "is-active" | "show" | "cat"))
            {
                v(Tier::ReadOnly, "systemctl only reports")
            } else {
                v(Tier::Risky, "systemctl changes system services")
            }
        }
        "dd" => {
            if args
                .iter()
                .any(|a| a.starts_with("of=/dev/") && !a.starts_with("of=/dev/null"))
            {
                v(Tier::Denied, "dd writes to a device")
            } else {
                v(Tier::Risky, "dd writes data")
            }
        }

        // --- deletion and other writes ---
        "rm" | "del" | "erase" | "rd" | "rmdir" | "remove-item" | "ri" => {
            classify_rm(&prog, args, words)
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = has_flag(args, 'R', &["--recursive"]);
            if recursive && args.iter().any(|a| is_dangerous_target(a)) {
                v(Tier::Denied, format!("{prog} -R on the system or home"))
            } else {
                v(Tier::Risky, format!("{prog} changes permissions"))
            }
        }
        "mv" | "cp" | "ln" | "mkdir" | "touch" | "tee" | "install" | "rsync" | "scp" | "patch"
        | "truncate" | "shred" | "unlink" | "move" | "copy" | "xcopy" | "robocopy" | "ren"
        | "rename" | "new-item" | "set-content" | "add-content" | "out-file" | "copy-item"
        | "move-item" | "tar" | "zip" | "unzip" | "gzip" | "gunzip" | "bzip2" | "xz" | "7z"
        | "split" | "csplit" | "mkfifo" | "mknod" | "setfacl" | "chattr" | "mount" | "umount"
        | "ssh" | "sftp" | "ftp" | "nc" | "ncat" | "netcat" | "socat" | "telnet" | "kill"
        | "killall" | "pkill" | "taskkill" | "crontab" | "at" | "useradd" | "userdel"
        | "usermod" | "passwd" | "visudo" | "iptables" | "ufw" | "docker" | "podman"
        | "kubectl" | "helm" | "terraform" | "ansible" | "ansible-playbook" | "vagrant"
        | "open" | "xdg-open" | "code" | "vim" | "vi" | "nano" | "emacs" | "sqlite3" | "psql"
        | "mysql" | "redis-cli" | "mongo" | "mongosh" | "gh" | "hub" | "aws" | "gcloud" | "az"
        | "heroku" | "vercel" | "netlify" | "fly" | "firebase" => v(
            Tier::Risky,
            format!("{prog} can change files, processes or remote systems"),
        ),
        d if DOWNLOADERS.contains(&d) => v(Tier::Risky, format!("{prog} reaches the network")),
        "apt" | "apt-get" | "yum" | "dnf" | "pacman" | "apk" | "brew" | "port" | "choco"
        | "winget" | "scoop" | "snap" | "flatpak" | "zypper" | "emerge" | "nix-env" | "pipx"
        | "gem" | "composer" | "conda" | "mamba" | "nvm" | "rustup" | "sdkmanager" => {
            if args.first().is_some_and(|a| {
                matches!(
                    *a,
                    "list" | "search" | "show" | "info" | "--version" | "policy" | "outdated"
                )
            }) {
                v(Tier::ReadOnly, format!("{prog} only lists"))
            } else {
                v(Tier::Risky, format!("{prog} installs or changes packages"))
            }
        }

        // --- toolchains ---
        "git" => classify_git(args),
        "npm" | "pnpm" | "yarn" | "bun" => classify_js_pm(&prog, args),
        "npx" | "pnpx" | "bunx" => v(
            Tier::Risky,
            format!("{prog} may download and run a package"),
        ),
        "node" | "nodejs" | "deno" | "ts-node" | "tsx" => classify_node(&prog, args),
        "python" | "python3" | "python2" | "py" | "pypy" | "pypy3" => classify_python(&prog, args),
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" | "pdm" => classify_pip(&prog, args),
        "ruby" | "perl" | "php" | "lua" | "rscript" | "julia" | "groovy" | "scala" | "kotlin"
        | "elixir" | "erl" | "ghci" | "runghc" | "racket" | "guile" | "tclsh" | "osascript" => {
            if has_flag(args, 'e', &["--eval"])
                || has_flag(args, 'E', &[])
                || (prog == "php" && has_flag(args, 'r', &[]))
            {
                v(
                    Tier::Risky,
                    format!("{prog} -e runs code given on the command line"),
                )
            } else if args.iter().any(|a| !a.starts_with('-')) {
                v(Tier::Execute, format!("{prog} runs a program"))
            } else {
                v(Tier::Execute, format!("{prog} starts an interpreter"))
            }
        }
        "cargo" => classify_cargo(args),
        "dotnet" => classify_dotnet(args),
        "go" => classify_go(args),
        "make" | "gmake" | "nmake" | "just" | "task" | "rake" | "invoke" | "nox" | "tox" => {
            if has_flag(args, 'n', &["--dry-run", "--just-print"]) {
                v(Tier::ReadOnly, format!("{prog} -n only prints the recipe"))
            } else {
                v(Tier::Execute, format!("{prog} runs the project's recipes"))
            }
        }
        "cmake" => {
            if args.first() == Some(&"-P") || args.contains(&"-E") {
                v(Tier::Risky, "cmake -P/-E runs a script or command")
            } else {
                v(Tier::Build, "cmake configures or builds")
            }
        }
        "ninja" | "meson" | "msbuild" | "xcodebuild" | "bazel" | "buck" | "scons" => {
            if args.contains(&"test") {
                v(Tier::Execute, format!("{prog} test runs tests"))
            } else {
                v(Tier::Build, format!("{prog} builds"))
            }
        }
        "mvn" | "mvnw" | "gradle" | "gradlew" => {
            if args.iter().any(|a| {
                matches!(
                    *a,
                    "test"
                        | "verify"
                        | "run"
                        | "bootRun"
                        | "exec:java"
                        | "check"
                        | "integration-test"
                )
            }) {
                v(Tier::Execute, format!("{prog} runs tests or the program"))
            } else if args
                .iter()
                .any(|a| matches!(*a, "deploy" | "publish" | "release:perform"))
            {
                v(Tier::Risky, format!("{prog} publishes artifacts"))
            } else if args.iter().all(|a| {
                matches!(
                    *a,
                    "compile"
                        | "clean"
                        | "build"
                        | "assemble"
                        | "package"
                        | "install"
                        | "jar"
                        | "classes"
                        | "-q"
                        | "--quiet"
                        | "-DskipTests"
                        | "-x"
                        | "test-compile"
                        | "--offline"
                        | "-o"
                )
            }) {
                v(Tier::Build, format!("{prog} builds"))
            } else {
                v(Tier::Execute, format!("{prog} runs project tasks"))
            }
        }
        "gcc" | "g++" | "cc" | "c++" | "clang" | "clang++" | "rustc" | "javac" | "kotlinc"
        | "scalac" | "tsc" | "swiftc" | "ghc" | "zig" | "nasm" | "as" | "ld" | "gfortran"
        | "csc" | "vbc" | "ocamlc" | "ocamlopt" | "esbuild" | "webpack" | "rollup" | "vite"
        | "parcel" | "swc" | "babel" => {
            if prog == "zig" && args.first().is_some_and(|a| matches!(*a, "run" | "test")) {
                v(Tier::Execute, "zig run/test runs code")
            } else if prog == "vite"
                && args
                    .first()
                    .is_none_or(|a| matches!(*a, "dev" | "serve" | "preview"))
            {
                v(Tier::Execute, "vite serves the project")
            } else {
                v(Tier::Build, format!("{prog} compiles"))
            }
        }
        "java" => {
            if args.iter().any(|a| *a == "--version" || *a == "-version") {
                v(Tier::ReadOnly, "java -version only prints its version")
            } else {
                v(Tier::Execute, "java runs a program")
            }
        }
        "pytest" | "py.test" | "jest" | "vitest" | "mocha" | "ava" | "tap" | "karma"
        | "cypress" | "playwright" | "phpunit" | "rspec" | "ctest" | "nextest" | "behave"
        | "nose2" | "unittest" => v(Tier::Execute, format!("{prog} runs tests")),
        "eslint" | "prettier" | "stylelint" | "biome" | "black" | "isort" | "rustfmt" | "gofmt"
        | "clang-format" | "autopep8" | "yapf" | "standard" | "rubocop" | "swiftformat"
        | "ktlint" => {
            let checking = args.iter().any(|a| {
                matches!(
                    *a,
                    "--check" | "-l" | "--list-different" | "--diff" | "-d" | "--dry-run"
                )
            });
            let writing = args.iter().any(|a| {
                matches!(
                    *a,
                    "--write" | "-w" | "--fix" | "-i" | "--in-place" | "-a" | "--autocorrect"
                )
            });
            if checking && !writing {
                v(Tier::Build, format!("{prog} only checks"))
            } else {
                v(
                    Tier::Execute,
                    format!("{prog} runs the project's tooling and may rewrite sources"),
                )
            }
        }
        "ruff" | "mypy" | "pyright" | "flake8" | "pylint" | "shellcheck" | "hadolint"
        | "tflint" | "clippy-driver" | "golangci-lint" | "staticcheck" | "cppcheck"
        | "clang-tidy" => {
            if args.iter().any(|a| *a == "--fix" || *a == "format") {
                v(Tier::Execute, format!("{prog} rewrites sources"))
            } else {
                v(Tier::Build, format!("{prog} only analyses"))
            }
        }
        _ => v(Tier::Risky, format!("{prog} is not a known program")),
    }
}

fn wrapper_skip(prog: &str, args: &[&str], takes_value: &[&str], ctx: &Ctx) -> Verdict1 {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        if takes_value.contains(&args[i]) {
            i += 1;
        }
        i += 1;
    }
    wrapper(prog, args, i, ctx)
}

/// A program that runs another: at least Risky, and as bad as what it runs.
fn wrapper(prog: &str, args: &[&str], inner_start: usize, ctx: &Ctx) -> Verdict1 {
    let base = v(Tier::Risky, format!("{prog} runs another program"));
    if ctx.depth >= MAX_DEPTH {
        return base;
    }
    let inner = &args[inner_start.min(args.len())..];
    if inner.is_empty() {
        return base;
    }
    let words: Vec<Word> = inner
        .iter()
        .map(|t| Word {
            text: (*t).to_string(),
            unquoted_special: false,
        })
        .collect();
    let refs: Vec<&Word> = words.iter().collect();
    let inner_v = classify_words(
        inner,
        &refs,
        &Ctx {
            depth: ctx.depth + 1,
        },
    );
    if inner_v.0 > Tier::Risky {
        return (inner_v.0, format!("{prog} runs: {}", inner_v.1));
    }
    base
}

fn shell_string(prog: &str, inner: &str, ctx: &Ctx) -> Verdict1 {
    let base = v(Tier::Risky, format!("{prog} runs a command string"));
    if ctx.depth >= MAX_DEPTH {
        return base;
    }
    let inner_v = classify_line(inner, ctx.depth + 1);
    if inner_v.0 > Tier::Risky {
        return (inner_v.0, format!("{prog} runs: {}", inner_v.1));
    }
    base
}

fn classify_find(args: &[&str], ctx: &Ctx) -> Verdict1 {
    for (i, a) in args.iter().enumerate() {
        match *a {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = args[i + 1..]
                    .iter()
                    .position(|x| *x == ";" || *x == "+")
                    .map_or(args.len(), |p| i + 1 + p);
                let inner = &args[i + 1..end];
                let base = v(Tier::Risky, format!("find {a} runs another program"));
                if inner.is_empty() || ctx.depth >= MAX_DEPTH {
                    return base;
                }
                let words: Vec<Word> = inner
                    .iter()
                    .map(|t| Word {
                        text: (*t).to_string(),
                        unquoted_special: false,
                    })
                    .collect();
                let refs: Vec<&Word> = words.iter().collect();
                let inner_v = classify_words(
                    inner,
                    &refs,
                    &Ctx {
                        depth: ctx.depth + 1,
                    },
                );
                return if inner_v.0 > Tier::Risky {
                    (inner_v.0, format!("find {a} runs: {}", inner_v.1))
                } else {
                    base
                };
            }
            "-delete" => return v(Tier::Risky, "find -delete deletes files"),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                return v(Tier::Risky, format!("find {a} writes a file"))
            }
            _ => {}
        }
    }
    v(Tier::ReadOnly, "find only lists files")
}

fn classify_sed(args: &[&str]) -> Verdict1 {
    let mut scripts: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut explicit = false;
    while i < args.len() {
        let a = args[i];
        if a == "-i" || a.starts_with("-i") || a == "--in-place" || a.starts_with("--in-place=") {
            return v(Tier::Risky, "sed -i edits files in place");
        }
        if let Some(f) = short_flags(a) {
            if f.contains('i') && f.bytes().all(|b| b.is_ascii_alphabetic()) && !f.starts_with('e')
            {
                return v(Tier::Risky, "sed -i edits files in place");
            }
        }
        if a == "-f" || a == "--file" || a.starts_with("--file=") {
            return v(Tier::Risky, "sed -f runs a script file");
        }
        if a == "-e" || a == "--expression" {
            if let Some(s) = args.get(i + 1) {
                scripts.push(s);
            }
            explicit = true;
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s);
            explicit = true;
        } else if !a.starts_with('-') && !explicit && scripts.is_empty() {
            scripts.push(a);
        }
        i += 1;
    }
    if scripts.iter().any(|s| sed_script_writes(s)) {
        return v(
            Tier::Risky,
            "the sed script writes files or runs commands (w/e)",
        );
    }
    v(Tier::ReadOnly, "sed only prints")
}

/// Whether a sed script uses `w`, `W`, `e` commands or the `e`/`w` flags of `s`.
fn sed_script_writes(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let n = chars.len();
    while i < n {
        // Skip separators and addresses.
        while i < n
            && (chars[i].is_whitespace()
                || matches!(chars[i], ';' | '{' | '}' | '!' | ',' | '$' | '+' | '~')
                || chars[i].is_ascii_digit())
        {
            i += 1;
        }
        if i < n && (chars[i] == '/' || chars[i] == '\\') {
            let delim = if chars[i] == '\\' {
                i += 1;
                chars.get(i).copied().unwrap_or('/')
            } else {
                '/'
            };
            i += 1;
            while i < n && chars[i] != delim {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if i >= n {
            break;
        }
        let cmd = chars[i];
        i += 1;
        match cmd {
            'w' | 'W' | 'e' => return true,
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    return false;
                };
                i += 1;
                for _ in 0..2 {
                    while i < n && chars[i] != delim {
                        if chars[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if cmd == 's' {
                    while i < n && !matches!(chars[i], ';' | '\n' | '}') {
                        if matches!(chars[i], 'e' | 'w' | 'W') {
                            return true;
                        }
                        i += 1;
                    }
                }
            }
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | 'q' | 'Q' | 'l' | 'L' => {
                // Text or label arguments run to the end of the command.
                while i < n && chars[i] != '\n' && chars[i] != ';' {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    false
}

fn is_dangerous_target(a: &str) -> bool {
    let t = a.trim_end_matches('/');
    t.is_empty()
        || t == "/*"
        || t == "~"
        || t.starts_with("~/")
        || t == "$HOME"
        || t.starts_with("$HOME/")
        || t == "${HOME}"
        || t == "."
        || t == ".."
        || t == "*"
        || t == "./*"
        || t.starts_with('/')
        || (t.len() >= 2 && t.as_bytes()[1] == b':')
        || t.starts_with("../")
        || t.starts_with("%")
}

fn classify_rm(prog: &str, args: &[&str], words: &[&Word]) -> Verdict1 {
    let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let l: Vec<&str> = lower.iter().map(String::as_str).collect();
    let recursive = match prog {
        "rm" => has_flag(args, 'r', &["--recursive"]) || has_flag(args, 'R', &[]),
        "rmdir" => false,
        "remove-item" | "ri" => l.iter().any(|a| a.starts_with("-r")),
        _ => l.contains(&"/s"),
    };
    let force = match prog {
        "rm" => has_flag(args, 'f', &["--force"]),
        "remove-item" | "ri" => l.iter().any(|a| a.starts_with("-fo")),
        _ => l.contains(&"/q"),
    };
    if args.contains(&"--no-preserve-root") {
        return v(Tier::Denied, "rm --no-preserve-root");
    }
    let targets: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-') && (!a.starts_with('/') || a.len() != 2 || prog == "rm"))
        .collect();
    let glob_target = words
        .iter()
        .skip(1)
        .any(|w| w.unquoted_special && (w.text == "*" || w.text.starts_with('~')));
    if recursive && (targets.iter().any(|t| is_dangerous_target(t)) || glob_target) {
        return v(
            Tier::Denied,
            format!(
                "recursive delete of {}",
                targets
                    .iter()
                    .find(|t| is_dangerous_target(t))
                    .copied()
                    .unwrap_or("everything")
            ),
        );
    }
    if recursive && force {
        return v(Tier::Risky, format!("{prog} -rf deletes a folder tree"));
    }
    v(Tier::Risky, format!("{prog} deletes files"))
}

fn classify_git(args: &[&str]) -> Verdict1 {
    // Global options before the subcommand.
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        let a = args[i];
        if a == "-c"
            || a.starts_with("-c") && a.len() > 2
            || a.starts_with("--config-env")
            || a == "--exec-path"
            || a.starts_with("--exec-path=")
        {
            if args.get(i + 1).is_some_and(|kv| kv.starts_with("--global")) {
                return v(Tier::Denied, "git config --global");
            }
            return v(
                Tier::Risky,
                "git -c sets configuration that can run programs",
            );
        }
        if matches!(a, "-C" | "--git-dir" | "--work-tree" | "--namespace") {
            i += 1;
        }
        i += 1;
    }
    let Some(sub) = args.get(i).copied() else {
        return v(Tier::ReadOnly, "git alone prints help");
    };
    let rest = &args[i + 1..];
    let writes_output = rest
        .iter()
        .any(|a| a.starts_with("--output") || *a == "-o" && sub != "log");
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "describe" | "shortlog" | "grep" | "cat-file" | "rev-list" | "merge-base"
        | "name-rev" | "show-ref" | "for-each-ref" | "whatchanged" | "count-objects"
        | "check-ignore" | "check-attr" | "ls-remote" | "version" | "help" | "diff-tree"
        | "diff-files" | "diff-index" | "var" | "cherry" | "range-diff" | "annotate"
        | "verify-commit" | "fsck" => {
            if writes_output {
                v(Tier::Risky, format!("git {sub} --output writes a file"))
            } else if rest
                .iter()
                .any(|a| a.starts_with("--ext-diff") || a.starts_with("--textconv"))
            {
                v(
                    Tier::Risky,
                    format!("git {sub} --ext-diff/--textconv runs configured programs"),
                )
            } else {
                v(Tier::ReadOnly, format!("git {sub} only reads"))
            }
        }
        "branch" => {
            if rest.is_empty()
                || rest.iter().all(|a| {
                    matches!(
                        *a,
                        "-a" | "-r"
                            | "-v"
                            | "-vv"
                            | "--list"
                            | "--all"
                            | "--remotes"
                            | "--show-current"
                            | "--merged"
                            | "--no-merged"
                            | "--contains"
                    )
                })
            {
                v(Tier::ReadOnly, "git branch only lists")
            } else {
                v(Tier::Risky, "git branch changes branches")
            }
        }
        "tag" => {
            if rest.is_empty()
                || rest
                    .iter()
                    .all(|a| matches!(*a, "-l" | "--list" | "-n") || a.contains('*'))
            {
                v(Tier::ReadOnly, "git tag only lists")
            } else {
                v(Tier::Risky, "git tag changes tags")
            }
        }
        "remote" => {
            if rest.is_empty()
                || matches!(
                    rest.first().copied(),
                    Some("-v" | "--verbose" | "show" | "get-url")
                )
            {
                v(Tier::ReadOnly, "git remote only lists")
            } else {
                v(Tier::Risky, "git remote changes remotes")
            }
        }
        "stash" => {
            if matches!(rest.first().copied(), Some("list" | "show")) {
                v(Tier::ReadOnly, "git stash list only reads")
            } else {
                v(Tier::Risky, "git stash changes the working tree")
            }
        }
        "reflog" => {
            if matches!(rest.first().copied(), None | Some("show")) {
                v(Tier::ReadOnly, "git reflog only reads")
            } else {
                v(Tier::Risky, "git reflog changes the reflog")
            }
        }
        "config" => {
            if rest.iter().any(|a| matches!(*a, "--global" | "--system")) {
                let reading = rest.iter().any(|a| {
                    matches!(*a, "--get" | "--list" | "-l" | "--get-all" | "--get-regexp")
                });
                if reading {
                    v(Tier::ReadOnly, "git config only reads")
                } else {
                    v(
                        Tier::Denied,
                        "git config --global/--system changes the user's git everywhere",
                    )
                }
            } else if rest
                .iter()
                .any(|a| matches!(*a, "--get" | "--list" | "-l" | "--get-all" | "--get-regexp"))
                || rest.iter().filter(|a| !a.starts_with('-')).count() == 1
            {
                v(Tier::ReadOnly, "git config only reads")
            } else {
                v(
                    Tier::Risky,
                    "git config changes the repository's configuration",
                )
            }
        }
        "push" => {
            let force = rest.iter().any(|a| {
                a.starts_with("--force")
                    || *a == "--mirror"
                    || *a == "--prune"
                    || short_flags(a).is_some_and(|f| {
                        f.contains('f') && f.bytes().all(|b| b.is_ascii_alphabetic())
                    })
                    || (a.starts_with('+') && a.len() > 1)
                    || a.contains(":+")
            }) || rest
                .iter()
                .filter(|a| !a.starts_with('-'))
                .skip(1)
                .any(|r| r.starts_with('+'));
            if force {
                v(Tier::Denied, "force-push rewrites the remote's history")
            } else {
                v(Tier::Risky, "git push changes the remote")
            }
        }
        "clean" => {
            if has_flag(rest, 'n', &["--dry-run"]) {
                v(Tier::ReadOnly, "git clean -n only lists")
            } else {
                v(Tier::Risky, "git clean deletes untracked files")
            }
        }
        "filter-branch" | "filter-repo" => v(
            Tier::Denied,
            format!("git {sub} rewrites the whole history"),
        ),
        _ => v(Tier::Risky, format!("git {sub} changes the repository")),
    }
}

fn classify_js_pm(prog: &str, args: &[&str]) -> Verdict1 {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        if matches!(
            args[i],
            "--prefix" | "-C" | "--cwd" | "--filter" | "-F" | "-w" | "--workspace" | "--dir"
        ) {
            i += 1;
        }
        i += 1;
    }
    let sub = args.get(i).copied();
    match sub {
        None if prog == "yarn" || prog == "bun" => {
            v(Tier::Risky, format!("{prog} installs packages"))
        }
        None => v(Tier::ReadOnly, format!("{prog} alone prints help")),
        Some(
            "test" | "t" | "tst" | "start" | "run" | "run-script" | "rum" | "urn" | "dev" | "serve"
            | "preview",
        ) => v(
            Tier::Execute,
            format!("{prog} {} runs the project's scripts", sub.unwrap_or("")),
        ),
        Some(
            "ci" | "install" | "i" | "in" | "isntall" | "add" | "uninstall" | "remove" | "rm"
            | "un" | "r" | "update" | "up" | "upgrade" | "link" | "ln" | "publish" | "unpublish"
            | "dedupe" | "prune" | "rebuild" | "init" | "create" | "set" | "patch" | "pack"
            | "version" | "deprecate" | "dist-tag" | "login" | "logout" | "adduser" | "token"
            | "owner" | "access" | "dlx" | "exec" | "x" | "import",
        ) => v(
            Tier::Risky,
            format!(
                "{prog} {} changes packages or runs downloaded code",
                sub.unwrap_or("")
            ),
        ),
        Some("audit") if args.contains(&"fix") => {
            v(Tier::Risky, format!("{prog} audit fix changes packages"))
        }
        Some(
            "ls" | "list" | "ll" | "la" | "view" | "info" | "show" | "outdated" | "why" | "explain"
            | "root" | "prefix" | "bin" | "audit" | "doctor" | "help" | "search" | "config" | "get"
            | "licenses" | "fund" | "query" | "pkg" | "whoami" | "-v" | "--version",
        ) => {
            if sub == Some("config")
                && args
                    .get(i + 1)
                    .is_some_and(|a| matches!(*a, "set" | "delete" | "edit"))
            {
                v(Tier::Risky, format!("{prog} config changes settings"))
            } else {
                v(
                    Tier::ReadOnly,
                    format!("{prog} {} only reads", sub.unwrap_or("")),
                )
            }
        }
        Some("build") if prog == "bun" => v(Tier::Build, "bun build bundles"),
        Some(_) if prog == "npm" => v(
            Tier::Risky,
            format!("npm {} is not a known npm command", sub.unwrap_or("")),
        ),
        // yarn/pnpm/bun run package scripts by name.
        Some(s) => v(
            Tier::Execute,
            format!("{prog} {s} runs a project script or file"),
        ),
    }
}

fn classify_node(prog: &str, args: &[&str]) -> Verdict1 {
    if args.iter().any(|a| {
        matches!(*a, "-e" | "--eval" | "-p" | "--print")
            || a.starts_with("--eval=")
            || a.starts_with("--print=")
    }) || (prog == "deno" && args.first() == Some(&"eval"))
    {
        return v(
            Tier::Risky,
            format!("{prog} -e runs code given on the command line"),
        );
    }
    if prog == "deno"
        && args
            .first()
            .is_some_and(|a| matches!(*a, "install" | "upgrade" | "compile"))
    {
        return v(Tier::Risky, "deno install/upgrade changes the system");
    }
    if args.iter().any(|a| !a.starts_with('-')) {
        v(Tier::Execute, format!("{prog} runs a program"))
    } else {
        v(Tier::Execute, format!("{prog} starts an interpreter"))
    }
}

fn classify_python(prog: &str, args: &[&str]) -> Verdict1 {
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-c"
            || (short_flags(a)
                .is_some_and(|f| f.ends_with('c') && f.bytes().all(|b| b.is_ascii_alphabetic())))
        {
            return v(
                Tier::Risky,
                format!("{prog} -c runs code given on the command line"),
            );
        }
        if a == "-m" || a.starts_with("-m") && a.len() > 2 {
            let module = if a == "-m" {
                args.get(i + 1).copied().unwrap_or("")
            } else {
                &a[2..]
            };
            let module_args = &args[(i + 2).min(args.len())..];
            return match module {
                "pytest" | "unittest" | "nose2" | "doctest" | "tox" | "nox" | "behave"
                | "coverage" | "hypothesis" => {
                    v(Tier::Execute, format!("{prog} -m {module} runs tests"))
                }
                "mypy" | "pyflakes" | "flake8" | "pylint" | "compileall" | "py_compile"
                | "pyright" | "ruff"
                    if !module_args.contains(&"--fix") =>
                {
                    v(
                        Tier::Build,
                        format!("{prog} -m {module} only analyses or compiles"),
                    )
                }
                "pip" => classify_pip("pip", module_args),
                "json.tool" | "site" | "platform" | "sysconfig" | "this" | "tokenize" | "pydoc"
                | "dis" => v(Tier::ReadOnly, format!("{prog} -m {module} only prints")),
                "venv" | "virtualenv" => v(
                    Tier::Build,
                    format!("{prog} -m venv creates an environment"),
                ),
                "http.server" | "smtpd" | "ftplib" => v(
                    Tier::Risky,
                    format!("{prog} -m {module} serves the network"),
                ),
                m => v(Tier::Execute, format!("{prog} -m {m} runs a module")),
            };
        }
        if matches!(a, "-W" | "-X" | "-Q") {
            i += 2;
            continue;
        }
        if !a.starts_with('-') {
            return v(Tier::Execute, format!("{prog} runs a program"));
        }
        i += 1;
    }
    v(Tier::Execute, format!("{prog} starts an interpreter"))
}

fn classify_pip(prog: &str, args: &[&str]) -> Verdict1 {
    let sub = first_non_option(args);
    match sub {
        Some(
            "list" | "show" | "freeze" | "check" | "search" | "help" | "inspect" | "index"
            | "debug" | "tree",
        ) => v(
            Tier::ReadOnly,
            format!("{prog} {} only reads", sub.unwrap_or("")),
        ),
        Some("run") if prog != "pip" => {
            v(Tier::Execute, format!("{prog} run runs a project command"))
        }
        Some("build") if prog != "pip" => v(Tier::Build, format!("{prog} build builds")),
        Some("test") if prog != "pip" => v(Tier::Execute, format!("{prog} test runs tests")),
        None if args.iter().any(|a| *a == "--version" || *a == "-V") => {
            v(Tier::ReadOnly, format!("{prog} --version"))
        }
        _ => v(
            Tier::Risky,
            format!("{prog} {} installs or changes packages", sub.unwrap_or("")),
        ),
    }
}

fn classify_cargo(args: &[&str]) -> Verdict1 {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        if matches!(args[i], "-Z" | "--config" | "-C") {
            if matches!(args[i], "--config") {
                return v(Tier::Risky, "cargo --config can run programs");
            }
            i += 1;
        }
        i += 1;
    }
    let Some(sub) = args.get(i).copied() else {
        return v(Tier::ReadOnly, "cargo alone prints help");
    };
    let sub = sub
        .strip_prefix('+')
        .map_or(sub, |_| args.get(i + 1).copied().unwrap_or(""));
    let rest = &args[(i + 1).min(args.len())..];
    match sub {
        "build" | "b" | "check" | "c" | "clippy" | "doc" | "d" | "clean" | "fetch"
        | "generate-lockfile" | "package" => {
            if sub == "clippy" && rest.contains(&"--fix") {
                v(Tier::Execute, "cargo clippy --fix rewrites sources")
            } else if sub == "doc" && rest.contains(&"--open") {
                v(Tier::Risky, "cargo doc --open starts a browser")
            } else {
                v(Tier::Build, format!("cargo {sub} builds"))
            }
        }
        "fmt" => {
            if rest.contains(&"--check") {
                v(Tier::Build, "cargo fmt --check only checks")
            } else {
                v(Tier::Execute, "cargo fmt rewrites sources")
            }
        }
        "test" | "t" | "run" | "r" | "bench" | "nextest" | "xtask" | "miri" | "fix"
        | "llvm-cov" | "tarpaulin" => v(
            Tier::Execute,
            format!("cargo {sub} runs the project's code"),
        ),
        "tree" | "metadata" | "version" | "search" | "pkgid" | "locate-project"
        | "verify-project" | "help" | "info" | "read-manifest" | "outdated" | "audit" | "deny" => {
            v(Tier::ReadOnly, format!("cargo {sub} only reads"))
        }
        _ => v(
            Tier::Risky,
            format!("cargo {sub} installs, publishes or changes the project"),
        ),
    }
}

fn classify_dotnet(args: &[&str]) -> Verdict1 {
    let sub = args.first().copied().unwrap_or("");
    match sub {
        "build" | "restore" | "clean" | "msbuild" | "pack" | "publish" | "build-server" => {
            v(Tier::Build, format!("dotnet {sub} builds"))
        }
        "test" | "run" | "watch" | "vstest" | "format" | "ef" => v(
            Tier::Execute,
            format!("dotnet {sub} runs the project's code"),
        ),
        "--version" | "--info" | "--list-sdks" | "--list-runtimes" | "-h" | "--help" | "help"
        | "" => v(Tier::ReadOnly, "dotnet only prints information"),
        "list"
            if args
                .get(1)
                .is_some_and(|a| matches!(*a, "package" | "reference"))
                || args.iter().any(|a| *a == "package" || *a == "reference") =>
        {
            v(Tier::ReadOnly, "dotnet list only reads")
        }
        "sln" if args.get(1) == Some(&"list") => v(Tier::ReadOnly, "dotnet sln list only reads"),
        _ => v(
            Tier::Risky,
            format!("dotnet {sub} installs or changes the project"),
        ),
    }
}

fn classify_go(args: &[&str]) -> Verdict1 {
    let sub = args.first().copied().unwrap_or("");
    match sub {
        "build" | "vet" => v(Tier::Build, format!("go {sub} builds")),
        "test" | "run" | "generate" | "fmt" => {
            v(Tier::Execute, format!("go {sub} runs the project's code"))
        }
        "version" | "env" | "list" | "doc" | "help" => {
            if sub == "env" && args.iter().any(|a| *a == "-w" || *a == "-u") {
                v(Tier::Risky, "go env -w changes settings")
            } else {
                v(Tier::ReadOnly, format!("go {sub} only reads"))
            }
        }
        "mod"
            if args
                .get(1)
                .is_some_and(|a| matches!(*a, "graph" | "verify" | "why")) =>
        {
            v(Tier::ReadOnly, "go mod graph/verify/why only reads")
        }
        _ => v(Tier::Risky, format!("go {sub} installs or changes modules")),
    }
}

// ---------------------------------------------------------------------------------------------

fn classify_line(line: &str, depth: u32) -> Verdict1 {
    if depth > MAX_DEPTH {
        return v(Tier::Risky, "too deeply nested to analyse");
    }
    let c = classify_at(line, depth);
    match c
        .segments
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.tier, std::cmp::Reverse(*i)))
    {
        Some((_, s)) => (s.tier, s.reason.clone()),
        None => v(Tier::ReadOnly, "nothing to run"),
    }
}

fn classify_at(line: &str, depth: u32) -> Classification {
    if line.chars().count() > MAX_ANALYSED_CHARS {
        let seg = SegmentVerdict {
            text: crate::text::truncate_chars(line, 80),
            tier: Tier::Risky,
            reason: format!("the command line is longer than {MAX_ANALYSED_CHARS} characters"),
        };
        return Classification {
            tier: Tier::Risky,
            segments: vec![seg],
        };
    }
    let lexer = Lexer::new(line);
    let raw = lexer.segments();
    let ctx = Ctx { depth };
    let mut segments: Vec<SegmentVerdict> = Vec::with_capacity(raw.len());
    let mut pipeline_has_downloader = false;
    let mut pipeline_heredoc: Option<&str> = None;
    for seg in &raw {
        if !seg.piped {
            pipeline_has_downloader = false;
            pipeline_heredoc = None;
        }
        let (mut tier, mut reason) = classify_segment(seg, &ctx);
        let prog = seg
            .words
            .iter()
            .find(|w| !is_assignment(&w.text))
            .map(|w| base_program(&w.text))
            .unwrap_or_default();
        if seg.piped && pipeline_has_downloader && PIPE_EXECUTORS.contains(&prog.as_str()) {
            tier = Tier::Denied;
            reason = format!("pipes a download into {prog} (curl | sh)");
        }
        if let (true, Some(body)) = (
            seg.piped && PIPE_EXECUTORS.contains(&prog.as_str()),
            pipeline_heredoc,
        ) {
            let inner = classify_line(body, depth + 1);
            if inner.0 == Tier::Denied {
                tier = Tier::Denied;
                reason = format!("pipes a here-document into {prog} that runs: {}", inner.1);
            }
        }
        if DOWNLOADERS.contains(&prog.as_str()) {
            pipeline_has_downloader = true;
        }
        if let Some(body) = &seg.heredoc {
            pipeline_heredoc = Some(body);
        }
        segments.push(SegmentVerdict {
            text: seg.text.clone(),
            tier,
            reason,
        });
    }
    let tier = segments
        .iter()
        .map(|s| s.tier)
        .max()
        .unwrap_or(Tier::ReadOnly);
    Classification { tier, segments }
}

/// The program of each segment of a command line (after `VAR=value` prefixes and paths).
#[must_use]
pub fn programs(line: &str) -> Vec<String> {
    if line.chars().count() > MAX_ANALYSED_CHARS {
        return Vec::new();
    }
    Lexer::new(line)
        .segments()
        .iter()
        .filter_map(|seg| {
            seg.words
                .iter()
                .find(|w| !is_assignment(&w.text))
                .map(|w| base_program(&w.text))
        })
        .collect()
}

/// Splits and classifies a command line.
#[must_use]
pub fn classify(line: &str) -> Classification {
    classify_at(line, 0)
}

/// Whether `words` match an allow-list pattern. Patterns are words; `*` inside a word matches any
/// characters, and a final `*` word matches any remaining words (including none).
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

fn glob(p: &str, w: &str) -> bool {
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

/// Decides what happens to a command line under a mode and an allow-list.
#[must_use]
pub fn decide(line: &str, mode: Mode, allow: &[String]) -> Verdict {
    let c = classify(line);
    let mut worst: Option<(Decision, usize, String)> = None;
    for (i, s) in c.segments.iter().enumerate() {
        let (decision, why) = match (s.tier, mode) {
            (Tier::Denied, _) => (Decision::Deny, s.reason.clone()),
            (_, Mode::Auto) | (Tier::ReadOnly | Tier::Build, _) => {
                (Decision::Run, s.reason.clone())
            }
            (Tier::Execute, Mode::AutoSafe) => {
                if allow.iter().any(|p| pattern_matches(p, &s.text)) {
                    (Decision::Run, format!("{} (allow-listed)", s.reason))
                } else {
                    (
                        Decision::Confirm,
                        format!("{} and is not in Commands.AllowList", s.reason),
                    )
                }
            }
            (Tier::Execute | Tier::Risky, _) => (Decision::Confirm, s.reason.clone()),
        };
        if worst.as_ref().is_none_or(|(d, _, _)| decision > *d) {
            worst = Some((decision, i, why));
        }
    }
    let (decision, reason) = match worst {
        Some((d, i, why)) => (d, format!("segment {}: {why}", i + 1)),
        None => (Decision::Run, "nothing to run".to_string()),
    };
    Verdict {
        tier: c.tier,
        decision,
        reason,
        segments: c.segments,
    }
}
