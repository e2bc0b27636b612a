//! A reply in, the results message (or the format correction) out.

use super::backup::BatchBackup;
use super::files::{self, FileCtx};
use super::git::{self, GitSettings};
use super::shell;
use super::workspace::Workspace;
use super::Failure;
use keyless_core::diff::FileDiff;
use keyless_core::message::{correction, results, BatchRef, CommandOutcome, CommandResult};
use keyless_core::parse::parse_with;
use keyless_core::plan::{failure_stops_batch, plan, SkipReason};
use keyless_core::policy::always::{AllowOffer, AllowRule};
use keyless_core::policy::verdict::{confirm_text, Judge};
use keyless_core::policy::{Context, Decision, Verdict};
use keyless_core::{BatchFailureMode, Code, CommandKind, Control, Mode, SectionName, Settings};
use std::time::Duration;

/// A confirmation the policy asks for, with what the user needs to decide.
#[derive(Debug)]
pub struct Confirmation<'a> {
    /// The command as the user approves it (a line, `@@deletefile path`, …).
    pub command: &'a str,
    pub verdict: &'a Verdict,
    /// What the command will change in the workspace's files (a `@@deletefile`'s file).
    pub preview: &'a [FileDiff],
    /// What the user may tell keyless to stop asking about in this workspace (a command line).
    pub offer: Option<&'a AllowOffer>,
}

/// The user's answer to a [`Confirmation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    Declined,
    /// Declined, with the user's words on why (told to the model).
    DeclinedBecause(String),
    /// Nobody could be asked (no terminal, no `--yes`): declined, and the model is told why.
    NoOneToAsk,
    Once,
    /// Approved, and the rule (one of the offer's) is to be remembered for the workspace.
    Always(AllowRule),
}

/// Confirmations, questions and messages for the user.
pub trait Prompter {
    /// Whether to run a command the policy wants confirmed.
    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool;
    /// A confirmation with its preview and what it offers to remember; without an override, the
    /// plain [`Prompter::confirm`].
    fn confirm_with(&mut self, c: &Confirmation<'_>) -> Approval {
        if self.confirm(c.command, c.verdict) {
            Approval::Once
        } else {
            Approval::Declined
        }
    }
    /// A rule the user asked to remember was saved (`Ok`) or refused (`Err`, in words).
    fn remembered(&mut self, _rule: &AllowRule, _result: &Result<(), String>) {}
    /// The user's answer to `@@ask`, or `None` when there is none.
    fn ask(&mut self, question: &str) -> Option<String>;
    /// The user's answer to the question a piece run stopped on in `movement` (the seed's
    /// needs_user_input), or `None` when there is none.
    fn piece_question(&mut self, question: &str, movement: &str) -> Option<String> {
        let _ = movement;
        self.ask(question)
    }
    /// The user's answer to the form an MCP server sent while its tool ran (elicitation);
    /// nobody to ask declines. The model never answers one.
    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        let _ = (server, form);
        keyless_core::elicit::Answer::Decline
    }
    /// An MCP server refused the user's login for a call (step-up: it needs more access, `scope`
    /// when it says what; or the login expired beyond refresh): whether the user logs in again now, in their browser,
    /// for the call to be tried once more. Nobody to ask: no.
    fn log_in_again(&mut self, server: &str, scope: Option<&str>) -> bool {
        let _ = (server, scope);
        false
    }
    /// A progress line from an MCP server whose tool runs: shown with the live output.
    fn progress(&mut self, server: &str, line: &str) {
        self.output(&format!("[{server}] {line}\n"));
    }
    /// A `@@say` message.
    fn say(&mut self, message: &str);
    /// Live output of a running command.
    fn output(&mut self, _chunk: &str) {}
    /// Whether the user asked to cancel the running command.
    fn cancel_requested(&mut self) -> bool {
        false
    }
    /// A command of the batch starts running.
    fn command_started(&mut self, _command: &keyless_core::Command) {}
    /// A command of the batch has its result (run, failed or skipped).
    fn command_finished(&mut self, _result: &CommandResult) {}
    /// The policy's verdict on a command, right before it is carried out (every command that
    /// has one, whatever the decision).
    fn judged(&mut self, _command: &keyless_core::Command, _verdict: &Verdict) {}
}

/// Everything that decides how a batch runs.
#[derive(Debug, Clone)]
pub struct ExecSettings {
    pub settings: Settings,
    pub mode: Mode,
    pub allow: Vec<String>,
    pub failure_mode: BatchFailureMode,
    /// Commands.TimeoutSeconds, unless a command sets `timeout=`.
    pub timeout_seconds: u32,
    pub git: GitSettings,
    /// Confine runcommand in the sandbox (see [`super::sandbox`]); false runs commands unconfined
    /// (tests of the runner itself only).
    pub sandbox: bool,
    /// Commands.Network: whether confined commands may use TCP.
    pub network: bool,
    /// keyless.json's `Programs.Env`: the secret-looking variables commands still get (named
    /// exactly); every other one is withheld ([`keyless_core::secrets::withheld`]).
    pub pass_env: Vec<String>,
    /// Commands.MaxProcesses and Commands.MaxMemoryMiB ([`super::limits`]).
    pub limits: super::limits::Limits,
    /// Tools the environment snapshot lists as missing (KA_TOOL_MISSING).
    pub missing_tools: Vec<String>,
    /// SSH and the MCP servers, for the extension commands.
    pub tools: super::tools::Tools,
    /// `Agent.RepoMapChars`: the repository map's budget in the first prompt (0: none).
    pub repo_map_chars: u32,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            settings: Settings::default(),
            mode: Mode::Ask,
            allow: Vec::new(),
            failure_mode: BatchFailureMode::default(),
            timeout_seconds: 600,
            git: GitSettings::default(),
            sandbox: false,
            network: false,
            pass_env: Vec::new(),
            limits: super::limits::Limits::new(
                keyless_core::keyless_json::DEFAULT_MAX_PROCESSES,
                None,
            ),
            missing_tools: Vec::new(),
            tools: super::tools::Tools::default(),
            repo_map_chars: keyless_core::repomap::DEFAULT_BUDGET,
        }
    }
}

/// What running a batch produced: the owned form of [`keyless_core::turn::BatchReport`], with the
/// results' entries and the `@@done` the session records. (The colour views give a batch is
/// [`keyless_core::api::BatchOutcome`].)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchRun {
    /// The reply broke the format; nothing ran.
    Rejected { correction: String },
    Executed {
        results: String,
        control: Control,
        entries: Vec<CommandResult>,
        /// The piece directive of the reply's `@@done`, read from the one parse of the batch.
        done: Option<keyless_core::piece::run::Directive>,
        /// What the model said with the `@@done` that finished the task (its MSG), for the user.
        done_message: Option<String>,
    },
}

#[derive(Debug)]
pub struct Executor<'a> {
    pub ws: &'a Workspace,
    pub cfg: &'a ExecSettings,
    pub session: &'a str,
    /// The current piece movement's tools: commands outside them are KA_COMMAND_DENIED.
    pub gate: Option<&'a keyless_core::piece::tools::EffectiveTools>,
    /// The repository as recorded at session start: `@@commit` commits and pushes only there.
    pub repo: &'a git::RepoRecord,
    /// The SSH registry and the MCP servers the extension commands use (`None`: none offered).
    pub ext: Option<&'a super::tools::Extensions>,
}

impl std::fmt::Debug for dyn Prompter + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prompter")
    }
}

impl Executor<'_> {
    /// Parses, plans and runs one reply as batch `batch` of turn `turn`.
    pub fn execute(
        &self,
        reply: &str,
        turn: u32,
        batch: u32,
        prompter: &mut dyn Prompter,
    ) -> BatchRun {
        let offered = self
            .gate
            .map(keyless_core::piece::tools::EffectiveTools::offered)
            .unwrap_or_default();
        let parsed = parse_with(reply, &self.cfg.settings.limits, &offered);
        if !parsed.ok() {
            return BatchRun::Rejected {
                correction: correction(&parsed.diagnostics, parsed.suppressed, parsed.truncated),
            };
        }
        let mut planned = plan(&parsed.reply, &self.cfg.settings);
        let mut backup = BatchBackup::new(self.ws, self.session, turn, batch).ok();
        let mut entries = Vec::new();
        for cmd in &parsed.reply.commands {
            // A cancel between two commands skips the rest, as one during a command does.
            if cmd.kind != CommandKind::Say
                && planned.entry(cmd.number).is_some_and(|e| e.run)
                && prompter.cancel_requested()
            {
                planned.cancel_after(cmd.number.saturating_sub(1));
            }
            let entry = planned.entry(cmd.number).cloned();
            let Some(entry) = entry else { continue };
            if cmd.kind == CommandKind::Say {
                prompter.say(cmd.section_text(SectionName::Msg).unwrap_or(""));
                continue;
            }
            // A control directive has no result, except a @@done the batch held back (a stopped
            // batch, the pace): the model learns that its @@done did not end the turn, and why.
            if cmd.kind.is_control() && (entry.run || cmd.kind != CommandKind::Done) {
                continue;
            }
            if !entry.run {
                let reason = entry.skip.unwrap_or(SkipReason::AfterDone);
                let result = CommandResult::new(cmd, CommandOutcome::Skipped { reason });
                prompter.command_finished(&result);
                entries.push(result);
                continue;
            }
            prompter.command_started(cmd);
            let before = super::diffs::Before::take(self.ws, cmd);
            let (outcome, tier) = match backup.as_mut() {
                Some(b) => self.run_one(cmd, b, prompter),
                None => (
                    Err(Failure::new(
                        Code::FileIo,
                        "cannot create .agent/backups; nothing is changed without a backup",
                    )),
                    None,
                ),
            };
            let outcome = outcome.unwrap_or_else(|f| CommandOutcome::Error {
                code: f.code,
                reason: f.reason,
                exit_code: None,
                duration_ms: None,
                output: None,
            });
            if matches!(
                outcome,
                CommandOutcome::Error {
                    code: Code::Cancelled,
                    ..
                }
            ) {
                // The user stopped the batch, not just this command.
                planned.cancel_after(cmd.number);
            } else if matches!(outcome, CommandOutcome::Error { .. })
                && failure_stops_batch(self.cfg.failure_mode, cmd.kind, tier, cmd.options.on_error)
            {
                planned.stop_after(cmd.number);
            }
            let mut result = CommandResult::new(cmd, outcome);
            if let (Some(b), CommandOutcome::Ok { .. }) = (&before, &result.outcome) {
                result.diff = b.after(self.ws);
            }
            prompter.command_finished(&result);
            entries.push(result);
        }
        // What the batch left its files as: undo never overwrites a later change unasked.
        super::undo::seal(self.ws, self.session, turn, batch);
        let done = parsed
            .reply
            .commands
            .iter()
            .find_map(keyless_core::piece::run::Directive::from_done);
        // The @@done took effect and ends the task (a piece's `next=` goes on to a movement).
        let finished = planned.control == Control::Done
            && !matches!(done, Some(keyless_core::piece::run::Directive::Next(_)));
        let done_message = parsed
            .reply
            .commands
            .iter()
            .filter(|c| c.kind == CommandKind::Done && finished)
            .find_map(|c| c.section_text(SectionName::Msg))
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty());
        let text = results(
            BatchRef { turn, batch },
            &entries,
            self.cfg.settings.pace,
            finished,
        );
        BatchRun::Executed {
            results: text,
            control: planned.control,
            entries,
            done,
            done_message,
        }
    }

    fn run_one(
        &self,
        cmd: &keyless_core::Command,
        backup: &mut BatchBackup,
        prompter: &mut dyn Prompter,
    ) -> (
        Result<CommandOutcome, Failure>,
        Option<keyless_core::policy::Tier>,
    ) {
        if let Some(denied) = self.gate_refusal(cmd) {
            return (Err(denied), None);
        }
        if cmd.kind == CommandKind::RunCommand {
            return self.run_command(cmd, backup, prompter);
        }
        if cmd.kind.is_extension() {
            return self.run_extension(cmd, backup, prompter);
        }
        // A commit that would be refused is refused before anyone is asked to approve it.
        if cmd.kind == CommandKind::Commit {
            if let Some(f) = git::commit_refusal(self.ws, &self.cfg.git, self.repo) {
                return (Err(f), None);
            }
        }
        // @@deletefile and @@commit are confirmed as the same writes through runcommand would be.
        // A file the user's own tools run later is judged with where those are (the hooks
        // folder, the PATH folders the model can write, the user's linked config files).
        let context = if cmd.kind.takes_path() {
            super::persistence::persistence_context(self.ws.root())
        } else {
            Context::default()
        };
        let judged = super::diffs::as_judged(self.ws, cmd);
        let verdict = self.judge(context).verdict(&judged);
        let tier = verdict.as_ref().map(|v| v.tier);
        if let Some(v) = &verdict {
            let preview = super::diffs::Before::take(self.ws, cmd)
                .map(|b| b.preview(cmd))
                .unwrap_or_default();
            if let Err(f) = admit_with(cmd, v, prompter, &preview, None) {
                return (Err(f), tier);
            }
        }
        (self.run_file_command(cmd, backup, prompter), tier)
    }

    /// The one verdict's judge for this batch's commands: the session's mode and allow-list, the
    /// movement's tools, and what the host knows of the workspace (`context`; only a command
    /// line is judged by it).
    pub(super) fn judge(&self, context: Context) -> Judge {
        Judge {
            mode: self.cfg.mode,
            allow: self.cfg.allow.clone(),
            gate: self.gate.cloned(),
            context,
        }
    }

    /// Every command but runcommand, once the policy and the user let it run.
    fn run_file_command(
        &self,
        cmd: &keyless_core::Command,
        backup: &mut BatchBackup,
        prompter: &mut dyn Prompter,
    ) -> Result<CommandOutcome, Failure> {
        let arg = cmd.argument.as_deref().unwrap_or("");
        let text = |name| cmd.section_text(name).unwrap_or("");
        let max_output = self.cfg.settings.limits.max_command_output_chars as usize;
        let mut ctx = FileCtx {
            ws: self.ws,
            backup,
            max_output_chars: max_output,
        };
        match cmd.kind {
            CommandKind::NewFile => files::newfile(&mut ctx, arg, text(SectionName::Content)),
            CommandKind::UpdateFile => files::updatefile(&mut ctx, arg, text(SectionName::Content)),
            CommandKind::EditFile => files::editfile(
                &mut ctx,
                arg,
                text(SectionName::Find),
                text(SectionName::Replace),
            ),
            CommandKind::DeleteFile => files::deletefile(&mut ctx, arg),
            CommandKind::MoveFile => files::movefile(&mut ctx, arg, text(SectionName::To)),
            CommandKind::ReadFile => files::readfile(&ctx, arg),
            CommandKind::Mkdir => files::mkdir(&ctx, arg),
            CommandKind::Ask => match prompter.ask(text(SectionName::Msg)) {
                Some(answer) => Ok(CommandOutcome::Ok {
                    exit_code: None,
                    duration_ms: None,
                    verified: None,
                    output: Some(answer),
                }),
                None => Err(Failure::new(
                    Code::CommandDeclined,
                    "the user did not answer",
                )),
            },
            CommandKind::Commit => {
                git::commit(self.ws, &self.cfg.git, self.repo, text(SectionName::Msg)).map(|t| {
                    CommandOutcome::Ok {
                        exit_code: None,
                        duration_ms: None,
                        verified: None,
                        output: Some(t),
                    }
                })
            }
            CommandKind::Say | CommandKind::Next | CommandKind::Done => Ok(CommandOutcome::Ok {
                exit_code: None,
                duration_ms: None,
                verified: None,
                output: None,
            }),
            // run_one gives runcommand and the extensions to their own paths, behind the
            // policy; never here.
            CommandKind::RunCommand
            | CommandKind::Mcp
            | CommandKind::SshExec
            | CommandKind::SshUpload
            | CommandKind::SshDownload => Err(Failure::new(
                Code::Internal,
                format!("{} reached the file-command path", cmd.kind),
            )),
        }
    }

    /// Why the current movement refuses this command, if it does.
    pub(super) fn gate_refusal(&self, cmd: &keyless_core::Command) -> Option<Failure> {
        let why = self.gate?.refusal(cmd)?;
        Some(Failure::new(Code::CommandDenied, why))
    }

    fn run_command(
        &self,
        cmd: &keyless_core::Command,
        backup: &mut BatchBackup,
        prompter: &mut dyn Prompter,
    ) -> (
        Result<CommandOutcome, Failure>,
        Option<keyless_core::policy::Tier>,
    ) {
        let line = cmd.section_text(SectionName::Cmd).unwrap_or("").trim();
        // The git guard's snapshot, taken before the verdict: it also finds the files that steer
        // programs, which the policy judges with (with the programs the shell would take from a
        // folder the model can write).
        let guard = match super::gitguard::Guard::take(self.ws.root()) {
            Ok(g) => g,
            Err(e) => {
                return (
                    Err(Failure::new(
                        Code::FileIo,
                        format!("cannot look at the workspace before the command: {e}"),
                    )),
                    None,
                )
            }
        };
        let context = super::policy_context::context(self.ws.root(), Some(&guard));
        let Some(verdict) = self.judge(context.clone()).verdict(cmd) else {
            return (
                Err(Failure::new(Code::Internal, "no verdict on a runcommand")),
                None,
            );
        };
        let tier = Some(verdict.tier);
        let offer = keyless_core::policy::always::offer(line, verdict.tier, &context);
        let approved = match admit_with(cmd, &verdict, prompter, &[], offer.as_ref()) {
            Ok((approved, rule)) => {
                if let Some(rule) = rule {
                    let saved = crate::always::add(self.ws.root(), rule.clone(), &context);
                    prompter.remembered(&rule, &saved);
                }
                approved
            }
            Err(f) => return (Err(f), tier),
        };
        if let Some(tool) =
            keyless_core::environment::missing_program(&self.cfg.missing_tools, line)
        {
            return (
                Err(Failure::new(Code::ToolMissing, format!("{tool} is listed as Missing in the environment; the process was not started. Do not retry it."))),
                tier,
            );
        }
        let timeout = Duration::from_secs(u64::from(
            cmd.options
                .timeout_seconds
                .unwrap_or(self.cfg.timeout_seconds),
        ));
        let max = self.cfg.settings.limits.max_command_output_chars as usize;
        // A command the user saw and approved may write .git; nothing else may.
        let confine = self.cfg.sandbox.then(|| super::sandbox::Spec {
            pass_env: self.cfg.pass_env.clone(),
            limits: self.cfg.limits,
            ..super::sandbox::spec_for(self.ws.root(), self.cfg.network, approved)
        });
        // The user may have taken a while to answer: the snapshot is taken again right before
        // the command starts, so nothing the user did meanwhile is taken for the command's doing.
        let mut guard = if approved {
            super::gitguard::Guard::take(self.ws.root()).unwrap_or(guard)
        } else {
            guard
        };
        // Files the user's tools run later change only under a command the user confirmed, or
        // in Auto mode (a Build-tier `cargo build` whose build script writes `.envrc` is put back).
        guard.unconfirmed = !approved && self.cfg.mode != Mode::Auto;
        // What the command may change is kept for undo: the working tree before, then after.
        let watched = confine.is_some();
        let shots = super::undo_tree::Shots::open(self.ws)
            .and_then(|s| s.take(watched).map(|before| (s, before)))
            .inspect_err(|e| tracing::warn!(error = %e.message(), "cannot keep the working tree for undo; this command's changes are not undoable"))
            .ok();
        let confined = confine.as_ref().map(|spec| (spec, guard));
        let out = match shell::run_guarded(line, confined, self.ws.root(), timeout, max, |c| {
            if !c.is_empty() {
                prompter.output(c);
            }
            !prompter.cancel_requested()
        }) {
            Ok(o) => o,
            Err(e) => {
                return (
                    Err(Failure::new(
                        Code::CommandFailed,
                        format!("cannot start the shell: {e}"),
                    )),
                    tier,
                )
            }
        };
        if let Some((shots, before)) = shots {
            let kept = shots
                .take(watched)
                .map_err(|e| {
                    Failure::new(
                        Code::FileIo,
                        format!("cannot tell what the command changed: {}", e.message()),
                    )
                })
                .and_then(|after| shots.record(self.ws, before, after, backup));
            if let Err(f) = kept {
                tracing::warn!(error = %f.reason, "this command's changes are not undoable");
            }
        }
        (Ok(process_outcome(&out, timeout)), tier)
    }
}

/// The policy's decision carried out, for every command that has one: Deny is
/// KA_COMMAND_DENIED, Confirm asks the user (showing [`confirm_text`]) and a no is
/// KA_COMMAND_DECLINED. `Ok(true)`: the user saw and approved it; `Ok(false)`: it runs unasked.
pub(super) fn admit(
    cmd: &keyless_core::Command,
    verdict: &Verdict,
    prompter: &mut dyn Prompter,
) -> Result<bool, Failure> {
    admit_with(cmd, verdict, prompter, &[], None).map(|(approved, _)| approved)
}

/// [`admit`] with a preview of the change and an offer to remember: also returns the rule the
/// user asked to remember.
pub(super) fn admit_with(
    cmd: &keyless_core::Command,
    verdict: &Verdict,
    prompter: &mut dyn Prompter,
    preview: &[FileDiff],
    offer: Option<&AllowOffer>,
) -> Result<(bool, Option<AllowRule>), Failure> {
    prompter.judged(cmd, verdict);
    let shown = confirm_text(cmd);
    let declined = || {
        Failure::new(
            Code::CommandDeclined,
            format!("the user declined ({})", verdict.reason),
        )
    };
    match verdict.decision {
        Decision::Deny => Err(Failure::new(
            Code::CommandDenied,
            format!("denied by the command policy: {}", verdict.reason),
        )),
        Decision::Confirm => match prompter.confirm_with(&Confirmation {
            command: &shown,
            verdict,
            preview,
            offer,
        }) {
            Approval::Declined => Err(declined()),
            Approval::DeclinedBecause(why) => Err(Failure::new(
                Code::CommandDeclined,
                format!(
                    "the user declined ({}) and says: {}",
                    verdict.reason,
                    keyless_core::text::truncate_chars(why.trim(), 500)
                ),
            )),
            Approval::NoOneToAsk => Err(Failure::new(
                Code::CommandDeclined,
                format!(
                    "not run: no one could confirm it (keyless runs without a terminal; the user may run it again with --yes) ({})",
                    verdict.reason
                ),
            )),
            Approval::Once => Ok((true, None)),
            // Only a rule from the offer is remembered, whatever the front end sent.
            Approval::Always(rule) => Ok((
                true,
                offer
                    .filter(|o| o.exact == rule || o.like.as_ref() == Some(&rule))
                    .map(|_| rule),
            )),
        },
        Decision::Run => Ok((false, None)),
    }
}

/// What a finished process means to the model: ok, cancelled, timed out, not found (127) or
/// failed, with its exit code, duration and capped output.
pub(super) fn process_outcome(out: &shell::ShellOutput, timeout: Duration) -> CommandOutcome {
    let ms = u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX);
    let output = Some(out.output.clone());
    if !out.repairs.is_empty() {
        return CommandOutcome::Error {
            code: Code::GitProtected,
            reason: super::gitguard::describe(&out.repairs),
            exit_code: out.exit_code,
            duration_ms: Some(ms),
            output,
        };
    }
    if let Some((code, why)) = &out.limit {
        // Said even when the command still exited 0: a limit hit is never a quiet success.
        return CommandOutcome::Error {
            code: *code,
            reason: if out.timed_out {
                format!(
                    "{why}; it also ran into its timeout ({}s)",
                    timeout.as_secs()
                )
            } else {
                why.clone()
            },
            exit_code: out.exit_code,
            duration_ms: Some(ms),
            output,
        };
    }
    if out.cancelled {
        return CommandOutcome::Error {
            code: Code::Cancelled,
            reason: "cancelled by the user; the output so far is kept".into(),
            exit_code: None,
            duration_ms: Some(ms),
            output,
        };
    }
    match (out.timed_out, out.exit_code) {
        (false, Some(0)) => CommandOutcome::Ok {
            exit_code: Some(0),
            duration_ms: Some(ms),
            verified: None,
            output,
        },
        (true, _) => CommandOutcome::Error {
            code: Code::Timeout,
            reason: format!("killed after {}s (timeout)", timeout.as_secs()),
            exit_code: None,
            duration_ms: Some(ms),
            output,
        },
        (false, Some(127)) => CommandOutcome::Error {
            code: Code::CommandNotFound,
            reason: "the program was not found on this machine (exit code 127)".into(),
            exit_code: Some(127),
            duration_ms: Some(ms),
            output,
        },
        (false, code) => CommandOutcome::Error {
            code: Code::CommandFailed,
            reason: match code {
                Some(c) => format!("command exited with code {c}"),
                None => "command was killed by a signal".into(),
            },
            exit_code: code,
            duration_ms: Some(ms),
            output,
        },
    }
}
