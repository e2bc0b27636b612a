//! `keyless-host serve`: the localhost API. This first part serves the pure routes that need no
//! workspace and no pairing (status, check, policy, prompt); executing batches comes with the
//! session API.
//!
//! Every request must name this server in its Host header (127.0.0.1 or localhost with our port),
//! which defeats DNS rebinding. POST bodies must be `application/json` (no text/plain CSRF) and at
//! most [`MAX_BODY_BYTES`].

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use keyless_core::check::check;
use keyless_core::message::{system_prompt, PromptContext};
use keyless_core::policy::decide;
use keyless_core::{Code, Limits, Mode, Pace, Settings};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;

/// Request bodies larger than this are refused (a maximal reply is 60,000 characters).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// The default port.
pub const DEFAULT_PORT: u16 = 7457;

/// Errors of the HTTP layer, each with its KA_ code and HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the Host header must be 127.0.0.1:{0} or localhost:{0}")]
    BadHost(u16),
    #[error("request bodies must be JSON (Content-Type: application/json)")]
    NotJson,
    #[error("invalid request: {0}")]
    BadRequest(String),
    #[error("{0}")]
    Config(#[from] keyless_core::ConfigError),
    #[error("no such route")]
    NotFound,
}

#[derive(Debug, Serialize)]
struct ErrorBody {
    code: &'static str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            ApiError::BadHost(_) => (StatusCode::FORBIDDEN, Code::CommandDenied),
            ApiError::NotJson => (StatusCode::UNSUPPORTED_MEDIA_TYPE, Code::ConfigInvalid),
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, Code::ConfigInvalid),
            ApiError::Config(e) => (StatusCode::UNPROCESSABLE_ENTITY, e.code()),
            ApiError::NotFound => (StatusCode::NOT_FOUND, Code::ConfigInvalid),
        };
        (
            status,
            Json(ErrorBody {
                code: code.as_str(),
                message: self.to_string(),
            }),
        )
            .into_response()
    }
}

#[derive(Debug)]
struct AppState {
    port: u16,
}

/// Settings as a client sends them.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SettingsIn {
    pace: Option<String>,
    limits: Option<Limits>,
}

impl SettingsIn {
    fn resolve(self) -> Result<Settings, ApiError> {
        let pace = match self.pace {
            Some(p) => p.parse::<Pace>()?,
            None => Pace::default(),
        };
        let s = Settings {
            limits: self.limits.unwrap_or_default(),
            pace,
        };
        s.validate()?;
        Ok(s)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckIn {
    reply: String,
    #[serde(default)]
    settings: SettingsIn,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyIn {
    command: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct PromptQuery {
    pace: Option<String>,
    mode: Option<String>,
}

#[derive(Debug, Serialize)]
struct Status {
    name: &'static str,
    version: &'static str,
    api: &'static str,
    routes: &'static [&'static str],
}

async fn status() -> Json<Status> {
    Json(Status {
        name: "keyless-host",
        version: env!("CARGO_PKG_VERSION"),
        api: "v1",
        routes: &[
            "GET /v1/status",
            "POST /v1/check",
            "POST /v1/policy",
            "GET /v1/prompt",
        ],
    })
}

/// Parses a JSON body, mapping every failure to a KA_ error.
fn json_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::BadRequest(e.to_string()))
}

async fn check_route(body: axum::body::Bytes) -> Result<Response, ApiError> {
    let input: CheckIn = json_body(&body)?;
    let settings = input.settings.resolve()?;
    Ok(Json(check(&input.reply, &settings)).into_response())
}

async fn policy_route(body: axum::body::Bytes) -> Result<Response, ApiError> {
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

async fn prompt_route(Query(q): Query<PromptQuery>) -> Result<Response, ApiError> {
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

async fn not_found() -> ApiError {
    ApiError::NotFound
}

/// Refuses requests whose Host is not this server, and POSTs that are not JSON.
async fn guard(State(state): State<Arc<AppState>>, req: Request<Body>, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let allowed = [
        format!("127.0.0.1:{}", state.port),
        format!("localhost:{}", state.port),
    ];
    if !allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
        return ApiError::BadHost(state.port).into_response();
    }
    if req.method() == axum::http::Method::POST {
        let json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return ApiError::NotJson.into_response();
        }
    }
    next.run(req).await
}

/// The router, for the real server and for in-process tests.
pub fn router(port: u16) -> Router {
    let state = Arc::new(AppState { port });
    Router::new()
        .route("/v1/status", get(status))
        .route("/v1/check", post(check_route))
        .route("/v1/policy", post(policy_route))
        .route("/v1/prompt", get(prompt_route))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Binds 127.0.0.1:`port` (0 picks a free port), prints the address, and serves until Ctrl-C or
/// SIGTERM.
///
/// # Errors
/// When the port cannot be bound.
pub fn serve(port: u16) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
        let addr = listener.local_addr()?;
        println!("keyless-host {} listening on http://{addr}", env!("CARGO_PKG_VERSION"));
        println!("  status:  curl http://{addr}/v1/status");
        println!("  check:   curl -H 'Content-Type: application/json' -d '{{\"reply\":\"@@next\\n@@end\\n@@eof\\n\"}}' http://{addr}/v1/check");
        println!("Pairing with the Chrome extension and running batches arrive with the session API (see README.md, Status).");
        println!("Press Ctrl-C to stop.");
        axum::serve(listener, router(addr.port())).with_graceful_shutdown(shutdown_signal()).await
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    println!("keyless-host: shutting down");
}
