// The page script: runs in the chat page's own world (manifest `"world": "MAIN"`, which the
// site's CSP does not block) for one job. Code editors (CodeMirror 6 and 5, Ace, Monaco) keep only
// their visible lines in the DOM; their whole text lives in the editor's state, which only the
// page's world can reach. When the content script dispatches `keyless-read-editors`, each
// editor's whole text is written to its `data-keyless-code` attribute, where the content script
// reads it. An editor it cannot read gets no attribute, and the reply counts as incomplete.
// Nothing here decides or sends anything; the text is as untrusted as the rest of the page.

type Doc = { toString(): string };
type Cm6View = { state?: { doc?: Doc } };
interface Cm6Node {
  cmView?: { rootView?: { view?: Cm6View }; view?: Cm6View };
  cmTile?: { root?: { view?: Cm6View }; view?: Cm6View };
}
interface Cm5Node {
  CodeMirror?: { getValue(): string };
}
interface AceNode {
  env?: { editor?: { getValue(): string } };
}
interface MonacoEditor {
  getDomNode(): HTMLElement | null;
  getValue(): string;
}
interface MonacoGlobal {
  editor?: { getEditors?(): MonacoEditor[] };
}

function cm6(el: Element): string | null {
  const content = el.querySelector(".cm-content") as (Element & Cm6Node) | null;
  for (const node of [content, el as Element & Cm6Node]) {
    if (!node) continue;
    const view = node.cmView?.rootView?.view ?? node.cmView?.view ?? node.cmTile?.root?.view ?? node.cmTile?.view;
    const doc = view?.state?.doc;
    if (doc && typeof doc.toString === "function") return String(doc.toString());
  }
  return null;
}

function cm5(el: Element): string | null {
  const cm = (el as Element & Cm5Node).CodeMirror;
  return cm && typeof cm.getValue === "function" ? String(cm.getValue()) : null;
}

function ace(el: Element): string | null {
  const ed = (el as Element & AceNode).env?.editor;
  return ed && typeof ed.getValue === "function" ? String(ed.getValue()) : null;
}

function monaco(el: Element): string | null {
  const m = (window as unknown as { monaco?: MonacoGlobal }).monaco;
  const editors = m?.editor?.getEditors?.() ?? [];
  for (const e of editors) {
    const dom = e.getDomNode();
    if (dom && (dom === el || el.contains(dom) || dom.contains(el))) return String(e.getValue());
  }
  return null;
}

document.addEventListener("keyless-read-editors", () => {
  for (const el of Array.from(document.querySelectorAll(".cm-editor, .monaco-editor, .CodeMirror, .ace_editor"))) {
    let text: string | null = null;
    try {
      text = cm6(el) ?? cm5(el) ?? ace(el) ?? monaco(el);
    } catch {
      text = null;
    }
    if (text === null) el.removeAttribute("data-keyless-code");
    else if (el.getAttribute("data-keyless-code") !== text) el.setAttribute("data-keyless-code", text);
  }
});
