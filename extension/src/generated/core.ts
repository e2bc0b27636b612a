// Generated from keyless-core's Rust types by `cargo xtask contract`. Do not edit.

export type Code = "KA_PARSE_UNKNOWN_COMMAND" | "KA_PARSE_STRAY_TEXT" | "KA_PARSE_MISSING_EOF" | "KA_PARSE_TEXT_AFTER_EOF" | "KA_PARSE_UNTERMINATED_BLOCK" | "KA_PARSE_MISSING_PAYLOAD" | "KA_PARSE_UNEXPECTED_PAYLOAD" | "KA_PARSE_MISSING_ARGUMENT" | "KA_PARSE_BAD_MARKER" | "KA_PARSE_BAD_PATH" | "KA_PARSE_BAD_ARGUMENT" | "KA_REPLY_EMPTY" | "KA_LIMIT_RESPONSE_CHARS" | "KA_LIMIT_FILE_CONTENT_CHARS" | "KA_TIMEOUT" | "KA_PATH_OUTSIDE" | "KA_FILE_NOT_FOUND" | "KA_FILE_ALREADY_EXISTS" | "KA_FIND_NOT_UNIQUE" | "KA_FILE_IO" | "KA_COMMAND_DENIED" | "KA_COMMAND_DECLINED" | "KA_COMMAND_FAILED" | "KA_COMMAND_NOT_FOUND" | "KA_CANCELLED" | "KA_PARSE_BAD_OPTION" | "KA_PARSE_CONFLICTING_CONTROL" | "KA_PARSE_SAY_ONLY" | "KA_BRANCH_PROTECTED" | "KA_NOT_A_GIT_REPOSITORY" | "KA_GIT_FAILURE" | "KA_GIT_NOT_INSTALLED" | "KA_GIT_INIT_FAILED" | "KA_BROWSER_CONNECTION_FAILED" | "KA_SELECTOR_NOT_FOUND" | "KA_REPLY_TIMEOUT" | "KA_REPLY_TRUNCATED" | "KA_REPLY_INCOMPLETE" | "KA_SEND_NOT_CONFIRMED" | "KA_ATTACHMENT_UPLOAD_FAILED" | "KA_NETWORK_OFFLINE" | "KA_TOOL_MISSING" | "KA_COMPOSER_NOT_CLEAN" | "KA_CHAT_EXHAUSTED" | "KA_CONFIG_INVALID" | "KA_CONFIG_VALIDATION" | "KA_SNAPSHOT_MISSING" | "KA_SNAPSHOT_RUN_FAILED" | "KA_SESSION_NOT_FOUND" | "KA_INTERNAL" | "KA_PIECE_YAML" | "KA_PIECE_MISSING_FIELD" | "KA_PIECE_TYPE" | "KA_PIECE_FORMAT" | "KA_PIECE_UNKNOWN_KEY" | "KA_PIECE_REFERENCE" | "KA_PIECE_DUPLICATE" | "KA_PIECE_SENTINEL" | "KA_PIECE_SSH" | "KA_PIECE_UNKNOWN_TOOL" | "KA_PIECE_UNREACHABLE" | "KA_PIECE_TRANSITION" | "KA_AS_SYNTAX" | "KA_AS_LIMIT" | "KA_AS_ENTRY" | "KA_AS_USE" | "KA_AS_NAME" | "KA_AS_IMPORT" | "KA_AS_IMPORT_CYCLE" | "KA_AS_RUNTIME" | "KA_AS_SHAPE" | "KA_AS_MODEL" | "KA_AS_MODEL_AUTH" | "KA_AS_MODEL_NETWORK" | "KA_AS_MODEL_TIMEOUT" | "KA_AS_MODEL_NOT_FOUND" | "KA_AS_MOCK_EXHAUSTED" | "KA_AS_TOOL_REFUSED" | "KA_AS_MEMORY" | "KA_AS_EFFECT" | "KA_AS_DEPTH" | "KA_AS_GENERATE" | "KA_AS_CHAT_UNAVAILABLE" | "KA_AS_CHAT_BUSY" | "KA_AS_CHAT_CLOSED" | "KA_AS_CANCELLED" | "KA_SSH_NOT_DECLARED" | "KA_SSH_UNKNOWN_CONNECTION" | "KA_SSH_NOT_ALLOWED" | "KA_SSH_NOT_OWNER" | "KA_SSH_NOT_GRANTED" | "KA_PIECE_NOT_FOUND" | "KA_UNAUTHORIZED" | "KA_HOST_UNREACHABLE" | "KA_FILE_CHANGED" | "KA_RATE_LIMITED" | "KA_MCP_NOT_CONFIGURED" | "KA_MCP_UNAVAILABLE" | "KA_MCP_UNKNOWN_TOOL" | "KA_MCP_TOOL_FAILED" | "KA_SSH_HOST_KEY" | "KA_SSH_FAILED" | "KA_GIT_PROTECTED" | "KA_WORKSPACE_REFUSED" | "KA_BATCH_NOT_FOUND" | "KA_LAUNCH_REFUSED" | "KA_LIMIT_PROCESSES" | "KA_LIMIT_MEMORY" | "KA_UNDO_REFUSED" | "KA_CHAT_LIMITED" | "KA_SESSION_MOVED";

export type Mode = "Ask" | "AutoSafe" | "Auto";

export type Pace = "Step" | "Balanced" | "Batch";

export type Settings = { hostUrl: string, mode: Mode, pace: Pace, 
/**
 * No piece: a plain session.
 */
piece: string, autoSend: boolean, truncationBudgetSeconds: number, replyTimeoutSeconds: number, 
/**
 * JSON text of selector overrides keyed by site id; empty for none.
 */
selectorOverrides: string, 
/**
 * Suggest continuing in a new chat when a thread passes its site's `long_thread_chars`.
 */
suggestNewChat: boolean, };

export type Selectors = { assistant_message: string[], assistant_content?: string[], user_message: string[], streaming: string[], 
/**
 * Matches the newest reply (or something inside it, or around it) once the site shows it is
 * complete (AI Studio's footer with its thumb-up): until then the reply counts as streaming.
 */
reply_done?: string[], composer: string[], send_button: string[], file_input?: string[], attachment_chip?: string[], 
/**
 * Never read as reply text: author labels, screen-reader headings, "thinking" panels, the
 * user's own message. Every alternative applies (with [`COMMON_IGNORE`]).
 */
ignore?: string[], };

export type ComposerKind = "prosemirror" | "quill" | "textarea" | "lexical" | "tiptap";

export type SiteAdapter = { id: string, name: string, hosts: Array<string>, composer_kind: ComposerKind, max_paste_chars: number, selectors: Selectors, 
/**
 * Text the site shows when the chat is full (its length limit), matched in the page's
 * visible text outside the messages: KA_CHAT_EXHAUSTED.
 */
exhausted_phrases: Array<string>, 
/**
 * Text the site shows when the account's usage limit is reached, matched the same way:
 * KA_CHAT_LIMITED.
 */
limited_phrases: Array<string>, 
/**
 * The size of a thread (the characters sent and read in one chat) past which keyless
 * suggests continuing in a new chat, before the site says it is full: models lose track
 * of the task in long threads. 0: never.
 */
long_thread_chars: number, };

export type Severity = "error" | "warning";

export type Pos = { line: number, column: number, };

export type Diagnostic = { code: Code, severity: Severity, file?: string, line: number | null, column?: number, end?: Pos, key?: string, message: string, help?: string, notes?: Array<string>, };

export type WireError = { code: Code, message: string, key?: string, help?: string, };

export type Tier = "ReadOnly" | "Build" | "Execute" | "Risky" | "Denied";

export type Decision = "run" | "confirm" | "deny";

export type SegmentVerdict = { text: string, tier: Tier, reason: string, };

export type Verdict = { tier: Tier, decision: Decision, 
/**
 * The deciding reason, e.g. "redirection writes a file (out.txt)", prefixed with the
 * command it is about when the line has several (`` `echo hi > out.txt`: … ``).
 */
reason: string, segments: Array<SegmentVerdict>, };

export type Untrusted = { name: string, 
/**
 * Where the shell would find it.
 */
path: string, };

export type PathDir = { 
/**
 * Workspace-relative (`.venv/bin`), or the entry as PATH holds it when `relative`.
 */
dir: string, 
/**
 * A relative entry: the folder depends on where the shell is.
 */
relative: boolean, };

export type RuleKind = "exact" | "like";

export type AllowRule = { 
/**
 * `exact`: the whole line, as approved. `like`: an allow-list pattern (words, `*`).
 */
kind: RuleKind, text: string, 
/**
 * The tier of the line the user approved: the rule covers nothing rated higher.
 */
tier: Tier, };

export type AllowOffer = { exact: AllowRule, like: AllowRule | null, };

export type Context = { 
/**
 * Programs the shell would take from a folder the model can write.
 */
untrusted: Array<Untrusted>, 
/**
 * Workspace files (workspace-relative) that steer a program ([`steering`]): while one
 * exists, that program is at least Execute.
 */
steering: Array<string>, 
/**
 * Workspace symlinks (workspace-relative) that lead out of the workspace: a path through
 * one is read outside it ([`reads`]).
 */
links_out: Array<string>, 
/**
 * The host could not list or resolve every symlink of the workspace (too many, too deep,
 * built to slow it down): every relative path a read names is then judged as possibly
 * leading out.
 */
links_unknown: boolean, 
/**
 * The workspace holds symlinks (of any kind): a `..` after one climbs from where it leads,
 * so a read whose path has a `..` is judged as possibly leading out.
 */
links_any: boolean, 
/**
 * What the user said to always allow in this workspace ([`always`]): the host reads it from
 * the user's config folder.
 */
always: Array<AllowRule>, 
/**
 * The host's steering list is not whole (more files than it lists, or a workspace too deep
 * or too large to look through): every program a file can steer is then at least Execute.
 */
steering_unknown: boolean, 
/**
 * The host could not list every program of the PATH folders the model can write: every
 * program is then judged as possibly the model's.
 */
untrusted_unknown: boolean, 
/**
 * PATH folders the model can write: inside the workspace (workspace-relative), or relative
 * entries (`node_modules/.bin`, `.`) that the shell looks up from whatever folder it is in.
 */
path_dirs: Array<PathDir>, 
/**
 * The folder git's `core.hooksPath` names, workspace-relative, when it is in the workspace.
 */
hooks_path: string | null, 
/**
 * The host's git guard cannot look through the whole workspace (more entries than it
 * reads): what a command does to git's files there goes unchecked, so every command is
 * confirmed (at least Risky).
 */
unguarded: boolean, 
/**
 * The folders the guard cannot look into (their permissions keep it from listing them, or
 * their names are not UTF-8), the first few: while one is there, every command is
 * confirmed, and the reason names it.
 */
unguarded_folders: Array<string>, 
/**
 * The user's own configuration files (`~/.gitconfig`, `~/.bashrc`, …) that are links into
 * the workspace, workspace-relative: a write to one is refused by the host, and judged here
 * as a file the user's tools run.
 */
linked_config: Array<string>, };

export type Change = "added" | "modified" | "deleted" | "moved";

export type FileDiff = { 
/**
 * The file's path now (for a deleted file, the path it had).
 */
path: string, 
/**
 * Where a moved file was.
 */
from: string | null, change: Change, 
/**
 * Lines added and removed (0 when the diff was not computed, see `note`).
 */
added: number, removed: number, 
/**
 * The unified diff (`--- a/…`, `+++ b/…`, hunks), bounded to [`MAX_DIFF_LINES`] lines.
 */
text: string, 
/**
 * Why there are no lines to show, or why they stop: a binary file, a file too large to diff,
 * a move that kept the content.
 */
note: string | null, };

export type CheckCommand = { number: number, command: string, argument: string | null, 
/**
 * What the command acts on, as every view shows it ([`crate::Command::target`]).
 */
target: string, line: number, run: boolean, skip_reason: string | null, };

export type CheckReport = { ok: boolean, diagnostics: Array<Diagnostic>, commands: Array<CheckCommand>, control: Control | null, correction: string | null, };

export type Control = "next" | "done";

export type CommandView = { number: number, command: string, 
/**
 * [`Command::target`].
 */
target: string, line: number, 
/**
 * Whether the batch runs it (`None` while the reply is still streaming).
 */
run: boolean | null, skip_reason: string | null, 
/**
 * The policy verdict of a runcommand: tier, decision (run/confirm/deny) and reason.
 */
tier: Tier | null, decision: Decision | null, reason: string | null, };

export type WatchVerdict = "waiting" | "complete" | "complete_without_eof" | "truncated" | "timeout" | "exhausted" | "limited" | "incomplete";

export type FollowReport = { verdict: WatchVerdict, 
/**
 * The code of a verdict that ends the wait with a problem.
 */
code: Code | null, 
/**
 * `true` once the reply is complete and `diagnostics` are final.
 */
final: boolean, ok: boolean, diagnostics: Array<Diagnostic>, commands: Array<CommandView>, control: Control | null, correction: string | null, 
/**
 * Complete lines examined so far.
 */
lines: number, };

export type PageObservation = { siteStreaming: boolean, 
/**
 * The site's stop signal was seen at least once during this reply.
 */
stopSignalSeen: boolean, 
/**
 * Whether the newest reply shows the adapter's `reply_done` mark; `None` when the adapter
 * has none.
 */
replyDone?: boolean, 
/**
 * Part of the reply sits where the page does not show all of it (a code editor that keeps
 * only its visible lines), and the page script could not read it.
 */
incomplete: boolean, quietMs: number, waitedMs: number, exhausted: boolean, 
/**
 * The page shows one of the site's "usage limit reached" phrases.
 */
limited: boolean, truncationBudgetSeconds: number, replyTimeoutSeconds: number, };

export type Delivery = { "kind": "paste" } | { "kind": "attach", file_name: string, note: string, };

export type DoctorLine = { key: string, selector: string | null, status: string, code: Code | null, message: string, 
/**
 * For a selector that does not match and that the user can show on the page: what to click
 * ("the box where you type your message"); the overlay offers "Pick it".
 */
pick: string | null, };

export type SelectorProbe = { key: string, 
/**
 * Elements matched by the alternative in use; `None` when the browser rejected every
 * alternative's syntax.
 */
matches: number | null, 
/**
 * Which alternative matched (0 for the first); `None` when none did.
 */
alternative: number | null, };

export type PickedNode = { 
/**
 * Lower-case tag name.
 */
tag: string, id: string, classes: Array<string>, 
/**
 * Attribute names and values (the page sends at most a few dozen).
 */
attrs: Array<[string, string]>, };

export type Picked = { key: string, node: PickedNode, ancestors: Array<PickedNode>, };

export type CandidateFacts = { 
/**
 * Elements it matches (0 when the browser refused it).
 */
count: number, 
/**
 * The picked element is among them.
 */
hasPicked: boolean, 
/**
 * It also matches a user message (or something inside one).
 */
hitsUser: boolean, };

export type BatchStatus = "running" | "done" | "rejected" | "interrupted";

export type TurnEnd = "done" | "MaxFormatRetries" | "MaxIterationsPerTurn" | "needs_user_input";

export type Limits = { MaxCommandsPerResponse: number, MaxResponseChars: number, MaxFileContentChars: number, MaxCommandOutputChars: number, MaxFormatRetries: number, MaxIterationsPerTurn: number, };

export type CommandKind = "say" | "newfile" | "updatefile" | "editfile" | "deletefile" | "movefile" | "readfile" | "mkdir" | "runcommand" | "ask" | "commit" | "next" | "done" | "mcp" | "sshexec" | "sshupload" | "sshdownload";

export type Rule = { condition: string, next: string, 
/**
 * Line of the rule's `next` value.
 */
line: number, };

export type Movement = { name: string, edit: boolean, persona: string, instruction: string, allowed_tools: Array<string>, allowed_commands: Array<string> | null, allowed_ssh_connections: Array<string> | null, rules: Array<Rule>, default_next: string | null, max_consecutive_revisits: number | null, line: number, };

export type Piece = { name: string, description: string, max_movements: number, initial_movement: string, keywords: Array<string>, required_mcp: Array<string>, shared_tools: Array<string>, model: string | null, movements: Array<Movement>, };

export type Validation = { 
/**
 * The piece, when it has no errors.
 */
piece: Piece | null, errors: Array<Diagnostic>, warnings: Array<Diagnostic>, };

export type Source = "shared" | "allowed" | "meta" | "edit_gate";

export type ToolEntry = { name: string, source: Source, 
/**
 * False when a gate refuses it at run time (the note says why).
 */
usable: boolean, note?: string, };

export type Dropped = { name: string, reason: string, };

export type EffectiveTools = { movement: string, tools: Array<ToolEntry>, dropped: Array<Dropped>, 
/**
 * Allowed AgentScript commands, in canonical order.
 */
commands: Array<CommandKind>, 
/**
 * `allowed_commands` patterns for runcommand; `None` means the normal command policy.
 */
command_patterns: Array<string> | null, 
/**
 * The piece the movement belongs to (SSH grants name pieces).
 */
piece: string, 
/**
 * The MCP tools `@@mcp` may call here (`SERVER.TOOL`): the movement's `mcp__` names resolved
 * against the running servers of the piece's `required_mcp`.
 */
mcp: Array<string>, 
/**
 * Those of them the policy treats as read-only (the server's `readOnlyHint`, trusted).
 */
mcp_read_only: Array<string>, 
/**
 * The movement's `allowed_ssh_connections`.
 */
ssh_connections?: Array<string>, };

export type McpTool = { server: string, name: string, description: string, 
/**
 * The tool's JSON Schema for its arguments, as JSON text.
 */
input_schema: string, 
/**
 * The server marks it `readOnlyHint` and keyless.json trusts the server's hints.
 */
read_only: boolean, };

export type RunState = { "state": "running", movement: string, } | { "state": "needs_user_input", movement: string, question: string, } | { "state": "waiting_for_subtasks", movement: string, } | { "state": "complete" } | { "state": "aborted", reason: string, };

export type NodeKind = "edits" | "readonly" | "sentinel";

export type GraphNode = { id: string, name: string, kind: NodeKind, initial: boolean, layer: number, };

export type GraphEdge = { from: string, to: string, label: string, fallback: boolean, };

export type Graph = { nodes: Array<GraphNode>, edges: Array<GraphEdge>, };

export type Utf16Span = { line: number, start: number, end: number, };

export type AsCheckReport = { ok: boolean, diagnostics: Array<Diagnostic>, };

export type ErrorBody = { code: Code, message: string, 
/**
 * A refused piece's findings (`PUT /v1/pieces/{name}`), each with its key and line.
 */
findings?: Array<Diagnostic>, 
/**
 * When the request may be tried again, in seconds (a pairing lock): also the `Retry-After`
 * header.
 */
retry_after_seconds?: number, };

export type PairRequest = { 
/**
 * The code `keyless-host serve` or `keyless-host pair` printed (case, spaces and dashes do
 * not matter: [`crate::pairing::read_code`]).
 */
code: string, extension_id: string, };

export type Paired = { token: string, extension_id: string, };

export type Status = { name: string, version: string, api: string, workspace: string, 
/**
 * The host's default mode and pace (a session may choose its own).
 */
mode: Mode, pace: Pace, };

export type SettingsRequest = { pace?: Pace, limits?: Limits, };

export type CheckRequest = { reply: string, settings?: SettingsRequest, };

export type PolicyRequest = { command: string, mode?: Mode, 
/**
 * Extra allow patterns, as in keyless.json's `allow`.
 */
allow?: Array<string>, };

export type SessionRequest = { 
/**
 * Resume this session.
 */
resume?: string, 
/**
 * Follow a piece, by name (see `GET /v1/pieces`).
 */
piece?: string, 
/**
 * Follow a piece given as YAML (validated strictly).
 */
piece_yaml?: string, 
/**
 * Ask, AutoSafe or Auto for this session (default: the host's `--mode`).
 */
mode?: Mode, 
/**
 * Step, Balanced or Batch for this session (default: the host's pace).
 */
pace?: Pace, 
/**
 * The user's task: the prompt ends with it, under `# Task`.
 */
task?: string, };

export type SessionStarted = { session: string, turn: number, batch: number, 
/**
 * The whole first message for the chat: the system prompt, the movement, the task.
 */
prompt: string, 
/**
 * Whether the session follows a piece.
 */
piece: boolean, mode: Mode, pace: Pace, 
/**
 * The host's configured allow-list (keyless.json `allow`), which views judge commands with.
 */
allow: Array<string>, 
/**
 * In a piece session, the current movement's tools (see [`CoreOptions::gate`]).
 */
gate: EffectiveTools | null, 
/**
 * What the host knows of the workspace, which views judge commands with (see
 * [`CoreOptions::context`]).
 */
context: Context, 
/**
 * The branch the session works on.
 */
branch: string | null, 
/**
 * When keyless made a branch for the task (the session started on a protected one): what to
 * tell the user.
 */
branch_note: string | null, };

export type SessionSummary = { session: string, 
/**
 * Unix seconds.
 */
created_at: number, turn: number, batch: number, piece: boolean, 
/**
 * The task the user gave (the first message's `# Task`), when there was one.
 */
task: string | null, 
/**
 * The branch the session works on (its task branch, else the one it started on).
 */
branch: string | null, 
/**
 * Ask, AutoSafe or Auto, when the session set its own.
 */
mode: string | null, 
/**
 * Where the session stands, in words ([`session_state`]).
 */
state: string, 
/**
 * The new chats the session was continued in, oldest first.
 */
moves: Array<SessionMove>, };

export type SessionMove = { 
/**
 * The chat site it went to (the adapter's name, or `terminal` for `:handover`).
 */
site: string, 
/**
 * The browser tab it went to, when the extension moved it.
 */
tab: number | null, 
/**
 * Unix seconds.
 */
at: number, 
/**
 * The turn and batch the new chat starts with.
 */
turn: number, batch: number, };

export type HandoverRequest = { 
/**
 * The site's adapter name.
 */
site: string, 
/**
 * Its paste budget in characters (the adapter's `max_paste_chars`).
 */
max_paste_chars: number, 
/**
 * Whether it takes files: over the budget the handover is attached, else pasted whole.
 */
uploads: boolean, 
/**
 * The tab the session goes to.
 */
tab?: number, };

export type HandoverAnswer = { 
/**
 * The handover (the whole record when it is attached).
 */
text: string, delivery: Delivery, 
/**
 * The turn and batch the new chat's first reply carries.
 */
turn: number, batch: number, };

export type BatchSummary = { id: string, turn: number, batch: number, status: BatchStatus, control: Control | null, 
/**
 * How its commands ended.
 */
counts: BatchCounts, 
/**
 * The colour it gets: a batch with a failed command is never "ok".
 */
outcome: BatchOutcome, 
/**
 * Whether Undo can take it back.
 */
undo: UndoState, };

export type SessionDetail = { session: string, turn: number, batch: number, batches: Array<BatchSummary>, };

export type SessionSettingsRequest = { mode?: Mode, pace?: Pace, };

export type SessionSettings = { mode: Mode, pace: Pace, };

export type ReplyRequest = { reply: string, turn?: number, batch?: number, };

export type PieceProgress = { state: RunState, movement: string, movement_runs: number, 
/**
 * The current movement's tools, which the next reply is judged with.
 */
tools: EffectiveTools, };

export type BatchCounts = { ok: number, 
/**
 * Errors other than a decline (a failed or denied command, a refused path, …).
 */
failed: number, 
/**
 * The user said no to a confirmation (`KA_COMMAND_DECLINED`).
 */
declined: number, skipped: number, };

export type CommandEnd = { number: number, status: ResultStatus, code: string | null, };

export type ReplyAnswer = { batch_id: string, turn: number, batch: number, 
/**
 * `done` (executed), `rejected` (format correction), `interrupted` (stored as running).
 */
status: BatchStatus, 
/**
 * The text to send back to the chat.
 */
text: string, control: Control | null, turn_ended: TurnEnd | null, 
/**
 * Why the turn ended, in the words every view shows ([`TurnEnd::words`]).
 */
ended: string | null, 
/**
 * True when the answer comes from the store (a retry): nothing ran now.
 */
stored: boolean, next_turn: number, next_batch: number, 
/**
 * For a piece session: where the run stands after this batch.
 */
piece: PieceProgress | null, 
/**
 * What the host knows of the workspace after this batch, for judging the next reply.
 */
context: Context, 
/**
 * How the batch's commands ended (all zero for a rejected reply).
 */
counts: BatchCounts, 
/**
 * How each command ended (empty for a rejected reply).
 */
commands: Array<CommandEnd>, 
/**
 * The colour every view gives the batch.
 */
outcome: BatchOutcome, 
/**
 * What the model said with the `@@done` that finished the task (its MSG).
 */
done_message: string | null, 
/**
 * When the task finished: what it left in the repository and how to merge it.
 */
review: string | null, 
/**
 * What the batch's file commands changed, command by command (for the user; the chat gets
 * the `verified:` lines).
 */
diff: Array<FileDiff>, 
/**
 * When the task finished: everything it changed since the commit the session started from
 * (committed or not), for the user's review.
 */
task_diff: Array<FileDiff>, };

export type UndoState = "undoable" | "undone" | "committed" | "no_changes";

export type BatchOutcome = "ok" | "failed" | "declined" | "rejected" | "running" | "interrupted" | "empty";

export type CancelRequested = { session: string, cancel_requested: boolean, };

export type PieceSummary = { name: string, description: string, 
/**
 * Where it was found: the workspace's `.agent/pieces/`, the user's `pieces/`, or
 * `built-in`.
 */
source: string, 
/**
 * True for a workspace piece, which `PUT` and `DELETE /v1/pieces/{name}` change.
 */
editable: boolean, };

export type PieceText = { name: string, source: string, yaml: string, 
/**
 * True for a workspace piece (`.agent/pieces/`), which `PUT` and `DELETE` change.
 */
editable: boolean, };

export type PieceWrite = { yaml: string, };

export type PieceSaved = { name: string, 
/**
 * The file it was written to.
 */
source: string, 
/**
 * Warnings of the strict validation (errors refuse the piece).
 */
warnings: Array<Diagnostic>, 
/**
 * What the name resolved to before, when the new piece now hides it ("built-in", a user
 * piece's path), or `null`.
 */
shadows: string | null, };

export type PieceDeleted = { name: string, deleted: boolean, 
/**
 * What the name resolves to now (a user or built-in piece it hid), or `null`.
 */
now: string | null, };

export type ResultStatus = "ok" | "error" | "skipped";

export type CommandRecord = { number: number, status: ResultStatus, code: string | null, reason: string | null, exit_code: number | null, duration_ms: number | null, 
/**
 * What the command changed in the workspace's files.
 */
diff: Array<FileDiff>, };

export type BatchCommand = { result: CommandRecord | null, number: number, command: string, 
/**
 * [`Command::target`].
 */
target: string, line: number, 
/**
 * Whether the batch runs it (`None` while the reply is still streaming).
 */
run: boolean | null, skip_reason: string | null, 
/**
 * The policy verdict of a runcommand: tier, decision (run/confirm/deny) and reason.
 */
tier: Tier | null, decision: Decision | null, reason: string | null, };

export type BatchDetail = { session: string, turn: number, batch: number, status: BatchStatus, control: Control | null, 
/**
 * The reply as the model wrote it.
 */
reply: string, 
/**
 * The text the model received (results or correction).
 */
text: string, commands: Array<BatchCommand>, outcome: BatchOutcome, 
/**
 * Whether the dashboard's Undo can take the batch back.
 */
undo: UndoState, 
/**
 * Why it cannot, and what to do instead (a later commit recorded the files, …).
 */
undo_note: string | null, };

export type Undone = { restored: Array<string>, };

export type AuditEntry = { 
/**
 * Unix seconds.
 */
at: number, session: string, batch: string, command: string, target: string, status: ResultStatus, code: string | null, };

export type FieldKind = { "type": "text", 
/**
 * `email`, `uri`, `date` or `date-time`, when the schema names one.
 */
format: string | null, min_length: number | null, max_length: number | null, } | { "type": "number", integer: boolean, minimum: number | null, maximum: number | null, } | { "type": "boolean" } | { "type": "choice", options: Array<[string, string]>, } | { "type": "choices", options: Array<[string, string]>, min_items: number | null, max_items: number | null, };

export type Field = { name: string, title: string | null, description: string | null, kind: FieldKind, required: boolean, 
/**
 * The schema's default, already checked against the field.
 */
default: unknown, };

export type Form = { 
/**
 * The server's message, as it wrote it (shown to the user as the server's words).
 */
message: string, fields: Array<Field>, };

export type PromptKind = "confirm" | "ask" | "form" | "login";

export type PendingPrompt = { id: number, session: string, kind: PromptKind, text: string, tier: Tier | null, reason: string | null, 
/**
 * What a confirmed command will change in the workspace's files.
 */
preview: Array<FileDiff>, 
/**
 * What the user may tell keyless to stop asking about in this workspace.
 */
offer: AllowOffer | null, 
/**
 * A `form` prompt's fields (the MCP server's requested schema, read).
 */
form: Form | null, };

export type PromptAnswer = { approve?: boolean, answer?: string, 
/**
 * With `approve`: remember the offer's `exact` or `like` rule for this workspace.
 */
always?: RuleKind, 
/**
 * A form's values by field name, with `approve` (omitted fields take their defaults).
 */
values?: Record<string, unknown>, 
/**
 * A form without `approve`: cancel the whole tool call rather than decline the form.
 */
cancel?: boolean, };

export type Answered = { id: number, answered: boolean, };

export type Attempt = { prompt: string, answer: string, 
/**
 * Why it was not accepted.
 */
error: string | null, 
/**
 * Where in the answer the value was read: "the whole answer", "fenced block 2", "line 7".
 */
source?: string, 
/**
 * Every repair and coercion the reading took (empty for strict JSON that fits as it is).
 */
repairs: Array<string>, 
/**
 * The chosen candidate's score (0: strict JSON that fits) and how many were weighed.
 */
score: number, candidates: number, };

export type TraceEvent = { "event": "call", agent: string, func: string, duration_ms: number, input: unknown, output: unknown | null, error: string | null, events: Array<TraceEvent>, } | { "event": "generate", model: string, 
/**
 * Who answered, where the model URI does not say it all (`keyless://chat`: the chat
 * site whose tab answered).
 */
via?: string, duration_ms: number, limit: number | null, attempts: Array<Attempt>, value: unknown | null, } | { "event": "tool", tool: string, method: string, args: unknown, result: unknown | null, error: string | null, } | { "event": "memory", memory: string, method: string, args: unknown, result: unknown | null, error: string | null, } | { "event": "cap", line: number, cap: number, };

export type Trace = { events: Array<TraceEvent>, };

export type AsRunState = "running" | "done" | "failed";

export type HostEvent = { "type": "session", session: string, turn: number, batch: number, } | { "type": "batch_started", session: string, batch_id: string, turn: number, batch: number, } | { "type": "batch_finished", session: string, batch_id: string, status: BatchStatus, turn_ended: TurnEnd | null, } | { "type": "command_started", session: string, number: number, command: string, target: string, } | { "type": "command_finished", session: string, number: number, command: string, target: string, status: ResultStatus, code: string | null, 
/**
 * What the command changed in the workspace's files.
 */
diff: Array<FileDiff>, } | { "type": "say", session: string, text: string, } | { "type": "output", session: string, text: string, } | { "type": "prompt", id: number, session: string, kind: PromptKind, text: string, tier: Tier | null, reason: string | null, preview: Array<FileDiff>, offer: AllowOffer | null, form: Form | null, } | { "type": "prompt_closed", id: number, session: string, } | { "type": "undone", restored: Array<string>, } | { "type": "as_run", run: string, state: AsRunState, error: string | null, } | { "type": "as_trace", run: string, event: TraceEvent, } | { "type": "generation", generation: Generation, };

export type AsRunRequest = { 
/**
 * The `.as` file, relative to the workspace.
 */
file: string, input?: unknown, agent?: string, func?: string, 
/**
 * A scripted model (the answers, in order) instead of the program's providers.
 */
mock?: Array<string>, };

export type AsRunSummary = { run: string, file: string, 
/**
 * Unix seconds.
 */
started_at: number, state: AsRunState, 
/**
 * `KA_… message` of a failed run.
 */
error: string | null, };

export type AsRunDetail = { value: unknown, 
/**
 * The whole trace (see docs/language.md, Trace).
 */
trace: Trace, run: string, file: string, 
/**
 * Unix seconds.
 */
started_at: number, state: AsRunState, 
/**
 * `KA_… message` of a failed run.
 */
error: string | null, };

export type GenerationRequest = { id: string, 
/**
 * The `.as` run asking.
 */
run: string, 
/**
 * The program's file, for the overlay and the dashboard.
 */
file: string, 
/**
 * 1 for a generate's first attempt; 2, 3, … for its retries after a shape mismatch.
 */
attempt: number, 
/**
 * The program's whole prompt.
 */
prompt: string, 
/**
 * Why the previous attempt's answer was refused (attempts after the first).
 */
correction: string | null, 
/**
 * The shape the answer must fit (core's `lang::ast::Shape`, as JSON).
 */
shape: unknown, };

export type GenerationState = "pending" | "claimed" | "answered" | "failed" | "cancelled";

export type Generation = { id: string, run: string, file: string, attempt: number, 
/**
 * What the chat is sent (core's `lang::chat::message`).
 */
text: string, shape: unknown, 
/**
 * The shape as the prompt shows it.
 */
shape_text: string, state: GenerationState, 
/**
 * The chat site whose tab took it.
 */
site: string | null, 
/**
 * The reply's text, as read from the page.
 */
answer: string | null, 
/**
 * `KA_… message` of a failed or cancelled generation.
 */
error: string | null, 
/**
 * What the tab last saw of the reply, in words (core's `GenerationReport::seen`): a
 * timeout says it, rather than that the chat did not answer.
 */
seen: string | null, 
/**
 * Unix milliseconds: asked, taken by a tab, ended.
 */
asked_at: number, claimed_at: number | null, ended_at: number | null, };

export type GenerationAnswer = { answer?: string, 
/**
 * `KA_… message`: the reply was truncated, the chat is full, the tab closed, ….
 */
error?: string, };

export type GenerationClaim = { 
/**
 * The chat site of the tab (its adapter's name).
 */
site: string, };

export type GenerationSeen = { 
/**
 * At most 200 characters; longer is cut.
 */
seen: string, };

export type ChatTabReport = { 
/**
 * The chat site's adapter name; `null` when the user turned answering programs off.
 */
site: string | null, };

export type ChatTabState = { pending: Array<Generation>, };

export type GenerationReport = { 
/**
 * Complete (hand the text to the host), waiting, or ended with a problem (`code`).
 * `complete_without_eof` means the reply holds no JSON at all: it is handed on too, and the
 * program's `attempts` decide.
 */
verdict: WatchVerdict, code: Code | null, 
/**
 * A complete JSON object is in the reply.
 */
json: boolean, 
/**
 * A JSON object or a fenced block was begun (a reply that stops there is truncated).
 */
started: boolean, 
/**
 * The object fits the shape (as the interpreter will coerce it).
 */
fits: boolean, 
/**
 * Why it does not fit, once there is an object to judge.
 */
problem: string | null, 
/**
 * What the page shows, in words: the tab tells the host each time it changes, so a
 * program's timeout says what the chat did rather than that it did not answer.
 */
seen: string, };

export type CoreOptions = { pace?: Pace, mode?: Mode, limits?: Limits, 
/**
 * Extra allow patterns, as in keyless.json's `allow`.
 */
allow?: Array<string>, 
/**
 * In a piece session, the current movement's tools: what it refuses, and its
 * `allowed_commands` in place of `allow`.
 */
gate?: EffectiveTools, 
/**
 * What the host knows of the workspace (programs the shell would take from folders the
 * model can write, files that steer programs), as the session start and each reply's answer
 * give it: the executor judges with the same.
 */
context?: Context, };

export const MODES: readonly Mode[] = ["Ask", "AutoSafe", "Auto"];

export const PACES: readonly Pace[] = ["Step", "Balanced", "Batch"];

export const HIDDEN_RANGES: readonly (readonly [number, number])[] = [[0xad, 0xad], [0x34f, 0x34f], [0x61c, 0x61c], [0x115f, 0x1160], [0x17b4, 0x17b5], [0x180b, 0x180e], [0x200b, 0x200b], [0x200e, 0x200f], [0x2028, 0x202e], [0x205f, 0x206f], [0x3164, 0x3164], [0xfeff, 0xfeff], [0xffa0, 0xffa0], [0xfff9, 0xfffb], [0xe0000, 0xe007f]];
