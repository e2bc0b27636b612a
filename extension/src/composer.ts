// Writing into the chat's composer through the editor's own input path, checking it holds exactly
// the message, sending, and confirming the message appeared in the thread.

import { KeylessError } from "../../www/common/error.js";
import { pasteEvent } from "./browser.js";
import { Seen } from "./identity.js";
import type { Code, SiteAdapter } from "./protocol.js";
import { match, matchAll, shown } from "./select.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/// The composer element; KA_SELECTOR_NOT_FOUND when the selector no longer matches.
export function composerOf(site: SiteAdapter): HTMLElement {
  const el = match(site.selectors.composer) as HTMLElement | null;
  if (!el) throw new KeylessError("KA_SELECTOR_NOT_FOUND", `composer (${shown(site.selectors.composer)}) is not on the page: press "Pick it" and click the box where you type`, { key: "composer" });
  return el;
}

function normalise(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/\u00a0/g, " ").replace(/[\s]+$/, "");
}

/// The text a composer holds, line by line as its editor sees it.
export function composerText(el: HTMLElement): string {
  if (el instanceof HTMLTextAreaElement) return el.value;
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
function clear(el: HTMLElement): void {
  if (el instanceof HTMLTextAreaElement) {
    setTextarea(el, "");
    return;
  }
  selectAll(el);
  document.execCommand("delete", false);
}

/// Replaces the composer's text with `text`: select all, then a paste event carrying text/plain
/// (what ProseMirror and Quill handle); `insertText` when the editor ignored the paste.
function insert(el: HTMLElement, text: string): void {
  if (el instanceof HTMLTextAreaElement) {
    setTextarea(el, text);
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
    if (attempt > 0 || normalise(composerText(el)) !== "") clear(el);
    insert(el, text);
    await sleep(30);
    const got = normalise(composerText(composerOf(site)));
    if (got === want) return el;
  }
  const got = normalise(composerText(composerOf(site)));
  clear(composerOf(site));
  throw new KeylessError(
    "KA_COMPOSER_NOT_CLEAN",
    `the composer does not hold the message after a reset (it holds ${got.length} characters, expected ${want.length})`,
  );
}

function sendButton(site: SiteAdapter): HTMLElement | null {
  const b = match(site.selectors.send_button) as HTMLElement | null;
  if (!b || (b as HTMLButtonElement).disabled || b.getAttribute("aria-disabled") === "true") return null;
  return b;
}

function firstLine(text: string): string {
  return (text.split("\n").find((l) => l.trim() !== "") ?? "").trim().slice(0, 60);
}

function userMessages(site: SiteAdapter): Element[] {
  return matchAll(site.selectors.user_message);
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

/// Clicks send and waits until the message shows in the thread: a new user message that holds
/// its first line. On a page where no user message is found at all (a selector the site broke),
/// the composer emptied and a reply starting (`replying`) confirm it instead.
async function clickAndConfirm(site: SiteAdapter, text: string, before: Seen, waitMs: number, replying: () => boolean): Promise<boolean> {
  const button = await until(5000, () => sendButton(site));
  if (!button) {
    if (!match(site.selectors.send_button)) {
      throw new KeylessError("KA_SELECTOR_NOT_FOUND", `send button (${shown(site.selectors.send_button)}) is not on the page: press "Pick it" and click the button that sends`, { key: "send_button" });
    }
    return false;
  }
  button.click();
  const head = firstLine(text).replace(/\s+/g, " ");
  const seen = await until(waitMs, () => {
    // The user's newest message, new since the send began (by its key or as a new element: a
    // virtualized thread unmounts old ones, so a count proves nothing), holding the first line.
    const all = userMessages(site);
    const newest = all[all.length - 1];
    if (newest && !before.has(newest) && (newest.textContent ?? "").replace(/\s+/g, " ").includes(head)) return true;
    if (all.length > 0) return false;
    const el = match(site.selectors.composer) as HTMLElement | null;
    return el !== null && normalise(composerText(el)) === "" && replying();
  });
  return seen !== null;
}

export interface SendOptions {
  /// Attach `text` as this file and write `note` in the composer.
  attach?: { fileName: string; note: string };
  confirmMs?: number;
  /// Whether a reply has started (a new assistant message, or the site's stop signal): what
  /// confirms a send where the page shows no user message the adapter finds.
  replying?: () => boolean;
}

/// Attaches a text file through the site's file input; false when the site shows no chip for it.
async function attach(site: SiteAdapter, fileName: string, text: string): Promise<boolean> {
  const input = match(site.selectors.file_input) as HTMLInputElement | null;
  if (!input) return false;
  const chipsBefore = matchAll(site.selectors.attachment_chip).length;
  const data = new DataTransfer();
  data.items.add(new File([text], fileName, { type: "text/plain" }));
  input.files = data.files;
  input.dispatchEvent(new Event("change", { bubbles: true }));
  if (!site.selectors.attachment_chip) return true;
  return (await until(8000, () => matchAll(site.selectors.attachment_chip).length > chipsBefore)) !== null;
}

/// Puts a message into the chat and sends it. Returns the code of a fallback that happened
/// (KA_ATTACHMENT_UPLOAD_FAILED), or null.
export async function send(site: SiteAdapter, text: string, opts: SendOptions = {}): Promise<Code | null> {
  if (!navigator.onLine) throw new KeylessError("KA_NETWORK_OFFLINE", "the browser is offline: nothing was sent; it is sent when the connection is back");
  const chips = matchAll(site.selectors.attachment_chip).length;
  if (chips > 0) {
    throw new KeylessError("KA_COMPOSER_NOT_CLEAN", `the composer holds ${chips} attachment chip(s) from before; remove them and press Resend`);
  }
  let body = text;
  let fallback: Code | null = null;
  if (opts.attach) {
    if (await attach(site, opts.attach.fileName, text)) body = opts.attach.note;
    else fallback = "KA_ATTACHMENT_UPLOAD_FAILED";
  }
  const before = new Seen(userMessages(site));
  await write(site, body);
  const wait = opts.confirmMs ?? 10000;
  const replying = opts.replying ?? (() => false);
  if (await clickAndConfirm(site, body, before, wait, replying)) return fallback;
  // One retry: the text may still be in the composer (the click was lost), or gone (sent late).
  const el = match(site.selectors.composer) as HTMLElement | null;
  if (el && normalise(composerText(el)) === "") {
    const now = userMessages(site);
    const newest = now[now.length - 1];
    const late = newest !== undefined && !before.has(newest);
    if (late) return fallback;
    await write(site, body);
  }
  if (await clickAndConfirm(site, body, before, wait, replying)) return fallback;
  throw new KeylessError("KA_SEND_NOT_CONFIRMED", "the message did not appear in the thread after sending twice");
}
