//! `keyless-host run`, `undo` and `log`: reply files executed as one session, on the terminal.

use super::args::{LimitArgs, FAILURE_MODE, MODE};
use crate::config::{exec_settings, load_config, warn_ignored, Loaded};
use crate::error::HostError;
use crate::exec::batch::{ExecSettings, Prompter};
use crate::exec::workspace::{undo_batch, Workspace};
use crate::store::Store;
use crate::submit::{self, SubmitError};
use clap::Args;
use keyless_core::policy::Verdict;
use keyless_core::turn::{BatchStatus, TurnEnd};
use keyless_core::{BatchFailureMode, Mode};
use std::collections::VecDeque;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Args)]
pub(super) struct RunArgs {
    /// The workspace folder.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Commands.Mode (default: keyless.json, else ask).
    #[arg(long, value_parser = MODE)]
    mode: Option<Mode>,
    /// Commands.AllowList pattern (repeatable; adds to keyless.json's).
    #[arg(long = "allow", value_name = "PATTERN")]
    allow: Vec<String>,
    /// Resume a saved session instead of starting a new one.
    #[arg(long)]
    session: Option<String>,
    /// Follow a piece in the new session: a name (built-in, or in `.agent/pieces/`) or a YAML file. Its
    /// movements gate the commands exactly as in a `serve` session.
    #[arg(long, value_name = "NAME|FILE")]
    piece: Option<String>,
    /// Approve every confirmation (scripts and tests).
    #[arg(long)]
    yes: bool,
    /// Answer the next @@ask with TEXT (repeatable, in order).
    #[arg(long = "answer", value_name = "TEXT")]
    answers: Vec<String>,
    /// Commands.TimeoutSeconds: the default runcommand timeout (default 600).
    #[arg(long)]
    timeout: Option<u32>,
    /// Commands.BatchFailureMode (default stop-on-mutation-failure).
    #[arg(long, value_parser = FAILURE_MODE)]
    failure_mode: Option<BatchFailureMode>,
    /// Git.ProtectedBranches pattern (repeatable; replaces the default main, master, release/*).
    #[arg(long = "protect", value_name = "PATTERN")]
    protect: Vec<String>,
    /// Git.AutoInit: create the repository when the workspace is not one.
    #[arg(long)]
    auto_init: bool,
    /// Commit without pushing.
    #[arg(long)]
    no_push: bool,
    #[command(flatten)]
    limits: LimitArgs,
    /// Reply files, in order.
    #[arg(required = true)]
    replies: Vec<String>,
}

pub(super) fn run_cmd(a: RunArgs) -> Result<ExitCode, HostError> {
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&a.workspace)?;
    warn_ignored(&ignored);
    a.limits.apply(&mut cfg)?;
    let src = "command line";
    if let Some(m) = a.mode {
        cfg.set("Commands.Mode", &serde_json::json!(m.as_str()), src)?;
    }
    if let Some(t) = a.timeout {
        cfg.set("Commands.TimeoutSeconds", &serde_json::json!(t), src)?;
    }
    if let Some(f) = a.failure_mode {
        cfg.set(
            "Commands.BatchFailureMode",
            &serde_json::json!(f.as_str()),
            src,
        )?;
    }
    if !a.protect.is_empty() {
        cfg.set("Git.ProtectedBranches", &serde_json::json!(a.protect), src)?;
    }
    if a.auto_init {
        cfg.set("Git.AutoInit", &serde_json::json!(true), src)?;
    }
    cfg.allow_list.extend(a.allow);
    let exec = exec_settings(&cfg, !a.no_push, &a.workspace);
    let interrupted = Arc::new(AtomicBool::new(false));
    on_ctrl_c(&interrupted).map_err(|e| HostError::Usage(format!("cannot handle Ctrl+C: {e}")))?;
    let prompter = TerminalPrompter {
        yes: a.yes,
        answers: a.answers.into(),
        interactive: stdin_is_terminal(),
        interrupted,
    };
    run_session(RunOptions {
        workspace: a.workspace,
        exec,
        replies: a.replies,
        prompter,
        session: a.session,
        piece: a.piece,
    })
}

/// Confirmations and questions on the terminal; `--yes` and `--answer` script them.
#[derive(Debug)]
pub struct TerminalPrompter {
    pub yes: bool,
    pub answers: VecDeque<String>,
    pub interactive: bool,
    /// Set by the first Ctrl+C (see [`on_ctrl_c`]): the running command's group is ended and the
    /// rest of the run is cancelled.
    pub interrupted: Arc<AtomicBool>,
}

/// Ctrl+C in `run`: the first sets `flag`, which cancels the running command (its whole process
/// group ends; its output so far is kept, as KA_CANCELLED), skips the rest of the batch and ends
/// the run once the session is recorded. A second Ctrl+C while the flag is set exits at once (130).
///
/// # Errors
/// When the handlers cannot be installed.
pub fn on_ctrl_c(flag: &Arc<AtomicBool>) -> io::Result<()> {
    #[cfg(unix)]
    {
        use signal_hook::consts::SIGINT;
        // Order matters: the exit is armed by a flag that is already set, so it fires on the second.
        signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(flag))?;
        signal_hook::flag::register(SIGINT, Arc::clone(flag))?;
    }
    #[cfg(not(unix))]
    let _ = flag;
    Ok(())
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

    fn cancel_requested(&mut self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
}

/// Options of `keyless-host run`.
#[derive(Debug)]
pub struct RunOptions {
    pub workspace: PathBuf,
    pub exec: ExecSettings,
    pub replies: Vec<String>,
    pub prompter: TerminalPrompter,
    /// Resume this session instead of starting one.
    pub session: Option<String>,
    /// Follow this piece (a name, or a YAML file) in the new session.
    pub piece: Option<String>,
}

fn session_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("run-{secs}-{}", std::process::id())
}

fn store_err(e: &crate::store::StoreError) -> HostError {
    HostError::Coded {
        code: e.code(),
        message: e.to_string(),
    }
}

fn piece_err(e: &crate::pieces::PieceError) -> HostError {
    use crate::pieces::PieceError;
    if let PieceError::Store(e) = e {
        return store_err(e);
    }
    HostError::Coded {
        code: e.code(),
        message: e.to_string(),
    }
}

fn submit_err(e: &SubmitError) -> HostError {
    match e {
        SubmitError::Store(e) => store_err(e),
        SubmitError::Conflict(m) => HostError::Usage(m.clone()),
        SubmitError::Piece(e) => piece_err(e),
    }
}

/// Executes the replies in order as one session (new, or resumed with `--session`), storing every
/// batch in `.agent/keyless.db`.
///
/// # Errors
/// When the workspace, the database or a reply file cannot be read, or the session is unknown.
pub fn run_session(mut o: RunOptions) -> Result<ExitCode, HostError> {
    let ws = Workspace::open(&o.workspace).map_err(|source| HostError::Read {
        path: o.workspace.display().to_string(),
        source,
    })?;
    ws.clean_leftovers();
    let db = ws
        .agent_dir()
        .map_err(|source| HostError::Read {
            path: ".agent".into(),
            source,
        })?
        .join("keyless.db");
    let store = Store::open(&db).map_err(|e| store_err(&e))?;
    // The piece is checked before a session is made for it.
    let piece = match (&o.piece, &o.session) {
        (None, _) => None,
        (Some(_), Some(_)) => {
            return Err(HostError::Usage(
                "a resumed session keeps its piece; do not give --piece with --session".into(),
            ))
        }
        (Some(name), None) => {
            Some(crate::pieces::load(ws.root(), name).map_err(|e| piece_err(&e))?)
        }
    };
    let new_id = session_id();
    // A piece's required MCP servers start before the session exists: a missing one stops here.
    if let Some((_, p)) = &piece {
        o.exec
            .tools
            .catalog(&new_id, p)
            .map_err(|f| HostError::Coded {
                code: f.code,
                message: f.reason,
            })?;
    }
    let mut pos = match &o.session {
        Some(id) => store.session(id).map_err(|e| store_err(&e))?,
        None => store
            .create_session(&new_id, &ws.root().display().to_string())
            .map_err(|e| store_err(&e))?,
    };
    let session = pos.id.clone();
    if let Some((yaml, piece)) = piece {
        crate::pieces::start(&store, &session, &yaml, piece).map_err(|e| piece_err(&e))?;
    }
    let repo = submit::session_repo(&store, &session, ws.root()).map_err(|e| store_err(&e))?;
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        "session {session} (turn {}, batch {})",
        pos.turn, pos.batch
    );
    if let Some(mut run) = crate::pieces::resume(&store, &session).map_err(|e| piece_err(&e))? {
        crate::pieces::attach_tools(&mut run, &o.exec.tools, &session)
            .map_err(|e| piece_err(&e))?;
        let _ = writeln!(out, "{}", keyless_core::message::movement_prompt(&run));
    }
    let snapshot = crate::exec::snapshot::gather_for(ws.root(), &mut o.exec);
    let _ = writeln!(out, "sandbox: {}", snapshot.sandbox);
    let ctx = submit::Context {
        store: &store,
        ws: &ws,
        cfg: &o.exec,
        repo: &repo,
    };
    let _ = out.flush();
    let mut any_rejected = false;
    let mut cancelled = false;
    for (i, file) in o.replies.iter().enumerate() {
        let text = std::fs::read_to_string(file).map_err(|source| HostError::Read {
            path: file.clone(),
            source,
        })?;
        let id = keyless_core::plan::batch_id(&session, pos.turn, pos.batch, &text);
        let _ = writeln!(
            out,
            "=== reply {} of {}: {file} (turn {}, batch {}, id {id})",
            i + 1,
            o.replies.len(),
            pos.turn,
            pos.batch
        );
        drop(out);
        let turn = pos.turn;
        let step = submit::submit(&ctx, &mut pos, &text, None, &mut o.prompter, &mut |_| {})
            .map_err(|e| submit_err(&e))?;
        out = io::stdout().lock();
        match (step.stored, step.status) {
            (true, BatchStatus::Interrupted) => {
                let _ = writeln!(out, "{}\n", step.text);
                continue;
            }
            (true, _) => {
                let _ = writeln!(
                    out,
                    "batch {id} already ran; its stored result, not run again:\n{}\n",
                    step.text
                );
                continue;
            }
            (false, BatchStatus::Rejected) => any_rejected = true,
            (false, _) => {}
        }
        let _ = writeln!(out, "{}", step.text);
        match step.turn_ended {
            Some(TurnEnd::Done) => {
                let _ = writeln!(out, "turn {turn} done.");
            }
            Some(TurnEnd::MaxIterationsPerTurn) => {
                let _ = writeln!(
                    out,
                    "turn {turn} stopped: MaxIterationsPerTurn ({}) reached.",
                    o.exec.settings.effective_iterations_per_turn()
                );
            }
            Some(TurnEnd::NeedsUserInput) => {
                let _ = writeln!(
                    out,
                    "turn {turn} stopped: the piece waits for your answer (needs_user_input). \
                     Answer it in the chat and go on with --session {session}, or pass --answer TEXT."
                );
            }
            Some(TurnEnd::MaxFormatRetries) | None => {}
        }
        let _ = writeln!(out);
        if o.prompter.interrupted.load(Ordering::SeqCst) {
            let _ = writeln!(
                out,
                "{} cancelled (Ctrl+C): the batch was stopped and recorded; the remaining replies were not run.",
                keyless_core::Code::Cancelled
            );
            cancelled = true;
            break;
        }
    }
    let _ = writeln!(
        out,
        "session {session} (resume with --session {session}); backups in {}",
        ws.root().join(".agent/backups").join(&session).display()
    );
    Ok(if cancelled {
        ExitCode::from(130)
    } else if any_rejected {
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
    let restored = undo_batch(&ws, &dir).map_err(|source| HostError::Read {
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
    Ok(ExitCode::SUCCESS)
}

#[must_use]
pub fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// `keyless-host log`: the audit trail of file changes and commands.
///
/// # Errors
/// When the workspace or its database cannot be read, or the session is unknown.
pub fn log_cmd(
    workspace: &Path,
    session: Option<&str>,
    limit: u32,
    json: bool,
) -> Result<ExitCode, HostError> {
    let ws = Workspace::open(workspace).map_err(|source| HostError::Read {
        path: workspace.display().to_string(),
        source,
    })?;
    let db = ws.root().join(".agent").join("keyless.db");
    if !db.is_file() {
        return Err(HostError::Usage(format!(
            "{} no sessions in this workspace yet (expected on first run)",
            keyless_core::Code::SessionNotFound
        )));
    }
    let store = Store::open(&db).map_err(|e| store_err(&e))?;
    if let Some(s) = session {
        store.session(s).map_err(|e| store_err(&e))?;
    }
    let entries = store.audit(session, limit).map_err(|e| store_err(&e))?;
    let mut out = io::stdout().lock();
    if json {
        let _ = serde_json::to_writer(&mut out, &entries);
        let _ = writeln!(out);
    } else {
        for e in &entries {
            let code = e
                .code
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{} {} {} {:<10} {:<7}{code} {}",
                e.at,
                e.session,
                e.batch,
                e.command,
                e.status.as_str(),
                e.target
            );
        }
        let _ = writeln!(
            out,
            "{} entr{}",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
