//! The schema-aligned reading of a model's answer ([`read_answer`]): every place a value may
//! start is a candidate, each read with [`loose`]'s repairs, and the one that fits the shape with
//! the fewest repairs wins.
//!
//! Candidates are found by [`loose::Scanner`], which reads without making the values: a
//! candidate's value is made only when something needs it (checking it against the shape, telling
//! it from an earlier candidate whose fingerprint is the same). A list never fits an object shape,
//! nor an object or a list a number or a boolean, whatever is in it: such a candidate's value is
//! never made. The first candidate in the prose whose content matters to the shape will be made
//! whatever follows, so it is read once, made, instead of scanned and read again.

use super::{coerce, Coercions};
use crate::lang::ast::Shape;
use crate::lang::loose::{self, fingerprint, Kind, Scanner, MAX_DEPTH};
use serde_json::{Map, Value};
use std::ops::Range;

/// How many candidate values [`read_answer`] weighs at most.
pub const MAX_CANDIDATES: usize = 64;

/// A model's answer read against a shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The value (coerced to the shape), or why no candidate fits.
    pub value: Result<Value, String>,
    /// Every repair and coercion that reading the chosen candidate took.
    pub repairs: Vec<String>,
    /// The chosen candidate's score: 0 when it is strict JSON that fits as it is; each repair
    /// and coercion adds. The lowest score wins; on a tie, the first candidate.
    pub score: u32,
    /// Where the chosen value came from: "the whole answer", "fenced block 2", "line 7".
    pub source: String,
    /// How many candidates were weighed.
    pub candidates: usize,
}

struct Candidate {
    /// Where the value is read from, if it is read lazily: the text (a range of the answer) and
    /// the start in it.
    at: Option<(Range<usize>, usize)>,
    /// The value and the repairs reading it took, once made.
    made: Option<(Value, Vec<String>)>,
    kind: Kind,
    fp: Option<u64>,
    /// For a value read lazily: the bytes of the answer its reading looked at, and whether it
    /// looked past the end of its text. Readings of the same bytes are the same reading.
    window: Option<(Range<usize>, bool)>,
    /// A value made as it was read, whose fingerprint is taken only when a later candidate is
    /// told from it.
    unprinted: bool,
    /// A fenced block left open at the end (a repair, once the value is read).
    open_fence: bool,
    source: String,
    /// A candidate found in prose (objects there may together be the list a shape wants).
    prose: bool,
    /// The forgiving reader ran into the end of the text with the value still open (a reply
    /// still being written, or cut off).
    truncated: bool,
}

impl Candidate {
    /// Its fingerprint, for a made value later candidates are told from.
    fn printed(mut self) -> Self {
        self.fp = self.made.as_ref().and_then(|(v, _)| fingerprint(v));
        self
    }

    /// A value already made: strict JSON, or the answer's text (with no fingerprint: see
    /// [`Candidate::printed`]).
    fn made(value: Value, repairs: Vec<String>, source: String) -> Self {
        let kind = kind_of(&value);
        Candidate {
            at: None,
            window: None,
            unprinted: false,
            fp: None,
            made: Some((value, repairs)),
            kind,
            open_fence: false,
            source,
            prose: false,
            truncated: false,
        }
    }

    /// A value a scan found at `start` of `text`.
    fn scanned(text: Range<usize>, start: usize, r: loose::Scanned, source: String) -> Self {
        let len = text.end - text.start;
        let window = text.start + start..text.start + len.min(r.seen + 1);
        Candidate {
            window: Some((window, r.seen >= len)),
            unprinted: false,
            at: Some((text, start)),
            made: None,
            kind: r.kind,
            fp: r.fp,
            open_fence: false,
            source,
            prose: false,
            truncated: r.truncated,
        }
    }

    /// Takes the fingerprint of a value made as it was read, the first time it is needed: the
    /// one a scan would have found.
    fn print(&mut self) {
        if std::mem::take(&mut self.unprinted) {
            self.fp = self.made.as_ref().and_then(|(v, _)| fingerprint(v));
        }
    }

    /// The value and its repairs, made now if they were not yet.
    fn get(&mut self, answer: &str) -> (&Value, &[String]) {
        let (at, open_fence) = (&self.at, self.open_fence);
        let (v, repairs) = self.made.get_or_insert_with(|| {
            let read = at
                .as_ref()
                .and_then(|(text, start)| loose::read(answer.get(text.clone())?, *start));
            // A scan found the value, so the reading does (`Null` is never reached).
            let (v, mut repairs) = read.map_or((Value::Null, Vec::new()), |r| (r.value, r.repairs));
            if open_fence {
                repairs.push("read a fenced block left open at the end".into());
            }
            (v, repairs)
        });
        (v, repairs)
    }

    /// Whether `self` holds the same value as `other`: different kinds or fingerprints say no at
    /// once, and readings of the same bytes say yes; otherwise the values are made and compared.
    fn same(&mut self, other: &mut Candidate, answer: &str) -> bool {
        if self.kind != other.kind {
            return false;
        }
        self.print();
        other.print();
        if let (Some(a), Some(b)) = (self.fp, other.fp) {
            if a != b {
                return false;
            }
        }
        if let (Some((a, a_end)), Some((b, b_end))) = (&self.window, &other.window) {
            if a_end == b_end
                && answer.as_bytes().get(a.clone()) == answer.as_bytes().get(b.clone())
            {
                return true;
            }
        }
        self.get(answer).0 == other.get(answer).0
    }
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Object(_) => Kind::Object,
        Value::Array(_) => Kind::List,
        _ => Kind::Scalar,
    }
}

/// Whether what is in a value of `kind` matters to `shape`: a list never fits an object shape,
/// nor an object or a list a number or a boolean. Where it does not, checking an empty value of
/// the kind refuses it with the same words as checking the value.
fn content_matters(kind: Kind, shape: &Shape) -> bool {
    !matches!(
        (kind, shape),
        (Kind::List, Shape::Object(_))
            | (Kind::Object | Kind::List, Shape::Number | Shape::Boolean)
    )
}

/// Whether `v` fits `shape` with no coercion, so that checking it makes `v` itself: every item
/// fits, and an object has the declared fields, in their order, and no others.
fn fits_as_is(v: &Value, shape: &Shape) -> bool {
    match (shape, v) {
        (Shape::Json, _)
        | (Shape::String, Value::String(_))
        | (Shape::Number, Value::Number(_))
        | (Shape::Boolean, Value::Bool(_))
        | (Shape::List(None), Value::Array(_)) => true,
        (Shape::List(Some(t)), Value::Array(items)) => items.iter().all(|x| fits_as_is(x, t)),
        (Shape::Object(fields), Value::Object(m)) => {
            m.len() == fields.len()
                && m.iter()
                    .zip(fields)
                    .all(|((k, x), f)| *k == f.name && fits_as_is(x, &f.shape))
        }
        _ => false,
    }
}

fn empty(kind: Kind) -> Value {
    match kind {
        Kind::Object => Value::Object(Map::new()),
        Kind::List => Value::Array(Vec::new()),
        Kind::Scalar => Value::Null,
    }
}

/// Reads a model's answer against `shape`, schema-aligned: the whole answer, every fenced block
/// and every `{`/`[` in the prose are candidates, each read with [`loose`]'s repairs; each is
/// coerced to the shape, and the one that fits with the fewest repairs wins. A `string` shape
/// takes the answer as it is; a `list` shape also weighs all the objects in the prose together.
/// Linear in the answer: at most [`MAX_CANDIDATES`] candidates, and the prose is read once
/// except after a candidate cut off by the end or one nested too deep (bounded by a budget of
/// eight times the length, and at most 256 KiB more than the length).
#[must_use]
pub fn read_answer(answer: &str, shape: &Shape) -> Reading {
    read_making(answer, shape, true)
}

/// [`read_answer`]; `make`: see [`candidates`] (the reading is the same either way).
fn read_making(answer: &str, shape: &Shape, make: bool) -> Reading {
    if *shape == Shape::String {
        return Reading {
            value: Ok(Value::String(answer.to_string())),
            repairs: Vec::new(),
            score: 0,
            source: "the whole answer".into(),
            candidates: 1,
        };
    }
    let mut cands = candidates(answer, shape, make);
    let mut best: Option<(u32, usize, Value, Vec<String>)> = None;
    let mut first_refusal: Option<(String, usize)> = None;
    for (i, cand) in cands.iter_mut().enumerate() {
        if content_matters(cand.kind, shape) && fits_as_is(cand.get(answer).0, shape) {
            // What coercing would make is the value itself: taken, not copied.
            let score = u32::try_from(cand.get(answer).1.len()).unwrap_or(u32::MAX);
            if best.as_ref().is_none_or(|b| score < b.0) {
                let (v, repairs) = cand.made.take().unwrap_or_default();
                best = Some((score, i, v, repairs));
            }
            continue;
        }
        let mut c = Coercions::default();
        let checked = if content_matters(cand.kind, shape) {
            coerce(cand.get(answer).0, shape, "", &mut c)
        } else {
            coerce(&empty(cand.kind), shape, "", &mut c)
        };
        match checked {
            Ok(v) => {
                let repairs = cand.get(answer).1;
                let score = u32::try_from(repairs.len()).unwrap_or(u32::MAX) + c.score;
                if best.as_ref().is_none_or(|b| score < b.0) {
                    let mut repairs = repairs.to_vec();
                    repairs.extend(c.notes);
                    best = Some((score, i, v, repairs));
                }
            }
            Err(why) => {
                if first_refusal.is_none() {
                    first_refusal = Some((why, i));
                }
            }
        }
    }
    let n = cands.len();
    let source = |i: usize| cands.get(i).map_or_else(String::new, |c| c.source.clone());
    match best {
        Some((score, i, v, repairs)) => Reading {
            value: Ok(v),
            repairs,
            score,
            source: source(i),
            candidates: n,
        },
        None => {
            let why = match first_refusal {
                None => match shape {
                    Shape::Object(_) => "the answer holds no JSON object".to_string(),
                    _ => "the answer holds no JSON value".to_string(),
                },
                Some((why, _)) if n == 1 => why,
                Some((why, i)) => {
                    let source = source(i);
                    format!("{why} (in {source}; none of the {n} candidates fits)")
                }
            };
            Reading {
                value: Err(why),
                repairs: Vec::new(),
                score: 0,
                source: String::new(),
                candidates: n,
            }
        }
    }
}

/// Line numbers of increasing offsets, counted once.
struct Lines<'a> {
    text: &'a [u8],
    at: usize,
    line: usize,
}

impl Lines<'_> {
    fn of(&mut self, to: usize) -> usize {
        let to = to.min(self.text.len());
        if to < self.at {
            (self.at, self.line) = (0, 1);
        }
        self.line += memchr::memchr_iter(b'\n', &self.text[self.at..to]).count();
        self.at = to;
        self.line
    }
}

/// `t` as strict JSON. Only text that starts and ends as JSON can is parsed, once: what a
/// parse that fails has made is in proportion to what it read.
fn strict(t: &str) -> Option<Value> {
    let b = t.as_bytes();
    let (first, last) = (*b.first()?, *b.last()?);
    if !matches!(last, b'}' | b']' | b'"' | b'0'..=b'9' | b'e' | b'l')
        || !matches!(
            first,
            b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
        )
    {
        return None;
    }
    serde_json::from_str::<Value>(t).ok()
}

/// The answer's candidates. `make`: the first one in the prose whose content matters to `shape`
/// is made as it is read (it will be made anyway), not scanned and then read.
fn candidates(answer: &str, shape: &Shape, make: bool) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let t = answer.trim();
    if let Some(v) = strict(t) {
        out.push(Candidate::made(v, Vec::new(), "the whole answer".into()));
        return out;
    }
    fenced(answer, &mut out);
    // `{` and `[` in the prose (and in the blocks: a block's label can hide its start).
    let first_prose = out.len();
    prose(answer, &mut out, make.then_some(shape));
    if matches!(shape, Shape::List(_)) {
        let (mut objects, mut repairs, mut truncated) = (Vec::new(), Vec::new(), false);
        for c in out[first_prose..]
            .iter_mut()
            .filter(|c| c.prose && c.kind == Kind::Object)
        {
            truncated |= c.truncated;
            let (v, r) = c.get(answer);
            objects.push(v.clone());
            repairs.extend(r.iter().cloned());
        }
        if objects.len() > 1 {
            let source = format!("the {} objects in the answer, as a list", objects.len());
            let mut all = Candidate::made(Value::Array(objects), repairs, source);
            all.truncated = truncated;
            out.push(all);
        }
    }
    if out.is_empty() && !t.is_empty() && !matches!(shape, Shape::Object(_)) {
        // No JSON at all: the text itself, for a shape a text can fill (a boolean, a number).
        out.push(Candidate::made(
            Value::String(t.to_string()),
            vec!["read the answer's text as a string".into()],
            "the answer's text".into(),
        ));
    }
    out
}

/// Fenced blocks, the last one possibly left open at the end.
fn fenced(answer: &str, out: &mut Vec<Candidate>) {
    let fence = memchr::memmem::Finder::new(b"```");
    let b = answer.as_bytes();
    let mut pos = 0;
    let mut k = 0;
    while out.len() < MAX_CANDIDATES {
        let Some(open) = fence.find(&b[pos..]).map(|o| pos + o) else {
            break;
        };
        let body = memchr::memchr(b'\n', &b[open + 3..]).map_or(answer.len(), |e| open + 3 + e + 1);
        let (content, next, closed) = match fence.find(&b[body..]) {
            Some(e) => (body..body + e, body + e + 3, true),
            None => (body..answer.len(), answer.len(), false),
        };
        k += 1;
        let raw = &answer[content.clone()];
        let inner = raw.trim();
        if !inner.is_empty() {
            let source = || format!("fenced block {k}");
            if let Some(v) = strict(inner) {
                out.push(Candidate::made(v, Vec::new(), source()).printed());
            } else {
                let from = content.start + (raw.len() - raw.trim_start().len());
                if let Some(r) = Scanner::new(inner).scan(0) {
                    let mut c = Candidate::scanned(from..from + inner.len(), 0, r, source());
                    c.open_fence = !closed;
                    out.push(c);
                }
            }
        }
        pos = next.max(open + 3);
    }
}

/// Every `{` and `[` of the answer, in order. A reading cut off by the end may have swallowed a
/// later value, so the search goes on after its start; so it does after one nested too deep.
/// Readings are scans (no values made); a reading from the next bracket in of one that went too
/// deep takes up where that one stopped. Each reading is charged what it read against a budget.
/// With `make`, the first value read afresh whose content matters to that shape is read once,
/// made (if it is not too deep), instead of scanned now and read later.
fn prose(answer: &str, out: &mut Vec<Candidate>, mut make: Option<&Shape>) {
    let b = answer.as_bytes();
    let mut pos = 0;
    let mut budget = answer
        .len()
        .saturating_mul(8)
        .max(1 << 16)
        .min(answer.len().saturating_add(1 << 18));
    // A reading nested too deep is charged `MAX_DEPTH` against the budget, whatever it read; what
    // such readings read is bounded by a budget of its own.
    let mut deep_budget = budget;
    let mut lines = Lines {
        text: b,
        at: 0,
        line: 1,
    };
    let mut fresh = Scanner::new(answer);
    // The last scan that went too deep, waiting to go on from its next value in.
    let mut deep: Option<Scanner> = None;
    // Values the end of the answer cut off inside a value it cut off, the first to start last.
    let mut cut: Vec<(usize, loose::Scanned)> = Vec::new();
    // The value of the one reading that made it (see `make`).
    let mut made = None;
    while out.len() < MAX_CANDIDATES && budget > 0 && deep_budget > 0 {
        let Some(start) = memchr::memchr2(b'{', b'[', &b[pos..]).map(|o| pos + o) else {
            break;
        };
        let resumed = deep.as_ref().and_then(Scanner::next_in) == Some(start);
        let (scanned, was_at) = match deep.as_mut() {
            Some(d) if resumed => {
                let at = d.at();
                (d.resume(), at)
            }
            // A value inside a value the end cut off, cut off too: known without reading.
            _ => match known_at(&mut cut, start) {
                Some(known) => (Some(known), start),
                None => {
                    let kind = if b[start] == b'{' {
                        Kind::Object
                    } else {
                        Kind::List
                    };
                    match make
                        .take_if(|shape| content_matters(kind, shape))
                        .and_then(|_| loose::read_seen(answer, start))
                    {
                        Some((read, seen)) => {
                            let known = loose::Scanned {
                                end: read.end,
                                truncated: read.truncated,
                                kind: kind_of(&read.value),
                                fp: None,
                                seen,
                            };
                            made = Some((read.value, read.repairs));
                            (Some(known), start)
                        }
                        None => {
                            let r = fresh.scan(start);
                            if r.is_some_and(|r| r.truncated) {
                                // Innermost first, so the first to start last. Readings from one
                                // start are the same: the new list replaces the old.
                                cut = fresh.cut_inside();
                            }
                            (r, start)
                        }
                    }
                }
            },
        };
        let Some(r) = scanned else {
            // Too deep: not an answer; look further on.
            if !resumed {
                deep = Some(std::mem::replace(&mut fresh, Scanner::new(answer)));
            }
            let read = deep.as_ref().map_or(0, |d| d.at().saturating_sub(was_at));
            deep_budget = deep_budget.saturating_sub(read.max(1));
            budget = budget.saturating_sub(MAX_DEPTH);
            pos = start + 1;
            continue;
        };
        budget = budget.saturating_sub(r.end - start);
        let mut cand = Candidate::scanned(0..answer.len(), start, r, String::new());
        cand.prose = true;
        if let Some(value) = made.take() {
            cand.made = Some(value);
            cand.unprinted = true;
        }
        if !out.iter_mut().any(|c| c.same(&mut cand, answer)) {
            cand.source = format!("line {}", lines.of(start));
            out.push(cand);
        }
        // A value cut off by the end may have swallowed a later one: look again after its start.
        pos = if r.truncated {
            start + 1
        } else {
            r.end.max(start + 1)
        };
    }
}

/// What a scan from `start` finds, when the list of cut-off values (the first to start last)
/// knows it; the values that start before `start` are dropped on the way (starts only grow).
fn known_at(cut: &mut Vec<(usize, loose::Scanned)>, start: usize) -> Option<loose::Scanned> {
    while cut.last().is_some_and(|(s, _)| *s < start) {
        cut.pop();
    }
    match cut.last() {
        Some((s, known)) if *s == start => {
            let known = *known;
            cut.pop();
            Some(known)
        }
        _ => None,
    }
}

/// The first JSON object of a model's answer that is whole: read as [`read_answer`] reads it
/// (the same candidates, the same forgiving reader, so a trailing comma or a comment is
/// repaired), but never one the reader found cut off by the end of the text. A chat reply's
/// completion uses it: what the program will accept completes, what is still open waits.
/// Linear in the answer, as [`read_answer`] is.
#[must_use]
pub fn complete_object(answer: &str) -> Option<Value> {
    let mut cands = candidates(answer, &Shape::Object(Vec::new()), false);
    let c = cands
        .iter_mut()
        .find(|c| !c.truncated && c.kind == Kind::Object)?;
    c.get(answer);
    c.made.take().map(|(v, _)| v)
}

#[cfg(test)]
mod tests;
