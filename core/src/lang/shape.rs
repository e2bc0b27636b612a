//! Shapes at run time: a value checked against a shape, with the coercions a model's JSON needs.
//!
//! Coercions (the seed names `"true"` → `true` and `"42"` → `42`; the rest are decisions, see
//! docs/language.md):
//! - `boolean`: `"true"` / `"false"` (any case, spaces trimmed);
//! - `number`: a string holding a JSON number (`"42"`, `" 4.5 "`);
//! - `string`: a number or a boolean becomes its JSON text;
//! - `list` / `list[T]`: each item is checked (and coerced) as `T`; a non-list is refused;
//! - objects: every declared field must be there (a missing one is refused, `none` is not a
//!   value of any type but `json`); fields the shape does not declare are dropped;
//! - `json`: anything, as it is.

use super::ast::{Field, Shape};
use serde_json::{Map, Value};

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

fn at(path: &str) -> String {
    if path.is_empty() {
        "the value".into()
    } else {
        format!("\"{path}\"")
    }
}

/// Checks `v` against `shape` at `path`.
///
/// # Errors
/// Where the value does not fit.
pub fn check(v: &Value, shape: &Shape, path: &str) -> Result<Value, String> {
    let want = |name: &str| format!("{} must be {name}, not {}", at(path), kind_of(v));
    match shape {
        Shape::Json => Ok(v.clone()),
        Shape::String => match v {
            Value::String(_) => Ok(v.clone()),
            Value::Number(_) | Value::Bool(_) => Ok(Value::String(v.to_string())),
            _ => Err(want("a string")),
        },
        Shape::Number => match v {
            Value::Number(_) => Ok(v.clone()),
            Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
                Ok(n @ Value::Number(_)) => Ok(n),
                _ => Err(want("a number")),
            },
            _ => Err(want("a number")),
        },
        Shape::Boolean => match v {
            Value::Bool(_) => Ok(v.clone()),
            Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            _ => Err(want("a boolean")),
        },
        Shape::List(item) => match v {
            Value::Array(items) => match item {
                None => Ok(v.clone()),
                Some(t) => items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| check(x, t, &format!("{path}[{i}]")))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array),
            },
            _ => Err(want("a list")),
        },
        Shape::Object(fields) => {
            let Value::Object(m) = v else {
                return Err(want("an object"));
            };
            let mut out = Map::new();
            for f in fields {
                let p = if path.is_empty() {
                    f.name.clone()
                } else {
                    format!("{path}.{}", f.name)
                };
                match m.get(&f.name) {
                    None | Some(Value::Null) if f.shape != Shape::Json => {
                        return Err(format!("\"{p}\" is missing"));
                    }
                    None => {
                        out.insert(f.name.clone(), Value::Null);
                    }
                    Some(x) => {
                        out.insert(f.name.clone(), check(x, &f.shape, &p)?);
                    }
                }
            }
            Ok(Value::Object(out))
        }
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

/// How many `{` of an answer [`extract_json`] tries as an object's start.
pub const MAX_OBJECT_STARTS: usize = 64;

/// The first JSON object in a model's answer: the whole answer, a fenced block, or the first
/// balanced `{ … }` that parses, among the first [`MAX_OBJECT_STARTS`] `{` of the answer.
#[must_use]
pub fn extract_json(answer: &str) -> Option<Value> {
    let t = answer.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    if let Some(start) = t.find("```") {
        let rest = &t[start + 3..];
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        if let Some(end) = rest.find("```") {
            if let Ok(v) = serde_json::from_str::<Value>(rest[..end].trim()) {
                return Some(v);
            }
        }
    }
    let bytes = t.as_bytes();
    // A hostile answer (100 KB of `{`) made this quadratic: at most this many `{` are tried as
    // the start of an object, so the work is bounded by a small multiple of the answer's size.
    for (i, _) in t.match_indices('{').take(MAX_OBJECT_STARTS) {
        let (mut depth, mut in_str, mut esc) = (0i32, false, false);
        for (j, &b) in bytes.iter().enumerate().skip(i) {
            if in_str {
                match (esc, b) {
                    (true, _) => esc = false,
                    (false, b'\\') => esc = true,
                    (false, b'"') => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(v) = serde_json::from_str::<Value>(&t[i..=j]) {
                            return Some(v);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_braces_are_bounded_and_an_object_after_stray_braces_is_found() {
        // 400 KB of `{`: nothing, in bounded time (the benchmark prints the figure).
        assert_eq!(extract_json(&"{".repeat(400_000)), None);
        // Stray braces in prose before the object, within the bound.
        let prose = format!(
            "{} then {{\"ok\": true}}",
            "{ ".repeat(MAX_OBJECT_STARTS - 1)
        );
        assert_eq!(extract_json(&prose), Some(serde_json::json!({"ok": true})));
        // Past it, the reader gives up rather than scan forever.
        let far = format!("{} then {{\"ok\": true}}", "{ ".repeat(MAX_OBJECT_STARTS));
        assert_eq!(extract_json(&far), None);
    }
}
