//! The answer reader on every hostile shape the benchmark times (`tests/benches/parse.rs`), at
//! small sizes and around the nesting limit: what `read_answer`, `complete_object` and the
//! forgiving reader make of each is an insta snapshot, taken with the reader as it was before it
//! was made linear (the snapshot must not change when its speed does).
#![allow(clippy::expect_used, clippy::panic)]

use keyless_core::lang::ast::{Field, Shape};
use keyless_core::lang::loose::{self, MAX_DEPTH};
use keyless_core::lang::shape::{complete_object, read_answer};
use keyless_core::lang::Pos;
use std::fmt::Write;

fn field(name: &str, shape: Shape) -> Field {
    Field {
        name: name.into(),
        shape,
        pos: Pos { line: 1, column: 1 },
    }
}

/// The shapes a reading is checked against: the benchmark's, a list of objects, a number.
fn shapes() -> Vec<(&'static str, Shape)> {
    let strings = Shape::List(Some(Box::new(Shape::String)));
    vec![
        ("items", Shape::Object(vec![field("items", strings)])),
        (
            "list of a",
            Shape::List(Some(Box::new(Shape::Object(vec![field("a", Shape::Json)])))),
        ),
        ("number", Shape::Number),
    ]
}

/// Each hostile shape, `n` times over.
fn hostile(n: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "strict JSON",
            format!("{{\"items\": [{}\"x\"]}}", "\"a\",".repeat(n)),
        ),
        (
            "prose, then a fence",
            format!("{}```json\n{{\"items\": [\"x\"]}}\n```", "word ".repeat(n)),
        ),
        ("deep {", "{".repeat(n)),
        ("deep [", "[".repeat(n)),
        ("deep {\"a\":", "{\"a\":".repeat(n)),
        ("deep [{\"a\":", "[{\"a\":".repeat(n)),
        (
            "unclosed list of strings",
            format!("[{}", "\"a\",".repeat(n)),
        ),
        (
            "deep, then strings",
            format!("{}{}", "[".repeat(n.min(120)), "\"a\",".repeat(n)),
        ),
        ("unclosed strings", "{a: \"".repeat(n)),
        ("quotes", "\"".repeat(n)),
        ("quote, comma", "\", ".repeat(n)),
        (
            "many keys, unclosed",
            format!(
                "{{{}",
                (0..n).map(|i| format!("\"k{i}\": 1, ")).collect::<String>()
            ),
        ),
        (
            "one key, many times",
            format!("{{{}", "\"a\": 1, ".repeat(n)),
        ),
        (
            "line breaks after unquoted text",
            format!("{{a: x{}", "\n".repeat(n)),
        ),
        ("fences", "```\n".repeat(n)),
        ("closed objects", "{\"a\": [\"x\"]} ".repeat(n)),
        ("comments", "[/* a */ 1, // b\n".repeat(n)),
        (
            "deep, then an object",
            format!("{}{}{{\"items\": [\"x\"]}}", "[".repeat(n), "]".repeat(n)),
        ),
        (
            "stray braces, then objects",
            format!("{}{{\"a\": 1}} {{\"a\": 2}}", "{ ".repeat(n)),
        ),
    ]
}

/// A long text as its length and a hash (FNV-1a), so that the snapshot stays short.
fn short(s: String) -> String {
    if s.len() <= 240 {
        return s;
    }
    let h = s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("<{} bytes, fnv {h:016x}>", s.len())
}

#[test]
fn hostile_answers_read_as_before() {
    let mut out = String::new();
    let sizes = [
        0,
        1,
        2,
        3,
        7,
        40,
        MAX_DEPTH - 1,
        MAX_DEPTH,
        MAX_DEPTH + 1,
        150,
    ];
    for (name, _) in hostile(0) {
        let _ = writeln!(out, "## {name}");
        for n in sizes {
            let answer = hostile(n)
                .into_iter()
                .find(|(k, _)| *k == name)
                .map(|(_, a)| a)
                .unwrap_or_default();
            let _ = writeln!(out, "n={n}");
            let _ = writeln!(
                out,
                "  loose: {}",
                short(format!("{:?}", loose::read(&answer, 0)))
            );
            let _ = writeln!(
                out,
                "  complete_object: {}",
                short(format!("{:?}", complete_object(&answer)))
            );
            for (shape_name, shape) in shapes() {
                let r = read_answer(&answer, &shape);
                let _ = writeln!(out, "  {shape_name}: {}", short(format!("{r:?}")));
            }
        }
    }
    insta::assert_snapshot!("hostile_answers", out);
}
