//! Fuzzes the `.as` tokenizer, parser, analyzer and formatter: never a panic, and whatever parses
//! formats to text that parses again to the same canonical text.
#![no_main]

use keyless_core::lang::{self, format::format_source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let _ = lang::check(src);
    if let Ok(formatted) = format_source(src) {
        assert_eq!(format_source(&formatted).ok().as_deref(), Some(formatted.as_str()));
    }
});
