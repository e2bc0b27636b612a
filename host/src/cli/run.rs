//! `keyless-host run`, `undo` and `log`: reply files executed as one session, on the terminal.

use super::args::{LimitArgs, FAILURE_MODE, MODE};
use crate::config::{exec_settings, load_config, warn_ignored, Loaded};
use crate::error::HostError;
use crate::exec::batch::{Approval, Confirmation, ExecSettings, Prompter};
use crate::exec::workspace::Workspace;
use crate::store::Store;
use crate::submit::{self, SubmitError};
use clap::Args;
use keyless_core::policy::always::AllowRule;
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
    /// The workspace folder (default: the current folder, when it is a git repository other than
    /// keyless's own checkout; otherwise keyless asks).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Allow a workspace that holds your home, your keyless config folder or / (for testing
    /// keyless's own protections; keyless still never writes its own files there).
    #[arg(long)]
    unsafe_workspace: bool,
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
    /// The task, as the chat's first message ends with it (`--interactive` prints it after the
    /// system prompt).
    #[arg(long)]
    task: Option<String>,
    /// A copy-paste loop for any chat site: print the system prompt (and copy it to the
    /// clipboard), then read each reply you paste until its @@eof, run it, and print the results
    /// (copied to the clipboard when there is one) until the model says @@done.
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
    let workspace = crate::workspace_choice::choose(a.workspace.as_deref(), a.unsafe_workspace)?;
    if !a.auto_init {
        crate::workspace_choice::offer_git_init(&workspace);
    }
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&workspace)?;
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

/// Text from the model as a terminal shows it: control characters escaped (`\u{1b}`), so an
/// escape sequence in a command line cannot redraw the prompt the user answers.
#[must_use]
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&keyless_core::text::printable(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out
}

/// A server's form (MCP elicitation) on the terminal. The next `--answer` answers it first
/// (`accept` takes the defaults, `decline`, `cancel`, or one JSON object of values); else, with a
/// terminal, each field is asked in turn (Enter keeps its default); else it is declined. The
/// server's words are shown as its own, escaped; what keyless says goes to `out`.
pub fn terminal_form(
    server: &str,
    form: &keyless_core::elicit::Form,
    answers: &mut VecDeque<String>,
    interactive: bool,
    out: &mut dyn Write,
) -> keyless_core::elicit::Answer {
    use keyless_core::elicit::{Answer, Kind};
    let _ = writeln!(
        out,
        "[form] the MCP server \"{}\" asks: {}",
        shown(server),
        shown(form.message.trim_end())
    );
    if let Some(a) = answers.pop_front() {
        return match form.scripted(&a) {
            Ok(answer) => {
                let _ = writeln!(out, "[answer] {}", answer.action());
                answer
            }
            Err(e) => {
                let _ = writeln!(out, "[answer] {}: {e}; declined", shown(&a));
                Answer::Decline
            }
        };
    }
    if !interactive {
        let _ = writeln!(
            out,
            "[no answer: no terminal; pass --answer accept, decline, cancel or a JSON object]"
        );
        return Answer::Decline;
    }
    match TerminalPrompter::read_line("Fill it in? [y]es, [n]o (decline), [c]ancel the call: ")
        .map(|a| a.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("y" | "yes") => {}
        Some("n" | "no") => return Answer::Decline,
        _ => return Answer::Cancel,
    }
    let mut typed = std::collections::BTreeMap::new();
    for f in &form.fields {
        let hint = match &f.kind {
            Kind::Text { .. } => "text".to_string(),
            Kind::Number { integer: true, .. } => "a whole number".to_string(),
            Kind::Number { .. } => "a number".to_string(),
            Kind::Boolean => "yes or no".to_string(),
            Kind::Choice { options } | Kind::Choices { options, .. } => options
                .iter()
                .enumerate()
                .map(|(i, (_, label))| format!("{} {}", i + 1, shown(label)))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let default = f
            .default
            .as_ref()
            .map(|d| format!(" [{}]", shown(&d.to_string())))
            .unwrap_or_default();
        if let Some(d) = &f.description {
            let _ = writeln!(out, "  {}", shown(d));
        }
        loop {
            let Some(line) = TerminalPrompter::read_line(&format!(
                "{} ({hint}){}{default}: ",
                shown(f.label()),
                if f.required { " *" } else { "" }
            )) else {
                return Answer::Cancel;
            };
            if line.trim().is_empty() {
                if f.default.is_some() || !f.required {
                    break;
                }
                eprintln!("  required");
                continue;
            }
            match f.read(&line) {
                Ok(_) => {
                    typed.insert(f.name.clone(), line);
                    break;
                }
                Err(e) => eprintln!("  {e}"),
            }
        }
    }
    match form.accept_typed(&typed) {
        Ok(content) => Answer::Accept(content),
        Err(e) => {
            eprintln!("  {e}; declined");
            Answer::Decline
        }
    }
}

impl TerminalPrompter {
    fn read_line(prompt: &str) -> Option<String> {
        // An answer is read only from what is typed after the question shows: what came before
        // (the newline after a pasted reply's @@eof, a key pressed while a command ran) is
        // dropped, or it would answer the question with its default unseen. A terminal in its
        // line mode hands std one line per read, so nothing typed ahead sits in std's buffer.
        #[cfg(unix)]
        if stdin_is_terminal() {
            let _ = nix::sys::termios::tcflush(io::stdin(), nix::sys::termios::FlushArg::TCIFLUSH);
        }
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
    fn confirm_with(&mut self, c: &Confirmation<'_>) -> Approval {
        if !c.preview.is_empty() && (self.interactive || self.yes) {
            println!(
                "This will change:\n{}",
                keyless_core::diff::render(c.preview).trim_end()
            );
        }
        if !self.interactive && !self.yes {
            let _ = self.confirm(c.command, c.verdict);
            return Approval::NoOneToAsk;
        }
        let offer = c.offer.filter(|_| !self.yes);
        let Some(offer) = offer else {
            return if self.confirm(c.command, c.verdict) {
                Approval::Once
            } else {
                Approval::Declined
            };
        };
        let like = offer
            .like
            .as_ref()
            .map(|r| format!(", [l] always allow commands like `{}`", r.text))
            .unwrap_or_default();
        let answer = Self::read_line(&format!(
            "Run `{}`? {} — {}\n  [y] yes once, [a] always allow this exact command here{like}, [N] no: ",
            shown(c.command),
            c.verdict.tier,
            shown(&c.verdict.reason)
        ));
        match answer
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "y" | "yes" => Approval::Once,
            "a" | "always" => Approval::Always(offer.exact.clone()),
            "l" | "like" => offer
                .like
                .clone()
                .map_or(Approval::Declined, Approval::Always),
            _ => Approval::Declined,
        }
    }

    fn remembered(&mut self, rule: &AllowRule, result: &Result<(), String>) {
        match result {
            Ok(()) => println!(
                "[always allowed here] `{}` (up to {}); `keyless-host allow list` shows the rules, `allow remove N` takes one back",
                shown(&rule.text),
                rule.tier
            ),
            Err(why) => println!("[rule {why}] `{}`", shown(&rule.text)),
        }
    }

    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        if self.yes {
            println!(
                "[approved by --yes] {}  ({}: {})",
                shown(command),
                verdict.tier,
                shown(&verdict.reason)
            );
            return true;
        }
        if !self.interactive {
            println!(
                "[declined: no terminal to confirm; pass --yes to approve] {}  ({}: {})",
                shown(command),
                verdict.tier,
                shown(&verdict.reason)
            );
            return false;
        }
        let answer = Self::read_line(&format!(
            "Run `{}`? {} — {} [y/N] ",
            shown(command),
            verdict.tier,
            shown(&verdict.reason)
        ));
        answer.is_some_and(|a| matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    fn ask(&mut self, question: &str) -> Option<String> {
        if let Some(a) = self.answers.pop_front() {
            println!(
                "[ask] {}\n[answer] {a}",
                keyless_core::text::printable(question)
            );
            return Some(a);
        }
        if !self.interactive {
            println!(
                "[ask] {}\n[no answer: no terminal; pass --answer TEXT]",
                keyless_core::text::printable(question)
            );
            return None;
        }
        Self::read_line(&format!("{}\n> ", keyless_core::text::printable(question)))
            .filter(|a| !a.trim().is_empty())
    }

    fn say(&mut self, message: &str) {
        println!(
            "[say] {}",
            keyless_core::text::printable(message.trim_end())
        );
    }

    fn progress(&mut self, server: &str, line: &str) {
        println!("[{}] {}", shown(server), shown(line));
    }

    fn log_in_again(&mut self, server: &str, scope: Option<&str>) -> bool {
        let wants = scope.map_or_else(String::new, |s| {
            format!(
                " (it asks for: {})",
                shown(&keyless_core::text::truncate_chars(s.trim(), 200))
            )
        });
        if !self.interactive {
            println!(
                "[login] MCP server \"{}\" refused your login for this call{wants}; no terminal to ask: run `keyless-host mcp login {}`",
                shown(server),
                shown(server)
            );
            return false;
        }
        let answer = Self::read_line(&format!(
            "MCP server \"{}\" refused your login for this call{wants}. Log in again in your browser now? [y/N] ",
            shown(server)
        ));
        answer.is_some_and(|a| matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        terminal_form(
            server,
            form,
            &mut self.answers,
            self.interactive,
            &mut io::stdout(),
        )
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
}

impl Replies {
    /// The next reply and where it came from, or `None` when there is none left.
    fn next(&mut self, prompt: Option<&str>) -> Result<Option<(String, String)>, HostError> {
        loop {
            if self.stdin {
                if let Some(p) = prompt {
                    eprintln!("{p}");
                }
                match read_reply(&mut io::stdin().lock()) {
                    Ok(Some(text)) => {
                        self.read += 1;
                        return Ok(Some((format!("stdin #{}", self.read), text)));
                    }
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
            return Ok(Some((file, text)));
        }
    }
}

/// Reads one reply from `r`: lines up to its `@@eof` (and the closing fence after it, for a
/// fenced reply). `None` at the end of the input with nothing read.
fn read_reply(r: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut text = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok((!text.trim().is_empty()).then_some(text));
        }
        text.push_str(&line);
        if keyless_core::parse::reply_complete(&text) {
            return Ok(Some(text));
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

/// Copies `text` to the clipboard with the first clipboard program this machine has (from a
/// PATH folder the model cannot write); whether it did.
fn copy_to_clipboard(text: &str, workspace: &Path) -> bool {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some();
    let x11 = std::env::var_os("DISPLAY").is_some();
    let candidates: &[(&str, &[&str], bool)] = &[
        ("wl-copy", &[], wayland),
        ("xclip", &["-selection", "clipboard"], x11),
        ("xsel", &["--clipboard", "--input"], x11),
        ("pbcopy", &[], cfg!(target_os = "macos")),
    ];
    for (name, args, usable) in candidates {
        if !usable {
            continue;
        }
        let launcher = crate::launch::Launcher::new(Some(workspace));
        let Ok(mut command) = launcher.start(name, crate::launch::Purpose::Desktop) else {
            continue;
        };
        let child = command
            .args(*args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut c) = child {
            if let Some(mut stdin) = c.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            if c.wait().is_ok_and(|s| s.success()) {
                return true;
            }
        }
    }
    false
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
    if let (None, Some(task)) = (
        &o.session,
        o.task.as_deref().filter(|t| !t.trim().is_empty()),
    ) {
        store
            .set_task(&session, task.trim())
            .map_err(|e| store_err(&e))?;
    }
    if let Some((yaml, piece)) = piece {
        crate::pieces::start(&store, &session, &yaml, piece).map_err(|e| piece_err(&e))?;
    }
    let (repo, branch_note) = if o.session.is_some() {
        (
            submit::session_repo(&store, &session, ws.root()).map_err(|e| store_err(&e))?,
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
        .map_err(|e| store_err(&e))?
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
    };
    if o.interactive {
        let prompt = keyless_core::message::system_prompt(
            &o.exec.settings,
            &keyless_core::message::PromptContext {
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
    };
    let ask = o.interactive.then_some(
        "Paste the model's whole reply (it ends with @@eof), then press Enter; Ctrl+D ends the run:",
    );
    let mut i = 0;
    while let Some((file, text)) = replies.next(ask)? {
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

/// `keyless-host undo`: restores one batch's files (the newest that can be undone by default),
/// lists the batches, or reverts the commits that recorded a batch.
///
/// # Errors
/// KA_BATCH_NOT_FOUND, KA_UNDO_REFUSED (undone already, or a later commit recorded the files),
/// or the restore's failure.
pub fn undo_cmd(
    workspace: &Path,
    batch: Option<&str>,
    list: bool,
    revert: bool,
    force: bool,
) -> Result<ExitCode, HostError> {
    use crate::exec::undo::{self, State};
    let ws = Workspace::open(workspace).map_err(|source| HostError::Read {
        path: workspace.display().to_string(),
        source,
    })?;
    let fail = |f: crate::exec::Failure| HostError::Coded {
        code: f.code,
        message: f.reason,
    };
    let mut out = io::stdout().lock();
    if list {
        let all = undo::list(&ws);
        if all.is_empty() {
            let _ = writeln!(
                out,
                "No batch changed files in {} yet.",
                ws.root().display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let _ = writeln!(
            out,
            "{:<16} {:<22} {:<20} {:>5}  STATE",
            "ID", "BATCH", "WHEN", "FILES"
        );
        for (f, st) in &all {
            let state = match st {
                State::Undoable => "can be undone".to_string(),
                State::Undone => "undone".to_string(),
                State::Committed { commits } => format!(
                    "committed in {}{}",
                    commits
                        .iter()
                        .map(|c| c.id.get(..10).unwrap_or(&c.id))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if commits.iter().any(|c| c.pushed) {
                        " (pushed)"
                    } else {
                        " (--revert)"
                    }
                ),
            };
            let _ = writeln!(
                out,
                "{:<16} {:<22} {:<20} {:>5}  {state}",
                f.id.as_deref().unwrap_or("-"),
                f.label,
                local_time(f.at),
                f.files.len()
            );
            // The batch's files, whoever changed them (file commands and commands alike).
            const SHOWN: usize = 6;
            let mut names: Vec<String> = f
                .files
                .iter()
                .take(SHOWN)
                .map(|p| keyless_core::text::printable(p))
                .collect();
            if f.files.len() > SHOWN {
                names.push(format!("+{} more", f.files.len() - SHOWN));
            }
            let _ = writeln!(out, "{:<16} {}", "", names.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let found = match batch {
        Some(b) => undo::find(&ws, b).map_err(fail)?,
        // The newest batch not undone yet: `undo` again goes one batch further back, and a batch
        // a commit recorded stops it with the reason.
        None => undo::list(&ws)
            .into_iter()
            .find(|(_, st)| !matches!(st, State::Undone))
            .map(|(f, _)| f)
            .ok_or_else(|| HostError::Coded {
                code: keyless_core::Code::BatchNotFound,
                message: format!(
                    "no batch in {} is left to undo (`keyless-host undo --list` shows them all)",
                    ws.root().display()
                ),
            })?,
    };
    let name = found.id.clone().unwrap_or_else(|| found.label.clone());
    if revert {
        let Loaded { cfg, .. } = load_config(ws.root())?;
        let exec = exec_settings(&cfg, false, ws.root(), false);
        let made = undo::revert(&ws, &exec.git, &found).map_err(fail)?;
        let _ = writeln!(out, "reverted the commits that recorded batch {name}:");
        for m in made {
            let _ = writeln!(out, "  new commit {m}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let restored = undo::undo(&ws, &found, force).map_err(fail)?;
    let _ = writeln!(
        out,
        "undid batch {name} ({}): {} {}",
        found.label,
        restored.len(),
        if restored.len() == 1 { "file" } else { "files" }
    );
    for r in restored {
        let what = if r.removed {
            "removed (the batch made it)"
        } else {
            "restored"
        };
        let _ = writeln!(out, "  {what} {}", keyless_core::text::printable(&r.path));
    }
    Ok(ExitCode::SUCCESS)
}

/// Unix seconds as the local date and time (`YYYY-MM-DD HH:MM:SS`).
fn local_time(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0).map_or_else(
        || secs.to_string(),
        |t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        },
    )
}

#[must_use]
pub fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// `keyless-host log --diff ID`: a batch's commands and the diffs of the files they changed; for
/// a session's id, everything the session changed since the commit it started from.
///
/// # Errors
/// KA_BATCH_NOT_FOUND, or the database cannot be read.
pub fn log_diff_cmd(workspace: &Path, batch: &str, json: bool) -> Result<ExitCode, HostError> {
    let db = workspace.join(".agent").join("keyless.db");
    let not_found = || HostError::Coded {
        code: keyless_core::Code::BatchNotFound,
        message: if batch.is_empty() {
            format!(
                "no batch in {} yet: nothing has run there",
                crate::dirs::real_path(workspace).display()
            )
        } else {
            format!(
                "no batch or session `{batch}` in {} (the BATCH and SESSION columns of `keyless-host log` have the ids)",
                crate::dirs::real_path(workspace).display()
            )
        },
    };
    if !db.is_file() {
        return Err(not_found());
    }
    let store = Store::open(&db).map_err(|e| store_err(&e))?;
    // `log --diff` with no id: the newest batch.
    let newest;
    let batch = if batch.is_empty() {
        newest = store
            .newest_batch()
            .map_err(|e| store_err(&e))?
            .ok_or_else(not_found)?;
        newest.as_str()
    } else {
        batch
    };
    if store.session(batch).is_ok() {
        let base = store
            .repo(batch)
            .map_err(|e| store_err(&e))?
            .and_then(|r| r.base_commit);
        let ws = Workspace::open(workspace).map_err(|source| HostError::Read {
            path: workspace.display().to_string(),
            source,
        })?;
        let all = base
            .as_deref()
            .map(|b| crate::exec::diffs::since_commit(&ws, b, 500))
            .unwrap_or_default();
        let mut out = io::stdout().lock();
        if json {
            let _ = serde_json::to_writer(&mut out, &all);
            let _ = writeln!(out);
        } else if base.is_none() {
            let _ = writeln!(out, "session {batch} started outside a git repository (or before its first commit): there is no commit to compare with; `log --diff BATCH` shows each batch.");
        } else if all.is_empty() {
            let _ = writeln!(
                out,
                "Nothing differs from the commit session {batch} started from."
            );
        } else {
            let _ = write!(
                out,
                "session {batch}: what differs from the commit it started from (changes not committed before it included):\n{}\n{}",
                keyless_core::diff::stat(&all),
                keyless_core::diff::render(&all)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let detail = store
        .batch_detail(batch)
        .map_err(|e| store_err(&e))?
        .ok_or_else(not_found)?;
    let results = store.results(batch).map_err(|e| store_err(&e))?;
    let mut out = io::stdout().lock();
    if json {
        let _ = serde_json::to_writer(&mut out, &results);
        let _ = writeln!(out);
        return Ok(ExitCode::SUCCESS);
    }
    let _ = writeln!(
        out,
        "batch {batch}: session {}, turn {}, batch {} ({})",
        detail.session,
        detail.turn,
        detail.batch,
        detail.status.as_str()
    );
    let all: Vec<keyless_core::diff::FileDiff> = results
        .iter()
        .flat_map(|r| r.diff.iter().cloned())
        .collect();
    if all.is_empty() {
        let _ = writeln!(out, "It changed no files.");
    } else {
        let _ = write!(
            out,
            "{}\n{}",
            keyless_core::diff::stat(&all),
            keyless_core::diff::render(&all)
        );
    }
    Ok(ExitCode::SUCCESS)
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
        // Columns as wide as their widest cell, so TARGET lines up whatever the ids' lengths.
        let rows: Vec<[String; 6]> = entries
            .iter()
            .map(|e| {
                let status = match e.code.as_deref() {
                    Some(c) => format!("{} {c}", e.status.as_str()),
                    None => e.status.as_str().to_string(),
                };
                [
                    local_time(e.at),
                    shown(&e.session),
                    shown(&e.batch),
                    e.command.clone(),
                    status,
                    shown(&e.target),
                ]
            })
            .collect();
        let head = ["WHEN", "SESSION", "BATCH", "COMMAND", "STATUS", "TARGET"];
        let mut width = head.map(|h| h.chars().count());
        for r in &rows {
            for (w, cell) in width.iter_mut().zip(r.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 6]| {
            let mut s = String::new();
            for (i, (cell, w)) in cells.iter().zip(width.iter()).enumerate() {
                if i == 5 {
                    s.push_str(cell);
                } else {
                    s.push_str(&format!("{cell:<w$}  "));
                }
            }
            s
        };
        let _ = writeln!(out, "{}", line(head));
        for r in &rows {
            let _ = writeln!(out, "{}", line(r.each_ref().map(String::as_str)));
        }
        let _ = writeln!(
            out,
            "{} entr{} (times are local; `log --diff BATCH` shows what a batch changed)",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
