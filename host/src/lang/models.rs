//! The model providers of `.as` programs: `openai://MODEL` (Chat Completions),
//! `anthropic://MODEL` (Messages API) and `ollama://HOST:PORT/MODEL` (`/api/chat`), over
//! blocking HTTP (ureq). Keys and base URLs come from the seed's environment variables:
//! `OPENAI_API_KEY` / `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL`,
//! `OLLAMA_BASE_URL`.
//!
//! JSON output is requested the way each API supports it: OpenAI's `response_format: json_object`,
//! Ollama's `format: "json"`, and for Anthropic (which has no JSON mode) an assistant turn that
//! starts with `{`. `limit` is each API's answer budget (`max_tokens`, `num_predict`). Errors are
//! never retried here; each has its own code.

use keyless_core::lang::interp::{EffectError, ModelCall};
use keyless_core::Code;
use serde_json::{json, Value};
use std::time::Duration;

/// The largest answer body read from a provider (past it: `KA_AS_LIMIT`).
pub const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// Anthropic requires a `max_tokens`; this is it when the program gives no `limit`.
const ANTHROPIC_DEFAULT_MAX_TOKENS: u64 = 4096;

/// Where a provider's settings come from (the process environment; tests script it).
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real environment.
#[derive(Debug, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

fn err(code: Code, msg: impl Into<String>) -> EffectError {
    EffectError::new(code, msg)
}

/// One request: URL, headers, body; and how to read the answer's text.
struct Request {
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Value,
    read: fn(&Value) -> Option<String>,
    /// Text the answer continues (Anthropic's prefilled `{`).
    prefix: &'static str,
}

fn build(call: &ModelCall, env: &dyn Env) -> Result<Request, EffectError> {
    let (scheme, rest) = call.model.split_once("://").ok_or_else(|| {
        err(
            Code::AsModel,
            format!("\"{}\" is not a model URI", call.model),
        )
    })?;
    let key = |name: &str| {
        env.var(name)
            .ok_or_else(|| err(Code::AsModelAuth, format!("{name} is not set")))
    };
    match scheme {
        "openai" => {
            let base = env
                .var("OPENAI_BASE_URL")
                .unwrap_or_else(|| "https://api.openai.com/v1".into());
            let mut body = json!({
                "model": rest,
                "messages": [{ "role": "user", "content": call.prompt }],
                "response_format": { "type": "json_object" },
            });
            if let Some(l) = call.limit {
                body["max_tokens"] = json!(l);
            }
            Ok(Request {
                url: format!("{}/chat/completions", base.trim_end_matches('/')),
                headers: vec![(
                    "authorization",
                    format!("Bearer {}", key("OPENAI_API_KEY")?),
                )],
                body,
                read: |v| {
                    v["choices"][0]["message"]["content"]
                        .as_str()
                        .map(str::to_string)
                },
                prefix: "",
            })
        }
        "anthropic" => {
            let base = env
                .var("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|| "https://api.anthropic.com".into());
            Ok(Request {
                url: format!("{}/v1/messages", base.trim_end_matches('/')),
                headers: vec![
                    ("x-api-key", key("ANTHROPIC_API_KEY")?),
                    ("anthropic-version", "2023-06-01".into()),
                ],
                body: json!({
                    "model": rest,
                    "max_tokens": call.limit.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
                    "messages": [
                        { "role": "user", "content": call.prompt },
                        { "role": "assistant", "content": "{" },
                    ],
                }),
                read: |v| {
                    v["content"].as_array().map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<String>()
                    })
                },
                prefix: "{",
            })
        }
        "ollama" => {
            let (host, model) = rest
                .split_once('/')
                .ok_or_else(|| err(Code::AsModel, format!("\"{}\" names no model", call.model)))?;
            let base = env
                .var("OLLAMA_BASE_URL")
                .unwrap_or_else(|| format!("http://{host}"));
            let mut body = json!({
                "model": model,
                "messages": [{ "role": "user", "content": call.prompt }],
                "stream": false,
                "format": "json",
            });
            if let Some(l) = call.limit {
                body["options"] = json!({ "num_predict": l });
            }
            Ok(Request {
                url: format!("{}/api/chat", base.trim_end_matches('/')),
                headers: Vec::new(),
                body,
                read: |v| v["message"]["content"].as_str().map(str::to_string),
                prefix: "",
            })
        }
        other => Err(err(Code::AsModel, format!("no provider for {other}://"))),
    }
}

/// The provider's own error message in an error body (each API's shape), else the body.
fn message_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["error"]["message"]
        .as_str()
        .or_else(|| v["error"].as_str())
        .map_or_else(|| body.chars().take(300).collect(), str::to_string)
}

/// One model answer.
///
/// # Errors
/// `KA_AS_MODEL_AUTH` (no key, 401, 403), `KA_AS_MODEL_NOT_FOUND` (404), `KA_AS_MODEL_TIMEOUT`,
/// `KA_AS_MODEL_NETWORK` (no connection), `KA_AS_MODEL` (anything else, with the provider's
/// message).
pub fn generate(call: &ModelCall, env: &dyn Env, timeout: Duration) -> Result<String, EffectError> {
    let req = build(call, env)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent
        .post(&req.url)
        .header("content-type", "application/json");
    for (k, v) in &req.headers {
        r = r.header(*k, v);
    }
    let response = r.send(req.body.to_string()).map_err(|e| match e {
        ureq::Error::Timeout(_) => err(
            Code::AsModelTimeout,
            format!(
                "{} did not answer within {}s",
                call.model,
                timeout.as_secs()
            ),
        ),
        ureq::Error::Io(ref io) if io.kind() == std::io::ErrorKind::TimedOut => err(
            Code::AsModelTimeout,
            format!(
                "{} did not answer within {}s",
                call.model,
                timeout.as_secs()
            ),
        ),
        other => err(
            Code::AsModelNetwork,
            format!("{} cannot be reached at {}: {other}", call.model, req.url),
        ),
    })?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .with_config()
        .limit(MAX_ANSWER_BYTES)
        .read_to_string()
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => err(
                Code::AsModelTimeout,
                format!("{} did not finish its answer in time", call.model),
            ),
            ureq::Error::BodyExceedsLimit(_) => err(
                Code::AsLimit,
                format!(
                    "{} answered more than {} MiB; an answer holds at most that",
                    call.model,
                    MAX_ANSWER_BYTES >> 20
                ),
            ),
            other => err(Code::AsModelNetwork, format!("{}: {other}", call.model)),
        })?;
    match status {
        200..=299 => {}
        401 | 403 => {
            return Err(err(
                Code::AsModelAuth,
                format!(
                    "{} refused the key ({status}): {}",
                    call.model,
                    message_of(&body)
                ),
            ))
        }
        404 => {
            return Err(err(
                Code::AsModelNotFound,
                format!("{} ({status}): {}", call.model, message_of(&body)),
            ))
        }
        _ => {
            return Err(err(
                Code::AsModel,
                format!("{} answered {status}: {}", call.model, message_of(&body)),
            ))
        }
    }
    let v: Value = serde_json::from_str(&body).map_err(|e| {
        err(
            Code::AsModel,
            format!("{} answered something that is not JSON: {e}", call.model),
        )
    })?;
    let text = (req.read)(&v).ok_or_else(|| {
        err(
            Code::AsModel,
            format!("{} answered without a message", call.model),
        )
    })?;
    Ok(format!("{}{text}", req.prefix))
}
