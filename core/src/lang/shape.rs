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
            let more = if s.chars().nth(40).is_some() {
                "…"
            } else {
                ""
            };
            format!("the string {:?}", format!("{short}{more}"))
        }
        Value::Number(n) => format!("the number {n}"),
        Value::Bool(b) => format!("the boolean {b}"),
        _ => kind_of(v).to_string(),
    }
}

fn at(path: &Path) -> String {
    if path.is_empty() {
        "the value".into()
    } else {
        format!("\"{path}\"")
    }
}

/// Where a value sits, written out only when a message names it: `items[2].name`.
#[derive(Debug, Clone, Copy)]
enum Path<'a> {
    Root(&'a str),
    Field(&'a Path<'a>, &'a str),
    Item(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn is_empty(&self) -> bool {
        match self {
            Path::Root(p) => p.is_empty(),
            Path::Field(p, name) => p.is_empty() && name.is_empty(),
            Path::Item(..) => false,
        }
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root(p) => f.write_str(p),
            Path::Field(p, name) if p.is_empty() => f.write_str(name),
            Path::Field(p, name) => write!(f, "{p}.{name}"),
            Path::Item(p, i) => write!(f, "{p}[{i}]"),
        }
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
    /// Counts a coercion; names it while there are few (a long list of them is not written out).
    fn add(&mut self, cost: u32, note: impl FnOnce() -> String) {
        self.score += cost;
        if self.notes.len() < 32 {
            self.notes.push(note());
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
    coerce_at(v, shape, &Path::Root(path), c)
}

fn coerce_at(v: &Value, shape: &Shape, path: &Path, c: &mut Coercions) -> Result<Value, String> {
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
                c.add(1, || {
                    format!("{}: read {} as a string", at(path), what_came(v))
                });
                Ok(Value::String(v.to_string()))
            }
            _ => Err(want()),
        },
        Shape::Number => match v {
            Value::Number(_) => Ok(v.clone()),
            Value::String(s) => match number_in(s) {
                Some((n, cost)) => {
                    c.add(cost, || {
                        format!("{}: read {} as the number {n}", at(path), what_came(v))
                    });
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
                    c.add(cost, || {
                        format!("{}: read {} as {b}", at(path), what_came(v))
                    });
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
                    .map(|(i, x)| coerce_at(x, t, &Path::Item(path, i), c))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array),
            },
            Value::Null => Err(want()),
            _ => {
                c.add(1, || {
                    format!("{}: read a single value as a one-item list", at(path))
                });
                let one = match item {
                    None => v.clone(),
                    Some(t) => coerce_at(v, t, &Path::Item(path, 0), c)?,
                };
                Ok(Value::Array(vec![one]))
            }
        },
        Shape::Object(fields) => {
            let m = match v {
                Value::Object(m) => m,
                Value::Number(_) | Value::Bool(_) if fields.len() == 1 => {
                    let f = &fields[0];
                    c.add(2, || {
                        format!(
                            "{}: put the lone {} in its one field \"{}\"",
                            at(path),
                            what_came(v),
                            f.name
                        )
                    });
                    let mut one = Map::new();
                    one.insert(f.name.clone(), v.clone());
                    return coerce_at(&Value::Object(one), shape, path, c);
                }
                _ => return Err(want()),
            };
            let mut out = Map::new();
            for f in fields {
                let p = Path::Field(path, &f.name);
                let found = m.get(&f.name).or_else(|| {
                    let (k, x) = m.iter().find(|(k, _)| same_key(k, &f.name))?;
                    c.add(1, || format!("read the key {k:?} as \"{p}\""));
                    Some(x)
                });
                match found {
                    None => return Err(format!("\"{p}\" is missing")),
                    Some(x) => {
                        out.insert(f.name.clone(), coerce_at(x, &f.shape, &p, c)?);
                    }
                }
            }
            Ok(Value::Object(out))
        }
    }
}

/// Keys that differ only in case, surrounding spaces, or `-`, `_` and spaces inside.
///
/// Each key of an object is weighed against a field its exact name missed: the key's length
/// says no before its characters are looked at (the mapping keeps every character's length).
fn same_key(k: &str, name: &str) -> bool {
    let (k, name) = (trimmed(k), trimmed(name));
    k.len() == name.len() && normalized(k).eq(normalized(name))
}

/// `s.trim()`, without a look at the characters when both ends are ASCII and no space (the
/// usual key).
fn trimmed(s: &str) -> &str {
    let kept = |b: Option<&u8>| b.is_some_and(|&b| b.is_ascii() && !matches!(b, 9..=13 | b' '));
    if kept(s.as_bytes().first()) && kept(s.as_bytes().last()) {
        s
    } else {
        s.trim()
    }
}

/// A trimmed key as [`same_key`] compares it.
fn normalized(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().map(|c| {
        if c == '-' || c == ' ' {
            '_'
        } else {
            c.to_ascii_lowercase()
        }
    })
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

mod answer;

pub use answer::{complete_object, read_answer, Reading, MAX_CANDIDATES};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`same_key`] as it was before its length check: the reference.
    fn same_key_by_characters(k: &str, name: &str) -> bool {
        let norm = |s: &str| -> String {
            s.trim()
                .chars()
                .map(|c| match c {
                    '-' | ' ' => '_',
                    c => c.to_ascii_lowercase(),
                })
                .collect()
        };
        norm(k) == norm(name)
    }

    fn keys() -> impl Strategy<Value = String> {
        let c = proptest::sample::select(vec![
            "a", "A", "b", "-", "_", " ", "\t", "\u{b}", "\u{a0}", "\u{85}", "é", "É", "\u{2003}",
        ]);
        proptest::collection::vec(c, 0..8).prop_map(|c| c.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn same_key_decides_as_it_did_by_characters(k in keys(), name in keys()) {
            prop_assert_eq!(same_key(&k, &name), same_key_by_characters(&k, &name));
        }
    }
}
