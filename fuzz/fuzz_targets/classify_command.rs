//! Fuzzes the command-line lexer and classifier in every mode.
#![no_main]

use keyless_core::policy::decide;
use keyless_core::Mode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    for mode in [Mode::Ask, Mode::AutoSafe, Mode::Auto] {
        let v = decide(line, mode, &["npm run test *".to_string()]);
        assert_eq!(v.tier, v.segments.iter().map(|s| s.tier).max().unwrap_or(v.tier));
    }
});
