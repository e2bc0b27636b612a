use super::*;
use proptest::prelude::*;
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

fn items() -> Shape {
    Shape::Object(vec![crate::lang::ast::Field {
        name: "items".into(),
        shape: Shape::List(Some(Box::new(Shape::String))),
        pos: crate::lang::Pos { line: 1, column: 1 },
    }])
}

#[test]
fn an_object_after_nesting_too_deep_is_found() {
    for (open, close) in [("[", "]"), ("{\"a\":", "}"), ("[{\"a\":", "}]")] {
        let (open, close) = (open.repeat(150), close.repeat(150));
        let answer = format!("{open}{close} then {{\"items\": [\"x\"]}}");
        let r = read_answer(&answer, &items());
        assert_eq!(r.value, Ok(json!({"items": ["x"]})), "{open}");
    }
}

#[test]
fn a_list_is_refused_by_an_object_shape_without_being_made() {
    let answer = format!("[{}", "\"a\",".repeat(1000));
    let r = read_answer(&answer, &items());
    assert_eq!(
        r.value,
        Err("the value must be an object, not a list".to_string())
    );
    // Repeated values are one candidate, whatever their length.
    let answer = "{\"items\": [\"x\"]} ".repeat(500);
    let r = read_answer(&answer, &items());
    assert_eq!((r.candidates, r.score), (1, 0));
}

/// Answers made of the pieces the reader and the candidate search turn on: brackets, keys, the
/// shape's own field, fences, comments, cut-off ends, nesting too deep.
fn answers() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        8 => proptest::sample::select(vec![
            "{", "}", "[", "]", "\"a\"", "\"items\"", "Items", "\"", ",", ":", " ", "a", "\n",
            "'", "//", "/*", "*/", "true", "1", "\\", "```json\n", "```", "\n```\n",
            "{\"items\": [\"x\"]}", "{\"a\": 1, \"a\": 2}", "then ",
        ]).prop_map(str::to_string),
        1 => (1usize..120).prop_map(|n| "[".repeat(n)),
        1 => (1usize..120).prop_map(|n| "{\"a\":".repeat(n)),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

fn shapes() -> Vec<Shape> {
    let field = |name: &str, shape| crate::lang::ast::Field {
        name: name.into(),
        shape,
        pos: crate::lang::Pos { line: 1, column: 1 },
    };
    vec![
        items(),
        Shape::Object(vec![field("a", Shape::Number), field("items", Shape::Json)]),
        Shape::List(None),
        Shape::List(Some(Box::new(items()))),
        Shape::Number,
        Shape::Json,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// The first candidate that matters, made as it is read, is what a scan and a later reading
    /// make of it: the same value, repairs, score, source and number of candidates.
    #[test]
    fn making_the_first_candidate_as_it_is_read_changes_no_reading(a in answers()) {
        for shape in shapes() {
            prop_assert_eq!(read_making(&a, &shape, true), read_making(&a, &shape, false));
        }
    }
}
