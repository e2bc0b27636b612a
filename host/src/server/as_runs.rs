//! `.as` programs through the API: `POST /v1/as/runs` starts one on the workspace and streams
//! its trace over the event stream (`as_trace`, then `as_run` when it ends); `GET /v1/as/runs`
//! lists the runs kept in `.agent/as-runs/` (API and `keyless-host as run` alike) and
//! `GET /v1/as/runs/{run}` gives one with its value and whole trace.

use super::state::{blocking, json_body, ApiError, Shared};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self, AsRunState, HostEvent};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How long one model answer may take in a run started through the API.
const MODEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

static RUNS: AtomicU64 = AtomicU64::new(1);

pub(super) async fn start_run(
    State(st): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: api::AsRunRequest = json_body(&body)?;
    let task_state = st.clone();
    let file = req.file.clone();
    let (key, source) = blocking(move || {
        let t = task_state
            .ws
            .resolve(&file)
            .map_err(|f| ApiError::BadRequest(f.to_string()))?;
        let bytes = task_state
            .ws
            .read(&t)
            .map_err(|f| ApiError::BadRequest(f.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ApiError::BadRequest(format!("{} is not UTF-8 text", t.rel)))?;
        Ok((t.rel, text))
    })
    .await?;
    let run = crate::lang_runs::new_id(RUNS.fetch_add(1, Ordering::Relaxed));
    let summary = api::AsRunSummary {
        run: run.clone(),
        file: key.clone(),
        started_at: crate::lang_runs::unix_now(),
        state: AsRunState::Running,
        error: None,
    };
    let started = summary.clone();
    // Kept before the answer, so the run is listed and readable the moment its id is known.
    let saver = st.clone();
    let first = api::AsRunDetail {
        summary: summary.clone(),
        value: serde_json::Value::Null,
        trace: keyless_core::lang::interp::Trace { events: Vec::new() },
    };
    blocking(move || {
        crate::lang_runs::save(&saver.ws, &first).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    let runner = st.clone();
    std::thread::spawn(move || {
        let st = runner;
        // One writer of the workspace at a time: batches and undo take the same lock.
        let _guard = st.workspace_lock.blocking_lock();
        st.emit(&HostEvent::AsRun {
            run: run.clone(),
            state: AsRunState::Running,
            error: None,
        });
        let mut effects =
            crate::lang_effects::HostEffects::new(&st.ws, req.mock.map(Into::into), MODEL_TIMEOUT);
        effects.run.clone_from(&run);
        let events = st.clone();
        let id = run.clone();
        effects.observer = Some(Box::new(move |e| {
            events.emit(&HostEvent::AsTrace {
                run: id.clone(),
                event: e.clone(),
            });
        }));
        let entry = keyless_core::lang::interp::Entry {
            agent: req.agent,
            func: req.func,
            input: req.input,
        };
        let (result, trace) = keyless_core::lang::interp::run(&key, &source, &entry, &mut effects);
        drop(effects);
        crate::lang_runs::record(&st.ws, &run, &key, started.started_at, &result, &trace);
        st.emit(&HostEvent::AsRun {
            run,
            state: if result.is_ok() {
                AsRunState::Done
            } else {
                AsRunState::Failed
            },
            error: result.err().map(|e| format!("{} {}", e.code, e.message)),
        });
    });
    Ok((StatusCode::ACCEPTED, Json(summary)).into_response())
}

pub(super) async fn list_runs(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let list = blocking(move || Ok(crate::lang_runs::list(&st.ws))).await?;
    Ok(Json(list).into_response())
}

pub(super) async fn get_run(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let detail =
        blocking(move || crate::lang_runs::load(&st.ws, &id).ok_or(ApiError::NotFound)).await?;
    Ok(Json(detail).into_response())
}
