// Messages by identity, never by count: a thread that mounts only a window of its turns
// (ChatGPT since 2026-09, virtual lists elsewhere) unmounts old messages while the user scrolls
// and mounts them again as new elements. Which reply is new, whether a send landed and which
// message a result belongs to are decided by a message's own key where the page gives one, else
// by the element itself and its position after the user's newest message.

/// Attributes that carry a message's own id on the sites (the first that a message has is its key).
const KEY_ATTRIBUTES = [
  "data-chatgpt-search-message-ids",
  "data-chatgpt-selection-message-id",
  "data-message-id",
  "data-turn-id",
  "data-virtual-list-item-key",
  "data-testid",
  "id",
];

/// A message's key: an id the site gave it (the first token of ChatGPT's id lists), or `null`. A
/// test id or element id counts only when it holds a number or an id-like token (`turn-12`,
/// `markdown-content-3`, `response-2f0c…`), never a bare role name.
export function keyOf(el: Element): string | null {
  for (const attr of KEY_ATTRIBUTES) {
    const v = el.getAttribute(attr);
    if (!v) continue;
    const first = v.split(/[\s,]+/).find((t) => t !== "") ?? "";
    if (!first) continue;
    if ((attr === "data-testid" || attr === "id") && !/\d/.test(first)) continue;
    return `${attr}=${first}`;
  }
  return null;
}

/// The messages seen at one moment: their keys, and the elements of those without one.
export class Seen {
  private readonly keys = new Set<string>();
  private readonly els = new WeakSet<Element>();

  constructor(messages: readonly Element[] = []) {
    for (const m of messages) this.add(m);
  }

  add(el: Element): void {
    const k = keyOf(el);
    if (k) this.keys.add(k);
    else this.els.add(el);
  }

  /// Whether `el` was seen (by its key, or as the same element).
  has(el: Element): boolean {
    const k = keyOf(el);
    return k ? this.keys.has(k) : this.els.has(el);
  }
}

/// Whether `a` comes after `b` in the page (and is not inside it).
export function after(a: Element, b: Element): boolean {
  const pos = b.compareDocumentPosition(a);
  return (pos & Node.DOCUMENT_POSITION_FOLLOWING) !== 0 && (pos & Node.DOCUMENT_POSITION_CONTAINED_BY) === 0;
}

/// The newest message of `messages` (document order) not in `seen`. One without a key of its
/// own must also come after `anchor` (the user's newest message, when the page shows one): an
/// old message mounted again is a new element, but it sits above the user's newest message.
export function newestUnseen(messages: readonly Element[], seen: Seen, anchor: Element | undefined): Element | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Element;
    if (seen.has(m)) continue;
    if (keyOf(m) === null && anchor && !after(m, anchor)) continue;
    return m;
  }
  return undefined;
}

/// The element of the message `followed` (a key, or the element) among `messages`, if mounted.
export function find(messages: readonly Element[], followed: string | Element): Element | undefined {
  return typeof followed === "string" ? messages.find((m) => keyOf(m) === followed) : messages.find((m) => m === followed);
}
