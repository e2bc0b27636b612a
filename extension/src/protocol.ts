// The messages between the extension's parts, in one typed map. Content scripts and the popup
// send requests to the worker; the worker alone talks to keyless-host and runs the wasm core.

// The core's wire types, generated from the Rust types (extension/src/generated/core.ts, written
// by `cargo xtask contract`; a test fails when it is stale). The defaults for Settings are the
// core's too (the wasm export `extensionDefaults`).
import type { Code, WatchVerdict, WireError } from "./generated/core.js";
import { KeylessError } from "../../www/common/error.js";
export type {
  Code,
  WireError,
  Control,
  Decision,
  Delivery,
  Diagnostic,
  DoctorLine,
  FollowReport,
  Mode,
  CommandView,
  PageObservation,
  Pace,
  SelectorProbe,
  Selectors,
  Settings,
  SiteAdapter,
  Tier,
  WatchVerdict,
  BatchStatus,
  TurnEnd,
  ReplyAnswer,
  HostEvent,
  Generation,
  GenerationReport,
  CandidateFacts,
  Picked,
  PickedNode,
} from "./generated/core.js";
export type Verdict = WatchVerdict;
import type { CandidateFacts, Context, Delivery, DoctorLine, EffectiveTools, FollowReport, Generation, GenerationReport, HostEvent, Mode, Pace, PageObservation, Picked, PromptAnswer, ReplyAnswer, Selectors, Settings, SiteAdapter } from "./generated/core.js";

// ---- the run of one tab ----

export type RunState = "running" | "paused" | "stopped" | "ended";

/// A tab's session with keyless-host (chrome.storage.session, key "run:<tabId>").
export interface TabRun {
  session: string;
  turn: number;
  batch: number;
  state: RunState;
  /// Why the run ended or stopped (a KA_ code or "done").
  reason?: string;
  mode: Mode;
  pace: Pace;
  piece?: string;
  /// The host's allow-list, and in a piece session the current movement's tools: the overlay
  /// judges each command with them, as the host will.
  allow?: string[];
  gate?: EffectiveTools;
  /// What the host knows of the workspace (untrusted programs, files that steer programs), as
  /// the session start and each answer give it: the overlay judges with it, as the host does.
  context?: Context;
  /// The branch the session works on, and what keyless said when it made one for the task.
  branch?: string;
  branchNote?: string;
  /// The session went on in another chat (Continue in a new chat): this tab's replies run
  /// nothing (KA_SESSION_MOVED). In the new tab: where it came from.
  movedTo?: { tabId: number; site: string };
  movedFrom?: { tabId: number; site: string };
  /// The characters sent and read in this tab's chat so far, and that size when a new chat was
  /// last suggested (the site's `long_thread_chars`, decided by the core's `suggestNewChat`).
  threadChars?: number;
  suggestedAt?: number;
}

/// What the content script does with a host answer.
export interface ReplyOutcome {
  answer: ReplyAnswer;
  /// Send `answer.text` back into the chat (false when the turn ended or the run is paused).
  send: boolean;
  delivery: Delivery;
  run: TabRun;
  /// The thread has grown past the site's `long_thread_chars`: the overlay suggests a new chat.
  longThread?: { chars: number; limit: number };
}

export interface Metrics {
  /// Milliseconds from the end of streaming to the results confirmed sent, per batch.
  endToSent: number[];
  /// Milliseconds per overlay update (extract + core + render) while a reply streams.
  overlayUpdate: number[];
  /// Characters of the reply at each update.
  overlayChars: number[];
  /// Of each update: the page's own work (reading the reply from the DOM, then drawing).
  pageMs: number[];
  /// Of each update: the worker's core (the follower's update, in wasm).
  coreMs: number[];
}

export interface HostStatus {
  paired: boolean;
  connected: boolean;
  hostUrl: string;
  error?: WireError;
  workspace?: string;
}

/// Requests to the worker: the request body and the answer.
export interface Requests {
  // from content scripts
  site: { req: { host: string }; res: { site: SiteAdapter | null; error: WireError | null; settings: Settings } };
  /// The page's text is the last text the worker saw for this tab, cut to `keep` characters, then
  /// `tail`. A worker that lost that text (it restarted) answers `{resync: true}`.
  /// The answer carries only the commands from `commandsFrom` on (those before are unchanged since
  /// the last answer for this reply).
  follow: { req: { keep: number; tail: string; page: PageObservation }; res: (FollowReport & { commandsFrom: number }) | { resync: true } };
  reply: { req: { text: string }; res: ReplyOutcome };
  /// A prompt's answer, as `POST /v1/confirmations/{id}` takes it.
  answer: { req: { id: number } & PromptAnswer; res: { ok: boolean } };
  cancel: { req: Record<string, never>; res: { ok: boolean } };
  tabRun: { req: Record<string, never>; res: { run: TabRun | null; programs: boolean } };
  delivered: { req: { ok: boolean; code?: Code; endToSentMs?: number }; res: { ok: boolean } };
  metric: { req: { overlayMs: number; chars: number; pageMs: number }; res: { ok: boolean } };
  ping: { req: Record<string, never>; res: { ok: boolean } };
  /// keyless://chat: the live check of a generation's reply (completion and shape).
  followGeneration: { req: { text: string; shape: unknown; page: PageObservation }; res: GenerationReport };
  /// The reply to a generation (or why there is none), sent to the host once.
  generated: { req: { id: string; answer?: string; error?: WireError }; res: { ok: boolean } };
  /// What the tab sees of a generation's reply, in words, each time it changes.
  generationSeen: { req: { id: string; seen: string }; res: { ok: boolean } };
  /// The overlay's Cancel on a generation.
  cancelGeneration: { req: { id: string }; res: { ok: boolean } };
  // from the popup and the options page
  status: { req: Record<string, never>; res: HostStatus };
  pair: { req: { hostUrl: string; code: string }; res: HostStatus };
  /// Pairs through the native-messaging host that `keyless-host install` registers: no code.
  /// `autoPair` in the answer says why that was not possible (then the code is the way).
  autoPair: { req: Record<string, never>; res: HostStatus & { autoPair?: string } };
  unpair: { req: Record<string, never>; res: HostStatus };
  pieces: { req: Record<string, never>; res: { pieces: { name: string; description: string }[] } };
  getSettings: { req: Record<string, never>; res: Settings };
  setSettings: { req: Partial<Settings>; res: Settings };
  checkOverrides: { req: { text: string }; res: { ok: boolean; error: WireError | null; sites: SiteAdapter[] } };
  defaultSites: { req: Record<string, never>; res: { json: string } };
  /// A file of selector overrides merged over the user's own (checked; not saved yet).
  importOverrides: { req: { text: string }; res: { text: string } };
  /// The selector picker: candidates for a picked element, then the one kept, saved as an override.
  pickCandidates: { req: { picked: Picked }; res: { candidates: string[] } };
  savePick: { req: { host: string; key: string; candidates: string[]; facts: CandidateFacts[] }; res: { selector: string; site: SiteAdapter | null } };
  /// Whether a tab is a supported chat (the adapter's name), and the supported sites.
  tabSite: { req: { tabId: number }; res: { site: string | null; supported: { name: string; url: string }[] } };
  runOf: { req: { tabId: number }; res: { run: TabRun | null } };
  /// Whether `tabId` answers `.as` programs (keyless://chat), and turning it on or off.
  programs: { req: { tabId: number; on?: boolean }; res: { on: boolean; tabId: number | null } };
  start: { req: { tabId: number; task: string }; res: { run: TabRun } };
  /// Continue the session of `tabId` (the sender's tab when absent) in a new chat on `site`
  /// (an adapter's name): the new tab gets core's handover, the old one's replies run nothing.
  continueIn: { req: { tabId?: number; site: string }; res: { tabId: number; run: TabRun } };
  pause: { req: { tabId: number }; res: { run: TabRun | null } };
  resume: { req: { tabId: number }; res: { run: TabRun | null } };
  stop: { req: { tabId: number }; res: { run: TabRun | null } };
  doctor: { req: { tabId: number }; res: { site: string | null; lines: DoctorLine[]; error: WireError | null } };
  capture: { req: { tabId: number }; res: { name: string; html: string } };
  metrics: { req: Record<string, never>; res: Metrics };
}

export type RequestType = keyof Requests;
export type Request<K extends RequestType = RequestType> = { type: K } & Requests[K]["req"];
/// Every answer is either `{ ok: true, value }` or `{ ok: false, error }`.
export type Reply<K extends RequestType> = { ok: true; value: Requests[K]["res"] } | { ok: false; error: WireError };

/// Messages the worker sends to a tab's content script.
export type TabMessage =
  | { type: "event"; event: HostEvent }
  | { type: "paste"; text: string; send: boolean; delivery?: Delivery }
  | { type: "run"; run: TabRun | null }
  | { type: "probe"; selectors: Selectors }
  | { type: "doctor"; lines: DoctorLine[] }
  | { type: "generate"; generation: Generation }
  | { type: "generationEnded"; generation: Generation }
  | { type: "programs"; on: boolean }
  | { type: "inspect" }
  | { type: "capture" };

/// What the content script finds on its page, as it would read it for a task (the real-page
/// suite asks for it; nothing else does): the composer and send button, the replies and the
/// user's messages it counts, and the newest reply's text as the parser would get it.
export interface Inspection {
  site: string | null;
  composer: boolean;
  send: boolean;
  assistantMessages: number;
  userMessages: number;
  /// Elements both the reply and the user selectors take, decided by position.
  ambiguous: number;
  /// Which alternative of each selector matched (1-based; null: none), and how many elements.
  alternatives: { key: string; matches: number | null; alternative: number | null }[];
  lastReply: string | null;
  incomplete: boolean;
}

/// Sends a request to the worker and unwraps its answer (a failure is thrown as a KeylessError).
export async function ask<K extends RequestType>(type: K, req: Requests[K]["req"]): Promise<Requests[K]["res"]> {
  const reply: Reply<K> | undefined = await chrome.runtime.sendMessage({ type, ...req });
  if (!reply) throw new KeylessError("KA_INTERNAL", "the keyless worker did not answer");
  if (!reply.ok) throw KeylessError.of(reply.error);
  return reply.value;
}
