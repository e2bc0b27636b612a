// An MCP server's form (elicitation) as the overlay and the dashboard show it: one input per
// field of the form the host read from the server's schema (core::elicit), its default filled in,
// and three answers: send, decline, cancel the tool call. The host checks the values again
// (core::elicit::Form::accept) and refuses what does not fit; the refusal is shown under the form,
// which stays open to be mended. Text goes in with textContent only, through `visible` (the
// server's words, labels and choices show hidden characters as code points); the classes are
// styled by FORM_CSS, adopted by each page.

import { button, el, setText } from "./dom.js";
import { visible } from "./visible.js";
import type { Field, Form, PromptAnswer } from "../../extension/src/generated/core.js";

export const FORM_CSS = `
.eform { display: flex; flex-direction: column; gap: 8px; }
.eform .server-words { white-space: pre-wrap; border-left: 3px solid #d4a72c; padding-left: 8px; }
.eform .f { display: flex; flex-direction: column; gap: 2px; font-weight: 600; font-size: 12px; }
.eform .f-help { font-weight: 400; color: #656d76; font-size: 11.5px; }
.eform input[type=text], .eform input[type=email], .eform input[type=url], .eform input[type=date],
.eform input[type=datetime-local], .eform input[type=number], .eform select {
  font: 13px ui-sans-serif, system-ui, sans-serif; padding: 4px 7px; border: 1px solid #d0d7de; border-radius: 6px; background: #fff; color: #1f2328; }
.eform .f-box { display: flex; gap: 6px; align-items: center; justify-content: flex-start; flex-wrap: wrap; font-weight: 400; }
.eform input[type=checkbox] { flex: none; width: auto; margin: 0; padding: 0; }
.eform .f-error { color: #cf222e; font-size: 12px; white-space: pre-wrap; }
`;

const INPUT_TYPE: Record<string, string> = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** How one field's value is read back: `undefined` leaves it out (its default applies). */
type Reader = () => unknown;

function input(f: Field): [HTMLElement, Reader] {
  const k = f.kind;
  const d = f.default;
  switch (k.type) {
    case "text": {
      const i = el("input");
      // A date-time the browser cannot show in its own picker stays a text field.
      i.type = k.format && k.format !== "date-time" ? (INPUT_TYPE[k.format] ?? "text") : "text";
      if (typeof d === "string") i.value = d;
      // Core caps it at MAX_ANSWER_CHARS; a value the DOM refuses would stop the whole form.
      if (k.max_length !== null && k.max_length <= 10000) i.maxLength = k.max_length;
      if (k.format) i.placeholder = visible(k.format);
      return [i, () => (i.value === "" ? undefined : i.value)];
    }
    case "number": {
      const i = el("input");
      i.type = "number";
      i.step = k.integer ? "1" : "any";
      if (k.minimum !== null) i.min = String(k.minimum);
      if (k.maximum !== null) i.max = String(k.maximum);
      if (typeof d === "number") i.value = String(d);
      // What does not read as a number goes as text (the browser shows a half-typed number as
      // empty): the host says why it does not fit, rather than the default going in its place.
      return [i, () => (i.validity.badInput ? "not a number" : i.value.trim() === "" ? undefined : Number.isFinite(Number(i.value)) ? Number(i.value) : i.value)];
    }
    case "boolean": {
      const box = el("span", "f-box");
      const i = el("input");
      i.type = "checkbox";
      i.checked = d === true;
      box.append(i, el("span", "", "yes"));
      return [box, () => i.checked];
    }
    case "choice": {
      const s = el("select");
      if (typeof d !== "string") {
        const none = el("option", "", f.required ? "— choose —" : "— none —");
        none.value = "";
        s.append(none);
      }
      for (const [value, label] of k.options) {
        const o = el("option", "", label);
        o.value = value;
        o.selected = value === d;
        s.append(o);
      }
      return [s, () => (s.value === "" ? undefined : s.value)];
    }
    case "choices": {
      const box = el("span", "f-box");
      const picked = new Set(Array.isArray(d) ? d.filter((v): v is string => typeof v === "string") : []);
      const boxes: [string, HTMLInputElement][] = [];
      for (const [value, label] of k.options) {
        const i = el("input");
        i.type = "checkbox";
        i.checked = picked.has(value);
        const l = el("label", "f-box");
        l.append(i, el("span", "", label));
        box.append(l);
        boxes.push([value, i]);
      }
      return [box, () => boxes.filter(([, i]) => i.checked).map(([v]) => v)];
    }
  }
}

/**
 * The form, with its answers wired to `send`: send (the values), decline, or cancel. `send`
 * rejects with the host's refusal, shown under the form; `done` runs once an answer is taken.
 */
export function formView(form: Form, send: (a: PromptAnswer) => Promise<void>, done: () => void): HTMLElement {
  const box = el("div", "eform");
  box.append(el("div", "server-words", form.message));
  const readers: [string, Reader][] = [];
  for (const f of form.fields) {
    // A label for one control; a list of choices is a group (a label would tick its first box).
    const label = el(f.kind.type === "choices" ? "div" : "label", "f", `${f.title ?? f.name}${f.required ? " *" : ""}`);
    label.dataset.field = f.name;
    if (f.description) label.append(el("span", "f-help", f.description));
    const [control, read] = input(f);
    label.append(control);
    // The default goes in the field as the server sent it (it is the value sent back); what the
    // field cannot show plainly is spelled out under it.
    if (f.kind.type === "text" && typeof f.default === "string" && visible(f.default) !== f.default) {
      label.append(el("span", "f-help", `The default holds hidden characters: ${f.default}`));
    }
    box.append(label);
    readers.push([f.name, read]);
  }
  const error = el("div", "f-error");
  const answer = (a: PromptAnswer) => (): void => {
    error.textContent = "";
    send(a).then(done, (e: unknown) => {
      setText(error, e instanceof Error ? e.message : String(e));
    });
  };
  const values = (): Record<string, unknown> => {
    const v: Record<string, unknown> = {};
    for (const [name, read] of readers) {
      const x = read();
      if (x !== undefined) v[name] = x;
    }
    return v;
  };
  const row = el("div", "row");
  const go = button("Send", "primary", () => answer({ approve: true, values: values() })());
  row.append(go, button("Decline", "", answer({ approve: false })), button("Cancel the tool call", "", answer({ approve: false, cancel: true })));
  box.append(row, error);
  return box;
}
