//! While a valid reply streams, the overlay shows no problem: on every valid reply of the corpus
//! and every prefix of it (cut at any character), as the page renders it (bare, or with the page's
//! closing fence after an open code block), the follow report has no diagnostics.
#![allow(clippy::expect_used)]

use keyless_core::site::{follow, PageObservation};
use keyless_core::Mode;

#[test]
fn no_false_problems_while_a_valid_reply_streams() {
    let mut prefixes = 0usize;
    for case in keyless_tests::cases() {
        let text = std::fs::read_to_string(&case.reply).expect("reply");
        let settings = keyless_tests::settings_for(&case.args);
        if !keyless_core::parse(&text, &settings.limits).ok() {
            continue;
        }
        let page = PageObservation {
            site_streaming: true,
            ..PageObservation::default()
        };
        for (i, _) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            let prefix = &text[..i];
            for shown in [
                prefix.to_string(),
                format!("{prefix}\n```"),
                format!("{prefix}\n~~~~"),
            ] {
                prefixes += 1;
                let r = follow(
                    &shown,
                    &settings,
                    &keyless_core::policy::verdict::Judge::new(Mode::Ask, Vec::new()),
                    &page,
                );
                assert!(
                    r.diagnostics.is_empty(),
                    "{}: a prefix of {} characters shows {:?}\n---\n{shown}\n---",
                    case.name,
                    i,
                    r.diagnostics
                );
            }
        }
    }
    assert!(prefixes > 10_000, "only {prefixes} prefixes");
}
