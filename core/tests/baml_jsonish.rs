//! BAML's own parser tests (`tests/peer-suites/baml-jsonish/vectors.json`): each raw answer read
//! against its shape by [`read_answer`], compared with the value BAML reads. The table of every
//! vector (agrees or not, and what was read) is an insta snapshot; every object-shaped vector (the
//! shapes a `generate` asks for) must agree, and each other difference is a choice documented in
//! docs/language.md ("Reading the model's answer").
#![allow(clippy::expect_used, clippy::panic)]

use keyless_core::lang::ast::{Field, Shape};
use keyless_core::lang::shape::read_answer;
use keyless_core::lang::Pos;
use serde_json::Value;

#[derive(serde::Deserialize)]
struct Vector {
    id: String,
    input: String,
    shape: Value,
    #[serde(default)]
    expected: Value,
    #[serde(default)]
    fail: bool,
    #[serde(default)]
    partial: bool,
}

/// The vector's shape in `.as` terms; `None` where `.as` has no such shape (`none`).
fn shape(v: &Value) -> Option<Shape> {
    Some(match v.get("type")?.as_str()? {
        "string" => Shape::String,
        "number" => Shape::Number,
        "boolean" => Shape::Boolean,
        "list" => Shape::List(Some(Box::new(shape(v.get("items")?)?))),
        "object" => Shape::Object(
            v.get("fields")?
                .as_object()?
                .iter()
                .map(|(name, s)| {
                    Some(Field {
                        name: name.clone(),
                        shape: shape(s)?,
                        pos: Pos { line: 0, column: 0 },
                    })
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    })
}

/// check.py's equality: numbers within 1e-9, booleans never numbers, objects by key set.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_f64().unwrap_or(f64::NAN) - y.as_f64().unwrap_or(f64::NAN)).abs() <= 1e-9
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same(p, q)))
        }
        _ => a == b,
    }
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../../tests/peer-suites/baml-jsonish/vectors.json");
    serde_json::from_str(text).expect("vectors.json")
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 100 {
        format!("{}…", s.chars().take(100).collect::<String>())
    } else {
        s
    }
}

#[test]
fn baml_vectors_read_as_baml_reads_them() {
    let (mut table, mut agree, mut run, mut objects, mut objects_agree) =
        (String::new(), 0, 0, 0, 0);
    let mut object_misses = Vec::new();
    for v in vectors() {
        if v.partial {
            table.push_str(&format!("skip  {} (streaming mode)\n", v.id));
            continue;
        }
        let Some(s) = shape(&v.shape) else {
            table.push_str(&format!("skip  {} (no such shape in .as)\n", v.id));
            continue;
        };
        run += 1;
        let r = read_answer(&v.input, &s);
        let ok = match (&r.value, v.fail) {
            (Err(_), true) => true,
            (Ok(got), false) => same(got, &v.expected),
            _ => false,
        };
        let is_object = matches!(s, Shape::Object(_));
        if is_object {
            objects += 1;
        }
        if ok {
            agree += 1;
            if is_object {
                objects_agree += 1;
            }
        } else if is_object {
            object_misses.push(v.id.clone());
        }
        let read = match &r.value {
            Ok(got) => format!("read {} from {} (score {})", short(got), r.source, r.score),
            Err(why) => format!("refused: {why}"),
        };
        let mark = if ok { "agree" } else { "DIFF " };
        table.push_str(&format!("{mark} {}: {read}\n", v.id));
        if !ok {
            table.push_str(&format!(
                "      BAML: {}\n",
                if v.fail {
                    "refuses".to_string()
                } else {
                    short(&v.expected)
                }
            ));
        }
    }
    let summary =
        format!("{agree}/{run} vectors agree; object-shaped: {objects_agree}/{objects}\n\n");
    eprint!("{summary}");
    insta::assert_snapshot!("baml_jsonish", format!("{summary}{table}"));
    assert!(
        object_misses.is_empty(),
        "object-shaped vectors that differ: {object_misses:?}"
    );
}

mod sloppy {
    //! Any value a shape accepts, written as JSON the way a careless model writes it, reads back
    //! equal.
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Map};

    /// A shape and a value that fits it.
    fn shaped() -> impl Strategy<Value = (Shape, Value)> + Clone {
        let text = "[a-zA-Z0-9 ,:{}\\[\\]\"'\\\\/\n\té😀-]{0,12}";
        let leaf = prop_oneof![
            text.prop_map(|s| (Shape::String, Value::String(s))),
            "[a-z]{1,5}( [a-z]{1,5}){0,2}".prop_map(|s| (Shape::String, Value::String(s))),
            any::<i32>().prop_map(|n| (Shape::Number, json!(n))),
            (-1.0e6f64..1.0e6).prop_map(|f| (Shape::Number, json!(f))),
            any::<bool>().prop_map(|b| (Shape::Boolean, json!(b))),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                inner.clone().prop_flat_map(|(s, v)| {
                    proptest::collection::vec(Just(v), 0..3).prop_map(move |items| {
                        (Shape::List(Some(Box::new(s.clone()))), Value::Array(items))
                    })
                }),
                object(inner),
            ]
        })
    }

    fn object(
        inner: impl Strategy<Value = (Shape, Value)> + Clone,
    ) -> impl Strategy<Value = (Shape, Value)> + Clone {
        proptest::collection::btree_map("[a-z_]{1,8}", inner, 1..4).prop_map(|m| {
            let mut fields = Vec::new();
            let mut obj = Map::new();
            for (name, (s, v)) in m {
                fields.push(Field {
                    name: name.clone(),
                    shape: s,
                    pos: Pos { line: 0, column: 0 },
                });
                obj.insert(name, v);
            }
            (Shape::Object(fields), Value::Object(obj))
        })
    }

    /// How careless the writer is, one choice per kind of slip.
    #[derive(Debug, Clone)]
    struct Slips {
        unquoted_keys: bool,
        single_quotes: bool,
        unquoted_words: bool,
        trailing_commas: bool,
        comments: bool,
        newlines: bool,
        wrap: u8,
        truncate: bool,
    }

    fn slips() -> impl Strategy<Value = Slips> {
        (any::<[bool; 7]>(), 0u8..4).prop_map(|(b, wrap)| Slips {
            unquoted_keys: b[0],
            single_quotes: b[1],
            unquoted_words: b[2],
            trailing_commas: b[3],
            comments: b[4],
            newlines: b[5],
            wrap,
            truncate: b[6],
        })
    }

    fn word(s: &str) -> bool {
        !s.is_empty()
            && s.split(' ')
                .all(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_lowercase()))
            && !["true", "false", "null", "nil"].contains(&s)
    }

    fn write(v: &Value, k: &Slips, out: &mut String) {
        let sep = if k.newlines { "\n  " } else { " " };
        match v {
            Value::String(s) if k.unquoted_words && word(s) => out.push_str(s),
            Value::String(s) if k.single_quotes && !s.contains(['\'', '\\', '\n']) => {
                out.push('\'');
                out.push_str(s);
                out.push('\'');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        out.push_str(sep);
                    }
                    write(x, k, out);
                }
                if k.trailing_commas && !items.is_empty() {
                    out.push(',');
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                out.push_str(sep);
                for (i, (key, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        out.push_str(sep);
                    }
                    if k.comments {
                        out.push_str("// the field, \"quoted\": {x}\n  /* and this */ ");
                    }
                    if k.unquoted_keys {
                        out.push_str(key);
                    } else {
                        out.push_str(&Value::String(key.clone()).to_string());
                    }
                    out.push_str(": ");
                    write(x, k, out);
                }
                if k.trailing_commas {
                    out.push(',');
                }
                out.push_str(sep);
                out.push('}');
            }
            _ => out.push_str(&v.to_string()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn a_fitting_value_written_sloppily_reads_back_equal(
            (shape, value) in object(shaped()),
            k in slips(),
        ) {
            let mut body = String::new();
            write(&value, &k, &mut body);
            if k.truncate {
                // Cut off at the end of the reply: the closing brackets are lost.
                while body.ends_with(['}', ']', ' ', '\n']) {
                    body.pop();
                }
            }
            let answer = match k.wrap {
                0 => body,
                1 => format!("```json\n{body}\n```"),
                2 if !k.truncate => format!("Here is the answer:\n\n{body}\n\nHope this helps."),
                2 => format!("Here is the answer:\n\n{body}"),
                _ => format!("Sure.\n```\n{body}"),
            };
            let r = read_answer(&answer, &shape);
            prop_assert_eq!(r.value.as_ref(), Ok(&value), "{}\nfrom {} of {}, repairs: {:?}", answer, r.source, r.candidates, r.repairs);
        }
    }
}
