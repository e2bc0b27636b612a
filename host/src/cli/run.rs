//! `keyless-host run`: reply files executed as one session, on the terminal.

use super::args::{ChosenWorkspace, LimitArgs, ModeOverride, FAILURE_MODE};
use super::clipboard::copy_to_clipboard;
use super::prompter::TerminalPrompter;
use super::terminal::{on_ctrl_c, stdin_is_terminal};
use crate::config::{exec_settings, load_config, warn_ignored, Loaded};
use crate::error::HostError;
use crate::exec::batch::ExecSettings;
use crate::exec::workspace::Workspace;
use crate::store::Store;
use crate::submit::{self, SubmitError};
use clap::Args;
use keyless_core::turn::{BatchStatus, TurnEnd};
use keyless_core::BatchFailureMode;
use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Args)]
pub(super) struct RunArgs {
    #[command(flatten)]
    workspace: ChosenWorkspace,
    #[command(flatten)]
    mode: ModeOverride,
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
    /// The task, as the chat's first message ends with it (`--interactive` prints it after the
    /// system prompt).
    #[arg(long)]
    task: Option<String>,
    /// A copy-paste loop for any chat site: print the system prompt (and copy it to the
    /// clipboard), then read each reply you paste until its @@eof, run it, and print the results
    /// (copied to the clipboard when there is one) until the model says @@done. `:handover`
    /// typed instead of a reply prints a handover of the session for a new chat.
    #[arg(long, conflicts_with = "replies")]
    interactive: bool,
    /// Print each batch's diffs of the files it changed (without it: a diff stat per batch).
    #[arg(long)]
    diff: bool,
    #[command(flatten)]
    limits: LimitArgs,
    /// Reply files, in order; `-` reads replies from stdin, one after another, each ending with
    /// its @@eof (and the fence after it when the reply is fenced).
    #[arg(required_unless_present = "interactive")]
    replies: Vec<String>,
}

pub(super) fn run_cmd(a: RunArgs) -> Result<ExitCode, HostError> {
    let workspace = a.workspace.choose()?;
    if !a.auto_init {
        crate::workspace_choice::offer_git_init(&workspace);
    }
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&workspace)?;
    warn_ignored(&ignored);
    a.limits.apply(&mut cfg)?;
    let src = "command line";
    if let Some(m) = a.mode.mode {
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
    let answers = stdin_is_terminal() || !a.answers.is_empty();
    let exec = exec_settings(&cfg, !a.no_push, &workspace, answers);
    let interrupted = Arc::new(AtomicBool::new(false));
    on_ctrl_c(&interrupted).map_err(|e| HostError::Usage(format!("cannot handle Ctrl+C: {e}")))?;
    let prompter = TerminalPrompter {
        yes: a.yes,
        answers: a.answers.into(),
        interactive: stdin_is_terminal(),
        interrupted,
    };
    run_session(RunOptions {
        workspace,
        exec,
        replies: if a.interactive {
            vec!["-".to_string()]
        } else {
            a.replies
        },
        prompter,
        session: a.session,
        piece: a.piece,
        task: a.task,
        interactive: a.interactive,
        diff: a.diff,
    })
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
    /// The task (for the interactive prompt).
    pub task: Option<String>,
    /// The copy-paste loop: print the system prompt, read pasted replies, copy the results.
    pub interactive: bool,
    /// Print each batch's diffs, not only its diff stat.
    pub diff: bool,
}

/// Where the replies come from: files in order, where `-` stands for every reply on stdin.
#[derive(Debug)]
struct Replies {
    files: VecDeque<String>,
    stdin: bool,
    read: usize,
    /// The interactive loop: a line that starts with `:` before a reply is a command.
    commands: bool,
}

/// What the loop reads next.
#[derive(Debug, PartialEq, Eq)]
enum Pasted {
    /// A reply and where it came from.
    Reply(String, String),
    /// A `:` command line (interactive only).
    Command(String),
}

impl Replies {
    /// The next reply (or command), or `None` when there is none left.
    fn next(&mut self, prompt: Option<&str>) -> Result<Option<Pasted>, HostError> {
        loop {
            if self.stdin {
                if let Some(p) = prompt {
                    eprintln!("{p}");
                }
                match read_reply(&mut io::stdin().lock(), self.commands) {
                    Ok(Some(Pasted::Reply(_, text))) => {
                        self.read += 1;
                        return Ok(Some(Pasted::Reply(format!("stdin #{}", self.read), text)));
                    }
                    Ok(Some(command)) => return Ok(Some(command)),
                    Ok(None) => self.stdin = false,
                    Err(source) => {
                        return Err(HostError::Read {
                            path: "stdin".into(),
                            source,
                        })
                    }
                }
            }
            let Some(file) = self.files.pop_front() else {
                return Ok(None);
            };
            if file == "-" {
                self.stdin = true;
                continue;
            }
            let text = std::fs::read_to_string(&file).map_err(|source| HostError::Read {
                path: file.clone(),
                source,
            })?;
            return Ok(Some(Pasted::Reply(file, text)));
        }
    }
}

/// Reads one reply from `r`: lines up to its `@@eof` (and the closing fence after it, for a
/// fenced reply). With `commands`, a line that starts with `:` before any reply text is a
/// command. `None` at the end of the input with nothing read.
fn read_reply(r: &mut impl BufRead, commands: bool) -> io::Result<Option<Pasted>> {
    let mut text = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok((!text.trim().is_empty()).then(|| Pasted::Reply(String::new(), text)));
        }
        if commands && text.trim().is_empty() && line.trim_start().starts_with(':') {
            return Ok(Some(Pasted::Command(line.trim().to_string())));
        }
        text.push_str(&line);
        if keyless_core::parse::reply_complete(&text) {
            return Ok(Some(Pasted::Reply(String::new(), text)));
        }
    }
}

/// How a run ended, as its exit code: 0 only when the task reached `@@done`; 1 when the format
/// retries ran out (or the last reply was rejected); 4 when the user declined a command of the
/// last batch; 3 when a command of the last batch failed; 5 when the turn is not finished (the
/// replies ran out, its batch budget did, or a piece waits for an answer); 130 for Ctrl+C.
fn exit_code(last: Option<&keyless_core::api::ReplyAnswer>, cancelled: bool) -> u8 {
    if cancelled {
        return 130;
    }
    let Some(a) = last else { return 5 };
    match a.turn_ended {
        Some(TurnEnd::Done) => 0,
        Some(TurnEnd::MaxFormatRetries) => 1,
        _ if a.status == BatchStatus::Rejected => 1,
        _ if a.counts.declined > 0 => 4,
        _ if a.counts.failed > 0 => 3,
        _ => 5,
    }
}

fn session_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("run-{secs}-{}", std::process::id())
}

fn piece_err(e: &crate::pieces::PieceError) -> HostError {
    use crate::pieces::PieceError;
    if let PieceError::Store(e) = e {
        return HostError::from(e);
    }
    HostError::Coded {
        code: e.code(),
        message: e.to_string(),
    }
}

fn submit_err(e: &SubmitError) -> HostError {
    match e {
        SubmitError::Store(e) => HostError::from(e),
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
    let store = Store::open(&db).map_err(HostError::from)?;
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
        Some(id) => store.session(id).map_err(HostError::from)?,
        None => store
            .create_session(&new_id, &ws.root().display().to_string())
            .map_err(HostError::from)?,
    };
    let session = pos.id.clone();
    if let (None, Some(task)) = (
        &o.session,
        o.task.as_deref().filter(|t| !t.trim().is_empty()),
    ) {
        store
            .set_task(&session, task.trim())
            .map_err(HostError::from)?;
    }
    if let Some((yaml, piece)) = piece {
        crate::pieces::start(&store, &session, &yaml, piece).map_err(|e| piece_err(&e))?;
    }
    let (repo, branch_note) = if o.session.is_some() {
        (
            submit::session_repo(&store, &session, ws.root()).map_err(HostError::from)?,
            None,
        )
    } else {
        submit::start_repo(
            &store,
            &session,
            ws.root(),
            &o.exec.git,
            o.task.as_deref().unwrap_or(""),
        )
        .map_err(HostError::from)?
    };
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        "session {session} (turn {}, batch {})",
        pos.turn, pos.batch
    );
    if let Some(note) = &branch_note {
        let _ = writeln!(out, "branch: {note}");
    }
    if let Some(mut run) = crate::pieces::resume(&store, &session).map_err(|e| piece_err(&e))? {
        crate::pieces::attach_tools(&mut run, &o.exec.tools, &session)
            .map_err(|e| piece_err(&e))?;
        let _ = writeln!(out, "{}", keyless_core::message::movement_prompt(&run));
    }
    let snapshot = crate::exec::snapshot::gather_for(ws.root(), &mut o.exec);
    let _ = writeln!(out, "sandbox: {}", snapshot.sandbox);
    if let Some(n) = crate::dirs::linked_notice(ws.root()) {
        let _ = writeln!(out, "note: {n}");
    }
    let ctx = submit::Context {
        store: &store,
        ws: &ws,
        cfg: &o.exec,
        repo: &repo,
        judge_next: false,
    };
    let mut handover_prompt = String::new();
    if o.interactive {
        // The first look at the workspace is taken while the user pastes the prompt and waits
        // for the model: the first command then costs what the later ones do.
        if o.exec.sandbox {
            let root = ws.root().to_path_buf();
            std::thread::spawn(move || crate::exec::prime(&root));
        }
        let prompt_ctx = keyless_core::message::PromptContext {
            mode: o.exec.mode,
            failure_mode: o.exec.failure_mode,
            environment: Some(snapshot.text()),
            movement: crate::pieces::resume(&store, &session)
                .ok()
                .flatten()
                .as_ref()
                .map(keyless_core::message::movement_prompt),
            task: o.task.clone(),
            git: Some(repo.facts(ws.root(), &o.exec.git)),
            repo_map: (o.exec.repo_map_chars > 0).then(|| {
                keyless_core::repomap::render(
                    &crate::exec::repomap::gather(&ws),
                    o.task.as_deref(),
                    o.exec.repo_map_chars,
                )
            }),
        };
        let prompt = keyless_core::message::system_prompt(&o.exec.settings, &prompt_ctx);
        // A handover gives the task and the movement in sections of their own.
        handover_prompt = keyless_core::message::system_prompt(
            &o.exec.settings,
            &keyless_core::message::PromptContext {
                movement: None,
                task: None,
                ..prompt_ctx
            },
        );
        let copied = copy_to_clipboard(&prompt, ws.root());
        let _ = writeln!(
            out,
            "\nPaste this first message into your chat{}:\n\n{prompt}\n",
            if copied {
                " (it is on the clipboard)"
            } else {
                ""
            }
        );
    }
    let _ = out.flush();
    let mut last: Option<keyless_core::api::ReplyAnswer> = None;
    let mut cancelled = false;
    let total = o.replies.len();
    let mut replies = Replies {
        files: o.replies.iter().cloned().collect(),
        stdin: false,
        read: 0,
        commands: o.interactive,
    };
    let ask = o.interactive.then_some(
        "Paste the model's whole reply (it ends with @@eof), then press Enter; :handover prints a handover for a new chat, :help lists the commands; Ctrl+D ends the run:",
    );
    let handing = super::handover::Source {
        store: &store,
        ws: &ws,
        repo: &repo,
        exec: &o.exec,
        session: &session,
        system_prompt: &handover_prompt,
    };
    let mut i = 0;
    while let Some(pasted) = replies.next(ask)? {
        let (file, text) = match pasted {
            Pasted::Reply(file, text) => (file, text),
            Pasted::Command(line) => {
                match super::handover::budget(&line) {
                    Some(Ok(budget)) => super::handover::print(&mut out, &handing, &pos, budget)?,
                    Some(Err(problem)) => {
                        let _ = writeln!(out, "{problem}\n{}", super::handover::COMMANDS_HELP);
                    }
                    None if line == ":help" => {
                        let _ = writeln!(out, "{}", super::handover::COMMANDS_HELP);
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "unknown command {line}\n{}",
                            super::handover::COMMANDS_HELP
                        );
                    }
                }
                let _ = out.flush();
                continue;
            }
        };
        i += 1;
        let id = keyless_core::plan::batch_id(&session, pos.turn, pos.batch, &text);
        let of = if o.replies.iter().any(|r| r == "-") {
            String::new()
        } else {
            format!(" of {total}")
        };
        let _ = writeln!(
            out,
            "=== reply {i}{of}: {file} (turn {}, batch {}, id {id})",
            pos.turn, pos.batch
        );
        drop(out);
        let turn = pos.turn;
        let step = submit::submit(&ctx, &mut pos, &text, None, &mut o.prompter, &mut |_| {})
            .map_err(|e| submit_err(&e))?;
        out = io::stdout().lock();
        match (step.stored, step.status) {
            (true, BatchStatus::Interrupted) => {
                let _ = writeln!(out, "{}\n", keyless_core::text::printable(&step.text));
                continue;
            }
            (true, _) => {
                let _ = writeln!(
                    out,
                    "batch {id} already ran; its stored result, not run again:\n{}\n",
                    keyless_core::text::printable(&step.text)
                );
                continue;
            }
            (false, _) => {}
        }
        let _ = writeln!(out, "{}", keyless_core::text::printable(&step.text));
        if !step.diff.is_empty() {
            let shown = if o.diff {
                keyless_core::diff::render(&step.diff)
            } else {
                keyless_core::diff::stat(&step.diff)
            };
            let _ = writeln!(
                out,
                "--- what this batch changed{} ---\n{shown}",
                if o.diff {
                    ""
                } else {
                    " (--diff shows the lines)"
                }
            );
        }
        if o.interactive && step.turn_ended.is_none() {
            let copied = copy_to_clipboard(&step.text, ws.root());
            let _ = writeln!(
                out,
                "\n{}",
                if copied {
                    "The results are on the clipboard: paste them into the chat."
                } else {
                    "Paste the results above into the chat."
                }
            );
        }
        match step.turn_ended {
            Some(TurnEnd::Done) => {
                if let Some(m) = &step.done_message {
                    let _ = writeln!(
                        out,
                        "\nThe model says it is done:\n{}",
                        keyless_core::text::printable(m)
                    );
                }
                if let Some(r) = &step.review {
                    let _ = writeln!(out, "\n{}", keyless_core::text::printable(r));
                }
                if !step.task_diff.is_empty() {
                    let _ = writeln!(
                        out,
                        "\nWhat changed since the commit the session started from (changes not committed before it included){}:\n{}",
                        if o.diff {
                            String::new()
                        } else {
                            format!(" (--diff shows the lines; later: keyless-host log --diff {session})")
                        },
                        if o.diff {
                            keyless_core::diff::render(&step.task_diff)
                        } else {
                            keyless_core::diff::stat(&step.task_diff)
                        }
                    );
                }
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
        let ended = step.turn_ended.is_some();
        last = Some(step);
        if o.prompter.interrupted.load(Ordering::SeqCst) {
            let _ = writeln!(
                out,
                "{} cancelled (Ctrl+C): the batch was stopped and recorded; the remaining replies were not run.",
                keyless_core::Code::Cancelled
            );
            cancelled = true;
            break;
        }
        if o.interactive && ended {
            break;
        }
        let _ = out.flush();
    }
    let _ = writeln!(
        out,
        "session {session} (resume with --session {session}); backups in {}",
        ws.root().join(".agent/backups").join(&session).display()
    );
    Ok(ExitCode::from(exit_code(last.as_ref(), cancelled)))
}
