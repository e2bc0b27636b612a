//! `keyless://chat`: `.as` programs that think with the chat tab the extension is paired from.
//!
//! - `POST /v1/generations` (from `keyless-host as run`): a program's generate, under the caller's
//!   id; the same id again gives the same generation (a retry never asks the chat twice). Refused
//!   with `KA_AS_CHAT_UNAVAILABLE` when no tab answers programs, `KA_AS_CHAT_BUSY` while another
//!   program holds the chat.
//! - `POST /v1/chat-tab` (the extension, every 20 s): the tab that answers programs is there
//!   (or no longer is); answers the generations waiting for it.
//! - `POST /v1/generations/{id}/claim`: the tab takes it (the first claim wins).
//! - `POST /v1/generations/{id}`: the answer or the failure, exactly once.
//! - `POST /v1/generations/{id}/cancel`: the user cancels (dashboard, overlay, Ctrl+C, timeout).
//! - `POST /v1/generations/{id}/release`: the program ended; the chat is free for another.
//! - `GET /v1/generations[/{id}?wait=SECONDS]`: the list, or one (waiting for it to end).
//!
//! Every change is announced on the event stream (`generation`).

use super::chat::Chat;
use super::state::{json_body, ApiError, Shared};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self, Generation, GenerationState, HostEvent};
use keyless_core::lang::ast::Shape;
use keyless_core::lang::interp::ModelCall;
use keyless_core::Code;
use serde::Deserialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A tab that has not said it is there for this long no longer answers programs.
const TAB_FRESH: Duration = Duration::from_secs(60);
/// A program holds the chat from its generate until it releases it, or for this long after its
/// last generation ended (its process may have died without releasing).
const HOLD: Duration = Duration::from_secs(30);
/// The longest one `GET …?wait=` waits (the request timeout is longer).
const MAX_WAIT: Duration = Duration::from_secs(20);
/// Finished generations kept for the dashboard.
const KEEP_FINISHED: usize = 200;

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 120
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A refusal with its code (409), as the caller shows it.
fn refused(code: Code, message: String) -> ApiError {
    ApiError::Coded(StatusCode::CONFLICT, code, message)
}

impl Shared {
    fn chat(&self) -> Result<std::sync::MutexGuard<'_, Chat>, ApiError> {
        self.chat
            .lock()
            .map_err(|e| ApiError::Internal(e.to_string()))
    }

    /// Announces a changed generation and wakes its waiters.
    fn changed(&self, g: &Generation) {
        self.emit(&HostEvent::Generation {
            generation: g.clone(),
        });
        self.chat_changed.send_modify(|v| *v += 1);
    }
}

/// `POST /v1/generations`.
pub(super) async fn ask(State(st): State<Arc<Shared>>, body: Bytes) -> Result<Response, ApiError> {
    let req: api::GenerationRequest = json_body(&body)?;
    if !valid_id(&req.id) || !valid_id(&req.run) {
        return Err(ApiError::BadRequest(
            "id and run must be 1 to 120 letters, digits, - or _".into(),
        ));
    }
    let shape: Shape = keyless_core::lang::shape::shape_from_json(&req.shape)
        .ok_or_else(|| ApiError::BadRequest("shape is not a shape".into()))?;
    let now = Instant::now();
    let g = {
        let mut chat = st.chat()?;
        if let Some(g) = chat.all.get(&req.id) {
            // A retry of the same request: the same generation.
            return Ok((StatusCode::OK, Json(g.clone())).into_response());
        }
        let Some((site, _)) = chat
            .tab
            .as_ref()
            .filter(|(_, seen)| now.duration_since(*seen) < TAB_FRESH)
        else {
            return Err(refused(
                Code::AsChatUnavailable,
                "no chat tab answers programs: open your chat in Chrome, and in the keyless popup turn on \"Answer .as programs here\"".into(),
            ));
        };
        let site = site.clone();
        if let Some((other, last)) = chat.holder.clone() {
            let busy = chat
                .all
                .values()
                .any(|g| g.run == other && !g.state.finished());
            if other != req.run && (busy || now.duration_since(last) < HOLD) {
                return Err(refused(
                    Code::AsChatBusy,
                    format!("the {site} tab serves another program (run {other}); one program uses the chat at a time: wait for it to end, or cancel it in the dashboard"),
                ));
            }
        }
        let call = ModelCall {
            model: keyless_core::lang::chat::CHAT_MODEL.into(),
            prompt: req.prompt.clone(),
            limit: None,
            attempt: req.attempt.max(1),
            correction: req.correction.clone(),
            shape: shape.clone(),
        };
        let g = Generation {
            id: req.id.clone(),
            run: req.run.clone(),
            file: req.file.clone(),
            attempt: req.attempt.max(1),
            // The chat sees which program asks: its file, else its run.
            text: keyless_core::lang::chat::message(
                &call,
                if req.file.is_empty() {
                    &req.run
                } else {
                    &req.file
                },
            ),
            shape: req.shape.clone(),
            shape_text: keyless_core::lang::shape::describe_shape(&shape),
            state: GenerationState::Pending,
            site: None,
            answer: None,
            error: None,
            seen: None,
            asked_at: unix_ms(),
            claimed_at: None,
            ended_at: None,
        };
        chat.holder = Some((req.run.clone(), now));
        chat.all.insert(g.id.clone(), g.clone());
        chat.order.push(g.id.clone());
        // Keep every unfinished generation, and the newest finished ones.
        while chat.order.len() > KEEP_FINISHED {
            let Some(pos) = chat
                .order
                .iter()
                .position(|id| chat.all.get(id).is_none_or(|g| g.state.finished()))
            else {
                break;
            };
            let id = chat.order.remove(pos);
            chat.all.remove(&id);
        }
        g
    };
    tracing::info!(generation = %g.id, run = %g.run, attempt = g.attempt, "generation asked");
    st.changed(&g);
    Ok((StatusCode::CREATED, Json(g)).into_response())
}

/// `GET /v1/generations`: newest first.
pub(super) async fn list(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let chat = st.chat()?;
    let out: Vec<Generation> = chat
        .order
        .iter()
        .rev()
        .filter_map(|id| chat.all.get(id).cloned())
        .collect();
    Ok(Json(out).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct WaitQuery {
    wait: Option<u64>,
}

/// `GET /v1/generations/{id}?wait=SECONDS`: the generation, once it has ended or after the wait
/// (at most 20 s), whichever comes first.
pub(super) async fn get(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<WaitQuery>,
) -> Result<Response, ApiError> {
    let until = Instant::now() + Duration::from_secs(q.wait.unwrap_or(0)).min(MAX_WAIT);
    let mut rx = st.chat_changed.subscribe();
    loop {
        let g = st.chat()?.all.get(&id).cloned().ok_or(ApiError::NotFound)?;
        if g.state.finished() || Instant::now() >= until {
            return Ok(Json(g).into_response());
        }
        let left = until.saturating_duration_since(Instant::now());
        if tokio::time::timeout(left, rx.changed()).await.is_err() {
            // Waited long enough: answer with the state as it is.
            continue;
        }
    }
}

/// Changes one generation under the lock, then announces it.
fn update(
    st: &Shared,
    id: &str,
    f: impl FnOnce(&mut Generation) -> Result<bool, ApiError>,
) -> Result<Generation, ApiError> {
    let (g, changed) = {
        let mut chat = st.chat()?;
        let g = chat.all.get_mut(id).ok_or(ApiError::NotFound)?;
        let changed = f(g)?;
        let g = g.clone();
        if changed && g.state.finished() {
            if let Some((run, last)) = chat.holder.as_mut() {
                if *run == g.run {
                    *last = Instant::now();
                }
            }
        }
        (g, changed)
    };
    if changed {
        st.changed(&g);
    }
    Ok(g)
}

/// `POST /v1/generations/{id}/claim`: the first claim wins; every later one is refused, so a
/// generation is pasted once even when the event stream and a tab's report both offer it.
pub(super) async fn claim(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: api::GenerationClaim = json_body(&body)?;
    let g = update(&st, &id, |g| match g.state {
        GenerationState::Pending => {
            g.state = GenerationState::Claimed;
            g.site = Some(req.site.clone());
            g.claimed_at = Some(unix_ms());
            Ok(true)
        }
        s => Err(refused(
            Code::AsChatBusy,
            format!("generation {id} is {} already", state_word(s)),
        )),
    })?;
    Ok(Json(g).into_response())
}

fn state_word(s: GenerationState) -> &'static str {
    match s {
        GenerationState::Pending => "waiting",
        GenerationState::Claimed => "taken by a tab",
        GenerationState::Answered => "answered",
        GenerationState::Failed => "failed",
        GenerationState::Cancelled => "cancelled",
    }
}

/// `POST /v1/generations/{id}`: the answer, or the failure (`KA_… message`). Exactly once: the
/// same answer again is harmless, a different one is refused.
pub(super) async fn answer(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: api::GenerationAnswer = json_body(&body)?;
    let (state, answer, error) = match (req.answer, req.error) {
        (Some(a), None) => (GenerationState::Answered, Some(a), None),
        (None, Some(e)) => {
            let code = e.split_whitespace().next().unwrap_or("");
            if Code::from_name(code).is_none() {
                return Err(ApiError::BadRequest(
                    "error must start with its KA_ code".into(),
                ));
            }
            (GenerationState::Failed, None, Some(e))
        }
        _ => return Err(ApiError::BadRequest("send either answer or error".into())),
    };
    let g = update(&st, &id, |g| {
        if g.state.finished() {
            if g.state == state && g.answer == answer && g.error == error {
                return Ok(false);
            }
            return Err(ApiError::Conflict(format!(
                "generation {id} is {} already; a second answer is not taken",
                state_word(g.state)
            )));
        }
        g.state = state;
        g.answer = answer;
        g.error = error;
        g.ended_at = Some(unix_ms());
        Ok(true)
    })?;
    tracing::info!(generation = %g.id, state = state_word(g.state), "generation ended");
    Ok(Json(g).into_response())
}

/// Longest `seen` kept; a longer one is cut (the tab's words, shown through the sanitizer).
const SEEN_MAX: usize = 200;

/// `POST /v1/generations/{id}/seen`: what the tab sees of the reply now. Kept while the
/// generation runs, so a timeout can say what the page showed; ignored once it ended.
pub(super) async fn seen(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: api::GenerationSeen = json_body(&body)?;
    // One line, every hidden character shown: it reaches a terminal in a timeout's message.
    let one_line = req.seen.replace(['\n', '\r'], " ");
    let seen =
        keyless_core::text::printable(&keyless_core::text::truncate_chars(&one_line, SEEN_MAX));
    let g = update(&st, &id, |g| {
        if g.state.finished() || g.seen.as_deref() == Some(seen.as_str()) {
            return Ok(false);
        }
        g.seen = Some(seen);
        Ok(true)
    })?;
    Ok(Json(g).into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct CancelBody {
    /// Who cancelled, for the message ("the dashboard", "Ctrl+C", …).
    by: Option<String>,
}

/// `POST /v1/generations/{id}/cancel`.
pub(super) async fn cancel(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: CancelBody = if body.is_empty() {
        CancelBody::default()
    } else {
        json_body(&body)?
    };
    let by: String = req
        .by
        .unwrap_or_else(|| "the user".into())
        .chars()
        .filter(|c| !c.is_control())
        .take(80)
        .collect();
    let g = update(&st, &id, |g| {
        if g.state.finished() {
            return Ok(false);
        }
        g.state = GenerationState::Cancelled;
        g.error = Some(format!("{} cancelled by {by}", Code::AsCancelled));
        g.ended_at = Some(unix_ms());
        Ok(true)
    })?;
    Ok(Json(g).into_response())
}

/// `POST /v1/generations/{id}/release`: the program that asked for it has ended.
pub(super) async fn release(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let mut chat = st.chat()?;
    let run = chat
        .all
        .get(&id)
        .map(|g| g.run.clone())
        .ok_or(ApiError::NotFound)?;
    if chat.holder.as_ref().is_some_and(|(r, _)| *r == run) {
        chat.holder = None;
    }
    Ok(Json(serde_json::json!({ "released": run })).into_response())
}

/// `POST /v1/chat-tab`: the tab answering programs is there (its site), or no longer (`null`).
pub(super) async fn chat_tab(
    State(st): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: api::ChatTabReport = json_body(&body)?;
    let mut chat = st.chat()?;
    chat.tab = req.site.map(|s| (s, Instant::now()));
    let pending = chat
        .order
        .iter()
        .filter_map(|id| chat.all.get(id))
        .filter(|g| g.state == GenerationState::Pending)
        .cloned()
        .collect();
    Ok(Json(api::ChatTabState { pending }).into_response())
}

impl Shared {
    /// The server stops: every generation still open fails, so the programs waiting for one end
    /// at once with a clear code.
    pub fn close_generations(&self) {
        let open: Vec<String> = match self.chat.lock() {
            Ok(chat) => chat
                .all
                .values()
                .filter(|g| !g.state.finished())
                .map(|g| g.id.clone())
                .collect(),
            Err(_) => return,
        };
        for id in open {
            let _ = update(self, &id, |g| {
                g.state = GenerationState::Failed;
                g.error = Some(format!(
                    "{} keyless-host serve stopped while the chat answered",
                    Code::AsChatUnavailable
                ));
                g.ended_at = Some(unix_ms());
                Ok(true)
            });
        }
    }
}
