//! The API router in-process with tower's `oneshot`: routing and the JSON error shape of every
//! refusal, without sockets.
#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use keyless_host::exec::batch::ExecSettings;
use keyless_host::exec::workspace::Workspace;
use keyless_host::pairing::Pairings;
use keyless_host::server::{router, Shared, StateParts};
use std::sync::Arc;
use tower::ServiceExt;

const PORT: u16 = 7457;
const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn state(tmp: &tempfile::TempDir) -> Arc<Shared> {
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    Shared::new(StateParts {
        port: PORT,
        ws: Workspace::open(&ws).expect("workspace"),
        exec: ExecSettings {
            mode: keyless_core::Mode::Auto,
            ..ExecSettings::default()
        },
        environment: "OS: test".into(),
        pairings: Pairings::new(tmp.path().join("pairing.json")),
        pairing_code: "ABCD-EFGH".into(),
        local_token: TOKEN.into(),
        www: None,
    })
    .expect("state")
}

struct Call<'a> {
    method: &'a str,
    uri: &'a str,
    body: &'a str,
    host: &'a str,
    token: Option<&'a str>,
    content_type: &'a str,
    origin: Option<&'a str>,
}

const GET: Call<'static> = Call {
    method: "GET",
    uri: "/v1/status",
    body: "",
    host: "127.0.0.1:7457",
    token: Some(TOKEN),
    content_type: "application/json",
    origin: None,
};

async fn call(st: &Arc<Shared>, c: Call<'_>) -> (StatusCode, serde_json::Value) {
    let mut req = Request::builder()
        .method(c.method)
        .uri(c.uri)
        .header("host", c.host)
        .header("content-type", c.content_type);
    if let Some(t) = c.token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if let Some(o) = c.origin {
        req = req.header("origin", o);
    }
    let res = router(st.clone())
        .oneshot(req.body(Body::from(c.body.to_string())).expect("request"))
        .await
        .expect("response");
    let status = res.status();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    )
}

fn post<'a>(uri: &'a str, body: &'a str) -> Call<'a> {
    Call {
        method: "POST",
        uri,
        body,
        ..GET
    }
}

#[tokio::test]
async fn refusals_have_their_status_and_code() {
    let tmp = tempfile::tempdir().expect("tmp");
    let st = state(&tmp);
    let cases = [
        (
            Call { token: None, ..GET },
            StatusCode::UNAUTHORIZED,
            "KA_UNAUTHORIZED",
        ),
        (
            Call {
                token: Some("nope"),
                ..GET
            },
            StatusCode::UNAUTHORIZED,
            "KA_UNAUTHORIZED",
        ),
        (
            Call {
                host: "evil.example:7457",
                ..GET
            },
            StatusCode::FORBIDDEN,
            "KA_UNAUTHORIZED",
        ),
        (
            Call {
                host: "localhost:8080",
                ..GET
            },
            StatusCode::FORBIDDEN,
            "KA_UNAUTHORIZED",
        ),
        (
            Call {
                origin: Some("https://evil.example"),
                ..GET
            },
            StatusCode::FORBIDDEN,
            "KA_UNAUTHORIZED",
        ),
        (
            Call {
                origin: Some("chrome-extension://abcdefghijklmnopabcdefghijklmnop"),
                ..GET
            },
            StatusCode::FORBIDDEN,
            "KA_UNAUTHORIZED",
        ),
        (
            Call {
                content_type: "text/plain",
                ..post("/v1/check", "{}")
            },
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "KA_CONFIG_INVALID",
        ),
        (
            post("/v1/check", "{nope"),
            StatusCode::BAD_REQUEST,
            "KA_CONFIG_INVALID",
        ),
        (
            post("/v1/check", r#"{"reply":"x","settings":{"pace":"Turbo"}}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "KA_CONFIG_VALIDATION",
        ),
        (
            Call {
                uri: "/v1/nope",
                ..GET
            },
            StatusCode::NOT_FOUND,
            "KA_CONFIG_INVALID",
        ),
        (
            Call { uri: "/", ..GET },
            StatusCode::NOT_FOUND,
            "KA_CONFIG_INVALID",
        ),
        (
            post("/v1/sessions", r#"{"resume":"s-missing"}"#),
            StatusCode::NOT_FOUND,
            "KA_SESSION_NOT_FOUND",
        ),
        (
            post("/v1/sessions", r#"{"piece":"no-such-piece"}"#),
            StatusCode::BAD_REQUEST,
            "KA_CONFIG_INVALID",
        ),
        (
            post(
                "/v1/pair",
                r#"{"code":"ABCD-EFGH","extension_id":"abcdefghijklmnopabcdefghijklmnop"}"#,
            ),
            StatusCode::FORBIDDEN,
            "KA_UNAUTHORIZED",
        ),
        (
            post("/v1/confirmations/99", r#"{"approve":true}"#),
            StatusCode::NOT_FOUND,
            "KA_CONFIG_INVALID",
        ),
    ];
    for (i, (c, status, code)) in cases.into_iter().enumerate() {
        let (s, v) = call(&st, c).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (status, Some(code)),
            "case {i}: {v}"
        );
        assert!(
            v["message"].as_str().is_some_and(|m| !m.is_empty()),
            "case {i}: {v}"
        );
    }
    // The dashboard origin is accepted for the local token.
    let (s, _) = call(
        &st,
        Call {
            origin: Some("http://127.0.0.1:7457"),
            ..GET
        },
    )
    .await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn sessions_route_replies_and_conflicts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let st = state(&tmp);
    let (s, v) = call(&st, post("/v1/sessions", "{}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["prompt"]
        .as_str()
        .expect("prompt")
        .contains("# Environment\nOS: test"));
    let id = v["session"].as_str().expect("id").to_string();
    let uri = format!("/v1/sessions/{id}/replies");
    let (s, v) = call(
        &st,
        post(
            &uri,
            r#"{"reply":"@@mkdir out\n@@end\n@@next\n@@end\n@@eof\n"}"#,
        ),
    )
    .await;
    assert_eq!(
        (s, v["status"].as_str()),
        (StatusCode::OK, Some("done")),
        "{v}"
    );
    assert!(tmp.path().join("ws/out").is_dir());
    let (s, v) = call(&st, post(&uri, r#"{"reply":"@@bogus\n@@end\n@@eof\n"}"#)).await;
    assert_eq!(
        (s, v["status"].as_str()),
        (StatusCode::OK, Some("rejected")),
        "{v}"
    );
    assert!(v["text"]
        .as_str()
        .expect("text")
        .starts_with("[KEYLESSAGENT FORMAT ERROR]"));
    let (s, v) = call(
        &st,
        post(
            &uri,
            r#"{"reply":"@@next\n@@end\n@@eof\n","turn":5,"batch":1}"#,
        ),
    )
    .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (StatusCode::CONFLICT, Some("KA_CONFIG_VALIDATION")),
        "{v}"
    );
    let (s, v) = call(
        &st,
        Call {
            uri: &format!("/v1/sessions/{id}"),
            ..GET
        },
    )
    .await;
    assert_eq!(
        (s, v["batches"].as_array().map(Vec::len)),
        (StatusCode::OK, Some(2)),
        "{v}"
    );
    let (s, v) = call(
        &st,
        Call {
            uri: "/v1/audit",
            ..GET
        },
    )
    .await;
    assert_eq!(
        (s, v[0]["command"].as_str()),
        (StatusCode::OK, Some("mkdir")),
        "{v}"
    );
}

#[tokio::test]
async fn a_session_keeps_its_own_mode_and_pace() {
    let tmp = tempfile::tempdir().expect("tmp");
    let st = state(&tmp); // the host runs in Auto
    let (s, v) = call(&st, post("/v1/sessions", r#"{"mode":"ask","pace":"step"}"#)).await;
    assert_eq!(
        (s, v["mode"].as_str(), v["pace"].as_str()),
        (StatusCode::OK, Some("Ask"), Some("Step")),
        "{v}"
    );
    let id = v["session"].as_str().expect("id").to_string();
    // Step pace: two commands, the second is skipped with the seed's reason.
    let (s, v) = call(
        &st,
        post(
            &format!("/v1/sessions/{id}/replies"),
            r#"{"reply":"@@mkdir a\n@@end\n@@mkdir b\n@@end\n@@next\n@@end\n@@eof\n"}"#,
        ),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let text = v["text"].as_str().expect("text");
    assert!(text.contains("skipped 1 commands"), "{text}");
    assert!(tmp.path().join("ws/a").is_dir() && !tmp.path().join("ws/b").exists());
    let (s, v) = call(
        &st,
        post(
            &format!("/v1/sessions/{id}/settings"),
            r#"{"pace":"Batch","mode":"AutoSafe"}"#,
        ),
    )
    .await;
    assert_eq!(
        (s, v["mode"].as_str(), v["pace"].as_str()),
        (StatusCode::OK, Some("AutoSafe"), Some("Batch")),
        "{v}"
    );
    let (s, v) = call(
        &st,
        post(&format!("/v1/sessions/{id}/settings"), r#"{"mode":"yolo"}"#),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["code"].as_str(), Some("KA_CONFIG_VALIDATION"), "{v}");
    let (s, v) = call(
        &st,
        post("/v1/sessions/s-nope/settings", r#"{"mode":"Ask"}"#),
    )
    .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("KA_SESSION_NOT_FOUND")),
        "{v}"
    );
}

/// The dashboard's batch view shows each command's tier under the session's own mode, not the
/// host's default (the host runs in Auto; the session switches to Ask).
#[tokio::test]
async fn a_batch_shows_tiers_under_the_sessions_mode() {
    let tmp = tempfile::tempdir().expect("tmp");
    let st = state(&tmp);
    let (_, v) = call(&st, post("/v1/sessions", "{}")).await;
    let id = v["session"].as_str().expect("id").to_string();
    let (s, v) = call(
        &st,
        post(
            &format!("/v1/sessions/{id}/replies"),
            r#"{"reply":"@@runcommand\n<<<CMD\ntouch made.txt\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n"}"#,
        ),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let batch = v["batch_id"].as_str().expect("batch id").to_string();
    let uri = format!("/v1/batches/{batch}");
    let (_, v) = call(&st, Call { uri: &uri, ..GET }).await;
    assert_eq!(v["commands"][0]["decision"], "run", "{v}");
    let (s, _) = call(
        &st,
        post(&format!("/v1/sessions/{id}/settings"), r#"{"mode":"Ask"}"#),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (_, v) = call(&st, Call { uri: &uri, ..GET }).await;
    assert_eq!(v["commands"][0]["decision"], "confirm", "{v}");
}
