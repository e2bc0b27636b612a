// DOM helpers shared by the extension's overlay, the dashboard and the playground. Text goes in
// with textContent only, through `visible` (visible.ts): a control character, a direction override
// or an invisible character in it is shown as its code point, `<U+202E>`.

import { visible } from "./visible.js";

export function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`missing #${id}`);
  return e as T;
}

/** A `<tag class="cls">` holding `text` as a person may read it (`visible`). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text = ""): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text) e.textContent = visible(text);
  return e;
}

/** Sets what `e` shows to `text` as a person may read it (`visible`). */
export function setText(e: Node, text: string): void {
  e.textContent = visible(text);
}

/// A `<button type="button">` with classes `btn CLS` that calls `onClick`.
export function button(text: string, cls: string, onClick: () => void): HTMLButtonElement {
  const b = el("button", `btn ${cls}`, text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

/** Narrows a form value to one of a generated list of keywords (MODES, PACES), or undefined. */
export function oneOf<T extends string>(options: readonly T[], value: string): T | undefined {
  return options.find((o) => o === value);
}
