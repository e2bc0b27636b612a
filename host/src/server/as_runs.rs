//! `.as` programs through the API: `POST /v1/as/runs` starts one on the workspace and streams
//! its trace over the event stream (`as_trace`, then `as_run` when it ends); `GET /v1/as/runs`
//! lists the runs kept in `.agent/as-runs/` (API and `keyless-host as run` alike) and
//! `GET /v1/as/runs/{run}` gives one with its value and whole trace.
//!
//! Each program runs in a process of its own (`keyless-host as run --events`, with a memory
//! limit): one that exhausts memory or crashes ends itself, never the server.

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
    // The file must be a readable text file of the workspace before a run is named.
    let key = blocking(move || {
        let t = task_state
            .ws
            .resolve(&file)
            .map_err(|f| ApiError::BadRequest(f.to_string()))?;
        let bytes = task_state
            .ws
            .read(&t)
            .map_err(|f| ApiError::BadRequest(f.to_string()))?;
        String::from_utf8(bytes)
            .map_err(|_| ApiError::BadRequest(format!("{} is not UTF-8 text", t.rel)))?;
        Ok(t.rel)
    })
    .await?;
    let run = crate::lang::runs::new_id(RUNS.fetch_add(1, Ordering::Relaxed));
    let summary = api::AsRunSummary {
        run: run.clone(),
        file: key.clone(),
        started_at: crate::lang::runs::unix_now(),
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
        crate::lang::runs::save(&saver.ws, &first).map_err(|e| ApiError::Internal(e.to_string()))
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
        let error = match run_in_child(&st, &run, &key, &req) {
            Ok(error) => error,
            Err(e) => {
                // The program's own process never finished (it ran out of memory or was killed):
                // the run is kept as failed, and the server goes on.
                let failure = keyless_core::lang::interp::RunError::bare(e.0, e.1);
                let trace = keyless_core::lang::interp::Trace { events: Vec::new() };
                crate::lang::runs::record(
                    &st.ws,
                    &run,
                    &key,
                    started.started_at,
                    &Err(failure.clone()),
                    &trace,
                );
                Some(format!("{} {}", failure.code, failure.message))
            }
        };
        st.emit(&HostEvent::AsRun {
            run,
            state: if error.is_none() {
                AsRunState::Done
            } else {
                AsRunState::Failed
            },
            error,
        });
    });
    Ok((StatusCode::ACCEPTED, Json(summary)).into_response())
}

pub(super) async fn list_runs(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let list = blocking(move || Ok(crate::lang::runs::list(&st.ws))).await?;
    Ok(Json(list).into_response())
}

pub(super) async fn get_run(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let detail =
        blocking(move || crate::lang::runs::load(&st.ws, &id).ok_or(ApiError::NotFound)).await?;
    Ok(Json(detail).into_response())
}

/// The most memory a program started through the API may take (its own process), in MiB.
const MEMORY_LIMIT_MIB: u64 = 2048;

/// Runs a program in a process of its own (`keyless-host as run --events`), so that a program
/// that exhausts memory or crashes ends only itself: its trace events are forwarded as they
/// come, and the process keeps the run's record. `Ok(None)`: done; `Ok(Some(error))`: the
/// program failed; `Err`: its process ended without an answer.
fn run_in_child(
    st: &Shared,
    run: &str,
    key: &str,
    req: &api::AsRunRequest,
) -> Result<Option<String>, (keyless_core::Code, String)> {
    use std::io::{BufRead, Write};
    let mut cmd = crate::launch::sandboxed::host_binary();
    cmd.args(["as", "run"])
        .arg(st.ws.root().join(key))
        .arg("--workspace")
        .arg(st.ws.root())
        .args(["--events", "--run-id", run])
        .args(["--memory-limit", &MEMORY_LIMIT_MIB.to_string()])
        .args(["--model-timeout", &MODEL_TIMEOUT.as_secs().to_string()])
        // keyless://chat asks this server's chat tab.
        .arg("--host")
        .arg(format!("http://127.0.0.1:{}", st.port))
        .arg("--input")
        .arg(req.input.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    if let Some(a) = &req.agent {
        cmd.args(["--agent", a]);
    }
    if let Some(f) = &req.func {
        cmd.args(["--func", f]);
    }
    if req.mock.is_some() {
        cmd.args(["--mock", "-"]);
    }
    let internal = |e: std::io::Error| {
        (
            keyless_core::Code::Internal,
            format!("cannot start the program's process: {e}"),
        )
    };
    let mut child = cmd.spawn().map_err(internal)?;
    if let Some(mut stdin) = child.stdin.take() {
        if let Some(mock) = &req.mock {
            let _ = stdin.write_all(serde_json::to_string(mock).unwrap_or_default().as_bytes());
        }
    }
    let mut outcome: Option<Option<String>> = None;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<crate::lang::runs::RunLine>(&line) {
                Ok(crate::lang::runs::RunLine::Trace(event)) => st.emit(&HostEvent::AsTrace {
                    run: run.to_string(),
                    event,
                }),
                Ok(crate::lang::runs::RunLine::Value(_)) => outcome = Some(None),
                Ok(crate::lang::runs::RunLine::Error(e)) => outcome = Some(Some(e)),
                Err(_) => {}
            }
        }
    }
    let status = child.wait().map_err(internal)?;
    outcome.ok_or_else(|| {
        (
            keyless_core::Code::AsLimit,
            format!(
                "the program's process ended without an answer ({status}): it ran out of memory ({MEMORY_LIMIT_MIB} MiB) or was killed"
            ),
        )
    })
}
