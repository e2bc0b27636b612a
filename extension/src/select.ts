// Running an adapter's selectors on the page. Each selector is a list of alternatives (the core's
// `Alternatives`): the first that matches anything is the one used. A selector the browser
// rejects counts as matching nothing.

export type Alts = readonly string[] | undefined;

function all(selector: string, root: ParentNode): Element[] | null {
  try {
    return Array.from(root.querySelectorAll(selector));
  } catch {
    return null;
  }
}

/// The elements of the first alternative that matches anything under `root`.
export function matchAll(alts: Alts, root: ParentNode = document): Element[] {
  for (const s of alts ?? []) {
    const m = all(s, root);
    if (m && m.length > 0) return m;
  }
  return [];
}

/// The first element of the first alternative that matches.
export function match(alts: Alts, root: ParentNode = document): Element | null {
  for (const s of alts ?? []) {
    try {
      const e = root.querySelector(s);
      if (e) return e;
    } catch {
      // a syntax the browser refuses: the next alternative
    }
  }
  return null;
}

/// What the doctor reports for one selector: which alternative matched and how many elements;
/// `matches: null` when the browser refused every alternative.
export function probeOne(alts: Alts): { matches: number | null; alternative: number | null } {
  let valid = false;
  for (const [i, s] of (alts ?? []).entries()) {
    const m = all(s, document);
    if (m === null) continue;
    valid = true;
    if (m.length > 0) return { matches: m.length, alternative: i };
  }
  return { matches: valid ? 0 : null, alternative: null };
}

/// Whether `el` matches any of `alts` (every alternative applies: for ignore lists).
export function matchesAny(el: Element, alts: Alts): boolean {
  for (const s of alts ?? []) {
    try {
      if (el.matches(s)) return true;
    } catch {
      // skip a refused alternative
    }
  }
  return false;
}

/// Whether `el` is, contains, or sits inside an element of the first matching alternative.
export function touches(el: Element, alts: Alts): boolean {
  for (const s of alts ?? []) {
    try {
      if (el.matches(s) || el.closest(s) || el.querySelector(s)) return true;
    } catch {
      // skip
    }
  }
  return false;
}

/// A selector list as one line for messages.
export function shown(alts: Alts): string {
  return (alts ?? []).join(" | ");
}
