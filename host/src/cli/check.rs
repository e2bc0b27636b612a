//! `keyless-host check`, `policy` and `prompt`: the pure answers of the core, on the terminal.

use super::args::{LimitArgs, ModeFlag};
use crate::error::HostError;
use clap::Args;
use keyless_core::check::{check, over_limit, CheckReport};
use keyless_core::message::{system_prompt, PromptContext};
use keyless_core::policy::decide_with;
use keyless_core::{parse, Code, Diagnostic, Limits};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct CheckArgs {
    /// The reply file, or - for standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, Args)]
pub(super) struct PolicyArgs {
    #[command(flatten)]
    mode: ModeFlag,
    /// Commands.AllowList pattern (repeatable), e.g. 'npm run test *'.
    #[arg(long = "allow", value_name = "PATTERN")]
    allow: Vec<String>,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
    /// Judge as the executor would in this workspace: programs the shell would take from
    /// folders the model can write, and workspace files that steer programs (a toolchain file,
    /// .npmrc, …). Without it, the line is judged on its own.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The command line: one quoted argument (`'git push --force'`) or the words after `--`.
    #[arg(
        required = true,
        value_name = "COMMAND_LINE",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command_line: Vec<String>,
}

#[derive(Debug, Args)]
pub(super) struct PromptArgs {
    /// Include this workspace's environment snapshot (OS, shell, tools, .agent/snapshot scripts).
    #[arg(long)]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    mode: ModeFlag,
}

/// Reads at most enough bytes to know whether the reply is over the limit.
fn read_reply(file: &str, limits: &Limits) -> Result<(String, Option<usize>), HostError> {
    // Four bytes per character at most: anything longer is over the limit for sure.
    let cap = u64::from(limits.max_response_chars) * 4 + 1;
    let mut buf = Vec::new();
    let name = if file == "-" {
        "<stdin>".to_string()
    } else {
        file.to_string()
    };
    let read = |r: &mut dyn Read, buf: &mut Vec<u8>| r.take(cap).read_to_end(buf);
    let res = if file == "-" {
        read(&mut io::stdin().lock(), &mut buf)
    } else {
        std::fs::File::open(PathBuf::from(file)).and_then(|mut f| read(&mut f, &mut buf))
    };
    res.map_err(|source| HostError::Read {
        path: name.clone(),
        source,
    })?;
    if buf.len() as u64 == cap {
        // Over the limit whatever the rest holds; report without reading it.
        return Ok((String::new(), Some(buf.len())));
    }
    match String::from_utf8(buf) {
        Ok(s) => Ok((s, None)),
        Err(e) => Err(HostError::NotUtf8 {
            path: name,
            offset: e.utf8_error().valid_up_to(),
        }),
    }
}

pub(super) fn check_cmd(a: &CheckArgs) -> Result<ExitCode, HostError> {
    let settings = a.limits.settings()?;
    let (text, over) = read_reply(&a.file, &settings.limits)?;
    let name = if a.file == "-" {
        "<stdin>"
    } else {
        a.file.as_str()
    };
    let report = match over {
        Some(bytes) => over_limit(bytes, &settings),
        None => check(&text, &settings),
    };
    let mut out = io::stdout().lock();
    if a.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out).map_err(HostError::Write)?;
    } else {
        // The text form shows help too, so parse once more for the full diagnostics.
        let full = parse(&text, &settings.limits);
        let diags: Vec<Diagnostic> = if over.is_some() {
            vec![Diagnostic::new(
                Code::LimitResponseChars,
                None,
                report
                    .diagnostics
                    .first()
                    .map(|d| d.message.clone())
                    .unwrap_or_default(),
            )]
        } else {
            full.diagnostics
        };
        let targets: Vec<String> = full
            .reply
            .commands
            .iter()
            .map(keyless_core::Command::target)
            .collect();
        write_text_report(&mut out, name, &text, &diags, &report, &targets)
            .map_err(HostError::Write)?;
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn write_text_report(
    out: &mut impl Write,
    name: &str,
    text: &str,
    diags: &[Diagnostic],
    report: &CheckReport,
    targets: &[String],
) -> io::Result<()> {
    for d in diags {
        let shown = crate::diagnostics::render_out(&d.clone().in_file(name), Some(text));
        writeln!(out, "{shown}\n")?;
    }
    if report.ok {
        let control = report.control.map_or("next", |c| match c {
            keyless_core::Control::Next => "next",
            keyless_core::Control::Done => "done",
        });
        writeln!(
            out,
            "{name}: ok: {} block(s), control: {control}",
            report.commands.len()
        )?;
        for (c, target) in report.commands.iter().zip(targets) {
            let status = if c.run {
                "run".to_string()
            } else {
                format!("skip: {}", c.skip_reason.as_deref().unwrap_or(""))
            };
            let arg = target.as_str();
            writeln!(
                out,
                "  #{:<3} {:<11} {:<40} line {:<5} {status}",
                c.number, c.command, arg, c.line
            )?;
        }
    } else {
        writeln!(
            out,
            "{name}: rejected: {} problem(s); nothing would run",
            diags.len()
        )?;
    }
    Ok(())
}

pub(super) fn policy_cmd(a: &PolicyArgs) -> Result<ExitCode, HostError> {
    let line = a.command_line.join(" ");
    if line.trim().is_empty() {
        return Err(HostError::Usage("the command line is empty".into()));
    }
    let context = a
        .workspace
        .as_deref()
        .map(|w| crate::exec::policy_context::context(w, None))
        .unwrap_or_default();
    let verdict = decide_with(&line, a.mode.mode, &a.allow, &context);
    let mut out = io::stdout().lock();
    if a.json {
        serde_json::to_writer(&mut out, &verdict)?;
        writeln!(out).map_err(HostError::Write)?;
    } else {
        let w = |out: &mut io::StdoutLock<'_>| -> io::Result<()> {
            writeln!(
                out,
                "tier: {}  decision: {}  ({})",
                verdict.tier,
                verdict.decision,
                keyless_core::text::printable(&verdict.reason)
            )?;
            for (i, s) in verdict.segments.iter().enumerate() {
                writeln!(
                    out,
                    "  segment {}: {:<9} {}  — {}",
                    i + 1,
                    s.tier.as_str(),
                    keyless_core::text::printable(&s.text),
                    keyless_core::text::printable(&s.reason)
                )?;
            }
            Ok(())
        };
        w(&mut out).map_err(HostError::Write)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn prompt_cmd(a: &PromptArgs) -> Result<ExitCode, HostError> {
    let settings = a.limits.settings()?;
    let environment = a.workspace.as_ref().map(|w| {
        let sandbox = crate::exec::sandbox::probe(w, false).describe();
        crate::exec::snapshot::gather(w, sandbox).text()
    });
    let git = match &a.workspace {
        Some(w) => {
            let cfg = crate::config::load_config(w)?.cfg;
            let git = crate::config::exec_settings(&cfg, true, w, false).git;
            Some(crate::exec::git::RepoRecord::capture(w).facts(w, &git))
        }
        None => None,
    };
    let ctx = PromptContext {
        mode: a.mode.mode,
        environment,
        git,
        ..Default::default()
    };
    let mut out = io::stdout().lock();
    writeln!(out, "{}", system_prompt(&settings, &ctx)).map_err(HostError::Write)?;
    Ok(ExitCode::SUCCESS)
}
