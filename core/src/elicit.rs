//! MCP elicitation: the form a server's `elicitation/create` asks the user to fill in, read from
//! its requested schema (a flat object of strings, numbers, integers, booleans, single and
//! multiple choices), and the user's answer turned into the content the server gets: each given
//! value read by its field's type, each omitted field its default (SEP-1034), every constraint
//! checked. The model never answers one: only the user, through the host's prompts.
//!
//! Pure: the host shows the form and reads the answers; this decides what they mean.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// How many fields a form may have, and how long a text answer may be.
pub const MAX_FIELDS: usize = 64;
pub const MAX_ANSWER_CHARS: usize = 10_000;
/// How much of a server's words a form shows: its message, a field's title and description, an
/// option's label (cut beyond), and how many options a choice may offer.
pub const MAX_MESSAGE_CHARS: usize = 4_000;
pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;
pub const MAX_OPTIONS: usize = 200;

/// The form of one elicitation request.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Form {
    /// The server's message, as it wrote it (shown to the user as the server's words).
    pub message: String,
    pub fields: Vec<Field>,
}

/// One field of the form, in the schema's order.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub kind: Kind,
    pub required: bool,
    /// The schema's default, already checked against the field.
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub default: Option<Value>,
}

/// What a field takes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "FieldKind"))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Kind {
    Text {
        /// `email`, `uri`, `date` or `date-time`, when the schema names one.
        format: Option<String>,
        min_length: Option<u64>,
        max_length: Option<u64>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of the options: (value sent, label shown).
    Choice {
        options: Vec<(String, String)>,
    },
    /// Several of the options.
    Choices {
        options: Vec<(String, String)>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", content = "content", rename_all = "snake_case")]
pub enum Answer {
    /// The content the server gets (every field with a value: given or default).
    Accept(Map<String, Value>),
    /// The user declines to answer; the operation may go on without it.
    Decline,
    /// The user stops the whole operation.
    Cancel,
}

impl Answer {
    /// The protocol's name of the action.
    #[must_use]
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept(_) => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// A server's words, as the user reads them (escape sequences and controls dropped), cut to
/// `max` characters.
fn words(s: &str, max: usize) -> String {
    crate::text::truncate_chars(&crate::text::printable(s), max)
}

fn text(v: Option<&Value>, max: usize) -> Option<String> {
    v.and_then(Value::as_str).map(|s| words(s, max))
}

/// The options of an enum: `enum` (with `enumNames` as labels), or `oneOf`/`anyOf` of
/// `{const, title}`.
fn options(schema: &Map<String, Value>) -> Option<Vec<(String, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let value = v.as_str()?.to_string();
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(
                        || words(&value, MAX_TITLE_CHARS),
                        |l| words(l, MAX_TITLE_CHARS),
                    );
                Some((value, label))
            })
            .collect();
    }
    let list = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    list.iter()
        .map(|o| {
            let value = o.get("const")?.as_str()?.to_string();
            let label = text(o.get("title"), MAX_TITLE_CHARS)
                .unwrap_or_else(|| words(&value, MAX_TITLE_CHARS));
            Some((value, label))
        })
        .collect()
}

fn kind(name: &str, schema: &Map<String, Value>) -> Result<Kind, String> {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let u = |k: &str| schema.get(k).and_then(Value::as_u64);
    let f = |k: &str| schema.get(k).and_then(Value::as_f64);
    Ok(match ty {
        "string" => match options(schema) {
            Some(options) if options.len() > MAX_OPTIONS => {
                return Err(format!(
                    "field \"{name}\": {} options; at most {MAX_OPTIONS}",
                    options.len()
                ))
            }
            Some(options) if !options.is_empty() => Kind::Choice { options },
            Some(_) => return Err(format!("field \"{name}\": an enum without options")),
            None => Kind::Text {
                format: text(schema.get("format"), 20),
                // No answer is longer than MAX_ANSWER_CHARS, whatever the schema says.
                min_length: u("minLength").map(|n| n.min(MAX_ANSWER_CHARS as u64)),
                max_length: u("maxLength").map(|n| n.min(MAX_ANSWER_CHARS as u64)),
            },
        },
        "number" | "integer" => Kind::Number {
            integer: ty == "integer",
            minimum: f("minimum"),
            maximum: f("maximum"),
        },
        "boolean" => Kind::Boolean,
        "array" => {
            let items = schema
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| format!("field \"{name}\": a list without items"))?;
            let options = options(items)
                .filter(|o| !o.is_empty())
                .ok_or_else(|| format!("field \"{name}\": a list is only of choices"))?;
            if options.len() > MAX_OPTIONS {
                return Err(format!(
                    "field \"{name}\": {} options; at most {MAX_OPTIONS}",
                    options.len()
                ));
            }
            Kind::Choices {
                options,
                min_items: u("minItems"),
                max_items: u("maxItems"),
            }
        }
        other => {
            return Err(format!(
                "field \"{name}\": type \"{other}\" is not a form field"
            ))
        }
    })
}

/// The form of a request: its message and its requested schema.
///
/// # Errors
/// A schema that is not a flat object of the field types above, or a default that does not fit
/// its field.
pub fn form(message: &str, schema: &Value) -> Result<Form, String> {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("the requested schema has no properties")?;
    if props.len() > MAX_FIELDS {
        return Err(format!(
            "the form has {} fields; at most {MAX_FIELDS}",
            props.len()
        ));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    for (name, s) in props {
        let s = s
            .as_object()
            .ok_or_else(|| format!("field \"{name}\" is not a schema"))?;
        let mut field = Field {
            name: name.clone(),
            // A field without a title is shown by its name, as the user reads it.
            title: text(s.get("title"), MAX_TITLE_CHARS).or_else(|| {
                let shown = words(name, MAX_TITLE_CHARS);
                (shown != *name).then_some(shown)
            }),
            description: text(s.get("description"), MAX_DESCRIPTION_CHARS),
            kind: kind(name, s)?,
            required: required.contains(&name.as_str()),
            default: None,
        };
        if let Some(d) = s.get("default") {
            field.default = Some(
                field
                    .check(d)
                    .map_err(|e| format!("field \"{name}\": its default {d}: {e}"))?,
            );
        }
        fields.push(field);
    }
    // The required fields first: the schema's own order does not survive the SDK (its
    // properties are a sorted map), so the fields that must be filled in lead.
    fields.sort_by_key(|f| !f.required);
    Ok(Form {
        message: words(message, MAX_MESSAGE_CHARS),
        fields,
    })
}

impl Field {
    /// The name the user sees: its title, else its name.
    #[must_use]
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// A JSON value for this field, checked (numbers in range, whole for an integer, a choice
    /// among the options, a text within its lengths).
    ///
    /// # Errors
    /// What does not fit, in words.
    pub fn check(&self, v: &Value) -> Result<Value, String> {
        match &self.kind {
            Kind::Text {
                min_length,
                max_length,
                ..
            } => {
                let s = v.as_str().ok_or("a text is expected")?;
                let n = s.chars().count() as u64;
                if min_length.is_some_and(|m| n < m) || max_length.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{n} characters; {} to {}",
                        min_length.unwrap_or(0),
                        max_length.map_or_else(|| "any".to_string(), |m| m.to_string())
                    ));
                }
                Ok(v.clone())
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let x = v.as_f64().ok_or("a number is expected")?;
                if *integer && x.fract() != 0.0 {
                    return Err("a whole number is expected".into());
                }
                if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                    return Err(format!(
                        "{x} is out of range ({} to {})",
                        minimum.map_or_else(|| "any".to_string(), |m| m.to_string()),
                        maximum.map_or_else(|| "any".to_string(), |m| m.to_string())
                    ));
                }
                Ok(v.clone())
            }
            Kind::Boolean => v
                .as_bool()
                .map(Value::Bool)
                .ok_or_else(|| "true or false is expected".into()),
            Kind::Choice { options } => {
                let s = v.as_str().ok_or("one of the options is expected")?;
                if options.iter().any(|(o, _)| o == s) {
                    Ok(v.clone())
                } else {
                    Err(format!("\"{s}\" is not one of {}", names(options)))
                }
            }
            Kind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let list = v.as_array().ok_or("a list of options is expected")?;
                for item in list {
                    let s = item.as_str().ok_or("a list of options is expected")?;
                    if !options.iter().any(|(o, _)| o == s) {
                        return Err(format!("\"{s}\" is not one of {}", names(options)));
                    }
                }
                let n = list.len() as u64;
                if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{n} chosen; {} to {}",
                        min_items.unwrap_or(0),
                        max_items.map_or_else(|| "any".to_string(), |m| m.to_string())
                    ));
                }
                Ok(v.clone())
            }
        }
    }

    /// A typed-in answer read by the field's type: a number, `y`/`yes`/`true` or
    /// `n`/`no`/`false`, an option's value or label (or its number in the list, from 1), several
    /// separated by commas.
    ///
    /// # Errors
    /// What does not fit, in words.
    pub fn read(&self, typed: &str) -> Result<Value, String> {
        let t = typed.trim();
        if t.chars().count() > MAX_ANSWER_CHARS {
            return Err(format!("at most {MAX_ANSWER_CHARS} characters"));
        }
        let pick = |options: &[(String, String)], one: &str| -> Result<Value, String> {
            let one = one.trim();
            if let Ok(i) = one.parse::<usize>() {
                if let Some((v, _)) = i.checked_sub(1).and_then(|i| options.get(i)) {
                    return Ok(Value::String(v.clone()));
                }
            }
            options
                .iter()
                .find(|(v, l)| v == one || l.eq_ignore_ascii_case(one))
                .map(|(v, _)| Value::String(v.clone()))
                .ok_or_else(|| format!("\"{one}\" is not one of {}", names(options)))
        };
        let v = match &self.kind {
            Kind::Text { .. } => Value::String(typed.to_string()),
            Kind::Number { .. } => {
                let x: f64 = t.parse().map_err(|_| format!("\"{t}\" is not a number"))?;
                serde_json::Number::from_f64(x)
                    .map(|n| {
                        if x.fract() == 0.0 && x.abs() < 9e15 {
                            #[allow(clippy::cast_possible_truncation)]
                            Value::from(x as i64)
                        } else {
                            Value::Number(n)
                        }
                    })
                    .ok_or_else(|| format!("\"{t}\" is not a number"))?
            }
            Kind::Boolean => match t.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".into()),
            },
            Kind::Choice { options } => pick(options, t)?,
            Kind::Choices { options, .. } => Value::Array(
                t.split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| pick(options, s))
                    .collect::<Result<_, _>>()?,
            ),
        };
        self.check(&v)
    }
}

fn names(options: &[(String, String)]) -> String {
    let list: Vec<String> = options.iter().map(|(v, _)| format!("\"{v}\"")).collect();
    list.join(", ")
}

impl Form {
    /// The content of an accept: each given value checked by its field, each omitted field its
    /// default. A required field with neither is refused, and so is a value for a field the form
    /// does not have.
    ///
    /// # Errors
    /// The first field that does not fit, by name.
    pub fn accept(&self, given: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        if let Some(extra) = given
            .keys()
            .find(|k| !self.fields.iter().any(|f| &f.name == *k))
        {
            return Err(format!("the form has no field \"{extra}\""));
        }
        let mut out = Map::new();
        for f in &self.fields {
            match (given.get(&f.name), &f.default) {
                (Some(v), _) => {
                    out.insert(
                        f.name.clone(),
                        f.check(v).map_err(|e| format!("{}: {e}", f.label()))?,
                    );
                }
                (None, Some(d)) => {
                    out.insert(f.name.clone(), d.clone());
                }
                (None, None) if f.required => {
                    return Err(format!("{} is required and has no default", f.label()));
                }
                (None, None) => {}
            }
        }
        Ok(out)
    }

    /// Typed-in answers (by field name; an empty one takes the default), as an accept.
    ///
    /// # Errors
    /// As [`Form::accept`], and a typed answer that does not read.
    pub fn accept_typed(
        &self,
        typed: &BTreeMap<String, String>,
    ) -> Result<Map<String, Value>, String> {
        let mut given = Map::new();
        for f in &self.fields {
            if let Some(t) = typed.get(&f.name).filter(|t| !t.trim().is_empty()) {
                given.insert(
                    f.name.clone(),
                    f.read(t).map_err(|e| format!("{}: {e}", f.label()))?,
                );
            }
        }
        self.accept(&given)
    }

    /// A scripted answer (`--answer`): `accept` (the defaults), `decline`, `cancel`, or one JSON
    /// object of values (accepted, the defaults filling the rest).
    ///
    /// # Errors
    /// Anything else, or values that do not fit.
    pub fn scripted(&self, answer: &str) -> Result<Answer, String> {
        let a = answer.trim();
        match a.to_ascii_lowercase().as_str() {
            "accept" => return self.accept(&Map::new()).map(Answer::Accept),
            "decline" => return Ok(Answer::Decline),
            "cancel" => return Ok(Answer::Cancel),
            _ => {}
        }
        match serde_json::from_str::<Value>(a) {
            Ok(Value::Object(m)) => self.accept(&m).map(Answer::Accept),
            _ => Err(
                "answer a form with accept, decline, cancel or one JSON object of values".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The conformance suite's SEP-1034 request: every field has a default, none is required.
    fn defaults() -> Form {
        form(
            "please accept with defaults",
            &json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}
            }, "required": []}),
        )
        .expect("form")
    }

    #[test]
    fn a_hostile_schema_is_cut_to_what_a_form_can_show() {
        let many: Vec<String> = (0..=MAX_OPTIONS).map(|i| format!("o{i}")).collect();
        let f = form(
            &format!("\u{1b}[2J{}", "m".repeat(MAX_MESSAGE_CHARS + 50)),
            &json!({"type": "object", "properties": {
                "note": {"type": "string", "maxLength": u64::MAX, "minLength": 1u64 << 40,
                         "description": "d".repeat(5000)},
                "b\u{1b}[31mad": {"type": "boolean"}
            }}),
        )
        .expect("form");
        assert_eq!(
            f.message.chars().count(),
            MAX_MESSAGE_CHARS + 1,
            "cut, with an ellipsis"
        );
        assert!(!f.message.contains('\u{1b}'));
        let note = f.fields.iter().find(|x| x.name == "note").expect("note");
        match &note.kind {
            Kind::Text {
                min_length,
                max_length,
                ..
            } => {
                assert_eq!(*max_length, Some(MAX_ANSWER_CHARS as u64));
                assert_eq!(*min_length, Some(MAX_ANSWER_CHARS as u64));
            }
            other => panic!("{other:?}"),
        }
        assert!(note
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() <= MAX_DESCRIPTION_CHARS + 1));
        // A name with an escape sequence is shown with it made visible; the name sent back is
        // unchanged.
        let bad = f
            .fields
            .iter()
            .find(|x| x.name.starts_with('b'))
            .expect("bad");
        assert_eq!(bad.title.as_deref(), Some("b<U+001B>[31mad"));
        assert_eq!(bad.name, "b\u{1b}[31mad");
        let too_many = form(
            "m",
            &json!({"type": "object", "properties": {
                "pick": {"type": "string", "enum": many}
            }}),
        );
        assert!(too_many.is_err_and(|e| e.contains("at most 200")));
    }

    #[test]
    fn an_accept_takes_the_defaults_of_omitted_fields() {
        let f = defaults();
        assert_eq!(
            f.scripted("accept").expect("accept"),
            Answer::Accept(
                json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
                    .as_object()
                    .cloned()
                    .expect("object")
            )
        );
        let Answer::Accept(m) = f.scripted(r#"{"age": 41}"#).expect("json") else {
            panic!("accept")
        };
        assert_eq!(
            (m["age"].clone(), m["name"].clone()),
            (json!(41), json!("John Doe"))
        );
        assert_eq!(f.scripted("Decline"), Ok(Answer::Decline));
        assert_eq!(f.scripted("cancel"), Ok(Answer::Cancel));
        assert!(f.scripted("sure").is_err());
    }

    #[test]
    fn values_are_checked_and_typed_answers_read_by_type() {
        let f = form(
            "m",
            &json!({"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 5},
                "c": {"type": "string", "oneOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]},
                "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}, "maxItems": 2},
                "who": {"type": "string", "minLength": 2, "title": "Your name"},
                "ok": {"type": "boolean"}
            }, "required": ["who"]}),
        )
        .expect("form");
        assert!(
            f.scripted(r#"{"n": 7, "who": "me"}"#).is_err(),
            "out of range"
        );
        assert!(
            f.scripted(r#"{"n": 2.5, "who": "me"}"#).is_err(),
            "not whole"
        );
        assert!(
            f.scripted(r#"{"c": "q", "who": "me"}"#).is_err(),
            "not an option"
        );
        assert!(
            f.scripted(r#"{"nope": 1, "who": "me"}"#).is_err(),
            "no such field"
        );
        assert_eq!(
            f.scripted("accept").unwrap_err(),
            "Your name is required and has no default"
        );
        let typed: BTreeMap<String, String> = [
            ("n", "3"),
            ("c", "beta"),
            ("many", "1, z"),
            ("who", "Ann"),
            ("ok", "y"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            Value::Object(f.accept_typed(&typed).expect("typed")),
            json!({"n": 3, "c": "b", "many": ["x", "z"], "who": "Ann", "ok": true})
        );
        let mut bad = typed.clone();
        bad.insert("many".into(), "x,y,z".into());
        assert!(f.accept_typed(&bad).is_err(), "too many");
    }

    #[test]
    fn schemas_that_are_not_forms_are_refused() {
        assert!(form("m", &json!({"type": "object"})).is_err());
        assert!(form("m", &json!({"properties": {"a": {"type": "object"}}})).is_err());
        assert!(form(
            "m",
            &json!({"properties": {"a": {"type": "integer", "default": "x"}}})
        )
        .is_err());
        assert!(form(
            "m",
            &json!({"properties": {"a": {"type": "array", "items": {"type": "string"}}}})
        )
        .is_err());
    }
}
