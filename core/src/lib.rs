//! keyless-core: everything that decides, in one pure library that builds for native and wasm32.
//!
//! - [`parse`]: the AgentScript v1 reply parser (full and streaming-partial);
//! - [`config`]: limits, pace and modes, validated;
//! - [`plan`]: which commands of a batch run, which are skipped and why;
//! - [`message`]: the correction, results and system-prompt texts, and the verified line;
//! - [`policy`]: command-line segmentation, risk tiers and run/confirm/deny decisions;
//! - [`path`]: the workspace path rules;
//! - [`check`]: the `keyless-host check` report, shared by the CLI and the wasm build;
//! - [`piece`]: the piece YAML schema (strict and lenient), effective tools, the run state machine.
//! - [`site`]: chat-site adapters as data, reply completion, delivery and the selector doctor;
//! - [`turn`]: the turn engine: what a batch's outcome does to the session and its piece.
//!
//! No I/O, no clock, no randomness.

pub mod check;
pub mod config;
pub mod diag;
pub mod environment;
pub mod keyless_json;
pub mod message;
pub mod parse;
pub mod path;
pub mod piece;
pub mod plan;
pub mod policy;
pub mod render;
pub mod reply;
pub mod site;
pub mod text;
pub mod textfile;
pub mod turn;

pub use config::{BatchFailureMode, ConfigError, Limits, Mode, Pace, Settings};
pub use diag::{Code, Diagnostic};
pub use parse::{parse, parse_partial, ParseOutput, PartialOutput};
pub use reply::{Command, CommandKind, Control, Reply, Section, SectionName};
