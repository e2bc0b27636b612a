//! Every text keyless sends to the model: the format correction, the results message, the verified
//! line and the system prompt. Results come in as data; rendering lives here.

use crate::config::{BatchFailureMode, Mode, Pace, Settings};
use crate::diag::{Code, Diagnostic};
use crate::piece::run::PieceRun;
use crate::piece::tools::EffectiveTools;
use crate::plan::SkipReason;
use crate::reply::{Command, CommandKind};
use crate::text::escape_snippet;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// At most this many problems are listed in one correction.
pub const MAX_LISTED_PROBLEMS: usize = 20;

/// The correction sent for a rejected reply. Nothing was executed.
#[must_use]
pub fn correction(diagnostics: &[Diagnostic], suppressed: usize, truncated: bool) -> String {
    let mut out = String::from(
        "[KEYLESSAGENT FORMAT ERROR]\nYour last response was rejected. Nothing was executed.\nProblems:\n",
    );
    for d in diagnostics.iter().take(MAX_LISTED_PROBLEMS) {
        out.push_str("- ");
        if let Some(line) = d.line {
            let _ = write!(out, "line {line}: ");
        }
        out.push_str(&d.message);
        if let Some(help) = &d.help {
            out.push(' ');
            out.push_str(help);
        }
        out.push('\n');
    }
    let more = diagnostics.len().saturating_sub(MAX_LISTED_PROBLEMS) + suppressed;
    if more > 0 {
        let _ = writeln!(out, "- … and {more} more problem(s).");
    }
    if truncated {
        out.push_str(
            "Your response looks truncated. Resend it in SMALLER pieces (fewer commands per response).\n",
        );
    }
    if diagnostics
        .iter()
        .any(|d| d.code == Code::LimitResponseChars)
    {
        out.push_str("Your response is too long. Resend it in SMALLER pieces (fewer commands per response).\n");
    }
    out.push_str(
        "Resend your COMPLETE response using only AgentScript v1. Do not apologize or explain. Do not add text outside blocks.",
    );
    out
}

/// How one command ended, as stored and as the event stream reports it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultStatus {
    Ok,
    Error,
    Skipped,
}

impl ResultStatus {
    /// The stored spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Skipped => "skipped",
        }
    }

    /// Reads the stored spelling back.
    #[must_use]
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "ok" => Some(Self::Ok),
            "error" => Some(Self::Error),
            "skipped" => Some(Self::Skipped),
            _ => None,
        }
    }
}

/// The outcome of one command, as the executor reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CommandOutcome {
    Ok {
        exit_code: Option<i32>,
        duration_ms: Option<u64>,
        verified: Option<String>,
        output: Option<String>,
    },
    Error {
        code: Code,
        reason: String,
        exit_code: Option<i32>,
        duration_ms: Option<u64>,
        output: Option<String>,
    },
    Skipped {
        reason: SkipReason,
    },
}

impl CommandOutcome {
    /// How the command ended, as the store and the event stream name it.
    #[must_use]
    pub fn status(&self) -> ResultStatus {
        match self {
            Self::Ok { .. } => ResultStatus::Ok,
            Self::Error { .. } => ResultStatus::Error,
            Self::Skipped { .. } => ResultStatus::Skipped,
        }
    }
}

/// How the commands of a batch ended: what the terminal's exit code, the dashboard's colour and
/// the overlay read, counted once here.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BatchCounts {
    pub ok: u32,
    /// Errors other than a decline (a failed or denied command, a refused path, …).
    pub failed: u32,
    /// The user said no to a confirmation (`KA_COMMAND_DECLINED`).
    pub declined: u32,
    pub skipped: u32,
}

/// How one command of a batch ended: the views mark its row with it when they missed the live
/// events (a retry answered from the store, a view opened late).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CommandEnd {
    pub number: u32,
    pub status: ResultStatus,
    pub code: Option<String>,
}

impl CommandEnd {
    /// Each entry's end, in order.
    #[must_use]
    pub fn of(entries: &[CommandResult]) -> Vec<Self> {
        entries
            .iter()
            .map(|e| Self {
                number: e.number,
                status: e.outcome.status(),
                code: match &e.outcome {
                    CommandOutcome::Error { code, .. } => Some(code.as_str().to_string()),
                    _ => None,
                },
            })
            .collect()
    }
}

impl BatchCounts {
    /// Counts one command's status and code.
    pub fn add(&mut self, status: ResultStatus, code: Option<&str>) {
        match status {
            ResultStatus::Ok => self.ok += 1,
            ResultStatus::Skipped => self.skipped += 1,
            ResultStatus::Error if code == Some(Code::CommandDeclined.as_str()) => {
                self.declined += 1;
            }
            ResultStatus::Error => self.failed += 1,
        }
    }

    /// The counts of a batch's results.
    #[must_use]
    pub fn of(entries: &[CommandResult]) -> Self {
        let mut c = Self::default();
        for e in entries {
            let code = match &e.outcome {
                CommandOutcome::Error { code, .. } => Some(code.as_str()),
                _ => None,
            };
            c.add(e.outcome.status(), code);
        }
        c
    }
}

/// One command's entry in the results message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandResult {
    pub number: u32,
    pub kind: CommandKind,
    pub target: String,
    pub outcome: CommandOutcome,
    /// What the command changed in the workspace's files, for the user (never in the results
    /// message the model reads).
    pub diff: Vec<crate::diff::FileDiff>,
}

impl CommandResult {
    #[must_use]
    pub fn new(command: &Command, outcome: CommandOutcome) -> Self {
        Self {
            number: command.number,
            kind: command.kind,
            target: command.target(),
            outcome,
            diff: Vec::new(),
        }
    }
}

fn duration(ms: u64) -> String {
    let tenths = (ms + 50) / 100;
    format!("{}.{}s", tenths / 10, tenths % 10)
}

fn status_details(exit_code: Option<i32>, duration_ms: Option<u64>) -> String {
    let mut s = String::new();
    if let Some(code) = exit_code {
        let _ = write!(s, " | exit code: {code}");
    }
    if let Some(ms) = duration_ms {
        let _ = write!(s, " | duration: {}", duration(ms));
    }
    s
}

/// Writes an output payload, choosing a nonce when the text itself holds the closing marker.
fn output_block(out: &mut String, text: &str) {
    let mut closer = String::from("OUTPUT");
    let mut n = 0u32;
    while text.lines().any(|l| l.trim() == format!("{closer}>>>")) {
        n += 1;
        closer = format!("OUTPUT:k{n}");
    }
    let _ = writeln!(out, "<<<{closer}");
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "{closer}>>>");
}

/// Header of a results message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchRef {
    pub turn: u32,
    pub batch: u32,
}

/// The results message for one executed batch: every non-say command mapped to its result. When
/// the batch `finished` the task (its `@@done` took effect), the message says so instead of asking
/// for more.
#[must_use]
pub fn results(batch: BatchRef, entries: &[CommandResult], pace: Pace, finished: bool) -> String {
    let listed: Vec<&CommandResult> = entries
        .iter()
        .filter(|e| !matches!(&e.outcome, CommandOutcome::Skipped { reason } if reason.is_limit()))
        .collect();
    let limit_skips: Vec<&CommandResult> = entries
        .iter()
        .filter(|e| matches!(&e.outcome, CommandOutcome::Skipped { reason } if reason.is_limit()))
        .collect();
    let total = entries.len();
    let mut out = format!(
        "[KEYLESSAGENT RESULTS] turn={} batch={}\n",
        batch.turn, batch.batch
    );
    for (i, e) in listed.iter().enumerate() {
        let _ = write!(
            out,
            "--- result {}/{total} | #{} {}",
            i + 1,
            e.number,
            e.kind
        );
        if !e.target.is_empty() {
            let _ = write!(out, " | {}", e.target);
        }
        out.push_str(" ---\n");
        match &e.outcome {
            CommandOutcome::Ok {
                exit_code,
                duration_ms,
                verified,
                output,
            } => {
                let _ = writeln!(
                    out,
                    "status: ok{}",
                    status_details(*exit_code, *duration_ms)
                );
                if let Some(v) = verified {
                    let _ = writeln!(out, "{v}");
                }
                if let Some(o) = output {
                    output_block(&mut out, o);
                }
            }
            CommandOutcome::Error {
                code,
                reason,
                exit_code,
                duration_ms,
                output,
            } => {
                let _ = writeln!(
                    out,
                    "status: error | code: {code}{}",
                    status_details(*exit_code, *duration_ms)
                );
                let _ = writeln!(out, "reason: {reason}");
                if let Some(o) = output {
                    output_block(&mut out, o);
                }
            }
            CommandOutcome::Skipped { reason } => {
                let _ = writeln!(out, "status: skipped\nreason: {reason}");
            }
        }
    }
    if let Some(first) = limit_skips.first() {
        if let CommandOutcome::Skipped { reason } = &first.outcome {
            let _ = writeln!(
                out,
                "--- skipped {} commands: {reason} ---",
                limit_skips.len()
            );
        }
    }
    out.push_str("[END RESULTS]\n");
    if finished {
        out.push_str("The task is finished (@@done).");
        return out;
    }
    if pace == Pace::Step {
        out.push_str(STEP_RULE);
        out.push('\n');
    }
    out.push_str(
        "Continue with the next commands, or finish with @@done. Reply in AgentScript v1 only.",
    );
    out
}

/// The Step-mode rule, in the system prompt and in every results message.
pub const STEP_RULE: &str =
    "Pace is Step: send ONE command, then @@next. Verify its result before you send the next one.";

/// The text a turn ends with when `MaxFormatRetries` invalid replies came in a row: it names the
/// limit and quotes the last reply as received.
#[must_use]
pub fn turn_stopped_format_retries(turn: u32, invalid: u32, max: u32, reply: &str) -> String {
    format!(
        "turn {turn} stopped: {invalid} invalid replies in a row (MaxFormatRetries = {max}). The last reply, as received:\n{reply}"
    )
}

/// The answer to a batch met again that was begun and never finished (the host stopped while it
/// ran): it is not run a second time.
#[must_use]
pub fn batch_interrupted(id: &str) -> String {
    format!("batch {id} was interrupted while it ran (the host stopped); it is not run again. Check the workspace (keyless-host log), then send the next reply.")
}

/// A note from the piece run (a limit redirected the run), before the next movement's prompt.
#[must_use]
pub fn piece_note(note: &str) -> String {
    format!("[KEYLESSAGENT PIECE] {note}\n")
}

/// The piece reached its end.
#[must_use]
pub fn piece_complete() -> String {
    "[KEYLESSAGENT PIECE] complete.".to_string()
}

/// The piece run was aborted, and why.
#[must_use]
pub fn piece_aborted(reason: &str) -> String {
    format!("[KEYLESSAGENT PIECE] aborted: {reason}.")
}

/// The movement asked the user a question; the run waits for the answer.
#[must_use]
pub fn piece_needs_user_input(question: &str) -> String {
    format!(
        "[KEYLESSAGENT PIECE] needs_user_input: the run waits for the user's answer to: {}\n\
         The turn ends here. The movement goes on when the user answers.",
        question.trim()
    )
}

/// The user answered the question the run stopped on; the movement's prompt follows.
#[must_use]
pub fn piece_answered(answer: &str) -> String {
    format!("[KEYLESSAGENT PIECE] The user answered: {}", answer.trim())
}

/// The movement started subtasks; the run waits for them.
#[must_use]
pub fn piece_waiting_for_subtasks() -> String {
    "[KEYLESSAGENT PIECE] waiting for subtasks.".to_string()
}

/// The `@@done` directive is not a transition the movement allows.
#[must_use]
pub fn piece_refused(code: Code, problem: &str) -> String {
    format!("[KEYLESSAGENT PIECE] {code} {problem}. Choose one of those directives.")
}

/// The verified line for a file's bytes on disk.
#[must_use]
pub fn verified_line(path: &str, bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let sha: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let lines = count_lines(text);
    let first: String = text.chars().take(60).collect();
    let total = text.chars().count();
    let last: String = text.chars().skip(total.saturating_sub(60)).collect();
    let line = format!(
        "verified: path={} bytes={} lines={lines} sha={sha} first=\"{}\" last=\"{}\"",
        escape_snippet(path),
        bytes.len(),
        escape_snippet(&first),
        escape_snippet(&last)
    );
    cap_line(line, 300)
}

/// The verified line for a folder.
pub const VERIFIED_DIR: &str = "verified: dir exists";

/// Lines after CRLF/LF normalisation: "a\nb" and "a\nb\n" are both 2 lines; "" is 0.
#[must_use]
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let normalized_newlines =
        text.matches('\n').count() + text.matches('\r').count() - text.matches("\r\n").count();
    let ends_with_newline = text.ends_with('\n') || text.ends_with('\r');
    normalized_newlines + usize::from(!ends_with_newline)
}

fn cap_line(line: String, max: usize) -> String {
    if line.chars().count() <= max {
        return line;
    }
    let mut out: String = line.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Caps command output at `max` characters, keeping head and tail and marking the cut with the
/// number of characters left out.
#[must_use]
pub fn cap_output(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head_len = max / 2;
    let tail_len = max - head_len;
    let head: String = text.chars().take(head_len).collect();
    let tail: String = text.chars().skip(total - tail_len).collect();
    format!(
        "{head}\n[… {} characters omitted …]\n{tail}",
        total - head_len - tail_len
    )
}

/// What the system prompt is told about the environment (from the host's snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PromptContext {
    pub mode: Mode,
    /// Commands.BatchFailureMode: what a failed command does to the rest of the batch.
    pub failure_mode: BatchFailureMode,
    /// Free text: OS, shell, tool versions.
    pub environment: Option<String>,
    /// A piece session's current movement ([`movement_prompt`]).
    pub movement: Option<String>,
    /// The user's task, when the first message carries it.
    pub task: Option<String>,
    /// The branch the session works on, the protected branches, origin.
    pub git: Option<crate::branch::GitFacts>,
    /// The repository map ([`crate::repomap::render`]), when there is one.
    pub repo_map: Option<String>,
}

/// What a failed command does to the rest of the batch, as the system prompt states it.
fn failure_rule(mode: BatchFailureMode) -> &'static str {
    match mode {
        BatchFailureMode::StopOnMutationFailure => "A failed read-only command, @@readfile or @@ask does not stop the batch. Any other failed command (build, test, a risky command, a file command, @@commit) stops it: the commands after it are skipped and listed as skipped. runcommand on_error=continue lets the batch go on after that command.",
        BatchFailureMode::StopOnAnyFailure => "Any failed command stops the batch: the commands after it are skipped and listed as skipped. runcommand on_error=continue lets the batch go on after that command.",
        BatchFailureMode::Continue => "A failed command does not stop the batch: every command runs and reports its own result. runcommand on_error=stop ends the batch at that command.",
    }
}

/// The system prompt's last line (a handover, which carries the task, leaves it out).
pub const WAIT_FOR_TASK: &str = "Wait for the user's task, then reply in AgentScript v1 only.";

/// The system prompt that teaches a chat model AgentScript v1, with the effective limits.
#[must_use]
pub fn system_prompt(settings: &Settings, ctx: &PromptContext) -> String {
    let l = &settings.limits;
    let limit = settings.effective_command_limit();
    let mut p = String::new();
    let _ = write!(
        p,
        "You are a coding agent working in the user's workspace through keyless. You act ONLY by replying in AgentScript v1. Nothing else you write is executed.

# Reply format
Put your WHOLE reply in ONE fenced block that starts with the line ~~~~agentscript and ends with the line ~~~~. Inside it, write blocks, then a final line @@eof:

~~~~agentscript
@@say
<<<MSG
One short sentence about what you are doing.
MSG>>>
@@end
@@newfile src/greeting.txt
<<<CONTENT
Hello!
CONTENT>>>
@@end
@@runcommand
<<<CMD
cat src/greeting.txt
CMD>>>
@@end
@@next
@@end
@@eof
~~~~

Rules:
- A block is a line @@command [argument], then its sections, then a line @@end.
- A section is a line <<<NAME, its lines, then a line NAME>>>. Markers count only as whole lines.
- If a file must contain a line equal to a marker, add a nonce: <<<CONTENT:x7 … CONTENT:x7>>>.
- File content must never contain a line that starts with four tildes (~~~~).
- Paths are relative to the workspace root and use /. Never absolute, never .., never inside .git or .agent.
- No text outside blocks. Talk to the user only with @@say. Write in English, except file content.
- The last line inside the fence is @@eof.

# Commands
- @@say + MSG: tell the user something.
- @@newfile PATH + CONTENT: create a file (fails if it exists; parent folders are created).
- @@updatefile PATH + CONTENT: replace a whole existing file.
- @@editfile PATH + FIND + REPLACE: replace the one place where FIND's lines occur (FIND must match exactly once).
- @@deletefile PATH: delete a file (it is backed up).
- @@movefile PATH + TO: move or rename a file; TO holds the destination path.
- @@readfile PATH: read a file; its content comes back in the results.
- @@mkdir PATH: create a folder.
- @@runcommand + CMD: run one command line. Options: on_error=continue|stop, timeout=<seconds>.
- @@ask + MSG: ask the user a question; the answer comes back in the results.
- @@commit + MSG: git add -A, commit with MSG, push.
- @@next (+ optional MSG): run this batch and wait for its results.
- @@done (+ optional MSG): the task is finished. Commands after @@done are not executed.

# Limits
- At most {limit} command(s) per response (not counting say, next and done). Extra commands are skipped.
- A response has at most {} characters; one section at most {} characters. Split bigger work across responses.
- Command output is cut to {} characters (head and tail kept).
- After each batch you get a message [KEYLESSAGENT RESULTS]. Read it before you continue, and fix what failed before @@done.
- {}
- If your reply breaks the format you get [KEYLESSAGENT FORMAT ERROR]: resend the complete, corrected reply. After {} rejected replies in a row the turn stops and the user takes over.
- A turn runs at most {} batches; then it stops and the user takes over.
",
        l.max_response_chars,
        l.max_file_content_chars,
        l.max_command_output_chars,
        failure_rule(ctx.failure_mode),
        l.max_format_retries,
        settings.effective_iterations_per_turn(),
    );
    if settings.pace == Pace::Step {
        let _ = writeln!(p, "- {STEP_RULE}");
    }
    let mode_text = match ctx.mode {
        Mode::Ask => "Ask: read-only and build commands run at once; others (and reads outside the workspace) wait for the user's approval.",
        Mode::AutoSafe => "AutoSafe: read-only, build and allow-listed commands run at once; risky ones (and reads outside the workspace) wait for approval.",
        Mode::Auto => "Auto: every command that is not denied runs at once.",
    };
    let _ = writeln!(p, "- Command mode is {mode_text} Denied commands (force-push, shutdown, curl | sh, …) never run.");
    if let Some(env) = &ctx.environment {
        let _ = write!(p, "\n# Environment\n{}\n", env.trim_end());
    }
    if let Some(git) = &ctx.git {
        let _ = write!(p, "\n# Git\n{}\n", git.prompt());
    }
    if let Some(map) = ctx.repo_map.as_deref().filter(|m| !m.trim().is_empty()) {
        let _ = write!(p, "\n# Repository\n{}\n", map.trim_end());
    }
    p.push('\n');
    p.push_str(WAIT_FOR_TASK);
    if let Some(m) = &ctx.movement {
        let _ = write!(p, "\n\n{m}");
    }
    if let Some(task) = ctx.task.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        let _ = write!(p, "\n\n# Task\n{task}");
    }
    p
}

/// The text that introduces a piece run's current movement to the model: its persona and task,
/// the commands it allows, and the `@@done` choices its rules offer.
#[must_use]
pub fn movement_prompt(run: &PieceRun) -> String {
    let m = run.movement();
    let piece = run.piece();
    let tools = run.tools();
    let mut p = format!(
        "[KEYLESSAGENT MOVEMENT] {} (movement {} of at most {}, piece \"{}\")\nPersona: {}\nTask: {}\n",
        m.name,
        run.movement_runs(),
        piece.max_movements,
        piece.name,
        m.persona.trim(),
        m.instruction.trim()
    );
    let cmds: Vec<&str> = tools.commands.iter().map(|k| k.name()).collect();
    let _ = writeln!(
        p,
        "Commands you may use in this movement: {}.",
        cmds.join(", ")
    );
    if let (Some(patterns), true) = (
        &tools.command_patterns,
        tools.allows(CommandKind::RunCommand),
    ) {
        let _ = writeln!(p, "@@runcommand may run only: {}.", patterns.join("; "));
    }
    if !m.edit {
        p.push_str("This movement cannot change files.\n");
    }
    extension_prompt(&mut p, run, &tools);
    p.push_str("When this movement is finished, choose one:\n");
    for r in &m.rules {
        let _ = writeln!(p, "- if {}: @@done next={}", r.condition.trim(), r.next);
    }
    p.push_str(
        "- if the whole task is done: @@done\n- if the task cannot be done: @@done status=aborted\n\
         - if you need the user's answer to go on: @@done status=needs_user_input, with the question as its MSG\n",
    );
    p.push_str("Reply in AgentScript v1 only.");
    p
}

/// The extension commands a movement offers (MCP and SSH tools): their syntax, the connections
/// the movement may name, and each MCP tool with its argument schema. They are an extension of
/// AgentScript v1: blocks, sections, limits and results follow its rules.
fn extension_prompt(p: &mut String, run: &PieceRun, tools: &EffectiveTools) {
    if tools.offered().is_empty() {
        return;
    }
    p.push_str(
        "Extension commands of this movement (blocks like every other command, ended by @@end):\n",
    );
    if tools.commands.iter().any(|k| k.is_ssh()) {
        let m = run.movement();
        let catalog = run.catalog();
        let usable = crate::ssh::usable(
            &catalog.ssh,
            &run.piece().name,
            &m.name,
            m.allowed_ssh_connections.as_deref(),
            &catalog.user,
        );
        if tools.allows(CommandKind::SshExec) {
            p.push_str("- @@sshexec CONNECTION [timeout=<seconds>] with a <<<CMD section: runs the command line on that machine (judged by the command policy, at least Execute).\n");
        }
        if tools.allows(CommandKind::SshUpload) {
            p.push_str("- @@sshupload CONNECTION LOCAL TO REMOTE: copies a workspace file to the machine.\n");
        }
        if tools.allows(CommandKind::SshDownload) {
            p.push_str("- @@sshdownload CONNECTION REMOTE TO LOCAL: copies a remote file into the workspace.\n");
        }
        if usable.is_empty() {
            p.push_str(
                "  No SSH connection is usable here (none registered, granted and allowed).\n",
            );
        } else {
            p.push_str("  CONNECTION is one of:");
            for c in usable {
                let _ = write!(
                    p,
                    " {} ({}@{}:{}, id {});",
                    c.name, c.user, c.host, c.port, c.id
                );
            }
            p.push('\n');
        }
    }
    if tools.allows(CommandKind::Mcp) {
        p.push_str("- @@mcp SERVER.TOOL [timeout=<seconds>] with an optional <<<ARGS section holding one JSON object of the tool's arguments. Tools:\n");
        for q in &tools.mcp {
            let Some(t) = run.catalog().mcp.iter().find(|t| &t.qualified() == q) else {
                continue;
            };
            let desc = crate::text::truncate_chars(t.description.trim(), 300);
            let _ = writeln!(
                p,
                "  - {q}{}: {desc}\n    ARGS schema: {}",
                if t.read_only { " (read-only)" } else { "" },
                crate::text::truncate_chars(&t.input_schema, 2000)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\r\nb\r\n"), 2);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("a\rb\r"), 2);
    }

    #[test]
    fn duration_rounds_to_tenths() {
        assert_eq!(duration(4_200), "4.2s");
        assert_eq!(duration(49), "0.0s");
        assert_eq!(duration(1_950), "2.0s");
    }

    #[test]
    fn output_cap_keeps_head_and_tail() {
        let text: String = (0..1000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let capped = cap_output(&text, 100);
        assert!(capped.starts_with(&text[..50]));
        assert!(capped.ends_with(&text[950..]));
        assert!(capped.contains("[… 900 characters omitted …]"));
        assert_eq!(cap_output("short", 100), "short");
    }

    #[test]
    fn verified_line_is_capped_and_escaped() {
        let v = verified_line("a.txt", b"\xef\xbb\xbfhello \"x\"\r\nworld\r\n");
        assert!(
            v.starts_with("verified: path=a.txt bytes=21 lines=2 sha="),
            "{v}"
        );
        assert!(
            v.contains("first=\"hello \\\"x\\\"\\r\\nworld\\r\\n\""),
            "{v}"
        );
        let long = verified_line(&"p/".repeat(200), b"x");
        assert_eq!(long.chars().count(), 300);
    }
}
