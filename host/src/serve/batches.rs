//! A stored batch (with its tiers and results), undo, and the audit log.

use super::*;

/// A batch: its reply, the parsed commands with their tiers and stored results, and the text the
/// model received.
pub(super) async fn get_batch(
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

pub(super) async fn undo_batch_route(
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
