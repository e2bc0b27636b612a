// Colours a code editor (a textarea) with a TextMate grammar: a `<pre>` of coloured spans lies
// under the textarea, whose own text is transparent, and follows its scrolling. The .as editor
// of the playground uses the grammar VS Code uses (editors/vscode/syntaxes), through textmate.ts.
import { el } from "./dom";
import { Grammar, type RawGrammar } from "./textmate";
import asGrammar from "../../editors/vscode/syntaxes/keyless-as.tmLanguage.json";

/** Past this many characters the editor stays plain (typing stays instant on a huge paste). */
export const MAX_HIGHLIGHTED_CHARS = 200_000;

let keylessAs: Grammar | null = null;

/** The .as grammar, read once. */
export function asProgramGrammar(): Grammar {
  keylessAs ??= new Grammar(asGrammar as RawGrammar);
  return keylessAs;
}

/** Fills `pre` with the text's tokens, each a span whose `data-scope` is its innermost scope
 *  (the stylesheet colours by scope prefix: `comment`, `string`, `keyword`, …). */
export function paint(pre: HTMLElement, grammar: Grammar, text: string): void {
  if (text.length > MAX_HIGHLIGHTED_CHARS) {
    pre.textContent = text;
    pre.dataset["plain"] = "true";
    return;
  }
  delete pre.dataset["plain"];
  const frag = document.createDocumentFragment();
  grammar.tokenize(text).forEach((line, i) => {
    if (i > 0) frag.append("\n");
    for (const t of line) {
      const scope = t.scopes[t.scopes.length - 1] ?? "";
      if (t.scopes.length <= 1) {
        frag.append(t.text);
        continue;
      }
      // The textarea's own characters, not `visible`'s: this layer must hold them one for one, or
      // the caret and the selection (the textarea's) would not lie on what is drawn.
      const s = el("span");
      s.textContent = t.text;
      s.dataset["scope"] = scope;
      frag.append(s);
    }
  });
  // A last empty line keeps the same height as the textarea's.
  frag.append("\n");
  pre.replaceChildren(frag);
}

/** Colours `area` with `grammar` now and on every change, the colours kept under its text. */
export function highlightEditor(area: HTMLTextAreaElement, pre: HTMLElement, grammar: Grammar): void {
  const redraw = (): void => paint(pre, grammar, area.value);
  const follow = (): void => {
    pre.scrollTop = area.scrollTop;
    pre.scrollLeft = area.scrollLeft;
  };
  area.addEventListener("input", () => {
    redraw();
    follow();
  });
  area.addEventListener("scroll", follow);
  area.classList.add("painted");
  redraw();
}
