//! The one verdict on a command, of any kind, under a mode, an allow-list, a piece movement's tools
//! and what the host knows of the workspace ([`Context`]). The executor calls [`Judge::verdict`]
//! before every command it runs; the overlay's follower, the dashboard's batch view, the
//! playground and `keyless-host policy` call the same function with the same inputs, so what is
//! shown is what runs.

use super::{decide_with, file_command_verdict, tier_decision, Context, Decision, Tier, Verdict};
use crate::config::Mode;
use crate::piece::tools::EffectiveTools;
use crate::reply::{Command, CommandKind, SectionName};

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
pub fn command_verdict(
    c: &Command,
    mode: Mode,
    allow: &[String],
    ctx: &Context,
) -> Option<Verdict> {
    let at_least = |mut v: Verdict, floor: Tier, why: &str| {
        if v.tier < floor {
            let line = policed_line(c).unwrap_or("").trim();
            v.tier = floor;
            v.decision = tier_decision(floor, mode, || {
                allow.iter().any(|p| super::pattern_matches(p, line))
            });
            v.reason = format!("{why} ({})", v.reason);
        }
        v
    };
    match (c.kind, policed_line(c)) {
        // Another machine: the workspace's programs and files do not steer it.
        (CommandKind::SshExec, Some(line)) => Some(at_least(
            decide_with(line, mode, allow, &Context::default()),
            Tier::Execute,
            "it runs on another machine over SSH",
        )),
        (_, Some(line)) => Some(decide_with(line, mode, allow, ctx)),
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
            let v = extension_verdict(c, tier, reason, mode);
            Some(match persistence_of(c, ctx) {
                Some(p) => persistence_verdict(c, &p, Some(v), mode),
                None => v,
            })
        }
        (_, None) => {
            let plain = file_command_verdict(c.kind, &confirm_text(c), mode);
            match persistence_of(c, ctx) {
                Some(p) => Some(persistence_verdict(c, &p, plain, mode)),
                None => plain,
            }
        }
    }
}

/// The files the user's tools run later that a file command writes, moves or deletes
/// ([`super::persistence`]).
#[must_use]
pub fn persistence_of(c: &Command, ctx: &Context) -> Option<super::persistence::Persistence> {
    use super::persistence::persistence;
    let path = c.argument.as_deref()?;
    match c.kind {
        CommandKind::NewFile | CommandKind::UpdateFile => {
            persistence(path, c.section_text(SectionName::Content), ctx)
        }
        // What an edit leaves is not known from the command alone: the host judges an edit of a
        // manifest as the whole file it will write (an `@@updatefile` of it).
        CommandKind::EditFile => persistence(path, None, ctx),
        CommandKind::DeleteFile => persistence(path, None, ctx),
        CommandKind::SshDownload => persistence(c.transfer()?.to, None, ctx),
        CommandKind::MoveFile => persistence(path, None, ctx).or_else(|| {
            let to = c
                .section_text(SectionName::To)?
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())?;
            persistence(to, None, ctx)
        }),
        _ => None,
    }
}

/// A file command on a persistence file: Risky (asked in every mode but Auto), with who runs the
/// file in the reason.
fn persistence_verdict(
    c: &Command,
    p: &super::persistence::Persistence,
    plain: Option<Verdict>,
    mode: Mode,
) -> Verdict {
    let reason = format!(
        "{} writes {}, a file your own tools run later ({}); such files are always confirmed",
        c.kind, p.path, p.why
    );
    let reason = match plain {
        Some(v) if v.tier >= Tier::Risky => format!("{}; {reason}", v.reason),
        _ => reason,
    };
    Verdict {
        tier: Tier::Risky,
        decision: tier_decision(Tier::Risky, mode, || false),
        reason: reason.clone(),
        segments: vec![super::SegmentVerdict {
            text: confirm_text(c),
            tier: Tier::Risky,
            reason,
        }],
    }
}

fn extension_verdict(c: &Command, tier: Tier, reason: &str, mode: Mode) -> Verdict {
    Verdict {
        tier,
        decision: tier_decision(tier, mode, || false),
        reason: reason.to_string(),
        segments: vec![super::SegmentVerdict {
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
    /// What the host knows of the workspace: untrusted programs, files that steer programs.
    pub context: Context,
}

impl Judge {
    /// A judge without a piece.
    #[must_use]
    pub fn new(mode: Mode, allow: Vec<String>) -> Self {
        Self {
            mode,
            allow,
            gate: None,
            context: Context::default(),
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
            command_verdict(c, self.mode, self.allow_list(), &self.context)
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
