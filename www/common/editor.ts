// The code editors' shared parts (the playground's tabs and the piece editor): a gutter of line
// numbers beside a textarea, the lines with errors marked, kept scrolled with it.
import { byId, el } from "./dom";

/** Fills the `<pre>` gutter `id` with one number per line of `text`, marking `bad` lines. */
export function renderGutter(id: string, text: string, bad: Set<number>): void {
  const gutter = byId<HTMLPreElement>(id);
  const n = text.split("\n").length;
  const frag = document.createDocumentFragment();
  for (let i = 1; i <= n; i++) frag.append(el("span", bad.has(i) ? "bad" : "", String(i)), "\n");
  gutter.replaceChildren(frag);
}

/** Keeps the gutter `gutterId` scrolled with the textarea `area`. */
export function syncGutter(area: HTMLTextAreaElement, gutterId: string): void {
  area.addEventListener("scroll", () => {
    byId(gutterId).scrollTop = area.scrollTop;
  });
}

/** Selects the 1-based `line` of a textarea (JS string offsets are the textarea's own). */
export function selectLine(area: HTMLTextAreaElement, line: number): void {
  const lines = area.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  area.focus();
  area.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
}
