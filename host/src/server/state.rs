//! What every route shares: the state, the API error with its status and KA_ code, the body reader
//! and the limits.

use crate::exec::batch::ExecSettings;
use crate::exec::workspace::Workspace;
use crate::pairing::Pairings;
use crate::store::{Store, StoreError};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self, HostEvent, PromptKind};
use keyless_core::policy::Tier;
use keyless_core::Code;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// Request bodies larger than this are refused (a maximal reply is 60,000 characters).
pub const MAX_BODY_BYTES: usize = 1 << 20;

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
    #[error("{}", wrong_code_text(*.0))]
    WrongCode(u32),
    #[error("{}", locked_text(*.0, *.1, *.2))]
    PairingLocked(u64, u32, bool),
    #[error("internal error; see the host's log")]
    Internal(String),
    /// A refusal with its own status and code (`keyless://chat`'s, …).
    #[error("{2}")]
    Coded(StatusCode, Code, String),
    /// A piece the API refused: its first code leads, the findings follow.
    #[error("{0}")]
    Piece(String, Code, Vec<keyless_core::diag::Diagnostic>),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            // Not the host's own address, or a page's request: refused as unauthorized, before
            // any pairing token is read.
            ApiError::BadHost(_) | ApiError::BadOrigin(_) => {
                (StatusCode::FORBIDDEN, Code::Unauthorized)
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
            ApiError::WrongCode(_) => (StatusCode::UNAUTHORIZED, Code::Unauthorized),
            ApiError::PairingLocked(..) => (StatusCode::TOO_MANY_REQUESTS, Code::RateLimited),
            ApiError::Coded(status, code, _) => (*status, *code),
            ApiError::Piece(_, code, _) => {
                let status = if *code == Code::PieceNotFound {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::UNPROCESSABLE_ENTITY
                };
                (status, *code)
            }
            ApiError::Internal(detail) => {
                tracing::error!(detail = %detail, "internal error");
                (StatusCode::INTERNAL_SERVER_ERROR, Code::Internal)
            }
        };
        let retry_after_seconds = match &self {
            ApiError::PairingLocked(seconds, ..) => Some(*seconds),
            _ => None,
        };
        let mut res = (
            status,
            Json(api::ErrorBody {
                code,
                message: self.to_string(),
                findings: match self {
                    ApiError::Piece(_, _, findings) => findings,
                    _ => Vec::new(),
                },
                retry_after_seconds,
            }),
        )
            .into_response();
        if let Some(s) = retry_after_seconds {
            res.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, s.into());
        }
        res
    }
}

/// A wrong pairing code, and how many more may be tried before pairing locks.
fn wrong_code_text(tries_left: u32) -> String {
    format!(
        "this code is wrong or was already used; {tries_left} more {} before pairing locks for a while. `keyless-host pair` prints a fresh code for this serve",
        if tries_left == 1 { "try" } else { "tries" }
    )
}

/// Pairing locked: for how long, after how many wrong codes, and whether this try was one.
fn locked_text(seconds: u64, failures: u32, this_try_wrong: bool) -> String {
    format!(
        "{}pairing is locked for {seconds} s after {failures} wrong codes in a row; then enter a fresh code from `keyless-host pair`",
        if this_try_wrong {
            "this code is wrong or was already used; "
        } else {
            ""
        }
    )
}

impl From<crate::pieces::PieceError> for ApiError {
    fn from(e: crate::pieces::PieceError) -> Self {
        use crate::pieces::PieceError;
        let message = e.to_string();
        match e {
            PieceError::Store(e) => e.into(),
            PieceError::Stored(detail) => ApiError::Internal(detail),
            PieceError::Ended(_) => ApiError::Conflict(e.to_string()),
            PieceError::Invalid(message) => ApiError::BadRequest(message),
            PieceError::Rejected(_)
            | PieceError::NotFound(_)
            | PieceError::Io(_)
            | PieceError::Tools(..) => {
                let code = e.code();
                let findings = match e {
                    PieceError::Rejected(f) => f,
                    _ => Vec::new(),
                };
                ApiError::Piece(message, code, findings)
            }
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
    pub(super) port: u16,
    pub(super) ws: Workspace,
    pub(super) exec: ExecSettings,
    pub(super) environment: String,
    pub(super) pairings: Pairings,
    pub(super) pairing_code: Mutex<Option<String>>,
    /// Wrong pairing codes lock pairing for a growing delay.
    pub(super) pair_throttle: Mutex<crate::pairing::Throttle>,
    pub(super) local_token: String,
    pub(super) db: PathBuf,
    pub(super) workspace_lock: Arc<tokio::sync::Mutex<()>>,
    pub(super) events: broadcast::Sender<String>,
    pub(super) pending: Mutex<BTreeMap<u64, Pending>>,
    pub(super) next_prompt: AtomicU64,
    /// The server is stopping: nobody can answer a prompt any more.
    pub(super) closing: std::sync::atomic::AtomicBool,
    pub(super) cancel: Mutex<HashSet<String>>,
    /// The built dashboard (index.html, dashboard.js, dashboard.css), if any.
    pub(super) www: Option<PathBuf>,
    /// `keyless://chat`: the generations, the tab that answers them, the program holding it.
    pub(super) chat: Mutex<super::chat::Chat>,
    /// Bumped on every change of a generation (its waiters wake).
    pub(super) chat_changed: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    pub(super) fn emit(&self, event: &HostEvent) {
        if let Ok(text) = serde_json::to_string(event) {
            let _ = self.events.send(text);
        }
    }

    pub(super) fn store(&self) -> Result<Store, ApiError> {
        Ok(Store::open(&self.db)?)
    }

    /// Waits (on a batch thread) for the user's answer to a pending prompt.
    pub(super) fn wait_for(&self, session: &str, q: Question) -> Option<api::PromptAnswer> {
        let id = self.next_prompt.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = std::sync::mpsc::channel();
        self.emit(&HostEvent::Prompt {
            id,
            session: session.to_string(),
            kind: q.kind,
            text: q.text.clone(),
            tier: q.tier,
            reason: q.reason.clone(),
            preview: q.preview.clone(),
            offer: q.offer.clone(),
            form: q.form.clone(),
        });
        let pending = Pending {
            session: session.to_string(),
            q,
            reply: tx,
        };
        if let Ok(mut p) = self.pending.lock() {
            // Checked under the lock close_prompts takes: a prompt is either closed there or
            // never waits.
            if self.closing.load(Ordering::SeqCst) {
                return None;
            }
            p.insert(id, pending);
        }
        // Answered, timed out, or the session was stopped (Stop: its cancel flag is left for the
        // running command to see).
        let until = std::time::Instant::now() + PROMPT_TIMEOUT;
        let answer = loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(a) => break Some(a),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let stopped = self.cancel.lock().is_ok_and(|c| c.contains(session));
                    if stopped || std::time::Instant::now() > until {
                        break None;
                    }
                }
            }
        };
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        self.emit(&HostEvent::PromptClosed {
            id,
            session: session.to_string(),
        });
        answer
    }
}

impl Shared {
    /// The server stops: every waiting prompt ends unanswered (a confirmation is declined, a
    /// question gets no answer), so the running batches finish and are recorded at once instead
    /// of waiting for an answer that can no longer come; later prompts end the same way.
    pub fn close_prompts(&self) {
        if let Ok(mut p) = self.pending.lock() {
            self.closing.store(true, Ordering::SeqCst);
            // Dropping each sender ends its batch thread's wait.
            p.clear();
        }
    }
}

/// Runs blocking work (SQLite, a batch) off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
}

impl Shared {
    pub(super) fn pending(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, BTreeMap<u64, Pending>>, ApiError> {
        self.pending
            .lock()
            .map_err(|e| ApiError::Internal(e.to_string()))
    }
}

pub(super) fn json_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::BadRequest(e.to_string()))
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
            closing: std::sync::atomic::AtomicBool::new(false),
            cancel: Mutex::new(HashSet::new()),
            www: p.www.filter(|d| d.join("index.html").is_file()),
            chat: Mutex::new(super::chat::Chat::default()),
            chat_changed: tokio::sync::watch::channel(0).0,
        }))
    }
}

/// A question waiting for the user.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) session: String,
    pub(super) q: Question,
    pub(super) reply: std::sync::mpsc::Sender<api::PromptAnswer>,
}

/// What a prompt asks.
#[derive(Debug, Clone)]
pub(super) struct Question {
    pub(super) kind: PromptKind,
    pub(super) text: String,
    pub(super) tier: Option<Tier>,
    pub(super) reason: Option<String>,
    pub(super) preview: Vec<keyless_core::diff::FileDiff>,
    pub(super) offer: Option<keyless_core::policy::always::AllowOffer>,
    pub(super) form: Option<keyless_core::elicit::Form>,
}

impl Question {
    pub(super) fn ask(text: &str, reason: Option<String>) -> Self {
        Self {
            kind: PromptKind::Ask,
            text: text.to_string(),
            tier: None,
            reason,
            preview: Vec::new(),
            offer: None,
            form: None,
        }
    }

    /// An MCP server's form: its message as the text, the server named in the reason.
    pub(super) fn form(server: &str, form: &keyless_core::elicit::Form) -> Self {
        Self {
            kind: PromptKind::Form,
            text: form.message.clone(),
            tier: None,
            reason: Some(format!(
                "The MCP server \"{server}\" asks this while its tool runs. Your answer goes to that server, never to the model."
            )),
            preview: Vec::new(),
            offer: None,
            form: Some(form.clone()),
        }
    }
}
