// Writing into the chat's composer through the editor's own input path, checking it holds exactly
// the message, sending, and confirming the message appeared in the thread.

import { pasteEvent } from "./browser.js";
import type { SiteAdapter } from "./protocol.js";

export class ChatError extends Error {
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(`${code} ${detail}`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function query(selector: string | undefined, root: ParentNode = document): Element | null {
  if (!selector) return null;
  try {
    return root.querySelector(selector);
  } catch {
    return null;
  }
}

export function queryAll(selector: string | undefined, root: ParentNode = document): Element[] {
  if (!selector) return [];
  try {
    return Array.from(root.querySelectorAll(selector));
  } catch {
    return [];
  }
}

/// The composer element; KA_SELECTOR_NOT_FOUND when the selector no longer matches.
export function composerOf(site: SiteAdapter): HTMLElement {
  const el = query(site.selectors.composer) as HTMLElement | null;
  if (!el) throw new ChatError("KA_SELECTOR_NOT_FOUND", `composer (${site.selectors.composer}) is not on the page; run the doctor in the keyless popup`);
  return el;
}

function normalise(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/\u00a0/g, " ").replace(/[\s]+$/, "");
}

/// The text a composer holds, line by line as its editor sees it.
export function composerText(el: HTMLElement, site: SiteAdapter): string {
  if (site.composer_kind === "textarea" || el instanceof HTMLTextAreaElement) return (el as HTMLTextAreaElement).value;
  const blocks = Array.from(el.children).filter((c) => ["P", "DIV", "PRE", "H1", "H2", "H3", "LI"].includes(c.tagName));
  if (blocks.length === 0) return el.innerText;
  return blocks
    .map((b) => {
      let s = "";
      b.childNodes.forEach((n, i) => {
        if (n.nodeName === "BR") {
          if (i < b.childNodes.length - 1) s += "\n";
        } else s += n.textContent ?? "";
      });
      return s;
    })
    .join("\n");
}

function selectAll(el: HTMLElement): void {
  el.focus();
  const sel = window.getSelection();
  if (!sel) return;
  const range = document.createRange();
  range.selectNodeContents(el);
  sel.removeAllRanges();
  sel.addRange(range);
}

function setTextarea(el: HTMLTextAreaElement, text: string): void {
  el.focus();
  const setter = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value")?.set;
  if (setter) setter.call(el, text);
  else el.value = text;
  el.dispatchEvent(new Event("input", { bubbles: true }));
}

/// Empties the composer through the editor's input path.
function clear(el: HTMLElement, site: SiteAdapter): void {
  if (site.composer_kind === "textarea") {
    setTextarea(el as HTMLTextAreaElement, "");
    return;
  }
  selectAll(el);
  document.execCommand("delete", false);
}

/// Replaces the composer's text with `text`: select all, then a paste event carrying text/plain
/// (what ProseMirror and Quill handle); `insertText` when the editor ignored the paste.
function insert(el: HTMLElement, site: SiteAdapter, text: string): void {
  if (site.composer_kind === "textarea") {
    setTextarea(el as HTMLTextAreaElement, text);
    return;
  }
  selectAll(el);
  const paste = pasteEvent(text);
  el.dispatchEvent(paste);
  if (!paste.defaultPrevented) {
    selectAll(el);
    document.execCommand("insertText", false, text);
  }
}

/// Writes `text` and checks the composer holds exactly it; one reset and retry, then
/// KA_COMPOSER_NOT_CLEAN.
export async function write(site: SiteAdapter, text: string): Promise<HTMLElement> {
  const want = normalise(text);
  for (let attempt = 0; attempt < 2; attempt++) {
    const el = composerOf(site);
    if (attempt > 0 || normalise(composerText(el, site)) !== "") clear(el, site);
    insert(el, site, text);
    await sleep(30);
    const got = normalise(composerText(composerOf(site), site));
    if (got === want) return el;
  }
  const got = normalise(composerText(composerOf(site), site));
  clear(composerOf(site), site);
  throw new ChatError(
    "KA_COMPOSER_NOT_CLEAN",
    `the composer does not hold the message after a reset (it holds ${got.length} characters, expected ${want.length})`,
  );
}

function sendButton(site: SiteAdapter): HTMLButtonElement | null {
  const b = query(site.selectors.send_button) as HTMLButtonElement | null;
  if (!b || b.disabled || b.getAttribute("aria-disabled") === "true") return null;
  return b;
}

function firstLine(text: string): string {
  return (text.split("\n").find((l) => l.trim() !== "") ?? "").trim().slice(0, 60);
}

function userMessages(site: SiteAdapter): Element[] {
  return queryAll(site.selectors.user_message);
}

async function until<T>(ms: number, probe: () => T | null | undefined | false): Promise<T | null> {
  const end = performance.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (performance.now() > end) return null;
    await sleep(50);
  }
}

/// Clicks send and waits until the message shows in the thread.
async function clickAndConfirm(site: SiteAdapter, text: string, before: number, waitMs: number): Promise<boolean> {
  const button = await until(5000, () => sendButton(site));
  if (!button) return false;
  button.click();
  const head = firstLine(text);
  const seen = await until(waitMs, () => {
    const all = userMessages(site);
    if (all.length <= before) return false;
    const last = all[all.length - 1];
    return (last?.textContent ?? "").replace(/\s+/g, " ").includes(head.replace(/\s+/g, " "));
  });
  return seen !== null;
}

export interface SendOptions {
  /// Attach `text` as this file and write `note` in the composer.
  attach?: { fileName: string; note: string };
  confirmMs?: number;
}

/// Attaches a text file through the site's file input; false when the site shows no chip for it.
async function attach(site: SiteAdapter, fileName: string, text: string): Promise<boolean> {
  const input = query(site.selectors.file_input) as HTMLInputElement | null;
  if (!input) return false;
  const chipsBefore = queryAll(site.selectors.attachment_chip).length;
  const data = new DataTransfer();
  data.items.add(new File([text], fileName, { type: "text/plain" }));
  input.files = data.files;
  input.dispatchEvent(new Event("change", { bubbles: true }));
  if (!site.selectors.attachment_chip) return true;
  return (await until(8000, () => queryAll(site.selectors.attachment_chip).length > chipsBefore)) !== null;
}

/// Puts a message into the chat and sends it. Returns the KA_ code of a fallback that happened
/// (KA_ATTACHMENT_UPLOAD_FAILED), or null.
export async function send(site: SiteAdapter, text: string, opts: SendOptions = {}): Promise<string | null> {
  if (!navigator.onLine) throw new ChatError("KA_NETWORK_OFFLINE", "the browser is offline: nothing was sent; it is sent when the connection is back");
  const chips = queryAll(site.selectors.attachment_chip).length;
  if (chips > 0) {
    throw new ChatError("KA_COMPOSER_NOT_CLEAN", `the composer holds ${chips} attachment chip(s) from before; remove them and press Resend`);
  }
  let body = text;
  let fallback: string | null = null;
  if (opts.attach) {
    if (await attach(site, opts.attach.fileName, text)) body = opts.attach.note;
    else fallback = "KA_ATTACHMENT_UPLOAD_FAILED";
  }
  const before = userMessages(site).length;
  await write(site, body);
  const wait = opts.confirmMs ?? 10000;
  if (await clickAndConfirm(site, body, before, wait)) return fallback;
  // One retry: the text may still be in the composer (the click was lost), or gone (sent late).
  const el = query(site.selectors.composer) as HTMLElement | null;
  if (el && normalise(composerText(el, site)) === "") {
    const late = userMessages(site).length > before;
    if (late) return fallback;
    await write(site, body);
  }
  if (await clickAndConfirm(site, body, before, wait)) return fallback;
  throw new ChatError("KA_SEND_NOT_CONFIRMED", "the message did not appear in the thread after sending twice");
}
