//! Routes that only compute: status, check, policy (judged in the served workspace) and the system
//! prompt.

use super::sessions::resolve_settings;
use super::state::{blocking, json_body, ApiError, Shared};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self};
use keyless_core::check::check;
use keyless_core::message::{system_prompt, PromptContext};
use keyless_core::policy::decide_with;
use keyless_core::Mode;
use serde::Deserialize;
use std::sync::Arc;

pub(super) async fn status(State(st): State<Arc<Shared>>) -> Json<api::Status> {
    Json(api::Status {
        name: "keyless-host".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        api: "v1".into(),
        workspace: st.ws.root().display().to_string(),
        mode: st.exec.mode,
        pace: st.exec.settings.pace,
    })
}

pub(super) async fn check_route(body: Bytes) -> Result<Response, ApiError> {
    let input: api::CheckRequest = json_body(&body)?;
    let settings = resolve_settings(input.settings.unwrap_or_default())?;
    Ok(Json(check(&input.reply, &settings)).into_response())
}

pub(super) async fn policy_route(
    State(st): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: api::PolicyRequest = json_body(&body)?;
    let mode = match input.mode {
        Some(m) => m.parse::<Mode>()?,
        None => Mode::default(),
    };
    if input.command.trim().is_empty() {
        return Err(ApiError::BadRequest("the command line is empty".into()));
    }
    // Judged in the served workspace, as the executor would.
    let context =
        blocking(move || Ok(crate::exec::policy_context::context(st.ws.root(), None))).await?;
    Ok(Json(decide_with(&input.command, mode, &input.allow, &context)).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct PromptQuery {
    pub(super) pace: Option<String>,
    pub(super) mode: Option<String>,
}

pub(super) async fn prompt_route(Query(q): Query<PromptQuery>) -> Result<Response, ApiError> {
    let settings = resolve_settings(api::SettingsRequest {
        pace: q.pace,
        limits: None,
    })?;
    let mode = match q.mode {
        Some(m) => m.parse::<Mode>()?,
        None => Mode::default(),
    };
    let text = system_prompt(
        &settings,
        &PromptContext {
            mode,
            environment: None,
            ..Default::default()
        },
    );
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}
