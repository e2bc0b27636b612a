//! `keyless-host serve`: the localhost API the extension (and the user's scripts) talk to.
//!
//! Safety, in order, on every request:
//! 1. Host must be `127.0.0.1:<port>` or `localhost:<port>` (DNS rebinding);
//! 2. every route but `POST /v1/pair` needs `Authorization: Bearer <token>`: a paired extension's
//!    token, or the local token `serve` prints for scripts and the dashboard;
//! 3. an `Origin`, when sent, must be exactly the token's `chrome-extension://<id>` (or this
//!    server's own origin for the local token); a web page the user visits is refused;
//! 4. POST bodies must be `application/json` (no text/plain CSRF) and at most [`MAX_BODY_BYTES`].

use crate::exec::batch::{ExecSettings, Prompter};
use crate::exec::workspace::Workspace;
use crate::pairing::{constant_time_eq, valid_extension_id, Pairings};
use crate::store::{Store, StoreError};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use keyless_core::check::check;
use keyless_core::message::{system_prompt, PromptContext};
use keyless_core::policy::{decide, Verdict};
use keyless_core::{Code, Limits, Mode, Pace, Settings};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// Request bodies larger than this are refused (a maximal reply is 60,000 characters).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// The default port (core's, which the extension's defaults use too).
pub const DEFAULT_PORT: u16 = keyless_core::site::DEFAULT_PORT;
/// Requests other than replies and the event stream must answer within this time.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a confirmation or question waits for the user before it counts as declined.
pub const PROMPT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Errors of the HTTP layer, each with its KA_ code and HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the Host header must be 127.0.0.1:{0} or localhost:{0}")]
    BadHost(u16),
    #[error("a pairing token is required (Authorization: Bearer …); pair the extension first")]
    Unauthorized,
    #[error("requests from origin {0} are not accepted")]
    BadOrigin(String),
    #[error("request bodies must be JSON (Content-Type: application/json)")]
    NotJson,
    #[error("invalid request: {0}")]
    BadRequest(String),
    #[error("{0}")]
    Config(#[from] keyless_core::ConfigError),
    #[error("no saved session \"{0}\"")]
    SessionNotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("no such route")]
    NotFound,
    #[error("the request took longer than {}s", REQUEST_TIMEOUT.as_secs())]
    Timeout,
    #[error("the request body is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    #[error(
        "pairing is locked for {0}s after {1} wrong codes; wait, then enter the code serve printed"
    )]
    PairingLocked(u64, u32),
    #[error("internal error; see the host's log")]
    Internal(String),
}

#[derive(Debug, Serialize)]
struct ErrorBody {
    code: &'static str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            ApiError::BadHost(_) | ApiError::BadOrigin(_) => {
                (StatusCode::FORBIDDEN, Code::CommandDenied)
            }
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, Code::Unauthorized),
            ApiError::NotJson => (StatusCode::UNSUPPORTED_MEDIA_TYPE, Code::ConfigInvalid),
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, Code::ConfigInvalid),
            ApiError::Config(e) => (StatusCode::UNPROCESSABLE_ENTITY, e.code()),
            ApiError::SessionNotFound(_) => (StatusCode::NOT_FOUND, Code::SessionNotFound),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, Code::ConfigValidation),
            ApiError::NotFound => (StatusCode::NOT_FOUND, Code::ConfigInvalid),
            ApiError::Timeout => (StatusCode::REQUEST_TIMEOUT, Code::Timeout),
            ApiError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, Code::ConfigInvalid),
            ApiError::PairingLocked(..) => (StatusCode::TOO_MANY_REQUESTS, Code::RateLimited),
            ApiError::Internal(detail) => {
                tracing::error!(detail = %detail, "internal error");
                (StatusCode::INTERNAL_SERVER_ERROR, Code::Internal)
            }
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

impl From<crate::pieces::PieceError> for ApiError {
    fn from(e: crate::pieces::PieceError) -> Self {
        use crate::pieces::PieceError;
        match e {
            PieceError::Store(e) => e.into(),
            PieceError::Stored(detail) => ApiError::Internal(detail),
            PieceError::Ended(_) => ApiError::Conflict(e.to_string()),
            PieceError::Invalid(message) => ApiError::BadRequest(message),
        }
    }
}

impl From<crate::submit::SubmitError> for ApiError {
    fn from(e: crate::submit::SubmitError) -> Self {
        use crate::submit::SubmitError;
        match e {
            SubmitError::Store(e) => e.into(),
            SubmitError::Conflict(message) => ApiError::Conflict(message),
            SubmitError::Piece(e) => e.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::SessionNotFound(id) => ApiError::SessionNotFound(id),
            StoreError::Sqlite(e) => ApiError::Internal(e.to_string()),
        }
    }
}

/// A question waiting for the user.
#[derive(Debug)]
struct Pending {
    session: String,
    kind: &'static str,
    text: String,
    tier: Option<String>,
    reason: Option<String>,
    reply: std::sync::mpsc::Sender<Answer>,
}

#[derive(Debug, Clone, Deserialize)]
struct Answer {
    #[serde(default)]
    approve: bool,
    #[serde(default)]
    answer: Option<String>,
}

/// What the server shares between requests and the blocking batch threads.
#[derive(Debug)]
pub struct Shared {
    port: u16,
    ws: Workspace,
    exec: ExecSettings,
    environment: String,
    pairings: Pairings,
    pairing_code: Mutex<Option<String>>,
    /// Wrong pairing codes lock pairing for a growing delay.
    pair_throttle: Mutex<crate::pairing::Throttle>,
    local_token: String,
    db: PathBuf,
    workspace_lock: Arc<tokio::sync::Mutex<()>>,
    events: broadcast::Sender<String>,
    pending: Mutex<BTreeMap<u64, Pending>>,
    next_prompt: AtomicU64,
    cancel: Mutex<HashSet<String>>,
    /// The built dashboard (index.html, dashboard.js, dashboard.css), if any.
    www: Option<PathBuf>,
}

impl Shared {
    fn emit(&self, event: &serde_json::Value) {
        let _ = self.events.send(event.to_string());
    }

    fn store(&self) -> Result<Store, ApiError> {
        Ok(Store::open(&self.db)?)
    }

    /// Waits (on a batch thread) for the user's answer to a pending prompt.
    fn wait_for(
        &self,
        session: &str,
        kind: &'static str,
        text: &str,
        verdict: Option<&Verdict>,
    ) -> Option<Answer> {
        let id = self.next_prompt.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = std::sync::mpsc::channel();
        let pending = Pending {
            session: session.to_string(),
            kind,
            text: text.to_string(),
            tier: verdict.map(|v| v.tier.to_string()),
            reason: verdict.map(|v| v.reason.clone()),
            reply: tx,
        };
        self.emit(&serde_json::json!({"type": "prompt", "id": id, "session": session, "kind": kind, "text": text, "tier": pending.tier, "reason": pending.reason}));
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, pending);
        }
        let answer = rx.recv_timeout(PROMPT_TIMEOUT).ok();
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        self.emit(&serde_json::json!({"type": "prompt_closed", "id": id, "session": session}));
        answer
    }
}

/// The batch thread's prompter: questions go to the API and the event stream.
struct ServerPrompter {
    shared: Arc<Shared>,
    session: String,
}

impl Prompter for ServerPrompter {
    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        self.shared
            .wait_for(&self.session, "confirm", command, Some(verdict))
            .is_some_and(|a| a.approve)
    }
    fn ask(&mut self, question: &str) -> Option<String> {
        self.shared
            .wait_for(&self.session, "ask", question, None)
            .and_then(|a| a.answer)
            .filter(|a| !a.trim().is_empty())
    }
    fn say(&mut self, message: &str) {
        self.shared
            .emit(&serde_json::json!({"type": "say", "session": self.session, "text": message}));
    }
    fn output(&mut self, chunk: &str) {
        self.shared
            .emit(&serde_json::json!({"type": "output", "session": self.session, "text": chunk}));
    }
    fn cancel_requested(&mut self) -> bool {
        self.shared
            .cancel
            .lock()
            .is_ok_and(|mut c| c.remove(&self.session))
    }
    fn command_started(&mut self, c: &keyless_core::Command) {
        self.shared.emit(&serde_json::json!({"type": "command_started", "session": self.session, "number": c.number, "command": c.kind.name(), "target": c.target()}));
    }
    fn command_finished(&mut self, r: &keyless_core::message::CommandResult) {
        use keyless_core::message::Outcome;
        let (status, code) = match &r.outcome {
            Outcome::Ok { .. } => ("ok", None),
            Outcome::Error { code, .. } => ("error", Some(code.as_str())),
            Outcome::Skipped { .. } => ("skipped", None),
        };
        self.shared.emit(&serde_json::json!({"type": "command_finished", "session": self.session, "number": r.number, "command": r.kind.name(), "target": r.target, "status": status, "code": code}));
    }
}

// ---------------------------------------------------------------------------------------------
// Guard

fn origin_ok(origin: Option<&str>, allowed: &[String]) -> bool {
    origin.is_none_or(|o| allowed.iter().any(|a| a == o))
}

async fn guard(State(st): State<Arc<Shared>>, req: Request<Body>, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let own = [
        format!("127.0.0.1:{}", st.port),
        format!("localhost:{}", st.port),
    ];
    if !own.iter().any(|a| a.eq_ignore_ascii_case(host)) {
        return ApiError::BadHost(st.port).into_response();
    }
    if req.method() == axum::http::Method::POST {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return ApiError::NotJson.into_response();
        }
    }
    let path = req.uri().path();
    if req.method() == axum::http::Method::GET
        && (path == "/" || path.starts_with("/assets/") || path.starts_with("/playground/"))
    {
        // The dashboard's own files hold no secrets; its data needs the token.
        return next.run(req).await;
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if req.uri().path() == "/v1/pair" {
        // The pairing route checks the Origin against the extension id in the body.
        return next.run(req).await;
    }
    // EventSource cannot send headers: the event stream also takes ?token=.
    let query_token = (req.uri().path() == "/v1/events")
        .then(|| {
            req.uri()
                .query()
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("token="))
                .map(str::to_string)
        })
        .flatten();
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string)
        .or(query_token)
        .unwrap_or_default();
    let token = token.as_str();
    let allowed: Vec<String> = if !token.is_empty() && constant_time_eq(token, &st.local_token) {
        own.iter().map(|h| format!("http://{h}")).collect()
    } else if let Some(ext) = (!token.is_empty())
        .then(|| st.pairings.verify(token))
        .flatten()
    {
        vec![format!("chrome-extension://{ext}")]
    } else {
        return ApiError::Unauthorized.into_response();
    };
    if !origin_ok(origin.as_deref(), &allowed) {
        return ApiError::BadOrigin(origin.unwrap_or_default()).into_response();
    }
    next.run(req).await
}

// ---------------------------------------------------------------------------------------------
// Routes

/// Runs blocking work (SQLite, a batch) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
}

impl Shared {
    fn pending(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<u64, Pending>>, ApiError> {
        self.pending
            .lock()
            .map_err(|e| ApiError::Internal(e.to_string()))
    }
}

fn json_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::BadRequest(e.to_string()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PairIn {
    code: String,
    extension_id: String,
}

async fn pair(
    State(st): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: PairIn = json_body(&body)?;
    if !valid_extension_id(&input.extension_id) {
        return Err(ApiError::BadRequest(
            "extension_id must be a Chrome extension id (32 letters a-p)".into(),
        ));
    }
    let want = format!("chrome-extension://{}", input.extension_id);
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if origin != want {
        return Err(ApiError::BadOrigin(origin.to_string()));
    }
    let now = std::time::Instant::now();
    let mut throttle = st
        .pair_throttle
        .lock()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some(left) = throttle.locked(now) {
        tracing::warn!(seconds_left = left, "pairing attempt while locked; refused");
        return Err(ApiError::PairingLocked(left, throttle.failures()));
    }
    let ok = {
        let mut code = st
            .pairing_code
            .lock()
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let matches = code.as_deref().is_some_and(|c| {
            constant_time_eq(
                &c.replace('-', "").to_ascii_uppercase(),
                &input.code.replace('-', "").trim().to_ascii_uppercase(),
            )
        });
        if matches {
            // Single use.
            *code = None;
        }
        matches
    };
    if !ok {
        let lock = throttle.failed(now);
        tracing::warn!(
            wrong_codes = throttle.failures(),
            locked_seconds = lock,
            "pairing: wrong code"
        );
        if lock > 0 {
            return Err(ApiError::PairingLocked(lock, throttle.failures()));
        }
        return Err(ApiError::Unauthorized);
    }
    throttle.succeeded();
    drop(throttle);
    let token = st
        .pairings
        .add(&input.extension_id)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(
        Json(serde_json::json!({ "token": token, "extension_id": input.extension_id }))
            .into_response(),
    )
}

async fn status(State(st): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "name": "keyless-host",
        "version": env!("CARGO_PKG_VERSION"),
        "api": "v1",
        "workspace": st.ws.root().display().to_string(),
        "mode": st.exec.mode.as_str(),
        "pace": st.exec.settings.pace.as_str(),
    }))
}

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

async fn check_route(body: Bytes) -> Result<Response, ApiError> {
    let input: CheckIn = json_body(&body)?;
    let settings = input.settings.resolve()?;
    Ok(Json(check(&input.reply, &settings)).into_response())
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

async fn policy_route(body: Bytes) -> Result<Response, ApiError> {
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
struct PromptQuery {
    pace: Option<String>,
    mode: Option<String>,
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

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SessionIn {
    /// Resume this session.
    resume: Option<String>,
    /// Follow a piece, by name (see GET /v1/pieces).
    piece: Option<String>,
    /// Follow a piece given as YAML (validated strictly).
    piece_yaml: Option<String>,
    /// Ask, AutoSafe or Auto for this session (default: the host's `--mode`).
    mode: Option<String>,
    /// Step, Balanced or Batch for this session (default: the host's pace).
    pace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SessionSettingsIn {
    mode: Option<String>,
    pace: Option<String>,
}

/// Checks a mode and pace a client sent and returns them in their canonical spelling.
fn session_choice(
    mode: Option<&str>,
    pace: Option<&str>,
) -> Result<(Option<&'static str>, Option<&'static str>), ApiError> {
    let mode = mode.map(str::parse::<Mode>).transpose()?.map(Mode::as_str);
    let pace = pace.map(str::parse::<Pace>).transpose()?.map(Pace::as_str);
    Ok((mode, pace))
}

/// The host's execution settings with the session's own mode and pace applied.
fn session_exec(st: &Shared, store: &Store, session: &str) -> Result<ExecSettings, ApiError> {
    let (mode, pace) = store.session_settings(session)?;
    let mut cfg = st.exec.clone();
    if let Some(m) = mode.as_deref().and_then(|m| m.parse::<Mode>().ok()) {
        cfg.mode = m;
    }
    if let Some(p) = pace.as_deref().and_then(|p| p.parse::<Pace>().ok()) {
        cfg.settings.pace = p;
    }
    Ok(cfg)
}

/// POST /v1/sessions/{id}/settings: change a session's mode or pace; answers the system prompt
/// for the new settings (the pace changes what the model is told).
async fn session_settings(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: SessionSettingsIn = json_body(&body)?;
    let (mode, pace) = session_choice(input.mode.as_deref(), input.pace.as_deref())?;
    let st2 = st.clone();
    let cfg = blocking(move || {
        let store = st2.store()?;
        store.session(&id)?;
        store.set_session_settings(&id, mode, pace)?;
        session_exec(&st2, &store, &id)
    })
    .await?;
    Ok(
        Json(serde_json::json!({"mode": cfg.mode.as_str(), "pace": cfg.settings.pace.as_str()}))
            .into_response(),
    )
}

/// Loads and validates the piece a new session asks for.
fn session_piece(
    st: &Shared,
    input: &SessionIn,
) -> Result<Option<(String, keyless_core::piece::Piece)>, ApiError> {
    use keyless_core::piece::Strictness;
    let (yaml, strictness) = match (&input.piece, &input.piece_yaml) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(ApiError::BadRequest(
                "give piece or piece_yaml, not both".into(),
            ))
        }
        (Some(name), None) => {
            let (yaml, _) = crate::pieces::lookup(st.ws.root(), name).ok_or_else(|| {
                ApiError::BadRequest(format!("no piece named \"{name}\" (see GET /v1/pieces)"))
            })?;
            (yaml, Strictness::Lenient)
        }
        (None, Some(y)) => (y.clone(), Strictness::Strict),
    };
    let piece = crate::pieces::validated(&yaml, strictness)?;
    Ok(Some((yaml, piece)))
}

async fn list_pieces(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let list = blocking(move || Ok(crate::pieces::list(st.ws.root()))).await?;
    let out: Vec<serde_json::Value> = list.into_iter().map(|(name, description, source)| serde_json::json!({"name": name, "description": description, "source": source})).collect();
    Ok(Json(out).into_response())
}

async fn create_session(State(st): State<Arc<Shared>>, body: Bytes) -> Result<Response, ApiError> {
    let input: SessionIn = if body.is_empty() {
        SessionIn::default()
    } else {
        json_body(&body)?
    };
    let st2 = st.clone();
    let (mode, pace) = session_choice(input.mode.as_deref(), input.pace.as_deref())?;
    let (pos, movement, cfg) = blocking(move || -> Result<_, ApiError> {
        let store = st2.store()?;
        if let Some(id) = input.resume.clone() {
            if input.piece.is_some() || input.piece_yaml.is_some() {
                return Err(ApiError::BadRequest(
                    "a resumed session keeps its piece; do not send one".into(),
                ));
            }
            let pos = store.session(&id)?;
            store.set_session_settings(&id, mode, pace)?;
            let movement = crate::pieces::resume(&store, &id)?.map(|r| r.movement_prompt());
            let cfg = session_exec(&st2, &store, &id)?;
            return Ok((pos, movement, cfg));
        }
        let piece = session_piece(&st2, &input)?;
        let id = format!(
            "s-{}",
            crate::pairing::random_hex(8).map_err(|e| ApiError::Internal(e.to_string()))?
        );
        let pos = store.create_session(&id, &st2.ws.root().display().to_string())?;
        crate::run_cli::session_repo(&store, &id, st2.ws.root())?;
        store.set_session_settings(&id, mode, pace)?;
        let movement = match piece {
            Some((yaml, piece)) => Some(crate::pieces::start(&store, &id, &yaml, piece)?),
            None => None,
        };
        let cfg = session_exec(&st2, &store, &id)?;
        Ok((pos, movement, cfg))
    })
    .await?;
    let mut prompt = system_prompt(
        &cfg.settings,
        &PromptContext {
            mode: cfg.mode,
            environment: Some(st.environment.clone()),
        },
    );
    if let Some(m) = &movement {
        prompt.push_str("\n\n");
        prompt.push_str(m);
    }
    st.emit(&serde_json::json!({"type": "session", "session": pos.id, "turn": pos.turn, "batch": pos.batch}));
    Ok(Json(serde_json::json!({ "session": pos.id, "turn": pos.turn, "batch": pos.batch, "prompt": prompt, "piece": movement.is_some(), "mode": cfg.mode.as_str(), "pace": cfg.settings.pace.as_str() })).into_response())
}

async fn get_session(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let out = blocking(move || -> Result<_, ApiError> {
        let store = st.store()?;
        let pos = store.session(&id)?;
        let batches: Vec<serde_json::Value> = store
            .batches(&id)?
            .into_iter()
            .map(|(bid, turn, batch, status, control)| serde_json::json!({"id": bid, "turn": turn, "batch": batch, "status": status, "control": control}))
            .collect();
        Ok(serde_json::json!({"session": pos.id, "turn": pos.turn, "batch": pos.batch, "batches": batches}))
    })
    .await?;
    Ok(Json(out).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyIn {
    reply: String,
    /// The turn and batch the client believes this reply is; a retry sends the same numbers.
    #[serde(default)]
    turn: Option<u32>,
    #[serde(default)]
    batch: Option<u32>,
}

#[derive(Debug, Serialize)]
struct ReplyOut {
    batch_id: String,
    turn: u32,
    batch: u32,
    /// "done" (executed), "rejected" (format correction), "interrupted" (stored as running).
    status: keyless_core::turn::BatchStatus,
    /// The text to send back to the chat.
    text: String,
    control: Option<keyless_core::Control>,
    turn_ended: Option<keyless_core::turn::TurnEnd>,
    /// True when the answer comes from the store (a retry): nothing ran now.
    stored: bool,
    next_turn: u32,
    next_batch: u32,
    /// For a piece session: where the run stands after this batch.
    piece: Option<serde_json::Value>,
}

fn run_reply(st: &Arc<Shared>, session: &str, input: &ReplyIn) -> Result<ReplyOut, ApiError> {
    let store = st.store()?;
    let mut pos = store.session(session)?;
    let cfg = session_exec(st, &store, session)?;
    let repo = crate::run_cli::session_repo(&store, session, st.ws.root())?;
    let ctx = crate::submit::Context {
        store: &store,
        ws: &st.ws,
        cfg: &cfg,
        repo: &repo,
    };
    let mut prompter = ServerPrompter {
        shared: st.clone(),
        session: session.to_string(),
    };
    let at = match (input.turn, input.batch) {
        (None, None) => None,
        (t, b) => Some((t.unwrap_or(pos.turn), b.unwrap_or(pos.batch))),
    };
    let mut events = |e: crate::submit::Event<'_>| match e {
        crate::submit::Event::Started {
            batch_id,
            turn,
            batch,
        } => {
            tracing::info!(%session, batch_id, turn, batch, "batch started");
            st.emit(&serde_json::json!({"type": "batch_started", "session": session, "batch_id": batch_id, "turn": turn, "batch": batch}));
        }
        crate::submit::Event::Finished {
            batch_id,
            status,
            turn_ended,
        } => {
            tracing::info!(%session, batch_id, status = status.as_str(), turn_ended = ?turn_ended, "batch finished");
            st.emit(&serde_json::json!({"type": "batch_finished", "session": session, "batch_id": batch_id, "status": status, "turn_ended": turn_ended}));
        }
    };
    let out = crate::submit::submit(&ctx, &mut pos, &input.reply, at, &mut prompter, &mut events)?;
    Ok(ReplyOut {
        batch_id: out.batch_id,
        turn: out.turn,
        batch: out.batch,
        status: out.status,
        text: out.text,
        control: out.control,
        turn_ended: out.turn_ended,
        stored: out.stored,
        next_turn: pos.turn,
        next_batch: pos.batch,
        piece: out.piece.map(|snap| {
            serde_json::json!({"state": snap.state, "movement": snap.current, "movement_runs": snap.movement_runs})
        }),
    })
}

async fn submit_reply(
    State(st): State<Arc<Shared>>,
    UrlPath(session): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: ReplyIn = json_body(&body)?;
    // The batch runs in its own task: a client that disconnects drops this handler, not the batch,
    // whose result a retry then gets from the store. One batch at a time per workspace: the lock
    // is held by that task until the batch is stored.
    let task = tokio::spawn(async move {
        let guard = st.workspace_lock.clone().lock_owned().await;
        blocking(move || {
            let _guard = guard;
            run_reply(&st, &session, &input)
        })
        .await
    });
    let out = task
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(out).into_response())
}

async fn cancel(
    State(st): State<Arc<Shared>>,
    UrlPath(session): UrlPath<String>,
) -> Result<Response, ApiError> {
    if let Ok(mut c) = st.cancel.lock() {
        c.insert(session.clone());
    }
    Ok(Json(serde_json::json!({"session": session, "cancel_requested": true})).into_response())
}

async fn list_prompts(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let p = st.pending()?;
    let list: Vec<serde_json::Value> = p
        .iter()
        .map(|(id, q)| serde_json::json!({"id": id, "session": q.session, "kind": q.kind, "text": q.text, "tier": q.tier, "reason": q.reason}))
        .collect();
    Ok(Json(list).into_response())
}

async fn answer_prompt(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<u64>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let answer: Answer = json_body(&body)?;
    let p = st.pending()?;
    let Some(q) = p.get(&id) else {
        return Err(ApiError::NotFound);
    };
    let _ = q.reply.send(answer);
    Ok(Json(serde_json::json!({"id": id, "answered": true})).into_response())
}

async fn events(
    State(st): State<Arc<Shared>>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let rx = st.events.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(msg) => Event::default().data(msg),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                Event::default().event("lagged").data(n.to_string())
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(event), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn list_sessions(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let rows = blocking(move || Ok(st.store()?.sessions()?)).await?;
    let out: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|(id, created_at, turn, batch, piece)| serde_json::json!({"session": id, "created_at": created_at, "turn": turn, "batch": batch, "piece": piece}))
        .collect();
    Ok(Json(out).into_response())
}

/// A batch: its reply, the parsed commands with their tiers and stored results, and the text the
/// model received.
async fn get_batch(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let st2 = st.clone();
    // The tiers shown are the ones the batch met: the session's own mode, not the host's default.
    let (d, cfg, results) = blocking(move || {
        let store = st2.store()?;
        let d = store.batch_detail(&id)?.ok_or(ApiError::NotFound)?;
        let cfg = session_exec(&st2, &store, &d.session)?;
        let results = store.results(&id)?;
        Ok((d, cfg, results))
    })
    .await?;
    let parsed = keyless_core::parse(&d.reply, &cfg.settings.limits);
    let commands: Vec<serde_json::Value> = parsed
        .reply
        .commands
        .iter()
        .map(|c| {
            let tier = (c.kind == keyless_core::CommandKind::RunCommand)
                .then(|| decide(c.section_text(keyless_core::SectionName::Cmd).unwrap_or(""), cfg.mode, &cfg.allow))
                .map(|v| serde_json::json!({"tier": v.tier, "decision": v.decision, "reason": v.reason}));
            let result = results.iter().find(|r| r.number == c.number);
            serde_json::json!({"number": c.number, "command": c.kind.name(), "target": c.target(), "line": c.line, "policy": tier, "result": result})
        })
        .collect();
    Ok(Json(serde_json::json!({"session": d.session, "turn": d.turn, "batch": d.batch, "status": d.status, "control": d.control, "reply": d.reply, "text": d.text, "commands": commands})).into_response())
}

async fn undo_batch_route(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let guard = st.workspace_lock.clone().lock_owned().await;
    let st2 = st.clone();
    let restored = blocking(move || {
        let _guard = guard;
        let d = st2.store()?.batch_detail(&id)?.ok_or(ApiError::NotFound)?;
        let dir = st2
            .ws
            .root()
            .join(".agent")
            .join("backups")
            .join(&d.session)
            .join(format!("{}-{}", d.turn, d.batch));
        if !dir.join("manifest.json").is_file() {
            return Err(ApiError::Conflict(
                "this batch changed no files, or it was undone already".into(),
            ));
        }
        crate::exec::workspace::undo_batch(&st2.ws, &dir)
            .map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    st.emit(&serde_json::json!({"type": "undone", "restored": restored}));
    Ok(Json(serde_json::json!({"restored": restored})).into_response())
}

#[derive(Debug, Deserialize)]
struct AuditQuery {
    session: Option<String>,
    limit: Option<u32>,
}

async fn audit(
    State(st): State<Arc<Shared>>,
    Query(q): Query<AuditQuery>,
) -> Result<Response, ApiError> {
    let entries = blocking(move || {
        Ok(st
            .store()?
            .audit(q.session.as_deref(), q.limit.unwrap_or(200).min(2_000))?)
    })
    .await?;
    Ok(Json(entries).into_response())
}

/// The dashboard's (and the playground's) files, with a strict CSP and no referrer (the token is
/// in the dashboard's URL). Only the playground may compile WebAssembly.
fn static_file(st: &Shared, sub: Option<&str>, name: &str) -> Result<Response, ApiError> {
    let content_type = match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("wasm") if sub.is_some() => "application/wasm",
        _ => return Err(ApiError::NotFound),
    };
    let csp = if sub.is_some() {
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    } else {
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    };
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
        || name.starts_with('.')
    {
        return Err(ApiError::NotFound);
    }
    let www = st.www.as_ref().ok_or(ApiError::NotFound)?;
    let dir = sub.map_or_else(|| www.clone(), |s| www.join(s));
    let bytes = std::fs::read(dir.join(name)).map_err(|_| ApiError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, csp),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        bytes,
    )
        .into_response())
}

async fn dashboard_index(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    static_file(&st, None, "index.html")
}

async fn playground_index(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    static_file(&st, Some("playground"), "index.html")
}

async fn playground_file(
    State(st): State<Arc<Shared>>,
    UrlPath(file): UrlPath<String>,
) -> Result<Response, ApiError> {
    static_file(&st, Some("playground"), &file)
}

async fn dashboard_asset(
    State(st): State<Arc<Shared>>,
    UrlPath(file): UrlPath<String>,
) -> Result<Response, ApiError> {
    static_file(&st, None, &file)
}

/// Logs every request (method, path, status, duration) and holds short routes to
/// [`REQUEST_TIMEOUT`]. Replies and the event stream may take longer: a batch runs as long as its
/// commands, and it goes on (and is stored) even when its client gives up.
async fn log_and_limit(req: Request<Body>, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let start = std::time::Instant::now();
    // Every body must arrive within BODY_TIMEOUT, however slowly a client sends it.
    let (parts, body) = req.into_parts();
    let body = match tokio::time::timeout(
        crate::conn::BODY_TIMEOUT,
        axum::body::to_bytes(body, MAX_BODY_BYTES),
    )
    .await
    {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return ApiError::TooLarge.into_response(),
        Err(_) => {
            tracing::warn!(%method, %path, "request body too slow; closed");
            return ApiError::Timeout.into_response();
        }
    };
    let req = Request::from_parts(parts, Body::from(body));
    let long = path == "/v1/events" || path.ends_with("/replies");
    let res = if long {
        next.run(req).await
    } else {
        match tokio::time::timeout(REQUEST_TIMEOUT, next.run(req)).await {
            Ok(r) => r,
            Err(_) => ApiError::Timeout.into_response(),
        }
    };
    tracing::info!(%method, %path, status = res.status().as_u16(), ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX), "request");
    res
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

/// The router for a shared state.
pub fn router(st: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/pair", post(pair))
        .route("/v1/status", get(status))
        .route("/v1/check", post(check_route))
        .route("/v1/policy", post(policy_route))
        .route("/v1/prompt", get(prompt_route))
        .route("/v1/sessions", post(create_session).get(list_sessions))
        .route("/v1/sessions/{id}", get(get_session))
        .route("/v1/sessions/{id}/replies", post(submit_reply))
        .route("/v1/sessions/{id}/cancel", post(cancel))
        .route("/v1/sessions/{id}/settings", post(session_settings))
        .route("/v1/pieces", get(list_pieces))
        .route("/v1/batches/{id}", get(get_batch))
        .route("/v1/batches/{id}/undo", post(undo_batch_route))
        .route("/v1/audit", get(audit))
        .route("/", get(dashboard_index))
        .route("/assets/{file}", get(dashboard_asset))
        .route("/playground/", get(playground_index))
        .route("/playground/{file}", get(playground_file))
        .route("/v1/confirmations", get(list_prompts))
        .route("/v1/confirmations/{id}", post(answer_prompt))
        .route("/v1/events", get(events))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(st.clone(), guard))
        .layer(middleware::from_fn(log_and_limit))
        .with_state(st)
}

/// What a server state is made of (see [`Shared::new`]).
#[derive(Debug)]
pub struct StateParts {
    pub port: u16,
    pub ws: Workspace,
    pub exec: ExecSettings,
    /// The environment snapshot text for the system prompt.
    pub environment: String,
    pub pairings: Pairings,
    pub pairing_code: String,
    pub local_token: String,
    pub www: Option<PathBuf>,
}

impl Shared {
    /// The server state for a workspace (its database is created if needed).
    ///
    /// # Errors
    /// When `.agent` or the database cannot be created.
    pub fn new(p: StateParts) -> std::io::Result<Arc<Self>> {
        let db = p.ws.agent_dir()?.join("keyless.db");
        Store::open(&db).map_err(|e| std::io::Error::other(e.to_string()))?;
        let (events, _) = broadcast::channel(1024);
        Ok(Arc::new(Shared {
            port: p.port,
            ws: p.ws,
            exec: p.exec,
            environment: p.environment,
            pairings: p.pairings,
            pairing_code: Mutex::new(Some(p.pairing_code)),
            pair_throttle: Mutex::new(crate::pairing::Throttle::default()),
            local_token: p.local_token,
            db,
            workspace_lock: Arc::new(tokio::sync::Mutex::new(())),
            events,
            pending: Mutex::new(BTreeMap::new()),
            next_prompt: AtomicU64::new(0),
            cancel: Mutex::new(HashSet::new()),
            www: p.www.filter(|d| d.join("index.html").is_file()),
        }))
    }
}

/// Options of `keyless-host serve`.
#[derive(Debug)]
pub struct ServeOptions {
    pub port: u16,
    pub workspace: PathBuf,
    pub exec: ExecSettings,
    pub pairings: Pairings,
    /// The built dashboard folder (`target/www`).
    pub www: Option<PathBuf>,
}

/// Binds 127.0.0.1:`port` (0 picks a free port), prints the address, the pairing code and the
/// local token, and serves until Ctrl-C or SIGTERM. A running batch finishes first.
///
/// # Errors
/// When the port cannot be bound or the workspace opened.
pub fn serve(mut o: ServeOptions) -> std::io::Result<()> {
    let ws = Workspace::open(&o.workspace)?;
    ws.clean_leftovers();
    let snapshot = crate::exec::snapshot::gather_for(ws.root(), &mut o.exec);
    let code = crate::pairing::pairing_code()?;
    let local_token = crate::pairing::random_hex(32)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // Logs go to stderr; RUST_LOG adjusts them (default: info for the host).
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("keyless_host=info")),
        )
        .try_init();
    rt.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], o.port))).await?;
        let addr = listener.local_addr()?;
        let st = Shared::new(StateParts {
            port: addr.port(),
            ws,
            exec: o.exec,
            environment: snapshot.text(),
            pairings: o.pairings,
            pairing_code: code.clone(),
            local_token: local_token.clone(),
            www: o.www,
        })?;
        println!(
            "keyless-host {} listening on http://{addr}",
            env!("CARGO_PKG_VERSION")
        );
        println!("workspace: {}", st.ws.root().display());
        println!("pairing code: {code}   (enter it in the keyless extension's popup; single use)");
        println!("local token: {local_token}   (for scripts: Authorization: Bearer …)");
        println!("sandbox: {}", snapshot.sandbox);
        match &st.www {
            Some(_) => println!("dashboard: http://{addr}/?token={local_token}"),
            None => println!("dashboard: not built (cargo xtask build builds it)"),
        }
        if st
            .www
            .as_ref()
            .is_some_and(|w| w.join("playground").join("index.html").is_file())
        {
            println!("playground: http://{addr}/playground/");
        }
        // The extension's native-messaging host finds this server here (pairing without a code).
        let me = std::process::id();
        if let Err(e) = crate::native::record_serve(&crate::native::ServeInfo {
            port: addr.port(),
            pid: me,
            workspace: st.ws.root().display().to_string(),
        }) {
            tracing::warn!(error = %e, "cannot record serve.json: the extension pairs with the code only");
        }
        println!("Press Ctrl-C to stop.");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let r = crate::conn::serve(listener, router(st), shutdown_signal()).await;
        crate::native::forget_serve(me);
        r
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
