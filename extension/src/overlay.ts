// The in-page overlay: a shadow root the site's CSS cannot reach (and that cannot reach the site),
// styled with a constructed stylesheet (allowed under a strict style-src CSP). Every value goes in
// with textContent, through `visible` (www/common/visible.ts, directly or by `el`): what the model,
// a command, the page or an MCP server wrote shows its control, direction and invisible characters
// as code points (`<U+202E>`), so what a person reads is what runs.

import { DIFF_CSS, diffRow, diffView, totals } from "../../www/common/diff-view.js";
import { button, el, setText } from "../../www/common/dom.js";
import { FORM_CSS, formView } from "../../www/common/form-view.js";
import type { CommandView, FileDiff, Generation, GenerationReport, PendingPrompt, PromptAnswer } from "./generated/core.js";
import type { Diagnostic, FollowReport, ReplyAnswer } from "./protocol.js";

const CSS = `
:host { all: initial; }
.panel { position: fixed; right: 16px; bottom: 112px; width: 440px; max-height: min(72vh, 760px); display: flex; flex-direction: column;
  font: 13px/1.45 ui-sans-serif, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #ffffff;
  border: 1px solid #d0d7de; border-radius: 12px; box-shadow: 0 12px 32px rgba(31,35,40,.18); overflow: hidden; z-index: 2147483646; }
.panel.collapsed .body { display: none; }
.head { display: flex; align-items: center; gap: 8px; padding: 9px 12px; background: #0d1117; color: #f0f6fc; }
.logo { font-weight: 700; letter-spacing: .02em; }
.where { color: #9da7b3; font-size: 12px; flex: 1; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pill { font-size: 11px; font-weight: 600; padding: 2px 8px; border-radius: 999px; background: #30363d; color: #f0f6fc; white-space: nowrap; }
.done-message { margin: 6px 0; padding: 6px 8px; border-left: 3px solid #1a7f37; background: #f6fef9; white-space: pre-wrap; }
.review { margin: 6px 0; padding: 6px 8px; background: #f6f8fa; border-radius: 6px; font: 12px ui-monospace, monospace; white-space: pre-wrap; max-height: 220px; overflow: auto; }
.pill.follow { background: #1f6feb; } .pill.ok { background: #1a7f37; } .pill.bad { background: #cf222e; }
.pill.wait { background: #9a6700; } .pill.run { background: #8250df; }
.icon { all: unset; cursor: pointer; color: #9da7b3; font-size: 15px; padding: 0 4px; } .icon:hover { color: #fff; }
.body { overflow: auto; padding: 10px 12px 12px; display: flex; flex-direction: column; gap: 10px; }
.section h4 { margin: 0 0 4px; font-size: 11px; text-transform: uppercase; letter-spacing: .06em; color: #656d76; }
.diag { display: grid; grid-template-columns: auto 1fr; gap: 2px 8px; padding: 6px 8px; border-radius: 8px; background: #fff5f5; border: 1px solid #ffcecb; }
.diag .line { font: 600 12px ui-monospace, SFMono-Regular, Menlo, monospace; color: #cf222e; white-space: nowrap; }
.diag .msg { color: #1f2328; } .diag .code { font: 11px ui-monospace, monospace; color: #a40e26; }
.clean { padding: 6px 8px; border-radius: 8px; background: #dafbe1; border: 1px solid #aceebb; color: #116329; }
table { width: 100%; border-collapse: collapse; font-size: 12px; }
td { padding: 4px 4px; border-top: 1px solid #eaeef2; vertical-align: top; }
td.n { color: #656d76; width: 22px; } td.cmd { font-weight: 600; white-space: nowrap; }
td.target { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: break-word; }
td.state { text-align: right; white-space: nowrap; }
.badge { display: inline-block; font-size: 10.5px; font-weight: 600; padding: 1px 6px; border-radius: 6px; margin-left: 4px; }
.t-ReadOnly { background: #dafbe1; color: #116329; } .t-Build { background: #ddf4ff; color: #0550ae; }
.t-Execute { background: #fff8c5; color: #7d4e00; } .t-Risky { background: #ffebe9; color: #a40e26; } .t-Denied { background: #cf222e; color: #fff; }
.s-ok { color: #1a7f37; font-weight: 600; } .s-error { color: #cf222e; font-weight: 600; } .s-skipped { color: #656d76; } .s-running { color: #8250df; font-weight: 600; }
.why { color: #656d76; font-size: 11.5px; }
.prompt { border: 1px solid #d4a72c; background: #fff8c5; border-radius: 10px; padding: 8px 10px; display: flex; flex-direction: column; gap: 6px; }
.prompt code { font: 12px ui-monospace, monospace; background: #fff; border: 1px solid #eaeef2; border-radius: 6px; padding: 4px 6px; display: block; white-space: pre-wrap; overflow-wrap: anywhere; }
.row { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
input.why-not { flex: 1; min-width: 140px; font: 12px system-ui, sans-serif; padding: 4px 6px; border: 1px solid #d0d7de; border-radius: 6px; background: #fff; }
button.btn { all: unset; cursor: pointer; font-weight: 600; font-size: 12px; padding: 5px 12px; border-radius: 7px; border: 1px solid #d0d7de; background: #f6f8fa; color: #1f2328; }
button.btn:hover { background: #eef1f4; }
button.primary { background: #1f883d; border-color: #1a7f37; color: #fff; } button.primary:hover { background: #1a7f37; }
button.danger { background: #cf222e; border-color: #a40e26; color: #fff; }
input.answer { flex: 1; font: inherit; padding: 5px 8px; border: 1px solid #d0d7de; border-radius: 7px; }
pre.out { margin: 0; max-height: 160px; overflow: auto; background: #0d1117; color: #e6edf3; border-radius: 8px; padding: 8px; font: 11.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.error { border-radius: 8px; padding: 8px 10px; background: #ffebe9; border: 1px solid #ff8182; color: #82071e; display: flex; flex-direction: column; gap: 6px; }
.error .code { font: 600 12px ui-monospace, monospace; }
.error > div { white-space: pre-line; }
.error.info { background: #ddf4ff; border-color: #54aeff; color: #0a3069; }
.error .sel { font: 12px ui-monospace, monospace; word-break: break-all; background: #fff; border-radius: 4px; padding: 2px 4px; }
.hl { position: fixed; pointer-events: none; border: 2px solid #0969da; background: rgba(9, 105, 218, 0.12); border-radius: 4px; z-index: 2147483647; }
.summary { border-radius: 8px; padding: 8px 10px; background: #f6f8fa; border: 1px solid #d0d7de; }
.summary.o-ok { border-left: 4px solid #1a7f37; } .summary.o-failed, .summary.o-rejected, .summary.o-interrupted { border-left: 4px solid #cf222e; }
.summary.o-declined { border-left: 4px solid #d4a72c; }
.say { border-left: 3px solid #1f6feb; padding: 2px 8px; color: #1f2328; }
.foot { color: #8c959f; font-size: 11px; }
.gen { border: 1px solid #c8b5f5; background: #fbf8ff; border-radius: 10px; padding: 8px 10px; display: flex; flex-direction: column; gap: 6px; }
.gen .asked { margin: 0; max-height: 140px; overflow: auto; font: 11.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; word-break: break-word; color: #3d444d; }
.gen .shape { font: 12px ui-monospace, monospace; }
.gen .gen-title { flex: 1; font-weight: 600; font-size: 12px; color: #6639ba; overflow-wrap: anywhere; }
.fit { padding: 4px 8px; border-radius: 6px; } .fit.yes { background: #dafbe1; color: #116329; } .fit.no { background: #fff5f5; color: #a40e26; } .fit.none { background: #f6f8fa; color: #656d76; }
.hidden { display: none !important; }
tr.diffs td { border-top: none; padding: 0 4px 4px 26px; }
.changes { display: flex; flex-direction: column; gap: 2px; margin-top: 6px; }
.changes h5 { margin: 0; font-size: 11px; color: #656d76; font-weight: 600; }
.always { display: flex; flex-direction: column; gap: 4px; border-top: 1px dashed #d4a72c; padding-top: 6px; }
.always .pattern { font: 12px ui-monospace, monospace; background: #fff; border: 1px solid #eaeef2; border-radius: 4px; padding: 0 4px; }
${DIFF_CSS}
${FORM_CSS}`;

type PillKind = "follow" | "ok" | "bad" | "wait" | "run" | "";

/// A question waiting for the user, as the host's `prompt` event carries it.
export type PromptEvent = Pick<PendingPrompt, "id" | "kind" | "text" | "tier" | "reason"> & Partial<Pick<PendingPrompt, "preview" | "offer" | "form">>;

/**
 * The user's answer to a prompt: approve (once, or always for the offer's rule), an answer, or a
 * form's values; it settles when the host took it.
 */
export type PromptReply = PromptAnswer;

export class Overlay {
  readonly host: HTMLElement;
  private readonly root: ShadowRoot;
  private readonly panel: HTMLDivElement;
  private readonly where: HTMLSpanElement;
  private readonly pill: HTMLSpanElement;
  private readonly diags: HTMLDivElement;
  private readonly commands: HTMLDivElement;
  private readonly prompts: HTMLDivElement;
  private readonly live: HTMLDivElement;
  private readonly out: HTMLPreElement;
  private readonly says: HTMLDivElement;
  private readonly summary: HTMLDivElement;
  private readonly errorBox: HTMLDivElement;
  private readonly foot: HTMLDivElement;
  private readonly gen: HTMLDivElement;
  private genFit: HTMLDivElement | null = null;
  /// Each command's state cell (updated by host events while the batch runs).
  private readonly rows = new Map<number, HTMLTableCellElement>();
  /// The Cancel of the generation this tab answers, while it runs.
  private genCancel: HTMLButtonElement | null = null;
  /// The summary's line about sending the results.
  private sentLine: HTMLElement | null = null;
  /// Each command's row and the key of what it shows: a row is rebuilt only when its key changes.
  private readonly rowEls = new Map<number, { tr: HTMLTableRowElement; key: string }>();
  private table: HTMLTableElement | null = null;
  private readonly tableHead = el("h4");
  private outText = "";
  private diagKey = "";

  constructor(onStop: () => void) {
    this.host = document.createElement("keyless-overlay");
    this.host.setAttribute("data-keyless", "overlay");
    this.root = this.host.attachShadow({ mode: "open" });
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    this.root.adoptedStyleSheets = [sheet];
    this.panel = el("div", "panel");
    const head = el("div", "head");
    head.append(el("span", "logo", "keyless"));
    this.where = el("span", "where");
    this.pill = el("span", "pill", "idle");
    const fold = el("button", "icon", "–");
    fold.title = "Collapse";
    fold.addEventListener("click", () => {
      this.panel.classList.toggle("collapsed");
      fold.textContent = this.panel.classList.contains("collapsed") ? "+" : "–";
    });
    head.append(this.where, this.pill, fold);
    const body = el("div", "body");
    this.errorBox = el("div", "error hidden");
    this.diags = el("div", "section");
    this.commands = el("div", "section");
    this.prompts = el("div", "section");
    this.says = el("div", "section");
    this.live = el("div", "section hidden");
    const liveHead = el("div", "row");
    liveHead.append(el("h4", "", "Output"), button("Stop", "danger", onStop));
    this.out = el("pre", "out");
    this.live.append(liveHead, this.out);
    this.summary = el("div", "summary hidden");
    this.foot = el("div", "foot");
    this.gen = el("div", "section hidden");
    body.append(this.errorBox, this.gen, this.prompts, this.diags, this.commands, this.says, this.live, this.summary, this.foot);
    this.panel.append(head, body);
    this.root.append(this.panel);
    document.documentElement.append(this.host);
  }

  setWhere(text: string): void {
    setText(this.where, text);
  }

  setPhase(text: string, kind: PillKind): void {
    setText(this.pill, text);
    this.pill.className = `pill ${kind}`;
  }

  note(text: string): void {
    setText(this.foot, text);
  }

  /// A new reply: forget the previous batch's state.
  reset(): void {
    this.rows.clear();
    this.rowEls.clear();
    this.table = null;
    this.commands.replaceChildren();
    this.outText = "";
    this.out.textContent = "";
    this.live.classList.add("hidden");
    this.summary.classList.add("hidden");
    this.says.replaceChildren();
    this.prompts.replaceChildren();
    this.clearError();
    this.diagKey = "";
    this.gen.classList.add("hidden");
    this.gen.replaceChildren();
    this.genFit = null;
    this.diags.replaceChildren();
  }

  /// A `.as` program's generate that this tab answers: what the chat is sent, the shape the
  /// answer must fit, and a Cancel that ends the program's wait.
  generation(g: Generation, onCancel: () => void): void {
    this.reset();
    const box = el("div", "gen");
    const head = el("div", "row");
    this.genCancel = button("Cancel", "danger", onCancel);
    head.append(el("span", "gen-title", `.as program ${g.file || g.run}${g.attempt > 1 ? ` · attempt ${g.attempt}` : ""}`), this.genCancel);
    const asked = el("pre", "asked", g.text);
    const shape = el("div", "");
    shape.append(el("span", "why", "answer shape "), el("span", "shape", g.shape_text));
    this.genFit = el("div", "fit none", "No JSON yet.");
    box.append(head, asked, shape, this.genFit);
    this.gen.replaceChildren(box);
    this.gen.classList.remove("hidden");
    this.note("");
    this.panel.classList.remove("collapsed");
  }

  /// The generation ended (answered, failed, cancelled): nothing is left to cancel.
  generationEnded(): void {
    this.genCancel?.remove();
    this.genCancel = null;
  }

  /// The live shape check of the reply to a generation.
  generationReport(r: GenerationReport): void {
    if (!this.genFit) return;
    const [kind, text] = r.json
      ? r.fits
        ? ["yes", "The JSON fits the shape."]
        : ["no", `The JSON does not fit: ${r.problem ?? ""}. The program will ask again if its attempts allow.`]
      : r.started
        ? ["none", "The JSON is not complete yet."]
        : ["none", "No JSON yet."];
    this.genFit.className = `fit ${kind}`;
    setText(this.genFit, text);
  }

  /// Shows what the core says about the reply so far. Only what changed is drawn again: the
  /// problems when they change, and the rows of the commands that are new or changed.
  follow(report: FollowReport): void {
    const diagKey = report.diagnostics.length === 0 ? `${report.final}|${report.ok}` : JSON.stringify([report.diagnostics, report.final, report.ok]);
    if (diagKey !== this.diagKey) {
      this.diagKey = diagKey;
      this.renderDiagnostics(report.diagnostics, report.final, report.ok);
    }
    this.renderCommands(report.commands);
  }

  private renderDiagnostics(list: Diagnostic[], final: boolean, ok: boolean): void {
    this.diags.replaceChildren();
    if (list.length === 0) {
      if (final && ok) this.diags.append(el("div", "clean", "Valid AgentScript v1."));
      return;
    }
    this.diags.append(el("h4", "", final ? "Problems" : "Problems so far"));
    const box = el("div", "diag");
    for (const d of list.slice(0, 20)) {
      box.append(el("span", "line", d.line === null ? "—" : `line ${d.line}`));
      const m = el("span", "msg", d.message);
      m.append(el("div", "code", d.code));
      box.append(m);
    }
    this.diags.append(box);
  }

  private renderCommands(list: CommandView[]): void {
    const shown = list.filter((c) => c.command !== "eof");
    if (shown.length === 0) {
      if (this.table) {
        this.commands.replaceChildren();
        this.table = null;
        this.rowEls.clear();
      }
      return;
    }
    if (!this.table) {
      this.table = el("table");
      this.commands.replaceChildren(this.tableHead, this.table);
    }
    const title = `Commands (${shown.length})`;
    if (this.tableHead.textContent !== title) setText(this.tableHead, title);
    const seen = new Set<number>();
    let prev: HTMLTableRowElement | null = null;
    for (const c of shown) {
      seen.add(c.number);
      const key = `${c.command}\u0000${c.tier ?? ""}\u0000${c.target}\u0000${c.skip_reason ?? ""}\u0000${c.decision ?? ""}\u0000${c.reason ?? ""}\u0000${String(c.run)}`;
      const old = this.rowEls.get(c.number);
      let tr = old?.tr;
      if (!old || old.key !== key) {
        const fresh = this.row(c);
        if (old) old.tr.replaceWith(fresh);
        else if (prev) prev.after(fresh);
        else this.table.prepend(fresh);
        this.rowEls.set(c.number, { tr: fresh, key });
        tr = fresh;
      }
      prev = tr ?? prev;
    }
    for (const [n, r] of this.rowEls) {
      if (!seen.has(n)) {
        r.tr.remove();
        this.rowEls.delete(n);
        this.rows.delete(n);
      }
    }
  }

  private row(c: CommandView): HTMLTableRowElement {
    const tr = el("tr");
    tr.append(el("td", "n", String(c.number)));
    const cmd = el("td", "cmd", c.command);
    if (c.tier) cmd.append(el("span", `badge t-${c.tier}`, c.tier));
    tr.append(cmd);
    const target = el("td", "target", c.target);
    const why = c.skip_reason ?? (c.decision && c.decision !== "run" ? `${c.decision}: ${c.reason ?? ""}` : null);
    if (why) target.append(el("div", "why", why));
    tr.append(target);
    const state = el("td", "state");
    const old = this.rows.get(c.number);
    if (old) state.replaceChildren(...Array.from(old.childNodes).map((n) => n.cloneNode(true)));
    else if (c.run === false) state.append(el("span", "s-skipped", "skip"));
    else if (c.decision === "confirm") state.append(el("span", "why", "asks you"));
    else if (c.decision === "deny") state.append(el("span", "s-error", "denied"));
    this.rows.set(c.number, state);
    tr.append(state);
    return tr;
  }

  batchStarted(): void {
    this.setPhase("running", "run");
    this.live.classList.remove("hidden");
    if (this.outText === "") this.out.classList.add("hidden");
  }

  commandStarted(n: number): void {
    const cell = this.rows.get(n);
    cell?.replaceChildren(el("span", "s-running", "running…"));
  }

  commandFinished(n: number, status: string, code: string | null, diff: FileDiff[] = []): void {
    const cell = this.rows.get(n);
    cell?.replaceChildren(el("span", `s-${status}`, status === "error" ? (code ?? "error") : status));
    // What the command changed, under its row (collapsed when long).
    const row = this.rowEls.get(n)?.tr;
    if (row && diff.length > 0) {
      const old = row.nextElementSibling;
      if (old?.classList.contains("diffs")) old.remove();
      row.after(diffRow(diff, 4));
    }
  }

  output(chunk: string): void {
    this.out.classList.remove("hidden");
    this.outText = (this.outText + chunk).slice(-6000);
    // The whole tail again (not the chunk alone): a CRLF split between two chunks stays a line end.
    setText(this.out, this.outText);
    this.out.scrollTop = this.out.scrollHeight;
  }

  say(text: string): void {
    this.says.append(el("div", "say", text));
  }

  prompt(p: PromptEvent, answer: (a: PromptReply) => Promise<void>): void {
    const box = el("div", "prompt");
    box.dataset.prompt = String(p.id);
    if (p.kind === "form" && p.form) {
      // An MCP server's form: it stays until the host takes the answer (values that do not fit
      // are refused and shown under it).
      box.append(el("div", "", "An MCP server asks you to fill in a form:"));
      if (p.reason) box.append(el("div", "why", p.reason));
      box.append(formView(p.form, answer, () => box.remove()));
    } else if (p.kind === "login") {
      // An MCP server refused the stored login for this call (step-up): log in again?
      box.append(el("div", "", p.text), el("div", "why", p.reason ?? ""));
      const reply = (a: PromptReply) => () => {
        void answer(a).catch(() => undefined);
        box.remove();
      };
      const row = el("div", "row");
      row.append(button("Log in", "primary", reply({ approve: true })), button("Not now", "", reply({ approve: false })));
      box.append(row);
    } else if (p.kind === "confirm") {
      const title = el("div", "", "Run this command?");
      if (p.tier) title.append(el("span", `badge t-${p.tier}`, p.tier));
      box.append(title, el("code", "", p.text));
      if (p.reason) box.append(el("div", "why", p.reason));
      // What it will change, before the user approves (a @@deletefile's file).
      if (p.preview && p.preview.length > 0) {
        box.append(el("div", "why", "This will change:"));
        for (const d of p.preview) box.append(diffView(d));
      }
      const reply = (a: PromptReply) => () => {
        void answer(a).catch(() => undefined);
        box.remove();
      };
      const row = el("div", "row");
      // Why not, told to the model with the decline (optional).
      const why = el("input", "why-not");
      why.placeholder = "Why not? (optional)";
      why.title = "Sent to the model with your Decline, so it can do otherwise";
      const decline = () => {
        const text = why.value.trim();
        reply(text ? { approve: false, answer: text } : { approve: false })();
      };
      why.addEventListener("keydown", (e) => {
        if (e.key === "Enter") decline();
      });
      row.append(button("Approve", "primary", reply({ approve: true })), button("Decline", "", decline), why);
      box.append(row);
      if (p.offer) {
        // "Always allow", with the rule shown before it is saved.
        const always = el("div", "always");
        const exact = el("div", "row");
        exact.append(button("Always allow this command", "", reply({ approve: true, always: "exact" })), el("span", "why", "here, exactly as written"));
        always.append(exact);
        if (p.offer.like) {
          const like = el("div", "row");
          const shown = el("span", "why", "commands like ");
          shown.append(el("span", "pattern", p.offer.like.text));
          like.append(button("Always allow commands like this", "", reply({ approve: true, always: "like" })), shown);
          always.append(like);
        }
        always.append(el("div", "why", `Never above ${p.offer.exact.tier}; never a Denied command. \`keyless-host allow list\` shows the rules.`));
        box.append(always);
      }
    } else {
      // A piece's question (needs_user_input) carries why it stopped; the model's @@ask does not.
      box.append(el("div", "", p.reason ? "The piece needs your answer to go on:" : "The model asks:"), el("code", "", p.text));
      if (p.reason) box.append(el("div", "why", p.reason));
      const row = el("div", "row");
      const input = el("input", "answer");
      input.placeholder = "Your answer";
      const go = () => {
        void answer({ answer: input.value }).catch(() => undefined);
        box.remove();
      };
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") go();
      });
      row.append(input, button("Answer", "primary", go));
      box.append(row);
    }
    this.prompts.append(box);
    for (const cell of this.rows.values()) {
      if (cell.textContent === "running…") cell.replaceChildren(el("span", "s-running", p.kind === "ask" ? "asks" : "asks you"));
    }
    this.setPhase("waiting for you", "wait");
    this.panel.classList.remove("collapsed");
  }

  promptClosed(id: number): void {
    this.prompts.querySelector(`[data-prompt="${id}"]`)?.remove();
  }

  results(answer: ReplyAnswer, sent: string): void {
    this.live.classList.add("hidden");
    // Every row says how its command ended, even where the live events were missed (a retry
    // answered from the store): never "asks you" or "running…" on a command that already ran.
    for (const c of answer.commands ?? []) this.commandFinished(c.number, c.status, c.code);
    this.summary.classList.remove("hidden");
    this.summary.className = `summary o-${answer.outcome}`;
    this.summary.replaceChildren();
    // Counted once, by the host (core's BatchCounts): the same figures as the terminal's exit code.
    const { ok, failed, declined, skipped } = answer.counts;
    const parts = [`${ok} ok`, `${failed} failed`];
    if (declined) parts.push(`${declined} declined`);
    if (skipped) parts.push(`${skipped} skipped`);
    const head =
      answer.status === "rejected"
        ? answer.turn_ended
          ? "Format error: nothing ran, and no more corrections are sent."
          : "Format error: the correction goes back to the model."
        : answer.status === "interrupted"
          ? "This batch was interrupted earlier; it is not run again."
          : ok + failed + declined + skipped === 0
            ? answer.turn_ended === "done"
              ? `Turn ${answer.turn}, batch ${answer.batch}: finished.`
              : `Turn ${answer.turn}, batch ${answer.batch}: nothing to run.`
            : `Turn ${answer.turn}, batch ${answer.batch}: ${parts.join(", ")}.`;
    this.summary.append(el("div", "", head));
    if (answer.turn_ended) {
      this.summary.append(el("div", "why", turnEndedText(answer)));
    }
    if (answer.done_message) {
      this.summary.append(el("div", "done-message", answer.done_message));
    }
    if (answer.task_diff.length > 0) {
      // The task is finished: everything it changed since it started, the short diffs open.
      const changes = el("div", "changes task");
      changes.append(el("h5", "", `The task's changes: ${totals(answer.task_diff)}`));
      for (const d of answer.task_diff) changes.append(diffView(d));
      this.summary.append(changes);
    } else if (answer.diff.length > 0) {
      // What the batch changed (each diff is also under its command above).
      const changes = el("div", "changes");
      changes.append(el("h5", "", `Changes: ${totals(answer.diff)}`));
      for (const d of answer.diff) changes.append(diffView(d, false));
      this.summary.append(changes);
    }
    if (answer.review) {
      const review = el("pre", "review", answer.review);
      review.title = "How to review and merge the task's branch";
      this.summary.append(review);
    }
    this.sentLine = el("div", "why sent", sent);
    this.summary.append(this.sentLine);
  }

  /// The summary's last line once the results went (or did not): "Sending the results…" is never
  /// left standing after they were sent.
  sent(text: string): void {
    if (this.sentLine) setText(this.sentLine, text);
  }

  error(code: string, message: string, actions: { label: string; run: () => void }[] = []): void {
    this.errorBox.classList.remove("hidden", "info");
    this.errorBox.replaceChildren(el("div", "code", code), el("div", "", message));
    if (actions.length) {
      const row = el("div", "row");
      for (const a of actions) row.append(button(a.label, "", a.run));
      this.errorBox.append(row);
    }
    this.setPhase(code, "bad");
    this.panel.classList.remove("collapsed");
  }

  /// A message of the picker (not a failure): what to click, or what was kept.
  info(title: string, lines: (string | { sel: string })[], actions: { label: string; run: () => void }[] = []): void {
    this.errorBox.classList.remove("hidden");
    this.errorBox.classList.add("info");
    this.errorBox.replaceChildren(el("div", "code", title), ...lines.map((l) => (typeof l === "string" ? el("div", "", l) : el("div", "sel", l.sel))));
    if (actions.length) {
      const row = el("div", "row");
      for (const a of actions) row.append(button(a.label, "", a.run));
      this.errorBox.append(row);
    }
    this.panel.classList.remove("collapsed");
  }

  /// Outlines `rect` on the page (the element under the pointer while picking); null hides it.
  highlight(rect: DOMRect | null): void {
    let box = this.root.querySelector<HTMLDivElement>(".hl");
    if (!rect) {
      box?.remove();
      return;
    }
    if (!box) {
      box = el("div", "hl");
      this.root.append(box);
    }
    box.style.left = `${rect.left}px`;
    box.style.top = `${rect.top}px`;
    box.style.width = `${rect.width}px`;
    box.style.height = `${rect.height}px`;
  }

  /// Whether a page event happened inside this panel.
  owns(e: Event): boolean {
    return e.composedPath().includes(this.host);
  }

  clearError(): void {
    this.errorBox.classList.add("hidden");
    this.errorBox.replaceChildren();
  }

  remove(): void {
    this.host.remove();
  }
}

/** Why the turn ended, in the user's words. */
function turnEndedText(answer: ReplyAnswer): string {
  const state = answer.piece?.state;
  if (answer.turn_ended === "needs_user_input" && state?.state === "needs_user_input") {
    return `The piece waits for your answer: ${state.question} Answer it in the chat, then press Start to go on.`;
  }
  return answer.turn_ended === "done" ? "The model finished the task (@@done)." : `The turn ended: ${answer.ended ?? answer.turn_ended ?? ""}.`;
}
