// The options page: host address, auto-send, budgets, and selector overrides checked by the core.
// What the core and the host say is shown through `visible` (by `el` and `setText`); the fields
// hold the settings as they are stored.

import { byId, el, setText } from "../../www/common/dom.js";
import { errorText, KeylessError } from "../../www/common/error.js";
import { ask } from "./protocol.js";

const verdict = byId<HTMLDivElement>("verdict");

function show(ok: boolean, text: string): void {
  verdict.replaceChildren(el("div", ok ? "ok-box" : "error", text));
}

/// What failed: its code, then its message.
function showError(e: unknown): void {
  show(false, errorText(KeylessError.from(e)));
}

async function load(): Promise<void> {
  const s = await ask("getSettings", {});
  byId<HTMLInputElement>("host-url").value = s.hostUrl;
  byId<HTMLInputElement>("auto-send").checked = s.autoSend;
  byId<HTMLInputElement>("suggest-new-chat").checked = s.suggestNewChat;
  byId<HTMLInputElement>("truncation").value = String(s.truncationBudgetSeconds);
  byId<HTMLInputElement>("timeout").value = String(s.replyTimeoutSeconds);
  byId<HTMLTextAreaElement>("overrides").value = s.selectorOverrides;
  setText(byId("defaults"), (await ask("defaultSites", {})).json);
}

async function check(): Promise<boolean> {
  const r = await ask("checkOverrides", { text: byId<HTMLTextAreaElement>("overrides").value });
  if (r.ok) show(true, `Valid: ${r.sites.map((s) => s.name).join(", ")}.`);
  else show(false, r.error ? errorText(r.error) : "invalid");
  return r.ok;
}

function bounded(id: string, lo: number, hi: number): number {
  const v = Number(byId<HTMLInputElement>(id).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new KeylessError("KA_CONFIG_VALIDATION", `${id}: must be a whole number ${lo}–${hi}`);
  return v;
}

byId("check").addEventListener("click", () => {
  check().catch((e: unknown) => show(false, String(e)));
});
byId("save").addEventListener("click", () => {
  (async () => {
    if (!(await check())) return;
    await ask("setSettings", {
      hostUrl: byId<HTMLInputElement>("host-url").value.trim(),
      autoSend: byId<HTMLInputElement>("auto-send").checked,
      suggestNewChat: byId<HTMLInputElement>("suggest-new-chat").checked,
      truncationBudgetSeconds: bounded("truncation", 5, 3600),
      replyTimeoutSeconds: bounded("timeout", 30, 86400),
      selectorOverrides: byId<HTMLTextAreaElement>("overrides").value,
    });
    show(true, "Saved. Open chat tabs pick the new selectors up on their next reply (reload them to be sure).");
  })().catch(showError);
});

byId("export").addEventListener("click", () => {
  (async () => {
    if (!(await check())) return;
    const text = byId<HTMLTextAreaElement>("overrides").value.trim() || "{}";
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([`${text}\n`], { type: "application/json" }));
    a.download = "keyless-selector-overrides.json";
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  })().catch(showError);
});
byId("import").addEventListener("click", () => byId<HTMLInputElement>("import-file").click());
byId<HTMLInputElement>("import-file").addEventListener("change", () => {
  (async () => {
    const input = byId<HTMLInputElement>("import-file");
    const file = input.files?.[0];
    input.value = "";
    if (!file) return;
    if (file.size > 1_000_000) throw new KeylessError("KA_CONFIG_VALIDATION", "the file is over 1 MB; a file of overrides is a few KB");
    // Checked and merged over yours by the core (the file wins where both set a selector), then saved.
    const { text } = await ask("importOverrides", { text: await file.text() });
    byId<HTMLTextAreaElement>("overrides").value = text;
    await ask("setSettings", { selectorOverrides: text });
    show(true, `Imported ${file.name} and saved. Open chat tabs use it from their next reply.`);
  })().catch(showError);
});

load().catch((e: unknown) => show(false, String(e)));
