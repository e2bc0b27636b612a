//! A stored batch (with its tiers and results), undo, and the audit log.

use super::sessions::session_exec;
use super::state::{blocking, ApiError, Shared};
use axum::extract::{Path as UrlPath, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self, HostEvent};
use keyless_core::check::command_views;
use keyless_core::policy::verdict::Judge;
use serde::Deserialize;
use std::sync::Arc;

/// A batch: its reply, the parsed commands with their tiers and stored results, and the text the
/// model received.
pub(super) async fn get_batch(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let task_state = st.clone();
    // The tiers shown are the ones the batch met: the session's own mode, not the host's default.
    let (d, cfg, results, (undo, undo_note), counts) = blocking(move || {
        let store = task_state.store()?;
        let d = store.batch_detail(&id)?.ok_or(ApiError::NotFound)?;
        let cfg = session_exec(&task_state, &store, &d.session)?;
        let results = store.results(&id)?;
        let undo = undo_state(&task_state.ws, &id);
        let counts = store.counts(&id)?;
        Ok((d, cfg, results, undo, counts))
    })
    .await?;
    // A piece session's batch is judged with the movement's tools it ran under.
    let judge = Judge {
        mode: cfg.mode,
        allow: cfg.allow.clone(),
        gate: d.gate.as_deref().and_then(|g| serde_json::from_str(g).ok()),
        // …and with what the host knew of the workspace when the views judged it.
        context: d
            .context
            .as_deref()
            .and_then(|c| serde_json::from_str(c).ok())
            .unwrap_or_default(),
    };
    let commands = command_views(&d.reply, &cfg.settings, &judge)
        .into_iter()
        .map(|view| api::BatchCommand {
            result: results.iter().find(|r| r.number == view.number).cloned(),
            view,
        })
        .collect();
    Ok(Json(api::BatchDetail {
        session: d.session,
        turn: d.turn,
        batch: d.batch,
        status: d.status,
        control: d.control,
        reply: d.reply,
        text: d.text,
        commands,
        outcome: api::BatchOutcome::of(d.status, &counts),
        undo,
        undo_note,
    })
    .into_response())
}

/// The batch's undo state, by the same rule as `keyless-host undo`.
pub(super) fn undo_state(
    ws: &crate::exec::workspace::Workspace,
    id: &str,
) -> (api::UndoState, Option<String>) {
    use crate::exec::undo::{self, State as U};
    match undo::find(ws, id) {
        // A batch that changed no files has nothing to say about undo.
        Err(_) => (api::UndoState::NoChanges, None),
        Ok(found) => {
            let st = undo::state(ws, &found);
            let note = undo::refusal(&found, &st).map(|f| f.reason);
            let state = match st {
                U::Undoable => api::UndoState::Undoable,
                U::Undone => api::UndoState::Undone,
                U::Committed { .. } => api::UndoState::Committed,
            };
            (state, note)
        }
    }
}

/// `?force=true`: put back the batch's versions even of files changed after it ran.
#[derive(Debug, Deserialize)]
pub(super) struct UndoQuery {
    #[serde(default)]
    pub(super) force: bool,
}

pub(super) async fn undo_batch_route(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<UndoQuery>,
) -> Result<Response, ApiError> {
    let guard = st.workspace_lock.clone().lock_owned().await;
    let task_state = st.clone();
    let restored = blocking(move || {
        let _guard = guard;
        let found = crate::exec::undo::find(&task_state.ws, &id).map_err(undo_err)?;
        crate::exec::undo::undo(&task_state.ws, &found, q.force)
            .map(|r| r.into_iter().map(|r| r.path).collect::<Vec<_>>())
            .map_err(undo_err)
    })
    .await?;
    st.emit(&HostEvent::Undone {
        restored: restored.clone(),
    });
    Ok(Json(api::Undone { restored }).into_response())
}

/// The undo rule's refusals, as HTTP: an unknown batch is 404, a refusal 409 with its words.
fn undo_err(f: crate::exec::Failure) -> ApiError {
    match f.code {
        keyless_core::Code::BatchNotFound => ApiError::NotFound,
        keyless_core::Code::UndoRefused => ApiError::Conflict(format!("{} {}", f.code, f.reason)),
        _ => ApiError::Internal(f.reason),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct AuditQuery {
    pub(super) session: Option<String>,
    pub(super) limit: Option<u32>,
}

pub(super) async fn audit(
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
