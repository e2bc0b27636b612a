//! Every corpus reply, checked in-process by keyless-core against its expected report.

use keyless_core::check::check;
use keyless_tests::{cases, compare_or_bless, settings_for};

#[test]
fn corpus_matches_expected_reports() {
    let cases = cases();
    assert!(cases.len() >= 50, "the corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let text = std::fs::read_to_string(&case.reply).expect("reply");
        let report = check(&text, &settings_for(&case.args));
        let actual = serde_json::to_value(&report).expect("json");
        if let Some(diff) = compare_or_bless(&case.expected, &actual) {
            failures.push(diff);
        }
        // Names say what to expect: ok_* must pass, err_* must be rejected.
        assert_eq!(
            report.ok,
            case.name.starts_with("ok_"),
            "{}: ok={}",
            case.name,
            report.ok
        );
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_parse_code_has_a_corpus_case() {
    use keyless_core::Code;
    let all: String = cases()
        .iter()
        .map(|c| std::fs::read_to_string(&c.expected).unwrap_or_default())
        .collect();
    for code in [
        Code::ParseUnknownCommand,
        Code::ParseStrayText,
        Code::ParseMissingEof,
        Code::ParseTextAfterEof,
        Code::ParseUnterminatedBlock,
        Code::ParseMissingPayload,
        Code::ParseUnexpectedPayload,
        Code::ParseMissingArgument,
        Code::ParseBadMarker,
        Code::ParseBadPath,
        Code::ParseBadOption,
        Code::ParseConflictingControl,
        Code::ParseSayOnly,
        Code::ReplyEmpty,
        Code::LimitResponseChars,
        Code::LimitFileContentChars,
    ] {
        assert!(
            all.contains(code.as_str()),
            "no corpus case produces {code}"
        );
    }
}
