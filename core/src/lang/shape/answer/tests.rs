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
