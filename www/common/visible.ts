// The one sanitizer for text from outside (the model's, a command's, a chat page's, an MCP
// server's) as a person reads it on a page: the same rule as the core's
// `keyless_core::text::printable` (core/src/text.rs), so what a person reads is what runs. Shared by
// the extension (overlay, popup, options) and the web pages (dashboard, playground, piece editor);
// `el` (dom.ts) applies it to every text it is given.

import { HIDDEN_RANGES } from "../../extension/src/generated/core.js";

/**
 * Whether the code point `cp` is shown as `<U+XXXX>`: a control character (Unicode Cc: U+0000–U+001F,
 * U+007F–U+009F) other than newline and tab, or one of the core's `HIDDEN_RANGES` (direction
 * marks and overrides, zero-width and invisible characters, tag characters).
 */
export function isHidden(cp: number): boolean {
  if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f)) return cp !== 0x0a && cp !== 0x09;
  for (const [lo, hi] of HIDDEN_RANGES) if (cp >= lo && cp <= hi) return true;
  return false;
}

/** `<U+202E>`: uppercase hex, at least four digits. */
function codePoint(cp: number): string {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/**
 * `text` with every character that could hide, reorder or restyle what is shown (escape sequences
 * and every other control character but newline and tab, direction overrides, invisible
 * characters: `isHidden`) written as its code point, `<U+001B>`. A carriage return right before a
 * newline stays (a CRLF line); everything else (joiners in emoji, variation selectors) is
 * unchanged. Idempotent: what it writes holds no hidden character.
 */
export function visible(text: string): string {
  let out = "";
  let from = 0;
  let at = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (isHidden(cp) && !(cp === 0x0d && text.charCodeAt(at + 1) === 0x0a)) {
      out += text.slice(from, at) + codePoint(cp);
      from = at + ch.length;
    }
    at += ch.length;
  }
  return from === 0 ? text : out + text.slice(from);
}
