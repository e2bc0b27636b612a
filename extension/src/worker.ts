// The extension's service worker: the one place that talks to keyless-host (pairing token,
// retries with the same batch id, the event stream) and runs the wasm core. Content scripts and
// the popup reach it through one typed message-handler map.

import init, {
  defaultSitesJson,
  deliveryFor,
  addOverride,
  choosePick,
  doctorReport,
  importOverrides,
  pickCandidates,
  extensionDefaults,
  followGeneration,
  ReplyFollower,
  loadSites,
  readPairingCode,
  siteForHost,
  suggestNewChat,
} from "../../target/wasm-pkg/keyless_wasm.js";
import { errorText, KeylessError } from "../../www/common/error.js";
import type { HandoverAnswer } from "./generated/core.js";
import { type Call, callHost, hostEvent, v1 } from "../../www/common/host-api.js";
import { nativeHostMissing, ownOrigin, pairingId } from "./browser.js";
import {
  type FollowReport,
  type Generation,
  type HostStatus,
  type Metrics,
  type ReplyAnswer,
  type Request,
  type RequestType,
  type Requests,
  type SelectorProbe,
  type Settings,
  type SiteAdapter,
  type TabMessage,
  type TabRun,
  type WireError,
} from "./protocol.js";

// ---- the wasm core, loaded once per worker start ----

let wasm: Promise<unknown> | null = null;
function core(): Promise<unknown> {
  wasm ??= init({ module_or_path: chrome.runtime.getURL("keyless_wasm_bg.wasm") });
  return wasm;
}

/// The native-messaging host `keyless-host install` registers (keyless_host::native::HOST_NAME).
const NATIVE_HOST = "dev.keyless.host";

// ---- the reply each tab follows ----

/// Per tab: the page text the content script last sent, and the core's follower for it. A new
/// reply (keep 0), a changed mode or pace, or a new run starts a fresh one.
const following = new Map<number, { key: string; text: string; follower: ReplyFollower; sent: string[] }>();

const commandKey = (c: FollowReport["commands"][number]) =>
  `${c.number}\u0000${c.command}\u0000${c.target}\u0000${c.tier ?? ""}\u0000${c.decision ?? ""}\u0000${c.reason ?? ""}\u0000${String(c.run)}\u0000${c.skip_reason ?? ""}\u0000${c.line}`;

function forgetFollower(tabId: number): void {
  following.get(tabId)?.follower.free();
  following.delete(tabId);
}

// ---- storage ----

interface Pairing {
  hostUrl: string;
  token: string;
}

async function settings(): Promise<Settings> {
  await core();
  // Extension storage holds only what this worker wrote, under these keys.
  const { settings } = await chrome.storage.local.get<{ settings?: Partial<Settings> }>("settings");
  return { ...extensionDefaults(), ...(settings ?? {}) };
}

async function pairing(): Promise<Pairing | null> {
  const { pairing } = await chrome.storage.local.get<{ pairing?: Pairing }>("pairing");
  return pairing ?? null;
}

async function runOf(tabId: number): Promise<TabRun | null> {
  const key = `run:${tabId}`;
  const got = await chrome.storage.session.get<Record<string, TabRun | undefined>>(key);
  return got[key] ?? null;
}

async function saveRun(tabId: number, run: TabRun | null): Promise<void> {
  // The mode or pace may have changed: the next update starts a fresh follower.
  forgetFollower(tabId);
  const key = `run:${tabId}`;
  if (run) await chrome.storage.session.set({ [key]: run });
  else await chrome.storage.session.remove(key);
  const active = await activeRuns();
  for (const [session, tab] of active) if (tab === tabId) active.delete(session);
  const live = run !== null && (run.state === "running" || run.state === "paused");
  if (live) active.set(run.session, tabId);
  const msg: TabMessage = { type: "run", run };
  chrome.tabs.sendMessage(tabId, msg).catch(() => undefined);
  if (live) void ensureEvents();
}

/// Running or paused sessions → their tab. Read from storage once per worker start, then kept
/// up to date by saveRun, so the event stream does not read storage for every event.
let activeCache: Map<string, number> | null = null;
async function activeRuns(): Promise<Map<string, number>> {
  if (activeCache) return activeCache;
  const all = await chrome.storage.session.get<Record<string, TabRun>>(null);
  const bySession = new Map<string, number>();
  for (const [k, run] of Object.entries(all)) {
    if (!k.startsWith("run:")) continue;
    if (run.state === "running" || run.state === "paused") bySession.set(run.session, Number(k.slice(4)));
  }
  activeCache ??= bySession;
  return activeCache;
}

// ---- keyless-host ----

/// One call to keyless-host with the pairing token. Network failures are KA_HOST_UNREACHABLE
/// (KA_NETWORK_OFFLINE when the browser is offline); the host's own errors keep their KA_ code.
async function api<A>(call: Call<A>, pair?: Pairing): Promise<A> {
  const p = pair ?? (await pairing());
  if (!p) throw new KeylessError("KA_UNAUTHORIZED", "pair the extension with keyless-host first (open the keyless popup)", { status: 401 });
  return callHost(p.hostUrl, p.token, call);
}

/// A call that failed on the way (nothing answered, a timeout, a 5xx) may be sent again: the
/// host maps a retry to the request it answers already.
function retryable(e: unknown): boolean {
  const status = e instanceof KeylessError ? e.status : undefined;
  return status !== undefined && (status === 0 || status >= 500 || status === 408);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/// POSTs a reply. A network failure or a 5xx is retried with the same turn and batch, so the
/// host maps the retry to the same batch id and never runs it twice.
async function postReply(run: TabRun, text: string): Promise<ReplyAnswer> {
  const call = v1.reply(run.session, { reply: text, turn: run.turn, batch: run.batch });
  let wait = 500;
  for (let attempt = 1; ; attempt++) {
    try {
      return await api(call);
    } catch (e) {
      if (!retryable(e) || attempt >= 6) throw e;
      await sleep(wait);
      wait = Math.min(wait * 2, 8000);
    }
  }
}

// ---- the host's event stream, passed on to the tabs whose sessions it concerns ----

let events: AbortController | null = null;

async function ensureEvents(): Promise<void> {
  if (events) return;
  const p = await pairing();
  if (!p || !(await wantsEvents())) return;
  const ctl = new AbortController();
  events = ctl;
  try {
    const res = await fetch(`${p.hostUrl}/v1/events`, { headers: { authorization: `Bearer ${p.token}` }, signal: ctl.signal });
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let cut: number;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const data = block
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart())
          .join("\n");
        if (data) await dispatch(data);
      }
    }
  } catch {
    // reconnect below
  } finally {
    if (events === ctl) events = null;
  }
  if (!ctl.signal.aborted && (await wantsEvents())) {
    await sleep(1000);
    void ensureEvents();
  }
}

/// The event stream is needed while a tab runs a session or answers programs.
async function wantsEvents(): Promise<boolean> {
  return (await activeRuns()).size > 0 || (await programsTab()) !== null;
}

async function dispatch(data: string): Promise<void> {
  const event = hostEvent(data);
  if (event?.type === "generation") {
    await onGeneration(event.generation);
    return;
  }
  if (!event || !("session" in event)) return;
  const tab = (await activeRuns()).get(event.session);
  if (tab === undefined) return;
  const msg: TabMessage = { type: "event", event };
  chrome.tabs.sendMessage(tab, msg).catch(() => undefined);
}

// ---- keyless://chat: the tab that answers .as programs ----

interface ProgramsTab {
  tabId: number;
  site: string;
}

async function programsTab(): Promise<ProgramsTab | null> {
  const { programs } = await chrome.storage.session.get<{ programs?: ProgramsTab }>("programs");
  return programs ?? null;
}

/// Generations this worker is claiming right now.
const claiming = new Set<string>();

/// Tabs whose task is moving to a new chat (Continue): a reply they finish meanwhile is refused.
const moving = new Map<number, string>();
/// Tabs whose reply the host is running now: a move waits for that batch to end, so the
/// handover holds it and the new chat starts after it.
const running = new Map<number, Promise<unknown>>();

/// The generation a tab is answering (chrome.storage.session, key "gen:<tabId>").
async function generationOf(tabId: number): Promise<string | null> {
  const key = `gen:${tabId}`;
  const got = await chrome.storage.session.get<Record<string, string | undefined>>(key);
  return got[key] ?? null;
}

async function setGeneration(tabId: number, id: string | null): Promise<void> {
  const key = `gen:${tabId}`;
  if (id) await chrome.storage.session.set({ [key]: id });
  else await chrome.storage.session.remove(key);
}

/// Tells the host the programs tab is there (or gone); takes the generations waiting for it.
async function reportProgramsTab(): Promise<void> {
  const p = await programsTab();
  if (!p || !(await pairing())) return;
  const state = await api(v1.chatTab({ site: p.site }));
  for (const g of state.pending) await onGeneration(g);
}

/// A generation changed at the host: the programs tab takes a new one (unless it is busy with an
/// AgentScript task, which refuses it), and hears when the one it answers ended elsewhere.
async function onGeneration(g: Generation): Promise<void> {
  const p = await programsTab();
  if (!p) return;
  const current = await generationOf(p.tabId);
  if (g.state !== "pending") {
    if (current === g.id && g.state !== "claimed") {
      await setGeneration(p.tabId, null);
      if (g.state !== "answered") {
        const msg: TabMessage = { type: "generationEnded", generation: g };
        chrome.tabs.sendMessage(p.tabId, msg).catch(() => undefined);
      }
    }
    return;
  }
  // One generation at a time per tab: the next waits at the host until this one ends.
  if (current !== null && current !== g.id) return;
  const run = await runOf(p.tabId);
  if (run && (run.state === "running" || run.state === "paused")) {
    const busy: WireError = {
      code: "KA_AS_CHAT_BUSY",
      message: `the ${p.site} tab is in the middle of an AgentScript task (session ${run.session}); stop it in the keyless popup, or turn on "Answer .as programs here" in another chat tab`,
    };
    await api(v1.answerGeneration(g.id, { error: errorText(busy) })).catch(() => undefined);
    return;
  }
  if (current === g.id || claiming.has(g.id)) return;
  let claimed: Generation;
  claiming.add(g.id);
  try {
    claimed = await api(v1.claimGeneration(g.id, { site: p.site }));
  } catch {
    // Taken already (the event stream and the tab's report both offer it), or ended meanwhile.
    return;
  } finally {
    claiming.delete(g.id);
  }
  await setGeneration(p.tabId, claimed.id);
  const msg: TabMessage = { type: "generate", generation: claimed };
  try {
    await chrome.tabs.sendMessage(p.tabId, msg);
  } catch {
    await setGeneration(p.tabId, null);
    const closed: WireError = { code: "KA_AS_CHAT_CLOSED", message: `the ${p.site} tab did not answer; reload it` };
    await api(v1.answerGeneration(g.id, { error: errorText(closed) })).catch(() => undefined);
  }
}

/// Sends a generation's end to the host, retrying network failures: the host takes one answer. The
/// host's API takes a failure as its text, `KA_… message`.
async function postGenerated(id: string, req: { answer: string } | { error: WireError }): Promise<void> {
  const body = "answer" in req ? { answer: req.answer } : { error: errorText(req.error) };
  let wait = 500;
  for (let attempt = 1; ; attempt++) {
    try {
      await api(v1.answerGeneration(id, body));
      return;
    } catch (e) {
      if (!retryable(e) || attempt >= 6) throw e;
      await sleep(wait);
      wait = Math.min(wait * 2, 8000);
    }
  }
}

// ---- sites ----

async function siteForTab(tab: chrome.tabs.Tab | undefined): Promise<SiteAdapter | null> {
  if (!tab?.url) return null;
  await core();
  const s = await settings();
  return siteForHost(s.selectorOverrides || undefined, new URL(tab.url).hostname);
}

// ---- metrics (for the figures in docs/extension.md) ----

const metrics: Metrics = { endToSent: [], overlayUpdate: [], overlayChars: [], pageMs: [], coreMs: [] };

// ---- the handler map ----

type Sender = chrome.runtime.MessageSender;
type Handlers = { [K in RequestType]: (req: Request<K>, sender: Sender) => Promise<Requests[K]["res"]> };

/// What a request about a tab that is no chat keyless supports fails with.
function notChat(): KeylessError {
  return new KeylessError("KA_SELECTOR_NOT_FOUND", "this tab is not a supported chat site");
}

function tabOf(sender: Sender): number {
  const id = sender.tab?.id;
  if (id === undefined) throw new KeylessError("KA_INTERNAL", "this request must come from a chat tab");
  return id;
}

async function status(): Promise<HostStatus> {
  const p = await pairing();
  const s = await settings();
  if (!p) return { paired: false, connected: false, hostUrl: s.hostUrl };
  try {
    const st = await api(v1.status(), p);
    return { paired: true, connected: true, hostUrl: p.hostUrl, workspace: st.workspace };
  } catch (e) {
    const err = KeylessError.from(e);
    if (err.code === "KA_UNAUTHORIZED") {
      await chrome.storage.local.remove("pairing");
      return { paired: false, connected: true, hostUrl: p.hostUrl, error: err.wire };
    }
    return { paired: true, connected: false, hostUrl: p.hostUrl, error: err.wire };
  }
}

/// Moves the task of tab `from` to a new chat of `site`: see `continueIn`.
async function moveTask(from: number, site: string): Promise<{ tabId: number; run: TabRun }> {
  await core();
  const s = await settings();
  let all: SiteAdapter[];
  try {
    all = loadSites(s.selectorOverrides || undefined);
  } catch {
    all = loadSites(undefined);
  }
  const target = all.find((a) => a.name === site);
  if (!target?.hosts[0]) throw new KeylessError("KA_CONFIG_VALIDATION", `"${site}" is not a chat site keyless supports`);
  const fromSite = (await siteForTab(await chrome.tabs.get(from).catch(() => undefined)).catch(() => null))?.name ?? "";
  // A batch the host is running for this tab ends first: the handover holds it.
  await running.get(from)?.catch(() => undefined);
  const old = await runOf(from);
  if (!old) throw new KeylessError("KA_SESSION_NOT_FOUND", "the session left this tab while it moved");
  const tab = await chrome.tabs.create({ url: `https://${target.hosts[0]}/`, active: true });
  if (tab.id === undefined) throw new KeylessError("KA_INTERNAL", "the browser opened no tab");
  const to = tab.id;
  let handover: HandoverAnswer;
  try {
    handover = await api(
      v1.handover(old.session, { site: target.name, max_paste_chars: target.max_paste_chars, uploads: (target.selectors.file_input ?? []).length > 0, tab: to }),
    );
  } catch (e) {
    // Nothing moved: the blank tab goes, the task stays here.
    await chrome.tabs.remove(to).catch(() => undefined);
    throw e;
  }
  // The old tab first: from now on a reply it finishes is refused, never run a second time.
  await saveRun(from, { ...old, state: "ended", reason: "KA_SESSION_MOVED", movedTo: { tabId: to, site: target.name } });
  // A new chat: its thread starts with the handover.
  const run: TabRun = { ...old, turn: handover.turn, batch: handover.batch, state: "running", movedFrom: { tabId: from, site: fromSite }, threadChars: handover.text.length };
  delete run.reason;
  delete run.movedTo;
  delete run.suggestedAt;
  await saveRun(to, run);
  // The new tab's page takes the handover once its content script answers.
  const msg: TabMessage = { type: "paste", text: handover.text, send: s.autoSend, delivery: handover.delivery };
  const until = Date.now() + 60000;
  let why = "it did not answer";
  for (;;) {
    try {
      if (await chrome.tabs.sendMessage(to, msg)) break;
    } catch (e) {
      why = message(e);
    }
    if (Date.now() > until) {
      throw new KeylessError("KA_SELECTOR_NOT_FOUND", `the new ${target.name} chat did not load within a minute (${why}); close it and press Continue again here`);
    }
    await sleep(250);
  }
  return { tabId: to, run };
}

const handlers: Handlers = {
  async site(req) {
    await core();
    const s = await settings();
    try {
      return { site: siteForHost(s.selectorOverrides || undefined, req.host), error: null, settings: s };
    } catch (e) {
      // The user's overrides are broken: fall back to the shipped adapters, and say why.
      return { site: siteForHost(undefined, req.host), error: KeylessError.from(e).wire, settings: s };
    }
  },
  async follow(req, sender) {
    await core();
    const id = sender.tab?.id ?? -1;
    let f = following.get(id);
    if (!f) {
      if (req.keep !== 0) return { resync: true };
      const run = id === -1 ? null : await runOf(id);
      const s = await settings();
      const key = `${run?.pace ?? s.pace}|${run?.mode ?? s.mode}|${run?.gate?.movement ?? ""}|${JSON.stringify(run?.context ?? null)}`;
      // Judged as the host will: the session's mode, the host's allow-list, the movement's tools,
      // what the host knows of the workspace.
      const options = {
        pace: run?.pace ?? s.pace,
        mode: run?.mode ?? s.mode,
        allow: run?.allow ?? [],
        ...(run?.gate ? { gate: run.gate } : {}),
        ...(run?.context ? { context: run.context } : {}),
      };
      f = { key, text: "", follower: new ReplyFollower(options), sent: [] };
      following.set(id, f);
    }
    if (req.keep > f.text.length) return { resync: true };
    // A new reply (nothing kept): the page starts its command list afresh.
    if (req.keep === 0) f.sent = [];
    f.text = f.text.slice(0, req.keep) + req.tail;
    const t0 = performance.now();
    const report = f.follower.update(f.text, req.page);
    if (req.tail !== "" && f.text.length > 1000) metrics.coreMs.push(Math.round((performance.now() - t0) * 1000) / 1000);
    // Only the commands that changed since the last answer go back to the page.
    const keys = report.commands.map(commandKey);
    let from = 0;
    while (from < keys.length && from < f.sent.length && keys[from] === f.sent[from]) from++;
    if (keys.length < f.sent.length && from === keys.length) from = Math.max(0, keys.length - 1);
    f.sent = keys;
    return { ...report, commands: report.commands.slice(from), commandsFrom: from };
  },
  async reply(req, sender) {
    const tabId = tabOf(sender);
    const run = await runOf(tabId);
    if (run?.movedTo) {
      // The session went on in another chat: a reply this tab finishes late runs nothing, so no
      // batch runs twice.
      throw new KeylessError("KA_SESSION_MOVED", `this task continues in a new ${run.movedTo.site} chat (another tab); this reply was not run`);
    }
    const to = moving.get(tabId);
    if (to !== undefined) throw new KeylessError("KA_SESSION_MOVED", `this task is moving to a new ${to} chat; this reply was not run`);
    if (!run || run.state === "stopped" || run.state === "ended") {
      throw new KeylessError("KA_SESSION_NOT_FOUND", "no running keyless session in this tab; press Start in the keyless popup");
    }
    const posted = postReply(run, req.text);
    running.set(tabId, posted);
    let answer: Awaited<typeof posted>;
    try {
      answer = await posted;
    } finally {
      running.delete(tabId);
    }
    const s = await settings();
    const ended = answer.turn_ended !== null;
    // The user may have paused or stopped the run while the batch ran.
    const now = (await runOf(tabId)) ?? run;
    await core();
    const site = await siteForTab(sender.tab);
    // The thread as the chat holds it: what was sent and read here, with the results to come.
    const chars = (now.threadChars ?? 0) + req.text.length + (ended ? 0 : answer.text.length);
    const limit = site?.long_thread_chars ?? 0;
    const suggest = s.suggestNewChat && !ended && suggestNewChat(chars, now.suggestedAt ?? 0, limit);
    const next: TabRun = {
      ...now,
      turn: answer.next_turn,
      batch: answer.next_batch,
      state: ended ? "ended" : now.state,
      ...(ended ? { reason: answer.turn_ended ?? "done" } : {}),
      // The movement the next reply is judged in, and the workspace as the host sees it now.
      ...(answer.piece ? { gate: answer.piece.tools } : {}),
      context: answer.context,
      threadChars: chars,
      ...(suggest ? { suggestedAt: chars } : {}),
    };
    // A Stop, Pause or Resume made since the run was read above is kept.
    const saved =
      (await updateRun(tabId, (latest) => {
        // A run that ended meanwhile (continued in another chat) stays as it is.
        if (!ended && latest?.state === "ended") return undefined;
        return { ...next, state: ended || !latest ? next.state : latest.state };
      })) ?? next;
    const delivery = site ? deliveryFor(answer.text, site, answer.turn, answer.batch) : { kind: "paste" as const };
    return { answer, send: !ended && s.autoSend && saved.state === "running", delivery, run: saved, ...(suggest ? { longThread: { chars, limit } } : {}) };
  },
  async answer(req) {
    const { id, ...body } = req;
    await api(v1.answer(id, body));
    return { ok: true };
  },
  async cancel(_req, sender) {
    const run = await runOf(tabOf(sender));
    if (run) await api(v1.cancel(run.session));
    return { ok: true };
  },
  async tabRun(_req, sender) {
    const tabId = tabOf(sender);
    const run = await runOf(tabId);
    if (run && (run.state === "running" || run.state === "paused")) void ensureEvents();
    const programs = (await programsTab())?.tabId === tabId;
    if (programs) void ensureEvents();
    // The page (re)started while it answered a program: the reply it followed is gone.
    const lost = await generationOf(tabId);
    if (lost) {
      await setGeneration(tabId, null);
      await postGenerated(lost, { error: { code: "KA_AS_CHAT_CLOSED", message: "the chat tab reloaded or left the chat while the model answered" } }).catch(() => undefined);
    }
    return { run, programs };
  },
  async delivered(req) {
    if (req.ok && req.endToSentMs !== undefined) metrics.endToSent.push(Math.round(req.endToSentMs));
    return { ok: true };
  },
  async metric(req) {
    metrics.overlayUpdate.push(req.overlayMs);
    metrics.overlayChars.push(req.chars);
    metrics.pageMs.push(req.pageMs);
    if (metrics.overlayUpdate.length > 5000) {
      metrics.overlayUpdate.splice(0, 1000);
      metrics.overlayChars.splice(0, 1000);
      metrics.pageMs.splice(0, 1000);
      metrics.coreMs.splice(0, Math.max(0, metrics.coreMs.length - 4000));
    }
    return { ok: true };
  },
  async ping(_req, sender) {
    void ensureEvents();
    const p = await programsTab();
    if (p && p.tabId === sender.tab?.id) await reportProgramsTab().catch(() => undefined);
    return { ok: true };
  },
  async followGeneration(req) {
    await core();
    return followGeneration(req.text, JSON.stringify(req.shape), req.page);
  },
  async generated(req, sender) {
    const tabId = tabOf(sender);
    await postGenerated(req.id, req.answer !== undefined ? { answer: req.answer } : { error: req.error ?? { code: "KA_INTERNAL", message: "no answer" } });
    if ((await generationOf(tabId)) === req.id) await setGeneration(tabId, null);
    // The next generation may be waiting already.
    await reportProgramsTab().catch(() => undefined);
    return { ok: true };
  },
  async generationSeen(req) {
    await api(v1.seeGeneration(req.id, { seen: req.seen }));
    return { ok: true };
  },
  async cancelGeneration(req, sender) {
    await api(v1.cancelGeneration(req.id, "the overlay"));
    const tabId = tabOf(sender);
    if ((await generationOf(tabId)) === req.id) await setGeneration(tabId, null);
    return { ok: true };
  },
  async programs(req) {
    const now = await programsTab();
    if (req.on === undefined) return { on: now?.tabId === req.tabId, tabId: now?.tabId ?? null };
    if (req.on) {
      const tab = await chrome.tabs.get(req.tabId);
      const site = await siteForTab(tab);
      if (!site) throw notChat();
      const old = await programsTab();
      if (old && old.tabId !== req.tabId) chrome.tabs.sendMessage(old.tabId, { type: "programs", on: false } satisfies TabMessage).catch(() => undefined);
      await chrome.storage.session.set({ programs: { tabId: req.tabId, site: site.name } satisfies ProgramsTab });
      chrome.tabs.sendMessage(req.tabId, { type: "programs", on: true } satisfies TabMessage).catch(() => undefined);
      await reportProgramsTab();
      void ensureEvents();
      return { on: true, tabId: req.tabId };
    }
    if (now?.tabId === req.tabId) {
      chrome.tabs.sendMessage(req.tabId, { type: "programs", on: false } satisfies TabMessage).catch(() => undefined);
      await chrome.storage.session.remove("programs");
      await api(v1.chatTab({ site: null })).catch(() => undefined);
    }
    return { on: false, tabId: null };
  },
  status,
  async pair(req) {
    const hostUrl = req.hostUrl.trim().replace(/\/+$/, "");
    let url: URL;
    try {
      url = new URL(hostUrl);
    } catch {
      throw new KeylessError("KA_CONFIG_VALIDATION", `"${hostUrl}" is not an address; use http://127.0.0.1:<port> as keyless-host serve prints it`);
    }
    if (url.protocol !== "http:" || !["127.0.0.1", "localhost"].includes(url.hostname)) {
      throw new KeylessError("KA_CONFIG_VALIDATION", "the host address must be http://127.0.0.1:<port> or http://localhost:<port>");
    }
    // A typo is caught here, before anything is sent: it never counts as a wrong try.
    await core();
    const code = readPairingCode(req.code);
    // No token yet: pairing is the one call that needs none.
    let paired;
    try {
      paired = await callHost(hostUrl, "", v1.pair({ code, extension_id: pairingId() }));
    } catch (e) {
      if (e instanceof KeylessError && e.retryAfterSeconds !== undefined) {
        const at = new Date(Date.now() + e.retryAfterSeconds * 1000).toLocaleTimeString();
        throw new KeylessError(e.code, `${e.message} (you can try again at ${at})`, { status: e.status });
      }
      throw e;
    }
    await chrome.storage.local.set({ pairing: { hostUrl, token: paired.token } satisfies Pairing });
    await chrome.storage.local.set({ settings: { ...(await settings()), hostUrl } });
    return status();
  },
  async autoPair() {
    let r: { hostUrl?: string; token?: string; error?: string } | undefined;
    try {
      // Firefox does not tell the host who calls: the origin comes with the request.
      r = (await chrome.runtime.sendNativeMessage(NATIVE_HOST, { type: "pair", origin: ownOrigin() })) as typeof r;
    } catch (e) {
      // keyless-host install never ran (each browser says it its own way).
      const text = message(e);
      const why = nativeHostMissing(text)
        ? "To pair without a code, run keyless-host install once (then open this popup again)."
        : `${text} (run keyless-host install again to pair without a code)`;
      return { ...(await status()), autoPair: why };
    }
    if (!r?.token || !r.hostUrl) return { ...(await status()), autoPair: r?.error ?? "keyless-host gave no token" };
    await chrome.storage.local.set({ pairing: { hostUrl: r.hostUrl, token: r.token } satisfies Pairing });
    await chrome.storage.local.set({ settings: { ...(await settings()), hostUrl: r.hostUrl } });
    return status();
  },
  async unpair() {
    await chrome.storage.local.remove("pairing");
    return status();
  },
  async pieces() {
    const list = await api(v1.pieces());
    return { pieces: list.map(({ name, description }) => ({ name, description })) };
  },
  getSettings: () => settings(),
  async setSettings(req) {
    const { type: _t, ...patch } = req;
    void _t;
    const next = { ...(await settings()), ...patch };
    await chrome.storage.local.set({ settings: next });
    // A new mode or pace applies to the running sessions too, from their next batch on.
    if (patch.mode !== undefined || patch.pace !== undefined) {
      const all = await chrome.storage.session.get<Record<string, TabRun>>(null);
      for (const [key, run] of Object.entries(all)) {
        if (!key.startsWith("run:") || (run.state !== "running" && run.state !== "paused")) continue;
        await api(v1.sessionSettings(run.session, { mode: next.mode, pace: next.pace }));
        await saveRun(Number(key.slice(4)), { ...run, mode: next.mode, pace: next.pace });
      }
    }
    return next;
  },
  async checkOverrides(req) {
    await core();
    try {
      return { ok: true, error: null, sites: loadSites(req.text.trim() || undefined) };
    } catch (e) {
      return { ok: false, error: KeylessError.from(e).wire, sites: [] };
    }
  },
  async defaultSites() {
    await core();
    return { json: defaultSitesJson() };
  },
  async importOverrides(req) {
    await core();
    const s = await settings();
    return { text: importOverrides(s.selectorOverrides || undefined, req.text) };
  },
  async pickCandidates(req) {
    await core();
    return { candidates: pickCandidates(req.picked) };
  },
  async savePick(req, sender) {
    await core();
    const s = await settings();
    const site = siteForHost(s.selectorOverrides || undefined, req.host);
    if (!site) throw notChat();
    const i = choosePick(req.key, req.candidates, req.facts);
    if (i === undefined) {
      throw new KeylessError(
        "KA_SELECTOR_NOT_FOUND",
        `no selector finds ${req.key === "assistant_message" ? "every reply and no message of yours" : "that element alone"} on this page; pick a different spot, or write the override in the options page`,
      );
    }
    const selector = req.candidates[i] ?? "";
    const current = (site.selectors as unknown as Record<string, string[] | undefined>)[req.key] ?? [];
    const overrides = addOverride(s.selectorOverrides || undefined, site.id, req.key, selector, current);
    await chrome.storage.local.set({ settings: { ...s, selectorOverrides: overrides } });
    void sender;
    return { selector, site: siteForHost(overrides, req.host) };
  },
  async tabSite(req, sender) {
    await core();
    const s = await settings();
    // The page asks about its own tab (-1): an id below 0 makes tabs.get throw at once.
    const tab = req.tabId >= 0 ? await chrome.tabs.get(req.tabId).catch(() => undefined) : sender.tab;
    const site = await siteForTab(tab).catch(() => null);
    let all: SiteAdapter[];
    try {
      all = loadSites(s.selectorOverrides || undefined);
    } catch {
      all = loadSites(undefined);
    }
    return {
      site: site?.name ?? null,
      supported: all.map((a) => ({ name: a.name, url: `https://${a.hosts[0] ?? ""}/` })),
    };
  },
  async runOf(req) {
    return { run: await runOf(req.tabId) };
  },
  async start(req) {
    if ((await generationOf(req.tabId)) !== null) {
      throw new KeylessError("KA_AS_CHAT_BUSY", "this tab is answering a .as program right now; wait for it, or press Cancel in the overlay");
    }
    const s = await settings();
    const tab = await chrome.tabs.get(req.tabId);
    if (!(await siteForTab(tab))) throw notChat();
    const task = req.task.trim();
    const old = await runOf(req.tabId);
    let run: TabRun;
    let text: string;
    if (old && old.state === "ended" && old.reason === "done" && task) {
      // The session goes on: a new task is a new turn in the same chat.
      run = { ...old, state: "running", threadChars: (old.threadChars ?? 0) + task.length };
      delete run.reason;
      text = task;
    } else {
      const created = await api(
        v1.startSession({ mode: s.mode, pace: s.pace, ...(s.piece ? { piece: s.piece } : {}), ...(task ? { task } : {}) }),
      );
      run = {
        session: created.session,
        turn: created.turn,
        batch: created.batch,
        state: "running",
        mode: s.mode,
        pace: s.pace,
        ...(s.piece ? { piece: s.piece } : {}),
        allow: created.allow,
        ...(created.gate ? { gate: created.gate } : {}),
        context: created.context,
        ...(created.branch ? { branch: created.branch } : {}),
        ...(created.branch_note ? { branchNote: created.branch_note } : {}),
        threadChars: created.prompt.length,
      };
      // The host's prompt is the whole first message: the system prompt, the movement, the task.
      text = created.prompt;
    }
    await saveRun(req.tabId, run);
    const msg: TabMessage = { type: "paste", text, send: task !== "" && s.autoSend };
    await chrome.tabs.sendMessage(req.tabId, msg);
    return { run };
  },
  async continueIn(req, sender) {
    const from = req.tabId ?? tabOf(sender);
    if (moving.has(from)) throw new KeylessError("KA_SESSION_MOVED", `this task is already moving to a new ${moving.get(from) ?? ""} chat`);
    const first = await runOf(from);
    if (!first) throw new KeylessError("KA_SESSION_NOT_FOUND", "no keyless session in this tab to continue; press Start in the keyless popup");
    if (first.movedTo) {
      // Moved before: refused while the new tab holds the session; a new tab that was closed or
      // lost it leaves the task here to move again.
      const there = await runOf(first.movedTo.tabId);
      if (there?.session === first.session) throw new KeylessError("KA_SESSION_MOVED", `this task already continues in a new ${first.movedTo.site} chat`);
    }
    moving.set(from, req.site);
    try {
      return await moveTask(from, req.site);
    } finally {
      moving.delete(from);
    }
  },

  async pause(req) {
    return { run: await setState(req.tabId, "paused") };
  },
  async resume(req) {
    return { run: await setState(req.tabId, "running") };
  },
  async stop(req) {
    // Stopped first, then the batch cancelled: the batch's end reads the stopped run, so its
    // results are not sent.
    const run = await runOf(req.tabId);
    const stopped = await setState(req.tabId, "stopped");
    if (run && run.state !== "ended") await api(v1.cancel(run.session)).catch(() => undefined);
    return { run: stopped };
  },
  async doctor(req) {
    const tab = await chrome.tabs.get(req.tabId);
    const site = await siteForTab(tab).catch(() => null);
    if (!site) return { site: null, lines: [], error: notChat().wire };
    const probe: TabMessage = { type: "probe", selectors: site.selectors };
    const probes: SelectorProbe[] | undefined = await chrome.tabs.sendMessage(req.tabId, probe);
    if (!probes) return { site: site.name, lines: [], error: { code: "KA_INTERNAL", message: "the page did not answer; reload the tab" } };
    const lines = doctorReport(site, probes);
    // The page's panel offers "Pick it" for what the user can show on the page.
    if (lines.some((l) => l.pick)) {
      const msg: TabMessage = { type: "doctor", lines };
      await chrome.tabs.sendMessage(req.tabId, msg).catch(() => undefined);
    }
    return { site: site.name, lines, error: null };
  },
  async capture(req) {
    const msg: TabMessage = { type: "capture" };
    const got: { name: string; html: string } | null | undefined = await chrome.tabs.sendMessage(req.tabId, msg);
    if (!got) throw new KeylessError("KA_SELECTOR_NOT_FOUND", "this tab is not a supported chat site (or the page did not answer; reload it)");
    return got;
  },
  async metrics() {
    return metrics;
  },
};

async function setState(tabId: number, state: TabRun["state"]): Promise<TabRun | null> {
  return updateRun(tabId, (run) => (!run || run.state === "ended" ? undefined : { ...run, state }));
}

/** Each tab's last read-modify-write of its run, so the next one waits for it. */
const runUpdates = new Map<number, Promise<unknown>>();

/**
 * Reads a tab's run, makes the next one with `f` and saves it (`undefined`: keeps it as it is),
 * one update at a time per tab: a Stop and the end of the batch it stopped never write over
 * each other.
 */
async function updateRun(tabId: number, f: (run: TabRun | null) => TabRun | undefined): Promise<TabRun | null> {
  const before = runUpdates.get(tabId) ?? Promise.resolve();
  const task = before
    .catch(() => undefined)
    .then(async () => {
      const run = await runOf(tabId);
      const next = f(run);
      if (next === undefined) return run;
      await saveRun(tabId, next);
      return next;
    });
  runUpdates.set(tabId, task);
  try {
    return await task;
  } finally {
    if (runUpdates.get(tabId) === task) runUpdates.delete(tabId);
  }
}

function message(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

function isRequestType(type: unknown): type is RequestType {
  return typeof type === "string" && Object.hasOwn(handlers, type);
}

chrome.runtime.onMessage.addListener((msg: { type?: unknown }, sender, sendResponse) => {
  const type = msg?.type;
  if (!isRequestType(type)) return false;
  // One typed map (protocol.ts Requests): the handler for `type` takes that request's shape.
  const handler = handlers[type] as (req: unknown, sender: Sender) => Promise<unknown>;
  handler(msg, sender).then(
    (value) => sendResponse({ ok: true, value }),
    (e: unknown) => sendResponse({ ok: false, error: KeylessError.from(e).wire }),
  );
  return true;
});

chrome.tabs.onRemoved.addListener((tabId) => {
  void saveRun(tabId, null);
  void (async () => {
    const id = await generationOf(tabId);
    const p = await programsTab();
    if (id) {
      await setGeneration(tabId, null);
      await postGenerated(id, { error: { code: "KA_AS_CHAT_CLOSED", message: `the ${p?.site ?? "chat"} tab was closed while the model answered` } }).catch(() => undefined);
    }
    if (p?.tabId === tabId) {
      await chrome.storage.session.remove("programs");
      await api(v1.chatTab({ site: null })).catch(() => undefined);
    }
  })();
});

// A worker that Chrome restarted picks the event stream up again for the running tabs.
void ensureEvents();
