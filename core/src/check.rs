//! The report of `keyless-host check --json`, built once here so the CLI, the overlay and the
//! playground show the same verdict.

use crate::config::Mode;
use crate::config::Settings;
use crate::message::correction;
use crate::parse::ParseOutput;
use crate::piece::tools::EffectiveTools;
use crate::plan::{plan, Plan};
use crate::policy::{decide, file_command_verdict, tier_decision, Decision, Tier, Verdict};
use crate::reply::{Command, CommandKind, Control, SectionName};
use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckDiagnostic {
    pub code: String,
    pub line: Option<u32>,
    pub message: String,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckCommand {
    pub number: u32,
    pub command: String,
    pub argument: Option<String>,
    /// What the command acts on, as every view shows it ([`crate::Command::target`]).
    pub target: String,
    pub line: u32,
    pub run: bool,
    pub skip_reason: Option<String>,
}

/// `{"ok","diagnostics","commands","control","correction"}`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    pub ok: bool,
    pub diagnostics: Vec<CheckDiagnostic>,
    pub commands: Vec<CheckCommand>,
    pub control: Option<Control>,
    pub correction: Option<String>,
}

/// One command as every view shows it (the overlay, the dashboard's batch, the playground): what
/// it is, what it acts on, whether the batch runs it, and the policy's verdict on a runcommand.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandView {
    pub number: u32,
    pub command: String,
    /// [`Command::target`].
    pub target: String,
    pub line: u32,
    /// Whether the batch runs it (`None` while the reply is still streaming).
    pub run: Option<bool>,
    pub skip_reason: Option<String>,
    /// The policy verdict of a runcommand: tier, decision (run/confirm/deny) and reason.
    pub tier: Option<Tier>,
    pub decision: Option<Decision>,
    pub reason: Option<String>,
}

impl CommandView {
    /// The view of `c`, with what the plan says of it and its verdict ([`command_verdict`]).
    #[must_use]
    pub fn new(c: &Command, run: Option<bool>, skip: Option<String>, v: Option<Verdict>) -> Self {
        Self {
            number: c.number,
            command: c.kind.name().to_string(),
            target: c.target(),
            line: c.line,
            run,
            skip_reason: skip,
            tier: v.as_ref().map(|v| v.tier),
            decision: v.as_ref().map(|v| v.decision),
            reason: v.map(|v| v.reason),
        }
    }
}

/// The command line the policy judges: a runcommand's or an sshexec's `CMD`; `None` for every
/// other command.
#[must_use]
pub fn policed_line(c: &Command) -> Option<&str> {
    matches!(c.kind, CommandKind::RunCommand | CommandKind::SshExec)
        .then(|| c.section_text(SectionName::Cmd).unwrap_or(""))
}

/// What a confirmation shows of a command: a runcommand's line, an sshexec's connection and line,
/// else `@@kind target`.
#[must_use]
pub fn confirm_text(c: &Command) -> String {
    match (c.kind, policed_line(c)) {
        (CommandKind::RunCommand, Some(line)) => line.trim().to_string(),
        (CommandKind::SshExec, Some(line)) => {
            format!(
                "ssh {}: {}",
                c.argument.as_deref().unwrap_or(""),
                line.trim()
            )
        }
        // The user approves the call with its arguments, not only the tool's name.
        (CommandKind::Mcp, _) => {
            let args = c
                .section_text(SectionName::Args)
                .map(|a| a.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|a| !a.is_empty());
            match args {
                Some(a) => format!(
                    "@@mcp {} {}",
                    c.target(),
                    crate::text::truncate_chars(&a, 400)
                ),
                None => format!("@@mcp {}", c.target()),
            }
        }
        _ => format!("@@{} {}", c.kind, c.target()),
    }
}

/// The policy's verdict on a command under a mode and extra allow patterns: a runcommand's line,
/// the commands as risky as one (`@@deletefile`, `@@commit`) and the extension commands; `None`
/// for the commands that always run unasked.
///
/// An sshexec's line is judged like a runcommand's and is at least Execute: it runs on another
/// machine. An upload is Risky (it overwrites a remote file), a download Execute (it reads a
/// remote machine and writes the workspace), an MCP tool Risky (a read-only one is lowered by the
/// movement's tools, [`Judge::verdict`]).
#[must_use]
pub fn command_verdict(c: &Command, mode: Mode, allow: &[String]) -> Option<Verdict> {
    let at_least = |mut v: Verdict, floor: Tier, why: &str| {
        if v.tier < floor {
            let line = policed_line(c).unwrap_or("").trim();
            v.tier = floor;
            v.decision = tier_decision(floor, mode, || {
                allow
                    .iter()
                    .any(|p| crate::policy::pattern_matches(p, line))
            });
            v.reason = format!("{why} ({})", v.reason);
        }
        v
    };
    match (c.kind, policed_line(c)) {
        (CommandKind::SshExec, Some(line)) => Some(at_least(
            decide(line, mode, allow),
            Tier::Execute,
            "it runs on another machine over SSH",
        )),
        (_, Some(line)) => Some(decide(line, mode, allow)),
        (CommandKind::SshUpload | CommandKind::SshDownload | CommandKind::Mcp, None) => {
            let (tier, reason) = match c.kind {
                CommandKind::SshUpload => (Tier::Risky, "sshupload writes a file on another machine"),
                CommandKind::SshDownload => (
                    Tier::Execute,
                    "sshdownload reads another machine and writes a workspace file",
                ),
                _ => (
                    Tier::Risky,
                    "an MCP tool can do anything its server does (not marked read-only by a trusted server)",
                ),
            };
            Some(extension_verdict(c, tier, reason, mode))
        }
        (_, None) => file_command_verdict(c.kind, &confirm_text(c), mode),
    }
}

fn extension_verdict(c: &Command, tier: Tier, reason: &str, mode: Mode) -> Verdict {
    Verdict {
        tier,
        decision: tier_decision(tier, mode, || false),
        reason: reason.to_string(),
        segments: vec![crate::policy::SegmentVerdict {
            text: confirm_text(c),
            tier,
            reason: reason.to_string(),
        }],
    }
}

/// What a command is judged under, in a view as in the executor: the session's mode, the
/// configured allow-list and, in a piece session, the current movement's tools (which refuse the
/// commands the movement does not offer, and whose `allowed_commands` replaces the allow-list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judge {
    pub mode: Mode,
    pub allow: Vec<String>,
    pub gate: Option<EffectiveTools>,
}

impl Judge {
    /// A judge without a piece.
    #[must_use]
    pub fn new(mode: Mode, allow: Vec<String>) -> Self {
        Self {
            mode,
            allow,
            gate: None,
        }
    }

    /// The extension commands the movement offers (none without a piece).
    #[must_use]
    pub fn offered(&self) -> Vec<CommandKind> {
        self.gate
            .as_ref()
            .map(EffectiveTools::offered)
            .unwrap_or_default()
    }

    /// The allow-list a runcommand is decided with.
    #[must_use]
    pub fn allow_list(&self) -> &[String] {
        self.gate
            .as_ref()
            .map_or(self.allow.as_slice(), |g| g.allow_list(&self.allow))
    }

    /// The verdict on `c`: a movement's refusal first (Deny, with its reason), else
    /// [`command_verdict`] under the effective allow-list.
    #[must_use]
    pub fn verdict(&self, c: &Command) -> Option<Verdict> {
        let refusal = self.gate.as_ref().and_then(|g| g.refusal(c));
        let read_only_tool = c.mcp_tool().is_some_and(|(server, tool)| {
            self.gate
                .as_ref()
                .is_some_and(|g| g.mcp_is_read_only(&crate::mcp::qualified(server, tool)))
        });
        let verdict = if read_only_tool {
            Some(extension_verdict(
                c,
                Tier::ReadOnly,
                "the server marks this tool read-only and keyless.json trusts the server",
                self.mode,
            ))
        } else {
            command_verdict(c, self.mode, self.allow_list())
        };
        match refusal {
            None => verdict,
            Some(reason) => Some(Verdict {
                tier: verdict.as_ref().map_or(Tier::Denied, |v| v.tier),
                decision: Decision::Deny,
                reason,
                segments: verdict.map(|v| v.segments).unwrap_or_default(),
            }),
        }
    }
}

/// Every command of a complete reply as the views show it: parsed and planned under the
/// settings, each command judged by `judge`.
#[must_use]
pub fn command_views(text: &str, settings: &Settings, judge: &Judge) -> Vec<CommandView> {
    let Checked { out, planned, .. } = checked_with(text, settings, &judge.offered());
    out.reply
        .commands
        .iter()
        .map(|c| {
            let entry = planned.as_ref().and_then(|p| p.entry(c.number));
            CommandView::new(
                c,
                entry.map(|e| e.run),
                entry.and_then(|e| e.skip).map(|s| s.to_string()),
                judge.verdict(c),
            )
        })
        .collect()
}

/// A complete reply parsed, planned when valid, with its correction when not: what both the
/// `check` report and the overlay's final view are made from.
#[derive(Debug)]
pub struct Checked {
    pub out: ParseOutput,
    pub planned: Option<Plan>,
    pub correction: Option<String>,
}

/// Parses a complete reply, plans it when it is valid, and writes its correction when it is not.
#[must_use]
pub fn checked(text: &str, settings: &Settings) -> Checked {
    checked_with(text, settings, &[])
}

/// [`checked`] with the extension commands a movement offers.
#[must_use]
pub fn checked_with(text: &str, settings: &Settings, offered: &[CommandKind]) -> Checked {
    let out = crate::parse::parse_with(text, &settings.limits, offered);
    let ok = out.ok();
    let planned = ok.then(|| plan(&out.reply, settings));
    let correction = (!ok).then(|| correction(&out.diagnostics, out.suppressed, out.truncated));
    Checked {
        out,
        planned,
        correction,
    }
}

/// Parses and plans a reply under the settings.
#[must_use]
pub fn check(text: &str, settings: &Settings) -> CheckReport {
    let Checked {
        out,
        planned,
        correction,
    } = checked(text, settings);
    let ok = out.ok();
    let diagnostics = out
        .diagnostics
        .iter()
        .map(|d| CheckDiagnostic {
            code: d.code.as_str().to_string(),
            line: d.line,
            message: d.message.clone(),
        })
        .collect();
    let commands = out
        .reply
        .commands
        .iter()
        .map(|c| {
            let entry = planned.as_ref().and_then(|p| p.entry(c.number));
            CheckCommand {
                number: c.number,
                command: c.kind.name().to_string(),
                argument: c.argument.clone(),
                target: c.target(),
                line: c.line,
                run: entry.is_some_and(|e| e.run),
                skip_reason: entry.and_then(|e| e.skip).map(|s| s.to_string()),
            }
        })
        .collect();
    CheckReport {
        ok,
        diagnostics,
        commands,
        control: planned.map(|p| p.control),
        correction,
    }
}

/// The report for a reply a reader stopped reading after `bytes` bytes because those already hold
/// more characters than `MaxResponseChars` allows: rejected, nothing runs, with the correction the
/// model would get.
#[must_use]
pub fn over_limit(bytes: usize, settings: &Settings) -> CheckReport {
    let d = crate::parse::diagnostics::response_over_limit_bytes(bytes, &settings.limits);
    CheckReport {
        ok: false,
        diagnostics: vec![CheckDiagnostic {
            code: d.code.as_str().to_string(),
            line: d.line,
            message: d.message.clone(),
        }],
        commands: Vec::new(),
        control: None,
        correction: Some(correction(&[d], 0, false)),
    }
}
