//! One `serve` per workspace: `.agent/serve.lock`, held with an exclusive `flock` for as long as
//! the server runs and naming where it listens.
//!
//! Invariants:
//! - while a `serve` runs for a workspace, a second one for the same workspace refuses to start
//!   and says where the first one listens (it never takes over `serve.json` or the sessions);
//! - a `serve` that is gone (ended, killed, crashed) holds no lock: the kernel drops it with the
//!   process, so the next one takes over without a stale-file check that could guess wrong.

use crate::exec::workspace::Workspace;
use cap_fs_ext::OpenOptionsFollowExt as _;
use serde::{Deserialize, Serialize};
use std::io::{self, Read as _, Seek as _, Write as _};

/// The lock file's name in `.agent`.
pub const LOCK_FILE: &str = "serve.lock";

/// What the lock file records about the server that holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub port: u16,
}

/// This process's hold on the workspace; released when dropped or when the process ends.
#[derive(Debug)]
pub struct Claim {
    file: nix::fcntl::Flock<std::fs::File>,
}

/// Why the workspace could not be claimed.
#[derive(Debug)]
pub enum ClaimError {
    /// Another `serve` holds it (what it recorded, when it had recorded it yet).
    Held(Option<Holder>),
    Io(io::Error),
}

impl ClaimError {
    /// The words for the user.
    #[must_use]
    pub fn message(&self, workspace: &std::path::Path) -> String {
        match self {
            ClaimError::Held(Some(h)) => format!(
                "keyless-host serve already runs for {} (pid {}, http://127.0.0.1:{}): use that one (its terminal printed the dashboard link; the popup pairs with it), or stop it first (Ctrl-C in its terminal, or kill {})",
                workspace.display(),
                h.pid,
                h.port,
                h.pid
            ),
            ClaimError::Held(None) => format!(
                "keyless-host serve is starting for {} in another terminal: use that one, or stop it first",
                workspace.display()
            ),
            ClaimError::Io(e) => format!(
                "cannot take {}/.agent/{LOCK_FILE}: {e}",
                workspace.display()
            ),
        }
    }
}

impl Claim {
    /// Takes the workspace for this process, or says who has it.
    ///
    /// # Errors
    /// [`ClaimError::Held`] while another `serve` runs for it; [`ClaimError::Io`] when `.agent`
    /// cannot be used.
    pub fn take(ws: &Workspace) -> Result<Self, ClaimError> {
        let agent = ws.agent().map_err(ClaimError::Io)?;
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.read(true)
            .write(true)
            .create(true)
            .follow(cap_fs_ext::FollowSymlinks::No);
        // keyless's own state file in `.agent` (never the model's write), not through a symlink.
        #[allow(clippy::disallowed_methods)]
        let file = agent
            .open_with(LOCK_FILE, &opts)
            .map_err(ClaimError::Io)?
            .into_std();
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(file) => Ok(Claim { file }),
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                Err(ClaimError::Held(serde_json::from_str(&text).ok()))
            }
            Err((_, e)) => Err(ClaimError::Io(e.into())),
        }
    }

    /// Records where this server listens, for a second `serve` to name.
    ///
    /// # Errors
    /// When the lock file cannot be written.
    pub fn record(&mut self, port: u16) -> io::Result<()> {
        let json = serde_json::to_vec(&Holder {
            pid: std::process::id(),
            port,
        })
        .map_err(io::Error::other)?;
        let f: &mut std::fs::File = &mut self.file;
        f.set_len(0)?;
        f.rewind()?;
        f.write_all(&json)?;
        f.flush()
    }
}
