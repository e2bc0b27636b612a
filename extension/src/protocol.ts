// The messages between the extension's parts, in one typed map. Content scripts and the popup
// send requests to the worker; the worker alone talks to keyless-host and runs the wasm core.

export type Mode = "Ask" | "AutoSafe" | "Auto";
export type Pace = "Step" | "Balanced" | "Batch";

/// The user's settings (chrome.storage.local, key "settings").
export interface Settings {
  hostUrl: string;
  mode: Mode;
  pace: Pace;
  piece: string;
  autoSend: boolean;
  truncationBudgetSeconds: number;
  replyTimeoutSeconds: number;
  /// JSON text: selector overrides keyed by site id (see docs/extension.md).
  selectorOverrides: string;
}

// The defaults are the core's (`keyless_core::site::extension_defaults`, the wasm export
// `extensionDefaults`), so the port and the budgets are written once.

// ---- what the wasm core answers (keyless-core's serde shapes) ----

export interface Selectors {
  assistant_message: string;
  assistant_content?: string;
  user_message: string;
  streaming: string;
  composer: string;
  send_button: string;
  file_input?: string;
  attachment_chip?: string;
  ignore?: string;
}

export interface SiteAdapter {
  id: string;
  name: string;
  hosts: string[];
  composer_kind: "prosemirror" | "quill" | "textarea";
  max_paste_chars: number;
  selectors: Selectors;
  exhausted_phrases: string[];
}

export interface Diagnostic {
  code: string;
  line: number | null;
  message: string;
  help?: string;
}

export interface OverlayCommand {
  number: number;
  command: string;
  target: string;
  line: number;
  run: boolean | null;
  skip_reason: string | null;
  tier: string | null;
  decision: string | null;
  reason: string | null;
}

export type Verdict = "waiting" | "complete" | "complete_without_eof" | "truncated" | "timeout" | "exhausted";

export interface FollowReport {
  verdict: Verdict;
  code: string | null;
  final: boolean;
  ok: boolean;
  diagnostics: Diagnostic[];
  commands: OverlayCommand[];
  control: string | null;
  correction: string | null;
  lines: number;
}

export interface PageObservation {
  siteStreaming: boolean;
  /// The site's stop signal was seen during this reply: then @@eof and its end are decisive.
  stopSignalSeen: boolean;
  quietMs: number;
  waitedMs: number;
  exhausted: boolean;
  truncationBudgetSeconds: number;
  replyTimeoutSeconds: number;
}

export type Delivery = { kind: "paste" } | { kind: "attach"; file_name: string; note: string };

export interface DoctorLine {
  key: string;
  selector: string | null;
  status: "ok" | "missing" | "broken" | "unset" | "unknown";
  code: string | null;
  message: string;
}

export interface SelectorProbe {
  key: string;
  matches: number | null;
}

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
}

/// What the host answered for a reply (POST /v1/sessions/{id}/replies).
export interface ReplyAnswer {
  batch_id: string;
  turn: number;
  batch: number;
  status: "done" | "rejected" | "interrupted";
  text: string;
  control: string | null;
  turn_ended: string | null;
  stored: boolean;
  next_turn: number;
  next_batch: number;
}

/// What the content script does with a host answer.
export interface ReplyOutcome {
  answer: ReplyAnswer;
  /// Send `answer.text` back into the chat (false when the turn ended or the run is paused).
  send: boolean;
  delivery: Delivery;
  run: TabRun;
}

/// Events from keyless-host (GET /v1/events), passed on to the tab whose session they concern.
export interface HostEvent {
  type: string;
  session?: string;
  [key: string]: unknown;
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
  error?: string;
  workspace?: string;
}

/// Requests to the worker: the request body and the answer.
export interface Requests {
  // from content scripts
  site: { req: { host: string }; res: { site: SiteAdapter | null; error: string | null; settings: Settings } };
  /// The page's text is the last text the worker saw for this tab, cut to `keep` characters, then
  /// `tail`. A worker that lost that text (it restarted) answers `{resync: true}`.
  /// The answer carries only the commands from `commandsFrom` on (those before are unchanged since
  /// the last answer for this reply).
  follow: { req: { keep: number; tail: string; page: PageObservation }; res: (FollowReport & { commandsFrom: number }) | { resync: true } };
  reply: { req: { text: string }; res: ReplyOutcome };
  answer: { req: { id: number; approve?: boolean; answer?: string }; res: { ok: boolean } };
  cancel: { req: Record<string, never>; res: { ok: boolean } };
  tabRun: { req: Record<string, never>; res: { run: TabRun | null } };
  delivered: { req: { ok: boolean; code?: string; endToSentMs?: number }; res: { ok: boolean } };
  metric: { req: { overlayMs: number; chars: number; pageMs: number }; res: { ok: boolean } };
  ping: { req: Record<string, never>; res: { ok: boolean } };
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
  checkOverrides: { req: { text: string }; res: { ok: boolean; error: string | null; sites: SiteAdapter[] } };
  defaultSites: { req: Record<string, never>; res: { json: string } };
  runOf: { req: { tabId: number }; res: { run: TabRun | null } };
  start: { req: { tabId: number; task: string }; res: { run: TabRun } };
  pause: { req: { tabId: number }; res: { run: TabRun | null } };
  resume: { req: { tabId: number }; res: { run: TabRun | null } };
  stop: { req: { tabId: number }; res: { run: TabRun | null } };
  doctor: { req: { tabId: number }; res: { site: string | null; lines: DoctorLine[]; error: string | null } };
  metrics: { req: Record<string, never>; res: Metrics };
}

export type RequestType = keyof Requests;
export type Request<K extends RequestType = RequestType> = { type: K } & Requests[K]["req"];
/// Every answer is either `{ ok: true, value }` or `{ ok: false, error }` with a KA_ code first.
export type Reply<K extends RequestType> = { ok: true; value: Requests[K]["res"] } | { ok: false; error: string };

/// Messages the worker sends to a tab's content script.
export type TabMessage =
  | { type: "event"; event: HostEvent }
  | { type: "paste"; text: string; send: boolean }
  | { type: "run"; run: TabRun | null }
  | { type: "probe"; selectors: Selectors };

/// Sends a request to the worker and unwraps its answer (throws `Error("KA_… message")`).
export async function ask<K extends RequestType>(type: K, req: Requests[K]["req"]): Promise<Requests[K]["res"]> {
  const reply = (await chrome.runtime.sendMessage({ type, ...req })) as Reply<K> | undefined;
  if (!reply) throw new Error("KA_INTERNAL the keyless worker did not answer");
  if (!reply.ok) throw new Error(reply.error);
  return reply.value;
}
