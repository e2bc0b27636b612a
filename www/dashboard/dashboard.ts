// The keyless host dashboard: sessions, each batch's reply and results, live output, pending
// confirmations, the audit log, and undo. It talks to the host's API with the local token that
// `keyless-host serve` printed in the dashboard URL. All data is written with textContent, through
// `visible` (directly or by `el`): control, direction and invisible characters show as code points.
import { DIFF_CSS, diffRow, diffView, totals } from "../common/diff-view";
import { byId, el, setText } from "../common/dom";
import { visible } from "../common/visible";
import { FORM_CSS, formView } from "../common/form-view";
import type { BatchCounts, BatchOutcome, CommandRecord, PromptAnswer, TraceEvent } from "../../extension/src/generated/core";
import { type Call, callHost, hostEvent, v1 } from "../common/host-api";
import { takeToken } from "../common/token";

const token = takeToken();

// The diffs look the same here as in the overlay (one stylesheet, adopted: no inline styles).
const diffSheet = new CSSStyleSheet();
diffSheet.replaceSync(`${DIFF_CSS}\n${FORM_CSS}`);
document.adoptedStyleSheets = [...document.adoptedStyleSheets, diffSheet];

/// One call to the host that serves this page, with the dashboard's token.
function api<A>(call: Call<A>): Promise<A> {
  return callHost("", token, call);
}

function notice(text: string): void {
  let n = document.querySelector<HTMLDivElement>(".notice");
  if (!n) {
    n = el("div", "notice");
    document.body.append(n);
  }
  setText(n, text);
  n.classList.add("show");
  window.setTimeout(() => n?.classList.remove("show"), 3000);
}

const state = {
  selected: "",
  open: new Set<string>(),
  runningSession: "",
  runningSince: 0,
  /** The .as run shown. */
  run: "",
};

function time(secs: number): string {
  return new Date(secs * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

// ---------------------------------------------------------------------------------------------

async function loadStatus(): Promise<void> {
  const s = await api(v1.status());
  const meta = byId("meta");
  meta.replaceChildren(
    el("span", "chip", s.workspace),
    el("span", "chip", `mode ${s.mode}`),
    el("span", "chip", `pace ${s.pace}`),
    el("span", "chip", `v${s.version}`),
  );
}

async function loadSessions(): Promise<void> {
  const list = await api(v1.sessions());
  if (!state.selected && list[0]) state.selected = list[0].session;
  const ul = byId("sessions");
  ul.replaceChildren(
    ...list.map((s) => {
      const li = el("li", s.session === state.selected ? "sel" : "");
      // The task first: it is what the user remembers a session by.
      const task = el("div", "task", s.task ?? "(no task given)");
      if (s.task) task.title = visible(s.task);
      const top = el("div", "id", s.session);
      if (s.piece) top.append(" ", el("span", "chip piece", "piece"));
      const facts = [s.branch ? `on ${s.branch}` : "", s.mode ?? "", `turn ${s.turn} · batch ${s.batch}`, time(s.created_at)].filter((f) => f !== "");
      li.append(task, el("div", "state", s.state), top, el("div", "sub", facts.join(" · ")));
      // Where the session went when a chat ended: each new chat, with its tab and the time.
      for (const m of s.moves) {
        const where = m.site === "terminal" ? "a handover printed in the terminal" : `a new ${m.site} chat${m.tab !== null ? ` (tab ${m.tab})` : ""}`;
        li.append(el("div", "sub moved", `continued in ${where} at ${time(m.at)}, from turn ${m.turn} batch ${m.batch}`));
      }
      li.addEventListener("click", () => {
        state.selected = s.session;
        void refresh();
      });
      return li;
    }),
  );
  if (list.length === 0) ul.append(el("li", "sub", "No sessions yet. Start one from the extension."));
}

/** What the model received, verbatim. */
function resultsView(text: string): HTMLPreElement {
  return el("pre", "results", text);
}

/** A command's outcome from its stored result: status, code, exit code, time, reason. */
function outcomeCell(r: CommandRecord | null): HTMLTableCellElement {
  const td = el("td", "o");
  // @@say, @@next and @@done have no result of their own.
  if (!r) return td;
  td.append(el("span", `chip ${r.status}`, r.code ?? r.status));
  const facts = [
    r.exit_code !== null ? `exit ${r.exit_code}` : "",
    r.duration_ms !== null ? `${r.duration_ms} ms` : "",
  ].filter((f) => f !== "");
  if (facts.length > 0) td.append(" ", el("span", "sub", facts.join(" · ")));
  if (r.reason) td.append(el("div", "why", r.reason));
  return td;
}

/** The words an outcome chip says: `3 ok · 1 failed`, or the batch's state. */
function outcomeText(outcome: BatchOutcome, c: BatchCounts): string {
  if (outcome === "rejected") return "format error";
  if (outcome === "running" || outcome === "interrupted") return outcome;
  const parts = [`${c.ok} ok`];
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.declined) parts.push(`${c.declined} declined`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  return outcome === "empty" ? "nothing ran" : parts.join(" · ");
}

async function batchBody(id: string): Promise<HTMLDivElement> {
  const d = await api(v1.batch(id));
  const body = el("div", "body");
  if (d.commands.length > 0) {
    const table = el("table", "cmds");
    for (const c of d.commands) {
      const tr = el("tr");
      const tier = el("td");
      if (c.tier && c.decision) {
        const chip = el("span", `chip ${c.tier}`, `${c.tier} · ${c.decision}`);
        chip.title = visible(c.reason ?? "");
        tier.append(chip);
      }
      tr.append(el("td", "n", `#${c.number}`), el("td", "c", c.command), el("td", "t", c.target), tier, outcomeCell(c.result));
      table.append(tr);
      // What the command changed, under it.
      const diffs = c.result?.diff ?? [];
      if (diffs.length > 0) table.append(diffRow(diffs, 5));
    }
    body.append(table);
  }
  if (d.undo_note) body.append(el("div", "why undo-note", d.undo_note));
  body.append(resultsView(d.text));
  return body;
}

/** The session's whole diff against the commit it started from. */
async function sessionDiff(id: string): Promise<HTMLDivElement> {
  const list = await api(v1.sessionDiff(id));
  const box = el("div", "session-diff");
  box.append(el("div", "sub", list.length === 0 ? "Nothing changed since the session started." : `Since the session started: ${totals(list)}`));
  for (const f of list) box.append(diffView(f, false));
  return box;
}

async function loadBatches(): Promise<void> {
  const box = byId("batches");
  if (!state.selected) {
    box.replaceChildren(el("div", "empty", "Select a session."));
    return;
  }
  const s = await api(v1.session(state.selected));
  setText(byId("session-title"), `Batches · ${s.session} · now turn ${s.turn}, batch ${s.batch}`);
  // A page opened mid-batch has missed its batch_started event: take it from the store.
  const running = s.batches.find((b) => b.status === "running");
  if (running && !state.runningSession) setRunning(s.session);
  if (!running && state.runningSession === s.session) setRunning("");
  const whole = el("details", "whole");
  whole.append(el("summary", "", "Whole diff of this session"));
  whole.addEventListener("toggle", () => {
    if (whole.open && whole.childElementCount === 1) {
      sessionDiff(s.session)
        .then((d) => whole.append(d))
        .catch((e: unknown) => notice(String(e)));
    }
  });
  const cards = await Promise.all(
    [...s.batches].reverse().map(async (b) => {
      const card = el("div", `batch o-${b.outcome}`);
      const head = el("div", "head");
      head.append(
        el("span", "title", `Turn ${b.turn} · Batch ${b.batch}`),
        el("span", `chip ${b.outcome}`, outcomeText(b.outcome, b.counts)),
        el("span", "chip idle", b.control ?? "—"),
        el("span", "id", b.id),
        el("span", "spacer"),
      );
      // Undo follows `keyless-host undo`'s rules: only a batch it can take back offers it.
      if (b.undo === "undoable") {
        const undo = el("button", "", "Undo");
        undo.addEventListener("click", (ev) => {
          ev.stopPropagation();
          if (!window.confirm(visible(`Restore the files batch ${b.id} changed?`))) return;
          api(v1.undo(b.id))
            .then((r) => {
              notice(`Restored ${r.restored.length} file(s)`);
              void loadBatches();
            })
            .catch((e: unknown) => notice(String(e)));
        });
        head.append(undo);
      } else if (b.undo === "undone") {
        head.append(el("span", "chip idle", "undone"));
      } else if (b.undo === "committed") {
        const c = el("span", "chip idle", "committed");
        c.title = "A later commit recorded its files: open the batch to see how to take it back.";
        head.append(c);
      }
      card.append(head);
      head.addEventListener("click", () => {
        if (state.open.has(b.id)) state.open.delete(b.id);
        else state.open.add(b.id);
        void loadBatches();
      });
      if (state.open.has(b.id)) card.append(await batchBody(b.id));
      return card;
    }),
  );
  box.replaceChildren(...(cards.length > 0 ? [whole, ...cards] : []));
  if (cards.length === 0) box.append(el("div", "empty", "No batches yet."));
}

/// The card of each waiting prompt, by id: a card stays as it is while its prompt waits (what the
/// user typed, a refusal under a form), and only new and closed prompts change the list.
const pendingCards = new Map<number, HTMLElement>();

async function loadPending(): Promise<void> {
  const list = await api(v1.confirmations());
  byId("pending-count").textContent = String(list.length);
  const box = byId("pending");
  const waiting = new Set(list.map((p) => p.id));
  for (const [id, card] of pendingCards) {
    if (!waiting.has(id)) {
      card.remove();
      pendingCards.delete(id);
    }
  }
  box.querySelector(".empty")?.remove();
  box.append(
    ...list.filter((p) => !pendingCards.has(p.id)).map((p) => {
      const card = el("div", "prompt");
      pendingCards.set(p.id, card);
      // A form shows the server's message itself.
      if (p.kind !== "form") card.append(el("div", "q", p.text));
      if (p.reason) card.append(el("div", "why", p.tier ? `${p.tier} — ${p.reason}` : p.reason));
      const row = el("div", "row");
      const answer = (body: PromptAnswer): void => {
        api(v1.answer(p.id, body)).catch((e: unknown) => notice(String(e)));
      };
      if (p.kind === "form" && p.form) {
        // An MCP server's form: refused values are shown under it; the event stream redraws the
        // list once the host took the answer.
        card.append(
          formView(
            p.form,
            async (body) => {
              // The form shows the refusal's message (a KeylessError's, without its code).
              await api(v1.answer(p.id, body));
            },
            () => {
              card.remove();
              pendingCards.delete(p.id);
            },
          ),
        );
      } else if (p.kind === "login") {
        const yes = el("button", "primary", "Log in");
        const no = el("button", "", "Not now");
        yes.addEventListener("click", () => answer({ approve: true }));
        no.addEventListener("click", () => answer({ approve: false }));
        row.append(yes, no);
      } else if (p.kind === "confirm") {
        for (const d of p.preview) card.append(diffView(d));
        const yes = el("button", "primary", "Approve");
        const no = el("button", "danger", "Decline");
        // Why not, told to the model with the decline (optional).
        const why = el("input", "why-not");
        why.placeholder = "Why not? (optional)";
        why.title = "Sent to the model with your Decline, so it can do otherwise";
        yes.addEventListener("click", () => answer({ approve: true }));
        no.addEventListener("click", () => answer(why.value.trim() ? { approve: false, answer: why.value.trim() } : { approve: false }));
        row.append(yes, no, why);
        if (p.offer) {
          const exact = el("button", "", "Always allow this command");
          exact.title = visible(`Run \`${p.offer.exact.text}\` here without asking (never above ${p.offer.exact.tier})`);
          exact.addEventListener("click", () => answer({ approve: true, always: "exact" }));
          row.append(exact);
          if (p.offer.like) {
            const like = el("button", "", `Always allow \`${p.offer.like.text}\``);
            like.title = `Commands like this run here without asking (never above ${p.offer.like.tier}; never a Denied one)`;
            like.addEventListener("click", () => answer({ approve: true, always: "like" }));
            row.append(like);
          }
        }
      } else {
        const input = el("input");
        input.placeholder = "Your answer";
        const send = el("button", "primary", "Send");
        send.addEventListener("click", () => answer({ answer: input.value }));
        row.append(input, send);
      }
      card.append(row);
      return card;
    }),
  );
  if (list.length === 0) box.append(el("div", "empty", "Nothing is waiting for you."));
}

async function loadAudit(): Promise<void> {
  const list = await api(v1.audit(100));
  const tbody = byId("audit");
  tbody.replaceChildren(
    ...list.reverse().map((a) => {
      const tr = el("tr");
      const st = el("td");
      // The code in words that wrap between them ("command declined"); the code itself on hover.
      const chip = el("span", `chip ${a.status}`, a.code ? a.code.replace(/^KA_/, "").toLowerCase().replace(/_/g, " ") : a.status);
      if (a.code) chip.title = a.code;
      st.append(chip);
      const target = el("td", "tg", a.target.length > 48 ? `${a.target.slice(0, 47)}…` : a.target);
      target.title = visible(a.target);
      tr.append(el("td", "t", time(a.at)), el("td", "", a.command), target, st);
      return tr;
    }),
  );
}

async function refresh(): Promise<void> {
  try {
    await Promise.all([loadSessions(), loadPending(), loadAudit()]);
    await loadBatches();
  } catch (e) {
    notice(String(e));
  }
}

// ---------------------------------------------------------------------------------------------
// .as runs: the list, and one run's trace as a nested, collapsible tree

const pretty = (v: unknown): string => JSON.stringify(v, null, 2);

function labelled(parent: HTMLElement, label: string, value: unknown): void {
  parent.append(el("div", "label", label), el("pre", "", typeof value === "string" ? value : pretty(value)));
}

/** One trace event (see docs/language.md, Trace) as a tree node. */
function traceNode(e: TraceEvent): HTMLElement {
  if (e.event === "cap") return el("div", "cap", `loop cap reached (line ${e.line}, cap ${e.cap})`);
  const node = el("details", e.event);
  const summary = el("summary");
  const chip = (ok: boolean, yes: string, no: string) => el("span", `chip ${ok ? "done" : "failed"}`, ok ? yes : no);
  summary.append(el("span", "kind", e.event));
  switch (e.event) {
    case "call":
      summary.append(visible(`${e.agent}.${e.func}`), el("span", "ms", `${e.duration_ms} ms`), " ", chip(e.error === null, "ok", "error"));
      labelled(node, "input", e.input);
      if (e.error !== null) labelled(node, "error", e.error);
      else labelled(node, "output", e.output);
      for (const c of e.events) node.append(traceNode(c));
      node.open = true;
      break;
    case "generate":
      summary.append(visible(e.via ? `${e.model} · ${e.via}` : e.model), el("span", "ms", `${e.attempts.length} attempt(s) · ${e.duration_ms} ms`), " ", chip(e.value !== null, "fits", "refused"));
      e.attempts.forEach((a, i) => {
        labelled(node, `prompt ${i + 1}`, a.prompt);
        labelled(node, `answer ${i + 1}`, a.answer);
        if (a.error !== null) labelled(node, "not accepted", a.error);
        else if (a.source) {
          const how = a.repairs.length === 0 ? "as it is" : `score ${a.score}: ${a.repairs.join("; ")}`;
          labelled(node, `read ${i + 1}`, `from ${a.source} (${a.candidates} candidate(s)), ${how}`);
        }
      });
      if (e.value !== null) labelled(node, "value", e.value);
      break;
    case "tool":
      summary.append(visible(`${e.tool}.${e.method}`), " ", chip(e.error === null, "ok", "error"));
      labelled(node, "args", e.args);
      labelled(node, e.error === null ? "result" : "error", e.error ?? e.result);
      break;
    case "memory":
      summary.append(visible(`${e.memory}.${e.method}`), " ", chip(e.error === null, "ok", "error"));
      labelled(node, "args", e.args);
      labelled(node, e.error === null ? "result" : "error", e.error ?? e.result);
      break;
  }
  node.prepend(summary);
  return node;
}

async function loadRun(id: string): Promise<void> {
  const d = await api(v1.asRun(id));
  const box = byId("run-detail");
  const head = el("div", "value");
  head.append(el("b", "", d.file), " ", el("span", `chip ${d.state}`, d.state));
  if (d.error) head.append(el("div", "why", d.error));
  else if (d.state === "done") labelled(head, "value", d.value);
  const tree = el("div", "trace");
  for (const ev of d.trace.events) tree.append(traceNode(ev));
  box.replaceChildren(head, tree);
}

async function loadRuns(): Promise<void> {
  const list = await api(v1.asRuns());
  byId("runs-count").textContent = String(list.length);
  byId("runs").replaceChildren(
    ...list.map((r) => {
      const li = el("li", r.run === state.run ? "sel" : "");
      li.dataset["run"] = r.run;
      li.append(el("div", "id", r.file), el("div", "sub", `${time(r.started_at)} · ${r.run}`), el("span", `chip ${r.state}`, r.state));
      li.addEventListener("click", () => {
        state.run = r.run;
        void loadRuns();
        void loadRun(r.run).catch((e: unknown) => notice(String(e)));
      });
      return li;
    }),
  );
  if (list.length === 0) byId("runs").append(el("li", "empty", "No .as runs yet: keyless-host as run, or POST /v1/as/runs."));
}

/// keyless://chat: the generations the chat tab answers (newest first), a Cancel on each that
/// still waits.
async function loadChat(): Promise<void> {
  const list = await api(v1.generations());
  byId("chat-box").hidden = list.length === 0;
  byId("chat-count").textContent = String(list.length);
  byId("chat").replaceChildren(
    ...list.slice(0, 20).map((g) => {
      const li = el("li");
      const open = g.state === "pending" || g.state === "claimed";
      const where = g.site ? ` · ${g.site}` : "";
      li.append(el("div", "id", `${g.file || g.run} · attempt ${g.attempt}${where}`), el("span", `chip ${open ? "running" : g.state === "answered" ? "done" : "failed"}`, g.state));
      li.append(el("div", "asked", g.text));
      if (g.error) li.append(el("div", "why", g.error));
      if (open) {
        const cancel = el("button", "danger", "Cancel");
        cancel.addEventListener("click", () => {
          api(v1.cancelGeneration(g.id, "the dashboard")).catch((e: unknown) => notice(String(e)));
        });
        li.append(cancel);
      }
      return li;
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Live events

function setRunning(session: string): void {
  state.runningSession = session;
  state.runningSince = session ? Date.now() : 0;
  const chip = byId("live-state");
  setText(chip, session ? `running · ${session}` : "idle");
  chip.className = `chip ${session ? "running" : "idle"}`;
  byId<HTMLButtonElement>("stop").disabled = !session;
}

function liveAppend(text: string, cls = ""): void {
  const live = byId("live");
  live.append(el("span", cls, text));
  live.scrollTop = live.scrollHeight;
}

/// A carriage return that ended the last output chunk: it goes with the next chunk, so a CRLF split
/// between two chunks stays a line end (a lone one shows as `<U+000D>`).
let heldCR = false;

function liveOutput(chunk: string): void {
  let text = heldCR ? `\r${chunk}` : chunk;
  heldCR = text.endsWith("\r");
  if (heldCR) text = text.slice(0, -1);
  if (text) liveAppend(text);
}

/// The carriage return held back, when no newline follows it.
function flushCR(): void {
  if (!heldCR) return;
  heldCR = false;
  liveAppend("\r");
}

/// The event stream was lost (serve stopped or restarted): what the page shows is reloaded when
/// it comes back.
let lost = false;

function connect(): void {
  const conn = byId("conn");
  const es = new EventSource(`/v1/events?token=${encodeURIComponent(token)}`);
  es.onopen = () => {
    conn.classList.add("on");
    byId("conn-text").textContent = "connected";
    if (!lost) return;
    // serve came back (its local token is the same across restarts): everything may have moved.
    lost = false;
    void loadStatus().catch((e: unknown) => notice(String(e)));
    void refresh();
    void loadPending().catch(() => undefined);
    void loadRuns().catch(() => undefined);
    void loadChat().catch(() => undefined);
  };
  es.onerror = () => {
    lost = true;
    conn.classList.remove("on");
    byId("conn-text").textContent = "reconnecting… (is keyless-host serve running?)";
    // The browser retries a dropped stream by itself, but gives up on an answer that is not the
    // stream (serve restarting, a proxy's error page): then this page tries again.
    if (es.readyState === EventSource.CLOSED) {
      es.close();
      window.setTimeout(connect, 2000);
    }
  };
  es.onmessage = (m: MessageEvent<string>) => {
    const ev = hostEvent(m.data);
    if (!ev) return;
    switch (ev.type) {
      case "batch_started":
        heldCR = false;
        byId("live").replaceChildren();
        setRunning(ev.session);
        break;
      case "output":
        liveOutput(ev.text);
        break;
      case "say":
        flushCR();
        liveAppend(`» ${ev.text}\n`, "say");
        break;
      case "prompt":
      case "prompt_closed":
        void loadPending();
        break;
      case "batch_finished":
        flushCR();
        setRunning("");
        state.selected = ev.session;
        void refresh();
        break;
      case "as_run":
        void loadRuns();
        if (ev.run === state.run) void loadRun(ev.run);
        break;
      case "as_trace":
        break;
      case "generation":
        void loadChat();
        break;
      default:
        void loadSessions();
    }
  };
}

function init(): void {
  if (!token) {
    document.body.replaceChildren(el("p", "notice show", "Open the dashboard with the URL keyless-host serve printed (it carries the token)."));
    return;
  }
  byId<HTMLButtonElement>("stop").addEventListener("click", () => {
    if (!state.runningSession) return;
    api(v1.cancel(state.runningSession)).catch((e: unknown) => notice(String(e)));
  });
  window.setInterval(() => {
    byId("elapsed").textContent = state.runningSince ? `${((Date.now() - state.runningSince) / 1000).toFixed(1)} s` : "";
  }, 100);
  window.setInterval(() => void loadPending().catch(() => undefined), 5000);
  void loadStatus().catch((e: unknown) => notice(String(e)));
  void refresh();
  void loadRuns().catch((e: unknown) => notice(String(e)));
  void loadChat().catch((e: unknown) => notice(String(e)));
  connect();
}

init();
