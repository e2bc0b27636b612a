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
    let (d, cfg, results) = blocking(move || {
        let store = task_state.store()?;
        let d = store.batch_detail(&id)?.ok_or(ApiError::NotFound)?;
        let cfg = session_exec(&task_state, &store, &d.session)?;
        let results = store.results(&id)?;
        Ok((d, cfg, results))
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
    })
    .into_response())
}

pub(super) async fn undo_batch_route(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let guard = st.workspace_lock.clone().lock_owned().await;
    let task_state = st.clone();
    let restored = blocking(move || {
        let _guard = guard;
        let d = task_state
            .store()?
            .batch_detail(&id)?
            .ok_or(ApiError::NotFound)?;
        let dir = task_state
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
        crate::exec::workspace::undo_batch(&task_state.ws, &dir)
            .map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    st.emit(&HostEvent::Undone {
        restored: restored.clone(),
    });
    Ok(Json(api::Undone { restored }).into_response())
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
