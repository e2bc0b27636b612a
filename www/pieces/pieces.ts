// The piece editor: the workspace's pieces, edited with live validation, effective tools and the
// movement graph from the wasm core (the same checks `PUT /v1/pieces/{name}` runs), and saved or
// deleted through the host's API with the dashboard's token. All text goes in with textContent,
// through `visible` (directly or by `el`); the editor's fields hold the piece as it is stored.
import init, { pieceGraphModel, pieceTools, validatePieceAs } from "../../target/wasm-pkg/keyless_wasm.js";
import { byId, el, setText } from "../common/dom";
import { visible } from "../common/visible";
import { errorText, KeylessError } from "../common/error";
import { callHost, type Call, v1 } from "../common/host-api";
import { renderGutter, selectLine, syncGutter } from "../common/editor";
import { drawGraph, toolCards } from "../common/piece-view";
import { diagnosticItems, errorLines } from "../common/diagnostics";
import { takeToken } from "../common/token";
import type { Diagnostic, PieceSummary } from "../../extension/src/generated/core";

const token = takeToken();

function api<A>(call: Call<A>): Promise<A> {
  return callHost("", token, call);
}

const TEMPLATE = `name: my-piece
description: Look at the code, then report.
max_movements: 6
initial_movement: look
movements:
  - name: look
    edit: false
    persona: reviewer
    instruction: Read the code that the task is about and list what you find.
    allowed_tools: [Read, Bash]
    allowed_commands: ["git status", "git diff *", "ls *"]
    rules:
      - condition: the findings are listed
        next: report
  - name: report
    edit: false
    persona: reviewer
    instruction: Summarise the findings for the user.
    allowed_tools: [Read]
    rules: []
`;

const state = {
  /** The piece loaded from the host (its name and whether the workspace holds it), if any. */
  loaded: null as { name: string; editable: boolean } | null,
  armedDelete: false,
};

const yamlBox = () => byId<HTMLTextAreaElement>("yaml");
const nameBox = () => byId<HTMLInputElement>("name");

function saved(text: string, bad = false): void {
  const box = byId("saved");
  setText(box, text);
  box.className = `saved${bad ? " bad" : ""}`;
}

function showFindings(findings: Diagnostic[]): void {
  byId("findings").replaceChildren(...diagnosticItems(findings, (line) => selectLine(yamlBox(), line)));
}

/** Validates what is in the editor, as saving it would, and redraws everything from the core. */
function render(): void {
  const yaml = yamlBox().value;
  const name = nameBox().value.trim();
  const v = validatePieceAs(yaml, name);
  const verdict = byId("verdict");
  verdict.className = `verdict ${v.piece ? "ok" : "bad"}`;
  setText(
    verdict,
    v.piece
      ? `✓ Ready to save as "${name}" — ${v.piece.movements.length} movement(s), ${v.warnings.length} warning(s)`
      : `✗ ${v.errors.length} error(s) — fix them to save`,
  );
  const findings = [...v.errors, ...v.warnings];
  showFindings(findings);
  renderGutter("gutter", yaml, errorLines(findings), yamlBox());
  byId("graph").replaceChildren(v.piece ? drawGraph(pieceGraphModel(yaml), v.piece.name) : el("p", "timing", "Fix the errors to see the graph."));
  byId("tools").replaceChildren(...(v.piece ? toolCards(pieceTools(yaml)) : []));
  byId<HTMLButtonElement>("save").disabled = v.piece === undefined || v.piece === null;
  const del = byId<HTMLButtonElement>("delete");
  del.disabled = !(state.loaded?.editable && state.loaded.name === name);
  if (del.disabled) disarm();
}

function disarm(): void {
  state.armedDelete = false;
  byId("delete").textContent = "Delete";
}

async function loadList(select?: string): Promise<PieceSummary[]> {
  const list = await api(v1.pieces());
  byId("pieces").replaceChildren(
    ...list.map((p) => {
      const li = el("li", p.name === select ? "on" : "");
      li.dataset["piece"] = p.name;
      li.append(el("span", "", p.name), el("span", "src", p.editable ? "workspace" : p.source === "built-in" ? "built-in" : "user"));
      li.title = visible(p.description);
      li.addEventListener("click", () => void open(p.name));
      return li;
    }),
  );
  return list;
}

async function open(name: string): Promise<void> {
  const p = await api(v1.piece(name));
  state.loaded = { name: p.name, editable: p.editable };
  nameBox().value = p.name;
  yamlBox().value = p.yaml;
  setText(byId("source"), p.editable ? "workspace piece" : `${p.source === "built-in" ? "built-in" : p.source} — saving stores a workspace copy that hides it`);
  for (const li of document.querySelectorAll<HTMLLIElement>("#pieces li")) li.classList.toggle("on", li.dataset["piece"] === name);
  byId("saved").className = "saved hidden";
  render();
}

function newPiece(): void {
  state.loaded = null;
  nameBox().value = "my-piece";
  yamlBox().value = TEMPLATE;
  byId("source").textContent = "new";
  for (const li of document.querySelectorAll<HTMLLIElement>("#pieces li")) li.classList.remove("on");
  byId("saved").className = "saved hidden";
  render();
}

async function save(): Promise<void> {
  const name = nameBox().value.trim();
  try {
    const r = await api(v1.savePiece(name, { yaml: yamlBox().value }));
    state.loaded = { name, editable: true };
    saved(`Saved to ${r.source}${r.shadows ? ` — it now hides the ${r.shadows === "built-in" ? "built-in" : "user"} piece "${name}"` : ""}.`);
    byId("source").textContent = "workspace piece";
    await loadList(name);
    render();
  } catch (e) {
    if (e instanceof KeylessError) {
      saved(errorText(e), true);
      if (e.findings.length) showFindings(e.findings);
    } else saved(String(e), true);
  }
}

async function remove(): Promise<void> {
  if (!state.armedDelete) {
    state.armedDelete = true;
    byId("delete").textContent = "Really delete?";
    return;
  }
  disarm();
  const name = nameBox().value.trim();
  try {
    const r = await api(v1.deletePiece(name));
    saved(r.now ? `Deleted. "${name}" is now the ${r.now === "built-in" ? "built-in" : "user"} piece again.` : `Deleted "${name}".`);
    const list = await loadList();
    if (list.some((p) => p.name === name)) await open(name);
    else newPiece();
    byId("saved").className = "saved";
  } catch (e) {
    saved(e instanceof KeylessError ? errorText(e) : String(e), true);
  }
}

async function main(): Promise<void> {
  await init();
  byId("where").textContent = token ? "" : "No token: open this page from the dashboard link that keyless-host serve printed.";
  yamlBox().addEventListener("input", render);
  // Long lines wrap: the line numbers follow the wrapped lines when the editor changes width.
  window.addEventListener("resize", render);
  syncGutter(yamlBox(), "gutter");
  nameBox().addEventListener("input", render);
  byId("save").addEventListener("click", () => void save());
  byId("delete").addEventListener("click", () => void remove());
  byId("new").addEventListener("click", newPiece);
  try {
    const list = await loadList();
    const first = list.find((p) => p.editable);
    if (first) await open(first.name);
    else newPiece();
  } catch (e) {
    saved(e instanceof KeylessError ? errorText(e) : String(e), true);
    newPiece();
  }
  document.body.dataset["ready"] = "true";
}

void main();
