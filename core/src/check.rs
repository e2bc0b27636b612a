//! The report of `keyless-host check --json`, built once here so the CLI, the overlay and the
//! playground show the same verdict.

use crate::config::Settings;
use crate::diag::Diagnostic;
use crate::message::correction;
use crate::parse::ParseOutput;
use crate::plan::{plan, Plan};
use crate::policy::verdict::Judge;
use crate::policy::{Decision, Tier, Verdict};
use crate::reply::{Command, CommandKind, Control};
use serde::{Deserialize, Serialize};

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
    pub diagnostics: Vec<Diagnostic>,
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
    let diagnostics = out.diagnostics.clone();
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
        correction: Some(correction(std::slice::from_ref(&d), 0, false)),
        diagnostics: vec![d],
        commands: Vec::new(),
        control: None,
    }
}
