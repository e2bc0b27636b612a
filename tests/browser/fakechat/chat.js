// The fake chat page. Four DOMs from one script, each following what SITES.md knows of the site:
// ChatGPT-like (chatgpt.com), Claude-like (claude.ai), Gemini-like (gemini.google.com: Angular
// custom elements, a Quill editor) and AI Studio-like (aistudio.google.com: a plain textarea behind
// an Angular form, a Run button that turns into Stop). Replies are rendered from markdown the way
// chat sites do: prose in <p> with <br> for single newlines, code blocks in <pre> with a header
// (language label + Copy button), re-rendered on every streamed chunk.
"use strict";
(() => {
  const SITE = ["claude", "gemini", "aistudio"].includes(document.documentElement.dataset.site) ? document.documentElement.dataset.site : "chatgpt";
  // The page's skin (skins.js): the eight more sites, and the second imitations (?variant=2).
  const SKIN_KEY = document.documentElement.dataset.skin || "";
  const h = (tag, attrs = {}, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k) e.append(k);
    return e;
  };

  // ?renamed=NAME: the site renamed a class its replies carry (`markdown`), an attribute
  // (`[data-message-part-type]`) or an attribute's value (`[data-testid=assistant-message]`):
  // every element gets the new name, as a site's redeploy would. Several names, comma-separated,
  // are all renamed.
  for (const renamed of (new URLSearchParams(location.search).get("renamed") ?? "").split(",").filter(Boolean)) {
    const [, attr, value] = /^\[([\w-]+)(?:=([^\]]+))?\]$/.exec(renamed) ?? [];
    const rename = (el) => {
      if (attr && value !== undefined) {
        if (el.getAttribute(attr) === value) el.setAttribute(attr, `${value}-renamed`);
      } else if (attr && el.hasAttribute(attr)) {
        el.setAttribute(`${attr}-renamed`, el.getAttribute(attr));
        el.removeAttribute(attr);
      } else if (!attr && el.classList.contains(renamed)) el.classList.replace(renamed, `${renamed}-renamed`);
    };
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === "attributes") rename(r.target);
        for (const n of r.addedNodes) if (n.nodeType === 1) [n, ...n.querySelectorAll("*")].forEach(rename);
      }
    }).observe(document.documentElement, { subtree: true, childList: true, attributes: true, attributeFilter: attr ? [attr] : ["class"] });
  }

  // ---- markdown (enough of it to be faithful to how replies are mangled) ----
  function codeBlock(code, lang) {
    const codeEl = h("code", { class: `whitespace-pre! language-${lang || "plaintext"}` });
    for (const line of code.split("\n")) {
      const span = h("span", { class: line.trim().startsWith("@@") ? "hljs-keyword" : "hljs-line", text: line });
      codeEl.append(span, document.createTextNode("\n"));
    }
    if (codeEl.lastChild) codeEl.lastChild.remove();
    if (SITE === "gemini") {
      return h("code-block", { class: "ng-star-inserted" },
        h("div", { class: "code-block-decoration header-formatted gds-title-s" },
          h("span", { text: lang || "code" }),
          h("button", { "aria-label": "Copy code", class: "copy-button" }, h("mat-icon", { fonticon: "content_copy", text: "content_copy" }))),
        h("div", { class: "formatted-code-block-internal-container" }, h("pre", {}, codeEl)));
    }
    if (SITE === "aistudio") {
      return h("ms-code-block", {},
        h("div", { class: "code-block-header" }, h("span", { class: "language", text: lang || "code" }),
          h("button", { iconname: "content_copy", class: "mat-mdc-tooltip-trigger", text: "content_copy" })),
        h("pre", {}, codeEl));
    }
    if (SITE === "chatgpt") {
      return h("pre", { class: "overflow-visible!" },
        h("div", { class: "contain-inline-size rounded-md border" },
          h("div", { class: "flex items-center text-token-text-secondary px-4 py-2 text-xs font-sans justify-between select-none", text: lang || "plaintext" }),
          h("div", { class: "sticky top-9" }, h("div", { class: "absolute bottom-0 right-2 flex h-9 items-center" },
            h("button", { class: "flex gap-1 items-center", "aria-label": "Copy", text: "Copy code" }))),
          h("div", { class: "overflow-y-auto p-4", dir: "ltr" }, codeEl)));
    }
    return h("div", { class: "relative flex flex-col rounded-lg" },
      h("div", { class: "code-block__header text-text-300 text-xs p-3.5 pb-0", text: lang || "text" }),
      h("div", { class: "pointer-events-none sticky" }, h("div", { class: "absolute right-0 h-8" },
        h("button", { class: "pointer-events-auto", text: "Copy" }))),
      h("div", {}, h("pre", { class: "code-block__code" }, codeEl)));
  }

  function inline(text, into) {
    // **bold** and `code`, the rest as text
    const re = /(\*\*[^*]+\*\*|`[^`]+`)/g;
    let last = 0;
    for (const m of text.matchAll(re)) {
      if (m.index > last) into.append(document.createTextNode(text.slice(last, m.index)));
      const t = m[0];
      into.append(t.startsWith("**") ? h("strong", { text: t.slice(2, -2) }) : h("code", { text: t.slice(1, -1) }));
      last = m.index + t.length;
    }
    if (last < text.length) into.append(document.createTextNode(text.slice(last)));
  }

  function render(md, into, codeBlockOf = codeBlock) {
    into.replaceChildren();
    const lines = md.split("\n");
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/.exec(line);
      if (fence) {
        const [, mark, lang] = fence;
        const body = [];
        i++;
        while (i < lines.length) {
          const close = /^\s*(`{3,}|~{3,})\s*$/.exec(lines[i]);
          if (close && close[1][0] === mark[0] && close[1].length >= mark.length) break;
          body.push(lines[i]);
          i++;
        }
        i++;
        into.append(codeBlockOf(body.join("\n"), lang));
        continue;
      }
      if (line.trim() === "") {
        i++;
        continue;
      }
      const head = /^(#{1,6})\s+(.*)$/.exec(line);
      if (head) {
        const e = h(`h${head[1].length}`);
        inline(head[2], e);
        into.append(e);
        i++;
        continue;
      }
      if (/^\s*[-*]\s+/.test(line)) {
        const ul = h("ul");
        while (i < lines.length && /^\s*[-*]\s+/.test(lines[i])) {
          const li = h("li");
          inline(lines[i].replace(/^\s*[-*]\s+/, ""), li);
          ul.append(li);
          i++;
        }
        into.append(ul);
        continue;
      }
      const p = h("p");
      let first = true;
      while (i < lines.length && lines[i].trim() !== "" && !/^\s*(`{3,}|~{3,})/.test(lines[i]) && !/^#{1,6}\s/.test(lines[i])) {
        if (!first) p.append(h("br"));
        inline(lines[i], p);
        first = false;
        i++;
      }
      into.append(p);
    }
  }

  // ---- a ProseMirror-like composer: its state is the truth; DOM writes that do not come through
  // its input path (beforeinput, paste, or an `input` event) never reach the state ----
  class Editor {
    constructor(el, onChange) {
      this.el = el;
      this.lines = [""];
      this.onChange = onChange;
      el.addEventListener("beforeinput", (e) => this.beforeInput(e));
      el.addEventListener("paste", (e) => {
        e.preventDefault();
        this.insert(e.clipboardData ? e.clipboardData.getData("text/plain") : "");
      });
      // execCommand and other native edits: read the DOM back, as ProseMirror's DOM observer does.
      el.addEventListener("input", () => this.readDom());
      this.render();
    }
    allSelected() {
      const sel = window.getSelection();
      if (!sel || sel.rangeCount === 0) return false;
      const r = sel.getRangeAt(0);
      if (r.collapsed) return false;
      const all = document.createRange();
      all.selectNodeContents(this.el);
      return r.compareBoundaryPoints(Range.START_TO_START, all) <= 0 && r.compareBoundaryPoints(Range.END_TO_END, all) >= 0;
    }
    beforeInput(e) {
      const t = e.inputType;
      if (t === "insertText" && e.data !== null) {
        e.preventDefault();
        this.insert(e.data);
      } else if (t === "insertParagraph" || t === "insertLineBreak") {
        e.preventDefault();
        this.insert("\n");
      } else if (t === "deleteContentBackward") {
        e.preventDefault();
        if (this.allSelected()) this.lines = [""];
        else {
          const last = this.lines.length - 1;
          if (this.lines[last].length > 0) this.lines[last] = this.lines[last].slice(0, -1);
          else if (last > 0) this.lines.pop();
        }
        this.commit();
      }
    }
    insert(text) {
      if (this.allSelected()) this.lines = [""];
      const parts = text.replace(/\r\n?/g, "\n").split("\n");
      this.lines[this.lines.length - 1] += parts[0];
      for (const p of parts.slice(1)) this.lines.push(p);
      this.commit();
    }
    readDom() {
      const blocks = Array.from(this.el.children);
      this.lines = blocks.length ? blocks.map((b) => b.textContent ?? "") : [this.el.textContent ?? ""];
      if (this.lines.length === 0) this.lines = [""];
      this.commit(false);
    }
    commit(rerender = true) {
      if (rerender) this.render();
      this.onChange();
    }
    render() {
      this.el.replaceChildren(...this.lines.map((l) => (l ? h("p", { text: l }) : h("p", {}, h("br", { class: "ProseMirror-trailingBreak" })))));
      this.el.classList.toggle("is-empty", this.text() === "");
      const sel = window.getSelection();
      if (sel && document.activeElement === this.el) {
        const r = document.createRange();
        r.selectNodeContents(this.el);
        r.collapse(false);
        sel.removeAllRanges();
        sel.addRange(r);
      }
    }
    text() {
      return this.lines.join("\n");
    }
    clear() {
      this.lines = [""];
      this.commit();
    }
  }

  // ---- a Quill-like editor (Gemini): its model follows the DOM through a MutationObserver (as
  // Quill's scroll blot does), and it handles paste and beforeinput itself ----
  class QuillEditor {
    constructor(el, onChange) {
      this.el = el;
      this.onChange = onChange;
      this.lines = [""];
      el.addEventListener("paste", (e) => {
        e.preventDefault();
        this.insert(e.clipboardData ? e.clipboardData.getData("text/plain") : "");
      });
      el.addEventListener("beforeinput", (e) => {
        if (e.inputType === "insertText" && e.data !== null) {
          e.preventDefault();
          this.insert(e.data);
        } else if (e.inputType === "insertParagraph") {
          e.preventDefault();
          this.insert("\n");
        } else if (e.inputType === "deleteContentBackward" || e.inputType === "deleteByCut") {
          e.preventDefault();
          this.lines = [""];
          this.render();
        }
      });
      this.observer = new MutationObserver(() => this.readDom());
      this.render(false);
    }
    insert(text) {
      const sel = window.getSelection();
      const all = sel && sel.rangeCount && !sel.getRangeAt(0).collapsed;
      if (all) this.lines = [""];
      const parts = text.replace(/\r\n?/g, "\n").split("\n");
      this.lines[this.lines.length - 1] += parts[0];
      for (const p of parts.slice(1)) this.lines.push(p);
      this.render();
    }
    readDom() {
      const blocks = Array.from(this.el.children);
      this.lines = blocks.length ? blocks.map((b) => b.textContent ?? "") : [this.el.textContent ?? ""];
      this.el.classList.toggle("ql-blank", this.text() === "");
      this.onChange();
    }
    render(notify = true) {
      this.observer.disconnect();
      this.el.replaceChildren(...this.lines.map((l) => (l ? h("p", { text: l }) : h("p", {}, h("br")))));
      this.el.classList.toggle("ql-blank", this.text() === "");
      this.observer.observe(this.el, { childList: true, subtree: true, characterData: true });
      if (notify) this.onChange();
    }
    text() {
      return this.lines.join("\n");
    }
    clear() {
      this.lines = [""];
      this.render();
    }
  }

  // ---- a textarea bound to an Angular-like form control (AI Studio): only an `input` event
  // updates the control's value ----
  class FormTextarea {
    constructor(el, onChange) {
      this.el = el;
      this.value = "";
      el.addEventListener("input", () => {
        this.value = el.value;
        onChange();
      });
      this.onChange = onChange;
    }
    text() {
      return this.value;
    }
    clear() {
      this.el.value = "";
      this.value = "";
      this.onChange();
    }
  }

  // ---- a Lexical-like editor (Perplexity, Kimi): the same input path (beforeinput, paste), its
  // own paragraphs of text nodes in spans ----
  class LexicalEditor extends Editor {
    render() {
      super.render();
      for (const p of Array.from(this.el.children)) {
        if (p.firstChild && p.firstChild.nodeType === Node.TEXT_NODE) {
          const span = h("span", { "data-lexical-text": "true", text: p.textContent });
          p.replaceChildren(span);
          p.setAttribute("dir", "ltr");
        }
      }
    }
  }
  // ---- tiptap (Grok): ProseMirror with its placeholder on the empty first paragraph ----
  class TiptapEditor extends Editor {
    render() {
      super.render();
      const first = this.el.firstElementChild;
      if (first && this.text() === "") {
        first.classList.add("is-empty", "is-editor-empty");
        first.setAttribute("data-placeholder", "What do you want to know?");
      }
    }
  }

  /** The scripted model's answer to a message: {text, chunk, delayMs, banner}; null when Stop
   * aborted the request before its first token (as the real sites do). */
  async function askModel(text, files, signal) {
    try {
      const res = await fetch("/backend/conversation", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text, attachments: files }), signal });
      return await res.json();
    } catch {
      return null;
    }
  }

  /** A code block as most sites render it: pre > code.language-… with a header. */
  function plainCode(code, lang) {
    const codeEl = h("code", { class: `language-${lang || "plaintext"}`, text: code });
    return h("div", { class: "code-wrap" }, h("div", { class: "code-head" }, h("span", { text: lang || "code" }), h("button", { text: "Copy" })), h("pre", {}, codeEl));
  }

  /** Send and stop as two buttons, one in the page at a time. */
  function swapControl(send, stop) {
    let handlers = { send() {}, stop() {} };
    send.addEventListener("click", (e) => {
      e.preventDefault();
      if (!send.disabled) handlers.send();
    });
    stop.addEventListener("click", (e) => {
      e.preventDefault();
      handlers.stop();
    });
    return {
      set(s) {
        if (s.streaming && send.isConnected) send.replaceWith(stop);
        else if (!s.streaming && stop.isConnected) stop.replaceWith(send);
        send.disabled = !s.canSend;
      },
      on(hs) { handlers = hs; },
    };
  }

  const root = document.getElementById("root");

  /** The page from a skin: the same model, streaming and editors, the skin's DOM. */
  function runSkin(skin) {
    // A skin may keep its own thread (a virtualized one mounts the turns itself).
    const thread = skin.thread ?? h("div", { class: "thread" });
    const main = h("main", {}, thread);
    root.append(h("header", { class: "top", text: skin.title }), main, skin.form);
    const kinds = { prosemirror: Editor, tiptap: TiptapEditor, lexical: LexicalEditor, quill: QuillEditor, textarea: FormTextarea };
    let attachments = [];
    let streaming = false;
    let stopRequested = false;
    let pendingRequest = null;
    const editor = new kinds[skin.editorKind](skin.editorEl, () => update());
    function update() {
      skin.control.set({ streaming, canSend: !streaming && (editor.text().trim() !== "" || attachments.length > 0) });
    }
    update();
    skin.control.on({
      send: () => void submit(),
      stop: () => {
        stopRequested = true;
        pendingRequest?.abort();
      },
    });
    skin.form.addEventListener("submit", (e) => e.preventDefault());
    skin.editorEl.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        void submit();
      }
    });
    skin.fileInput.addEventListener("change", async () => {
      for (const f of Array.from(skin.fileInput.files ?? [])) {
        attachments.push({ name: f.name, text: await f.text() });
        skin.chips.append(skin.chip(f.name));
      }
      skin.fileInput.value = "";
      update();
    });
    function setStreaming(on) {
      streaming = on;
      update();
    }
    async function submit() {
      const text = editor.text();
      if (streaming || (text.trim() === "" && attachments.length === 0)) return;
      const files = attachments;
      attachments = [];
      skin.chips.replaceChildren();
      editor.clear();
      thread.append(skin.userTurn(text, files));
      setStreaming(true);
      stopRequested = false;
      pendingRequest = new AbortController();
      const answer = await askModel(text, files, pendingRequest.signal);
      pendingRequest = null;
      if (!answer) {
        setStreaming(false);
        return;
      }
      const { text: reply, chunk, delayMs, banner } = answer;
      const a = skin.assistantTurn();
      if (a.el && !a.el.isConnected) thread.append(a.el);
      let shown = 0;
      await new Promise((r) => setTimeout(r, 200));
      // AI Studio shows its last tokens after the Run button is back: the last fifth comes late.
      const lateFrom = skin.lateTail ? Math.floor(reply.length * 0.8) : reply.length;
      while (shown < reply.length && !stopRequested) {
        if (shown >= lateFrom && streaming) {
          setStreaming(false);
          await new Promise((r) => setTimeout(r, 900));
        }
        shown = Math.min(reply.length, shown + chunk);
        render(reply.slice(0, shown), a.md, skin.codeBlock);
        main.scrollTop = main.scrollHeight;
        await new Promise((r) => setTimeout(r, delayMs));
      }
      await new Promise((r) => setTimeout(r, 300));
      a.done();
      if (banner) thread.append(h("div", { class: "banner", role: "alert", text: banner }));
      setStreaming(false);
    }
  }

  if (SKIN_KEY) {
    const make = window.__fakeSkins && window.__fakeSkins[SKIN_KEY];
    if (!make) throw new Error(`no skin ${SKIN_KEY}`);
    const params = new URLSearchParams(location.search);
    runSkin(make({ h, plainCode, swapControl, opts: { editor: params.get("editor") ?? "cm6", editorHidden: params.get("editor") === "hidden", composerRenamed: params.get("composer") === "renamed" } }));
    return;
  }

  // ---- the page ----
  const thread = h("div", { class: "thread" });
  const main = h("main", {}, thread);
  const fileInput = h("input", { type: "file", multiple: "", hidden: "" });
  const chips = h("div", { class: "chips" });
  const editorEl = SITE === "gemini"
    ? h("div", { contenteditable: "true", class: "ql-editor textarea new-input-ui", role: "textbox", "data-placeholder": "Ask Gemini", "aria-label": "Enter a prompt here" })
    : SITE === "aistudio"
      ? h("textarea", { class: "textarea", "aria-label": "Enter a prompt", placeholder: "Start typing a prompt", formcontrolname: "promptText", rows: "3" })
      : h("div", { contenteditable: "true", class: "ProseMirror", translate: "no" });
  if (SITE === "chatgpt") editorEl.id = "prompt-textarea";
  // Claude, Feb 2026 (SITES.md, two captures): the contenteditable itself carries the test id and the label.
  if (SITE === "claude") {
    editorEl.setAttribute("data-testid", "chat-input");
    editorEl.setAttribute("aria-label", "Write your prompt to Claude");
  }
  const hiddenTextarea = h("textarea", { name: "prompt-textarea", hidden: "" });
  const sendBtn = SITE === "chatgpt"
    ? h("button", { "data-testid": "send-button", "aria-label": "Send prompt", class: "send", text: "↑" })
    : SITE === "gemini"
      ? h("button", { "aria-label": "Send message", class: "send-button mat-mdc-icon-button send" }, h("mat-icon", { fonticon: "send", text: "send" }))
      : SITE === "aistudio"
        ? h("button", { type: "submit", "aria-label": "Run", class: "run-button send", text: "Run" })
        : h("button", { "aria-label": "Send message", class: "send", text: "↑" });
  const stopBtn = SITE === "chatgpt"
    ? h("button", { "data-testid": "stop-button", "aria-label": "Stop streaming", class: "stop", text: "■" })
    : SITE === "gemini"
      ? h("button", { "aria-label": "Stop response", class: "send-button mat-mdc-icon-button stop" }, h("mat-icon", { fonticon: "stop", text: "stop" }))
      : SITE === "aistudio"
        ? h("button", { type: "submit", "aria-label": "Stop", class: "run-button stop", text: "Stop" })
        : h("button", { "aria-label": "Stop response", class: "stop", text: "■" });
  const attachBtn = h("button", { class: "attach", "aria-label": "Attach files", text: "+" });
  const editorBox = SITE === "claude"
    ? h("div", { "aria-label": "Write your prompt to Claude", class: "editor-box" }, editorEl)
    : SITE === "gemini"
      ? h("rich-textarea", { class: "editor-box" }, editorEl)
      : SITE === "aistudio"
        ? h("ms-autosize-textarea", { class: "editor-box" }, editorEl)
        : h("div", { class: "editor-box" }, hiddenTextarea, editorEl);
  // AI Studio's Run button sits in ms-run-button; the others in a plain wrapper.
  const actions = SITE === "aistudio" ? h("ms-run-button", { class: "actions" }, sendBtn) : h("div", { class: "actions" }, sendBtn);
  const form = h("form", { class: "composer" }, chips, h("div", { class: "row" }, attachBtn, editorBox, actions), fileInput);
  const titles = { chatgpt: "ChatGPT", claude: "Claude", gemini: "Gemini", aistudio: "Google AI Studio" };
  root.append(h("header", { class: "top", text: titles[SITE] }), main, form);

  let attachments = [];
  let streaming = false;
  let stopRequested = false;
  let turn = 0;
  const editor = SITE === "gemini" ? new QuillEditor(editorEl, () => updateSend()) : SITE === "aistudio" ? new FormTextarea(editorEl, () => updateSend()) : new Editor(editorEl, () => updateSend());

  function updateSend() {
    sendBtn.disabled = streaming || (editor.text().trim() === "" && attachments.length === 0);
  }
  updateSend();

  attachBtn.addEventListener("click", (e) => {
    e.preventDefault();
    fileInput.click();
  });
  fileInput.addEventListener("change", async () => {
    for (const f of Array.from(fileInput.files ?? [])) {
      const text = await f.text();
      attachments.push({ name: f.name, text });
      chips.append(h("div", { class: SITE === "gemini" ? "chip file-preview" : "chip", "data-testid": SITE === "chatgpt" ? "attachment-chip" : "file-thumbnail", text: f.name }));
    }
    fileInput.value = "";
    updateSend();
  });

  function userTurn(text, files) {
    turn++;
    if (SITE === "gemini") {
      const q = h("div", { class: "query-content" }, ...text.split("\n").map((l) => h("p", { class: "query-text-line", text: l })));
      for (const f of files) q.append(h("div", { class: "file", text: `📎 ${f.name}` }));
      thread.append(h("user-query", { class: "turn user" }, q));
      return;
    }
    if (SITE === "aistudio") {
      const c = h("div", { class: "turn-content" }, h("ms-text-chunk", { text }));
      for (const f of files) c.append(h("div", { class: "file", text: `📎 ${f.name}` }));
      thread.append(h("ms-chat-turn", { class: "turn user" }, h("div", { class: "chat-turn-container user", "data-turn-role": "User" }, c)));
      return;
    }
    if (SITE === "chatgpt") {
      const body = h("div", { class: "whitespace-pre-wrap", text });
      const bubble = h("div", { "data-message-author-role": "user", "data-message-id": `u${turn}` }, body);
      for (const f of files) bubble.append(h("div", { class: "file", text: `📎 ${f.name}` }));
      thread.append(h("article", { "data-testid": `conversation-turn-${turn * 2 - 1}`, class: "turn user" }, h("h5", { class: "sr-only", text: "You said:" }), bubble));
    } else {
      const body = h("div", { "data-testid": "user-message", class: "user-message" }, h("p", { class: "whitespace-pre-wrap", text }));
      for (const f of files) body.append(h("div", { class: "file", text: `📎 ${f.name}` }));
      thread.append(h("div", { class: "turn user" }, body));
    }
  }

  function assistantTurn() {
    if (SITE === "gemini") {
      const md = h("div", { class: "markdown markdown-main-panel" });
      const actions = h("message-actions", {}, h("div", {}, h("div", {}, h("copy-button", {}, h("button", { "aria-label": "Copy" }, h("mat-icon", { fonticon: "content_copy", text: "content_copy" }))))));
      actions.hidden = true;
      thread.append(h("model-response", { class: "turn assistant" },
        h("div", { class: "response-container" },
          h("span", { class: "cdk-visually-hidden", text: "Gemini said" }),
          h("message-content", { class: "model-response-text" }, md),
          actions)));
      return { md, done() { actions.hidden = false; } };
    }
    if (SITE === "aistudio") {
      const md = h("ms-cmark-node", { class: "cmark-node" });
      const footer = h("div", { class: "actions-container turn-footer" }, h("button", { iconname: "thumb_up", text: "thumb_up" }));
      footer.hidden = true;
      thread.append(h("ms-chat-turn", { class: "turn assistant" },
        h("div", { class: "chat-turn-container model", "data-turn-role": "Model" },
          h("div", { class: "turn-content" }, h("ms-prompt-chunk", {}, h("ms-text-chunk", {}, md))), footer)));
      return { md, done() { footer.hidden = false; } };
    }
    if (SITE === "chatgpt") {
      const md = h("div", { class: "markdown prose w-full break-words" });
      const msg = h("div", { "data-message-author-role": "assistant", "data-message-id": `a${turn}` }, md);
      thread.append(h("article", { "data-testid": `conversation-turn-${turn * 2}`, class: "turn assistant" }, h("h6", { class: "sr-only", text: "ChatGPT said:" }), msg));
      return { md, done() {} };
    }
    const md = h("div", { class: "grid-cols-1 grid gap-2.5" });
    const wrap = h("div", { "data-is-streaming": "true", class: "group relative" }, h("div", { class: "font-claude-message" }, md));
    thread.append(h("div", { class: "turn assistant" }, wrap));
    return { md, done() { wrap.setAttribute("data-is-streaming", "false"); } };
  }

  function setStreaming(on) {
    streaming = on;
    if (on) sendBtn.replaceWith(stopBtn);
    else if (stopBtn.isConnected) stopBtn.replaceWith(sendBtn);
    updateSend();
  }
  // Stop before the first token aborts the request, as the real sites do.
  let pendingRequest = null;
  stopBtn.addEventListener("click", (e) => {
    e.preventDefault();
    stopRequested = true;
    pendingRequest?.abort();
  });

  async function submit() {
    const text = editor.text();
    if (streaming || (text.trim() === "" && attachments.length === 0)) return;
    const files = attachments;
    attachments = [];
    chips.replaceChildren();
    editor.clear();
    userTurn(text, files);
    setStreaming(true);
    stopRequested = false;
    pendingRequest = new AbortController();
    const answer = await askModel(text, files, pendingRequest.signal);
    pendingRequest = null;
    if (!answer) {
      setStreaming(false);
      return;
    }
    const { text: reply, chunk, delayMs, banner } = answer;
    const a = assistantTurn();
    let shown = 0;
    await new Promise((r) => setTimeout(r, 200));
    while (shown < reply.length && !stopRequested) {
      shown = Math.min(reply.length, shown + chunk);
      render(reply.slice(0, shown), a.md);
      main.scrollTop = main.scrollHeight;
      await new Promise((r) => setTimeout(r, delayMs));
    }
    // Sites keep the stop button a moment after the last token.
    await new Promise((r) => setTimeout(r, 300));
    a.done();
    if (banner) thread.append(h("div", { class: "banner", role: "alert", text: banner }));
    setStreaming(false);
  }

  sendBtn.addEventListener("click", (e) => {
    e.preventDefault();
    void submit();
  });
  editorEl.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      void submit();
    }
  });
  form.addEventListener("submit", (e) => e.preventDefault());
})();
