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

mod assets;
mod auth;
mod batches;
mod prompts;
mod pure;
mod sessions;

use self::{assets::*, auth::*, batches::*, prompts::*, pure::*, sessions::*};

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
