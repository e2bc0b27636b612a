//! Fuzzes the reply parser (full and streaming), planning and the correction text.
#![no_main]

use keyless_core::check::check;
use keyless_core::{parse, parse_partial, Limits, Settings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = Limits::default();
    let full = parse(text, &limits);
    assert_eq!(full.ok(), full.diagnostics.is_empty());
    let _ = parse_partial(text, &limits);
    let report = check(text, &Settings::default());
    assert_eq!(report.ok, full.ok());
});
