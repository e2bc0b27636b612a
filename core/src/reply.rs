//! The parsed form of an AgentScript v1 reply.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Every command and control directive of AgentScript v1.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandKind {
    Say,
    NewFile,
    UpdateFile,
    EditFile,
    DeleteFile,
    MoveFile,
    ReadFile,
    Mkdir,
    RunCommand,
    Ask,
    Commit,
    Next,
    Done,
    /// Extension: calls a tool of an MCP server (`@@mcp SERVER.TOOL`, `ARGS` as a JSON object).
    Mcp,
    /// Extension: runs a command on a registered SSH connection (`@@sshexec CONNECTION`, `CMD`).
    SshExec,
    /// Extension: copies a workspace file to a connection (`@@sshupload CONNECTION LOCAL TO REMOTE`).
    SshUpload,
    /// Extension: copies a remote file into the workspace (`@@sshdownload CONNECTION REMOTE TO LOCAL`).
    SshDownload,
}

/// Section (payload) names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SectionName {
    Msg,
    Content,
    Find,
    Replace,
    Cmd,
    To,
    /// An `@@mcp` call's arguments: one JSON object.
    Args,
}

/// Whether a section is required, optional or refused for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Required,
    Optional,
}

impl CommandKind {
    pub const ALL: [CommandKind; 13] = [
        CommandKind::Say,
        CommandKind::NewFile,
        CommandKind::UpdateFile,
        CommandKind::EditFile,
        CommandKind::DeleteFile,
        CommandKind::MoveFile,
        CommandKind::ReadFile,
        CommandKind::Mkdir,
        CommandKind::RunCommand,
        CommandKind::Ask,
        CommandKind::Commit,
        CommandKind::Next,
        CommandKind::Done,
    ];

    /// The extension commands (MCP and SSH tools): known only where the current piece movement's
    /// tools offer them; everywhere else they are unknown commands, as in AgentScript v1.
    pub const EXTENSIONS: [CommandKind; 4] = [
        CommandKind::Mcp,
        CommandKind::SshExec,
        CommandKind::SshUpload,
        CommandKind::SshDownload,
    ];

    #[must_use]
    pub const fn is_extension(self) -> bool {
        matches!(
            self,
            CommandKind::Mcp
                | CommandKind::SshExec
                | CommandKind::SshUpload
                | CommandKind::SshDownload
        )
    }

    /// The SSH extension commands.
    #[must_use]
    pub const fn is_ssh(self) -> bool {
        matches!(
            self,
            CommandKind::SshExec | CommandKind::SshUpload | CommandKind::SshDownload
        )
    }

    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            CommandKind::Say => "say",
            CommandKind::NewFile => "newfile",
            CommandKind::UpdateFile => "updatefile",
            CommandKind::EditFile => "editfile",
            CommandKind::DeleteFile => "deletefile",
            CommandKind::MoveFile => "movefile",
            CommandKind::ReadFile => "readfile",
            CommandKind::Mkdir => "mkdir",
            CommandKind::RunCommand => "runcommand",
            CommandKind::Ask => "ask",
            CommandKind::Commit => "commit",
            CommandKind::Next => "next",
            CommandKind::Done => "done",
            CommandKind::Mcp => "mcp",
            CommandKind::SshExec => "sshexec",
            CommandKind::SshUpload => "sshupload",
            CommandKind::SshDownload => "sshdownload",
        }
    }

    /// Case-insensitive lookup of a command name (without `@@`), extensions included.
    #[must_use]
    pub fn from_name(name: &str) -> Option<CommandKind> {
        let is = |k: &CommandKind| k.name().eq_ignore_ascii_case(name);
        CommandKind::ALL
            .iter()
            .find(|k| is(k))
            .or_else(|| CommandKind::EXTENSIONS.iter().find(|k| is(k)))
            .copied()
    }

    /// Position in the canonical order: AgentScript v1's commands, then the extensions.
    #[must_use]
    pub fn order(self) -> usize {
        CommandKind::ALL
            .into_iter()
            .chain(CommandKind::EXTENSIONS)
            .position(|k| k == self)
            .unwrap_or(usize::MAX)
    }

    /// Commands whose argument is a workspace path.
    #[must_use]
    pub const fn takes_path(self) -> bool {
        matches!(
            self,
            CommandKind::NewFile
                | CommandKind::UpdateFile
                | CommandKind::EditFile
                | CommandKind::DeleteFile
                | CommandKind::MoveFile
                | CommandKind::ReadFile
                | CommandKind::Mkdir
        )
    }

    /// `next` and `done` are control directives, not commands.
    #[must_use]
    pub const fn is_control(self) -> bool {
        matches!(self, CommandKind::Next | CommandKind::Done)
    }

    /// Whether the command counts toward the pace limit (say, next and done do not).
    #[must_use]
    pub const fn counts_toward_limit(self) -> bool {
        !matches!(
            self,
            CommandKind::Say | CommandKind::Next | CommandKind::Done
        )
    }

    /// Commands that change the workspace.
    #[must_use]
    pub const fn is_file_mutation(self) -> bool {
        matches!(
            self,
            CommandKind::NewFile
                | CommandKind::UpdateFile
                | CommandKind::EditFile
                | CommandKind::DeleteFile
                | CommandKind::MoveFile
                | CommandKind::Mkdir
        )
    }

    /// The sections this command accepts, in canonical order.
    #[must_use]
    pub const fn sections(self) -> &'static [(SectionName, Need)] {
        use Need::{Optional, Required};
        use SectionName::{Args, Cmd, Content, Find, Msg, Replace, To};
        match self {
            CommandKind::Say | CommandKind::Ask | CommandKind::Commit => &[(Msg, Required)],
            CommandKind::NewFile | CommandKind::UpdateFile => &[(Content, Required)],
            CommandKind::EditFile => &[(Find, Required), (Replace, Required)],
            CommandKind::MoveFile => &[(To, Required)],
            CommandKind::RunCommand | CommandKind::SshExec => &[(Cmd, Required)],
            CommandKind::Mcp => &[(Args, Optional)],
            CommandKind::SshUpload | CommandKind::SshDownload => &[],
            CommandKind::Next | CommandKind::Done => &[(Msg, Optional)],
            CommandKind::DeleteFile | CommandKind::ReadFile | CommandKind::Mkdir => &[],
        }
    }

    /// Options the command accepts on its `@@` line.
    #[must_use]
    pub const fn option_help(self) -> &'static str {
        match self {
            CommandKind::RunCommand => {
                "@@runcommand takes on_error=continue|stop and timeout=<seconds>"
            }
            CommandKind::Done => "@@done takes next=<movement> and status=success|aborted",
            CommandKind::SshExec => {
                "@@sshexec takes CONNECTION, then on_error=continue|stop and timeout=<seconds>"
            }
            CommandKind::Mcp => "@@mcp takes SERVER.TOOL and a timeout=<seconds>",
            CommandKind::SshUpload => "@@sshupload takes CONNECTION LOCAL TO REMOTE",
            CommandKind::SshDownload => "@@sshdownload takes CONNECTION REMOTE TO LOCAL",
            _ => "this command takes no options",
        }
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl SectionName {
    pub const ALL: [SectionName; 7] = [
        SectionName::Msg,
        SectionName::Content,
        SectionName::Find,
        SectionName::Replace,
        SectionName::Cmd,
        SectionName::To,
        SectionName::Args,
    ];

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SectionName::Msg => "MSG",
            SectionName::Content => "CONTENT",
            SectionName::Find => "FIND",
            SectionName::Replace => "REPLACE",
            SectionName::Cmd => "CMD",
            SectionName::To => "TO",
            SectionName::Args => "ARGS",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<SectionName> {
        SectionName::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for SectionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// runcommand's `on_error=` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    Continue,
    Stop,
}

/// done's `status=` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DoneStatus {
    Success,
    Aborted,
    /// The model needs the user's answer to go on (a piece's ASK).
    #[serde(rename = "needs_user_input")]
    NeedsUserInput,
}

impl DoneStatus {
    /// The option's spelling on the `@@done` line.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Aborted => "aborted",
            Self::NeedsUserInput => "needs_user_input",
        }
    }
}

/// Options given on a command's `@@` line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Options {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<DoneStatus>,
}

impl Options {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Options::default()
    }
}

/// One payload section. `text` is its lines joined with `\n`, without a final newline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    pub name: SectionName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    pub text: String,
    pub line: u32,
}

/// One block of the reply, numbered by its order in the reply (#1, #2, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Command {
    pub number: u32,
    pub kind: CommandKind,
    /// The normalised path for path commands.
    pub argument: Option<String>,
    pub options: Options,
    pub sections: Vec<Section>,
    pub line: u32,
}

impl Command {
    #[must_use]
    pub fn section(&self, name: SectionName) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    #[must_use]
    pub fn section_text(&self, name: SectionName) -> Option<&str> {
        self.section(name).map(|s| s.text.as_str())
    }

    /// A short description for a results header: the path, the command line, or the message.
    #[must_use]
    pub fn target(&self) -> String {
        let first_line = |name| {
            self.section_text(name)
                .and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
                .map(|l| crate::text::truncate_chars(l, 80))
                .unwrap_or_default()
        };
        let more_lines = || {
            let n = self
                .section_text(SectionName::Cmd)
                .map_or(0, |t| t.lines().filter(|l| !l.trim().is_empty()).count());
            match n {
                0 | 1 => String::new(),
                2 => " (+1 more line)".to_string(),
                n => format!(" (+{} more lines)", n - 1),
            }
        };
        match self.kind {
            CommandKind::MoveFile => format!(
                "{} -> {}",
                self.argument.as_deref().unwrap_or(""),
                first_line(SectionName::To)
            ),
            k if k.takes_path() => self.argument.clone().unwrap_or_default(),
            // A command line of several lines says so: a second line is never hidden behind a
            // harmless first one in a header or the audit trail.
            CommandKind::RunCommand => first_line(SectionName::Cmd) + &more_lines(),
            CommandKind::SshExec => format!(
                "{}: {}{}",
                self.argument.as_deref().unwrap_or(""),
                first_line(SectionName::Cmd),
                more_lines()
            ),
            CommandKind::SshUpload | CommandKind::SshDownload => match self.transfer() {
                Some(t) => format!("{}: {} -> {}", t.connection, t.from, t.to),
                None => self.argument.clone().unwrap_or_default(),
            },
            CommandKind::Mcp => self.argument.clone().unwrap_or_default(),
            _ => first_line(SectionName::Msg),
        }
    }

    /// An `@@sshupload` / `@@sshdownload` header, read back from its canonical argument
    /// (`CONNECTION FROM TO DEST`).
    #[must_use]
    pub fn transfer(&self) -> Option<Transfer<'_>> {
        if !matches!(self.kind, CommandKind::SshUpload | CommandKind::SshDownload) {
            return None;
        }
        let mut parts = self.argument.as_deref()?.split(' ');
        let (connection, from, to_word, to) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        (to_word == "TO" && parts.next().is_none()).then_some(Transfer {
            connection,
            from,
            to,
        })
    }

    /// An `@@mcp` call's server and tool (`SERVER.TOOL`).
    #[must_use]
    pub fn mcp_tool(&self) -> Option<(&str, &str)> {
        (self.kind == CommandKind::Mcp)
            .then(|| self.argument.as_deref()?.split_once('.'))
            .flatten()
    }

    /// The SSH connection (id or name) an SSH command names.
    #[must_use]
    pub fn connection(&self) -> Option<&str> {
        match self.kind {
            CommandKind::SshExec => self.argument.as_deref(),
            CommandKind::SshUpload | CommandKind::SshDownload => {
                self.transfer().map(|t| t.connection)
            }
            _ => None,
        }
    }
}

/// The parts of an SSH copy: for an upload `from` is the workspace path and `to` the remote one;
/// for a download the other way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer<'a> {
    pub connection: &'a str,
    pub from: &'a str,
    pub to: &'a str,
}

/// The control directive of a reply.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    Next,
    Done,
}

impl Control {
    /// The wire and store spelling: `next` or `done`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Next => "next",
            Self::Done => "done",
        }
    }

    /// Reads the wire and store spelling back.
    #[must_use]
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "next" => Some(Self::Next),
            "done" => Some(Self::Done),
            _ => None,
        }
    }
}

/// A parsed reply: its blocks in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reply {
    pub commands: Vec<Command>,
}

impl Reply {
    /// The reply's control directive: `done` when a done block is present, else `next` when a next
    /// block is, else none (the host treats a reply with commands and no directive as `next`).
    #[must_use]
    pub fn control(&self) -> Option<Control> {
        if self.commands.iter().any(|c| c.kind == CommandKind::Done) {
            Some(Control::Done)
        } else if self.commands.iter().any(|c| c.kind == CommandKind::Next) {
            Some(Control::Next)
        } else {
            None
        }
    }
}
