//! Pieces: YAML workflows of movements, each gating which commands the model may use.
//!
//! One rule table ([`TOP`], [`MOVEMENT`], [`RULE`], [`TRIGGERS`]) drives both validators:
//! - strict (API and editor writes): every bad entry rejects the piece;
//! - lenient (file load): bad `shared_tools` / `required_mcp` entries are dropped with a warning, and
//!   unknown keys are warnings; every other rule still rejects.
//!
//! Cross-field rules (references, uniqueness, sentinels, SSH) run after the table, in both modes.

pub mod graph;
pub mod run;
mod schema;
pub mod tools;
mod validate;
pub mod yaml;

pub use schema::{Field, Format, Ty, MOVEMENT, RULE, TOP, TRIGGERS};
pub use validate::{valid_file_name, validate, validate_as};

pub use crate::diag::{Diagnostic, Severity};
use serde::Serialize;

/// Reserved terminal sentinels: reachable only through `@@done` (`status=aborted`,
/// `status=needs_user_input`) and `default_next`.
pub const SENTINELS: [&str; 3] = ["COMPLETE", "ABORT", "ASK"];
/// The subtask sentinel accepted in `rules[].next`.
pub const WAIT_SUBTASKS: &str = "WAIT_SUBTASKS";
/// Revisit threshold when a movement does not set `max_consecutive_revisits`.
pub const DEFAULT_MAX_CONSECUTIVE_REVISITS: u32 = 3;

/// Which validator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strictness {
    Strict,
    Lenient,
}

/// A transition rule.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub condition: String,
    pub next: String,
    /// Line of the rule's `next` value.
    pub line: u32,
}

/// One movement (phase) of a piece.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Movement {
    pub name: String,
    pub edit: bool,
    pub persona: String,
    pub instruction: String,
    pub allowed_tools: Vec<String>,
    pub allowed_commands: Option<Vec<String>>,
    pub allowed_ssh_connections: Option<Vec<String>>,
    pub rules: Vec<Rule>,
    pub default_next: Option<String>,
    pub max_consecutive_revisits: Option<u32>,
    pub line: u32,
}

impl Movement {
    #[must_use]
    pub fn revisit_limit(&self) -> u32 {
        self.max_consecutive_revisits
            .unwrap_or(DEFAULT_MAX_CONSECUTIVE_REVISITS)
    }
}

/// A validated piece.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Piece {
    pub name: String,
    pub description: String,
    pub max_movements: u32,
    pub initial_movement: String,
    pub keywords: Vec<String>,
    pub required_mcp: Vec<String>,
    pub shared_tools: Vec<String>,
    pub model: Option<String>,
    pub movements: Vec<Movement>,
}

impl Piece {
    #[must_use]
    pub fn movement(&self, name: &str) -> Option<&Movement> {
        self.movements.iter().find(|m| m.name == name)
    }

    #[must_use]
    pub fn movement_index(&self, name: &str) -> Option<usize> {
        self.movements.iter().position(|m| m.name == name)
    }
}

/// The outcome of validating a piece file.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// The piece, when it has no errors.
    pub piece: Option<Piece>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

impl Validation {
    #[must_use]
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }
}
