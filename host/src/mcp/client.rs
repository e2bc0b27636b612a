//! keyless as an MCP client towards one server: what it tells the server of itself, and its
//! answers to what the server asks (forms go to the user waiting on the call, never to the
//! model; roots are the workspace), whether asked with a request (2025-11-25) or in an
//! input-required result (2026-07-28).

use super::*;

/// keyless as an MCP client: what it tells a server of itself (`clientInfo`: keyless-host and its
/// version; the protocol version; the roots capability) and its answers to what a server asks.
/// Roots are the workspace folder and nothing else, so a file server can be pointed at it.
#[derive(Debug, Clone)]
pub struct Client {
    /// The workspace as a `file://` URI (none when it cannot be written as one).
    pub(super) root: Option<String>,
    /// Whether a user answers this client's elicitations: only then is the capability offered.
    pub(super) answers: bool,
    pub(super) questions: Questions,
    pub(super) stale: Arc<std::sync::atomic::AtomicBool>,
}

/// What a server sends the user who waits on its tool call.
#[derive(Debug)]
pub enum Notice {
    /// A form to fill in (elicitation), and where the answer goes.
    Question {
        form: keyless_core::elicit::Form,
        reply: tokio::sync::oneshot::Sender<keyless_core::elicit::Answer>,
    },
    /// A progress notification, as one line (`progress 3/10: copying`).
    Progress(String),
}

/// The call waiting on a server, if any: where its questions and progress go.
pub(super) type Questions = Arc<Mutex<Option<mpsc::Sender<Notice>>>>;

/// A progress notification as one line: `progress 3/10: copying` (the server's message, its
/// escape sequences and controls dropped, cut to 200 characters).
fn progress_line(p: &rmcp::model::ProgressNotificationParam) -> String {
    let mut line = match p.total {
        Some(t) => format!("progress {}/{}", p.progress, t),
        None => format!("progress {}", p.progress),
    };
    if let Some(m) = p.message.as_deref().filter(|m| !m.trim().is_empty()) {
        line.push_str(": ");
        let m = keyless_core::text::printable(m);
        line.push_str(&keyless_core::text::truncate_chars(m.trim(), 200));
    }
    line
}

/// Who waits on a tool call: asked, while it waits, whether to stop, and to answer the form a
/// server sends (its elicitation). Nobody to ask declines.
pub trait CallUser {
    fn cancel_requested(&mut self) -> bool {
        false
    }
    /// A progress line from `server` while its tool runs.
    fn progress(&mut self, server: &str, line: &str) {
        let _ = (server, line);
    }
    /// The user's answer to `server`'s form (never the model's).
    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        let _ = (server, form);
        keyless_core::elicit::Answer::Decline
    }
}

/// A call nobody waits on (an `.as` program's): it is never cancelled and declines forms.
#[derive(Debug)]
pub struct Nobody;

impl CallUser for Nobody {}

impl Client {
    #[must_use]
    pub fn new(workspace: &std::path::Path, answers: bool) -> Self {
        Self {
            root: url::Url::from_directory_path(workspace)
                .ok()
                .map(|u| u.to_string()),
            answers,
            questions: Arc::new(Mutex::new(None)),
            stale: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// What `initialize` says: keyless-host and its version, the newest protocol version that
    /// still has the `initialize` handshake, roots, and elicitation (forms) when a user answers
    /// them (`answers`). Never sampling: the model is not the server's to ask.
    #[must_use]
    pub fn config(answers: bool) -> rmcp::model::ClientConfig {
        use rmcp::model::{
            ClientCapabilities, ClientConfig, ElicitationCapability, FormElicitationCapability,
            Implementation, ProtocolVersion, RootsCapabilities,
        };
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        if answers {
            let mut e = ElicitationCapability::new();
            e.form = Some(FormElicitationCapability::new().with_schema_validation(true));
            capabilities.elicitation = Some(e);
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("keyless-host", env!("CARGO_PKG_VERSION"))
                .with_title("keyless")
                .with_description(
                    "keyless-host: the chat you already have open, as a coding agent on your machine",
                ),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

impl Client {
    /// Hands `notice` to the call waiting on the server; false when none waits.
    fn notify(&self, notice: Notice) -> bool {
        self.questions
            .lock()
            .ok()
            .and_then(|q| q.as_ref().map(|s| s.send(notice).is_ok()))
            .unwrap_or(false)
    }
}

impl rmcp::ClientHandler for Client {
    /// The tools are listed again before their next use (the movement offers the new list from
    /// the next reply on).
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.stale.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Shown live to whoever waits on the call (the overlay's output, the terminal).
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let _ = self.notify(Notice::Progress(progress_line(&params)));
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        Self::config(self.answers)
    }

    /// A form goes to the user waiting on the call (checked and completed by core: defaults,
    /// types, ranges); a URL elicitation, or one with nobody waiting, is declined.
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.elicit(request).await
    }

    // Roots are part of 2025-11-25; rmcp marks them deprecated for 2026-07-28 (SEP-2577), where
    // a server asks for them in an input-required result instead.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Ok(self.roots())
    }
}

impl Client {
    /// A form goes to the user waiting on the call (checked and completed by core: defaults,
    /// types, ranges); a URL elicitation, or one with nobody waiting, is declined. The same
    /// whether the server asked with a request of its own (2025-11-25) or in an input-required
    /// result (2026-07-28).
    async fn elicit(
        &self,
        request: rmcp::model::ElicitRequestParams,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use keyless_core::elicit::Answer;
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return decline;
        };
        if !self.answers {
            return decline;
        }
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
        let form = keyless_core::elicit::form(&message, &schema)
            .map_err(|e| rmcp::ErrorData::invalid_params(e, None))?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.notify(Notice::Question { form, reply });
        if !sent {
            return decline;
        }
        // The call ended (its timeout, Stop) before the user answered: cancelled.
        Ok(match answer.await.unwrap_or(Answer::Cancel) {
            Answer::Accept(content) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::Value::Object(content)),
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    /// The workspace folder, and nothing else.
    #[allow(deprecated)]
    fn roots(&self) -> rmcp::model::ListRootsResult {
        use rmcp::model::{ListRootsResult, Root};
        ListRootsResult::new(
            self.root
                .iter()
                .map(|u| Root::new(u.clone()).with_name("workspace"))
                .collect(),
        )
    }

    /// The answers to a 2026-07-28 server's input-required result (MRTR), for the call's next
    /// round: each form goes to the user as an elicitation does (at most [`FORMS_PER_RESULT`]
    /// forms; the user's Cancel ends the call), roots are the workspace, and a sampling request
    /// (keyless offers no sampling) gets no answer. The request state is echoed as it came, never
    /// read.
    #[allow(deprecated)]
    pub(super) async fn answer_input(
        &self,
        asked: rmcp::model::InputRequiredResult,
    ) -> Result<(Option<rmcp::model::InputResponses>, Option<String>), rmcp::ServiceError> {
        use rmcp::model::{ElicitationAction, InputRequest};
        let refuse =
            |why: String| rmcp::ServiceError::McpError(rmcp::ErrorData::invalid_request(why, None));
        let asks = asked.input_requests.unwrap_or_default();
        let forms = asks
            .values()
            .filter(|r| matches!(r, InputRequest::Elicitation(_)))
            .count();
        if forms > FORMS_PER_RESULT {
            return Err(refuse(format!(
                "the server asks {forms} forms at once; keyless puts at most {FORMS_PER_RESULT} before you"
            )));
        }
        let mut answers = rmcp::model::InputResponses::new();
        for (key, request) in asks {
            let answer = match request {
                InputRequest::Elicitation(e) => {
                    let answer = self
                        .elicit(e.params)
                        .await
                        .map_err(rmcp::ServiceError::McpError)?;
                    // Cancel ends the call: the server cannot keep asking round after round.
                    if answer.action == ElicitationAction::Cancel {
                        return Err(refuse("you cancelled the server's form".into()));
                    }
                    serde_json::to_value(answer)
                }
                InputRequest::ListRoots(_) => serde_json::to_value(self.roots()),
                _ => continue,
            };
            let answer = answer.map_err(|e| {
                rmcp::ServiceError::McpError(rmcp::ErrorData::internal_error(e.to_string(), None))
            })?;
            answers.insert(key, answer);
        }
        Ok((
            (!answers.is_empty()).then_some(answers),
            asked.request_state,
        ))
    }
}

/// How many forms one input-required result may put before the user; a server asking more is
/// refused (with at most 10 rounds a call, a call asks at most 40).
const FORMS_PER_RESULT: usize = 4;
