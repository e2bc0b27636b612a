//! A forgiving JSON reader for model answers: it reads what models really write and names every
//! repair it made.
//!
//! Repaired: trailing and stray commas, missing commas, `//` and `/* */` comments, single
//! quotes, triple-quoted strings, unquoted keys, unquoted text values, `True`/`False`/`None`,
//! line breaks and unescaped quotes inside strings (a quote closes a string only where the text
//! after it continues the structure: `,` then a key, `}`, `]`, the end), and a value cut off at the
//! end of the answer (open strings and brackets are closed).
//!
//! Linear time: every step consumes input, a look-ahead never goes past [`LOOKAHEAD`] bytes, and
//! nesting deeper than [`MAX_DEPTH`] ends the reading.

use serde_json::{Map, Number, Value};

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

/// Where a value sits: what may end an unquoted value or close a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    Key,
    Obj,
    List,
}

struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    depth: usize,
    truncated: bool,
    repairs: Vec<String>,
    /// The line count up to a position, kept so that naming repairs stays linear.
    counted: (usize, usize),
}

/// Nesting deeper than [`MAX_DEPTH`].
#[derive(Debug)]
struct TooDeep;

/// Reads one value starting at byte `start` of `text` (a `{`, a `[`, or anything for a whole
/// block). `None` when the nesting is too deep.
#[must_use]
pub fn read(text: &str, start: usize) -> Option<Read> {
    let mut r = Reader {
        s: text,
        b: text.as_bytes(),
        i: start,
        depth: 0,
        truncated: false,
        repairs: Vec::new(),
        counted: (0, 1),
    };
    let value = r.value(Ctx::Top).ok()?;
    Some(Read {
        value,
        end: r.i,
        truncated: r.truncated,
        repairs: r.repairs,
    })
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn at(&self, j: usize) -> Option<u8> {
        self.b.get(j).copied()
    }

    fn line(&mut self) -> usize {
        let to = self.i.min(self.b.len());
        let (from, mut line) = if to >= self.counted.0 {
            self.counted
        } else {
            (0, 1)
        };
        line += self.b[from..to].iter().filter(|&&c| c == b'\n').count();
        self.counted = (to, line);
        line
    }

    fn note(&mut self, what: &str) {
        // The first repairs are worth naming; a flood of them is not.
        if self.repairs.len() < 32 {
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
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.i += 1;
                    }
                    true
                }
                (Some(b'/'), Some(b'*')) => {
                    let rest = &self.s[self.i + 2..];
                    self.i = rest.find("*/").map_or(self.b.len(), |k| self.i + 2 + k + 2);
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

    fn enter(&mut self) -> Result<(), TooDeep> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(TooDeep);
        }
        Ok(())
    }

    fn value(&mut self, ctx: Ctx) -> Result<Value, TooDeep> {
        self.skip_space();
        match self.peek() {
            None => {
                self.truncated = true;
                self.note("a value was cut off at the end; read as null");
                Ok(Value::Null)
            }
            Some(b'{') => self.object(),
            Some(b'[') => self.list(),
            Some(b'"') if self.s[self.i..].starts_with("\"\"\"") => Ok(self.triple()),
            Some(q @ (b'"' | b'\'')) => {
                if q == b'\'' {
                    self.note("read a single-quoted string");
                }
                Ok(Value::String(self.string(q, ctx)))
            }
            Some(_) => Ok(self.unquoted(ctx)),
        }
    }

    fn object(&mut self) -> Result<Value, TooDeep> {
        self.enter()?;
        self.i += 1;
        let mut m = Map::new();
        loop {
            self.skip_space();
            match self.peek() {
                None => {
                    self.truncated = true;
                    self.note("closed an object cut off at the end");
                    break;
                }
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                Some(b']') => {
                    self.i += 1;
                    self.note("read `]` as the end of an object");
                    break;
                }
                Some(b',') => {
                    self.i += 1;
                    self.note("removed a stray comma");
                    continue;
                }
                Some(b'{' | b'[') => {
                    let _ = self.value(Ctx::Obj)?;
                    self.note("dropped a value that had no key");
                    continue;
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
                    self.note(&format!("read the unquoted key {k:?}"));
                    k
                }
            };
            self.skip_space();
            let value = if self.peek() == Some(b':') {
                self.i += 1;
                self.value(Ctx::Obj)?
            } else {
                if self.peek().is_none() {
                    self.truncated = true;
                }
                self.note(&format!("the key {key:?} had no value; read as null"));
                Value::Null
            };
            m.insert(key, value);
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_space();
                    if self.peek() == Some(b'}') {
                        self.note("removed a trailing comma");
                    }
                }
                Some(b'}' | b']') | None => {}
                Some(_) => self.note("added a missing comma"),
            }
        }
        self.depth -= 1;
        Ok(Value::Object(m))
    }

    fn list(&mut self) -> Result<Value, TooDeep> {
        self.enter()?;
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None => {
                    self.truncated = true;
                    self.note("closed a list cut off at the end");
                    break;
                }
                Some(b']') => {
                    self.i += 1;
                    break;
                }
                Some(b'}') => {
                    self.i += 1;
                    self.note("read `}` as the end of a list");
                    break;
                }
                Some(b',') => {
                    self.i += 1;
                    self.note("removed a stray comma");
                    continue;
                }
                _ => {}
            }
            items.push(self.value(Ctx::List)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_space();
                    if self.peek() == Some(b']') {
                        self.note("removed a trailing comma");
                    }
                }
                Some(b']' | b'}') | None => {}
                Some(_) => self.note("added a missing comma"),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// A `"` or `'` string; the opening quote is at `self.i`.
    fn string(&mut self, q: u8, ctx: Ctx) -> String {
        self.i += 1;
        let mut out = String::new();
        let (mut broke, mut kept) = (false, false);
        loop {
            // Copy the plain run up to the next byte that matters.
            let run = self.b[self.i..]
                .iter()
                .position(|&c| c == q || c == b'\\' || c == b'\n')
                .map_or(self.b.len(), |k| self.i + k);
            out.push_str(&self.s[self.i..run]);
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
                    out.push('\n');
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
                    out.push(char::from(q));
                    self.i += 1;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) {
        self.i += 1;
        let Some(c) = self.peek() else {
            return;
        };
        self.i += 1;
        match c {
            b'n' => out.push('\n'),
            b't' => out.push('\t'),
            b'r' => out.push('\r'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'u' => {
                let hex = |r: &Self, at: usize| {
                    r.s.get(at..at + 4)
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                };
                match hex(self, self.i) {
                    Some(hi @ 0xD800..=0xDBFF)
                        if self.s[self.i + 4..].starts_with("\\u")
                            && hex(self, self.i + 6)
                                .is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo)) =>
                    {
                        let lo = hex(self, self.i + 6).unwrap_or(0xDC00);
                        let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                        self.i += 10;
                    }
                    Some(u) => {
                        out.push(char::from_u32(u).unwrap_or('\u{FFFD}'));
                        self.i += 4;
                    }
                    None => out.push('u'),
                }
            }
            _ => {
                // `\"`, `\\`, `\/`, `\'`, and any other escaped character as itself.
                let start = self.i - 1;
                let len = self.s[start..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&self.s[start..start + len]);
                self.i = start + len;
            }
        }
    }

    /// Whether the quote at `self.i` closes the string: the text after it continues the
    /// structure around the string.
    fn closes(&self, ctx: Ctx) -> bool {
        let k = self.skip_from(self.i + 1);
        let next = self.at(k);
        let crossed_line = self.b[self.i + 1..k].contains(&b'\n');
        match ctx {
            Ctx::Top => true,
            Ctx::Key => matches!(next, None | Some(b':' | b'}' | b',')) || crossed_line,
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
                    Some(_) => crossed_line && ctx == Ctx::Obj && self.key_at(k),
                }
            }
        }
    }

    /// Past spaces and comments from `j`, looking at most [`LOOKAHEAD`] bytes into comments.
    fn skip_from(&self, mut j: usize) -> usize {
        let limit = j + LOOKAHEAD;
        loop {
            while self.at(j).is_some_and(is_space) {
                j += 1;
            }
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
                    match self.b[(j + 2).min(end)..end]
                        .windows(2)
                        .position(|w| w == b"*/")
                    {
                        Some(k) => j += 2 + k + 2,
                        None => return j,
                    }
                }
                _ => return j,
            }
        }
    }

    /// `true`, `false` or `null` at `j`, ending where a list item ends.
    fn word_at(&self, j: usize) -> bool {
        ["true", "false", "null"].iter().any(|w| {
            self.s[j..].starts_with(w)
                && !self
                    .at(j + w.len())
                    .is_some_and(|c| c.is_ascii_alphanumeric())
        })
    }

    /// Whether a key (`"name":`, `'name':` or `name:` on one line) starts at `j`.
    fn key_at(&self, j: usize) -> bool {
        let end = (j + LOOKAHEAD).min(self.b.len());
        match self.at(j) {
            Some(q @ (b'"' | b'\'')) => {
                let Some(k) = self.b[j + 1..end]
                    .iter()
                    .position(|&c| c == q || c == b'\n')
                else {
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
                    return false;
                };
                body[k] == b':' && body[..k].iter().any(|c| !is_space(*c))
            }
            None => false,
        }
    }

    /// An unquoted key: up to `:` (or whatever cannot be in a key).
    fn unquoted_key(&mut self) -> String {
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
        self.s[start..self.i].trim().to_string()
    }

    /// Text without quotes: a literal, a number, or a string running to where the structure
    /// continues.
    fn unquoted(&mut self, ctx: Ctx) -> Value {
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
                    self.at(k).is_some_and(|n| n == b'}') || self.key_at(k)
                }
                _ => false,
            };
            if stop {
                break;
            }
            self.i += 1;
        }
        // Keep the boundary on a character (only ASCII bytes stop the loop, so it is one).
        let text = self.s[start..self.i].trim();
        literal(text).unwrap_or_else(|| {
            if text.is_empty() {
                self.note("a value was missing; read as null");
                Value::Null
            } else {
                let shown: String = text.chars().take(40).collect();
                self.note(&format!("read unquoted text as a string: {shown:?}"));
                Value::String(text.to_string())
            }
        })
    }

    /// A `"""…"""` string, as written.
    fn triple(&mut self) -> Value {
        self.note("read a triple-quoted string");
        self.i += 3;
        let rest = &self.s[self.i..];
        match rest.find("\"\"\"") {
            Some(k) => {
                self.i += k + 3;
                Value::String(rest[..k].to_string())
            }
            None => {
                self.truncated = true;
                self.i = self.b.len();
                Value::String(rest.to_string())
            }
        }
    }
}

/// A JSON literal or number written without quotes, in the spellings models use.
fn literal(t: &str) -> Option<Value> {
    match t {
        "true" | "True" | "TRUE" => Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => Some(Value::Bool(false)),
        "null" | "None" | "NULL" | "nil" => Some(Value::Null),
        _ => serde_json::from_str::<Number>(t).ok().map(Value::Number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(t: &str) -> Value {
        read(t, 0).map(|r| r.value).unwrap_or(Value::Null)
    }

    #[test]
    fn repairs_what_models_write() {
        assert_eq!(
            v("{a: 1, 'b': 'x', \"c\": [1, 2,],}"),
            json!({"a": 1, "b": "x", "c": [1, 2]})
        );
        assert_eq!(v("{\"a\": [1, 2"), json!({"a": [1, 2]}));
        assert_eq!(v("{\"a\": \"x // y\" // note\n}"), json!({"a": "x // y"}));
        assert_eq!(
            v("{\"a\": True, \"b\": None}"),
            json!({"a": true, "b": null})
        );
        assert_eq!(
            v("{\"a\": \"he said \"hi\", and left\", \"b\": 1}"),
            json!({"a": "he said \"hi\", and left", "b": 1})
        );
        assert_eq!(v("[\"\\u00e9\\ud83d\\ude00\"]"), json!(["é😀"]));
    }

    #[test]
    fn deep_nesting_stops() {
        assert!(read(&"[".repeat(MAX_DEPTH + 1), 0).is_none());
        assert!(read(&"[".repeat(MAX_DEPTH), 0).is_some());
    }
}
