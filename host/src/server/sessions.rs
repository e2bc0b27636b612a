//! Sessions and their replies: create, resume, settings, pieces, and submitting a batch.

use super::prompts::ServerPrompter;
use super::state::{blocking, json_body, ApiError, Shared};
use crate::exec::batch::ExecSettings;
use crate::store::Store;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self, HostEvent};
use keyless_core::message::{system_prompt, PromptContext};
use keyless_core::{Mode, Pace, Settings};
use std::sync::Arc;

/// A client's pace and limits, checked by the core (a bad value answers with its `KA_` code).
pub(super) fn resolve_settings(input: api::SettingsRequest) -> Result<Settings, ApiError> {
    let pace = match input.pace {
        Some(p) => p.parse::<Pace>()?,
        None => Pace::default(),
    };
    let s = Settings {
        limits: input.limits.unwrap_or_default(),
        pace,
    };
    s.validate()?;
    Ok(s)
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
    let input: api::SessionSettingsRequest = json_body(&body)?;
    let (mode, pace) = session_choice(input.mode.as_deref(), input.pace.as_deref())?;
    let task_state = st.clone();
    let cfg = blocking(move || {
        let store = task_state.store()?;
        store.session(&id)?;
        store.set_session_settings(&id, mode, pace)?;
        session_exec(&task_state, &store, &id)
    })
    .await?;
    Ok(Json(api::SessionSettings {
        mode: cfg.mode,
        pace: cfg.settings.pace,
    })
    .into_response())
}

/// Loads and validates the piece a new session asks for.
pub(super) fn session_piece(
    st: &Shared,
    input: &api::SessionRequest,
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
    let task_state = st.clone();
    let list = blocking(move || Ok(crate::pieces::list(task_state.ws.root()))).await?;
    let out: Vec<api::PieceSummary> = list
        .into_iter()
        .map(|(name, description, source)| api::PieceSummary {
            editable: crate::pieces::is_workspace_source(st.ws.root(), &source),
            name,
            description,
            source,
        })
        .collect();
    Ok(Json(out).into_response())
}

/// `GET /v1/pieces/{name}`: the piece the name resolves to, as text.
pub(super) async fn get_piece(
    State(st): State<Arc<Shared>>,
    UrlPath(name): UrlPath<String>,
) -> Result<Response, ApiError> {
    let root = st.ws.root().to_path_buf();
    let (name, yaml, source) = blocking(move || match crate::pieces::lookup(&root, &name) {
        Some((yaml, source)) => Ok((name, yaml, source)),
        None => {
            Err(crate::pieces::PieceError::NotFound(format!("no piece named \"{name}\"")).into())
        }
    })
    .await?;
    Ok(Json(api::PieceText {
        editable: crate::pieces::is_workspace_source(st.ws.root(), &source),
        name,
        source,
        yaml,
    })
    .into_response())
}

/// `PUT /v1/pieces/{name}`: stores a workspace piece under strict validation.
pub(super) async fn put_piece(
    State(st): State<Arc<Shared>>,
    UrlPath(name): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: api::PieceWrite = json_body(&body)?;
    let task_state = st.clone();
    let saved = blocking(move || {
        let (source, warnings, shadows) =
            crate::pieces::store_piece(&task_state.ws, &name, &input.yaml)?;
        Ok(api::PieceSaved {
            name,
            source,
            warnings,
            shadows,
        })
    })
    .await?;
    Ok(Json(saved).into_response())
}

/// `DELETE /v1/pieces/{name}`: removes a workspace piece.
pub(super) async fn delete_piece(
    State(st): State<Arc<Shared>>,
    UrlPath(name): UrlPath<String>,
) -> Result<Response, ApiError> {
    let task_state = st.clone();
    let deleted = blocking(move || {
        let now = crate::pieces::delete_piece(&task_state.ws, &name)?;
        Ok(api::PieceDeleted {
            name,
            deleted: true,
            now,
        })
    })
    .await?;
    Ok(Json(deleted).into_response())
}

pub(super) async fn create_session(
    State(st): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: api::SessionRequest = if body.is_empty() {
        api::SessionRequest::default()
    } else {
        json_body(&body)?
    };
    let task_state = st.clone();
    let (mode, pace) = session_choice(input.mode.as_deref(), input.pace.as_deref())?;
    let task = input.task.clone();
    let (pos, movement, cfg, context, git, branch_note, repo_map) =
        blocking(move || -> Result<_, ApiError> {
            // The repository map of the first prompt, within its budget (Agent.RepoMapChars).
            let map_of = |cfg: &ExecSettings, task: Option<&str>| {
                (cfg.repo_map_chars > 0).then(|| {
                    keyless_core::repomap::render(
                        &crate::exec::repomap::gather(&task_state.ws),
                        task,
                        cfg.repo_map_chars,
                    )
                })
            };
            let store = task_state.store()?;
            if let Some(id) = input.resume.clone() {
                if input.piece.is_some() || input.piece_yaml.is_some() {
                    return Err(ApiError::BadRequest(
                        "a resumed session keeps its piece; do not send one".into(),
                    ));
                }
                let pos = store.session(&id)?;
                store.set_session_settings(&id, mode, pace)?;
                let mut movement = crate::pieces::resume(&store, &id)?;
                let cfg = session_exec(&task_state, &store, &id)?;
                if let Some(run) = movement.as_mut() {
                    crate::pieces::attach_tools(run, &cfg.tools, &id)?;
                }
                let context = crate::submit::refresh_context(&store, &id, task_state.ws.root())?;
                let git = crate::submit::session_repo(&store, &id, task_state.ws.root())?
                    .facts(task_state.ws.root(), &cfg.git);
                let map = map_of(&cfg, input.task.as_deref());
                return Ok((pos, movement, cfg, context, git, None, map));
            }
            let piece = session_piece(&task_state, &input)?;
            let id = format!(
                "s-{}",
                crate::pairing::random_hex(8).map_err(|e| ApiError::Internal(e.to_string()))?
            );
            // What the piece needs beyond the workspace (its required MCP servers, started now) is
            // there before the session exists: a missing server stops it here, with its code.
            let catalog = match &piece {
                Some((_, p)) => Some(
                    task_state
                        .exec
                        .tools
                        .catalog(&id, p)
                        .map_err(|f| crate::pieces::PieceError::Tools(f.code, f.reason))?,
                ),
                None => None,
            };
            let pos = store.create_session(&id, &task_state.ws.root().display().to_string())?;
            if let Some(task) = input.task.as_deref().filter(|t| !t.trim().is_empty()) {
                store.set_task(&id, task.trim())?;
            }
            let (_, branch_note) = crate::submit::start_repo(
                &store,
                &id,
                task_state.ws.root(),
                &task_state.exec.git,
                input.task.as_deref().unwrap_or(""),
            )?;
            store.set_session_settings(&id, mode, pace)?;
            let movement = match piece {
                Some((yaml, piece)) => {
                    let mut run = crate::pieces::start(&store, &id, &yaml, piece)?;
                    run.set_catalog(catalog.unwrap_or_default());
                    Some(run)
                }
                None => None,
            };
            let cfg = session_exec(&task_state, &store, &id)?;
            let context = crate::submit::refresh_context(&store, &id, task_state.ws.root())?;
            let git = crate::submit::session_repo(&store, &id, task_state.ws.root())?
                .facts(task_state.ws.root(), &cfg.git);
            let map = map_of(&cfg, input.task.as_deref());
            Ok((pos, movement, cfg, context, git, branch_note, map))
        })
        .await?;
    // The first look at the workspace (the guard's, the undo store's) is taken now, while the
    // model writes its first reply: the session's first command costs what its later ones do.
    if cfg.sandbox {
        let root = st.ws.root().to_path_buf();
        tokio::task::spawn_blocking(move || crate::exec::prime(&root));
    }
    let piece = movement.is_some();
    let gate = movement
        .as_ref()
        .map(keyless_core::piece::run::PieceRun::tools);
    let movement = movement
        .as_ref()
        .map(keyless_core::message::movement_prompt);
    let prompt = system_prompt(
        &cfg.settings,
        &PromptContext {
            mode: cfg.mode,
            failure_mode: cfg.failure_mode,
            environment: Some(st.environment.clone()),
            movement,
            task,
            git: Some(git.clone()),
            repo_map,
        },
    );
    st.emit(&HostEvent::Session {
        session: pos.id.clone(),
        turn: pos.turn,
        batch: pos.batch,
    });
    Ok(Json(api::SessionStarted {
        session: pos.id,
        turn: pos.turn,
        batch: pos.batch,
        prompt,
        piece,
        mode: cfg.mode,
        pace: cfg.settings.pace,
        allow: cfg.allow.clone(),
        gate,
        context,
        branch: git.branch,
        branch_note,
    })
    .into_response())
}

pub(super) async fn get_session(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let out = blocking(move || -> Result<_, ApiError> {
        let store = st.store()?;
        let pos = store.session(&id)?;
        let mut batches = store.batches(&id)?;
        // Undo's state, by the same rule as `keyless-host undo`.
        let undoable: std::collections::HashMap<String, api::UndoState> =
            crate::exec::undo::list(&st.ws)
                .into_iter()
                .filter_map(|(f, state)| {
                    let u = match state {
                        crate::exec::undo::State::Undoable => api::UndoState::Undoable,
                        crate::exec::undo::State::Undone => api::UndoState::Undone,
                        crate::exec::undo::State::Committed { .. } => api::UndoState::Committed,
                    };
                    f.id.map(|id| (id, u))
                })
                .collect();
        for b in &mut batches {
            b.undo = undoable
                .get(&b.id)
                .copied()
                .unwrap_or(api::UndoState::NoChanges);
        }
        Ok(api::SessionDetail {
            batches,
            session: pos.id,
            turn: pos.turn,
            batch: pos.batch,
        })
    })
    .await?;
    Ok(Json(out).into_response())
}

pub(super) fn execute_reply(
    st: &Arc<Shared>,
    session: &str,
    input: &api::ReplyRequest,
) -> Result<api::ReplyAnswer, ApiError> {
    let store = st.store()?;
    let mut pos = store.session(session)?;
    let cfg = session_exec(st, &store, session)?;
    let repo = crate::submit::session_repo(&store, session, st.ws.root())?;
    let ctx = crate::submit::Context {
        store: &store,
        ws: &st.ws,
        cfg: &cfg,
        repo: &repo,
        judge_next: true,
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
            st.emit(&HostEvent::BatchStarted {
                session: session.to_string(),
                batch_id: batch_id.to_string(),
                turn,
                batch,
            });
        }
        crate::submit::Event::Finished {
            batch_id,
            status,
            turn_ended,
        } => {
            tracing::info!(%session, batch_id, status = status.as_str(), turn_ended = ?turn_ended, "batch finished");
            st.emit(&HostEvent::BatchFinished {
                session: session.to_string(),
                batch_id: batch_id.to_string(),
                status,
                turn_ended,
            });
        }
    };
    Ok(crate::submit::submit(
        &ctx,
        &mut pos,
        &input.reply,
        at,
        &mut prompter,
        &mut events,
    )?)
}

pub(super) async fn submit_reply(
    State(st): State<Arc<Shared>>,
    UrlPath(session): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: api::ReplyRequest = json_body(&body)?;
    // The batch runs in its own task: a client that disconnects drops this handler, not the batch,
    // whose result a retry then gets from the store. One batch at a time per workspace: the lock
    // is held by that task until the batch is stored.
    let task = tokio::spawn(async move {
        let guard = st.workspace_lock.clone().lock_owned().await;
        blocking(move || {
            let _guard = guard;
            execute_reply(&st, &session, &input)
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
    Ok(Json(api::CancelRequested {
        session,
        cancel_requested: true,
    })
    .into_response())
}

pub(super) async fn list_sessions(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let rows = blocking(move || Ok(st.store()?.sessions()?)).await?;
    Ok(Json(rows).into_response())
}

/// `GET /v1/sessions/{id}/diff`: everything the session changed since the commit it started
/// from (its whole diff), at most 500 files.
pub(super) async fn session_diff(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    let diffs = blocking(move || {
        let store = st.store()?;
        store.session(&id)?;
        let rec = store.repo(&id)?.unwrap_or_default();
        Ok(rec
            .base_commit
            .as_deref()
            .map(|base| crate::exec::diffs::since_commit(&st.ws, base, 500))
            .unwrap_or_default())
    })
    .await?;
    Ok(Json(diffs).into_response())
}

/// `POST /v1/sessions/{id}/handover`: the session continues in a new chat. The answer is the
/// handover core makes from the session's record for that site's paste budget (attached when over
/// it and the site takes files); the move is recorded for the dashboard.
pub(super) async fn handover_route(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: api::HandoverRequest = json_body(&body)?;
    let answer = blocking(move || -> Result<_, ApiError> {
        let store = st.store()?;
        let pos = store.session(&id)?;
        let cfg = session_exec(&st, &store, &id)?;
        let repo = crate::submit::session_repo(&store, &id, st.ws.root())?;
        // The system prompt as the session's first message gave it, without its task and
        // movement: the handover gives those in sections of their own.
        let prompt = system_prompt(
            &cfg.settings,
            &PromptContext {
                mode: cfg.mode,
                failure_mode: cfg.failure_mode,
                environment: Some(st.environment.clone()),
                movement: None,
                task: None,
                git: Some(repo.facts(st.ws.root(), &cfg.git)),
                repo_map: None,
            },
        );
        let record = crate::handover::record(
            &crate::handover::Source {
                store: &store,
                ws: &st.ws,
                repo: &repo,
                exec: &cfg,
                session: &id,
                system_prompt: &prompt,
            },
            &pos,
        )?;
        let mut h = keyless_core::handover::handover(&record, input.max_paste_chars as usize);
        if !input.uploads {
            h.delivery = keyless_core::site::Delivery::Paste;
        }
        store.add_move(&id, &input.site, input.tab, (pos.turn, pos.batch))?;
        Ok(api::HandoverAnswer {
            text: h.text,
            delivery: h.delivery,
            turn: pos.turn,
            batch: pos.batch,
        })
    })
    .await?;
    Ok(Json(answer).into_response())
}
