//! The adapter in a real browser: wasm-bindgen-test runs these in headless Chromium through
//! chromedriver (`cargo xtask test`; by hand: see docs/testing.md). Each export answers with plain
//! JS values shaped like the core's serde output, and errors carry their KA_ code.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly

use keyless_wasm::{
    check_reply, classify_command, doctor_report, follow_reply, load_sites_js, parse_partial_reply,
    site_for_host_js, system_prompt, utf16_spans, validate_piece,
};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

fn json(v: &JsValue) -> serde_json::Value {
    let text: String = js_sys::JSON::stringify(v).expect("stringify").into();
    serde_json::from_str(&text).expect("json")
}

fn obj(text: &str) -> JsValue {
    js_sys::JSON::parse(text).expect("parse")
}

const BROKEN: &str =
    "@@say\n<<<MSG\nhi\nMSG>>>\n@@end\n@@createfile a.txt\n@@end\n@@next\n@@end\n@@eof\n";

#[wasm_bindgen_test]
fn check_reply_gives_code_and_line() {
    let r = json(&check_reply(BROKEN, JsValue::UNDEFINED).expect("check"));
    assert_eq!(r["ok"], false);
    assert_eq!(r["diagnostics"][0]["code"], "KA_PARSE_UNKNOWN_COMMAND");
    assert_eq!(r["diagnostics"][0]["line"], 6);
    assert!(r["correction"]
        .as_str()
        .expect("correction")
        .starts_with("[KEYLESSAGENT FORMAT ERROR]"));
}

#[wasm_bindgen_test]
fn bad_settings_are_a_js_error_with_its_code() {
    let e = check_reply("@@eof\n", obj(r#"{"pace":"Turbo"}"#)).expect_err("bad pace");
    // The same failure, typed, for the extension: it never reads the code out of the message.
    let wire = json(&js_sys::Reflect::get(&e, &JsValue::from_str("wire")).expect("wire"));
    let msg: String = js_sys::Error::from(e).message().into();
    assert!(msg.starts_with("KA_CONFIG_VALIDATION"), "{msg}");
    assert_eq!(wire["code"], "KA_CONFIG_VALIDATION");
    assert_eq!(
        format!(
            "KA_CONFIG_VALIDATION {}",
            wire["message"].as_str().expect("message")
        ),
        msg
    );
}

#[wasm_bindgen_test]
fn partial_parse_and_follow_agree_on_streaming_text() {
    let prefix = &BROKEN[..BROKEN.find("@@next").expect("next")];
    let p = json(&parse_partial_reply(prefix, JsValue::UNDEFINED).expect("partial"));
    assert_eq!(p["diagnostics"][0]["line"], 6);
    let f = json(
        &follow_reply(
            prefix,
            JsValue::UNDEFINED,
            obj(r#"{"siteStreaming":true,"quietMs":5}"#),
        )
        .expect("follow"),
    );
    assert_eq!(f["verdict"], "waiting");
    assert_eq!(f["final"], false);
    assert_eq!(f["diagnostics"][0]["line"], 6);
    let done = json(
        &follow_reply(
            BROKEN,
            JsValue::UNDEFINED,
            obj(r#"{"siteStreaming":false,"quietMs":900}"#),
        )
        .expect("follow"),
    );
    assert_eq!(done["verdict"], "complete");
    assert_eq!(done["final"], true);
}

#[wasm_bindgen_test]
fn policy_prompt_and_piece() {
    let v = json(&classify_command("rm -rf /", obj(r#"{"mode":"Auto"}"#)).expect("policy"));
    assert_eq!(v["tier"], "Denied");
    assert!(system_prompt(JsValue::UNDEFINED)
        .expect("prompt")
        .contains("AgentScript v1"));
    let p = json(&validate_piece("name: x\n", false).expect("piece"));
    assert!(!p["errors"].as_array().expect("errors").is_empty());
}

#[wasm_bindgen_test]
fn sites_load_override_and_doctor() {
    let all = json(&load_sites_js(None).expect("sites"));
    assert_eq!(all.as_array().expect("list").len(), 12);
    let s = site_for_host_js(
        Some(r#"{"chatgpt":{"selectors":{"composer":"div.x"}}}"#.into()),
        "chatgpt.com",
    )
    .expect("site");
    // A selector is a list of alternatives; one string is a list of one.
    assert_eq!(
        json(&s)["selectors"]["composer"],
        serde_json::json!(["div.x"])
    );
    let bad = load_sites_js(Some(r#"{"chatgpt":{"selectors":{"composr":"x"}}}"#.into()))
        .expect_err("typo");
    let msg: String = js_sys::Error::from(bad).message().into();
    assert!(msg.contains("did you mean \"composer\""), "{msg}");
    let lines = json(
        &doctor_report(
            s,
            obj(r#"[{"key":"composer","matches":0,"alternative":null}]"#),
        )
        .expect("doctor"),
    );
    let composer = lines
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["key"] == "composer")
        .expect("composer")
        .clone();
    assert_eq!(composer["code"], "KA_SELECTOR_NOT_FOUND");
    // The page's panel offers to pick it.
    assert_eq!(composer["pick"], "the box where you type your message");
}

#[wasm_bindgen_test]
fn utf16_spans_index_js_strings() {
    let text = "a\u{1F600}\r\nbé\n";
    let spans = json(&utf16_spans(text, vec![1, 2, 9]).expect("spans"));
    let js = js_sys::JsString::from(text);
    let slice = |i: usize| -> String {
        let s = &spans[i];
        js.slice(
            s["start"].as_u64().expect("start") as u32,
            s["end"].as_u64().expect("end") as u32,
        )
        .into()
    };
    assert_eq!(slice(0), "a\u{1F600}");
    assert_eq!(slice(1), "bé");
    assert!(spans[2].is_null());
}
