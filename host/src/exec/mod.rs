//! The executor: carries out a batch of AgentScript commands in a workspace.
//!
//! - [`workspace`]: the one path resolver (path rules, symlinks), atomic writes and backups;
//! - [`files`]: newfile, updatefile, editfile, deletefile, movefile, readfile, mkdir;
//! - [`shell`]: runcommand in its own process group, with a timeout and bounded output;
//! - [`batch`]: a reply in, a results message (or the format correction) out.

pub mod backup;
pub mod batch;
pub mod diffs;
pub mod extension;
pub mod files;
pub mod git;
pub mod gitguard;
pub mod journal;
mod lease;
pub mod limits;
mod persistence;
pub mod policy_context;
pub mod programs;
pub mod remote;
pub mod repomap;
pub mod sandbox;
pub mod shell;
pub mod snapshot;
pub mod tools;
pub mod undo;
pub mod undo_tree;
pub mod workspace;

use keyless_core::Code;

/// Takes this process's first look at a workspace ahead of time, while the model writes its
/// first reply: the git guard's whole scan (which starts the workspace's change journal), then
/// the undo store's first snapshot. The first command then costs what the later ones do, at any
/// size of repository (docs/security.md). Blocks; start it on a thread of its own.
pub fn prime(root: &std::path::Path) {
    let _ = gitguard::scan_facts(root);
    let shots = workspace::Workspace::open(root)
        .map_err(|e| git2::Error::from_str(&e.to_string()))
        .and_then(|ws| undo_tree::Shots::open(&ws))
        .and_then(|s| s.prime());
    if let Err(e) = shots {
        tracing::debug!(error = %e.message(), "the undo store's first snapshot waits for the first command");
    }
}

/// A command that failed: its code and the reason the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}")]
pub struct Failure {
    pub code: Code,
    pub reason: String,
}

impl Failure {
    pub fn new(code: Code, reason: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
        }
    }

    /// An I/O failure on a workspace path.
    pub fn io(what: &str, rel: &str, e: &std::io::Error) -> Self {
        Self::new(Code::FileIo, format!("{what} {rel}: {e}"))
    }
}
