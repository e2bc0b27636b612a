// The page script: runs in the chat page's own world (manifest `"world": "MAIN"`, which the
// site's CSP does not block) for one job. Code editors (CodeMirror 6 and 5, Ace, Monaco) keep only
// their visible lines in the DOM; their whole text lives in the editor's state, which only the
// page's world can reach. When the content script dispatches `keyless-read-editors`, each
// editor's whole text is written to its `data-keyless-code` attribute, where the content script
// reads it. An editor whose model it cannot reach is read, once the site has stopped, through the
// site's own copy button with the clipboard caught (the user's clipboard is left alone). An editor
// it cannot read either way gets no attribute, and the reply counts as incomplete.
// Nothing here decides or sends anything; the text is as untrusted as the rest of the page.

import { COPY_EDITORS, EDITOR_TEXT, EDITORS, READ_EDITORS, WANT_COPY } from "./editors.js";

type Doc = { toString(): string };
type Cm6View = { state?: { doc?: Doc } };
interface Cm6Node {
  cmView?: { rootView?: { view?: Cm6View }; view?: Cm6View };
  cmTile?: { root?: { view?: Cm6View }; view?: Cm6View };
}
interface Cm5Node {
  CodeMirror?: { getValue(): string };
}
interface AceNode {
  env?: { editor?: { getValue(): string } };
}
interface MonacoEditor {
  getDomNode(): HTMLElement | null;
  getValue(): string;
}
interface MonacoGlobal {
  editor?: { getEditors?(): MonacoEditor[] };
}

function cm6(el: Element): string | null {
  const content = el.querySelector(".cm-content") as (Element & Cm6Node) | null;
  for (const node of [content, el as Element & Cm6Node]) {
    if (!node) continue;
    const view = node.cmView?.rootView?.view ?? node.cmView?.view ?? node.cmTile?.root?.view ?? node.cmTile?.view;
    const doc = view?.state?.doc;
    if (doc && typeof doc.toString === "function") return String(doc.toString());
  }
  return null;
}

function cm5(el: Element): string | null {
  const cm = (el as Element & Cm5Node).CodeMirror;
  return cm && typeof cm.getValue === "function" ? String(cm.getValue()) : null;
}

function ace(el: Element): string | null {
  const ed = (el as Element & AceNode).env?.editor;
  return ed && typeof ed.getValue === "function" ? String(ed.getValue()) : null;
}

function monaco(el: Element): string | null {
  const m = (window as unknown as { monaco?: MonacoGlobal }).monaco;
  const editors = m?.editor?.getEditors?.() ?? [];
  for (const e of editors) {
    const dom = e.getDomNode();
    if (dom && (dom === el || el.contains(dom) || dom.contains(el))) return String(e.getValue());
  }
  return null;
}

/// What each editor's copy button gave (the content script asks again when the editor changes).
const copiedText = new WeakMap<Element, string>();

/// An editor's whole text: from its model, else from what its copy button gave.
function read(el: Element): string | null {
  return model(el) ?? copiedText.get(el) ?? null;
}

/// The text of the editor's own model, when this script can reach it.
function model(el: Element): string | null {
  try {
    return cm6(el) ?? cm5(el) ?? ace(el) ?? monaco(el);
  } catch {
    return null;
  }
}

function publish(el: Element, text: string | null): void {
  if (text === null) el.removeAttribute(EDITOR_TEXT);
  else if (el.getAttribute(EDITOR_TEXT) !== text) el.setAttribute(EDITOR_TEXT, text);
}

document.addEventListener(READ_EDITORS, () => {
  for (const el of Array.from(document.querySelectorAll(EDITORS))) publish(el, read(el));
});

// ---- the site's copy button, for an editor whose model this script cannot reach (a bundled
// Monaco without its global) ----

/// The copy button of `el`'s code block: a button near the editor (in its nearest ancestors, up
/// to four, that hold no other editor) whose label, title, text or icon says "copy".
function copyButton(el: Element): HTMLElement | null {
  let box = el.parentElement;
  for (let up = 0; box && up < 4; up++, box = box.parentElement) {
    if (box.querySelectorAll(EDITORS).length > 1) return null;
    for (const b of Array.from(box.querySelectorAll<HTMLElement>("button, [role=button]"))) {
      if (el.contains(b)) continue;
      const said = [b.getAttribute("aria-label"), b.getAttribute("title"), b.getAttribute("data-testid"), b.getAttribute("class"), b.textContent].join(" ");
      if (/copy/i.test(said) || b.querySelector('[class*="copy" i], [href*="copy" i], [data-icon*="copy" i], [fonticon*="copy" i]')) return b;
    }
  }
  return null;
}

/// How long the clipboard stays caught after a click (a site's handler may write after an await).
const CATCH_MS = 1000;
let release: (() => void) | null = null;
let releaseTimer = 0;
/// Where what the site writes goes: the editor of the last click.
let catcher: (text: string) => void = () => undefined;

/// Clicks `button` with the clipboard caught: what the site writes goes to `got`, never to the
/// user's clipboard.
function clickCaught(button: HTMLElement, to: (text: string) => void): void {
  catcher = to;
  const got = (text: string) => catcher(text);
  const clip = navigator.clipboard as unknown as Record<string, unknown> | undefined;
  const exec = document.execCommand;
  if (!release) {
    // What was the page's own before (a site may have set its own on the object): put back as it was.
    const own = { writeText: clip && Object.hasOwn(clip, "writeText"), write: clip && Object.hasOwn(clip, "write"), exec: Object.hasOwn(document, "execCommand") };
    const before = { writeText: clip?.writeText, write: clip?.write };
    if (clip) {
      clip.writeText = (t: string) => {
        got(String(t));
        return Promise.resolve();
      };
      clip.write = async (items: ClipboardItem[]) => {
        for (const item of items) {
          if (item.types.includes("text/plain")) got(await (await item.getType("text/plain")).text());
        }
      };
    }
    document.execCommand = function (command: string, ...rest: unknown[]): boolean {
      if (String(command).toLowerCase() !== "copy") return (exec as (...a: unknown[]) => boolean).call(document, command, ...rest);
      const active = document.activeElement;
      if (active instanceof HTMLTextAreaElement || active instanceof HTMLInputElement) {
        got(active.value.slice(active.selectionStart ?? 0, active.selectionEnd ?? active.value.length));
      } else got(String(document.getSelection() ?? ""));
      return true;
    };
    release = () => {
      if (clip) {
        if (own.writeText) clip.writeText = before.writeText;
        else Reflect.deleteProperty(clip, "writeText");
        if (own.write) clip.write = before.write;
        else Reflect.deleteProperty(clip, "write");
      }
      if (own.exec) document.execCommand = exec;
      else Reflect.deleteProperty(document, "execCommand");
      release = null;
    };
  } else window.clearTimeout(releaseTimer);
  try {
    button.click();
  } finally {
    releaseTimer = window.setTimeout(() => release?.(), CATCH_MS);
  }
}

document.addEventListener(COPY_EDITORS, () => {
  for (const el of Array.from(document.querySelectorAll(`[${WANT_COPY}]`))) {
    el.removeAttribute(WANT_COPY);
    if (model(el) !== null) continue;
    const button = copyButton(el);
    if (!button) continue;
    clickCaught(button, (text) => {
      copiedText.set(el, text);
      publish(el, read(el));
    });
  }
});
