//! Effective tools per movement, and what they allow in AgentScript.
//!
//! effective = shared_tools ∪ allowed_tools ∪ META (de-duplicated, in order), then the gates:
//! `edit: false` removes Write/Edit, `edit: true` adds them; SSH tools need the movement's own
//! `allowed_ssh_connections`; unknown names are dropped and reported.

use super::validate::{Checker, Fields};
use super::{Movement, Piece};
use crate::diag::Code;
use crate::policy::pattern_matches;
use crate::reply::{Command, CommandKind, SectionName};
use crate::text::edit_distance;
use serde::{Deserialize, Serialize};

/// Tools that always exist, as AgentScript commands.
pub const META_TOOLS: [&str; 4] = ["say", "ask", "next", "done"];
pub const SSH_TOOLS: [&str; 3] = ["SshExec", "SshUpload", "SshDownload"];
/// Tools keyless knows, with the AgentScript commands each one allows.
pub const TOOL_COMMANDS: &[(&str, &[CommandKind])] = &[
    ("Read", &[CommandKind::ReadFile]),
    (
        "Write",
        &[
            CommandKind::NewFile,
            CommandKind::UpdateFile,
            CommandKind::DeleteFile,
            CommandKind::MoveFile,
            CommandKind::Mkdir,
        ],
    ),
    ("Edit", &[CommandKind::EditFile]),
    ("Bash", &[CommandKind::RunCommand]),
    ("Commit", &[CommandKind::Commit]),
    ("SshExec", &[CommandKind::SshExec]),
    ("SshUpload", &[CommandKind::SshUpload]),
    ("SshDownload", &[CommandKind::SshDownload]),
];

/// What the host knows at session start that pieces name but cannot know themselves: the running
/// MCP servers' tools and the SSH connections the user registered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// Every tool of every MCP server that started (`tools/list`).
    pub mcp: Vec<crate::mcp::McpTool>,
    /// The registered SSH connections.
    pub ssh: Vec<crate::ssh::Connection>,
    /// The local account (the owner the SSH checks compare with).
    pub user: String,
}

#[must_use]
pub fn is_ssh_tool(name: &str) -> bool {
    SSH_TOOLS.contains(&name)
}

fn is_mcp(name: &str) -> bool {
    crate::mcp::pattern(name).is_ok()
}

fn is_known(name: &str) -> bool {
    TOOL_COMMANDS.iter().any(|(t, _)| *t == name) || META_TOOLS.contains(&name) || is_mcp(name)
}

/// Where a tool of the effective set came from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Shared,
    Allowed,
    Meta,
    /// Added by `edit: true`.
    EditGate,
}

/// One tool of a movement's effective set.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolEntry {
    pub name: String,
    pub source: Source,
    /// False when a gate refuses it at run time (the note says why).
    pub usable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub note: Option<String>,
}

/// A tool that is not in the effective set, and why.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub name: String,
    pub reason: String,
}

/// A movement's effective tools and the AgentScript commands they allow.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveTools {
    pub movement: String,
    pub tools: Vec<ToolEntry>,
    pub dropped: Vec<Dropped>,
    /// Allowed AgentScript commands, in canonical order.
    pub commands: Vec<CommandKind>,
    /// `allowed_commands` patterns for runcommand; `None` means the normal command policy.
    pub command_patterns: Option<Vec<String>>,
    /// The piece the movement belongs to (SSH grants name pieces).
    #[serde(default)]
    pub piece: String,
    /// The MCP tools `@@mcp` may call here (`SERVER.TOOL`): the movement's `mcp__` names resolved
    /// against the running servers of the piece's `required_mcp`.
    #[serde(default)]
    pub mcp: Vec<String>,
    /// Those of them the policy treats as read-only (the server's `readOnlyHint`, trusted).
    #[serde(default)]
    pub mcp_read_only: Vec<String>,
    /// The movement's `allowed_ssh_connections`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub ssh_connections: Option<Vec<String>>,
}

impl EffectiveTools {
    /// The allow-list a runcommand is decided with in this movement: `allowed_commands`, which the
    /// seed calls the "Bash command allowlist (overrides default)", replaces the configured one;
    /// without it the configured one holds.
    #[must_use]
    pub fn allow_list<'a>(&'a self, configured: &'a [String]) -> &'a [String] {
        self.command_patterns.as_deref().unwrap_or(configured)
    }
}

impl EffectiveTools {
    #[must_use]
    pub fn allows(&self, kind: CommandKind) -> bool {
        self.commands.contains(&kind)
    }

    /// The extension commands this movement offers: what the parser knows besides AgentScript v1.
    #[must_use]
    pub fn offered(&self) -> Vec<CommandKind> {
        self.commands
            .iter()
            .copied()
            .filter(|k| k.is_extension())
            .collect()
    }

    /// Whether the MCP tool `SERVER.TOOL` is read-only to the policy.
    #[must_use]
    pub fn mcp_is_read_only(&self, qualified: &str) -> bool {
        self.mcp_read_only.iter().any(|q| q == qualified)
    }

    /// Why this movement refuses `c`, if it does: a command it does not offer, or a runcommand
    /// segment outside its `allowed_commands`. The executor refuses it (KA_COMMAND_DENIED) and
    /// the views show it denied, with this reason.
    #[must_use]
    pub fn refusal(&self, c: &Command) -> Option<String> {
        if !self.allows(c.kind) {
            let allowed: Vec<&str> = self.commands.iter().map(|k| k.name()).collect();
            return Some(format!(
                "@@{} is not allowed in movement \"{}\" (allowed: {})",
                c.kind,
                self.movement,
                allowed.join(", ")
            ));
        }
        if let Some((server, tool)) = c.mcp_tool() {
            let q = crate::mcp::qualified(server, tool);
            if !self.mcp.contains(&q) {
                return Some(format!(
                    "MCP tool {q} is not offered in movement \"{}\" (offered: {})",
                    self.movement,
                    if self.mcp.is_empty() {
                        "none".to_string()
                    } else {
                        self.mcp.join(", ")
                    }
                ));
            }
        }
        if c.kind == CommandKind::RunCommand {
            let line = c.section_text(SectionName::Cmd).unwrap_or("").trim();
            if let Err(why) = self.check_command_line(line) {
                return Some(format!("movement \"{}\": {why}", self.movement));
            }
        }
        None
    }

    /// Whether a runcommand line fits the movement's `allowed_commands`: every segment must match a
    /// pattern. `Err` carries the reason.
    ///
    /// # Errors
    /// The first segment no pattern allows.
    pub fn check_command_line(&self, line: &str) -> Result<(), String> {
        let Some(patterns) = &self.command_patterns else {
            return Ok(());
        };
        let classified = crate::policy::classify(line);
        for seg in &classified.segments {
            if !patterns.iter().any(|p| pattern_matches(p, &seg.text)) {
                return Err(format!(
                    "\"{}\" is not in this movement's allowed_commands ({})",
                    seg.text,
                    patterns.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Computes the effective tools of movement `m` of `piece`, without running servers (the editor,
/// validation): MCP tools are then not offered.
#[must_use]
pub fn effective(piece: &Piece, m: &Movement) -> EffectiveTools {
    effective_with(piece, m, &Catalog::default())
}

/// Computes the effective tools of movement `m` of `piece`, with `mcp__` names resolved against
/// the tools of the running servers the piece requires.
#[must_use]
pub fn effective_with(piece: &Piece, m: &Movement, catalog: &Catalog) -> EffectiveTools {
    let mut tools: Vec<ToolEntry> = Vec::new();
    let mut dropped = Vec::new();
    let add = |name: &str, source: Source, tools: &mut Vec<ToolEntry>| {
        if !tools.iter().any(|t| t.name == name) {
            tools.push(ToolEntry {
                name: name.to_string(),
                source,
                usable: true,
                note: None,
            });
        }
    };
    for t in &piece.shared_tools {
        add(t, Source::Shared, &mut tools);
    }
    for t in &m.allowed_tools {
        add(t, Source::Allowed, &mut tools);
    }
    for t in META_TOOLS {
        add(t, Source::Meta, &mut tools);
    }
    if m.edit {
        for t in ["Write", "Edit"] {
            add(t, Source::EditGate, &mut tools);
        }
    } else {
        tools.retain(|t| {
            let gated = t.name == "Write" || t.name == "Edit";
            if gated {
                dropped.push(Dropped {
                    name: t.name.clone(),
                    reason: "removed by edit: false".into(),
                });
            }
            !gated
        });
    }
    tools.retain(|t| {
        if is_known(&t.name) {
            return true;
        }
        dropped.push(Dropped {
            name: t.name.clone(),
            reason: "unknown tool name".into(),
        });
        false
    });
    let has_connections = m
        .allowed_ssh_connections
        .as_ref()
        .is_some_and(|c| !c.is_empty());
    let mut mcp: Vec<String> = Vec::new();
    let mut mcp_read_only: Vec<String> = Vec::new();
    for t in &mut tools {
        if is_ssh_tool(&t.name) {
            if !has_connections {
                t.usable = false;
                t.note = Some("rejected at run time: no_allowed_connections_declared".into());
            }
        } else if is_mcp(&t.name) {
            let found: Vec<&crate::mcp::McpTool> = catalog
                .mcp
                .iter()
                .filter(|x| {
                    piece.required_mcp.contains(&x.server)
                        && crate::mcp::covers(&t.name, &x.server, &x.name)
                })
                .collect();
            if catalog.mcp.is_empty() {
                t.note = Some("resolved against the servers' tools when a session starts".into());
            } else if found.is_empty() {
                t.usable = false;
                t.note = Some("no tool of the piece's required_mcp servers matches".into());
            } else {
                t.note = Some(format!(
                    "{} tool{}",
                    found.len(),
                    if found.len() == 1 { "" } else { "s" }
                ));
            }
            for x in found {
                let q = x.qualified();
                if !mcp.contains(&q) {
                    if x.read_only {
                        mcp_read_only.push(q.clone());
                    }
                    mcp.push(q);
                }
            }
        }
    }
    let mut commands: Vec<CommandKind> = Vec::new();
    for t in tools.iter().filter(|t| t.usable) {
        let kinds: &[CommandKind] = match t.name.as_str() {
            "say" => &[CommandKind::Say],
            "ask" => &[CommandKind::Ask],
            "next" => &[CommandKind::Next],
            "done" => &[CommandKind::Done],
            name if is_mcp(name) && !mcp.is_empty() => &[CommandKind::Mcp],
            name if is_mcp(name) => &[],
            name => TOOL_COMMANDS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(&[], |(_, k)| *k),
        };
        commands.extend(kinds.iter().copied());
    }
    commands.sort_by_key(|k| k.order());
    commands.dedup();
    // An empty allowed_commands allows no command line: runcommand is not offered at all.
    if m.allowed_commands.as_ref().is_some_and(Vec::is_empty) {
        commands.retain(|k| *k != CommandKind::RunCommand);
    }
    EffectiveTools {
        movement: m.name.clone(),
        tools,
        dropped,
        commands,
        command_patterns: m.allowed_commands.clone(),
        piece: piece.name.clone(),
        mcp,
        mcp_read_only,
        ssh_connections: m.allowed_ssh_connections.clone(),
    }
}

/// Lint warnings about tools: unknown names, Write/Edit removed by `edit: false`, SSH tools that
/// arrive only through shared_tools, allowed_commands without Bash.
pub(super) fn lint(piece: &Piece, movement_fields: &[Fields], top: &Fields, c: &mut Checker) {
    let known: Vec<&str> = TOOL_COMMANDS.iter().map(|(n, _)| *n).collect();
    let suggest = |name: &str| {
        known
            .iter()
            .map(|k| {
                (
                    edit_distance(&name.to_ascii_lowercase(), &k.to_ascii_lowercase()),
                    *k,
                )
            })
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d)
            .map_or_else(
                || format!("known tools: {}, mcp__*", known.join(", ")),
                |(_, k)| format!("did you mean \"{k}\"?"),
            )
    };
    for (i, t) in piece.shared_tools.iter().enumerate() {
        if !is_known(t) && !t.starts_with("mcp__") {
            // A misspelt tool is a mistake, not a choice: strict validation refuses it.
            c.refuse_or_warn(
                Code::PieceUnknownTool,
                &format!("shared_tools[{i}]"),
                top.entry_line("shared_tools", i),
                format!("unknown tool \"{t}\" is dropped from every movement"),
                Some(suggest(t)),
            );
        }
    }
    let check_mcp = |name: &str, path: String, line: u32, c: &mut Checker| {
        if !name.starts_with("mcp__") {
            return;
        }
        match crate::mcp::pattern(name) {
            Err(why) => c.error(
                Code::PieceFormat,
                &path,
                line,
                why,
                Some("write mcp__SERVER__TOOL, mcp__SERVER__* or mcp__*".into()),
            ),
            Ok((Some(server), _)) if !piece.required_mcp.iter().any(|r| r == server) => c.error(
                Code::PieceUnknownTool,
                &path,
                line,
                format!("\"{name}\" names MCP server \"{server}\", which the piece's required_mcp does not list"),
                Some(format!("add {server} to required_mcp, or remove the tool")),
            ),
            Ok((None, _)) if piece.required_mcp.is_empty() => c.warn(
                Code::PieceUnknownTool,
                &path,
                line,
                "mcp__* matches no tool: the piece's required_mcp lists no server".into(),
                Some("list the servers the piece needs in required_mcp".into()),
            ),
            Ok(_) => {}
        }
    };
    for (i, t) in piece.shared_tools.iter().enumerate() {
        check_mcp(
            t,
            format!("shared_tools[{i}]"),
            top.entry_line("shared_tools", i),
            c,
        );
    }
    let no_fields = Fields::default();
    for (i, m) in piece.movements.iter().enumerate() {
        let f = movement_fields.get(i).unwrap_or(&no_fields);
        for (j, t) in m.allowed_tools.iter().enumerate() {
            let line = f.entry_line("allowed_tools", j);
            check_mcp(t, format!("movements[{i}].allowed_tools[{j}]"), line, c);
            if !is_known(t) && !t.starts_with("mcp__") {
                c.refuse_or_warn(
                    Code::PieceUnknownTool,
                    &format!("movements[{i}].allowed_tools[{j}]"),
                    line,
                    format!("unknown tool \"{t}\" is dropped"),
                    Some(suggest(t)),
                );
            } else if !m.edit && (t == "Write" || t == "Edit") {
                c.warn(
                    Code::PieceUnknownTool,
                    &format!("movements[{i}].allowed_tools[{j}]"),
                    line,
                    format!("\"{t}\" is removed because the movement has edit: false"),
                    Some("set edit: true, or remove the tool".into()),
                );
            }
        }
        let own_ssh = m.allowed_tools.iter().any(|t| is_ssh_tool(t));
        let shared_ssh = piece.shared_tools.iter().any(|t| is_ssh_tool(t));
        let has_connections = m
            .allowed_ssh_connections
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        if shared_ssh && !own_ssh && !has_connections {
            c.warn(
                Code::PieceSsh,
                &format!("movements[{i}]"),
                f.line,
                format!("movement \"{}\" gets SSH tools from shared_tools but declares no allowed_ssh_connections; they are rejected at run time (no_allowed_connections_declared)", m.name),
                Some("declare allowed_ssh_connections on the movement, or leave it as is to deny SSH here".into()),
            );
        }
        if m.allowed_commands.is_some() {
            let bash = m
                .allowed_tools
                .iter()
                .chain(&piece.shared_tools)
                .any(|t| t == "Bash");
            if !bash {
                c.warn(Code::PieceUnknownTool, &format!("movements[{i}].allowed_commands"), f.line_of("allowed_commands"), format!("movement \"{}\" has allowed_commands but no Bash tool; the patterns have no effect", m.name), Some("add Bash to allowed_tools".into()));
            }
        }
    }
}
