// The content script of a chat page: follows the newest assistant reply as it streams, shows the
// overlay, hands complete replies to the worker, and writes the answers back into the chat.
// No wasm here (a site's CSP may forbid it): every decision comes from the worker's core.

import { errorText, KeylessError } from "../../www/common/error.js";
import { send, write } from "./composer.js";
import { COPY_EDITORS, EDITOR_TEXT, EDITORS, READ_EDITORS, WANT_COPY } from "./editors.js";
import { contentIn, readReply } from "./extract.js";
import { find, keyOf, newestUnseen, Seen } from "./identity.js";
import { capture, captureName } from "./capture.js";
import { match, matchAll, probeOne, touches } from "./select.js";
import { Overlay } from "./overlay.js";
import { ask, type CandidateFacts, type Delivery, type DoctorLine, type PickedNode, type FollowReport, type Generation, type HostEvent, type Inspection, type PageObservation, type ReplyOutcome, type Settings, type Selectors, type SiteAdapter, type TabMessage, type TabRun } from "./protocol.js";

interface Watch {
  /// Assistant messages that existed before the message this reply answers (by identity: a
  /// virtualized thread mounts old ones again as new elements).
  known: Seen;
  /// The reply being followed, once it showed: its key, or its element.
  followed: string | Element | null;
  /// When the message this reply answers was sent; null until the user sends it (after a Start
  /// that only pasted the prompt).
  sentAt: number | null;
  /// User messages on the page when the watch began.
  users: Seen;
  lastText: string;
  lastChange: number;
  /// The text the worker has for this reply (updates send only what changed).
  sent: string;
  /// The site's stop signal was seen during this reply.
  stopSeen: boolean;
  /// The reply's commands as the worker last reported them.
  commands: FollowReport["commands"];
  done: boolean;
  /// No text of this reply yet: the overlay still shows the last reply (its problems, its
  /// results) until the new one starts, so a correction's reason stays readable.
  fresh: boolean;
  /// A `.as` program's generation this reply answers (keyless://chat), not an AgentScript reply.
  gen?: Generation;
  /// What the host was last told the page shows of the generation's reply.
  seen?: string;
}

let site: SiteAdapter | null = null;
let settings: Settings | null = null;
let run: TabRun | null = null;
let overlay: Overlay | null = null;
let watch: Watch | null = null;
let busy = false;
let pending: { text: string; endAt: number } | null = null;
let unsent: { text: string; delivery: Delivery; endAt: number } | null = null;
let lastNoticeCheck = 0;
/// What the site's notices said at the last check: the chat is full, the usage limit is reached.
let notice = { exhausted: false, limited: false };
/// This tab answers `.as` programs (keyless://chat).
let programs = false;
/// The adapter and this tab's run are loaded: a paste may come.
let ready = false;
/// The thread passed the site's `long_thread_chars`: the overlay suggests a new chat until the
/// user moves or says "Not now".
let longThread: { chars: number; limit: number } | null = null;

function ui(): Overlay {
  if (!overlay) {
    overlay = new Overlay(() => {
      ask("cancel", {}).catch(() => undefined);
    });
  }
  return overlay;
}

/// The reply to a generation, as its watch sees it now: the live shape check, then the answer
/// (or why there is none) to the program, once.
async function tickGeneration(w: Watch, g: Generation, text: string, streaming: boolean, changed: boolean, page: PageObservation): Promise<void> {
  const r = await ask("followGeneration", { text, shape: g.shape, page });
  if (watch !== w) return;
  const o = ui();
  o.generationReport(r);
  if (r.seen !== w.seen) {
    // The host keeps it, so a program's timeout says what the page showed.
    w.seen = r.seen;
    ask("generationSeen", { id: g.id, seen: r.seen }).catch(() => undefined);
  }
  if (changed && text) o.setPhase(streaming ? "streaming" : "checking", "follow");
  if (r.verdict === "waiting") return;
  w.done = true;
  o.generationEnded();
  if (r.verdict === "complete" || r.verdict === "complete_without_eof") {
    o.setPhase("sending to the program", "run");
    try {
      await ask("generated", { id: g.id, answer: text });
    } catch (e) {
      const err = KeylessError.from(e);
      o.error(err.code, err.message);
      return;
    }
    o.setPhase("answered", "ok");
    o.note(`The answer went to the program ${Math.round(performance.now() - w.lastChange)} ms after the reply ended.${r.json && !r.fits ? " It does not fit the shape: the program decides whether to ask again." : ""}`);
    return;
  }
  const code = r.code ?? "KA_REPLY_TIMEOUT";
  const why =
    r.verdict === "truncated"
      ? `The reply stayed unfinished for ${settings?.truncationBudgetSeconds ?? 0} s. The program ends with ${code}; nothing is asked again.`
      : r.verdict === "exhausted" || r.verdict === "limited"
        ? `The chat says ${r.verdict === "limited" ? "its usage limit is reached" : "it is full"}. The program ends; start a new chat and turn on "Answer .as programs here" there.`
        : r.verdict === "incomplete"
          ? "Part of the reply sits in a code editor keyless could not read. The program ends; nothing of the reply was used."
          : `No complete reply within ${settings?.replyTimeoutSeconds ?? 0} s. The program ends.`;
  await ask("generated", { id: g.id, error: { code, message: why } }).catch(() => undefined);
  o.error(code, why);
}

/// Stops the site's reply when it is still coming (its stop button), so a cancelled generation
/// does not keep the chat busy.
function stopSite(): void {
  if (!site) return;
  const signal = match(site.selectors.streaming);
  const stop = signal?.closest("button") ?? signal?.querySelector("button");
  if (stop instanceof HTMLButtonElement) stop.click();
}

/// A `.as` program asks this chat (the worker claimed the generation for this tab).
async function onGenerate(g: Generation): Promise<void> {
  if (!site) return;
  const o = ui();
  o.generation(g, () => {
    if (watch?.gen?.id === g.id) {
      watch = null;
      stopSite();
    }
    ask("cancelGeneration", { id: g.id }).catch(() => undefined);
    o.generationEnded();
    o.setPhase("cancelled", "");
    o.note("Cancelled: the program ends with KA_AS_CANCELLED.");
  });
  o.setWhere(`${site.name} · .as program`);
  o.setPhase("sending the request", "run");
  const before = new Seen(assistantMessages());
  try {
    await send(site, g.text, { replying: replyingSince(before) });
  } catch (e) {
    const err = KeylessError.from(e);
    await ask("generated", { id: g.id, error: err.wire }).catch(() => undefined);
    o.error(err.code, err.message);
    return;
  }
  follow(before);
  if (watch) watch.gen = g;
  o.setPhase("waiting for the reply", "follow");
}

/// The generation this tab answers ended elsewhere (cancelled in the dashboard, Ctrl+C, the
/// program's timeout): stop following it.
function onGenerationEnded(g: Generation): void {
  if (watch?.gen?.id !== g.id) return;
  watch = null;
  stopSite();
  const o = ui();
  o.generationEnded();
  o.setPhase(g.state === "cancelled" ? "cancelled" : "ended", "");
  o.note(`${g.error ?? ""}`.trim() || "The program no longer waits for this reply.");
}

/// What this script finds on the page, read the way a task reads it (the real-page suite).
function inspect(): Inspection {
  const replies = assistantMessages();
  const newest = replies[replies.length - 1];
  const read = newest ? readNewest(newest, false) : null;
  return {
    site: site?.id ?? null,
    composer: site !== null && match(site.selectors.composer) !== null,
    send: site !== null && match(site.selectors.send_button) !== null,
    assistantMessages: replies.length,
    userMessages: userElements().length,
    ambiguous: thread().ambiguous,
    alternatives: site ? probe(site.selectors) : [],
    lastReply: read?.text ?? null,
    incomplete: read?.incomplete ?? false,
  };
}

/// The thread as both selectors see it. An element both take (a reply the user selector also
/// takes, or a user turn a broad reply selector also takes) is never thrown away: it is decided by
/// its position, as turns alternate: after the user's message it is a reply, after a reply (or
/// first) the user's. A negative user rule ("a message without the reply's class") takes every
/// reply once the site renames that class; the reply is still read. `ambiguous` counts them (the
/// doctor says so).
function thread(): { users: Element[]; replies: Element[]; ambiguous: number } {
  if (!site) return { users: [], replies: [], ambiguous: 0 };
  const rawUsers = matchAll(site.selectors.user_message);
  const rawReplies = matchAll(site.selectors.assistant_message);
  const inUser = (m: Element) => rawUsers.some((u) => u === m || u.contains(m));
  const holdsReply = (u: Element) => rawReplies.some((m) => m === u || u.contains(m));
  const pureUsers = rawUsers.filter((u) => !holdsReply(u));
  const all = [...new Set([...pureUsers, ...rawReplies])].sort((a, b) => (a === b ? 0 : a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  const users: Element[] = [];
  const replies: Element[] = [];
  let ambiguous = 0;
  let lastWasUser = false;
  for (const el of all) {
    let isUser = pureUsers.includes(el);
    if (!isUser && inUser(el)) {
      ambiguous++;
      isUser = !lastWasUser;
    }
    (isUser ? users : replies).push(el);
    lastWasUser = isUser;
  }
  return { users, replies, ambiguous };
}

/// The user's messages on the page (elements both selectors take, by position: [`thread`]).
function userElements(): Element[] {
  return thread().users;
}

/// The assistant messages on the page: never one that is the user's by position ([`thread`]).
function assistantMessages(): Element[] {
  return thread().replies;
}

function contentOf(message: Element): Element {
  return contentIn(message, site?.selectors.assistant_content, site?.selectors.ignore);
}

/// A reply has started: an assistant message not among `before`, or the site's stop signal
/// where it was not showing when the send began (a spinner elsewhere on the page proves nothing).
function replyingSince(before: Seen): () => boolean {
  const stopBefore = site !== null && match(site.selectors.streaming) !== null;
  return () => newestReply(before) !== undefined || (!stopBefore && site !== null && match(site.selectors.streaming) !== null);
}

/// The newest assistant message not among `known`, after the user's newest message.
function newestReply(known: Seen): Element | undefined {
  const users = userElements();
  return newestUnseen(assistantMessages(), known, users[users.length - 1]);
}

/// The editors whose copy button was asked for (see page.ts), with what each showed then.
const copyAsked = new WeakMap<Element, string>();

/// What of the reply is read: the content, without what the adapter ignores, the user's own
/// message where a turn holds both, or the site's streaming indicator (a spinner in the reply).
function readNewest(message: Element, streaming: boolean): { text: string; incomplete: boolean } {
  if (!site) return { text: "", incomplete: false };
  const content = contentOf(message);
  // Editors keep their whole text in the page's world: ask the page script for it first.
  if (content.querySelector(EDITORS)) {
    document.dispatchEvent(new CustomEvent(READ_EDITORS));
    // Once the site has stopped, an editor still without its text is read through the site's
    // copy button; again only when what the editor shows has changed since.
    if (!streaming) {
      let ask = false;
      for (const e of Array.from(content.querySelectorAll(EDITORS))) {
        const shown = e.textContent ?? "";
        const asked = copyAsked.get(e);
        if (asked === shown || (asked === undefined && e.hasAttribute(EDITOR_TEXT))) continue;
        copyAsked.set(e, shown);
        e.setAttribute(WANT_COPY, "");
        ask = true;
      }
      if (ask) document.dispatchEvent(new CustomEvent(COPY_EDITORS));
    }
  }
  return readReply(content, [...(site.selectors.ignore ?? []), ...site.selectors.user_message, ...site.selectors.streaming], streaming);
}

/// How many leading characters two strings share.
function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  // Compare in slices first: streaming text mostly grows at its end.
  while (i + 256 <= n && a.slice(i, i + 256) === b.slice(i, i + 256)) i += 256;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/// Whether the page shows one of the site's "chat is full" or "usage limit" notices (checked at
/// most once a second: it reads the whole page's text).
function noticeNow(now: number): { exhausted: boolean; limited: boolean } {
  if (!site || (site.exhausted_phrases.length === 0 && site.limited_phrases.length === 0) || now - lastNoticeCheck < 1000) return notice;
  lastNoticeCheck = now;
  const text = document.body.textContent ?? "";
  notice = {
    exhausted: site.exhausted_phrases.some((p) => text.includes(p)),
    limited: site.limited_phrases.some((p) => text.includes(p)),
  };
  return notice;
}

/// The overlay's header: the site, where the session stands, and the chat it came from.
function whereText(at: { turn: number; batch: number; movedFrom?: TabRun["movedFrom"] | undefined } | null): string {
  const from = at?.movedFrom ? ` · from ${at.movedFrom.site || "another chat"}` : "";
  return `${site?.name ?? ""}${at ? ` · turn ${at.turn} batch ${at.batch}` : ""}${from}`;
}

/// Starts following the reply to a message that was just sent.
function follow(known: Seen, sent = true): void {
  const now = performance.now();
  const users = new Seen(userElements());
  watch = { known, followed: null, sentAt: sent ? now : null, users, lastText: "", lastChange: now, sent: "", stopSeen: false, commands: [], done: false, fresh: true };
  notice = { exhausted: false, limited: false };
  lastNoticeCheck = 0;
  ui().setWhere(whereText(run));
  ui().setPhase("waiting for the reply", "follow");
  schedule();
}

let timer: number | null = null;
function schedule(): void {
  if (timer !== null || !watch) return;
  timer = window.setTimeout(() => {
    timer = null;
    void tick();
  }, 100);
}

async function tick(): Promise<void> {
  const w = watch;
  if (!w || w.done || !site || !settings || busy) return;
  busy = true;
  try {
    const t0 = performance.now();
    // The reply followed, by its identity once it showed; a reply unmounted while the user
    // scrolls keeps what was read of it until it is back.
    const msgs = assistantMessages();
    const newest = w.followed !== null ? find(msgs, w.followed) : newestReply(w.known);
    if (newest && w.followed === null) w.followed = keyOf(newest) ?? newest;
    const away = w.followed !== null && !newest;
    if (w.sentAt === null && (newest || userElements().some((u) => !w.users.has(u)))) w.sentAt = performance.now();
    const streaming = match(site.selectors.streaming) !== null;
    if (streaming) w.stopSeen = true;
    if (away) return;
    const read = newest ? readNewest(newest, streaming) : { text: "", incomplete: false };
    const text = read.text;
    // The adapter's "this reply is done" mark (AI Studio's footer), on the newest reply.
    const replyDone = site.selectors.reply_done ? newest !== undefined && touches(newest, site.selectors.reply_done) : undefined;
    const now = performance.now();
    const changed = text !== w.lastText;
    // Checked (at most once a second) once the site stopped, before the reply can complete.
    const shown = !streaming ? noticeNow(now) : { exhausted: false, limited: false };
    if (changed) {
      w.lastText = text;
      w.lastChange = now;
    }
    const page: PageObservation = {
      siteStreaming: streaming,
      stopSignalSeen: w.stopSeen,
      ...(replyDone === undefined ? {} : { replyDone }),
      incomplete: read.incomplete,
      quietMs: Math.round(now - w.lastChange),
      waitedMs: w.sentAt === null ? 0 : Math.round(now - w.sentAt),
      exhausted: shown.exhausted,
      limited: shown.limited,
      truncationBudgetSeconds: settings.truncationBudgetSeconds,
      replyTimeoutSeconds: settings.replyTimeoutSeconds,
    };
    if (w.gen) {
      await tickGeneration(w, w.gen, text, streaming, changed, page);
      return;
    }
    // Only what changed goes to the worker: the length of the text it already has, then the rest.
    const keep = commonPrefix(w.sent, text);
    const tAsk = performance.now();
    let answer = await ask("follow", { keep, tail: text.slice(keep), page });
    const tBack = performance.now();
    if ("resync" in answer) {
      w.commands = [];
      answer = await ask("follow", { keep: 0, tail: text, page });
    }
    if ("resync" in answer) throw new KeylessError("KA_INTERNAL", "the worker lost the reply it follows");
    w.sent = text;
    // The worker sends the commands that changed; the ones before `commandsFrom` are as before.
    w.commands = [...w.commands.slice(0, answer.commandsFrom), ...answer.commands];
    const report: FollowReport = { ...answer, commands: w.commands };
    if (watch !== w) return;
    const o = ui();
    // The new reply's first text replaces what the overlay showed of the last one.
    if (w.fresh && (text || report.verdict !== "waiting")) {
      w.fresh = false;
      o.reset();
      suggestNewChat();
    }
    if (!w.fresh) o.follow(report);
    if (changed && text) {
      const end = performance.now();
      const ms = end - t0;
      // The page's own work: reading the reply and drawing; the worker's round trip is async.
      const pageMs = tAsk - t0 + (end - tBack);
      o.note(`${report.lines} lines · overlay updated in ${ms.toFixed(1)} ms (page ${pageMs.toFixed(2)} ms)`);
      ask("metric", { overlayMs: Math.round(ms * 100) / 100, chars: text.length, pageMs: Math.round(pageMs * 1000) / 1000 }).catch(() => undefined);
      o.setPhase(streaming ? "streaming" : "checking", "follow");
    }
    switch (report.verdict) {
      case "waiting":
        return;
      case "timeout":
      case "exhausted":
      case "limited":
      case "incomplete":
        w.done = true;
        o.error(
          report.code ?? "KA_REPLY_TIMEOUT",
          report.verdict === "timeout"
            ? `No complete reply within ${settings.replyTimeoutSeconds} s. Nothing was run.`
            : report.verdict === "incomplete"
              ? "Part of this reply sits in a code editor that shows only its visible lines, and keyless could not read the rest. Nothing was run. Ask the model to resend it as plain text, or copy it into the popup's task."
              : report.verdict === "limited"
                ? "The chat says its usage limit is reached. Nothing was run. keyless can continue the task in a new chat, here after the limit resets or now on another site, with a handover of everything done so far."
                : "The chat says it is full. Nothing was run. keyless can continue the task in a new chat with a handover of everything done so far.",
          report.verdict === "timeout" || report.verdict === "incomplete" ? [] : continueActions(),
        );
        return;
      case "truncated":
        o.error(report.code ?? "KA_REPLY_TRUNCATED", `The reply stayed without @@eof for ${settings.truncationBudgetSeconds} s. The model is asked to resend it in smaller pieces.`);
        break;
      default:
        break;
    }
    w.done = true;
    const endAt = w.lastChange;
    if (run?.state === "paused") {
      pending = { text, endAt };
      o.setPhase("paused", "wait");
      o.note("Paused: this reply runs when you press Resume in the keyless popup.");
      return;
    }
    void submit(text, endAt, report.verdict === "truncated" ? `${report.code ?? "KA_REPLY_TRUNCATED"}: the last reply had no @@eof` : "");
  } catch (e) {
    const err = KeylessError.from(e);
    ui().error(err.code, err.message);
  } finally {
    busy = false;
  }
}

async function submit(text: string, endAt: number, notice = ""): Promise<void> {
  const o = ui();
  o.setPhase(text ? "sent to keyless-host" : "empty reply", "run");
  let outcome: ReplyOutcome;
  try {
    outcome = await ask("reply", { text });
  } catch (e) {
    const err = KeylessError.from(e);
    // A reply in a chat the task left runs nothing: there is nothing to retry.
    o.error(err.code, err.message, err.code === "KA_SESSION_MOVED" ? [] : [{ label: "Retry", run: () => void submit(text, endAt, notice) }]);
    return;
  }
  run = outcome.run;
  if (outcome.longThread) longThread = outcome.longThread;
  const a = outcome.answer;
  ui().setWhere(whereText({ turn: a.turn, batch: a.batch, movedFrom: run?.movedFrom }));
  if (a.turn_ended) {
    const asking = a.turn_ended === "needs_user_input";
    o.results(a, a.turn_ended === "done" ? "Nothing more is sent: the task is complete." : asking ? "Nothing more is sent until you answer." : "Nothing more is sent; see the dashboard.");
    o.setPhase(a.turn_ended === "done" ? "done" : asking ? "waiting for your answer" : (a.ended ?? a.turn_ended), a.turn_ended === "done" ? "ok" : asking ? "wait" : "bad");
    return;
  }
  if (run.state === "stopped") {
    o.results(a, "Stopped: nothing was sent.");
    o.setPhase("stopped", "");
    return;
  }
  if (!outcome.send) {
    o.results(a, "Not sent automatically.");
    o.setPhase(run.state === "paused" ? "paused" : "ready to send", "wait");
    unsent = { text: a.text, delivery: outcome.delivery, endAt };
    o.error("Ready", "The results are ready to go back to the chat.", [{ label: "Send results", run: () => void resend() }]);
    return;
  }
  o.results(a, a.status === "rejected" ? "Sending the correction…" : "Sending the results…");
  await deliver(a.text, outcome.delivery, endAt, notice);
}

async function deliver(text: string, delivery: Delivery, endAt: number, notice = ""): Promise<void> {
  if (!site) return;
  const o = ui();
  unsent = { text, delivery, endAt };
  o.setPhase("sending", "run");
  const before = new Seen(assistantMessages());
  try {
    const fallback = await send(
      site,
      text,
      delivery.kind === "attach" ? { attach: { fileName: delivery.file_name, note: delivery.note }, replying: replyingSince(before) } : { replying: replyingSince(before) },
    );
    unsent = null;
    const ms = performance.now() - endAt;
    ask("delivered", { ok: true, endToSentMs: ms }).catch(() => undefined);
    o.clearError();
    if (fallback) o.error(fallback, "The file upload failed; the results were pasted instead.");
    else suggestNewChat();
    follow(before);
    o.sent(notice ? "The correction was sent to the chat." : "The results were sent to the chat.");
    o.note(`${notice ? `${notice}; its correction was sent` : `results sent ${Math.round(ms)} ms after the reply ended`}`);
  } catch (e) {
    const err = KeylessError.from(e);
    ask("delivered", { ok: false, code: err.code }).catch(() => undefined);
    o.error(err.code, err.message, failedSend(err, () => void resend()));
  }
}

async function resend(): Promise<void> {
  if (!unsent) return;
  const u = unsent;
  await deliver(u.text, u.delivery, u.endAt);
}

window.addEventListener("online", () => {
  if (unsent && run?.state === "running") void resend();
});

function onEvent(e: HostEvent): void {
  const o = ui();
  switch (e.type) {
    case "batch_started":
      o.batchStarted();
      break;
    case "command_started":
      o.commandStarted(e.number);
      break;
    case "command_finished":
      o.commandFinished(e.number, e.status, e.code, e.diff);
      break;
    case "output":
      o.output(e.text);
      break;
    case "say":
      o.say(e.text);
      break;
    case "prompt":
      o.prompt(e, async (a) => {
        try {
          await ask("answer", { id: e.id, ...a });
          o.setPhase("running", "run");
        } catch (caught: unknown) {
          const err = KeylessError.from(caught);
          // A form shows the refusal (its message) under itself and stays open; the others in
          // the error box.
          if (e.kind !== "form") o.error(err.code, err.message);
          throw err;
        }
      });
      break;
    case "prompt_closed":
      o.promptClosed(e.id);
      break;
    default:
      break;
  }
}

/// The ways on from a chat that is full or at its usage limit: a new chat on this site, or on
/// another one; the task goes there with core's handover.
function continueActions(): { label: string; run: () => void }[] {
  if (!run || run.movedTo || !site) return [];
  const here = site.name;
  return [
    { label: `Continue in a new ${here} chat`, run: () => void continueIn(here) },
    { label: "Continue on another site…", run: () => void pickSite() },
  ];
}

/// The suggestion to continue in a new chat, while the thread is long: it never stops the loop.
function suggestNewChat(): void {
  if (!longThread || !run || run.movedTo) return;
  const k = (n: number): string => `${Math.round(n / 1000)}k`;
  ui().info(
    "This chat is getting long",
    [`About ${k(longThread.chars)} characters so far (this site's mark is ${k(longThread.limit)}). Models lose track of the task in long threads; a new chat starts from a handover of everything done. The task goes on here meanwhile.`],
    [
      ...continueActions(),
      {
        label: "Not now",
        run: () => {
          longThread = null;
          ui().clearError();
        },
      },
    ],
  );
}

async function pickSite(): Promise<void> {
  const o = ui();
  let supported: { name: string }[];
  try {
    supported = (await ask("tabSite", { tabId: -1 })).supported;
  } catch (e) {
    const err = KeylessError.from(e);
    o.error(err.code, err.message, continueActions());
    return;
  }
  o.info(
    "Continue on another site",
    ["Pick the chat site the task continues on. keyless opens a new chat there, in a new tab, and sends it the handover: the task and everything done so far."],
    supported.map((s) => ({ label: s.name, run: () => void continueIn(s.name) })),
  );
}

async function continueIn(name: string): Promise<void> {
  const o = ui();
  o.setPhase(`opening a new ${name} chat`, "run");
  try {
    await ask("continueIn", { site: name });
  } catch (e) {
    const err = KeylessError.from(e);
    o.error(err.code, err.message, continueActions());
  }
}

async function onPaste(text: string, sendIt: boolean, delivery?: Delivery): Promise<void> {
  if (!site) return;
  const o = ui();
  o.reset();
  const before = new Seen(assistantMessages());
  try {
    if (delivery?.kind === "attach") {
      // A handover over the paste budget goes as a file, with the note long results use.
      await send(site, text, { attach: { fileName: delivery.file_name, note: delivery.note }, replying: replyingSince(before) });
      follow(before);
    } else if (sendIt) {
      await send(site, text, { replying: replyingSince(before) });
      follow(before);
    } else {
      await write(site, text);
      // Follow the reply once the user sends (the reply timeout starts then).
      follow(before, false);
      o.setPhase(run?.movedFrom ? "check the handover, then send" : "add your task, then send", "wait");
    }
    if (run?.movedFrom) o.note(`This task came from a ${run.movedFrom.site || "chat"} tab, with a handover of everything done there.`);
  } catch (e) {
    const err = KeylessError.from(e);
    o.error(err.code, err.message, failedSend(err, () => void onPaste(text, sendIt, delivery), "Paste again"));
  }
}

function onRun(next: TabRun | null): void {
  const was = run?.state;
  run = next;
  if (!next || next.state === "stopped") {
    watch = null;
    pending = null;
    if (overlay) {
      overlay.setPhase("stopped", "");
      overlay.note("Stopped. Press Start in the keyless popup to begin again.");
    }
    return;
  }
  const o = ui();
  if (next.movedTo) {
    longThread = null;
    // A reply still on its way here is followed, and refused when it ends (KA_SESSION_MOVED).
    o.setPhase(`continued in ${next.movedTo.site}`, "ok");
    // In place of the error and its Continue buttons: the task is there now.
    o.info(`Continued in ${next.movedTo.site}`, [`This task continues in a new ${next.movedTo.site} chat (another tab), with a handover of everything done here. A reply that ends here runs nothing.`]);
    return;
  }
  if (next.state === "paused" && overlay) overlay.setPhase("paused", "wait");
  if (next.state === "running" && was === "paused") {
    if (pending) {
      const p = pending;
      pending = null;
      void submit(p.text, p.endAt);
    } else if (unsent) void resend();
    else overlay?.setPhase("following", "follow");
  }
}

/// Runs each selector of the adapter the worker resolved (with the user's current overrides);
/// the core's doctor reports the keys the adapter leaves unset.
function probe(selectors: Selectors): { key: string; matches: number | null; alternative: number | null }[] {
  return Object.entries(selectors).map(([key, alts]: [string, string[]]) => ({ key, ...probeOne(alts) }));
}

/// The adapter changed while a reply is followed (a pick, an import): the counts of replies and
/// user messages were taken with the old selectors. Count again, so an old reply is never taken
/// for the new one and the new one is not missed: from the reply the user just picked when there
/// is one (it is the reply being followed); else, once the message was sent, from the user's last
/// message (the reply comes after it, and may have started); else from what is on the page now.
function rebase(picked: Element | null): void {
  if (!watch || watch.done) return;
  const all = assistantMessages();
  const users = userElements();
  let at = picked ? all.indexOf(picked) : -1;
  const lastUser = users[users.length - 1];
  if (at < 0 && watch.sentAt !== null && lastUser) at = all.filter((m) => before(m, lastUser)).length;
  watch.known = new Seen(at >= 0 ? all.slice(0, at) : all);
  watch.followed = at >= 0 && all[at] ? (keyOf(all[at] as Element) ?? (all[at] as Element)) : null;
  // Not yet seen sent: the user's messages taken with the new selectors.
  if (watch.sentAt === null) watch.users = new Seen(users);
}

/// Whether `a` comes before `b` in the page and does not hold it (a turn holding the user's
/// message and its reply is the reply's, not an earlier one).
function before(a: Element, b: Element): boolean {
  const pos = b.compareDocumentPosition(a);
  return (pos & Node.DOCUMENT_POSITION_PRECEDING) !== 0 && (pos & Node.DOCUMENT_POSITION_CONTAINS) === 0;
}

// ---- the selector picker ----

/// What to click for each key the user can pick, in the panel's words.
const PICK_WHAT: Record<string, string> = {};
/// A pick waits for its click: only one at a time.
let picking = false;
/// How long a pick waits for the click.
const PICK_WAIT_MS = 120_000;

/// The element the user clicks next on the page (the panel excepted), outlined under the
/// pointer; null on Escape. The click itself does nothing else on the page.
function clickedElement(o: Overlay): Promise<Element | null> {
  return new Promise((resolve) => {
    const target = (e: Event): Element | null => (o.owns(e) ? null : e.target instanceof Element ? e.target : null);
    const over = (e: Event) => {
      const t = target(e);
      if (t) o.highlight(t.getBoundingClientRect());
    };
    const swallow = (e: Event) => {
      if (o.owns(e)) return;
      e.preventDefault();
      e.stopImmediatePropagation();
    };
    const click = (e: Event) => {
      const t = target(e);
      if (!t) return;
      swallow(e);
      finish(t);
    };
    const key = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      e.preventDefault();
      e.stopImmediatePropagation();
      finish(null);
    };
    const events: [string, EventListener][] = [
      ["mouseover", over],
      ["pointerdown", swallow],
      ["mousedown", swallow],
      ["pointerup", swallow],
      ["mouseup", swallow],
      ["touchstart", swallow],
      ["touchend", swallow],
      ["auxclick", swallow],
      ["contextmenu", swallow],
      ["dblclick", swallow],
      ["click", click],
      ["keydown", key as EventListener],
    ];
    for (const [t, f] of events) document.addEventListener(t, f, true);
    const timer = window.setTimeout(() => finish(null), PICK_WAIT_MS);
    function finish(el: Element | null): void {
      window.clearTimeout(timer);
      for (const [t, f] of events) document.removeEventListener(t, f, true);
      o.highlight(null);
      resolve(el);
    }
  });
}


/// The element the key means, from where the user clicked: the editor around (or inside) the
/// click, the button around it, or the reply: the largest block around the click that holds no
/// message of the user's and not the composer.
function meant(key: string, clicked: Element): Element | null {
  if (key === "composer") {
    const editable = 'textarea, [contenteditable="true"], [contenteditable=""], [contenteditable="plaintext-only"], input[type="text"]';
    return clicked.closest(editable) ?? clicked.querySelector(editable);
  }
  if (key === "send_button") return clicked.closest('button, [role="button"]') ?? clicked;
  const composer = site ? match(site.selectors.composer) : null;
  const users = userElements();
  let m = clicked;
  for (let p = m.parentElement; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
    if ((composer && p.contains(composer)) || users.some((u) => p.contains(u))) break;
    m = p;
  }
  return m;
}

function describe(el: Element): PickedNode {
  return {
    tag: el.tagName.toLowerCase(),
    id: el.id,
    classes: Array.from(el.classList).slice(0, 20),
    attrs: Array.from(el.attributes)
      .filter((a) => !["class", "id", "style"].includes(a.name) && !a.name.startsWith("on"))
      .slice(0, 30)
      .map((a): [string, string] => [a.name, a.value.slice(0, 200)]),
  };
}

/// Lets the user show `key` on the page; keeps the selector the core derives from it as a user
/// override, shows it, and checks it against the page.
async function pick(key: string, after?: () => void): Promise<void> {
  if (!site || picking) return;
  const o = ui();
  const what = PICK_WHAT[key] ?? key.replace(/_/g, " ");
  if (key === "assistant_message" && userElements().length === 0) {
    // Without the user's messages, nothing tells a reply from the user's own message (the
    // pasted prompt would read as a reply).
    o.error("KA_SELECTOR_NOT_FOUND", "keyless finds none of your messages on this page, so it cannot tell the model's replies from yours. Fix user_message in the options page first (Selector overrides), then pick the last reply.");
    return;
  }
  o.info("Pick it", [`Click ${what} on the page. Esc cancels.`]);
  o.setPhase("picking", "wait");
  picking = true;
  const clicked = await clickedElement(o).finally(() => {
    picking = false;
  });
  if (!clicked) {
    o.clearError();
    o.setPhase("idle", "");
    return;
  }
  const el = meant(key, clicked);
  if (!el) {
    o.error("KA_SELECTOR_NOT_FOUND", "That is not a box you can type in. Click inside the box where you type your message.", [{ label: "Pick again", run: () => void pick(key, after) }]);
    return;
  }
  const ancestors: PickedNode[] = [];
  for (let p = el.parentElement; p && ancestors.length < 6 && p !== document.body; p = p.parentElement) ancestors.push(describe(p));
  try {
    const { candidates } = await ask("pickCandidates", { picked: { key, node: describe(el), ancestors } });
    const users = userElements();
    const facts: CandidateFacts[] = candidates.map((c) => {
      try {
        const all = Array.from(document.querySelectorAll(c));
        return { count: all.length, hasPicked: all.includes(el), hitsUser: all.some((x) => users.some((u) => u === x || u.contains(x) || x.contains(u))) };
      } catch {
        return { count: 0, hasPicked: false, hitsUser: false };
      }
    });
    const saved = await ask("savePick", { host: location.hostname, key, candidates, facts });
    if (saved.site) site = saved.site;
    rebase(key === "assistant_message" ? el : null);
    const check = probeOne([saved.selector]);
    const n = check.matches ?? 0;
    o.info(
      "Picked",
      [
        `${key.replace(/_/g, " ")} is now`,
        { sel: saved.selector },
        `It matches ${n} element${n === 1 ? "" : "s"} on this page${key === "assistant_message" ? " (every reply)" : ", the one you clicked"}. Kept in your selector overrides; the options page exports them to share.`,
      ],
      after ? [{ label: "Try again", run: after }] : [],
    );
    o.setPhase("picked", "ok");
  } catch (e) {
    const err = KeylessError.from(e);
    o.error(err.code, err.message, [{ label: "Pick again", run: () => void pick(key, after) }]);
  }
}

/// The doctor found selectors the user can show on the page: offer to pick them.
function offerPicks(lines: DoctorLine[]): void {
  // What broke for sure (always on the page) first, then what may only be absent for now.
  const broken = [...lines.filter((l) => l.pick && l.status === "broken"), ...lines.filter((l) => l.pick && l.status !== "broken")];
  if (broken.length === 0) return;
  for (const l of broken) if (l.pick) PICK_WHAT[l.key] = l.pick;
  const name = (k: string) => (k === "assistant_message" ? "the last reply" : `the ${k.replace(/_/g, " ")}`);
  ui().error(
    "KA_SELECTOR_NOT_FOUND",
    [
      ...broken.map((l) => `${l.key.replace(/_/g, " ")}: ${l.message}`),
      "Pick one to show keyless where it is on this page (for what may only be absent for now, pick it once it shows).",
    ].join("\n"),
    broken.map((l) => ({ label: `Pick ${name(l.key)}`, run: () => void pick(l.key) })),
  );
}

/// The actions of a send that failed: Pick it when a selector the user can show broke (the
/// error names its key), then the retry.
function failedSend(e: KeylessError, retry: () => void, label = "Resend"): { label: string; run: () => void }[] {
  const key = e.key;
  if (!key) return [{ label, run: retry }];
  PICK_WHAT[key] ??= key === "composer" ? "the box where you type your message" : "the button that sends your message";
  return [{ label: "Pick it", run: () => void pick(key, retry) }];
}

chrome.runtime.onMessage.addListener((msg: TabMessage, _sender, sendResponse) => {
  switch (msg.type) {
    case "probe":
      sendResponse(probe(msg.selectors));
      return false;
    case "doctor":
      offerPicks(msg.lines);
      return false;
    case "event":
      onEvent(msg.event);
      return false;
    case "paste":
      // Not ready yet (the page is still loading its adapter or its run): the worker asks again.
      if (!site || !ready) {
        sendResponse(false);
        return false;
      }
      void onPaste(msg.text, msg.send, msg.delivery);
      sendResponse(true);
      return false;
    case "run":
      onRun(msg.run);
      return false;
    case "generate":
      void onGenerate(msg.generation);
      sendResponse(true);
      return false;
    case "generationEnded":
      onGenerationEnded(msg.generation);
      return false;
    case "programs":
      programs = msg.on;
      return false;
    case "inspect":
      sendResponse(inspect());
      return false;
    case "capture":
      sendResponse(site ? { name: captureName(site), html: capture(site) } : null);
      return false;
    default:
      return false;
  }
});

async function main(): Promise<void> {
  const got = await ask("site", { host: location.hostname });
  site = got.site;
  settings = got.settings;
  if (!site) return;
  if (got.error) console.warn(`keyless: ${errorText(got.error)}; using the shipped selectors`);
  new MutationObserver(() => schedule()).observe(document.documentElement, { childList: true, subtree: true, characterData: true });
  window.setInterval(() => {
    if (watch && !watch.done) schedule();
  }, 250);
  // Keep the worker (and its event stream) alive while this tab runs a session.
  window.setInterval(() => {
    if (programs || (run && (run.state === "running" || run.state === "paused"))) ask("ping", {}).catch(() => undefined);
  }, 20000);
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area !== "local" || !changes.settings) return;
    void ask("site", { host: location.hostname }).then((s) => {
      settings = s.settings;
      const changed = JSON.stringify(s.site?.selectors) !== JSON.stringify(site?.selectors);
      if (s.site) site = s.site;
      if (changed) rebase(null);
    });
  });
  const mine = await ask("tabRun", {});
  run = mine.run;
  programs = mine.programs;
  ready = true;
  if (programs) ask("ping", {}).catch(() => undefined);
  if (run && (run.state === "running" || run.state === "paused")) {
    // After a reload: follow only replies that arrive from now on (the host never runs a batch twice).
    follow(new Seen(assistantMessages()));
    ui().setPhase(run.state === "paused" ? "paused" : "following", run.state === "paused" ? "wait" : "follow");
  }
}

main().catch((e: unknown) => {
  const err = KeylessError.from(e);
  if (overlay) overlay.error(err.code, err.message);
  else console.warn(`keyless: ${errorText(err)}`);
});

