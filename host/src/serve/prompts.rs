//! Confirmations and questions waiting for the user, the prompter that raises them, and the
//! event stream.

use super::*;

/// A question waiting for the user.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) session: String,
    pub(super) kind: &'static str,
    pub(super) text: String,
    pub(super) tier: Option<String>,
    pub(super) reason: Option<String>,
    pub(super) reply: std::sync::mpsc::Sender<Answer>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Answer {
    #[serde(default)]
    pub(super) approve: bool,
    #[serde(default)]
    pub(super) answer: Option<String>,
}

/// The batch thread's prompter: questions go to the API and the event stream.
pub(super) struct ServerPrompter {
    pub(super) shared: Arc<Shared>,
    pub(super) session: String,
}

impl Prompter for ServerPrompter {
    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        self.shared
            .wait_for(&self.session, "confirm", command, Some(verdict))
            .is_some_and(|a| a.approve)
    }
    fn ask(&mut self, question: &str) -> Option<String> {
        self.shared
            .wait_for(&self.session, "ask", question, None)
            .and_then(|a| a.answer)
            .filter(|a| !a.trim().is_empty())
    }
    fn say(&mut self, message: &str) {
        self.shared
            .emit(&serde_json::json!({"type": "say", "session": self.session, "text": message}));
    }
    fn output(&mut self, chunk: &str) {
        self.shared
            .emit(&serde_json::json!({"type": "output", "session": self.session, "text": chunk}));
    }
    fn cancel_requested(&mut self) -> bool {
        self.shared
            .cancel
            .lock()
            .is_ok_and(|mut c| c.remove(&self.session))
    }
    fn command_started(&mut self, c: &keyless_core::Command) {
        self.shared.emit(&serde_json::json!({"type": "command_started", "session": self.session, "number": c.number, "command": c.kind.name(), "target": c.target()}));
    }
    fn command_finished(&mut self, r: &keyless_core::message::CommandResult) {
        use keyless_core::message::Outcome;
        let (status, code) = match &r.outcome {
            Outcome::Ok { .. } => ("ok", None),
            Outcome::Error { code, .. } => ("error", Some(code.as_str())),
            Outcome::Skipped { .. } => ("skipped", None),
        };
        self.shared.emit(&serde_json::json!({"type": "command_finished", "session": self.session, "number": r.number, "command": r.kind.name(), "target": r.target, "status": status, "code": code}));
    }
}

pub(super) async fn list_prompts(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let p = st.pending()?;
    let list: Vec<serde_json::Value> = p
        .iter()
        .map(|(id, q)| serde_json::json!({"id": id, "session": q.session, "kind": q.kind, "text": q.text, "tier": q.tier, "reason": q.reason}))
        .collect();
    Ok(Json(list).into_response())
}

pub(super) async fn answer_prompt(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<u64>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let answer: Answer = json_body(&body)?;
    let p = st.pending()?;
    let Some(q) = p.get(&id) else {
        return Err(ApiError::NotFound);
    };
    let _ = q.reply.send(answer);
    Ok(Json(serde_json::json!({"id": id, "answered": true})).into_response())
}

pub(super) async fn events(
    State(st): State<Arc<Shared>>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let rx = st.events.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(msg) => Event::default().data(msg),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                Event::default().event("lagged").data(n.to_string())
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(event), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
