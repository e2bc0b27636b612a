//! The AgentScript v1 reply parser.
//!
//! One line-oriented state machine serves the full parse (the final verdict on a reply) and the
//! streaming partial parse (what is already certain while a reply still arrives). It never
//! panics, runs in time linear in the input (one bounded rescan at most), and recovers after every
//! problem so that one correction lists all of them.

pub mod diagnostics;

use crate::config::Limits;
use crate::diag::{Code, Diagnostic};
use crate::path;
use crate::reply::{
    Command, CommandKind, DoneStatus, Need, OnError, Options, Reply, Section, SectionName,
};
use crate::text::{chars_over, edit_distance, truncate_chars};
use serde::Serialize;

/// At most this many diagnostics are kept; the rest are counted.
pub const MAX_DIAGNOSTICS: usize = 100;
/// Upper bound for `timeout=` on runcommand (one day).
pub const MAX_TIMEOUT_SECONDS: u32 = 86_400;

/// The outcome of a full parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParseOutput {
    pub reply: Reply,
    pub diagnostics: Vec<Diagnostic>,
    /// Diagnostics found beyond [`MAX_DIAGNOSTICS`].
    pub suppressed: usize,
    /// The reply ended inside a block or a payload: it looks cut off.
    pub truncated: bool,
}

impl ParseOutput {
    /// True when the reply may execute.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.diagnostics.is_empty()
    }
}

/// Where a streaming reply currently stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamState {
    /// Between blocks (or before the first one).
    Outside,
    /// Inside a block opened at `line`.
    InBlock {
        command: Option<CommandKind>,
        line: u32,
    },
    /// Inside a payload section opened at `line`.
    InPayload {
        command: Option<CommandKind>,
        section: String,
        line: u32,
    },
    /// `@@eof` has been seen.
    AfterEof,
}

/// The outcome of a partial parse: only what more text cannot change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartialOutput {
    /// Blocks already closed with `@@end`.
    pub reply: Reply,
    /// Problems that more text cannot fix.
    pub diagnostics: Vec<Diagnostic>,
    pub suppressed: usize,
    pub state: StreamState,
    /// Number of complete lines that were examined.
    pub complete_lines: u32,
}

/// Parses a complete reply (AgentScript v1, no extension commands).
#[must_use]
pub fn parse(text: &str, limits: &Limits) -> ParseOutput {
    parse_with(text, limits, &[])
}

/// [`parse`] with the extension commands `offered` known (the current movement's MCP and SSH
/// tools); any other extension command is an unknown command.
#[must_use]
pub fn parse_with(text: &str, limits: &Limits, offered: &[CommandKind]) -> ParseOutput {
    if let Some(early) = precheck(text, limits) {
        return early;
    }
    let mut p = Parser::new(text, limits, offered, false);
    p.run();
    p.finish_full()
}

/// Parses a reply that may still be streaming. Only complete lines (ending in `\n`) are examined,
/// and problems that more text could fix (a missing `@@eof`, an open block) are not reported.
#[must_use]
pub fn parse_partial(text: &str, limits: &Limits) -> PartialOutput {
    parse_partial_with(text, limits, &[])
}

/// [`parse_partial`] with extension commands offered (see [`parse_with`]).
#[must_use]
pub fn parse_partial_with(text: &str, limits: &Limits, offered: &[CommandKind]) -> PartialOutput {
    let complete = match text.rfind('\n') {
        Some(idx) => &text[..idx],
        None => "",
    };
    if let Some(n) = chars_over(text, limits.max_response_chars as usize) {
        return PartialOutput {
            reply: Reply::default(),
            diagnostics: vec![diagnostics::response_too_long(n, limits)],
            suppressed: 0,
            state: StreamState::Outside,
            complete_lines: 0,
        };
    }
    if complete.is_empty() && !text.contains('\n') {
        return PartialOutput {
            reply: Reply::default(),
            diagnostics: Vec::new(),
            suppressed: 0,
            state: StreamState::Outside,
            complete_lines: 0,
        };
    }
    let mut p = Parser::new(complete, limits, offered, true);
    p.run();
    p.finish_partial()
}

/// [`parse_partial`] that resumes at `from` (when the text still starts with what the checkpoint
/// saw) and returns the checkpoint to resume at next time. The output is the same as
/// `parse_partial(text, limits)`: only the lines after the checkpoint are parsed again. The
/// checkpoint is taken by value: its commands move into the output instead of being copied.
#[must_use]
pub fn parse_partial_resumable(
    text: &str,
    limits: &Limits,
    offered: &[CommandKind],
    from: Option<Checkpoint>,
) -> (PartialOutput, Option<Checkpoint>) {
    let complete = match text.rfind('\n') {
        Some(idx) => &text[..idx],
        None => "",
    };
    if chars_over(text, limits.max_response_chars as usize).is_some()
        || (complete.is_empty() && !text.contains('\n'))
    {
        return (parse_partial_with(text, limits, offered), None);
    }
    match from.filter(|cp| cp.offset <= complete.len() && complete.is_char_boundary(cp.offset)) {
        Some(cp) => {
            let base = cp.offset;
            let mut p = Parser::resume(&complete[base..], limits, offered, cp);
            p.run();
            let (out, next) = p.finish_partial_with_checkpoint();
            let next = next.map(|mut n| {
                n.offset += base;
                n
            });
            (out, next)
        }
        None => {
            let mut p = Parser::new(complete, limits, offered, true);
            p.run();
            p.finish_partial_with_checkpoint()
        }
    }
}

fn precheck(text: &str, limits: &Limits) -> Option<ParseOutput> {
    let diag = if text.trim().is_empty() {
        diagnostics::reply_empty()
    } else if let Some(n) = chars_over(text, limits.max_response_chars as usize) {
        diagnostics::response_too_long(n, limits)
    } else {
        return None;
    };
    Some(ParseOutput {
        reply: Reply::default(),
        diagnostics: vec![diag],
        suppressed: 0,
        truncated: false,
    })
}

// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct OpenBlock {
    /// `None` for an unknown command: its body is swallowed without further errors.
    kind: Option<CommandKind>,
    number: u32,
    line: u32,
    argument: Option<String>,
    options: Options,
    sections: Vec<Section>,
    /// A malformed section marker was reported in this block: do not also report its section as
    /// missing.
    bad_section: bool,
}

impl OpenBlock {
    /// A block whose command is unknown (or a section with no block): its lines are swallowed up
    /// to its `@@end` without further errors.
    fn unknown(line: u32) -> Self {
        OpenBlock {
            kind: None,
            number: 0,
            line,
            argument: None,
            options: Options::default(),
            sections: Vec::new(),
            bad_section: false,
        }
    }
}

#[derive(Debug)]
struct OpenSection<'a> {
    name: Option<SectionName>,
    /// The name the closing marker must carry (compared case-insensitively).
    closer: &'a str,
    nonce: Option<&'a str>,
    line: u32,
    /// Index of the first content line.
    start: usize,
    /// Keep the section (false for unknown, unexpected or duplicate sections).
    keep: bool,
}

#[derive(Debug)]
enum State<'a> {
    Outside,
    Block(OpenBlock),
    Payload(OpenBlock, OpenSection<'a>),
    AfterEof,
}

#[derive(Debug)]
struct Stray {
    code: Code,
    line: u32,
    text: String,
    count: u32,
    inside: Option<CommandKind>,
}

struct Parser<'a> {
    src: &'a str,
    /// One past the last line: lines are addressed by the byte offset where they start, and the
    /// last one starts at most at `src.len()`.
    end: usize,
    /// The last line number computed: (line start, 1-based number in `src`). Line numbers are
    /// counted on demand from here, so payload lines are never visited one by one.
    line_cache: std::cell::Cell<(usize, u32)>,
    closer_finder: memchr::memmem::Finder<'static>,
    limits: &'a Limits,
    /// The extension commands the current movement offers; the others are unknown commands.
    offered: &'a [CommandKind],
    partial: bool,
    diags: Vec<Diagnostic>,
    suppressed: usize,
    commands: Vec<Command>,
    next_number: u32,
    state: State<'a>,
    fence_open: Option<(u8, usize)>,
    fence_close_used: bool,
    seen_block: bool,
    eof_seen: bool,
    stray: Option<Stray>,
    /// Where the last line holding more than whitespace starts.
    last_nonblank: Option<usize>,
    rescued: bool,
    /// Lines before `src` (a parse resumed at a checkpoint).
    line_base: u32,
    /// Where a partial parse can resume: after the last closed block.
    resume_at: Option<Mark>,
}

/// The parser's state right after a closed block: enough to resume there.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Where the next line starts.
    line: usize,
    commands: usize,
    diags: usize,
    suppressed: usize,
    next_number: u32,
    seen_block: bool,
    fence_open: Option<(u8, usize)>,
    fence_close_used: bool,
}

/// Where a streaming parse can pick up again: the byte offset of the line after the last closed
/// block, and everything the parse had found before it. Valid for any later text that starts
/// with the same `offset` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub offset: usize,
    lines: u32,
    commands: Vec<Command>,
    diags: Vec<Diagnostic>,
    suppressed: usize,
    next_number: u32,
    seen_block: bool,
    fence_open: Option<(u8, usize)>,
    fence_close_used: bool,
}

impl std::fmt::Debug for Parser<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parser")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// `str::trim` with an ASCII fast path: most lines are ASCII at both ends.
fn trim(s: &str) -> &str {
    // The ASCII characters `char::is_whitespace` accepts (vertical tab included).
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let b = s.as_bytes();
    let mut start = 0;
    while start < b.len() && ws(b[start]) {
        start += 1;
    }
    let mut end = b.len();
    while end > start && ws(b[end - 1]) {
        end -= 1;
    }
    let t = &s[start..end];
    match (t.as_bytes().first(), t.as_bytes().last()) {
        (Some(f), Some(l)) if f.is_ascii() && l.is_ascii() => t,
        (None, None) => t,
        // A non-ASCII character at an end may be Unicode whitespace.
        _ => t.trim(),
    }
}

/// `NAME:nonce` → (`NAME`, `Some(nonce)`); a byte search (a `char` pattern costs more on short
/// strings).
fn split_colon(s: &str) -> (&str, Option<&str>) {
    match s.bytes().position(|b| b == b':') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

fn strip_cr(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

fn valid_nonce(nonce: &str) -> bool {
    (1..=32).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `(fence char, run length, rest)` when the trimmed line starts with a run of 3+ backticks/tildes.
fn fence_parts(trimmed: &str) -> Option<(u8, usize, &str)> {
    let first = *trimmed.as_bytes().first()?;
    if first != b'`' && first != b'~' {
        return None;
    }
    let run = trimmed.bytes().take_while(|b| *b == first).count();
    if run < 3 {
        return None;
    }
    Some((first, run, trimmed[run..].trim()))
}

fn is_fence_open(trimmed: &str) -> Option<(u8, usize)> {
    let (ch, run, info) = fence_parts(trimmed)?;
    if ch == b'`' && info.contains('`') {
        return None;
    }
    if info.contains(char::is_whitespace) && !info.is_empty() {
        // An info string is a single word (a language tag) for our purposes.
        let word = info.split_whitespace().next().unwrap_or("");
        if word.len() != info.len() {
            return None;
        }
    }
    Some((ch, run))
}

fn is_fence_close(trimmed: &str, open: Option<(u8, usize)>) -> bool {
    match fence_parts(trimmed) {
        Some((ch, run, "")) => match open {
            Some((och, orun)) => ch == och && run >= orun,
            None => true,
        },
        _ => false,
    }
}

/// Whether `text`, read line by line from a stream (a terminal, a pipe), holds a whole reply: an
/// `@@eof` line, and when the reply opened with a fence (```` ~~~~agentscript ````), the fence
/// that closes it after the `@@eof`. What follows belongs to the next reply.
#[must_use]
pub fn reply_complete(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).skip_while(|l| l.is_empty());
    let open = lines.clone().next().and_then(is_fence_open);
    let mut eof = false;
    for l in lines.by_ref() {
        if eof && open.is_some() && is_fence_close(l, open) {
            return true;
        }
        if l.eq_ignore_ascii_case("@@eof") {
            if open.is_none() {
                return true;
            }
            eof = true;
        }
    }
    false
}

/// Splits an `@@name rest` line.
fn split_directive(trimmed: &str) -> (&str, &str) {
    let body = &trimmed[2..];
    // A byte scan for ASCII whitespace; `char::is_whitespace` only from the first non-ASCII byte.
    let idx = match body
        .bytes()
        .position(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) || !b.is_ascii())
    {
        Some(k) if !body.as_bytes()[k].is_ascii() => {
            body[k..].find(char::is_whitespace).map(|n| k + n)
        }
        found => found,
    };
    match idx {
        Some(idx) => (&body[..idx], trim(&body[idx..])),
        None => (body, ""),
    }
}

const ALIASES: &[(&str, CommandKind)] = &[
    ("createfile", CommandKind::NewFile),
    ("create", CommandKind::NewFile),
    ("writefile", CommandKind::NewFile),
    ("write", CommandKind::NewFile),
    ("addfile", CommandKind::NewFile),
    ("file", CommandKind::NewFile),
    ("update", CommandKind::UpdateFile),
    ("overwrite", CommandKind::UpdateFile),
    ("replacefile", CommandKind::UpdateFile),
    ("edit", CommandKind::EditFile),
    ("patch", CommandKind::EditFile),
    ("replace", CommandKind::EditFile),
    ("modify", CommandKind::EditFile),
    ("delete", CommandKind::DeleteFile),
    ("remove", CommandKind::DeleteFile),
    ("rm", CommandKind::DeleteFile),
    ("move", CommandKind::MoveFile),
    ("mv", CommandKind::MoveFile),
    ("rename", CommandKind::MoveFile),
    ("renamefile", CommandKind::MoveFile),
    ("read", CommandKind::ReadFile),
    ("cat", CommandKind::ReadFile),
    ("open", CommandKind::ReadFile),
    ("view", CommandKind::ReadFile),
    ("makedir", CommandKind::Mkdir),
    ("mkdirs", CommandKind::Mkdir),
    ("createdir", CommandKind::Mkdir),
    ("folder", CommandKind::Mkdir),
    ("run", CommandKind::RunCommand),
    ("exec", CommandKind::RunCommand),
    ("shell", CommandKind::RunCommand),
    ("bash", CommandKind::RunCommand),
    ("sh", CommandKind::RunCommand),
    ("cmd", CommandKind::RunCommand),
    ("command", CommandKind::RunCommand),
    ("execute", CommandKind::RunCommand),
    ("message", CommandKind::Say),
    ("print", CommandKind::Say),
    ("echo", CommandKind::Say),
    ("note", CommandKind::Say),
    ("reply", CommandKind::Say),
    ("question", CommandKind::Ask),
    ("git", CommandKind::Commit),
    ("push", CommandKind::Commit),
    ("finish", CommandKind::Done),
    ("complete", CommandKind::Done),
    ("end_turn", CommandKind::Done),
    ("stop", CommandKind::Done),
    ("continue", CommandKind::Next),
];

fn suggest_command(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let lower = lower.trim_end_matches([':', '.', ',']);
    if let Some(k) = CommandKind::from_name(lower).filter(|k| !k.is_extension()) {
        return Some(k.name());
    }
    if let Some((_, k)) = ALIASES.iter().find(|(a, _)| *a == lower) {
        return Some(k.name());
    }
    CommandKind::ALL
        .into_iter()
        .map(|k| (edit_distance(lower, k.name()), k.name()))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, limits: &'a Limits, offered: &'a [CommandKind], partial: bool) -> Self {
        let body = src.trim_end();
        let last_nonblank = (!body.trim().is_empty())
            .then(|| memchr::memrchr(b'\n', body.as_bytes()).map_or(0, |n| n + 1));
        Self {
            src,
            end: src.len() + 1,
            line_cache: std::cell::Cell::new((0, 1)),
            closer_finder: memchr::memmem::Finder::new(">>>"),
            limits,
            offered,
            partial,
            diags: Vec::new(),
            suppressed: 0,
            commands: Vec::new(),
            next_number: 1,
            state: State::Outside,
            fence_open: None,
            fence_close_used: false,
            seen_block: false,
            eof_seen: false,
            stray: None,
            last_nonblank,
            rescued: false,
            line_base: 0,
            resume_at: None,
        }
    }

    /// A partial parser for the text after `cp`, in the state the checkpoint recorded.
    fn resume(
        src: &'a str,
        limits: &'a Limits,
        offered: &'a [CommandKind],
        cp: Checkpoint,
    ) -> Self {
        let mut p = Self::new(src, limits, offered, true);
        p.line_base = cp.lines;
        p.suppressed = cp.suppressed;
        p.next_number = cp.next_number;
        p.seen_block = cp.seen_block;
        p.fence_open = cp.fence_open;
        p.fence_close_used = cp.fence_close_used;
        // Until another block closes, the place to resume is where this parse started.
        p.resume_at = Some(Mark {
            line: 0,
            commands: cp.commands.len(),
            diags: cp.diags.len(),
            suppressed: cp.suppressed,
            next_number: cp.next_number,
            seen_block: cp.seen_block,
            fence_open: cp.fence_open,
            fence_close_used: cp.fence_close_used,
        });
        p.commands = cp.commands;
        p.diags = cp.diags;
        p
    }

    fn mark(&mut self, next_line: usize) {
        if self.partial && self.stray.is_none() && !self.eof_seen {
            self.resume_at = Some(Mark {
                line: next_line,
                commands: self.commands.len(),
                diags: self.diags.len(),
                suppressed: self.suppressed,
                next_number: self.next_number,
                seen_block: self.seen_block,
                fence_open: self.fence_open,
                fence_close_used: self.fence_close_used,
            });
        }
    }

    /// The checkpoint of the last closed block, if any (before the final sort and checks).
    fn checkpoint(&self) -> Option<Checkpoint> {
        let m = self.resume_at?;
        let offset = m.line;
        if offset > self.src.len() {
            return None;
        }
        Some(Checkpoint {
            offset,
            lines: self.lineno(offset) - 1,
            commands: self.commands[..m.commands].to_vec(),
            diags: self.diags[..m.diags].to_vec(),
            suppressed: m.suppressed,
            next_number: m.next_number,
            seen_block: m.seen_block,
            fence_open: m.fence_open,
            fence_close_used: m.fence_close_used,
        })
    }

    /// The line starting at byte `i`, without its `\n`.
    fn line(&self, i: usize) -> &'a str {
        let rest = self.src.get(i..).unwrap_or("");
        match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(n) => &rest[..n],
            None => rest,
        }
    }

    /// The line starting at byte `i` (without its `\n`) and where the next line starts.
    fn line_and_next(&self, i: usize) -> (&'a str, usize) {
        let rest = self.src.get(i..).unwrap_or("");
        match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(n) => (&rest[..n], i + n + 1),
            None => (rest, self.end),
        }
    }

    /// Where the line after the one starting at `i` starts, or `self.end` after the last one.
    fn next(&self, i: usize) -> usize {
        match self
            .src
            .as_bytes()
            .get(i..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
        {
            Some(n) => i + n + 1,
            None => self.end,
        }
    }

    /// The 1-based number of the line starting at `i`, counting the lines before a resumed parse.
    fn lineno(&self, i: usize) -> u32 {
        let (at, no) = self.line_cache.get();
        let (from, base) = if i >= at { (at, no) } else { (0, 1) };
        let i = i.min(self.src.len());
        let span = &self.src.as_bytes()[from.min(i)..i];
        // Most calls count a line or two: a plain loop beats the vector search's set-up there.
        let more = if span.len() < 256 {
            span.iter().filter(|b| **b == b'\n').count()
        } else {
            memchr::memchr_iter(b'\n', span).count()
        };
        #[allow(clippy::cast_possible_truncation)]
        let n = base + more as u32;
        self.line_cache.set((i, n));
        self.line_base + n
    }

    fn push(&mut self, d: Diagnostic) {
        if self.diags.len() < MAX_DIAGNOSTICS {
            self.diags.push(d);
        } else {
            self.suppressed += 1;
        }
    }

    fn run(&mut self) {
        let mut i = 0;
        loop {
            while i < self.end {
                i = self.step(i);
            }
            // A payload that never closes swallows the rest of the reply. Report it, then resume
            // once after its first whole-line @@end so the remaining blocks are still checked.
            if self.partial || self.rescued {
                break;
            }
            let resume = match &self.state {
                State::Payload(_, sec) => self.unclosed_details(sec).0,
                _ => None,
            };
            let Some(end_at) = resume else { break };
            self.rescued = true;
            let state = std::mem::replace(&mut self.state, State::Outside);
            if let State::Payload(_, sec) = state {
                self.report_unclosed_section(&sec);
            }
            i = self.next(end_at);
        }
    }

    /// Handles line `i` and returns the index of the next line to handle.
    // Kept out of `run`'s loop: inlined there (as it was once the extension commands grew the
    // parser), the full parse measured 12-25% slower.
    #[inline(never)]
    fn step(&mut self, i: usize) -> usize {
        // One newline search gives both the line and where the next one starts.
        let (line, next) = self.line_and_next(i);
        let raw = strip_cr(line);
        let trimmed = trim(raw);
        let state = std::mem::replace(&mut self.state, State::Outside);
        match state {
            State::Payload(block, sec) => {
                let end = self.scan_payload(&sec, i);
                if end < self.end {
                    let block = self.close_section(block, sec, end);
                    self.state = State::Block(block);
                    self.next(end)
                } else {
                    self.state = State::Payload(block, sec);
                    self.end
                }
            }
            State::AfterEof => {
                if !trimmed.is_empty() && !self.try_close_fence(trimmed, i, true) {
                    let lineno = self.lineno(i);
                    self.stray_line(Code::ParseTextAfterEof, lineno, trimmed, None);
                }
                self.state = State::AfterEof;
                next
            }
            State::Outside => {
                if trimmed.is_empty() {
                    return next;
                }
                if !self.seen_block
                    && !self.eof_seen
                    && self.fence_open.is_none()
                    && !self.fence_close_used
                {
                    if let Some(open) = is_fence_open(trimmed) {
                        self.fence_open = Some(open);
                        self.flush_stray();
                        return next;
                    }
                }
                if self.try_close_fence(trimmed, i, false) {
                    return next;
                }
                // Line numbers are counted only where one is kept or reported, never for the
                // @@end and payload lines.
                let lineno = self.lineno(i);
                if trimmed.starts_with("@@") {
                    self.flush_stray();
                    self.directive(trimmed, lineno);
                } else if let Some(rest) = trimmed.strip_prefix("<<<") {
                    self.flush_stray();
                    self.push(diagnostics::section_marker_outside_block(lineno, trimmed));
                    let orphan = OpenBlock::unknown(lineno);
                    let sec = self.open_section_raw(rest, lineno, i, false);
                    self.state = State::Payload(orphan, sec);
                } else {
                    self.stray_line(Code::ParseStrayText, lineno, trimmed, None);
                }
                next
            }
            State::Block(block) => {
                if trimmed.is_empty() {
                    self.state = State::Block(block);
                    return next;
                }
                if trimmed.eq_ignore_ascii_case("@@end") {
                    self.flush_stray();
                    self.close_block(block);
                    self.state = State::Outside;
                    self.mark(next);
                    return next;
                }
                let lineno = self.lineno(i);
                if trimmed.starts_with("@@") {
                    // A new block starts before this one ended: report, then reread the line
                    // outside any block.
                    self.flush_stray();
                    self.unterminated_block(&block, Some(lineno));
                    self.state = State::Outside;
                    return i;
                }
                if let Some(rest) = trimmed.strip_prefix("<<<") {
                    self.flush_stray();
                    let mut block = block;
                    let sec = self.open_section(&block, rest, lineno, i);
                    if sec.name.is_none() {
                        block.bad_section = true;
                    }
                    self.state = State::Payload(block, sec);
                    return next;
                }
                if self.try_close_fence(trimmed, i, false) {
                    self.state = State::Block(block);
                    return next;
                }
                if trimmed.ends_with(">>>") {
                    self.flush_stray();
                    self.push(diagnostics::closer_without_opener(lineno, trimmed));
                } else if block.kind.is_some() {
                    self.stray_line(Code::ParseStrayText, lineno, trimmed, block.kind);
                }
                self.state = State::Block(block);
                next
            }
        }
    }

    fn try_close_fence(&mut self, trimmed: &str, i: usize, after_eof: bool) -> bool {
        if self.fence_close_used || !is_fence_close(trimmed, self.fence_open) {
            return false;
        }
        if after_eof || Some(i) == self.last_nonblank {
            self.fence_close_used = true;
            self.flush_stray();
            return true;
        }
        false
    }

    fn stray_line(&mut self, code: Code, lineno: u32, trimmed: &str, inside: Option<CommandKind>) {
        if let Some(s) = &mut self.stray {
            if s.code == code && s.inside == inside {
                s.count += 1;
                return;
            }
        }
        self.flush_stray();
        self.stray = Some(Stray {
            code,
            line: lineno,
            text: trimmed.to_string(),
            count: 1,
            inside,
        });
    }

    fn flush_stray(&mut self) {
        let Some(s) = self.stray.take() else { return };
        let more = if s.count > 1 {
            format!(
                " (and {} more line{})",
                s.count - 1,
                if s.count == 2 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let d = match (s.code, s.inside) {
            (Code::ParseTextAfterEof, _) => diagnostics::text_after_eof(s.line, &s.text, &more),
            (_, Some(kind)) => {
                diagnostics::text_outside_section(s.code, s.line, kind, &s.text, &more)
            }
            (_, None) => diagnostics::text_outside_blocks(s.code, s.line, &s.text, &more),
        };
        self.push(d);
    }

    fn directive(&mut self, trimmed: &str, lineno: u32) {
        let (name, rest) = split_directive(trimmed);
        if name.eq_ignore_ascii_case("eof") {
            if !rest.is_empty() {
                self.push(diagnostics::text_on_eof_line(lineno, rest));
            }
            self.eof_seen = true;
            self.state = State::AfterEof;
            return;
        }
        if name.eq_ignore_ascii_case("end") {
            self.push(diagnostics::end_without_block(lineno));
            return;
        }
        self.seen_block = true;
        let offered = self.offered;
        let Some(kind) =
            CommandKind::from_name(name).filter(|k| !k.is_extension() || offered.contains(k))
        else {
            let shown = truncate_chars(name, 40);
            self.push(diagnostics::unknown_command(
                lineno,
                &shown,
                suggest_command(name),
                offered,
            ));
            self.state = State::Block(OpenBlock::unknown(lineno));
            return;
        };
        let number = self.next_number;
        self.next_number += 1;
        let (argument, options) = self.header(kind, rest, lineno);
        self.state = State::Block(OpenBlock {
            kind: Some(kind),
            number,
            line: lineno,
            argument,
            options,
            sections: Vec::with_capacity(kind.sections().len()),
            bad_section: false,
        });
    }

    /// Parses the rest of a command's `@@` line: a path, or `key=value` options.
    fn header(&mut self, kind: CommandKind, rest: &str, lineno: u32) -> (Option<String>, Options) {
        let mut rest = rest;
        let mut argument = None;
        if kind.is_extension() {
            match extension_argument(kind, rest) {
                Ok((arg, options)) => {
                    argument = Some(arg);
                    rest = options;
                }
                Err(problem) => {
                    self.push(diagnostics::bad_argument(lineno, kind, &problem));
                    return (Some(rest.to_string()), Options::default());
                }
            }
        }
        if kind.takes_path() {
            if rest.is_empty() {
                self.push(diagnostics::missing_path(lineno, kind));
                return (None, Options::default());
            }
            return match path::normalize(rest) {
                Ok(p) => (Some(p), Options::default()),
                Err(problem) => {
                    self.push(diagnostics::bad_path(lineno, rest, &problem.to_string()));
                    (Some(rest.to_string()), Options::default())
                }
            };
        }
        let mut options = Options::default();
        let mut seen: Vec<String> = Vec::new();
        for token in rest.split_whitespace() {
            let problem = match token.split_once('=') {
                None => Some(format!(
                    "\"{}\" is not a key=value option",
                    truncate_chars(token, 40)
                )),
                Some((key, value)) => {
                    let key = key.to_ascii_lowercase();
                    if seen.contains(&key) {
                        Some(format!("option \"{key}\" is given twice"))
                    } else {
                        seen.push(key.clone());
                        set_option(kind, &key, value, &mut options).err()
                    }
                }
            };
            if let Some(problem) = problem {
                self.push(diagnostics::bad_option(lineno, kind, &problem));
            }
        }
        if let (Some(_), Some(status @ (DoneStatus::Aborted | DoneStatus::NeedsUserInput))) =
            (&options.next, options.status)
        {
            self.push(diagnostics::done_next_and_status(lineno, status));
        }
        (argument, options)
    }

    fn open_section(
        &mut self,
        block: &OpenBlock,
        rest: &'a str,
        lineno: u32,
        i: usize,
    ) -> OpenSection<'a> {
        let mut sec = self.open_section_raw(rest, lineno, i, true);
        let (Some(kind), Some(name)) = (block.kind, sec.name) else {
            return sec;
        };
        if !kind.sections().iter().any(|(n, _)| *n == name) {
            self.push(diagnostics::section_not_taken(lineno, kind, name));
            sec.keep = false;
        } else if block.sections.iter().any(|s| s.name == name) {
            self.push(diagnostics::section_twice(lineno, kind, name));
            sec.keep = false;
        }
        sec
    }

    /// Reads a `<<<NAME[:nonce]` marker. Reports malformed markers; always returns a section so the
    /// payload is skipped up to its closing marker.
    fn open_section_raw(
        &mut self,
        rest: &'a str,
        lineno: u32,
        i: usize,
        report: bool,
    ) -> OpenSection<'a> {
        let (name_raw, nonce_raw) = split_colon(rest);
        let closer = name_raw.split_whitespace().next().unwrap_or("");
        let name = SectionName::from_name(name_raw);
        let nonce_ok = nonce_raw.is_none_or(valid_nonce);
        let problem = if name_raw.is_empty() {
            Some("the section name is missing".to_string())
        } else if name.is_none() {
            let known = SectionName::ALL
                .into_iter()
                .map(|s| (edit_distance(&name_raw.to_ascii_uppercase(), s.as_str()), s))
                .filter(|(d, _)| *d <= 2)
                .min_by_key(|(d, _)| *d);
            Some(match known {
                Some((_, s)) => format!("unknown section name (did you mean <<<{s}?)"),
                None => "unknown section name".to_string(),
            })
        } else if !nonce_ok {
            Some("a nonce is 1 to 32 letters, digits, '_' or '-'".to_string())
        } else {
            None
        };
        if let (Some(problem), true) = (&problem, report) {
            self.push(diagnostics::malformed_marker(lineno, rest, problem));
        }
        OpenSection {
            name: if problem.is_none() { name } else { None },
            closer,
            nonce: nonce_raw,
            line: lineno,
            start: self.next(i),
            keep: problem.is_none(),
        }
    }

    /// Returns where the line that closes the payload (whose content starts at `i`) starts, or
    /// `self.end` when it never closes. Only lines holding `>>>` can close a payload, so the scan
    /// jumps from one `>>>` to the next and never visits the content line by line.
    fn scan_payload(&self, sec: &OpenSection, i: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut from = i;
        while from <= bytes.len() {
            let Some(hit) = self.closer_finder.find(&bytes[from..]) else {
                break;
            };
            let pos = from + hit;
            // The line holding `pos` starts after the last line break before it.
            let start = memchr::memrchr(b'\n', &bytes[from..pos]).map_or(from, |n| from + n + 1);
            let trimmed = trim(strip_cr(self.line(start)));
            if self.is_closer(trimmed, sec) {
                return start;
            }
            from = self.next(start);
        }
        self.end
    }

    /// For a payload that never closed: its first whole-line `@@end` (where to resume) and the
    /// first line that looks like a misspelt closing marker.
    fn unclosed_details(&self, sec: &OpenSection) -> (Option<usize>, Option<(u32, String)>) {
        let mut first_end = None;
        let mut near_miss = None;
        let mut i = sec.start;
        while i < self.end {
            let trimmed = trim(strip_cr(self.line(i)));
            if first_end.is_none() && trimmed.eq_ignore_ascii_case("@@end") {
                first_end = Some(i);
            }
            if near_miss.is_none() && looks_like_closer(trimmed, sec.closer) {
                let lineno = self.lineno(i);
                near_miss = Some((lineno, trimmed.to_string()));
            }
            if first_end.is_some() && near_miss.is_some() {
                break;
            }
            i = self.next(i);
        }
        (first_end, near_miss)
    }

    fn is_closer(&self, trimmed: &str, sec: &OpenSection) -> bool {
        let Some(body) = trimmed.strip_suffix(">>>") else {
            return false;
        };
        let (name, nonce) = split_colon(body);
        name.eq_ignore_ascii_case(sec.closer) && nonce == sec.nonce
    }

    fn close_section(
        &mut self,
        mut block: OpenBlock,
        sec: OpenSection,
        close_idx: usize,
    ) -> OpenBlock {
        let (Some(name), true) = (sec.name, sec.keep) else {
            return block;
        };
        let text = self.payload_text(sec.start, close_idx);
        if let Some(n) = chars_over(&text, self.limits.max_file_content_chars as usize) {
            self.push(diagnostics::section_too_long(
                sec.line,
                name,
                block.kind,
                n,
                self.limits,
            ));
        }
        block.sections.push(Section {
            name,
            nonce: sec.nonce.map(str::to_string),
            text,
            line: sec.line,
        });
        block
    }

    /// The text of lines `start..end` joined with `\n`, without a final newline, CRLF folded to LF.
    fn payload_text(&self, start: usize, end: usize) -> String {
        if start >= end {
            return String::new();
        }
        // From the first content line to the line break before the closing line.
        let slice = &self.src[start..end - 1];
        let slice = slice.strip_suffix('\r').unwrap_or(slice);
        if memchr::memchr(b'\r', slice.as_bytes()).is_some() {
            slice.replace("\r\n", "\n")
        } else {
            slice.to_string()
        }
    }

    fn close_block(&mut self, block: OpenBlock) {
        let Some(kind) = block.kind else { return };
        let mut errors = Vec::new();
        for (name, need) in kind.sections() {
            let section = block.sections.iter().find(|s| s.name == *name);
            match (section, need) {
                (None, Need::Required) if !block.bad_section => {
                    errors.push(diagnostics::missing_section(block.line, kind, *name));
                }
                (Some(s), Need::Required)
                    if s.text.trim().is_empty()
                        && matches!(
                            name,
                            SectionName::Cmd
                                | SectionName::Find
                                | SectionName::Msg
                                | SectionName::To
                        ) =>
                {
                    errors.push(diagnostics::empty_section(s.line, kind, *name));
                }
                _ => {}
            }
        }
        let mut sections = block.sections;
        if kind == CommandKind::MoveFile {
            if let Some(to) = sections.iter_mut().find(|s| s.name == SectionName::To) {
                let lines: Vec<&str> = to
                    .text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                match lines.as_slice() {
                    [] => {}
                    [one] => match path::normalize(one) {
                        Ok(p) => to.text = p,
                        Err(problem) => {
                            errors.push(diagnostics::bad_path(to.line, one, &problem.to_string()))
                        }
                    },
                    _ => errors.push(diagnostics::bad_path(
                        to.line,
                        &to.text,
                        "TO must hold exactly one path",
                    )),
                }
            }
        }
        if kind == CommandKind::Mcp {
            if let Some(args) = sections.iter().find(|s| s.name == SectionName::Args) {
                if let Err(problem) = check_mcp_args(&args.text) {
                    errors.push(diagnostics::bad_argument(args.line, kind, &problem));
                }
            }
        }
        for e in errors {
            self.push(e);
        }
        // Canonical section order, whatever order the model wrote them in.
        sections.sort_by_key(|s| kind.sections().iter().position(|(n, _)| *n == s.name));
        self.commands.push(Command {
            number: block.number,
            kind,
            argument: block.argument,
            options: block.options,
            sections,
            line: block.line,
        });
    }

    fn unterminated_block(&mut self, block: &OpenBlock, next_block: Option<u32>) {
        // An unknown command was already reported; one problem per block is enough.
        if let Some(kind) = block.kind {
            self.push(diagnostics::unterminated_block(
                block.line, kind, next_block,
            ));
        }
    }

    fn report_unclosed_section(&mut self, sec: &OpenSection) {
        let near = self.unclosed_details(sec).1;
        self.push(diagnostics::unclosed_section(
            sec.line,
            sec.closer,
            sec.nonce,
            near.as_ref().map(|(line, text)| (*line, text.as_ref())),
        ));
    }

    fn end_of_input(&mut self) -> bool {
        self.flush_stray();
        let state = std::mem::replace(&mut self.state, State::Outside);
        match state {
            State::Payload(_, sec) => {
                self.report_unclosed_section(&sec);
                true
            }
            State::Block(block) => {
                self.unterminated_block(&block, None);
                true
            }
            State::Outside | State::AfterEof => false,
        }
    }

    fn control_checks(&mut self) {
        let next = self
            .commands
            .iter()
            .find(|c| c.kind == CommandKind::Next)
            .map(|c| c.line);
        let done = self
            .commands
            .iter()
            .find(|c| c.kind == CommandKind::Done)
            .map(|c| c.line);
        if let (Some(n), Some(d)) = (next, done) {
            self.push(diagnostics::conflicting_control(n, d));
        }
    }

    fn sort_diags(&mut self) {
        self.diags.sort_by_key(|d| (d.line.is_none(), d.line));
    }

    fn finish_full(mut self) -> ParseOutput {
        let truncated = self.end_of_input();
        self.control_checks();
        if !self.eof_seen {
            self.sort_diags();
            self.push(diagnostics::missing_eof(truncated));
        } else {
            self.sort_diags();
        }
        if self.diags.is_empty()
            && !self
                .commands
                .iter()
                .any(|c| c.kind.counts_toward_limit() || c.kind.is_control())
        {
            self.push(diagnostics::say_only());
        }
        ParseOutput {
            reply: Reply {
                commands: self.commands,
            },
            diagnostics: self.diags,
            suppressed: self.suppressed,
            truncated,
        }
    }

    fn finish_partial(self) -> PartialOutput {
        self.finish_partial_inner(false).0
    }

    fn finish_partial_with_checkpoint(self) -> (PartialOutput, Option<Checkpoint>) {
        self.finish_partial_inner(true)
    }

    /// The checkpoint copies every closed command: built only for a caller that keeps it.
    fn finish_partial_inner(
        mut self,
        keep_checkpoint: bool,
    ) -> (PartialOutput, Option<Checkpoint>) {
        let checkpoint = if keep_checkpoint {
            self.checkpoint()
        } else {
            None
        };
        self.flush_stray();
        self.control_checks();
        self.sort_diags();
        let state = match &self.state {
            State::Outside => StreamState::Outside,
            State::AfterEof => StreamState::AfterEof,
            State::Block(b) => StreamState::InBlock {
                command: b.kind,
                line: b.line,
            },
            State::Payload(b, s) => StreamState::InPayload {
                command: b.kind,
                section: s.closer.to_ascii_uppercase(),
                line: s.line,
            },
        };
        #[allow(clippy::cast_possible_truncation)]
        let complete_lines =
            self.line_base + 1 + memchr::memchr_iter(b'\n', self.src.as_bytes()).count() as u32;
        (
            PartialOutput {
                reply: Reply {
                    commands: self.commands,
                },
                diagnostics: self.diags,
                suppressed: self.suppressed,
                state,
                complete_lines,
            },
            checkpoint,
        )
    }
}

/// A line ending in `>` that starts with the section name, e.g. `CONTENT>>` or `CONTENT:x8>>>`.
fn looks_like_closer(trimmed: &str, closer: &str) -> bool {
    !closer.is_empty()
        && trimmed.ends_with('>')
        && trimmed.len() >= closer.len()
        && trimmed.is_char_boundary(closer.len())
        && trimmed[..closer.len()].eq_ignore_ascii_case(closer)
}

/// Reads the argument of an extension command's `@@` line and returns it in its canonical
/// spelling with the rest of the line (its options).
///
/// - `@@mcp SERVER.TOOL`: a server slug (`[a-z0-9_-]{1,64}`, as `required_mcp`) and a tool name;
/// - `@@sshexec CONNECTION`: a connection id or name;
/// - `@@sshupload CONNECTION LOCAL TO REMOTE`, `@@sshdownload CONNECTION REMOTE TO LOCAL`: the
///   workspace path is normalised like every path; the remote one is taken as written.
fn extension_argument(kind: CommandKind, rest: &str) -> Result<(String, &str), String> {
    let mut words = rest.split_whitespace();
    let first = words.next().unwrap_or("");
    let after_first = rest
        .trim_start()
        .get(first.len()..)
        .unwrap_or("")
        .trim_start();
    match kind {
        CommandKind::Mcp => {
            let (server, tool) = first.split_once('.').ok_or_else(|| {
                "write the tool as SERVER.TOOL (e.g. @@mcp files.read_file)".to_string()
            })?;
            if !crate::mcp::valid_server(server) {
                return Err(format!(
                    "\"{}\" is not a server name (lowercase letters, digits, - and _, at most 64)",
                    truncate_chars(server, 40)
                ));
            }
            if !crate::mcp::valid_tool(tool) {
                return Err(format!(
                    "\"{}\" is not a tool name (letters, digits, _ - . /, at most 128)",
                    truncate_chars(tool, 40)
                ));
            }
            Ok((first.to_string(), after_first))
        }
        CommandKind::SshExec => {
            if !crate::ssh::valid_key(first) {
                return Err("name the connection first: @@sshexec CONNECTION (its id or name, keyless-host ssh list)".into());
            }
            Ok((first.to_string(), after_first))
        }
        CommandKind::SshUpload | CommandKind::SshDownload => {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let usage = if kind == CommandKind::SshUpload {
                "write @@sshupload CONNECTION LOCAL TO REMOTE (paths without spaces)"
            } else {
                "write @@sshdownload CONNECTION REMOTE TO LOCAL (paths without spaces)"
            };
            let [conn, from, to_word, to] = parts.as_slice() else {
                return Err(usage.into());
            };
            if !to_word.eq_ignore_ascii_case("to") || !crate::ssh::valid_key(conn) {
                return Err(usage.into());
            }
            let (local, remote) = if kind == CommandKind::SshUpload {
                (*from, *to)
            } else {
                (*to, *from)
            };
            let local = path::normalize(local).map_err(|p| {
                format!("bad workspace path \"{}\": {p}", truncate_chars(local, 80))
            })?;
            crate::ssh::check_remote_path(remote)?;
            let arg = if kind == CommandKind::SshUpload {
                format!("{conn} {local} TO {remote}")
            } else {
                format!("{conn} {remote} TO {local}")
            };
            Ok((arg, ""))
        }
        _ => Ok((String::new(), rest)),
    }
}

/// An `@@mcp` call's `ARGS`: one JSON object (an empty section is `{}`). Checked without
/// building the value (the wasm build stays small); the host reads it when it calls the tool.
fn check_mcp_args(text: &str) -> Result<(), String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(format!("ARGS is not valid JSON: {e}"));
    }
    if !text.starts_with('{') {
        return Err("ARGS must be one JSON object, e.g. {\"path\": \"README.md\"}".into());
    }
    Ok(())
}

fn set_option(kind: CommandKind, key: &str, value: &str, o: &mut Options) -> Result<(), String> {
    let bad_value = |expected: &str| Err(format!("{key}={value} is not valid ({expected})"));
    match (kind, key) {
        (CommandKind::RunCommand | CommandKind::SshExec, "on_error") => {
            match value.to_ascii_lowercase().as_str() {
                "continue" => o.on_error = Some(OnError::Continue),
                "stop" => o.on_error = Some(OnError::Stop),
                _ => return bad_value("continue or stop"),
            }
        }
        (CommandKind::RunCommand | CommandKind::SshExec | CommandKind::Mcp, "timeout") => {
            let digits = value.strip_suffix('s').unwrap_or(value);
            match digits.parse::<u32>() {
                Ok(n) if (1..=MAX_TIMEOUT_SECONDS).contains(&n) => o.timeout_seconds = Some(n),
                _ => return bad_value(&format!("whole seconds from 1 to {MAX_TIMEOUT_SECONDS}")),
            }
        }
        (CommandKind::Done, "next") => {
            if value.is_empty()
                || value.len() > 64
                || !value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            {
                return bad_value("a movement name");
            }
            o.next = Some(value.to_string());
        }
        (CommandKind::Done, "status") => match value.to_ascii_lowercase().as_str() {
            "success" => o.status = Some(DoneStatus::Success),
            "aborted" => o.status = Some(DoneStatus::Aborted),
            "needs_user_input" => o.status = Some(DoneStatus::NeedsUserInput),
            _ => return bad_value("success, aborted or needs_user_input"),
        },
        _ => return Err(format!("unknown option \"{}\"", truncate_chars(key, 40))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{split_directive, Limits, Parser};

    #[test]
    fn directive_names_end_at_any_whitespace() {
        for (line, want) in [
            ("@@newfile src/a.rs", ("newfile", "src/a.rs")),
            ("@@newfile\tsrc/a.rs  ", ("newfile", "src/a.rs")),
            ("@@newfile\u{a0}src/a.rs", ("newfile", "src/a.rs")),
            ("@@new\u{e9}file\u{3000}x", ("new\u{e9}file", "x")),
            ("@@say", ("say", "")),
            ("@@", ("", "")),
        ] {
            let trimmed = line.trim_end();
            let body = &trimmed[2..];
            let slow = match body.find(char::is_whitespace) {
                Some(i) => (&body[..i], body[i..].trim()),
                None => (body, ""),
            };
            assert_eq!(split_directive(trimmed), want, "{line:?}");
            assert_eq!(slow, want, "{line:?}");
        }
    }

    #[test]
    fn line_walk_matches_a_plain_split() {
        let limits = Limits::default();
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "\n\n\n",
            "12345678\n",
            "1234567\n8\n",
            "é\nü\r\n€\n",
            &"ab\ncd\n".repeat(37),
        ] {
            let p = Parser::new(text, &limits, &[], false);
            let want: Vec<&str> = text.split('\n').collect();
            let mut got = Vec::new();
            let mut numbers = Vec::new();
            let mut i = 0;
            while i < p.end {
                got.push(p.line(i));
                numbers.push(p.lineno(i));
                i = p.next(i);
            }
            assert_eq!(got, want, "{text:?}");
            let expected: Vec<u32> = (1..=u32::try_from(want.len()).unwrap()).collect();
            assert_eq!(numbers, expected, "{text:?}");
            // Asked out of order, numbers stay right.
            if let Some(&last) = numbers.last() {
                let mut back = 0;
                let mut j = 0;
                while j < p.end {
                    back += 1;
                    assert_eq!(p.lineno(j), back);
                    j = p.next(j);
                }
                assert_eq!(back, last);
            }
        }
    }
}

#[cfg(test)]
mod reply_complete_tests {
    use super::reply_complete;

    #[test]
    fn a_reply_ends_at_eof_or_at_the_fence_after_it() {
        assert!(!reply_complete("@@say\n<<<MSG\nhi\nMSG>>>\n@@end\n"));
        assert!(reply_complete("@@next\n@@end\n@@eof\n"));
        assert!(reply_complete("\n@@next\n@@end\n@@EOF"));
        let fenced = "~~~~agentscript\n@@next\n@@end\n@@eof\n";
        assert!(!reply_complete(fenced));
        assert!(reply_complete(&format!("{fenced}~~~~\n")));
        assert!(!reply_complete("~~~~agentscript\n@@next\n~~~~\n"));
        assert!(reply_complete("```\n@@next\n@@end\n@@eof\n```"));
    }
}
