//! `keyless-host run` and `keyless-host undo`.

use crate::cli::HostError;
use crate::exec::batch::{BatchOutcome, ExecSettings, Executor, Prompter};
use crate::exec::workspace::{undo, Workspace};
use keyless_core::policy::Verdict;
use keyless_core::Control;
use std::collections::VecDeque;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Confirmations and questions on the terminal; `--yes` and `--answer` script them.
#[derive(Debug)]
pub struct TerminalPrompter {
    pub yes: bool,
    pub answers: VecDeque<String>,
    pub interactive: bool,
}

impl TerminalPrompter {
    fn read_line(prompt: &str) -> Option<String> {
        eprint!("{prompt}");
        let _ = io::stderr().flush();
        let mut line = String::new();
        io::stdin()
            .lock()
            .read_line(&mut line)
            .ok()
            .filter(|n| *n > 0)?;
        Some(line.trim_end().to_string())
    }
}

impl Prompter for TerminalPrompter {
    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        if self.yes {
            println!(
                "[approved by --yes] {command}  ({}: {})",
                verdict.tier, verdict.reason
            );
            return true;
        }
        if !self.interactive {
            println!(
                "[declined: no terminal to confirm; pass --yes to approve] {command}  ({}: {})",
                verdict.tier, verdict.reason
            );
            return false;
        }
        let answer = Self::read_line(&format!(
            "Run `{command}`? {} — {} [y/N] ",
            verdict.tier, verdict.reason
        ));
        answer.is_some_and(|a| matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    fn ask(&mut self, question: &str) -> Option<String> {
        if let Some(a) = self.answers.pop_front() {
            println!("[ask] {question}\n[answer] {a}");
            return Some(a);
        }
        if !self.interactive {
            println!("[ask] {question}\n[no answer: no terminal; pass --answer TEXT]");
            return None;
        }
        Self::read_line(&format!("{question}\n> ")).filter(|a| !a.trim().is_empty())
    }

    fn say(&mut self, message: &str) {
        println!("[say] {}", message.trim_end());
    }
}

/// Options of `keyless-host run`.
#[derive(Debug)]
pub struct RunOptions {
    pub workspace: PathBuf,
    pub exec: ExecSettings,
    pub replies: Vec<String>,
    pub prompter: TerminalPrompter,
}

fn session_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("run-{secs}-{}", std::process::id())
}

/// Executes the replies in order as one session.
///
/// # Errors
/// When the workspace or a reply file cannot be read.
pub fn run(mut o: RunOptions) -> Result<ExitCode, HostError> {
    let ws = Workspace::open(&o.workspace).map_err(|source| HostError::Read {
        path: o.workspace.display().to_string(),
        source,
    })?;
    let session = session_id();
    let exec = Executor {
        ws: &ws,
        cfg: &o.exec,
        session: &session,
    };
    let limits = o.exec.settings.limits;
    let max_iterations = o.exec.settings.effective_iterations_per_turn();
    let (mut turn, mut batch, mut invalid_in_a_row) = (1u32, 1u32, 0u32);
    let mut out = io::stdout().lock();
    let mut any_rejected = false;
    for (i, file) in o.replies.iter().enumerate() {
        let text = std::fs::read_to_string(file).map_err(|source| HostError::Read {
            path: file.clone(),
            source,
        })?;
        let _ = writeln!(
            out,
            "=== reply {} of {}: {file} (turn {turn}, batch {batch})",
            i + 1,
            o.replies.len()
        );
        drop(out);
        let outcome = exec.execute(&text, turn, batch, &mut o.prompter);
        out = io::stdout().lock();
        match outcome {
            BatchOutcome::Rejected { correction } => {
                any_rejected = true;
                invalid_in_a_row += 1;
                if invalid_in_a_row >= limits.max_format_retries {
                    let _ = writeln!(out, "turn {turn} stopped: {invalid_in_a_row} invalid replies in a row (MaxFormatRetries = {}). The last reply, as received:\n{text}", limits.max_format_retries);
                    turn += 1;
                    batch = 1;
                    invalid_in_a_row = 0;
                } else {
                    let _ = writeln!(out, "{correction}");
                }
            }
            BatchOutcome::Executed {
                results, control, ..
            } => {
                invalid_in_a_row = 0;
                let _ = writeln!(out, "{results}");
                if control == Control::Done {
                    let _ = writeln!(out, "turn {turn} done.");
                    turn += 1;
                    batch = 1;
                } else if batch >= max_iterations {
                    let _ = writeln!(
                        out,
                        "turn {turn} stopped: MaxIterationsPerTurn ({max_iterations}) reached."
                    );
                    turn += 1;
                    batch = 1;
                } else {
                    batch += 1;
                }
            }
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "session {session}: backups in {}",
        ws.root().join(".agent/backups").join(&session).display()
    );
    Ok(if any_rejected {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The newest batch backup folder in the workspace.
fn newest_batch(ws: &Workspace) -> Option<PathBuf> {
    let root = ws.root().join(".agent").join("backups");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for session in std::fs::read_dir(&root).ok()?.filter_map(Result::ok) {
        for b in std::fs::read_dir(session.path())
            .ok()?
            .filter_map(Result::ok)
        {
            let manifest = b.path().join("manifest.json");
            if let Ok(t) = std::fs::metadata(&manifest).and_then(|m| m.modified()) {
                if best.as_ref().is_none_or(|(bt, _)| t > *bt) {
                    best = Some((t, b.path()));
                }
            }
        }
    }
    best.map(|(_, p)| p)
}

/// Restores one batch from its backups (the newest when `batch` is `None`). `batch` is
/// `<session>/<turn>-<batch>` as printed by `run`.
///
/// # Errors
/// When the workspace or the backup cannot be read.
pub fn undo_cmd(workspace: &Path, batch: Option<&str>) -> Result<ExitCode, HostError> {
    let ws = Workspace::open(workspace).map_err(|source| HostError::Read {
        path: workspace.display().to_string(),
        source,
    })?;
    let dir = match batch {
        Some(b) => ws.root().join(".agent").join("backups").join(b),
        None => newest_batch(&ws)
            .ok_or_else(|| HostError::Usage("no batch backups in this workspace".into()))?,
    };
    let restored = undo(&ws, &dir).map_err(|source| HostError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        "undid {}: {} change(s)",
        ws.display(&dir),
        restored.len()
    );
    for p in restored {
        let _ = writeln!(out, "  restored {p}");
    }
    std::fs::rename(&dir, dir.with_extension("undone")).map_err(|source| HostError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    Ok(ExitCode::SUCCESS)
}

#[must_use]
pub fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}
