//! Stable error codes (the seed's catalog) and diagnostics: code + 1-based line + message + help.

use serde::{Serialize, Serializer};
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
    Unauthorized => "KA_UNAUTHORIZED", "a host API request without a valid pairing token";
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
    UndoRefused => "KA_UNDO_REFUSED", "a batch cannot be undone: it was undone already, or a later commit recorded its files (revert the commit instead)";
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

impl<'de> serde::Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Code::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown code \"{name}\"")))
    }
}

/// One problem found in a reply: a code, the 1-based line of the reply as received (when the
/// problem has one), a message for the model, and an optional hint on how to fix it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// `KA_…` (serialised by its name).
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub code: Code,
    pub line: Option<u32>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub help: Option<String>,
}

impl Diagnostic {
    #[must_use]
    pub fn new(code: Code, line: Option<u32>, message: impl Into<String>) -> Self {
        Self {
            code,
            line,
            message: message.into(),
            help: None,
        }
    }

    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {} {}", self.code, self.message)?,
            None => write!(f, "{} {}", self.code, self.message)?,
        }
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
