//! The report of `keyless-host check --json`, built once here so the CLI, the overlay and the
//! playground show the same verdict.

use crate::config::Settings;
use crate::message::correction;
use crate::parse::{parse, ParseOutput};
use crate::plan::{plan, Plan};
use crate::reply::Control;
use serde::Serialize;

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
    let out = parse(text, &settings.limits);
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
