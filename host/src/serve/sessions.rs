//! Sessions and their replies: create, resume, settings, pieces, and submitting a batch.

use super::*;

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct SettingsIn {
    pub(super) pace: Option<String>,
    pub(super) limits: Option<Limits>,
}

impl SettingsIn {
    pub(super) fn resolve(self) -> Result<Settings, ApiError> {
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

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct SessionIn {
    /// Resume this session.
    pub(super) resume: Option<String>,
    /// Follow a piece, by name (see GET /v1/pieces).
    pub(super) piece: Option<String>,
    /// Follow a piece given as YAML (validated strictly).
    pub(super) piece_yaml: Option<String>,
    /// Ask, AutoSafe or Auto for this session (default: the host's `--mode`).
    pub(super) mode: Option<String>,
    /// Step, Balanced or Batch for this session (default: the host's pace).
    pub(super) pace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct SessionSettingsIn {
    pub(super) mode: Option<String>,
    pub(super) pace: Option<String>,
}

/// Checks a mode and pace a client sent and returns them in their canonical spelling.
pub(super) fn session_choice(
    mode: Option<&str>,
    pace: Option<&str>,
) -> Result<(Option<&'static str>, Option<&'static str>), ApiError> {
    let mode = mode.map(str::parse::<Mode>).transpose()?.map(Mode::as_str);
    let pace = pace.map(str::parse::<Pace>).transpose()?.map(Pace::as_str);
    Ok((mode, pace))
}

/// The host's execution settings with the session's own mode and pace applied.
pub(super) fn session_exec(
    st: &Shared,
    store: &Store,
    session: &str,
) -> Result<ExecSettings, ApiError> {
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
pub(super) async fn session_settings(
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
pub(super) fn session_piece(
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

pub(super) async fn list_pieces(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let list = blocking(move || Ok(crate::pieces::list(st.ws.root()))).await?;
    let out: Vec<serde_json::Value> = list.into_iter().map(|(name, description, source)| serde_json::json!({"name": name, "description": description, "source": source})).collect();
    Ok(Json(out).into_response())
}

pub(super) async fn create_session(
    State(st): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
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

pub(super) async fn get_session(
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
pub(super) struct ReplyIn {
    pub(super) reply: String,
    /// The turn and batch the client believes this reply is; a retry sends the same numbers.
    #[serde(default)]
    pub(super) turn: Option<u32>,
    #[serde(default)]
    pub(super) batch: Option<u32>,
}

#[derive(Debug, Serialize)]
pub(super) struct ReplyOut {
    pub(super) batch_id: String,
    pub(super) turn: u32,
    pub(super) batch: u32,
    /// "done" (executed), "rejected" (format correction), "interrupted" (stored as running).
    pub(super) status: keyless_core::turn::BatchStatus,
    /// The text to send back to the chat.
    pub(super) text: String,
    pub(super) control: Option<keyless_core::Control>,
    pub(super) turn_ended: Option<keyless_core::turn::TurnEnd>,
    /// True when the answer comes from the store (a retry): nothing ran now.
    pub(super) stored: bool,
    pub(super) next_turn: u32,
    pub(super) next_batch: u32,
    /// For a piece session: where the run stands after this batch.
    pub(super) piece: Option<serde_json::Value>,
}

pub(super) fn run_reply(
    st: &Arc<Shared>,
    session: &str,
    input: &ReplyIn,
) -> Result<ReplyOut, ApiError> {
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

pub(super) async fn submit_reply(
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

pub(super) async fn cancel(
    State(st): State<Arc<Shared>>,
    UrlPath(session): UrlPath<String>,
) -> Result<Response, ApiError> {
    if let Ok(mut c) = st.cancel.lock() {
        c.insert(session.clone());
    }
    Ok(Json(serde_json::json!({"session": session, "cancel_requested": true})).into_response())
}

pub(super) async fn list_sessions(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let rows = blocking(move || Ok(st.store()?.sessions()?)).await?;
    let out: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|(id, created_at, turn, batch, piece)| serde_json::json!({"session": id, "created_at": created_at, "turn": turn, "batch": batch, "piece": piece}))
        .collect();
    Ok(Json(out).into_response())
}
