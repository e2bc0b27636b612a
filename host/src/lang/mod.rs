//! The host's side of `.as` programs: everything a program touches outside core.
//!
//! Core (`keyless_core::lang`) parses, checks and interprets; every effect goes through its
//! `Effects` trait, which [`effects::HostEffects`] implements here. Entry points:
//! `keyless-host as run|check|fmt|repl` (`cli/lang.rs`), runs started through the API
//! (`server/as_runs.rs`, each in its own `as run --events` process) and the REPL ([`repl`]).
//!
//! - [`effects`]: `HostEffects`, the one `Effects` of a run: models, tools, memory, file and agent
//!   imports, the clock. Every path a program names resolves beneath the workspace handle, and
//!   every write goes through the workspace's one own-file check.
//! - [`models`]: the real providers (OpenAI, Anthropic, Ollama) over HTTP, with their body cap.
//! - [`chat`]: `keyless://chat`, generations answered by the paired chat tab through `serve`.
//! - [`tools`]: `sh://`, `file://workspace`, `env://process`, `http(s)://`, `mcp://`.
//! - [`runs`]: the run records in `.agent/as-runs` and the `--events` lines.
//! - [`repl`]: the interactive session.
//!
//! Invariants: a program never runs a command outside the policy and the sandbox; it reads only
//! the environment variables `Programs.Env` names; its failures are `KA_AS_*` codes with the place
//! in the source (core's `RunError`), rendered by `crate::diagnostics`.

pub mod chat;
pub mod effects;
mod http;
pub mod lsp;
pub mod models;
pub mod repl;
pub mod runs;
pub mod tools;

/// A tool call's string argument `key`, if it is given as a string.
pub(crate) fn arg_str<'a>(args: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(serde_json::Value::as_str)
}
