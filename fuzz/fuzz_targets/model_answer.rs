//! Fuzzes the reading of a model's answer (`read_answer` with its forgiving reader, and
//! `complete_object`) and a `keyless://chat` reply's follower: never a panic, whatever the answer; a
//! value read back fits the shape.
#![no_main]

use keyless_core::lang::ast::{Field, Shape};
use keyless_core::lang::chat::follow_generation;
use keyless_core::lang::shape::{check, complete_object, read_answer};
use keyless_core::lang::Pos;
use keyless_core::site::PageObservation;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(answer) = std::str::from_utf8(data) else { return };
    let shape = Shape::Object(vec![Field {
        name: "items".into(),
        shape: Shape::List(Some(Box::new(Shape::String))),
        pos: Pos { line: 1, column: 1 },
    }]);
    if let Some(v) = complete_object(answer) {
        let _ = check(&v, &shape, "");
    }
    if let Ok(v) = read_answer(answer, &shape).value {
        assert!(check(&v, &shape, "").is_ok(), "a value read does not fit: {v}");
    }
    let page = PageObservation {
        quiet_ms: 5_000,
        ..PageObservation::default()
    };
    let _ = follow_generation(answer, &shape, &page);
});
