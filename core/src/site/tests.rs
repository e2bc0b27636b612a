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
            "suggestNewChat": true,
        })
    );
}

#[test]
fn shipped_adapters_load() {
    let sites = defaults();
    let ids: Vec<&str> = sites.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "aistudio",
            "chatgpt",
            "claude",
            "copilot",
            "deepseek",
            "gemini",
            "grok",
            "kimi",
            "mistral",
            "openrouter",
            "perplexity",
            "qwen"
        ]
    );
    // Every site keeps its own ignore list and the common one (labels, thinking panels).
    for s in &sites {
        let ignore = s.selectors.ignore.as_ref().unwrap().all();
        for c in COMMON_IGNORE {
            assert!(ignore.iter().any(|i| i == c), "{}: {c}", s.id);
        }
    }
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
    assert_eq!(c.selectors.composer.all(), ["div.new-composer"]);
    assert_eq!(
        c.selectors.send_button.first(),
        "form[data-chatgpt-composer] button[type=\"submit\"][aria-label=\"Send\"]"
    );
    // A list is alternatives in order; an empty list or a bad one is refused, naming the key.
    let sites = load_sites(
        DEFAULT_SITES_JSON,
        Some(r#"{"chatgpt":{"selectors":{"composer":["div.a","textarea.b"]}}}"#),
    )
    .unwrap();
    let c = site_for_host(&sites, "chatgpt.com").unwrap();
    assert_eq!(c.selectors.composer.all(), ["div.a", "textarea.b"]);
    for bad in [
        r#"{"chatgpt":{"selectors":{"composer":[]}}}"#,
        r#"{"chatgpt":{"selectors":{"composer":["div.a","div[x"]}}}"#,
        r#"{"chatgpt":{"selectors":{"composer":7}}}"#,
    ] {
        let e = load_sites(DEFAULT_SITES_JSON, Some(bad)).unwrap_err();
        assert!(e.to_string().contains("composer"), "{bad}: {e}");
    }
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

#[test]
fn a_reply_done_mark_holds_the_reply_until_it_shows_and_the_text_is_quiet() {
    let page = |done: Option<bool>, quiet_ms: u64| PageObservation {
        reply_done: done,
        quiet_ms,
        ..PageObservation::default()
    };
    let text = "@@say\n<<<MSG\nhi\nMSG>>>\n@@end\n@@done\n@@end\n@@eof";
    let v = |p: &PageObservation| watch(&WatchInput::of(text, true, true, p));
    // No stop button seen, the Run button back, the last tokens still coming: no footer, no end.
    assert_eq!(v(&page(Some(false), 1_000)), WatchVerdict::Waiting);
    // A footer the site renamed never shows: after 5 s of quiet the reply is judged without it.
    assert_eq!(
        v(&page(Some(false), REPLY_DONE_WAIT_MS - 1)),
        WatchVerdict::Waiting
    );
    assert_eq!(
        v(&page(Some(false), REPLY_DONE_WAIT_MS)),
        WatchVerdict::Complete
    );
    // The footer shows, the text changed 20 ms ago: not yet.
    assert_eq!(v(&page(Some(true), 20)), WatchVerdict::Waiting);
    // The footer and a short quiet: complete, with no longer quiet period.
    assert_eq!(
        v(&page(Some(true), REPLY_DONE_QUIET_MS)),
        WatchVerdict::Complete
    );
    // Without a mark the old rule holds (QUIET_MS where no stop signal was seen).
    assert_eq!(v(&page(None, REPLY_DONE_QUIET_MS)), WatchVerdict::Waiting);
}

#[test]
fn an_unreadable_part_ends_the_reply_as_incomplete_never_complete() {
    let page = PageObservation {
        incomplete: true,
        stop_signal_seen: true,
        quiet_ms: 0,
        ..PageObservation::default()
    };
    let text = "~~~~agentscript\n@@done\n@@end\n@@eof\n~~~~";
    // Just stopped: the site's copy button may still answer; never complete meanwhile.
    assert_eq!(
        watch(&WatchInput::of(text, true, true, &page)),
        WatchVerdict::Waiting
    );
    let page = PageObservation {
        quiet_ms: QUIET_MS,
        ..page
    };
    let w = watch(&WatchInput::of(text, true, true, &page));
    assert_eq!(w, WatchVerdict::Incomplete);
    assert_eq!(w.code(), Some(crate::diag::Code::ReplyIncomplete));
    // While the site still streams, it waits (the page script may read it by then).
    let streaming = PageObservation {
        site_streaming: true,
        ..page
    };
    assert_eq!(
        watch(&WatchInput::of(text, true, true, &streaming)),
        WatchVerdict::Waiting
    );
}

#[test]
fn a_usage_limit_ends_the_wait_as_limited_once_the_site_stopped() {
    let text = "@@say\n<<<MSG\nhi\nMSG>>>\n@@end\n@@done\n@@end\n@@eof";
    let stopped = PageObservation {
        limited: true,
        stop_signal_seen: true,
        ..PageObservation::default()
    };
    let w = watch(&WatchInput::of(text, true, true, &stopped));
    // Even a reply with its @@eof runs nothing: the site may have cut it short.
    assert_eq!(w, WatchVerdict::Limited);
    assert_eq!(w.code(), Some(crate::diag::Code::ChatLimited));
    assert_eq!(w.code().map(|c| c.as_str()), Some("KA_CHAT_LIMITED"));
    // No reply at all (the site refused the message): limited too, not a timeout later.
    assert_eq!(
        watch(&WatchInput::of("", false, false, &stopped)),
        WatchVerdict::Limited
    );
    // While the site still streams, the banner is not judged yet (as for a full chat).
    let streaming = PageObservation {
        site_streaming: true,
        ..stopped
    };
    assert_eq!(
        watch(&WatchInput::of(text, true, true, &streaming)),
        WatchVerdict::Waiting
    );
    // A full chat and a usage limit at once: the chat is full (a new chat is needed either way).
    let both = PageObservation {
        exhausted: true,
        ..stopped
    };
    let w = watch(&WatchInput::of(text, true, true, &both));
    assert_eq!(w, WatchVerdict::Exhausted);
    assert_eq!(w.code(), Some(crate::diag::Code::ChatExhausted));
    // The observation as the extension sends it.
    let page: PageObservation =
        serde_json::from_str(r#"{"siteStreaming":false,"stopSignalSeen":true,"limited":true}"#)
            .unwrap();
    assert!(page.limited && !page.exhausted);
}

#[test]
fn every_site_has_phrases_that_name_a_limit_and_no_phrase_in_both_lists() {
    for s in defaults() {
        for p in &s.limited_phrases {
            assert!(
                !s.exhausted_phrases
                    .iter()
                    .any(|e| p.contains(e.as_str()) || e.contains(p.as_str())),
                "{}: {p:?} is in both lists' reach: the verdict would depend on the order",
                s.id
            );
            // Specific enough: a site's sentence, never a bare word a reply could hold.
            assert!(
                p.split_whitespace().count() >= 2 && p.len() >= 15,
                "{}: {p:?} is too short",
                s.id
            );
        }
    }
    // Every shipped site names its long-thread mark: the suggestion is on by default.
    for s in defaults() {
        assert!(
            s.long_thread_chars >= 50_000,
            "{}: {}",
            s.id,
            s.long_thread_chars
        );
    }
    let limited: Vec<_> = defaults()
        .into_iter()
        .filter(|s| !s.limited_phrases.is_empty())
        .map(|s| s.id)
        .collect();
    assert!(limited.len() >= 9, "{limited:?}");
}

fn node(tag: &str, id: &str, classes: &[&str], attrs: &[(&str, &str)]) -> PickedNode {
    PickedNode {
        tag: tag.into(),
        id: id.into(),
        classes: classes.iter().map(|c| (*c).to_string()).collect(),
        attrs: attrs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
    }
}

#[test]
fn picked_selectors_prefer_names_to_classes_and_never_take_build_hashes() {
    let p = Picked {
        key: "composer".into(),
        node: node(
            "textarea",
            ":r1a:",
            &[
                "_9663006",
                "input-module__input--iApWs",
                "w-full",
                "css-1x2y3z",
            ],
            &[("aria-label", "Ask anything"), ("rows", "2")],
        ),
        ancestors: vec![node(
            "form",
            "",
            &["composer"],
            &[("data-testid", "composer-form")],
        )],
    };
    let c = pick_candidates(&p);
    assert_eq!(c[0], r#"textarea[aria-label="Ask anything"]"#);
    assert!(c.iter().all(|s| !s.contains("r1a")
        && !s.contains("9663006")
        && !s.contains("iApWs")
        && !s.contains("css-1")));
    assert!(c.contains(&"textarea.w-full".to_string()));
    assert!(c.contains(&r#"form[data-testid="composer-form"] textarea"#.to_string()));
    let named = c.iter().position(|s| s.contains("aria-label")).unwrap();
    let classed = c.iter().position(|s| s.contains(".w-full")).unwrap();
    assert!(named < classed);
    // A quote in a label is escaped, not a way out of the attribute.
    let q = Picked {
        key: "send_button".into(),
        node: node("button", "", &[], &[("aria-label", r#"Send "now"] *"#)]),
        ancestors: vec![],
    };
    assert_eq!(
        pick_candidates(&q)[0],
        r#"button[aria-label="Send \"now\"] *"]"#
    );
}

#[test]
fn the_picker_keeps_a_unique_match_for_the_composer_and_every_reply_for_replies() {
    let f = |count, has_picked, hits_user| CandidateFacts {
        count,
        has_picked,
        hits_user,
    };
    let cands: Vec<String> = ["a", "b", "c"].iter().map(|s| (*s).to_string()).collect();
    assert_eq!(
        choose_pick(
            "composer",
            &cands,
            &[f(2, true, false), f(1, false, false), f(1, true, false)]
        ),
        Some(2)
    );
    assert_eq!(
        choose_pick("composer", &cands, &[f(0, false, false); 3]),
        None
    );
    // The replies: the first that finds the clicked one and none of the user's messages.
    assert_eq!(
        choose_pick(
            "assistant_message",
            &cands,
            &[f(4, true, true), f(3, true, false), f(9, true, false)]
        ),
        Some(1)
    );
    // Never a per-message value, an id, or a bare tag for the replies.
    let reply = Picked {
        key: "assistant_message".into(),
        node: node(
            "article",
            "msg-a1b2",
            &["turn"],
            &[("data-testid", "conversation-turn-12"), ("role", "article")],
        ),
        ancestors: vec![node("main", "", &[], &[("role", "main")])],
    };
    let c = pick_candidates(&reply);
    assert!(
        c.iter()
            .all(|s| !s.contains("turn-12") && !s.contains('#') && s != "article"),
        "{c:?}"
    );
    assert!(
        c.contains(&r#"article[role="article"]"#.to_string()),
        "{c:?}"
    );
}

#[test]
fn a_pick_becomes_an_override_before_what_the_adapter_had() {
    let current = vec!["textarea.old".to_string()];
    let text = add_override(
        DEFAULT_SITES_JSON,
        Some(r#"{"chatgpt":{"selectors":{"send_button":"button.go"}}}"#),
        "chatgpt",
        "composer",
        "textarea#new",
        &current,
    )
    .unwrap();
    let sites = load_sites(DEFAULT_SITES_JSON, Some(&text)).unwrap();
    let c = site_for_host(&sites, "chatgpt.com").unwrap();
    assert_eq!(c.selectors.composer.all(), ["textarea#new", "textarea.old"]);
    assert_eq!(c.selectors.send_button.all(), ["button.go"]);
    assert!(add_override(DEFAULT_SITES_JSON, None, "chatgpt", "composer", "div[", &[]).is_err());
    // An imported file is checked, and merged over the user's own selector by selector.
    let merged = import_overrides(
        DEFAULT_SITES_JSON,
        Some(&text),
        r#"{"chatgpt":{"selectors":{"send_button":"button.shared"}}}"#,
    )
    .unwrap();
    let sites = load_sites(DEFAULT_SITES_JSON, Some(&merged)).unwrap();
    let c = site_for_host(&sites, "chatgpt.com").unwrap();
    assert_eq!(c.selectors.composer.first(), "textarea#new");
    assert_eq!(c.selectors.send_button.all(), ["button.shared"]);
    let e = import_overrides(
        DEFAULT_SITES_JSON,
        None,
        r#"{"chatgpt":{"selectors":{"composr":"x"}}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("did you mean \"composer\""), "{e}");
}
