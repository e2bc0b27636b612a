// The one way the playground and the piece editor list diagnostics: every list (a reply's, a
// piece's, an .as program's) holds the core's one carrier (`Diagnostic`, generated from Rust), so
// each item reads the same: the code, the place, the key (a piece's `movements[0].persona`), the
// message, the help and the notes. The data comes from the wasm core; this only draws it.
import { el } from "./dom";
import { visible } from "./visible";
import type { Diagnostic } from "../../extension/src/generated/core";

/** "line 3, column 16", "line 3", or "" when it has no place. */
export function placeOf(d: Diagnostic): string {
  if (d.line === null) return "";
  return d.column === undefined ? `line ${d.line}` : `line ${d.line}, column ${d.column}`;
}

/** One list item per diagnostic; a click on one with a line calls `select` with it. */
export function diagnosticItems(list: Diagnostic[], select?: (line: number, column: number) => void): HTMLLIElement[] {
  if (list.length === 0) return [el("li", "empty", "None.")];
  return list.map((d) => {
    const li = el("li", d.severity);
    li.dataset["line"] = d.line === null ? "" : String(d.line);
    li.append(el("span", "dcode", d.code), el("span", "ln", placeOf(d)), visible(d.key ? `${d.key}: ${d.message}` : d.message));
    if (d.help) li.append(el("div", "help", `help: ${d.help}`));
    for (const n of d.notes ?? []) li.append(el("div", "note", n));
    const line = d.line;
    if (select && line !== null) li.addEventListener("click", () => select(line, d.column ?? 1));
    return li;
  });
}

/** The lines the gutter marks: those of the errors (warnings refuse nothing). */
export function errorLines(list: Diagnostic[]): Set<number> {
  return new Set(list.flatMap((d) => (d.severity === "error" && d.line !== null ? [d.line] : [])));
}
