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

/// An element's text with each `<br>` a newline (a code view drawn as one `pre` of lines).
function brText(el: Element): string {
  let t = "";
  const walk = (n: Node) => {
    if (n.nodeType === Node.TEXT_NODE) t += n.nodeValue ?? "";
    else if (n.nodeType === Node.ELEMENT_NODE) {
      if ((n as Element).tagName.toUpperCase() === "BR") t += "\n";
      else n.childNodes.forEach(walk);
    }
  };
  walk(el);
  return t;
}

/// An editor's whole text (from the page script), or its visible lines and `whole: false`. A
/// read-only view drawn as one `pre`/`code` of lines separated by `<br>` (ChatGPT's code blocks
/// since 2026-07) holds every line: its text is whole.
function editorText(el: Element): { code: string; whole: boolean } {
  const full = el.getAttribute(EDITOR_TEXT);
  if (full !== null) return { code: full, whole: true };
  const rows = Array.from(el.querySelectorAll(".cm-line, .view-line, .CodeMirror-line, .ace_line"));
  if (rows.length === 0) {
    const drawn = el.querySelector("pre.cm-content, .cm-content pre, .cm-content code, .cm-content");
    if (drawn) return { code: brText(drawn).replace(/\u00a0/g, " ").replace(/\n$/, ""), whole: true };
  }
  const monaco = monacoRows(el, rows);
  if (monaco) return { code: monaco.map((l) => (l.textContent ?? "").replace(/\u00a0/g, " ")).join("\n"), whole: true };
  const lines = rows.map((l) => (l.textContent ?? "").replace(/\u00a0/g, " "));
  return { code: lines.join("\n"), whole: false };
}

/// A px length from an inline style (`top: 19px`), or NaN.
function px(el: Element | null, prop: string): number {
  const v = el instanceof HTMLElement ? el.style.getPropertyValue(prop) : "";
  return v.endsWith("px") ? Number.parseFloat(v) : Number.NaN;
}

/// A Monaco editor that shows every line of its text: scrolled to its top, its rendered lines
/// in order from the first, and room left below the last one (Monaco draws every line that meets
/// its viewport, so none lies further down). Then its lines, in order; else `null` (only the
/// page script or the site's copy button can give its text).
function monacoRows(el: Element, rows: Element[]): Element[] | null {
  const editor = el.closest(".monaco-editor") ?? (el.matches(".monaco-editor") ? el : null);
  if (!editor || rows.length === 0) return null;
  const content = editor.querySelector(".lines-content");
  const scrolled = px(content, "top");
  if (!(scrolled === 0 || Number.isNaN(scrolled)) || /translate3d\(\s*[^,]+,\s*-[1-9]/.test((content as HTMLElement | null)?.style.transform ?? "")) return null;
  const viewport = px(editor.querySelector(".monaco-scrollable-element"), "height") || px(editor, "height");
  const placed = rows.map((r) => ({ r, top: px(r, "top"), height: px(r, "height") }));
  if (placed.some((p) => Number.isNaN(p.top))) return null;
  placed.sort((a, b) => a.top - b.top);
  const line = placed[0]?.height || placed[1]?.top || Number.NaN;
  if (Number.isNaN(line) || Number.isNaN(viewport) || placed[0]?.top !== 0) return null;
  if (placed.some((p, i) => Math.abs(p.top - i * line) > 0.5)) return null;
  const bottom = placed.length * line;
  return viewport - bottom >= line / 4 ? placed.map((p) => p.r) : null;
}

/// Math as its TeX source, once: a block's `data-math` (Gemini), KaTeX's TeX annotation, or the
/// source a `<math>` keeps as its own text (Qwen); `null` when the element holds none.
const MATH = "[data-math], .katex-display, .katex, mjx-container, math";
function texOf(el: Element): string | null {
  const own = el.closest("[data-math]") ?? el.querySelector("[data-math]");
  const dm = own?.getAttribute("data-math");
  if (dm) return dm;
  const ann = el.querySelector('annotation[encoding="application/x-tex"]');
  if (ann) return ann.textContent ?? "";
  const m = el.tagName.toUpperCase() === "MATH" ? el : el.querySelector("math");
  if (m) {
    const bare = Array.from(m.childNodes)
      .filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.nodeValue ?? "")
      .join("")
      .trim();
    if (bare) return bare;
    const alt = m.getAttribute("alttext");
    if (alt) return alt;
  }
  return null;
}

/// Whether math shows as a block of its own.
function displayMath(el: Element): boolean {
  return safeMatches(el, '.katex-display, .math-block, math[display="block"], mjx-container[display="true"]') || el.querySelector(".katex-display") !== null;
}

const CELL = 'td, th, [role="cell"], [role="gridcell"], [role="columnheader"], [role="rowheader"]';

/// A table cell's text on one line: its buttons included (a header's sort button holds its
/// label), math as TeX, what is ignored left out.
function cellText(cell: Element, skip: readonly string[] | undefined): string {
  let t = "";
  const walk = (n: Node) => {
    if (n.nodeType === Node.TEXT_NODE) t += n.nodeValue ?? "";
    else if (n.nodeType === Node.ELEMENT_NODE) {
      const e = n as Element;
      const tag = e.tagName.toUpperCase();
      if (tag !== "BUTTON" && SKIP.has(tag)) return;
      if (n !== cell && skip && matchesAny(e, skip)) return;
      if (e.getAttribute("aria-hidden") === "true") return;
      if (safeMatches(e, MATH)) {
        const tex = texOf(e);
        if (tex !== null) {
          t += ` ${tex} `;
          return;
        }
      }
      if (tag === "BR") t += " ";
      e.childNodes.forEach(walk);
    }
  };
  walk(cell);
  return t.replace(/\s+/g, " ").trim();
}

/// The rows of a table: its `tr`s (or `role=row`s), else, for a grid of bare cells, the cells in
/// runs as long as its header row.
function tableRows(table: Element): Element[][] {
  const rows = Array.from(table.querySelectorAll('tr, [role="row"]')).filter((r) => r.closest('table, [role="table"], [role="grid"]') === table);
  if (rows.length) return rows.map((r) => Array.from(r.querySelectorAll(CELL)).filter((c) => c.closest('tr, [role="row"]') === r));
  const cells = Array.from(table.querySelectorAll(CELL));
  const width = cells.filter((c) => safeMatches(c, 'th, [role="columnheader"]')).length || cells.length;
  const out: Element[][] = [];
  for (let i = 0; i < cells.length; i += width) out.push(cells.slice(i, i + width));
  return out;
}

const PROSE = "p, li, h1, h2, h3, h4, h5, h6, blockquote, table";
/// A code block drawn as an editable view without `pre` (ChatGPT since 2026-09: "Edit code").
const CODE_VIEW = '[role="textbox"][data-language]';

/// A code view's lines: a line per block child (an empty one holds only a `<br>`), else its text
/// with `<br>` as newlines.
function viewText(view: Element): string {
  const kids = Array.from(view.children);
  if (kids.length > 0 && kids.every((k) => k.tagName.toUpperCase() === "DIV" || k.tagName.toUpperCase() === "P")) {
    return kids.map((k) => brText(k).replace(/\n$/, "").replace(/\u00a0/g, " ")).join("\n");
  }
  return brText(view).replace(/\u00a0/g, " ");
}

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
  const codes = el.querySelectorAll(`pre, ${EDITORS}, ${CODE_VIEW}`);
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
      // Prose is read as the browser shows it: a run of whitespace is one space (templates
      // indent their markup), none at the start of a line.
      const t = (node.nodeValue ?? "").replace(/\u00a0/g, " ").replace(/[ \t\n\r\f]+/g, " ");
      // Whitespace between block elements starts no line, and never a blank line.
      if (t.trim() === "") {
        if (line !== "" && !line.endsWith(" ")) line += " ";
        return;
      }
      lastFence = -1;
      line += line === "" || line.endsWith(" ") ? t.replace(/^ /, "") : t;
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
    // Math: its TeX source once (never both the rendering and the source), a block on its own line.
    if (safeMatches(el, MATH)) {
      const tex = texOf(el);
      if (tex !== null) {
        lastFence = -1;
        const t = tex.replace(/\s+/g, " ").trim();
        if (displayMath(el)) {
          boundary();
          line = t;
          boundary();
        } else line += t;
        return;
      }
    }
    // A table: a line per row, its cells joined by " | ", the header row first.
    if (tag === "TABLE" || el.getAttribute("role") === "table" || el.getAttribute("role") === "grid") {
      boundary();
      lastFence = -1;
      for (const row of tableRows(el)) {
        const cells = row.map((c) => cellText(c, skip));
        if (cells.some((c) => c !== "")) out.push(cells.join(" | "));
      }
      return;
    }
    // An editor, or a <pre> an editor sits in: the editor's whole text, never its visible lines;
    // a short label in the <pre> around it (the block's header) names its language.
    const inner = tag === "PRE" ? el.querySelector(EDITORS) : null;
    if (inner) {
      const label = textOutside(el, inner, skip) || textOutside(el, inner, undefined);
      const before = labelled;
      if (/^[\w+#.-]{1,24}$/.test(label)) labelled = label;
      walk(inner);
      labelled = before;
      return;
    }
    const editor = safeMatches(el, EDITORS);
    if (el !== message && tag !== "PRE" && !editor) {
      const wrapped = codeWrapper(el, skip);
      if (wrapped) {
        boundary();
        // The label may sit in a header the adapter ignores (Gemini's decoration): read it there.
        const label = wrapped.label || textOutside(el, wrapped.code, undefined);
        labelled = /^[\w+#.-]{1,24}$/.test(label) ? label : "";
        walk(wrapped.code);
        labelled = "";
        return;
      }
    }
    if (!editor && tag !== "PRE" && safeMatches(el, CODE_VIEW)) {
      boundary();
      const code = viewText(el);
      let lang = (el.getAttribute("data-language") ?? "").toLowerCase();
      if (!lang && labelled && labelled.toLowerCase() !== "code") lang = labelled.toLowerCase();
      const fence = "`".repeat(Math.max(3, longestFenceRun(code, "`") + 1));
      out.push(fence + lang, ...code.split("\n"), fence);
      lastFence = out.length - 1;
      return;
    }
    if (tag === "PRE" || editor) {
      boundary();
      let code: string;
      let lang = "";
      if (editor) {
        const e = editorText(el);
        code = e.code;
        if (!e.whole) incomplete = true;
      } else {
        ({ code, lang } = codeOf(el));
        // A <pre> that holds its own header (a language label beside the code element).
        const codeEl = el.querySelector("code");
        if (!lang && !labelled && codeEl) {
          const label = textOutside(el, codeEl, skip) || textOutside(el, codeEl, undefined);
          if (/^[\w+#.-]{1,24}$/.test(label) && label.toLowerCase() !== "code") lang = label.toLowerCase();
        }
      }
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
