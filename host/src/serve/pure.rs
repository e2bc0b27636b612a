//! Routes that only compute: status, check, policy and the system prompt.

use super::*;

pub(super) async fn status(State(st): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "name": "keyless-host",
        "version": env!("CARGO_PKG_VERSION"),
        "api": "v1",
        "workspace": st.ws.root().display().to_string(),
        "mode": st.exec.mode.as_str(),
        "pace": st.exec.settings.pace.as_str(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckIn {
    pub(super) reply: String,
    #[serde(default)]
    pub(super) settings: SettingsIn,
}

pub(super) async fn check_route(body: Bytes) -> Result<Response, ApiError> {
    let input: CheckIn = json_body(&body)?;
    let settings = input.settings.resolve()?;
    Ok(Json(check(&input.reply, &settings)).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PolicyIn {
    pub(super) command: String,
    #[serde(default)]
    pub(super) mode: Option<String>,
    #[serde(default)]
    pub(super) allow: Vec<String>,
}

pub(super) async fn policy_route(body: Bytes) -> Result<Response, ApiError> {
    let input: PolicyIn = json_body(&body)?;
    let mode = match input.mode {
        Some(m) => m.parse::<Mode>()?,
        None => Mode::default(),
    };
    if input.command.trim().is_empty() {
        return Err(ApiError::BadRequest("the command line is empty".into()));
    }
    Ok(Json(decide(&input.command, mode, &input.allow)).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct PromptQuery {
    pub(super) pace: Option<String>,
    pub(super) mode: Option<String>,
}

pub(super) async fn prompt_route(Query(q): Query<PromptQuery>) -> Result<Response, ApiError> {
    let settings = SettingsIn {
        pace: q.pace,
        limits: None,
    }
    .resolve()?;
    let mode = match q.mode {
        Some(m) => m.parse::<Mode>()?,
        None => Mode::default(),
    };
    let text = system_prompt(
        &settings,
        &PromptContext {
            mode,
            environment: None,
        },
    );
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}
