// A file's diff as the overlay and the dashboard show it: a <details> whose summary names the file
// and its counts, and whose body holds the unified diff with added and removed lines coloured.
// The diff comes from the host (core::diff); nothing here computes one. Text goes in with
// textContent only, through `el` and so `visible`: a line holding an escape sequence (cursor up,
// erase line, OSC 52) or a direction override shows it as code points (`<U+001B>`, `<U+202E>`),
// so a file cannot hide a line of its own diff. The CSS classes (diff, d-add, d-del, d-hunk,
// d-note) are styled by each page.

import { el } from "./dom.js";
import type { FileDiff } from "../../extension/src/generated/core.js";

/** Lines shown open at once; longer diffs start collapsed. */
export const OPEN_LINES = 24;

function name(d: FileDiff): string {
  return d.from ? `${d.from} → ${d.path}` : d.path;
}

/** `+3 −1`, or what happened when there are no lines to count. */
export function counts(d: FileDiff): string {
  if (d.added + d.removed === 0) {
    if (d.note) return d.note.split(":")[0] ?? d.note;
    return d.change === "added" ? "new, empty" : d.change === "deleted" ? "deleted" : d.change;
  }
  return `+${d.added} −${d.removed}`;
}

/** One file's diff; open when short (or when `open` says so). */
export function diffView(d: FileDiff, open?: boolean): HTMLDetailsElement {
  const box = el("details", "diff");
  const lines = d.text === "" ? [] : d.text.replace(/\n$/, "").split("\n");
  box.open = open ?? (lines.length > 0 && lines.length <= OPEN_LINES);
  const sum = el("summary");
  sum.append(el("span", "d-file", name(d)), el("span", `d-counts d-${d.change}`, counts(d)));
  box.append(sum);
  if (lines.length > 0) {
    const pre = el("pre", "d-body");
    for (const line of lines) {
      const cls = line.startsWith("+++") || line.startsWith("---") ? "d-head" : line.startsWith("@@") ? "d-hunk" : line.startsWith("+") ? "d-add" : line.startsWith("-") ? "d-del" : "d-ctx";
      pre.append(el("span", cls, `${line}\n`));
    }
    box.append(pre);
  }
  if (d.note) box.append(el("div", "d-note", d.note));
  return box;
}

/** A table row holding a command's diffs, to go under the command's own row. */
export function diffRow(list: FileDiff[], colSpan: number): HTMLTableRowElement {
  const tr = el("tr", "diffs");
  const td = el("td");
  td.colSpan = colSpan;
  for (const d of list) td.append(diffView(d));
  tr.append(td);
  return tr;
}

/** Totals over several diffs: `2 files changed, +7 −1`. A file edited twice in a batch (two
 * diffs) is one file. */
export function totals(list: FileDiff[]): string {
  const add = list.reduce((n, d) => n + d.added, 0);
  const del = list.reduce((n, d) => n + d.removed, 0);
  const files = new Set(list.map((d) => d.path)).size;
  return `${files} file${files === 1 ? "" : "s"} changed, +${add} −${del}`;
}

/** The CSS both pages use for diffs (the overlay adopts it into its shadow root). */
export const DIFF_CSS = `
details.diff { margin: 4px 0 2px; border: 1px solid #d0d7de; border-radius: 6px; background: #fff; }
details.diff > summary { cursor: pointer; display: flex; gap: 8px; align-items: baseline; padding: 3px 8px; font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; list-style-position: inside; }
.d-file { overflow-wrap: anywhere; flex: 1; }
.d-counts { white-space: nowrap; color: #656d76; }
.d-counts.d-added { color: #1a7f37; } .d-counts.d-deleted { color: #cf222e; }
pre.d-body { margin: 0; padding: 4px 0; max-height: 320px; overflow: auto; font: 11.5px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; border-top: 1px solid #eaeef2; white-space: pre-wrap; overflow-wrap: anywhere; }
pre.d-body span { display: block; padding: 0 8px; }
.d-add { background: #dafbe1; color: #116329; } .d-del { background: #ffebe9; color: #a40e26; }
.d-hunk { background: #ddf4ff; color: #0550ae; } .d-head { color: #656d76; font-weight: 600; } .d-ctx { color: #1f2328; }
.d-note { padding: 3px 8px; color: #9a6700; font-size: 11.5px; }
`;
