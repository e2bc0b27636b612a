//! Stable error codes (the seed's catalog) and the one diagnostic carrier every layer reports
//! problems in ([`Diagnostic`]).

use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

macro_rules! codes {
    ($($variant:ident => $text:literal, $meaning:literal;)*) => {
        /// Every failure keyless reports carries one of these stable codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $(#[doc = $meaning] $variant,)*
        }

        impl Code {
            /// Every code, in catalog order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The `KA_…` spelling.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)* }
            }

            /// The catalog's one-line meaning.
            #[must_use]
            pub const fn meaning(self) -> &'static str {
                match self { $(Code::$variant => $meaning,)* }
            }

            /// Looks a code up by its `KA_…` spelling.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Code> {
                match name { $($text => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    ParseUnknownCommand => "KA_PARSE_UNKNOWN_COMMAND", "@@ keyword is not a known command";
    ParseStrayText => "KA_PARSE_STRAY_TEXT", "non-whitespace text outside blocks (or inside a block, outside a payload)";
    ParseMissingEof => "KA_PARSE_MISSING_EOF", "reply does not end with @@eof";
    ParseTextAfterEof => "KA_PARSE_TEXT_AFTER_EOF", "non-whitespace text after @@eof";
    ParseUnterminatedBlock => "KA_PARSE_UNTERMINATED_BLOCK", "block opened without @@end";
    ParseMissingPayload => "KA_PARSE_MISSING_PAYLOAD", "required section (MSG/CONTENT/FIND/REPLACE/CMD) missing";
    ParseUnexpectedPayload => "KA_PARSE_UNEXPECTED_PAYLOAD", "section given to a command that does not take one";
    ParseMissingArgument => "KA_PARSE_MISSING_ARGUMENT", "path missing on a command that needs one";
    ParseBadMarker => "KA_PARSE_BAD_MARKER", "malformed <<< marker or unknown section name";
    ParseBadPath => "KA_PARSE_BAD_PATH", "path absolute, contains ../., or uses backslashes";
    ParseBadArgument => "KA_PARSE_BAD_ARGUMENT", "an MCP or SSH command's argument (SERVER.TOOL, CONNECTION, paths) or ARGS is malformed";
    ReplyEmpty => "KA_REPLY_EMPTY", "reply is empty";
    LimitResponseChars => "KA_LIMIT_RESPONSE_CHARS", "reply exceeds MaxResponseChars";
    LimitFileContentChars => "KA_LIMIT_FILE_CONTENT_CHARS", "one payload exceeds MaxFileContentChars";
    Timeout => "KA_TIMEOUT", "process exceeded its timeout";
    PathOutside => "KA_PATH_OUTSIDE", "resolved path escapes the workspace, or is inside .git/.agent";
    FileNotFound => "KA_FILE_NOT_FOUND", "target file does not exist";
    FileAlreadyExists => "KA_FILE_ALREADY_EXISTS", "newfile target exists";
    FindNotUnique => "KA_FIND_NOT_UNIQUE", "editfile FIND matched a number of times other than one";
    FileIo => "KA_FILE_IO", "file/backup I/O failure";
    CommandDenied => "KA_COMMAND_DENIED", "blocked by the command policy";
    CommandDeclined => "KA_COMMAND_DECLINED", "the user declined a confirmation";
    CommandFailed => "KA_COMMAND_FAILED", "command ran but exited non-zero";
    CommandNotFound => "KA_COMMAND_NOT_FOUND", "the program of a command does not exist on this machine";
    Cancelled => "KA_CANCELLED", "the command was cancelled by the user; partial output is kept";
    ParseBadOption => "KA_PARSE_BAD_OPTION", "unknown command option or option value";
    ParseConflictingControl => "KA_PARSE_CONFLICTING_CONTROL", "both @@next and @@done in one reply";
    ParseSayOnly => "KA_PARSE_SAY_ONLY", "reply contains only @@say and no control directive";
    BranchProtected => "KA_BRANCH_PROTECTED", "current branch matches a protected pattern";
    NotAGitRepository => "KA_NOT_A_GIT_REPOSITORY", "workspace is not a git repo";
    GitFailure => "KA_GIT_FAILURE", "a git command failed";
    GitNotInstalled => "KA_GIT_NOT_INSTALLED", "git is not installed";
    GitInitFailed => "KA_GIT_INIT_FAILED", "automatic repository initialization failed";
    BrowserConnectionFailed => "KA_BROWSER_CONNECTION_FAILED", "cannot attach to / launch Chrome";
    SelectorNotFound => "KA_SELECTOR_NOT_FOUND", "a required selector did not match";
    ReplyTimeout => "KA_REPLY_TIMEOUT", "no complete reply within the timeout";
    ReplyTruncated => "KA_REPLY_TRUNCATED", "reply stayed truncated longer than Browser.TruncationBudgetSeconds";
    ReplyIncomplete => "KA_REPLY_INCOMPLETE", "part of the reply could not be read from the page (a code editor that shows only its visible lines)";
    SendNotConfirmed => "KA_SEND_NOT_CONFIRMED", "the message could not be sent (not confirmed in the DOM)";
    AttachmentUploadFailed => "KA_ATTACHMENT_UPLOAD_FAILED", "file upload failed (falls back to pasting)";
    NetworkOffline => "KA_NETWORK_OFFLINE", "the machine is offline; nothing was uploaded or sent";
    ToolMissing => "KA_TOOL_MISSING", "a runcommand tool is listed as Missing in the environment";
    ComposerNotClean => "KA_COMPOSER_NOT_CLEAN", "the composer still holds stale text or attachment chips";
    ChatExhausted => "KA_CHAT_EXHAUSTED", "chat hit its length limit";
    ConfigInvalid => "KA_CONFIG_INVALID", "keyless.json/selectors.json is not valid JSON";
    ConfigValidation => "KA_CONFIG_VALIDATION", "a configuration value is out of range";
    SnapshotMissing => "KA_SNAPSHOT_MISSING", "a snapshot script or its output is missing";
    SnapshotRunFailed => "KA_SNAPSHOT_RUN_FAILED", "a snapshot script run failed";
    SessionNotFound => "KA_SESSION_NOT_FOUND", "no saved session (expected on first run)";
    Internal => "KA_INTERNAL", "unexpected internal failure (bug guard)";
    PieceYaml => "KA_PIECE_YAML", "a piece file is not valid YAML, or too large, too deep, or several documents";
    PieceMissingField => "KA_PIECE_MISSING_FIELD", "a required piece field is missing";
    PieceType => "KA_PIECE_TYPE", "a piece field has the wrong type";
    PieceFormat => "KA_PIECE_FORMAT", "a piece value has the wrong format (name, slug, connection id, positive integer)";
    PieceUnknownKey => "KA_PIECE_UNKNOWN_KEY", "a piece has a key the schema does not know";
    PieceReference => "KA_PIECE_REFERENCE", "initial_movement, rules[].next or default_next names no movement";
    PieceDuplicate => "KA_PIECE_DUPLICATE", "a movement name or a mapping key is given twice";
    PieceSentinel => "KA_PIECE_SENTINEL", "a terminal sentinel (COMPLETE/ABORT/ASK) where it is not allowed";
    PieceSsh => "KA_PIECE_SSH", "SSH tools without allowed_ssh_connections";
    PieceUnknownTool => "KA_PIECE_UNKNOWN_TOOL", "a tool name that is dropped (unknown, or removed by edit: false)";
    PieceUnreachable => "KA_PIECE_UNREACHABLE", "a movement no rule leads to";
    PieceTransition => "KA_PIECE_TRANSITION", "a directive the current movement's rules do not allow";
    AsSyntax => "KA_AS_SYNTAX", "an .as program does not parse: an unexpected token, an unterminated string, a bad character";
    AsLimit => "KA_AS_LIMIT", "an .as program is too large or nested too deeply";
    AsEntry => "KA_AS_ENTRY", "main agent / main func rules: more than one, or none where one is required";
    AsUse => "KA_AS_USE", "use of a binding that cannot enter a prompt (llm, tool, agent, memory, function)";
    AsName => "KA_AS_NAME", "an unknown or duplicate name in an .as program";
    AsImport => "KA_AS_IMPORT", "an import whose URI does not fit its kind, or a refused tool";
    AsImportCycle => "KA_AS_IMPORT_CYCLE", "agent imports between .as files form a cycle";
    AsRuntime => "KA_AS_RUNTIME", "an .as program failed while running: a wrong type, a missing field, an index out of range";
    AsShape => "KA_AS_SHAPE", "a value does not fit its shape (a generate answer after its attempts, or a function's input)";
    AsModel => "KA_AS_MODEL", "the model could not answer (provider error; not retried)";
    AsModelAuth => "KA_AS_MODEL_AUTH", "the model provider refused the key, or no key is set";
    AsModelNetwork => "KA_AS_MODEL_NETWORK", "the model provider could not be reached";
    AsModelTimeout => "KA_AS_MODEL_TIMEOUT", "the model provider did not answer in time";
    AsModelNotFound => "KA_AS_MODEL_NOT_FOUND", "the model provider does not know the model";
    AsMockExhausted => "KA_AS_MOCK_EXHAUSTED", "the scripted model (--mock) has no answer left for a model call";
    AsToolRefused => "KA_AS_TOOL_REFUSED", "an .as tool call refused: a program or shell, a secret-like name, a URL off the imported origin, a bad argument";
    AsMemory => "KA_AS_MEMORY", "an .as memory could not be read or written";
    AsEffect => "KA_AS_EFFECT", "a tool, memory or file the program uses failed or is not available";
    AsDepth => "KA_AS_DEPTH", "agent and function calls nested deeper than the limit (runaway recursion)";
    AsGenerate => "KA_AS_GENERATE", "generate without input, with an unknown option, or a bad shape";
    AsChatUnavailable => "KA_AS_CHAT_UNAVAILABLE", "keyless://chat: no keyless-host serve is running, or no chat tab answers programs (the keyless popup's \"Answer .as programs here\")";
    AsChatBusy => "KA_AS_CHAT_BUSY", "keyless://chat: the chat tab is in the middle of an AgentScript task, or serves another program";
    AsChatClosed => "KA_AS_CHAT_CLOSED", "keyless://chat: the chat tab was closed or left the chat while the model answered";
    AsCancelled => "KA_AS_CANCELLED", "the user cancelled the program while it waited for the model (Ctrl+C, the dashboard or the overlay)";
    SshNotDeclared => "KA_SSH_NOT_DECLARED", "no_allowed_connections_declared: the movement declares no allowed_ssh_connections";
    SshUnknown => "KA_SSH_UNKNOWN_CONNECTION", "no SSH connection is registered by that id or name";
    SshNotAllowed => "KA_SSH_NOT_ALLOWED", "the movement's allowed_ssh_connections does not list the connection";
    SshNotOwner => "KA_SSH_NOT_OWNER", "the SSH connection belongs to another local user";
    SshNotGranted => "KA_SSH_NOT_GRANTED", "the SSH connection is not granted to the piece";
    PieceNotFound => "KA_PIECE_NOT_FOUND", "no workspace piece by that name (built-in and user pieces are not changed through the API)";
    Unauthorized => "KA_UNAUTHORIZED", "a host API request the host does not accept: without a valid pairing token, or with a Host or Origin other than its own";
    HostUnreachable => "KA_HOST_UNREACHABLE", "keyless-host is not running or not reachable at the paired address";
    FileChanged => "KA_FILE_CHANGED", "the file changed on disk while the command ran; nothing was written";
    RateLimited => "KA_RATE_LIMITED", "too many failed attempts (pairing); wait before trying again";
    McpNotConfigured => "KA_MCP_NOT_CONFIGURED", "a piece requires an MCP server that keyless.json does not declare";
    McpUnavailable => "KA_MCP_UNAVAILABLE", "an MCP server could not be started or reached, or does not answer";
    McpUnknownTool => "KA_MCP_UNKNOWN_TOOL", "the MCP server has no tool by that name";
    McpToolFailed => "KA_MCP_TOOL_FAILED", "the MCP tool answered with an error";
    SshHostKey => "KA_SSH_HOST_KEY", "the SSH host key is unknown or changed; keyless never accepts one blindly";
    SshFailed => "KA_SSH_FAILED", "ssh could not connect or authenticate (exit 255)";
    GitProtected => "KA_GIT_PROTECTED", "a command changed files that steer git or keyless outside the sandbox (git's hooks, config or repository links, keyless.json); keyless put them back";
    WorkspaceRefused => "KA_WORKSPACE_REFUSED", "a folder keyless will not use as the workspace: it holds your home, your keyless config or /, or is keyless's own checkout, or none was chosen";
    BatchNotFound => "KA_BATCH_NOT_FOUND", "no batch with that id in this workspace (`keyless-host undo --list` shows them)";
    LaunchRefused => "KA_LAUNCH_REFUSED", "keyless will not start a program for you outside the sandbox (git, ssh, a version probe, an MCP server, the browser) that is, runs or reads something the model can write; nothing started";
    LimitProcesses => "KA_LIMIT_PROCESSES", "a command started more processes than Commands.MaxProcesses allows; it and everything it started were stopped";
    LimitMemory => "KA_LIMIT_MEMORY", "a command used more memory than Commands.MaxMemoryMiB allows; it was stopped";
    UndoRefused => "KA_UNDO_REFUSED", "a batch cannot be undone: it was undone already, or a later commit recorded its files (revert the commit instead)";
    ChatLimited => "KA_CHAT_LIMITED", "the chat site's usage limit was reached";
    SessionMoved => "KA_SESSION_MOVED", "the session continues in another chat; a reply from the old chat runs nothing";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Code::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown code \"{name}\"")))
    }
}

/// A failure as the browser's parts pass it to each other: the extension's worker answers its
/// content scripts, popup and options page with it, and the wasm core attaches it to what it
/// throws. The receiver reads the code from here, never from the text; views show the code, then
/// the message (the `Display` form, `KA_… message`).
///
/// - `code`: the stable `KA_…` code (serialised by its name);
/// - `message`: what failed, in the words shown after the code;
/// - `key`: the setting or selector key the failure is about, when the user can fix that one
///   (a selector key offers "Pick it");
/// - `help`: how to fix it, when the finder knows.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    #[cfg_attr(feature = "ts", ts(type = "Code"))]
    pub code: Code,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub help: Option<String>,
}

impl WireError {
    #[must_use]
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            key: None,
            help: None,
        }
    }
}

impl fmt::Display for WireError {
    /// `KA_… message`: how every view shows a failure.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

/// How serious a diagnostic is: an error refuses (the reply, the piece, the program); a warning is
/// shown and refuses nothing.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

/// A 1-based line and column (the column in characters).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// The one diagnostic carrier of keyless, whatever found the problem: a reply's parser and
/// validator, a piece's validator, an `.as` program's parser, analyser or interpreter. Every
/// renderer reads this (the terminal's rustc-style snippet, the overlay, the playground, the
/// language server), so a problem reads the same wherever it is shown.
///
/// - `code`: the stable `KA_…` code (serialised by its name);
/// - `severity`: an error refuses, a warning does not;
/// - `file`: the file as the user named it, when the problem is in one;
/// - `line`, `column`: where it starts (1-based; the column in characters). A line without a
///   column means the whole line;
/// - `end`: where it ends (exclusive) when the finder knows; renderers otherwise underline the
///   word at the start;
/// - `key`: the place by the document's own keys, for structured documents (a piece's
///   `movements[1].rules[0].next`);
/// - `message`, `help`: what is wrong and how to fix it;
/// - `notes`: more context, in order (the agent and function stack of a run-time failure).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    #[cfg_attr(feature = "ts", ts(type = "Code"))]
    pub code: Code,
    #[serde(default)]
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub file: Option<String>,
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub column: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub end: Option<Pos>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub key: Option<String>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub help: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<String>>", optional))]
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error on a line (or on none).
    #[must_use]
    pub fn new(code: Code, line: Option<u32>, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: Severity::Error,
            file: None,
            line,
            column: None,
            end: None,
            key: None,
            message: message.into(),
            help: None,
            notes: Vec::new(),
        }
    }

    /// An error at a line and column.
    #[must_use]
    pub fn at(code: Code, pos: Pos, message: impl Into<String>) -> Self {
        let mut d = Self::new(code, Some(pos.line), message);
        d.column = Some(pos.column);
        d
    }

    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    #[must_use]
    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    #[must_use]
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    #[must_use]
    pub fn with_end(mut self, end: Pos) -> Self {
        self.end = Some(end);
        self
    }

    /// Where it starts, when it has a line and a column.
    #[must_use]
    pub fn pos(&self) -> Option<Pos> {
        Some(Pos {
            line: self.line?,
            column: self.column?,
        })
    }

    /// The line, or 0 when it has none (for sorting and for views that need a number).
    #[must_use]
    pub fn line_or_zero(&self) -> u32 {
        self.line.unwrap_or(0)
    }

    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The byte range of `source` the diagnostic points at: from its line and column to its `end`,
    /// or the word (or the one character) at the column, or the whole line without its
    /// indentation when it has no column. `None` when it has no line or the line is past the end.
    /// The terminal renderer and the language server both underline this.
    #[must_use]
    pub fn byte_range(&self, source: &str) -> Option<std::ops::Range<usize>> {
        let line = self.line.filter(|l| *l > 0)?;
        let (line_start, text) = line_text(source, line)?;
        let Some(column) = self.column.filter(|c| *c > 0) else {
            let start = text.len() - text.trim_start().len();
            let end = text
                .trim_end()
                .len()
                .max(start + usize::from(!text.is_empty()))
                .min(text.len());
            return Some(line_start + start..line_start + end);
        };
        let start = line_start + char_offset(text, column);
        if let Some(end) = self.end.filter(|e| (e.line, e.column) > (line, column)) {
            if let Some((end_start, end_text)) = line_text(source, end.line) {
                let end = end_start + char_offset(end_text, end.column);
                return Some(start..end.max(start));
            }
        }
        let rest = &source[start..line_start + text.len()];
        let word = rest
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(rest.len(), |(i, _)| i);
        let len = if word == 0 {
            rest.chars().next().map_or(0, char::len_utf8)
        } else {
            word
        };
        Some(start..start + len)
    }
}

/// The byte offset where 1-based `line` starts, and its text without the line break.
fn line_text(source: &str, line: u32) -> Option<(usize, &str)> {
    let mut start = 0;
    for _ in 1..line {
        start += source[start..].find('\n')? + 1;
    }
    let text = &source[start..];
    let text = &text[..text.find('\n').unwrap_or(text.len())];
    Some((start, text.strip_suffix('\r').unwrap_or(text)))
}

/// The byte offset of 1-based character `column` in `text` (its end when the column is past it).
fn char_offset(text: &str, column: u32) -> usize {
    let col = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
    text.char_indices().nth(col).map_or(text.len(), |(i, _)| i)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: ")?,
            (Some(line), None) => write!(f, "line {line}: ")?,
            _ => {}
        }
        if self.severity == Severity::Warning {
            f.write_str("warning: ")?;
        }
        write!(f, "{} {}", self.code, self.message)?;
        if let Some(help) = &self.help {
            write!(f, " (help: {help})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_is_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            assert!(code.as_str().starts_with("KA_"));
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert_eq!(Code::from_name(code.as_str()), Some(*code));
            assert!(!code.meaning().is_empty());
        }
        assert_eq!(Code::from_name("KA_NOPE"), None);
    }
}
