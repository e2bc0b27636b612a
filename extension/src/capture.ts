// "Save this page for a bug report": the chat page as one HTML file a user can look at before
// sending it, holding the page's structure and none of the conversation. Every text is replaced
// by placeholder text of the same shape (letters by `x`, digits by `0`), code keeps only its
// line count (each line's text one or a few `x`), attributes that hold what was written (a link's address, math, an editor's text,
// a field's value) are replaced the same way, scripts, images and frames are removed, and each
// element the adapter matches carries `data-keyless-match="KEY …"`. The real-page suite reads
// such a file as a fixture unchanged (tests/realpages/README.md).

import { EDITOR_TEXT, EDITORS } from "./editors.js";
import { matchAll } from "./select.js";
import type { SiteAdapter } from "./protocol.js";

/// Letters become `x`, digits `0`; everything else (spaces, punctuation, line breaks) stays.
export function placeholder(text: string): string {
  return text.replace(/\p{L}/gu, "x").replace(/\p{N}/gu, "0");
}

/// Where code lives: its text keeps only its line count.
const CODE = `pre, code, ${EDITORS}, [role="textbox"][data-language]`;
/// Removed whole: what runs, what shows pictures, what embeds another page.
const REMOVED = "script, noscript, img, picture, video, audio, source, iframe, frame, object, embed, canvas, link[rel~=\"preload\"], link[rel~=\"modulepreload\"], link[rel~=\"icon\"], base, meta[http-equiv]";
/// Attributes that hold what was written rather than the page's structure.
const WRITTEN = ["href", "src", "srcset", "title", "alt", "value", "data-math", "data-pplx-citation-url", "data-url", "aria-valuetext"];
const MARK = "data-keyless-match";

/// The page as a capture (a whole HTML document, as text).
export function capture(site: SiteAdapter): string {
  // Mark the adapter's matches on the live page for the moment of the copy.
  const marked: Element[] = [];
  for (const [key, alts] of Object.entries(site.selectors) as [string, string[] | undefined][]) {
    if (!alts || key === "ignore") continue;
    for (const el of matchAll(alts)) {
      el.setAttribute(MARK, `${el.getAttribute(MARK) ?? ""} ${key}`.trim());
      marked.push(el);
    }
  }
  const copy = document.documentElement.cloneNode(true) as HTMLElement;
  for (const el of marked) el.removeAttribute(MARK);
  // keyless's own overlay is not the site's.
  copy.querySelectorAll("keyless-overlay, keyless-picker").forEach((e) => e.remove());
  copy.querySelectorAll(REMOVED).forEach((e) => e.remove());
  // Live values (a textarea's draft, an input's text) are not in the markup; the copy keeps none.
  copy.querySelectorAll("textarea").forEach((t) => (t.textContent = placeholder(t.textContent ?? "")));
  for (const el of Array.from(copy.querySelectorAll("*"))) {
    for (const a of WRITTEN) {
      const v = el.getAttribute(a);
      if (v !== null) el.setAttribute(a, a === "href" || a === "src" || a === "srcset" ? "#" : placeholder(v));
    }
    // An editor's whole text (the page script's copy): its line count only.
    const full = el.getAttribute(EDITOR_TEXT);
    if (full !== null) el.setAttribute(EDITOR_TEXT, full.replace(/[^\n]+/g, "x"));
    if (el.tagName === "META" && el.hasAttribute("content")) el.setAttribute("content", placeholder(el.getAttribute("content") ?? ""));
    for (const attr of Array.from(el.attributes)) {
      if (attr.name.startsWith("on")) el.removeAttribute(attr.name);
    }
  }
  scrub(copy);
  const doctype = "<!doctype html>\n";
  const note = `<!-- keyless capture of ${location.hostname} (${site.id}), ${new Date().toISOString()}: the page's structure with placeholder text; data-keyless-match marks what the adapter found -->\n`;
  return doctype + note + copy.outerHTML;
}

/// Replaces every text: code by as many line breaks as it had lines, the rest by placeholder text.
function scrub(root: Element): void {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n as Text);
  for (const t of texts) {
    const parent = t.parentElement;
    if (parent && (parent.tagName === "STYLE" || parent.tagName === "TITLE")) {
      if (parent.tagName === "TITLE") t.nodeValue = placeholder(t.nodeValue ?? "");
      continue;
    }
    const inCode = parent?.closest(CODE) !== null && parent?.closest(CODE) !== undefined;
    const v = t.nodeValue ?? "";
    // Code: each run of its text one `x`, its line breaks kept (its line count and which lines
    // are empty; a final line break is never mistaken for an empty last line).
    t.nodeValue = inCode ? v.replace(/[^\n]+/g, "x") : placeholder(v);
  }
  // A `<br>`-drawn code view keeps its `<br>`s: its line count stays.
}

/// The capture's file name: `keyless-capture-SITE-YYYYMMDD-HHMMSS.html`.
export function captureName(site: SiteAdapter): string {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, "0");
  return `keyless-capture-${site.id}-${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}.html`;
}
