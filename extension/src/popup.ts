// The popup: pairing, connection status, mode/pace/piece, Start/Pause/Stop, and the selector doctor.
// What the host, the page or the tab says is shown through `visible` (directly or by `el`).

import { byId, el, oneOf, setText } from "../../www/common/dom.js";
import { visible } from "../../www/common/visible.js";
import { MODES, PACES } from "./generated/core.js";
import { errorText, KeylessError } from "../../www/common/error.js";
import { ask, type TabRun } from "./protocol.js";

const errorBox = byId<HTMLDivElement>("error");

/// What failed: its code, then its message.
function showError(e: unknown): void {
  errorBox.hidden = false;
  setText(errorBox, errorText(KeylessError.from(e)));
}

function clearError(): void {
  errorBox.hidden = true;
  errorBox.textContent = "";
}

/// The tab this popup controls: `?tab=<id>` (tests, or a popup opened as a page), else the active tab.
async function targetTab(): Promise<chrome.tabs.Tab | undefined> {
  const id = Number(new URLSearchParams(location.search).get("tab"));
  if (id) return chrome.tabs.get(id);
  const [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  return tab;
}

/// Whether this tab is a supported chat: Start is offered only there.
let chatTab = false;

function showRun(run: TabRun | null): void {
  const text = run
    ? run.movedTo
      ? `Session ${run.session} continues in a new ${run.movedTo.site} chat (another tab).`
      : `Session ${run.session} · turn ${run.turn} batch ${run.batch} · ${run.state}${run.reason ? ` (${run.reason})` : ""}${run.movedFrom ? ` · came from ${run.movedFrom.site || "another chat"}` : ""}`
    : "No session in this tab.";
  byId("continue-row").hidden = !run || run.movedTo !== undefined || !chatTab;
  setText(byId("run"), text);
  const active = run?.state === "running" || run?.state === "paused";
  byId<HTMLButtonElement>("pause").disabled = !active;
  byId<HTMLButtonElement>("stop").disabled = !active;
  byId<HTMLButtonElement>("start").disabled = !chatTab;
  byId("pause").textContent = run?.state === "paused" ? "Resume" : "Pause";
  byId("start").textContent = run?.state === "ended" && run.reason === "done" ? "Next task" : "Start";
  byId("branch-row").hidden = !run?.branch;
  setText(byId("branch"), run?.branch ?? "");
  byId("branch-note").hidden = !run?.branchNote;
  setText(byId("branch-note"), run?.branchNote ?? "");
}

/// On a tab that is not a supported chat: say so, and offer the chats that are.
function showNotChat(supported: { name: string; url: string }[]): void {
  const box = byId("not-chat");
  box.hidden = chatTab;
  if (chatTab) return;
  const list = el("ul");
  for (const s of supported) {
    const a = el("a", "", s.name);
    a.href = s.url;
    a.target = "_blank";
    const li = el("li");
    li.append(a);
    list.append(li);
  }
  box.replaceChildren(
    el("div", "", "This tab is not a chat keyless supports. Open one of these, then this popup again:"),
    list,
    el("div", "muted", "Each is proven on an imitation of its page, not yet on the live site. If one stops working, the Selector doctor says what broke, and Pick it in the page's keyless panel repairs it."),
  );
}

/// The Pair button waits for something that can be a code.
function codeTyped(): void {
  byId<HTMLButtonElement>("pair-btn").disabled = byId<HTMLInputElement>("code").value.trim() === "";
}

/// Tried once per popup: pairing through keyless-host's native-messaging host, with no code.
let triedAutoPair = false;

async function refresh(): Promise<void> {
  let st = await ask("status", {});
  if (!st.paired && !triedAutoPair) {
    triedAutoPair = true;
    const auto = await ask("autoPair", {});
    st = auto;
    setText(byId("auto-pair-note"), auto.paired ? "" : (auto.autoPair ?? ""));
  }
  const dot = byId("conn");
  dot.className = `dot ${st.connected && st.paired ? "ok" : "bad"}`;
  setText(byId("conn-text"), st.paired ? (st.connected ? `connected to ${st.hostUrl}` : "host not reachable") : "not paired");
  byId("pair").hidden = st.paired;
  byId("paired").hidden = !st.paired;
  byId<HTMLInputElement>("host-url").value = st.hostUrl;
  if (st.error) showError(KeylessError.of(st.error));
  if (!st.paired) return;
  setText(byId("workspace"), st.workspace ?? "");
  const s = await ask("getSettings", {});
  byId<HTMLSelectElement>("mode").value = s.mode;
  byId<HTMLSelectElement>("pace").value = s.pace;
  byId<HTMLInputElement>("auto-send").checked = s.autoSend;
  const tab = await targetTab();
  const host = tab?.url ? new URL(tab.url).hostname : "";
  const where = tab?.id === undefined ? { site: null, supported: [] } : await ask("tabSite", { tabId: tab.id });
  chatTab = where.site !== null;
  byId<HTMLButtonElement>("start").disabled = !chatTab;
  setText(byId("site"), where.site ? `${where.site} (${host})` : "not a chat");
  showNotChat(where.supported);
  const sites = byId<HTMLSelectElement>("continue-site");
  sites.replaceChildren();
  for (const w of where.supported) {
    const o = el("option", "", w.name);
    o.value = w.name;
    sites.append(o);
  }
  if (where.site) sites.value = where.site;
  if (st.connected) {
    const pieces = byId<HTMLSelectElement>("piece");
    try {
      const { pieces: list } = await ask("pieces", {});
      for (const p of list) {
        const o = el("option", "", p.name);
        o.value = p.name;
        o.title = visible(p.description);
        pieces.append(o);
      }
      pieces.value = s.piece;
    } catch (e) {
      showError(e);
    }
  }
  showRun(tab?.id === undefined ? null : (await ask("runOf", { tabId: tab.id })).run);
  const programs = tab?.id === undefined ? { on: false, tabId: null } : await ask("programs", { tabId: tab.id });
  showPrograms(programs.on, programs.tabId);
}

/// The "Answer .as programs here" switch: on in one tab at a time.
function showPrograms(on: boolean, tabId: number | null): void {
  const box = byId<HTMLInputElement>("programs");
  box.checked = on;
  box.disabled = !chatTab;
  const note = byId("programs-note");
  note.hidden = !on && tabId === null;
  note.textContent = on
    ? "keyless-host as run sends each keyless://chat generate to this chat. Leave the tab open and do not type in it while a program runs."
    : tabId !== null
      ? "Another tab answers .as programs; turning this on moves it here."
      : "";
}

async function withTab(f: (tabId: number) => Promise<void>): Promise<void> {
  clearError();
  const tab = await targetTab();
  if (tab?.id === undefined) throw new KeylessError("KA_INTERNAL", "no tab to control");
  await f(tab.id);
}

function on(id: string, f: () => Promise<void>): void {
  byId(id).addEventListener("click", () => {
    f().catch(showError);
  });
}

on("pair-btn", async () => {
  clearError();
  await ask("pair", { hostUrl: byId<HTMLInputElement>("host-url").value, code: byId<HTMLInputElement>("code").value });
  byId<HTMLInputElement>("code").value = "";
  codeTyped();
  await refresh();
});
byId("code").addEventListener("input", codeTyped);
byId("code").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !byId<HTMLButtonElement>("pair-btn").disabled) byId("pair-btn").click();
});
on("unpair", async () => {
  await ask("unpair", {});
  await refresh();
});
for (const id of ["mode", "pace", "piece"]) {
  byId(id).addEventListener("change", () => {
    const value = byId<HTMLSelectElement>(id).value;
    const mode = oneOf(MODES, value);
    const pace = oneOf(PACES, value);
    const patch = id === "mode" ? (mode ? { mode } : {}) : id === "pace" ? (pace ? { pace } : {}) : { piece: value };
    ask("setSettings", patch).catch(showError);
  });
}
byId("auto-send").addEventListener("change", () => {
  ask("setSettings", { autoSend: byId<HTMLInputElement>("auto-send").checked }).catch(showError);
});
byId("programs").addEventListener("change", () => {
  withTab(async (tabId) => {
    const r = await ask("programs", { tabId, on: byId<HTMLInputElement>("programs").checked });
    showPrograms(r.on, r.tabId);
  }).catch((e: unknown) => {
    byId<HTMLInputElement>("programs").checked = false;
    showError(e);
  });
});
on("start", () =>
  withTab(async (tabId) => {
    const { run } = await ask("start", { tabId, task: byId<HTMLTextAreaElement>("task").value });
    byId<HTMLTextAreaElement>("task").value = "";
    showRun(run);
  }),
);
on("continue", () =>
  withTab(async (tabId) => {
    await ask("continueIn", { tabId, site: byId<HTMLSelectElement>("continue-site").value });
    showRun((await ask("runOf", { tabId })).run);
  }),
);
on("pause", () =>
  withTab(async (tabId) => {
    const cur = (await ask("runOf", { tabId })).run;
    const { run } = cur?.state === "paused" ? await ask("resume", { tabId }) : await ask("pause", { tabId });
    showRun(run);
  }),
);
on("stop", () =>
  withTab(async (tabId) => {
    showRun((await ask("stop", { tabId })).run);
  }),
);
on("doctor", () =>
  withTab(async (tabId) => {
    const out = byId<HTMLTableElement>("doctor-out");
    out.replaceChildren();
    const r = await ask("doctor", { tabId });
    if (r.error) throw KeylessError.of(r.error);
    for (const l of r.lines) {
      const tr = el("tr");
      tr.append(el("td", "", l.key), el("td", `st-${l.status}`, l.status), el("td", "", `${l.code ? `${l.code}: ` : ""}${l.message}`));
      tr.title = visible(l.selector ?? "");
      out.append(tr);
    }
  }),
);

on("capture", () =>
  withTab(async (tabId) => {
    const { name, html } = await ask("capture", { tabId });
    const url = URL.createObjectURL(new Blob([html], { type: "text/html" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    const out = byId<HTMLTableElement>("doctor-out");
    const tr = el("tr");
    tr.append(el("td", "", "capture"), el("td", "st-ok", "saved"), el("td", "", `${name}: open it to check it holds none of your conversation, then attach it to the report`));
    out.append(tr);
  }),
);

refresh().catch(showError);
