use super::*;

fn defaults() -> Vec<SiteAdapter> {
    load_sites(DEFAULT_SITES_JSON, None).unwrap()
}

/// The extension spreads these under the stored settings, with the names its `Settings` type
/// (generated from this struct) uses.
#[test]
fn extension_defaults_serialise_as_the_extension_reads_them() {
    let v = serde_json::to_value(extension_defaults()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "hostUrl": "http://127.0.0.1:7457",
            "mode": "Ask",
            "pace": "Balanced",
            "piece": "",
            "autoSend": true,
            "truncationBudgetSeconds": 90,
            "replyTimeoutSeconds": 600,
            "selectorOverrides": "",
        })
    );
}

#[test]
fn shipped_adapters_load() {
    let sites = defaults();
    let ids: Vec<&str> = sites.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["aistudio", "chatgpt", "claude", "gemini"]);
}

#[test]
fn host_lookup_takes_subdomains_not_lookalikes() {
    let sites = defaults();
    assert_eq!(site_for_host(&sites, "chatgpt.com").unwrap().id, "chatgpt");
    assert_eq!(
        site_for_host(&sites, "www.chatgpt.com").unwrap().id,
        "chatgpt"
    );
    assert!(site_for_host(&sites, "evilchatgpt.com").is_none());
    assert!(site_for_host(&sites, "chatgpt.com.evil").is_none());
}

#[test]
fn override_merges_one_selector() {
    let sites = load_sites(
        DEFAULT_SITES_JSON,
        Some(r#"{"chatgpt":{"selectors":{"composer":"div.new-composer"}}}"#),
    )
    .unwrap();
    let c = site_for_host(&sites, "chatgpt.com").unwrap();
    assert_eq!(c.selectors.composer, "div.new-composer");
    assert_eq!(
        c.selectors.send_button,
        "button[data-testid=\"send-button\"]"
    );
}

#[test]
fn watch_needs_all_three_signals() {
    let base = WatchInput {
        has_reply: true,
        has_command: true,
        has_eof: true,
        site_streaming: false,
        quiet_ms: QUIET_MS,
        ..WatchInput::default()
    };
    assert_eq!(watch(&base), WatchVerdict::Complete);
    let streaming = WatchInput {
        site_streaming: true,
        ..base
    };
    assert_eq!(watch(&streaming), WatchVerdict::Waiting);
    let noisy = WatchInput {
        quiet_ms: 10,
        ..base
    };
    assert_eq!(watch(&noisy), WatchVerdict::Waiting);
    // Where the stop signal was seen, @@eof and its end are decisive: no quiet period.
    let signalled = WatchInput {
        quiet_ms: 0,
        stop_signal_seen: true,
        ..base
    };
    assert_eq!(watch(&signalled), WatchVerdict::Complete);
    let no_eof = WatchInput {
        has_eof: false,
        ..base
    };
    assert_eq!(watch(&no_eof), WatchVerdict::Waiting);
    let stuck = WatchInput {
        has_eof: false,
        quiet_ms: 90_000,
        ..base
    };
    assert_eq!(watch(&stuck), WatchVerdict::Truncated);
}
