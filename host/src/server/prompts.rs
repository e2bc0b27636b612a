//! Confirmations and questions waiting for the user, the prompter that raises them, and the
//! event stream.

use super::state::Question;
use super::state::{json_body, ApiError, Shared};
use crate::exec::batch::{Approval, Confirmation, Prompter};
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self, HostEvent, PromptKind};
use keyless_core::policy::always::{AllowRule, RuleKind};
use keyless_core::policy::Verdict;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// The batch thread's prompter: questions go to the API and the event stream.
pub(super) struct ServerPrompter {
    pub(super) shared: Arc<Shared>,
    pub(super) session: String,
}

impl Prompter for ServerPrompter {
    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        !matches!(
            self.confirm_with(&Confirmation {
                command,
                verdict,
                preview: &[],
                offer: None,
            }),
            Approval::Declined | Approval::DeclinedBecause(_)
        )
    }
    fn confirm_with(&mut self, c: &Confirmation<'_>) -> Approval {
        let answer = self.shared.wait_for(
            &self.session,
            Question {
                kind: PromptKind::Confirm,
                text: c.command.to_string(),
                tier: Some(c.verdict.tier),
                reason: Some(c.verdict.reason.clone()),
                preview: c.preview.to_vec(),
                offer: c.offer.cloned(),
                form: None,
            },
        );
        match answer {
            Some(a) if a.approve => {
                let rule = c.offer.and_then(|o| match a.always {
                    Some(RuleKind::Exact) => Some(o.exact.clone()),
                    Some(RuleKind::Like) => o.like.clone(),
                    None => None,
                });
                rule.map_or(Approval::Once, Approval::Always)
            }
            // A decline may say why: the model is told.
            Some(a) => match a.answer.as_deref().map(str::trim) {
                Some(why) if !why.is_empty() => Approval::DeclinedBecause(why.to_string()),
                _ => Approval::Declined,
            },
            None => Approval::Declined,
        }
    }
    fn remembered(&mut self, rule: &AllowRule, result: &Result<(), String>) {
        let text = match result {
            Ok(()) => format!(
                "keyless: from now on `{}` runs without asking in this workspace (`keyless-host allow list` shows the rules, `allow remove` takes one back).",
                rule.text
            ),
            Err(why) => format!("keyless: the rule `{}` was {why}", rule.text),
        };
        self.shared.emit(&HostEvent::Say {
            session: self.session.clone(),
            text,
        });
    }
    fn ask(&mut self, question: &str) -> Option<String> {
        self.shared
            .wait_for(&self.session, Question::ask(question, None))
            .and_then(|a| a.answer)
            .filter(|a| !a.trim().is_empty())
    }
    fn piece_question(&mut self, question: &str, movement: &str) -> Option<String> {
        self.shared
            .wait_for(
                &self.session,
                Question::ask(
                    question,
                    Some(format!(
                        "The piece stopped in movement \"{movement}\" (needs_user_input); your answer resumes it."
                    )),
                ),
            )
            .and_then(|a| a.answer)
            .filter(|a| !a.trim().is_empty())
    }
    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        use keyless_core::elicit::Answer;
        let answer = self
            .shared
            .wait_for(&self.session, Question::form(server, form));
        match answer {
            // Checked again here (answer_prompt refused what does not fit): what the server
            // gets is what the form accepts.
            Some(a) if a.approve => form
                .accept(&a.values.unwrap_or_default())
                .map_or(Answer::Decline, Answer::Accept),
            Some(a) if a.cancel => Answer::Cancel,
            _ => Answer::Decline,
        }
    }
    fn log_in_again(&mut self, server: &str, scope: Option<&str>) -> bool {
        let wants = scope.map_or_else(String::new, |s| {
            let s = keyless_core::text::printable(s);
            format!(
                " (it asks for: {})",
                keyless_core::text::truncate_chars(s.trim(), 200)
            )
        });
        self.shared
            .wait_for(
                &self.session,
                Question {
                    kind: PromptKind::Login,
                    text: format!("Log in to the MCP server \"{server}\" again"),
                    tier: None,
                    reason: Some(format!(
                        "The server refused your login for this tool call{wants}: it expired, or the call needs more access than it grants. Approve to open the login page in your browser; the call is tried again once you have logged in. The tokens stay in your config folder, never with the model."
                    )),
                    preview: Vec::new(),
                    offer: None,
                    form: None,
                },
            )
            .is_some_and(|a| a.approve)
    }
    fn say(&mut self, message: &str) {
        self.shared.emit(&HostEvent::Say {
            session: self.session.clone(),
            text: message.to_string(),
        });
    }
    fn output(&mut self, chunk: &str) {
        self.shared.emit(&HostEvent::Output {
            session: self.session.clone(),
            text: chunk.to_string(),
        });
    }
    fn cancel_requested(&mut self) -> bool {
        // serve is stopping (Ctrl-C): every running command is cancelled.
        self.shared
            .closing
            .load(std::sync::atomic::Ordering::SeqCst)
            || self
                .shared
                .cancel
                .lock()
                .is_ok_and(|mut c| c.remove(&self.session))
    }
    fn command_started(&mut self, c: &keyless_core::Command) {
        self.shared.emit(&HostEvent::CommandStarted {
            session: self.session.clone(),
            number: c.number,
            command: c.kind.name().to_string(),
            target: c.target(),
        });
    }
    fn command_finished(&mut self, r: &keyless_core::message::CommandResult) {
        let code = match &r.outcome {
            keyless_core::message::CommandOutcome::Error { code, .. } => {
                Some(code.as_str().to_string())
            }
            _ => None,
        };
        self.shared.emit(&HostEvent::CommandFinished {
            session: self.session.clone(),
            number: r.number,
            command: r.kind.name().to_string(),
            target: r.target.clone(),
            status: r.outcome.status(),
            code,
            diff: r.diff.clone(),
        });
    }
}

pub(super) async fn list_prompts(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let p = st.pending()?;
    let list: Vec<api::PendingPrompt> = p
        .iter()
        .map(|(id, q)| api::PendingPrompt {
            id: *id,
            session: q.session.clone(),
            kind: q.q.kind,
            text: q.q.text.clone(),
            tier: q.q.tier,
            reason: q.q.reason.clone(),
            preview: q.q.preview.clone(),
            offer: q.q.offer.clone(),
            form: q.q.form.clone(),
        })
        .collect();
    Ok(Json(list).into_response())
}

pub(super) async fn answer_prompt(
    State(st): State<Arc<Shared>>,
    UrlPath(id): UrlPath<u64>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let answer: api::PromptAnswer = json_body(&body)?;
    let p = st.pending()?;
    let Some(q) = p.get(&id) else {
        return Err(ApiError::NotFound);
    };
    // A form's values that do not fit are refused here and the form keeps waiting, so the user
    // can mend them.
    if let (Some(form), true) = (&q.q.form, answer.approve) {
        form.accept(&answer.values.clone().unwrap_or_default())
            .map_err(|e| {
                ApiError::Coded(
                    axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                    keyless_core::Code::ConfigValidation,
                    e,
                )
            })?;
    }
    let _ = q.reply.send(answer);
    Ok(Json(api::Answered { id, answered: true }).into_response())
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
