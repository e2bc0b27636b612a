//! Where `.as` runs are kept: `.agent/as-runs/RUN.json` in the workspace (the summary, the value
//! and the whole trace), written by `keyless-host as run` and by runs started through the API,
//! read back by `GET /v1/as/runs` and the dashboard.

use crate::exec::workspace::Workspace;
use keyless_core::api::{AsRunDetail, AsRunSummary};
use std::io;

const FOLDER: &str = "as-runs";
/// The runs listed, newest first.
pub const LIST_MAX: usize = 100;

/// A new run's id: `as-<unix seconds>-<pid>-<n>`.
#[must_use]
pub fn new_id(n: u64) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("as-{secs}-{}-{n}", std::process::id())
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 80
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Writes (or rewrites) a run's record.
///
/// # Errors
/// When `.agent` cannot be written.
pub fn save(ws: &Workspace, detail: &AsRunDetail) -> io::Result<()> {
    let text = serde_json::to_vec(detail).map_err(io::Error::other)?;
    ws.save_state(&format!("{FOLDER}/{}.json", detail.summary.run), &text)
}

/// One run's record.
#[must_use]
pub fn load(ws: &Workspace, id: &str) -> Option<AsRunDetail> {
    if !valid_id(id) {
        return None;
    }
    let agent = ws.agent().ok()?;
    let dir = cap_fs_ext::DirExt::open_dir_nofollow(&agent, FOLDER).ok()?;
    let text = dir.read_to_string(format!("{id}.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The runs, newest first.
#[must_use]
pub fn list(ws: &Workspace) -> Vec<AsRunSummary> {
    let Ok(agent) = ws.agent() else {
        return Vec::new();
    };
    let Ok(dir) = cap_fs_ext::DirExt::open_dir_nofollow(&agent, FOLDER) else {
        return Vec::new();
    };
    let mut out: Vec<AsRunSummary> = Vec::new();
    if let Ok(entries) = dir.entries() {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            if let Some(d) = load(ws, id) {
                out.push(d.summary);
            }
        }
    }
    out.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.run.cmp(&a.run)));
    out.truncate(LIST_MAX);
    out
}

/// Unix seconds now.
#[must_use]
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

/// Keeps the run in `.agent/as-runs/` for the dashboard (a failure to write it is only logged:
/// the run itself succeeded or failed on its own).
pub fn record(
    ws: &Workspace,
    run: &str,
    file: &str,
    started_at: i64,
    result: &Result<serde_json::Value, keyless_core::lang::interp::RunError>,
    trace: &keyless_core::lang::interp::Trace,
) {
    use keyless_core::api::{AsRunDetail, AsRunState, AsRunSummary};
    let detail = AsRunDetail {
        summary: AsRunSummary {
            run: run.to_string(),
            file: file.to_string(),
            started_at,
            state: if result.is_ok() {
                AsRunState::Done
            } else {
                AsRunState::Failed
            },
            error: result
                .as_ref()
                .err()
                .map(keyless_core::lang::interp::RunError::headline),
        },
        value: result
            .as_ref()
            .ok()
            .cloned()
            .unwrap_or(serde_json::Value::Null),
        trace: trace.clone(),
    };
    if let Err(e) = save(ws, &detail) {
        eprintln!("keyless-host: the run was not kept in .agent/as-runs: {e}");
    }
}

/// One JSON line of `keyless-host as run --events`, which runs started through the API read: each
/// trace event as it completes, then the value or the error.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunLine {
    Trace(keyless_core::lang::interp::TraceEvent),
    Value(serde_json::Value),
    Error(String),
}

/// Writes one line on stdout, at once.
pub fn print_line(line: &RunLine) {
    use std::io::Write;
    if let Ok(text) = serde_json::to_string(line) {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}
