//! Every diagnostic the reply parser reports, one constructor each: the code, the message and the
//! help are written here and nowhere else, so the whole vocabulary a model is corrected with reads
//! in one place (as oxc keeps its diagnostics beside the parser).

use crate::config::Limits;
use crate::diag::{Code, Diagnostic};
use crate::reply::{CommandKind, DoneStatus, SectionName};
use crate::text::quote;

const SECTION_HELP: &str =
    "Sections are <<<MSG, <<<CONTENT, <<<FIND, <<<REPLACE, <<<CMD or <<<TO on a line of their own, optionally with a nonce such as <<<CONTENT:x7, and close with MSG>>> (or CONTENT:x7>>>).";
const SPLIT_HELP: &str = "Split the work across several smaller responses.";

/// KA_REPLY_EMPTY.
pub(super) fn reply_empty() -> Diagnostic {
    Diagnostic::new(Code::ReplyEmpty, None, "The response is empty.")
        .with_help("Reply with AgentScript v1 blocks ending in @@eof.")
}

/// KA_LIMIT_RESPONSE_CHARS, counted: the response has `n` characters.
pub(super) fn response_too_long(n: usize, limits: &Limits) -> Diagnostic {
    Diagnostic::new(
        Code::LimitResponseChars,
        None,
        format!(
            "The response has {n} characters; the limit is {}.",
            limits.max_response_chars
        ),
    )
    .with_help(SPLIT_HELP)
}

/// KA_LIMIT_RESPONSE_CHARS, not counted: a reader stopped after `bytes` bytes, which already hold
/// more characters than the limit allows.
#[must_use]
pub fn response_over_limit_bytes(bytes: usize, limits: &Limits) -> Diagnostic {
    Diagnostic::new(
        Code::LimitResponseChars,
        None,
        format!(
            "The response has more than {} characters (over {bytes} bytes); the limit is {}.",
            limits.max_response_chars, limits.max_response_chars
        ),
    )
    .with_help(SPLIT_HELP)
}

/// KA_PARSE_STRAY_TEXT: a `<<<` marker with no block open.
pub(super) fn section_marker_outside_block(line: u32, marker: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseStrayText,
        Some(line),
        format!("Section marker {} outside a block.", quote(marker)),
    )
    .with_help("Open a block first, for example @@newfile path, then its sections, then @@end.")
}

/// KA_PARSE_BAD_MARKER: a `>>>` line with no section open.
pub(super) fn closer_without_opener(line: u32, marker: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseBadMarker,
        Some(line),
        format!(
            "Closing marker {} without a matching opening marker.",
            quote(marker)
        ),
    )
    .with_help(SECTION_HELP)
}

/// KA_PARSE_BAD_MARKER: a `<<<` marker whose name or nonce is wrong.
pub(super) fn malformed_marker(line: u32, rest: &str, problem: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseBadMarker,
        Some(line),
        format!(
            "Malformed section marker {}: {problem}.",
            quote(&format!("<<<{rest}"))
        ),
    )
    .with_help(SECTION_HELP)
}

/// KA_PARSE_TEXT_AFTER_EOF: lines after `@@eof` (`more` counts the others).
pub(super) fn text_after_eof(line: u32, text: &str, more: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseTextAfterEof,
        Some(line),
        format!("Text after \"@@eof\": {}{more}.", quote(text)),
    )
    .with_help("@@eof must be the last line of the response.")
}

/// KA_PARSE_TEXT_AFTER_EOF: text on the `@@eof` line itself.
pub(super) fn text_on_eof_line(line: u32, rest: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseTextAfterEof,
        Some(line),
        format!("Text after \"@@eof\" on the same line: {}.", quote(rest)),
    )
    .with_help("@@eof stands alone on the last line.")
}

/// A stray line inside a block, between its sections.
pub(super) fn text_outside_section(
    code: Code,
    line: u32,
    kind: CommandKind,
    text: &str,
    more: &str,
) -> Diagnostic {
    let help = match kind.sections().first() {
        Some((name, _)) => {
            format!("Put it between <<<{name} and {name}>>>, each on a line of its own.")
        }
        None => format!("@@{kind} takes no sections; close it with @@end."),
    };
    Diagnostic::new(
        code,
        Some(line),
        format!(
            "Text inside the @@{kind} block but outside a section: {}{more}.",
            quote(text)
        ),
    )
    .with_help(help)
}

/// A stray line outside every block.
pub(super) fn text_outside_blocks(code: Code, line: u32, text: &str, more: &str) -> Diagnostic {
    Diagnostic::new(
        code,
        Some(line),
        format!("Text outside blocks: {}{more}.", quote(text)),
    )
    .with_help("Write everything inside blocks; talk to the user only with @@say.")
}

/// KA_PARSE_STRAY_TEXT: an `@@end` with no block open.
pub(super) fn end_without_block(line: u32) -> Diagnostic {
    Diagnostic::new(
        Code::ParseStrayText,
        Some(line),
        "\"@@end\" without an open block.",
    )
    .with_help("Every @@end closes the block opened just before it; remove the extra one.")
}

/// The commands a model may write here, as the help of an unknown command lists them:
/// AgentScript v1's, then the extension commands the current piece movement offers.
fn command_list(offered: &[CommandKind]) -> String {
    CommandKind::ALL
        .iter()
        .chain(
            CommandKind::EXTENSIONS
                .iter()
                .filter(|k| offered.contains(k)),
        )
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// KA_PARSE_UNKNOWN_COMMAND, with the nearest command name when one is close.
pub(super) fn unknown_command(
    line: u32,
    shown: &str,
    suggestion: Option<&str>,
    offered: &[CommandKind],
) -> Diagnostic {
    let list = command_list(offered);
    let d = Diagnostic::new(
        Code::ParseUnknownCommand,
        Some(line),
        format!("Unknown command \"@@{shown}\"."),
    );
    match suggestion {
        Some(s) => d.with_help(format!("Did you mean \"@@{s}\"? Commands: {list}.")),
        None => d.with_help(format!("Commands: {list}.")),
    }
}

/// KA_PARSE_MISSING_ARGUMENT: a path command without its path.
pub(super) fn missing_path(line: u32, kind: CommandKind) -> Diagnostic {
    Diagnostic::new(
        Code::ParseMissingArgument,
        Some(line),
        format!("\"@@{kind}\" needs a path."),
    )
    .with_help(format!(
        "Write the path on the same line: @@{kind} src/example.txt"
    ))
}

/// KA_PARSE_BAD_ARGUMENT: an extension command's argument (server and tool, connection, paths)
/// or an `@@mcp` call's `ARGS`.
pub(super) fn bad_argument(line: u32, kind: CommandKind, problem: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseBadArgument,
        Some(line),
        format!("Bad argument on \"@@{kind}\": {problem}."),
    )
    .with_help(format!("{}.", kind.option_help()))
}

/// KA_PARSE_BAD_PATH.
pub(super) fn bad_path(line: u32, path: &str, problem: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseBadPath,
        Some(line),
        format!("Bad path {}: {problem}.", quote(path)),
    )
    .with_help("Paths are relative to the workspace root, use /, and stay out of .git and .agent.")
}

/// KA_PARSE_BAD_OPTION: one `key=value` on a command line.
pub(super) fn bad_option(line: u32, kind: CommandKind, problem: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ParseBadOption,
        Some(line),
        format!("Bad option on \"@@{kind}\": {problem}."),
    )
    .with_help(format!("{}.", kind.option_help()))
}

/// KA_PARSE_BAD_OPTION: `@@done` with both `next=` and `status=aborted`.
pub(super) fn done_next_and_status(line: u32, status: DoneStatus) -> Diagnostic {
    let status = status.as_str();
    Diagnostic::new(
        Code::ParseBadOption,
        Some(line),
        format!(
            "Bad option on \"@@done\": next=<movement> cannot be combined with status={status}."
        ),
    )
    .with_help(format!(
        "Use either @@done next=<movement> or @@done status={status}."
    ))
}

/// KA_PARSE_UNEXPECTED_PAYLOAD: a section the command does not take.
pub(super) fn section_not_taken(line: u32, kind: CommandKind, name: SectionName) -> Diagnostic {
    let takes = match kind.sections() {
        [] => format!("@@{kind} takes no sections."),
        list => format!(
            "@@{kind} takes {}.",
            list.iter()
                .map(|(n, _)| format!("<<<{n}"))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    };
    Diagnostic::new(
        Code::ParseUnexpectedPayload,
        Some(line),
        format!("\"@@{kind}\" does not take a <<<{name} section."),
    )
    .with_help(takes)
}

/// KA_PARSE_UNEXPECTED_PAYLOAD: a section given twice in one block.
pub(super) fn section_twice(line: u32, kind: CommandKind, name: SectionName) -> Diagnostic {
    Diagnostic::new(
        Code::ParseUnexpectedPayload,
        Some(line),
        format!("\"@@{kind}\" has a second <<<{name} section."),
    )
    .with_help("Give each section once per block.")
}

/// KA_LIMIT_FILE_CONTENT_CHARS: one section over the payload limit.
pub(super) fn section_too_long(
    line: u32,
    name: SectionName,
    kind: Option<CommandKind>,
    n: usize,
    limits: &Limits,
) -> Diagnostic {
    let of = kind.map_or_else(String::new, |k| format!(" of \"@@{k}\""));
    Diagnostic::new(
        Code::LimitFileContentChars,
        Some(line),
        format!(
            "The {name} section{of} has {n} characters; the limit is {}.",
            limits.max_file_content_chars
        ),
    )
    .with_help("Write the file in parts: @@newfile with the first part, then @@editfile to add the rest in later responses.")
}

/// KA_PARSE_MISSING_PAYLOAD: a required section is missing.
pub(super) fn missing_section(line: u32, kind: CommandKind, name: SectionName) -> Diagnostic {
    Diagnostic::new(
        Code::ParseMissingPayload,
        Some(line),
        format!("\"@@{kind}\" needs a <<<{name} section."),
    )
    .with_help(format!("Add <<<{name} … {name}>>> before @@end."))
}

/// KA_PARSE_MISSING_PAYLOAD: a section that must hold something is blank.
pub(super) fn empty_section(line: u32, kind: CommandKind, name: SectionName) -> Diagnostic {
    Diagnostic::new(
        Code::ParseMissingPayload,
        Some(line),
        format!("The <<<{name} section of \"@@{kind}\" is empty."),
    )
    .with_help(match name {
        SectionName::Find => "FIND must hold the exact lines to replace.",
        SectionName::Cmd => "CMD must hold the command line to run.",
        SectionName::To => "TO must hold the destination path.",
        _ => "Write the message inside the section.",
    })
}

/// KA_PARSE_UNTERMINATED_BLOCK: a block with no `@@end` (before the next block, when one follows).
pub(super) fn unterminated_block(
    line: u32,
    kind: CommandKind,
    next_block: Option<u32>,
) -> Diagnostic {
    let before = next_block
        .map(|n| format!(" before line {n}"))
        .unwrap_or_default();
    Diagnostic::new(
        Code::ParseUnterminatedBlock,
        Some(line),
        format!("The \"@@{kind}\" block opened at line {line} has no \"@@end\"{before}."),
    )
    .with_help("Close every block with a line @@end.")
}

/// KA_PARSE_UNTERMINATED_BLOCK: a section never closed; `near` is the line that looked like its
/// closing marker, when there is one.
pub(super) fn unclosed_section(
    line: u32,
    closer: &str,
    nonce: Option<&str>,
    near: Option<(u32, &str)>,
) -> Diagnostic {
    let nonce = nonce.map(|n| format!(":{n}")).unwrap_or_default();
    let expected = format!("{closer}{nonce}>>>");
    let d = Diagnostic::new(
        Code::ParseUnterminatedBlock,
        Some(line),
        format!(
            "The section \"<<<{closer}{nonce}\" opened at line {line} is never closed with \"{expected}\"."
        ),
    );
    match near {
        Some((near, text)) => d.with_help(format!(
            "Line {near} ({}) is not the closing marker; write exactly {expected} on a line of its own.",
            quote(text)
        )),
        None => d.with_help(format!("Close the section with {expected} on a line of its own.")),
    }
}

/// KA_PARSE_CONFLICTING_CONTROL: both `@@next` and `@@done`.
pub(super) fn conflicting_control(next: u32, done: u32) -> Diagnostic {
    Diagnostic::new(
        Code::ParseConflictingControl,
        Some(next.max(done)),
        format!("Both \"@@next\" (line {next}) and \"@@done\" (line {done}) in one response."),
    )
    .with_help("End with exactly one control directive: @@next to continue, or @@done to finish.")
}

/// KA_PARSE_MISSING_EOF; a reply that ends inside a block or payload looks truncated.
pub(super) fn missing_eof(truncated: bool) -> Diagnostic {
    if truncated {
        Diagnostic::new(
            Code::ParseMissingEof,
            None,
            "Missing \"@@eof\" at the end (the response looks truncated).",
        )
    } else {
        Diagnostic::new(Code::ParseMissingEof, None, "Missing \"@@eof\" at the end.")
            .with_help("End every response with a line @@eof.")
    }
}

/// KA_PARSE_SAY_ONLY.
pub(super) fn say_only() -> Diagnostic {
    Diagnostic::new(
        Code::ParseSayOnly,
        None,
        "The response has no command and no control directive (only @@say or nothing).",
    )
    .with_help("Add the commands to run, and end with @@next to continue or @@done to finish.")
}
