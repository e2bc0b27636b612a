//! Fixture tests for the site adapters: each `tests/sites/*.json` is a user's selector override;
//! its snapshot holds the load result (the sites it changes, or the error with its KA_ code).

#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

use keyless_core::site::{
    doctor, load_sites, watch, SelectorProbe, WatchInput, DEFAULT_SITES_JSON,
};
use proptest::prelude::*;
use std::fs;
use std::path::Path;

fn describe(text: &str) -> String {
    match load_sites(DEFAULT_SITES_JSON, Some(text)) {
        Ok(sites) => {
            let defaults = load_sites(DEFAULT_SITES_JSON, None).expect("shipped sites load");
            let changed: Vec<_> = sites.iter().filter(|s| !defaults.contains(s)).collect();
            format!(
                "ok\n{}",
                serde_json::to_string_pretty(&changed).expect("serialisable")
            )
        }
        Err(e) => format!("{} {e}", e.code()),
    }
}

#[test]
fn override_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sites");
    let mut names: Vec<_> = fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "fixtures missing");
    for path in names {
        let text = fs::read_to_string(&path).expect("fixture");
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("name")
            .to_string();
        insta::assert_snapshot!(format!("site_{name}"), describe(&text));
    }
}

#[test]
fn doctor_names_the_broken_selector() {
    let sites = load_sites(DEFAULT_SITES_JSON, None).expect("shipped sites load");
    let chatgpt = sites.iter().find(|s| s.id == "chatgpt").expect("chatgpt");
    let probes: Vec<SelectorProbe> = [
        ("assistant_message", Some(2)),
        ("assistant_content", Some(2)),
        ("user_message", Some(2)),
        ("streaming", Some(0)),
        ("composer", Some(0)),
        ("send_button", None),
        ("file_input", Some(1)),
        ("attachment_chip", Some(0)),
        ("ignore", Some(4)),
    ]
    .into_iter()
    .map(|(k, m)| SelectorProbe {
        key: k.to_string(),
        matches: m,
        // The composer found by its second alternative: the doctor says the first broke.
        alternative: match (k, m) {
            ("composer", _) => None,
            ("user_message", _) => Some(1),
            (_, Some(n)) if n > 0 => Some(0),
            _ => None,
        },
    })
    .collect();
    let report: Vec<String> = doctor(chatgpt, &probes)
        .into_iter()
        .map(|l| {
            format!(
                "{:<18} {:<8} {:<24} {}{}",
                l.key,
                l.status,
                l.code.map(|c| c.as_str()).unwrap_or("-"),
                l.message,
                l.pick
                    .map(|p| format!(" [Pick it: {p}]"))
                    .unwrap_or_default()
            )
        })
        .collect();
    insta::assert_snapshot!("doctor_chatgpt", report.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn loading_overrides_never_panics(text in "\\PC{0,200}") {
        let _ = load_sites(DEFAULT_SITES_JSON, Some(&text));
    }

    #[test]
    fn json_shaped_overrides_never_panic(
        id in "(chatgpt|claude|x[a-z]{0,4})",
        key in "(name|hosts|composer_kind|max_paste_chars|selectors|exhausted_phrases|limited_phrases|long_thread_chars|[a-z_]{1,8})",
        value in "(\"[^\"\\\\]{0,12}\"|[0-9]{1,8}|null|\\[\\]|\\{\\}|\\{\"composer\":\"[^\"\\\\]{0,10}\"\\})",
    ) {
        let _ = load_sites(DEFAULT_SITES_JSON, Some(&format!("{{\"{id}\":{{\"{key}\":{value}}}}}")));
    }

    /// A stall alone never completes a reply: completion needs @@eof and the site stopped.
    #[test]
    fn completion_needs_eof_and_stop(
        has_command: bool, has_eof: bool, site_streaming: bool, exhausted: bool, limited: bool, has_reply: bool,
        stop_signal_seen: bool, incomplete: bool,
        quiet_ms in 0u64..200_000, waited_ms in 0u64..1_000_000,
        budget in 0u32..200, timeout in 0u32..2000,
    ) {
        let i = WatchInput { has_command, has_eof, site_streaming, stop_signal_seen, quiet_ms, waited_ms, exhausted, limited, has_reply, incomplete,
            truncation_budget_seconds: budget, reply_timeout_seconds: timeout };
        let v = watch(&i);
        if v == keyless_core::site::WatchVerdict::Complete {
            // A reply with a part the page could not show is never complete.
            prop_assert!(!incomplete);
            prop_assert!(has_eof && !site_streaming && has_reply);
            // Without a stop signal seen during the reply, the quiet period guards completion.
            prop_assert!(stop_signal_seen || quiet_ms >= keyless_core::site::QUIET_MS);
        }
        if v == keyless_core::site::WatchVerdict::CompleteWithoutEof {
            prop_assert!(!has_command && !site_streaming);
        }
        // A site's notice shown once it stopped ends the wait: nothing of the reply runs.
        if (exhausted || limited) && !site_streaming {
            prop_assert!(matches!(v, keyless_core::site::WatchVerdict::Exhausted | keyless_core::site::WatchVerdict::Limited));
        }
        if v == keyless_core::site::WatchVerdict::Limited {
            prop_assert!(limited && !exhausted && !site_streaming);
        }
    }
}
