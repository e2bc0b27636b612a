// The code editors' shared parts (the playground's tabs and the piece editor): a gutter of line
// numbers beside a textarea, the lines with errors marked, kept scrolled with it.
import { byId, el } from "./dom";

/** Fills the `<pre>` gutter `id` with one number per line of `text`, marking `bad` lines. When
 *  the textarea `area` wraps long lines, each number takes the height of its wrapped line. */
export function renderGutter(id: string, text: string, bad: Set<number>, area?: HTMLTextAreaElement): void {
  const gutter = byId<HTMLPreElement>(id);
  const lines = text.split("\n");
  const heights = area ? wrappedHeights(area, lines) : null;
  const frag = document.createDocumentFragment();
  for (let i = 1; i <= lines.length; i++) {
    const n = el("span", bad.has(i) ? "bad" : "", String(i));
    const h = heights?.[i - 1];
    if (h !== undefined) {
      n.classList.add("wrapped");
      n.style.height = `${h}px`;
      frag.append(n);
    } else frag.append(n, "\n");
  }
  gutter.replaceChildren(frag);
}

/** How tall each line is as `area` lays it out, when it wraps (measured in a hidden copy with the
 *  same font and width); `null` when it does not wrap. */
function wrappedHeights(area: HTMLTextAreaElement, lines: string[]): number[] | null {
  const cs = getComputedStyle(area);
  if (cs.whiteSpace === "pre" || area.clientWidth === 0) return null;
  const mirror = el("div");
  const st = mirror.style;
  st.position = "absolute";
  st.visibility = "hidden";
  st.left = "-10000px";
  st.top = "0";
  st.width = `${area.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)}px`;
  st.font = cs.font;
  st.lineHeight = cs.lineHeight;
  st.whiteSpace = "pre-wrap";
  st.overflowWrap = cs.overflowWrap;
  st.wordBreak = cs.wordBreak;
  st.tabSize = cs.tabSize;
  // The textarea's own characters, not `visible`'s: the copy must wrap exactly as the textarea does.
  for (const line of lines) {
    const l = el("div");
    l.textContent = line === "" ? "\u200b" : line;
    mirror.append(l);
  }
  document.body.append(mirror);
  const heights = [...mirror.children].map((c) => (c as HTMLElement).getBoundingClientRect().height);
  mirror.remove();
  return heights;
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
