//! Fuzzes the piece YAML loader and both validators: lenient must accept what strict accepts.
#![no_main]

use keyless_core::piece::{validate, Strictness};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(yaml) = std::str::from_utf8(data) else { return };
    let strict = validate(yaml, Strictness::Strict);
    let lenient = validate(yaml, Strictness::Lenient);
    if strict.piece.is_some() {
        assert!(lenient.piece.is_some());
    }
});
