// Rebuilds a reply's text from the rendered message DOM, faithfully enough for the parser:
// each code block becomes its fence lines around its exact code text (no language label, no
// "Copy code" button text); prose becomes its text lines; a <br> becomes a newline; screen-reader
// headings and buttons are left out. A code block that is an editor (CodeMirror, Monaco) keeps
// only its visible lines in the DOM: its whole text comes from the page script (page.ts) through
// `data-keyless-code`, or the reply is incomplete.

import { EDITOR_TEXT, EDITORS } from "./editors.js";
import { matchAll, matchesAny } from "./select.js";

/// Code editors that hold only their visible lines in the DOM.
/// Where the page script leaves an editor's whole text.

const BLOCK = new Set([
  "ADDRESS", "ARTICLE", "ASIDE", "BLOCKQUOTE", "DD", "DIV", "DL", "DT", "FIGCAPTION", "FIGURE", "FOOTER",
  "H1", "H2", "H3", "H4", "H5", "H6", "HEADER", "HR", "LI", "MAIN", "NAV", "OL", "P", "SECTION", "TABLE",
  "TBODY", "THEAD", "TFOOT", "TR", "UL",
]);
const SKIP = new Set(["BUTTON", "SVG", "STYLE", "SCRIPT", "TEMPLATE", "NOSCRIPT", "TEXTAREA", "INPUT", "SELECT"]);

/// The longest run of `ch` that starts a line of `code`.
function longestFenceRun(code: string, ch: string): number {
  let best = 0;
  for (const line of code.split("\n")) {
    const t = line.trimStart();
    let n = 0;
    while (n < t.length && t[n] === ch) n++;
    best = Math.max(best, n);
  }
  return best;
}

function codeOf(pre: Element): { code: string; lang: string } {
  const codeEl = pre.querySelector("code");
  const source = codeEl ?? pre;
  let code = source.textContent ?? "";
  if (code.endsWith("\n")) code = code.slice(0, -1);
  const cls = codeEl?.className ?? "";
  const m = /(?:^|\s)(?:language|lang)-([\w+#.-]+)/.exec(cls);
  return { code, lang: m?.[1] ?? "" };
}

/// An editor's whole text (from the page script), or its visible lines and `whole: false`.
function editorText(el: Element): { code: string; whole: boolean } {
  const full = el.getAttribute(EDITOR_TEXT);
  if (full !== null) return { code: full, whole: true };
  const lines = Array.from(el.querySelectorAll(".cm-line, .view-line, .CodeMirror-line, .ace_line")).map((l) => (l.textContent ?? "").replace(/\u00a0/g, " "));
  return { code: lines.join("\n"), whole: false };
}

const PROSE = "p, li, h1, h2, h3, h4, h5, h6, blockquote, table";

/// The text of `el` outside `inside` (and outside buttons, icons and what is ignored), trimmed.
function textOutside(el: Element, inside: Element, skip: readonly string[] | undefined): string {
  let t = "";
  const walk = (n: Node) => {
    if (n === inside) return;
    if (n.nodeType === Node.TEXT_NODE) t += n.nodeValue ?? "";
    else if (n.nodeType === Node.ELEMENT_NODE) {
      const e = n as Element;
      if (SKIP.has(e.tagName.toUpperCase()) || (n !== el && skip && matchesAny(e, skip))) return;
      e.childNodes.forEach(walk);
    }
  };
  walk(el);
  return t.replace(/\s+/g, " ").trim();
}

/// A code block with its chrome around it (a header with the language label, a toolbar): one
/// code element, no prose outside it, and at most a short label. Sites that the adapters do not
/// know to the last class render these; the label must not become a stray line of the reply.
/// Returns the code element and the label.
function codeWrapper(el: Element, skip: readonly string[] | undefined): { code: Element; label: string } | null {
  const codes = el.querySelectorAll(`pre, ${EDITORS}`);
  const code = codes[0];
  if (!code || !Array.from(codes).every((c) => c === code || code.contains(c))) return null;
  if (Array.from(el.querySelectorAll(PROSE)).some((x) => !code.contains(x))) return null;
  const label = textOutside(el, code, skip);
  return label.length <= 40 ? { code, label } : null;
}

/// The reply's content in `message`: the first `content` match, taking the alternatives in order,
/// that is not inside something never read (a thinking panel may render its draft with the same
/// markup as the answer); the message itself when there is none.
export function contentIn(message: Element, content: readonly string[] | undefined, ignore: readonly string[] | undefined): Element {
  const hidden = (el: Element): boolean => {
    for (let p: Element | null = el; p && p !== message; p = p.parentElement) if (matchesAny(p, ignore)) return true;
    return false;
  };
  for (const alt of content ?? []) {
    const found = matchAll([alt], message).find((e) => !hidden(e));
    if (found) return found;
  }
  return message;
}

/// The reply text of an assistant message element. While the site still streams (`streaming`),
/// a code block that ends the message may still be open: it gets no closing fence, so its last,
/// unfinished line is never mistaken for a complete one.
export function replyText(message: Element, ignore: string | readonly string[] | undefined, streaming = false): string {
  return readReply(message, ignore, streaming).text;
}

/// The reply text, and whether part of it could not be read (`incomplete`: an editor whose whole
/// text the page script did not give). Everything matching an `ignore` alternative is left out,
/// except the message element itself.
export function readReply(message: Element, ignore: string | readonly string[] | undefined, streaming = false): { text: string; incomplete: boolean } {
  const skip = typeof ignore === "string" ? [ignore] : ignore;
  let incomplete = false;
  /// The language label of the code wrapper being read.
  let labelled = "";
  const out: string[] = [];
  /// Index in `out` of the closing fence of the last code block, while nothing follows it.
  let lastFence = -1;
  let line = "";
  const newline = () => {
    out.push(line.replace(/[ \t]+$/, ""));
    line = "";
  };
  const boundary = () => {
    if (line !== "") newline();
  };
  const walk = (node: Node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const t = (node.nodeValue ?? "").replace(/[\n\r]+/g, " ").replace(/\u00a0/g, " ");
      // Whitespace between block elements (templates that indent their markup) starts no line:
      // the browser collapses it too, and it must not become a blank line in the reply.
      if (t.trim() === "") {
        if (line !== "") line += t;
        return;
      }
      lastFence = -1;
      line += t;
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node as Element;
    const tag = el.tagName.toUpperCase();
    if (SKIP.has(tag)) return;
    if (el !== message && skip && matchesAny(el, skip)) return;
    if (el.getAttribute("aria-hidden") === "true" && !el.querySelector("pre, code")) return;
    if (tag === "BR") {
      newline();
      return;
    }
    // An editor, or a <pre> an editor sits in: the editor's whole text, never its visible lines.
    const inner = tag === "PRE" ? el.querySelector(EDITORS) : null;
    if (inner) {
      walk(inner);
      return;
    }
    const editor = safeMatches(el, EDITORS);
    if (el !== message && tag !== "PRE" && !editor) {
      const wrapped = codeWrapper(el, skip);
      if (wrapped) {
        boundary();
        labelled = /^[\w+#.-]{1,24}$/.test(wrapped.label) ? wrapped.label : "";
        walk(wrapped.code);
        labelled = "";
        return;
      }
    }
    if (tag === "PRE" || editor) {
      boundary();
      let code: string;
      let lang = "";
      if (editor) {
        const e = editorText(el);
        code = e.code;
        if (!e.whole) incomplete = true;
      } else ({ code, lang } = codeOf(el));
      if (!lang && labelled && labelled.toLowerCase() !== "code") lang = labelled.toLowerCase();
      const fence = "`".repeat(Math.max(3, longestFenceRun(code, "`") + 1));
      out.push(fence + lang, ...code.split("\n"), fence);
      lastFence = out.length - 1;
      return;
    }
    const block = BLOCK.has(tag);
    if (block) boundary();
    for (const child of Array.from(el.childNodes)) walk(child);
    if (block) boundary();
  };
  walk(message);
  boundary();
  if (streaming && lastFence >= 0 && out.slice(lastFence + 1).every((l) => l.trim() === "")) out.length = lastFence;
  while (out.length && out[0]?.trim() === "") out.shift();
  while (out.length && out[out.length - 1]?.trim() === "") out.pop();
  return { text: out.join("\n"), incomplete };
}

function safeMatches(el: Element, selector: string): boolean {
  try {
    return el.matches(selector);
  } catch {
    return false;
  }
}
