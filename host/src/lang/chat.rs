//! `keyless://chat` on the program's side: each model call becomes a generation request on the
//! running `keyless-host serve` (found through `serve.json`, or `--host URL`), which the paired
//! extension pastes into its chat tab; the answer is read back from the page there.
//!
//! The process gets its own token (`as-run-PID`, good for the generations only) from the user's
//! pairing file, and revokes it when the run ends. Waiting is bounded by `--model-timeout`;
//! Ctrl+C while it waits cancels the generation (the tab stops following) and ends the run with
//! `KA_AS_CANCELLED`.

use keyless_core::api::{Generation, GenerationRequest, GenerationState};
use keyless_core::lang::interp::{EffectError, ModelCall};
use keyless_core::Code;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a program says when the chat cannot be reached.
const HOW: &str = "keyless://chat needs keyless-host serve running (in any folder) and a chat tab answering programs: open your chat in Chrome, and in the keyless popup turn on \"Answer .as programs here\"";

/// The connection to `serve` for one run.
#[derive(Debug)]
pub struct ChatClient {
    base: String,
    token: String,
    /// The pairing-file client to revoke at the end (`None`: the token came from elsewhere).
    client: Option<String>,
    /// Generates asked so far (each generate's attempts share its number).
    generates: u64,
    /// The last generation, released when the run ends.
    last: Option<String>,
    /// Who answered the last generation.
    pub site: Option<String>,
    agent: ureq::Agent,
}

fn unavailable(msg: impl Into<String>) -> EffectError {
    EffectError::new(Code::AsChatUnavailable, msg)
}

/// Ctrl+C while a generation is awaited: the wait ends, cancelled. Outside that wait Ctrl+C
/// keeps its default action.
struct Interrupt {
    /// Not waiting for the chat: Ctrl+C ends the process as it always did.
    idle: Arc<AtomicBool>,
    pressed: Arc<AtomicBool>,
}

fn interrupt() -> &'static Interrupt {
    static I: std::sync::OnceLock<Interrupt> = std::sync::OnceLock::new();
    I.get_or_init(|| {
        let i = Interrupt {
            idle: Arc::new(AtomicBool::new(true)),
            pressed: Arc::new(AtomicBool::new(false)),
        };
        #[cfg(unix)]
        {
            use signal_hook::consts::SIGINT;
            let _ = signal_hook::flag::register_conditional_default(SIGINT, Arc::clone(&i.idle));
            let _ = signal_hook::flag::register(SIGINT, Arc::clone(&i.pressed));
        }
        i
    })
}

impl ChatClient {
    /// Finds the running `serve` (`host`, else `serve.json`) and gets a token for this process.
    ///
    /// # Errors
    /// `KA_AS_CHAT_UNAVAILABLE` when no `serve` runs, or no token can be had.
    pub fn connect(host: Option<&str>) -> Result<Self, EffectError> {
        let base = match host {
            Some(h) => h.trim_end_matches('/').to_string(),
            None => match crate::native::running_serve() {
                Ok(info) => format!("http://127.0.0.1:{}", info.port),
                Err(why) => return Err(unavailable(format!("{why}. {HOW}"))),
            },
        };
        let pairings = crate::pairing::Pairings::default_path()
            .map(crate::pairing::Pairings::new)
            .ok_or_else(|| unavailable("no user config folder (set HOME or XDG_CONFIG_HOME)"))?;
        let (client, token) = pairings
            .add_program(std::process::id())
            .map_err(|e| unavailable(format!("cannot record this run's token: {e}")))?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self {
            base,
            token,
            client: Some(client),
            generates: 0,
            last: None,
            site: None,
            agent,
        })
    }

    fn post(&self, path: &str, body: &serde_json::Value) -> Result<(u16, String), EffectError> {
        let r = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .send(body.to_string());
        self.read(r)
    }

    fn read(
        &self,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(u16, String), EffectError> {
        let res = r.map_err(|e| {
            unavailable(format!(
                "keyless-host serve cannot be reached at {}: {e}. {HOW}",
                self.base
            ))
        })?;
        let status = res.status().as_u16();
        let body = res
            .into_body()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .map_err(|e| unavailable(format!("keyless-host serve: {e}")))?;
        Ok((status, body))
    }

    /// One attempt of a generate, answered by the chat tab.
    ///
    /// # Errors
    /// The chat's failure under its code: no tab, a busy chat, a closed tab, a truncated reply,
    /// a full chat, the timeout, a cancel.
    pub fn generate(
        &mut self,
        call: &ModelCall,
        run: &str,
        file: &str,
        timeout: Duration,
    ) -> Result<String, EffectError> {
        if call.attempt <= 1 {
            self.generates += 1;
        }
        let id = format!("{run}-g{}-a{}", self.generates, call.attempt);
        let req = GenerationRequest {
            id: id.clone(),
            run: run.to_string(),
            file: file.to_string(),
            attempt: call.attempt,
            prompt: call.prompt.clone(),
            correction: call.correction.clone(),
            shape: serde_json::to_value(&call.shape).unwrap_or_default(),
        };
        let body = serde_json::to_value(&req).unwrap_or_default();
        // Ctrl+C cancels from the moment the request may exist at the host.
        let int = interrupt();
        int.pressed.store(false, Ordering::SeqCst);
        int.idle.store(false, Ordering::SeqCst);
        let out = self
            .post("/v1/generations", &body)
            .and_then(|(status, text)| {
                if !(200..300).contains(&status) {
                    return Err(refusal(status, &text));
                }
                self.last = Some(id.clone());
                self.wait(&id, timeout, int)
            });
        int.idle.store(true, Ordering::SeqCst);
        out
    }

    /// Waits for the generation to end: one long poll at a time in a thread (one request per
    /// 15 s, not a stream of them), while this loop watches Ctrl+C and the timeout.
    fn wait(
        &mut self,
        id: &str,
        timeout: Duration,
        int: &Interrupt,
    ) -> Result<String, EffectError> {
        let until = Instant::now() + timeout;
        let (tx, rx) = std::sync::mpsc::channel::<Result<Generation, EffectError>>();
        let poller = Poller {
            base: self.base.clone(),
            token: self.token.clone(),
            agent: self.agent.clone(),
            id: id.to_string(),
        };
        std::thread::spawn(move || poller.run(&tx));
        // The generation as the host last told it: a timeout says what the page showed.
        let mut last: Option<Generation> = None;
        loop {
            if int.pressed.swap(false, Ordering::SeqCst) {
                let _ = self.cancel(id, "Ctrl+C");
                return Err(EffectError::new(
                    Code::AsCancelled,
                    "cancelled with Ctrl+C while the chat answered",
                ));
            }
            if Instant::now() >= until {
                // The cancel answers with the generation as it stands: what the tab last showed
                // (the long poll only answers when a generation ends).
                let now = self.cancel(id, "the --model-timeout").or(last);
                return Err(EffectError::new(
                    Code::AsModelTimeout,
                    timed_out(timeout, now.as_ref()),
                ));
            }
            let g = match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(g) => g?,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(unavailable(
                        "lost keyless-host serve while the chat answered",
                    ))
                }
            };
            self.site.clone_from(&g.site);
            let state = g.state;
            last = Some(g.clone());
            match state {
                GenerationState::Answered => return Ok(g.answer.unwrap_or_default()),
                GenerationState::Failed | GenerationState::Cancelled => {
                    let e = g.error.unwrap_or_default();
                    let (code, msg) = e.split_once(' ').unwrap_or((e.as_str(), ""));
                    let code =
                        Code::from_name(code).unwrap_or(if g.state == GenerationState::Cancelled {
                            Code::AsCancelled
                        } else {
                            Code::AsModel
                        });
                    return Err(EffectError::new(code, msg.to_string()));
                }
                GenerationState::Pending | GenerationState::Claimed => {}
            }
        }
    }

    /// Cancels the generation; the host's view of it after the cancel, when it answered.
    fn cancel(&self, id: &str, by: &str) -> Option<Generation> {
        let (status, body) = self
            .post(
                &format!("/v1/generations/{id}/cancel"),
                &serde_json::json!({ "by": by }),
            )
            .ok()?;
        (status == 200)
            .then(|| serde_json::from_str(&body).ok())
            .flatten()
    }
}

/// The long polls of one generation, until it ends or nobody listens.
struct Poller {
    base: String,
    token: String,
    agent: ureq::Agent,
    id: String,
}

impl Poller {
    fn run(self, tx: &std::sync::mpsc::Sender<Result<Generation, EffectError>>) {
        loop {
            let got = self
                .agent
                .get(format!("{}/v1/generations/{}?wait=15", self.base, self.id))
                .header("authorization", format!("Bearer {}", self.token))
                .call()
                .map_err(|e| {
                    unavailable(format!(
                        "keyless-host serve cannot be reached at {}: {e}",
                        self.base
                    ))
                })
                .and_then(|res| {
                    let status = res.status().as_u16();
                    let text = res
                        .into_body()
                        .with_config()
                        .limit(16 << 20)
                        .read_to_string()
                        .map_err(|e| unavailable(format!("keyless-host serve: {e}")))?;
                    if status != 200 {
                        return Err(refusal(status, &text));
                    }
                    serde_json::from_str::<Generation>(&text)
                        .map_err(|e| unavailable(format!("keyless-host serve answered oddly: {e}")))
                });
            let done = got.as_ref().map_or(true, |g| g.state.finished());
            if tx.send(got).is_err() || done {
                return;
            }
        }
    }
}

/// The `--model-timeout` message: what the page showed, as the tab last told the host.
fn timed_out(timeout: Duration, last: Option<&Generation>) -> String {
    let secs = timeout.as_secs();
    match last {
        Some(g) if g.site.is_some() => {
            let site = g.site.as_deref().unwrap_or_default();
            match g.seen.as_deref() {
                Some(seen) => format!(
                    "no complete answer within {secs}s (--model-timeout); the {site} tab showed {seen}"
                ),
                None => format!(
                    "the {site} tab took the request but showed no reply within {secs}s (--model-timeout)"
                ),
            }
        }
        _ => format!(
            "no chat tab took the request within {secs}s (--model-timeout): turn on \"Answer .as programs here\" in the extension's popup on a chat tab"
        ),
    }
}

/// A refused request as the program's error: the host's code and message.
fn refusal(status: u16, body: &str) -> EffectError {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let code = v["code"]
        .as_str()
        .and_then(Code::from_name)
        .unwrap_or(Code::AsChatUnavailable);
    let message = v["message"].as_str().map_or_else(
        || format!("keyless-host serve answered {status}"),
        str::to_string,
    );
    let message = if code == Code::Unauthorized {
        format!("{message} (this run's token was refused: is the serve at this address using your keyless config?)")
    } else {
        message
    };
    EffectError::new(code, message)
}

impl Drop for ChatClient {
    /// The run ended: the chat is free for another program, and this run's token is revoked.
    fn drop(&mut self) {
        if let Some(id) = self.last.take() {
            let _ = self.post(
                &format!("/v1/generations/{id}/release"),
                &serde_json::json!({}),
            );
        }
        if let Some(client) = self.client.take() {
            if let Some(p) = crate::pairing::Pairings::default_path() {
                let _ = crate::pairing::Pairings::new(p).remove(&client);
            }
        }
    }
}
