//! Shapes at run time: a value checked against a shape, with the coercions a model's JSON needs,
//! and the schema-aligned reading of a model's answer ([`read_answer`]).
//!
//! Coercions (the seed names `"true"` → `true` and `"42"` → `42`; the rest are decisions, see
//! docs/language.md). Each one is named in the reading's repairs and adds to its score:
//! - `boolean`: `"true"` / `"false"` (any case, spaces trimmed); in a longer text, the one word
//!   `true` or `false` it holds (a text holding both is refused);
//! - `number`: a string holding a number as people write them: `"42"`, `"12,111.5"`, `"12.11."`,
//!   `"1/5"`, or a number at the start of a text (`"1 cup"`);
//! - `string`: a number or a boolean becomes its JSON text;
//! - `list` / `list[T]`: each item is checked (and coerced) as `T`; a single value becomes a
//!   one-item list;
//! - objects: every declared field must be there; a key that differs only in case, spaces or
//!   `-`/`_` is taken; a missing field and a `null` one are refused, each saying so (`null` is a
//!   value only of `json`); fields the shape does not declare are dropped; a lone number or boolean
//!   fills an object of one field;
//! - `json`: anything, as it is.

use super::ast::{Field, Shape};
use super::loose;
use serde_json::{Map, Number, Value};

/// Checks `v` against the object shape `fields`, coercing. `Err` says where and what.
///
/// # Errors
/// The first field that is missing or does not fit.
pub fn check_object(v: &Value, fields: &[Field]) -> Result<Value, String> {
    check(v, &Shape::Object(fields.to_vec()), "")
}

/// What kind of value `v` is, for messages: "a string", "none", …
#[must_use]
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "none",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What came, for a refusal: the kind and, for a scalar, the value itself (shortened).
fn what_came(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            let more = if s.chars().count() > 40 { "…" } else { "" };
            format!("the string {:?}", format!("{short}{more}"))
        }
        Value::Number(n) => format!("the number {n}"),
        Value::Bool(b) => format!("the boolean {b}"),
        _ => kind_of(v).to_string(),
    }
}

fn at(path: &str) -> String {
    if path.is_empty() {
        "the value".into()
    } else {
        format!("\"{path}\"")
    }
}

fn a_shape(shape: &Shape) -> &'static str {
    match shape {
        Shape::String => "a string",
        Shape::Number => "a number",
        Shape::Boolean => "a boolean",
        Shape::List(_) => "a list",
        Shape::Object(_) => "an object",
        Shape::Json => "any JSON",
    }
}

/// Coercions made while checking a value: named, and counted into a score.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Coercions {
    pub notes: Vec<String>,
    pub score: u32,
}

impl Coercions {
    fn add(&mut self, cost: u32, note: String) {
        self.score += cost;
        if self.notes.len() < 32 {
            self.notes.push(note);
        }
    }
}

/// Checks `v` against `shape` at `path`.
///
/// # Errors
/// Where the value does not fit.
pub fn check(v: &Value, shape: &Shape, path: &str) -> Result<Value, String> {
    coerce(v, shape, path, &mut Coercions::default())
}

/// Checks `v` against `shape` at `path`, naming every coercion in `c`.
///
/// # Errors
/// Where the value does not fit: the field, the type it must have and what came.
pub fn coerce(v: &Value, shape: &Shape, path: &str, c: &mut Coercions) -> Result<Value, String> {
    let want = || match v {
        Value::Null => format!("{} is null; it must be {}", at(path), a_shape(shape)),
        _ => format!(
            "{} must be {}, not {}",
            at(path),
            a_shape(shape),
            what_came(v)
        ),
    };
    match shape {
        Shape::Json => Ok(v.clone()),
        Shape::String => match v {
            Value::String(_) => Ok(v.clone()),
            Value::Number(_) | Value::Bool(_) => {
                c.add(
                    1,
                    format!("{}: read {} as a string", at(path), what_came(v)),
                );
                Ok(Value::String(v.to_string()))
            }
            _ => Err(want()),
        },
        Shape::Number => match v {
            Value::Number(_) => Ok(v.clone()),
            Value::String(s) => match number_in(s) {
                Some((n, cost)) => {
                    c.add(
                        cost,
                        format!("{}: read {} as the number {n}", at(path), what_came(v)),
                    );
                    Ok(Value::Number(n))
                }
                None => Err(want()),
            },
            _ => Err(want()),
        },
        Shape::Boolean => match v {
            Value::Bool(_) => Ok(v.clone()),
            Value::String(s) => match boolean_in(s) {
                Ok((b, cost)) => {
                    c.add(cost, format!("{}: read {} as {b}", at(path), what_came(v)));
                    Ok(Value::Bool(b))
                }
                Err(both) => Err(if both {
                    format!(
                        "{} must be a boolean, and {} holds both true and false",
                        at(path),
                        what_came(v)
                    )
                } else {
                    want()
                }),
            },
            _ => Err(want()),
        },
        Shape::List(item) => match v {
            Value::Array(items) => match item {
                None => Ok(v.clone()),
                Some(t) => items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| coerce(x, t, &format!("{path}[{i}]"), c))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array),
            },
            Value::Null => Err(want()),
            _ => {
                c.add(
                    1,
                    format!("{}: read a single value as a one-item list", at(path)),
                );
                let one = match item {
                    None => v.clone(),
                    Some(t) => coerce(v, t, &format!("{path}[0]"), c)?,
                };
                Ok(Value::Array(vec![one]))
            }
        },
        Shape::Object(fields) => {
            let m = match v {
                Value::Object(m) => m,
                Value::Number(_) | Value::Bool(_) if fields.len() == 1 => {
                    let f = &fields[0];
                    c.add(
                        2,
                        format!(
                            "{}: put the lone {} in its one field \"{}\"",
                            at(path),
                            what_came(v),
                            f.name
                        ),
                    );
                    let mut one = Map::new();
                    one.insert(f.name.clone(), v.clone());
                    return coerce(&Value::Object(one), shape, path, c);
                }
                _ => return Err(want()),
            };
            let mut out = Map::new();
            for f in fields {
                let p = if path.is_empty() {
                    f.name.clone()
                } else {
                    format!("{path}.{}", f.name)
                };
                let found = m.get(&f.name).or_else(|| {
                    let (k, x) = m.iter().find(|(k, _)| same_key(k, &f.name))?;
                    c.add(1, format!("read the key {k:?} as \"{p}\""));
                    Some(x)
                });
                match found {
                    None => return Err(format!("\"{p}\" is missing")),
                    Some(x) => {
                        out.insert(f.name.clone(), coerce(x, &f.shape, &p, c)?);
                    }
                }
            }
            Ok(Value::Object(out))
        }
    }
}

/// Keys that differ only in case, surrounding spaces, or `-`, `_` and spaces inside.
fn same_key(k: &str, name: &str) -> bool {
    let norm = |s: &str| -> String {
        s.trim()
            .chars()
            .map(|c| {
                if c == '-' || c == ' ' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    norm(k) == norm(name)
}

/// A number as people write it, and what reading it cost: `"42"` (1), `"12,111.5"`, `"12.11."`,
/// `"1/5"` (2), a number at the start of a text (`"1 cup"`, 3).
fn number_in(s: &str) -> Option<(Number, u32)> {
    let t = s.trim();
    let parse = |t: &str| serde_json::from_str::<Number>(t).ok();
    if let Some(n) = parse(t) {
        return Some((n, 1));
    }
    let float = |f: f64| -> Option<Number> {
        if f.fract() == 0.0 && f.abs() < 9.0e15 {
            #[allow(clippy::cast_possible_truncation)]
            return Some(Number::from(f as i64));
        }
        Number::from_f64(f)
    };
    // Thousands separators, a trailing dot.
    let plain: String = t.trim_end_matches('.').replace(',', "");
    let grouped = t.contains(',')
        && t.split(',')
            .skip(1)
            .all(|g| g.len() >= 3 && g.as_bytes()[..3].iter().all(u8::is_ascii_digit));
    if (grouped || t.ends_with('.')) && !plain.is_empty() {
        if let Some(n) = parse(&plain).or_else(|| plain.parse::<f64>().ok().and_then(float)) {
            return Some((n, 2));
        }
    }
    if let Some((a, b)) = t.split_once('/') {
        if let (Ok(a), Ok(b)) = (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
            if b != 0.0 {
                return float(a / b).map(|n| (n, 2));
            }
        }
    }
    // A number at the start of a text, ended by a space.
    let head = t.split(char::is_whitespace).next().unwrap_or("");
    if head.len() < t.len() {
        let head = head.trim_end_matches([',', ';', ':']);
        if let Some((n, _)) = number_in(head).filter(|_| !head.is_empty() && head.len() < t.len()) {
            return Some((n, 3));
        }
    }
    None
}

/// A boolean in a text, and what reading it cost: the whole text `true`/`false` in any case (1),
/// or the one of the two words a longer text holds (3). `Err(true)`: it holds both.
fn boolean_in(s: &str) -> Result<(bool, u32), bool> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("true") {
        return Ok((true, 1));
    }
    if t.eq_ignore_ascii_case("false") {
        return Ok((false, 1));
    }
    let words = t.split(|c: char| !c.is_ascii_alphanumeric());
    let (mut yes, mut no) = (false, false);
    for w in words {
        yes |= w.eq_ignore_ascii_case("true");
        no |= w.eq_ignore_ascii_case("false");
    }
    match (yes, no) {
        (true, false) => Ok((true, 3)),
        (false, true) => Ok((false, 3)),
        (true, true) => Err(true),
        (false, false) => Err(false),
    }
}

/// A shape read back from its JSON form (as `Shape` serializes: `{"shape": "list", "of": …}`),
/// for a generation request that carries it over the wire. Written out rather than derived: a
/// derived reader of this tagged form costs the wasm package tens of KiB.
#[must_use]
pub fn shape_from_json(v: &Value) -> Option<Shape> {
    let of = v.get("of");
    Some(match v.get("shape")?.as_str()? {
        "string" => Shape::String,
        "number" => Shape::Number,
        "boolean" => Shape::Boolean,
        "json" => Shape::Json,
        "list" => Shape::List(match of {
            None | Some(Value::Null) => None,
            Some(t) => Some(Box::new(shape_from_json(t)?)),
        }),
        "object" => Shape::Object(
            of?.as_array()?
                .iter()
                .map(|f| {
                    Some(Field {
                        name: f.get("name")?.as_str()?.to_string(),
                        shape: shape_from_json(f.get("shape")?)?,
                        pos: super::Pos { line: 0, column: 0 },
                    })
                })
                .collect::<Option<Vec<Field>>>()?,
        ),
        _ => return None,
    })
}

/// The shape as the prompt shows it: `{ "ok": boolean, "items": [string] }`.
#[must_use]
pub fn describe_shape(shape: &Shape) -> String {
    match shape {
        Shape::String => "string".into(),
        Shape::Number => "number".into(),
        Shape::Boolean => "boolean".into(),
        Shape::Json => "any JSON".into(),
        Shape::List(None) => "[any JSON]".into(),
        Shape::List(Some(t)) => format!("[{}]", describe_shape(t)),
        Shape::Object(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("\"{}\": {}", f.name, describe_shape(&f.shape)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
    }
}

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
    value: Value,
    repairs: Vec<String>,
    source: String,
    /// A candidate found in prose (objects there may together be the list a shape wants).
    prose: bool,
    /// The forgiving reader ran into the end of the text with the value still open (a reply
    /// still being written, or cut off).
    truncated: bool,
}

/// Reads a model's answer against `shape`, schema-aligned: the whole answer, every fenced block
/// and every `{`/`[` in the prose are candidates, each read with [`loose`]'s repairs; each is
/// coerced to the shape, and the one that fits with the fewest repairs wins. A `string` shape
/// takes the answer as it is; a `list` shape also weighs all the objects in the prose together.
/// Linear in the answer: at most [`MAX_CANDIDATES`] candidates, and the prose is read once
/// except after a candidate cut off by the end (bounded by a budget of eight times the length).
#[must_use]
pub fn read_answer(answer: &str, shape: &Shape) -> Reading {
    if *shape == Shape::String {
        return Reading {
            value: Ok(Value::String(answer.to_string())),
            repairs: Vec::new(),
            score: 0,
            source: "the whole answer".into(),
            candidates: 1,
        };
    }
    let cands = candidates(answer, shape);
    let mut best: Option<(u32, usize, Value, Vec<String>)> = None;
    let mut first_refusal: Option<(String, &str)> = None;
    for (i, cand) in cands.iter().enumerate() {
        let mut c = Coercions::default();
        match coerce(&cand.value, shape, "", &mut c) {
            Ok(v) => {
                let score = u32::try_from(cand.repairs.len()).unwrap_or(u32::MAX) + c.score;
                if best.as_ref().is_none_or(|b| score < b.0) {
                    let mut repairs = cand.repairs.clone();
                    repairs.extend(c.notes);
                    best = Some((score, i, v, repairs));
                }
            }
            Err(why) => {
                if first_refusal.is_none() {
                    first_refusal = Some((why, &cand.source));
                }
            }
        }
    }
    let n = cands.len();
    match best {
        Some((score, i, v, repairs)) => Reading {
            value: Ok(v),
            repairs,
            score,
            source: cands[i].source.clone(),
            candidates: n,
        },
        None => {
            let why = match first_refusal {
                None => match shape {
                    Shape::Object(_) => "the answer holds no JSON object".to_string(),
                    _ => "the answer holds no JSON value".to_string(),
                },
                Some((why, _)) if n == 1 => why,
                Some((why, source)) => {
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
        self.line += self.text[self.at..to]
            .iter()
            .filter(|&&c| c == b'\n')
            .count();
        self.at = to;
        self.line
    }
}

fn candidates(answer: &str, shape: &Shape) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let t = answer.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        out.push(Candidate {
            value: v,
            repairs: Vec::new(),
            source: "the whole answer".into(),
            prose: false,
            truncated: false,
        });
        return out;
    }
    // Fenced blocks, the last one possibly left open at the end.
    let mut pos = 0;
    let mut k = 0;
    while out.len() < MAX_CANDIDATES {
        let Some(open) = answer[pos..].find("```").map(|o| pos + o) else {
            break;
        };
        let body = answer[open + 3..]
            .find('\n')
            .map_or(answer.len(), |e| open + 3 + e + 1);
        let (content, next, closed) = match answer[body..].find("```") {
            Some(e) => (&answer[body..body + e], body + e + 3, true),
            None => (&answer[body..], answer.len(), false),
        };
        k += 1;
        let inner = content.trim();
        if !inner.is_empty() {
            let source = format!("fenced block {k}");
            if let Ok(v) = serde_json::from_str::<Value>(inner) {
                out.push(Candidate {
                    value: v,
                    repairs: Vec::new(),
                    source,
                    prose: false,
                    truncated: false,
                });
            } else if let Some(r) = loose::read(inner, 0) {
                let mut repairs = r.repairs;
                if !closed {
                    repairs.push("read a fenced block left open at the end".into());
                }
                out.push(Candidate {
                    value: r.value,
                    repairs,
                    source,
                    prose: false,
                    truncated: r.truncated,
                });
            }
        }
        pos = next.max(open + 3);
    }
    // `{` and `[` in the prose (and in the blocks: a block's label can hide its start).
    let mut pos = 0;
    let mut budget = answer.len().saturating_mul(8).max(1 << 16);
    let first_prose = out.len();
    let mut lines = Lines {
        text: answer.as_bytes(),
        at: 0,
        line: 1,
    };
    while out.len() < MAX_CANDIDATES && budget > 0 {
        let Some(start) = answer[pos..].find(['{', '[']).map(|o| pos + o) else {
            break;
        };
        let Some(r) = loose::read(answer, start) else {
            // Too deep: not an answer; look further on.
            budget = budget.saturating_sub(loose::MAX_DEPTH);
            pos = start + 1;
            continue;
        };
        budget = budget.saturating_sub(r.end - start);
        let duplicate = out.iter().any(|c| c.value == r.value);
        if !duplicate {
            out.push(Candidate {
                value: r.value,
                repairs: r.repairs,
                source: format!("line {}", lines.of(start)),
                prose: true,
                truncated: r.truncated,
            });
        }
        // A value cut off by the end may have swallowed a later one: look again after its start.
        pos = if r.truncated {
            start + 1
        } else {
            r.end.max(start + 1)
        };
    }
    if matches!(shape, Shape::List(_)) {
        let (mut objects, mut repairs, mut truncated) = (Vec::new(), Vec::new(), false);
        for c in out[first_prose..]
            .iter()
            .filter(|c| c.prose && c.value.is_object())
        {
            objects.push(c.value.clone());
            repairs.extend(c.repairs.iter().cloned());
            truncated |= c.truncated;
        }
        if objects.len() > 1 {
            out.push(Candidate {
                source: format!("the {} objects in the answer, as a list", objects.len()),
                value: Value::Array(objects),
                repairs,
                prose: false,
                truncated,
            });
        }
    }
    if out.is_empty() && !t.is_empty() && !matches!(shape, Shape::Object(_)) {
        // No JSON at all: the text itself, for a shape a text can fill (a boolean, a number).
        out.push(Candidate {
            value: Value::String(t.to_string()),
            repairs: vec!["read the answer's text as a string".into()],
            source: "the answer's text".into(),
            prose: false,
            truncated: false,
        });
    }
    out
}

/// The first JSON object of a model's answer that is whole: read as [`read_answer`] reads it
/// (the same candidates, the same forgiving reader, so a trailing comma or a comment is
/// repaired), but never one the reader found cut off by the end of the text. A chat reply's
/// completion uses it: what the program will accept completes, what is still open waits.
/// Linear in the answer, as [`read_answer`] is.
#[must_use]
pub fn complete_object(answer: &str) -> Option<Value> {
    candidates(answer, &Shape::Object(Vec::new()))
        .into_iter()
        .find(|c| !c.truncated && c.value.is_object())
        .map(|c| c.value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hostile_braces_are_bounded_and_an_object_after_stray_braces_is_found() {
        // 400 KB of `{`: nothing, in bounded time (the benchmark prints the figure).
        assert_eq!(complete_object(&"{".repeat(400_000)), None);
        // Stray braces in prose before the object.
        let prose = format!("{} then {{\"ok\": true}}", "{ ".repeat(63));
        assert!(complete_object(&prose).is_some());
    }

    #[test]
    fn what_the_program_accepts_is_complete_and_what_is_open_is_not() {
        let fenced = "Here:\n```json\n{\"n\": 1,}\n```\n";
        assert_eq!(complete_object(fenced), Some(json!({"n": 1})));
        let commented = "{\"n\": 1, // one\n}";
        assert_eq!(complete_object(commented), Some(json!({"n": 1})));
        // Still being written: the reader would close it, but it is not whole.
        assert_eq!(complete_object("```json\n{\"n\": 1,\n"), None);
        assert_eq!(complete_object("{\"n\": [1, 2"), None);
        assert_eq!(complete_object("no JSON at all"), None);
        // The fence may still be open once the object is whole.
        assert_eq!(
            complete_object("```json\n{\"n\": 1,}\n"),
            Some(json!({"n": 1}))
        );
    }
}
