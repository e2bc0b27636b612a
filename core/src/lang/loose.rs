//! A forgiving JSON reader for model answers: it reads what models really write and names every
//! repair it made.
//!
//! Repaired: trailing and stray commas, missing commas, `//` and `/* */` comments, single
//! quotes, triple-quoted strings, unquoted keys, unquoted text values, `True`/`False`/`None`,
//! line breaks and unescaped quotes inside strings (a quote closes a string only where the text
//! after it continues the structure: `,` then a key, `}`, `]`, the end), and a value cut off at the
//! end of the answer (open strings and brackets are closed).
//!
//! Linear time: every step consumes input, a look-ahead never goes past [`LOOKAHEAD`] bytes (a
//! run of spaces it crosses is measured once), and nesting deeper than [`MAX_DEPTH`] ends the
//! reading. The reader keeps its open objects and lists on a stack of its own, not the call
//! stack.
//!
//! One reader, two uses: [`read`] makes the value; a [`Scanner`] takes the same steps without
//! making it (no allocation per value), keeping the value's [`fingerprint`], and a scan that went
//! too deep can go on as the reading from the next bracket in.

mod sink;

use memchr::{memchr, memchr3, memmem};
use serde_json::{Number, Value};
use sink::{Build, Fingerprints, Sink};
use std::cell::Cell;

pub use sink::fingerprint;

/// Deepest nesting read; deeper input is not an answer.
pub const MAX_DEPTH: usize = 100;
/// How far a look-ahead (does a key follow this comma?) may go.
const LOOKAHEAD: usize = 256;

/// A value read from the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub value: Value,
    /// Where the reading stopped (a byte offset in the text).
    pub end: usize,
    /// The reading ran into the end of the text with something still open.
    pub truncated: bool,
    /// What was repaired, each with the line it was on.
    pub repairs: Vec<String>,
}

/// What kind of value a reading makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    List,
    /// A string, a number, a boolean or null.
    Scalar,
}

/// What [`read`] would find, found by a [`Scanner`] without making the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    pub end: usize,
    pub truncated: bool,
    pub kind: Kind,
    /// The value's [`fingerprint`].
    pub fp: Option<u64>,
    /// The furthest byte the reading looked at (at least its end). The reading is a function of
    /// the text from its start to here: where those bytes are the same, so is the reading.
    pub seen: usize,
}

/// Where a value sits: what may end an unquoted value or close a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    Key,
    Obj,
    List,
}

/// An open object (with the key whose value is being read, or none for a value without a key,
/// which is dropped) or list, and where it starts.
enum Frame<S: Sink> {
    Obj {
        m: S::Obj,
        key: Option<S::Str>,
        start: usize,
    },
    List {
        items: S::List,
        start: usize,
    },
}

impl<S: Sink> Frame<S> {
    fn start(&self) -> usize {
        match self {
            Frame::Obj { start, .. } | Frame::List { start, .. } => *start,
        }
    }
}

struct Reader<'a, S: Sink> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    truncated: bool,
    repairs: Vec<String>,
    /// The line count up to a position, kept so that naming repairs stays linear.
    counted: (usize, usize),
    sink: S,
    /// The open objects and lists, innermost last.
    frames: Vec<Frame<S>>,
    /// What kind the outermost value was, once it closed.
    kind: Kind,
    /// A run of spaces measured by a look-ahead: `[from, to)` are spaces and `to` is not.
    spaces: Cell<(usize, usize)>,
    /// The last answer of [`Reader::key_at`], and the furthest byte it looked at.
    key: Cell<Option<(usize, bool, usize)>>,
    /// The furthest byte looked at so far.
    seen: Cell<usize>,
    /// For a scan ([`Sink::CUT`]): the values the end of the text cut off, as each closed there
    /// (start, kind, value). Each is what a reading from its own start finds (see
    /// [`Scanner::cut_inside`]).
    cut: Vec<(usize, Kind, S::Val)>,
}

/// Nesting deeper than [`MAX_DEPTH`].
#[derive(Debug)]
struct TooDeep;

/// Reads one value starting at byte `start` of `text` (a `{`, a `[`, or anything for a whole
/// block). `None` when the nesting is too deep.
#[must_use]
pub fn read(text: &str, start: usize) -> Option<Read> {
    read_seen(text, start).map(|(r, _)| r)
}

/// What [`read`] finds, and the furthest byte the reading looked at (as [`Scanned::seen`]): the
/// reading a scan would have found, with its value made.
pub(crate) fn read_seen(text: &str, start: usize) -> Option<(Read, usize)> {
    let mut r = Reader::new(text, Build);
    r.i = start;
    let value = r.run().ok()?;
    let seen = r.seen.get().max(r.i);
    Some((
        Read {
            value,
            end: r.i,
            truncated: r.truncated,
            repairs: r.repairs,
        },
        seen,
    ))
}

/// Reads as [`read`] does without making the values: where each reading ends, whether it was cut
/// off, and the fingerprint of its value. Its buffers serve one scan after another.
pub struct Scanner<'a> {
    r: Reader<'a, Fingerprints>,
    start: usize,
    /// The last scan went too deep: it waits where it stopped.
    deep: bool,
}

impl std::fmt::Debug for Scanner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("start", &self.start)
            .field("at", &self.r.i)
            .field("deep", &self.deep)
            .finish_non_exhaustive()
    }
}

impl<'a> Scanner<'a> {
    #[must_use]
    pub fn new(text: &'a str) -> Self {
        Self {
            r: Reader::new(text, Fingerprints::default()),
            start: 0,
            deep: false,
        }
    }

    /// After a scan cut off by the end of the text: the values inside it that the end cut off
    /// too, each with what a scan from its start finds, without scanning again. The reading from
    /// such a start takes the same steps as the last scan took from there (what a value reads
    /// depends on the values it is in only once it closes, and this one never closed), so it
    /// ends at the same place, cut off, with the same value.
    #[must_use]
    pub fn cut_inside(&self) -> Vec<(usize, Scanned)> {
        if self.deep || !self.r.truncated {
            return Vec::new();
        }
        let seen = self.r.seen.get().max(self.r.i);
        self.r
            .cut
            .iter()
            .filter(|(s, _, _)| *s > self.start)
            .map(|(s, kind, fp)| {
                (
                    *s,
                    Scanned {
                        end: self.r.i,
                        truncated: true,
                        kind: *kind,
                        fp: *fp,
                        seen,
                    },
                )
            })
            .collect()
    }

    /// What [`read`] finds from `start`, or `None` when it goes too deep: the scan then waits
    /// where it stopped, for [`Scanner::resume`].
    pub fn scan(&mut self, start: usize) -> Option<Scanned> {
        self.r.reset(start);
        self.start = start;
        let first = self.r.begin(Ctx::Top);
        let value = first.and_then(|v| self.r.go(v));
        self.finish(value)
    }

    /// After a scan that went too deep: where its second open value starts. The reading from
    /// there takes the same steps one level shallower, so [`Scanner::resume`] can go on with it.
    #[must_use]
    pub fn next_in(&self) -> Option<usize> {
        if !self.deep {
            return None;
        }
        self.r.frames.get(1).map(Frame::start)
    }

    /// What [`read`] finds from [`Scanner::next_in`], going on from where the last scan stopped.
    pub fn resume(&mut self) -> Option<Scanned> {
        let start = self.next_in()?;
        self.r.frames.remove(0);
        self.start = start;
        let ctx = match self.r.frames.last() {
            Some(Frame::Obj { .. }) => Ctx::Obj,
            _ => Ctx::List,
        };
        let first = self.r.begin(ctx);
        let value = first.and_then(|v| self.r.go(v));
        self.finish(value)
    }

    /// Where the last scan stopped (a byte offset in the text).
    #[must_use]
    pub fn at(&self) -> usize {
        self.r.i
    }

    fn finish(&mut self, value: Result<Option<u64>, TooDeep>) -> Option<Scanned> {
        self.deep = value.is_err();
        Some(Scanned {
            fp: value.ok()?,
            end: self.r.i,
            truncated: self.r.truncated,
            kind: self.r.kind,
            seen: self.r.seen.get().max(self.r.i),
        })
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl<'a, S: Sink> Reader<'a, S> {
    fn new(text: &'a str, sink: S) -> Self {
        Reader {
            s: text,
            b: text.as_bytes(),
            i: 0,
            truncated: false,
            repairs: Vec::new(),
            counted: (0, 1),
            sink,
            frames: Vec::new(),
            kind: Kind::Scalar,
            spaces: Cell::new((0, 0)),
            key: Cell::new(None),
            seen: Cell::new(0),
            cut: Vec::new(),
        }
    }

    /// Reads the value at `self.i`.
    fn run(&mut self) -> Result<S::Val, TooDeep> {
        let first = self.begin(Ctx::Top)?;
        self.go(first)
    }

    /// Reads on until the outermost value closes. `ready`: a value just read, for the innermost
    /// open value (`None`: one has just opened).
    fn go(&mut self, mut ready: Option<S::Val>) -> Result<S::Val, TooDeep> {
        loop {
            if let Some(v) = ready.take() {
                match self.frames.last_mut() {
                    None => return Ok(v),
                    Some(Frame::Obj { m, key, .. }) => match key.take() {
                        Some(k) => {
                            self.sink.insert(m, k, v);
                            self.after_member(b'}');
                        }
                        None => self.note("dropped a value that had no key"),
                    },
                    Some(Frame::List { items, .. }) => {
                        self.sink.push(items, v);
                        self.after_member(b']');
                    }
                }
            }
            ready = match self.frames.last() {
                Some(Frame::Obj { .. }) => self.object()?,
                Some(Frame::List { .. }) => self.list()?,
                // Not reached: a value that opens leaves a frame.
                None => Some(self.sink.literal(Value::Null)),
            };
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// The byte at `j`, for a look-ahead (which marks how far the reading looked).
    fn at(&self, j: usize) -> Option<u8> {
        self.saw(j);
        self.b.get(j).copied()
    }

    /// The reading looked at byte `j`.
    fn saw(&self, j: usize) {
        if self.seen.get() < j {
            self.seen.set(j);
        }
    }

    fn line(&mut self) -> usize {
        let to = self.i.min(self.b.len());
        let (from, mut line) = if to >= self.counted.0 {
            self.counted
        } else {
            (0, 1)
        };
        line += memchr::memchr_iter(b'\n', &self.b[from..to]).count();
        self.counted = (to, line);
        line
    }

    fn note(&mut self, what: &str) {
        // The first repairs are worth naming; a flood of them is not.
        if S::NOTES && self.repairs.len() < 32 {
            let line = self.line();
            self.repairs.push(format!("{what} (line {line})"));
        }
    }

    fn skip_space(&mut self) {
        loop {
            while self.peek().is_some_and(is_space) {
                self.i += 1;
            }
            let comment = match (self.peek(), self.at(self.i + 1)) {
                (Some(b'/'), Some(b'/')) => {
                    self.i = memchr(b'\n', &self.b[self.i..]).map_or(self.b.len(), |k| self.i + k);
                    true
                }
                (Some(b'/'), Some(b'*')) => {
                    let rest = &self.b[self.i + 2..];
                    self.i = memmem::find(rest, b"*/").map_or(self.b.len(), |k| self.i + 2 + k + 2);
                    true
                }
                _ => false,
            };
            if !comment {
                return;
            }
            self.note("removed a comment");
        }
    }

    /// Begins the value at `self.i` (after spaces): a scalar is read at once; an object or a
    /// list opens (`None`), to be read on by [`Reader::go`].
    fn begin(&mut self, ctx: Ctx) -> Result<Option<S::Val>, TooDeep> {
        self.skip_space();
        let v = match self.peek() {
            None => {
                self.truncated = true;
                self.note("a value was cut off at the end; read as null");
                self.sink.literal(Value::Null)
            }
            Some(c @ (b'{' | b'[')) => {
                if self.frames.len() >= MAX_DEPTH {
                    return Err(TooDeep);
                }
                let start = self.i;
                self.i += 1;
                let frame = if c == b'{' {
                    Frame::Obj {
                        m: self.sink.object(),
                        key: None,
                        start,
                    }
                } else {
                    Frame::List {
                        items: self.sink.list(),
                        start,
                    }
                };
                self.frames.push(frame);
                return Ok(None);
            }
            Some(b'"') if self.triple_at() => self.triple(),
            Some(q @ (b'"' | b'\'')) => {
                if q == b'\'' {
                    self.note("read a single-quoted string");
                }
                let s = self.string(q, ctx);
                self.sink.string(s)
            }
            Some(_) => self.unquoted(ctx),
        };
        Ok(Some(v))
    }

    fn triple_at(&self) -> bool {
        self.saw(self.i + 2);
        self.b[self.i..].starts_with(b"\"\"\"")
    }

    /// Closes the innermost open value.
    fn close(&mut self) -> Option<S::Val> {
        let v = match self.frames.pop()? {
            Frame::Obj { m, .. } => {
                self.kind = Kind::Object;
                self.sink.object_end(m)
            }
            Frame::List { items, .. } => {
                self.kind = Kind::List;
                self.sink.list_end(items)
            }
        };
        Some(v)
    }

    /// Closes the innermost open value at the end of the text, which cut it off.
    fn close_cut(&mut self) -> Option<S::Val> {
        let start = self.frames.last().map(Frame::start);
        let v = self.close()?;
        if let (true, Some(start)) = (S::CUT, start) {
            self.cut.push((start, self.kind, v.clone()));
        }
        Some(v)
    }

    /// Sets the key whose value the innermost (object) is about to read.
    fn expect(&mut self, k: Option<S::Str>) {
        if let Some(Frame::Obj { key, .. }) = self.frames.last_mut() {
            *key = k;
        }
    }

    /// Reads the innermost open object on: to its end (its value), or to the start of a value
    /// inside it (that value, if it is read at once).
    fn object(&mut self) -> Result<Option<S::Val>, TooDeep> {
        loop {
            self.skip_space();
            match self.peek() {
                None => {
                    self.truncated = true;
                    self.note("closed an object cut off at the end");
                    return Ok(self.close_cut());
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(self.close());
                }
                Some(b']') => {
                    self.i += 1;
                    self.note("read `]` as the end of an object");
                    return Ok(self.close());
                }
                Some(b',') => {
                    self.i += 1;
                    self.note("removed a stray comma");
                    continue;
                }
                Some(b'{' | b'[') => {
                    // A value with no key: read, then dropped.
                    self.expect(None);
                    return self.begin(Ctx::Obj);
                }
                _ => {}
            }
            let key = match self.peek() {
                Some(q @ (b'"' | b'\'')) => {
                    if q == b'\'' {
                        self.note("read a single-quoted key");
                    }
                    self.string(q, Ctx::Key)
                }
                _ => {
                    let k = self.unquoted_key();
                    if S::NOTES {
                        self.note(&format!("read the unquoted key {k:?}"));
                    }
                    let mut key = S::Str::default();
                    S::push_str(&mut key, k);
                    key
                }
            };
            self.skip_space();
            if self.peek() == Some(b':') {
                self.i += 1;
                self.expect(Some(key));
                return self.begin(Ctx::Obj);
            }
            if self.peek().is_none() {
                self.truncated = true;
            }
            if S::NOTES {
                let shown = S::show(&key);
                self.note(&format!("the key {shown} had no value; read as null"));
            }
            let null = self.sink.literal(Value::Null);
            if let Some(Frame::Obj { m, .. }) = self.frames.last_mut() {
                self.sink.insert(m, key, null);
            }
            self.after_member(b'}');
        }
    }

    /// Past a member of an object or a list: its comma, if any.
    fn after_member(&mut self, close: u8) {
        self.skip_space();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                self.skip_space();
                if self.peek() == Some(close) {
                    self.note("removed a trailing comma");
                }
            }
            Some(b'}' | b']') | None => {}
            Some(_) => self.note("added a missing comma"),
        }
    }

    /// Reads the innermost open list on, as [`Reader::object`] does.
    fn list(&mut self) -> Result<Option<S::Val>, TooDeep> {
        loop {
            self.skip_space();
            match self.peek() {
                None => {
                    self.truncated = true;
                    self.note("closed a list cut off at the end");
                    return Ok(self.close_cut());
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(self.close());
                }
                Some(b'}') => {
                    self.i += 1;
                    self.note("read `}` as the end of a list");
                    return Ok(self.close());
                }
                Some(b',') => {
                    self.i += 1;
                    self.note("removed a stray comma");
                }
                _ => return self.begin(Ctx::List),
            }
        }
    }

    /// A `"` or `'` string; the opening quote is at `self.i`.
    fn string(&mut self, q: u8, ctx: Ctx) -> S::Str {
        self.i += 1;
        let mut out = S::Str::default();
        let (mut broke, mut kept) = (false, false);
        loop {
            // Copy the plain run up to the next byte that matters.
            let run =
                find3(q, b'\\', b'\n', &self.b[self.i..]).map_or(self.b.len(), |k| self.i + k);
            S::push_str(&mut out, &self.s[self.i..run]);
            self.i = run;
            match self.peek() {
                None => {
                    self.truncated = true;
                    self.note("closed a string cut off at the end");
                    return out;
                }
                Some(b'\n') => {
                    if !broke {
                        broke = true;
                        self.note("kept a line break inside a string");
                    }
                    S::push_char(&mut out, '\n');
                    self.i += 1;
                }
                Some(b'\\') => self.escape(&mut out),
                Some(_) => {
                    if self.closes(ctx) {
                        self.i += 1;
                        return out;
                    }
                    if !kept {
                        kept = true;
                        self.note("kept a quote inside a string that was not escaped");
                    }
                    S::push_char(&mut out, char::from(q));
                    self.i += 1;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut S::Str) {
        self.i += 1;
        let Some(c) = self.peek() else {
            return;
        };
        self.i += 1;
        match c {
            b'n' => S::push_char(out, '\n'),
            b't' => S::push_char(out, '\t'),
            b'r' => S::push_char(out, '\r'),
            b'b' => S::push_char(out, '\u{8}'),
            b'f' => S::push_char(out, '\u{c}'),
            b'u' => {
                self.saw(self.i + 9);
                let hex = |r: &Self, at: usize| {
                    r.s.get(at..at + 4)
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                };
                match hex(self, self.i) {
                    Some(hi @ 0xD800..=0xDBFF)
                        if self.b[self.i + 4..].starts_with(b"\\u")
                            && hex(self, self.i + 6)
                                .is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo)) =>
                    {
                        let lo = hex(self, self.i + 6).unwrap_or(0xDC00);
                        let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        S::push_char(out, char::from_u32(c).unwrap_or('\u{FFFD}'));
                        self.i += 10;
                    }
                    Some(u) => {
                        S::push_char(out, char::from_u32(u).unwrap_or('\u{FFFD}'));
                        self.i += 4;
                    }
                    None => S::push_char(out, 'u'),
                }
            }
            _ => {
                // `\"`, `\\`, `\/`, `\'`, and any other escaped character as itself.
                let start = self.i - 1;
                let len = self.s[start..].chars().next().map_or(1, char::len_utf8);
                S::push_str(out, &self.s[start..start + len]);
                self.i = start + len;
            }
        }
    }

    /// Whether the quote at `self.i` closes the string: the text after it continues the
    /// structure around the string.
    fn closes(&self, ctx: Ctx) -> bool {
        let k = self.skip_from(self.i + 1);
        let next = self.at(k);
        let crossed_line = || memchr(b'\n', &self.b[self.i + 1..k]).is_some();
        match ctx {
            Ctx::Top => true,
            Ctx::Key => matches!(next, None | Some(b':' | b'}' | b',')) || crossed_line(),
            Ctx::Obj | Ctx::List => {
                let close = if ctx == Ctx::Obj { b'}' } else { b']' };
                match next {
                    None => true,
                    Some(c) if c == close => true,
                    Some(b',') => {
                        let k = self.skip_from(k + 1);
                        match self.at(k) {
                            None => true,
                            Some(c) if c == close => true,
                            Some(c) if ctx == Ctx::List => {
                                matches!(c, b'"' | b'\'' | b'{' | b'[' | b'-' | b'0'..=b'9')
                                    || self.word_at(k)
                            }
                            Some(_) => self.key_at(k),
                        }
                    }
                    // A line break, then a key: the comma was left out.
                    Some(_) => ctx == Ctx::Obj && crossed_line() && self.key_at(k),
                }
            }
        }
    }

    /// Where the run of spaces at `j` ends. The last run measured is kept: look-aheads from
    /// within one run (a line break after another) cross it once.
    fn spaces_end(&self, j: usize) -> usize {
        let (from, to) = self.spaces.get();
        if from <= j && j <= to {
            self.saw(to);
            return to;
        }
        let mut k = j;
        while self.at(k).is_some_and(is_space) {
            k += 1;
        }
        self.spaces.set((j, k));
        k
    }

    /// Past spaces and comments from `j`, looking at most [`LOOKAHEAD`] bytes into comments.
    fn skip_from(&self, mut j: usize) -> usize {
        let limit = j + LOOKAHEAD;
        loop {
            j = self.spaces_end(j);
            if j > limit || self.at(j) != Some(b'/') {
                return j;
            }
            match self.at(j + 1) {
                Some(b'/') => {
                    while self.at(j).is_some_and(|c| c != b'\n') && j <= limit {
                        j += 1;
                    }
                }
                Some(b'*') => {
                    let end = (j + LOOKAHEAD).min(self.b.len());
                    match memmem::find(&self.b[(j + 2).min(end)..end], b"*/") {
                        Some(k) => j += 2 + k + 2,
                        None => {
                            self.saw(end);
                            return j;
                        }
                    }
                }
                _ => return j,
            }
        }
    }

    /// `true`, `false` or `null` at `j`, ending where a list item ends.
    fn word_at(&self, j: usize) -> bool {
        // On bytes: a look-ahead may stop inside a character.
        let rest = self.b.get(j..).unwrap_or_default();
        self.saw(j + 5);
        ["true", "false", "null"].iter().any(|w| {
            rest.starts_with(w.as_bytes())
                && !self
                    .at(j + w.len())
                    .is_some_and(|c| c.is_ascii_alphanumeric())
        })
    }

    /// Whether a key (`"name":`, `'name':` or `name:` on one line) starts at `j`. The last
    /// answer is kept: line breaks in one run of spaces all look at the same place.
    fn key_at(&self, j: usize) -> bool {
        if let Some((at, is, seen)) = self.key.get() {
            if at == j {
                self.saw(seen);
                return is;
            }
        }
        let before = self.seen.replace(j);
        let is = self.key_at_uncached(j);
        let seen = self.seen.get();
        self.saw(before);
        self.key.set(Some((j, is, seen)));
        is
    }

    fn key_at_uncached(&self, j: usize) -> bool {
        let end = (j + LOOKAHEAD).min(self.b.len());
        match self.at(j) {
            Some(q @ (b'"' | b'\'')) => {
                let Some(k) = memchr::memchr2(q, b'\n', &self.b[j + 1..end]) else {
                    self.saw(end);
                    return false;
                };
                let after = j + 1 + k;
                if self.at(after) != Some(q) {
                    return false;
                }
                let mut m = after + 1;
                while self.at(m).is_some_and(|c| c == b' ' || c == b'\t') {
                    m += 1;
                }
                self.at(m) == Some(b':')
            }
            Some(_) => {
                let body = &self.b[j..end];
                let Some(k) = body.iter().position(|&c| {
                    matches!(
                        c,
                        b':' | b',' | b'{' | b'}' | b'[' | b']' | b'"' | b'\'' | b'\n'
                    )
                }) else {
                    self.saw(end);
                    return false;
                };
                self.saw(j + k);
                body[k] == b':' && body[..k].iter().any(|c| !is_space(*c))
            }
            None => false,
        }
    }

    /// An unquoted key: up to `:` (or whatever cannot be in a key).
    fn unquoted_key(&mut self) -> &'a str {
        let start = self.i;
        while self.peek().is_some_and(|c| {
            !matches!(
                c,
                b':' | b',' | b'{' | b'}' | b'[' | b']' | b'"' | b'\'' | b'\n'
            )
        }) {
            self.i += 1;
        }
        if self.i == start && self.peek().is_some_and(|c| c != b':') {
            // Nothing a key can be made of: step over it.
            self.i += 1;
        }
        let s: &'a str = self.s;
        s[start..self.i].trim()
    }

    /// Text without quotes: a literal, a number, or a string running to where the structure
    /// continues.
    fn unquoted(&mut self, ctx: Ctx) -> S::Val {
        let start = self.i;
        while let Some(c) = self.peek() {
            let stop = match (ctx, c) {
                (Ctx::Top, _) => false,
                (Ctx::List, b',' | b']' | b'}') => true,
                (Ctx::Obj | Ctx::Key, b'}') => true,
                (Ctx::Obj | Ctx::Key, b',') => {
                    let k = self.skip_from(self.i + 1);
                    self.at(k).is_none_or(|n| n == b'}') || self.key_at(k)
                }
                (Ctx::Obj, b'\n') => {
                    let k = self.skip_from(self.i);
                    let stop = self.at(k).is_some_and(|n| n == b'}') || self.key_at(k);
                    if !stop && k == self.spaces_end(self.i) && self.at(k) != Some(b'/') {
                        // No comment after the run of spaces: every line break in it looks at
                        // the same place and goes on as this one does, so the run is crossed.
                        self.i = k;
                        continue;
                    }
                    stop
                }
                _ => false,
            };
            if stop {
                break;
            }
            self.i += 1;
        }
        // Keep the boundary on a character (only ASCII bytes stop the loop, so it is one).
        let s: &'a str = self.s;
        let text = s[start..self.i].trim();
        if let Some(v) = literal(text) {
            return self.sink.literal(v);
        }
        if text.is_empty() {
            self.note("a value was missing; read as null");
            return self.sink.literal(Value::Null);
        }
        if S::NOTES {
            let shown: String = text.chars().take(40).collect();
            self.note(&format!("read unquoted text as a string: {shown:?}"));
        }
        self.sink.text(text)
    }

    /// A `"""…"""` string, as written.
    fn triple(&mut self) -> S::Val {
        self.note("read a triple-quoted string");
        self.i += 3;
        let s: &'a str = self.s;
        let rest = &s[self.i..];
        match memmem::find(rest.as_bytes(), b"\"\"\"") {
            Some(k) => {
                self.i += k + 3;
                self.sink.text(&rest[..k])
            }
            None => {
                self.truncated = true;
                self.i = self.b.len();
                self.sink.text(rest)
            }
        }
    }
}

impl Reader<'_, Fingerprints> {
    /// Ready for a new scan from `start`.
    fn reset(&mut self, start: usize) {
        self.i = start;
        self.truncated = false;
        self.frames.clear();
        self.sink.clear();
        self.kind = Kind::Scalar;
        self.seen.set(start);
        self.cut.clear();
    }
}

/// The first of `a`, `b` and `c` in `hay`: most runs in a string are short, so a plain look at the
/// first bytes comes before the vectorised search.
fn find3(a: u8, b: u8, c: u8, hay: &[u8]) -> Option<usize> {
    let head = hay.len().min(16);
    if let Some(k) = hay[..head].iter().position(|&x| x == a || x == b || x == c) {
        return Some(k);
    }
    memchr3(a, b, c, &hay[head..]).map(|k| head + k)
}

/// `0`, or up to 19 digits not starting with `0`: a `u64` as JSON writes it.
fn plain_count(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 19
        && b.iter().all(u8::is_ascii_digit)
        && (b[0] != b'0' || b.len() == 1)
}

/// A JSON literal or number written without quotes, in the spellings models use.
fn literal(t: &str) -> Option<Value> {
    match t {
        "true" | "True" | "TRUE" => Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => Some(Value::Bool(false)),
        "null" | "None" | "NULL" | "nil" => Some(Value::Null),
        // A plain count, read without a parser (what serde_json makes of it: a positive integer).
        _ if plain_count(t) => t.parse::<u64>().ok().map(|n| Value::Number(n.into())),
        _ => serde_json::from_str::<Number>(t).ok().map(Value::Number),
    }
}

#[cfg(test)]
mod tests;
