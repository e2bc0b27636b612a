//! Fuzzes the reply parser (full and streaming), planning and the correction text, with and
//! without the extension commands (MCP, SSH) offered, and their policy verdicts.
#![no_main]

use keyless_core::check::check;
use keyless_core::policy::verdict::command_verdict;
use keyless_core::parse::{parse_partial_with, parse_with};
use keyless_core::{parse, parse_partial, CommandKind, Limits, Mode, Settings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = Limits::default();
    let full = parse(text, &limits);
    assert_eq!(full.ok(), full.diagnostics.is_empty());
    let _ = parse_partial(text, &limits);
    let report = check(text, &Settings::default());
    assert_eq!(report.ok, full.ok());
    let ext = parse_with(text, &limits, &CommandKind::EXTENSIONS);
    assert_eq!(ext.ok(), ext.diagnostics.is_empty());
    let _ = parse_partial_with(text, &limits, &CommandKind::EXTENSIONS);
    for c in &ext.reply.commands {
        if c.kind.is_extension() {
            // Every extension command has a verdict, and an SSH line is never below Execute.
            let v = command_verdict(c, Mode::Auto, &[], &Default::default());
            let v = v.expect("an extension command always has a verdict");
            if c.kind.is_ssh() {
                assert!(v.tier >= keyless_core::policy::Tier::Execute);
            }
        }
    }
});
