// Generated from keyless-core's Rust types by `cargo xtask contract`. Do not edit.

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
selectorOverrides: string, };

export type Selectors = { assistant_message: string, assistant_content?: string, user_message: string, streaming: string, composer: string, send_button: string, file_input?: string, attachment_chip?: string, ignore?: string, };

export type ComposerKind = "prosemirror" | "quill" | "textarea";

export type SiteAdapter = { id: string, name: string, hosts: Array<string>, composer_kind: ComposerKind, max_paste_chars: number, selectors: Selectors, exhausted_phrases: Array<string>, };

export type Diagnostic = { 
/**
 * `KA_…` (serialised by its name).
 */
code: string, line: number | null, message: string, help?: string, };

export type Tier = "ReadOnly" | "Build" | "Execute" | "Risky" | "Denied";

export type Decision = "run" | "confirm" | "deny";

export type SegmentVerdict = { text: string, tier: Tier, reason: string, };

export type Verdict = { tier: Tier, decision: Decision, 
/**
 * The deciding segment's reason, e.g. "segment 2: redirection writes a file".
 */
reason: string, segments: Array<SegmentVerdict>, };

export type CheckDiagnostic = { code: string, line: number | null, message: string, };

export type CheckCommand = { number: number, command: string, argument: string | null, 
/**
 * What the command acts on, as every view shows it ([`crate::Command::target`]).
 */
target: string, line: number, run: boolean, skip_reason: string | null, };

export type CheckReport = { ok: boolean, diagnostics: Array<CheckDiagnostic>, commands: Array<CheckCommand>, control: Control | null, correction: string | null, };

export type Control = "next" | "done";

export type OverlayCommand = { number: number, command: string, target: string, line: number, 
/**
 * Whether the batch runs it (`None` while the reply is still streaming).
 */
run: boolean | null, skip_reason: string | null, 
/**
 * The policy verdict of a runcommand: tier, decision (run/confirm/deny) and reason.
 */
tier: Tier | null, decision: Decision | null, reason: string | null, };

export type WatchVerdict = "waiting" | "complete" | "complete_without_eof" | "truncated" | "timeout" | "exhausted";

export type FollowReport = { verdict: WatchVerdict, 
/**
 * The code of a verdict that ends the wait with a problem.
 */
code: string | null, 
/**
 * `true` once the reply is complete and `diagnostics` are final.
 */
final: boolean, ok: boolean, diagnostics: Array<Diagnostic>, commands: Array<OverlayCommand>, control: Control | null, correction: string | null, 
/**
 * Complete lines examined so far.
 */
lines: number, };

export type PageObservation = { siteStreaming: boolean, 
/**
 * The site's stop signal was seen at least once during this reply.
 */
stopSignalSeen: boolean, quietMs: number, waitedMs: number, exhausted: boolean, truncationBudgetSeconds: number, replyTimeoutSeconds: number, };

export type Delivery = { "kind": "paste" } | { "kind": "attach", file_name: string, note: string, };

export type DoctorLine = { key: string, selector: string | null, status: string, code: string | null, message: string, };

export type SelectorProbe = { key: string, 
/**
 * Elements matched; `None` when the browser rejected the selector's syntax.
 */
matches: number | null, };

export type BatchStatus = "running" | "done" | "rejected" | "interrupted";

export type TurnEnd = "done" | "MaxFormatRetries" | "MaxIterationsPerTurn";
