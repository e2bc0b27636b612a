// What the end-to-end suites share (tests/browser/extension.test.mjs on Chromium,
// tests/browser/firefox.test.mjs on Firefox): a workspace with a bare origin, a fenced reply, a
// wait with a deadline.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const git = (cwd, ...args) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();

/** A workspace on branch feature/greet with one commit, pushed to a bare origin. */
export function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "keyless-e2e-"));
  const ws = join(dir, "ws");
  const origin = join(dir, "origin.git");
  execFileSync("git", ["init", "-q", "--bare", origin]);
  execFileSync("git", ["init", "-q", "-b", "feature/greet", ws]);
  git(ws, "config", "user.name", "Test User");
  git(ws, "config", "user.email", "test@example.com");
  writeFileSync(join(ws, "README.md"), "# demo\n\nA demo project.\n");
  git(ws, "add", "-A");
  git(ws, "commit", "-q", "-m", "Initial commit");
  git(ws, "remote", "add", "origin", origin);
  git(ws, "push", "-q", "-u", "origin", "feature/greet");
  return { dir, ws, origin, config: join(dir, "config") };
}

export const fenced = (body) => `~~~~agentscript\n${body}\n~~~~`;

export const GREET_PY = 'def greet(name):\n    """Say hello."""\n    return f"Hello, {name}!"\n\n\nif __name__ == "__main__":\n    print(greet("world"))';

export async function until(what, probe, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Each imitated chat site's address, and its composer's selector. */
export const ORIGINS = { chatgpt: "https://chatgpt.com", claude: "https://claude.ai", gemini: "https://gemini.google.com", aistudio: "https://aistudio.google.com" };
export const COMPOSERS = { chatgpt: ".ProseMirror", claude: ".ProseMirror", gemini: ".ql-editor", aistudio: "textarea[aria-label=\"Enter a prompt\"]" };

/** Gemini and AI Studio, the first imitations (chat.js): [label, slug, address, composer]. */
export const FIRST_SITES = [
  ["Gemini", "gemini", "https://gemini.google.com/app", ".ql-editor"],
  ["AI Studio", "aistudio", "https://aistudio.google.com/prompts/new_chat", "textarea[aria-label=\"Enter a prompt\"]"],
];

/**
 * The eight more sites and the second imitations of the first four (tests/browser/fakechat/
 * skins.js): [label, slug, address, the composer to wait for].
 */
export const MORE_SITES = [
  ["DeepSeek", "deepseek", "https://chat.deepseek.com/", "textarea#chat-input"],
  ["Grok", "grok", "https://grok.com/", "div.tiptap"],
  ["Le Chat", "mistral", "https://chat.mistral.ai/chat", ".ProseMirror"],
  ["Perplexity", "perplexity", "https://www.perplexity.ai/", "#ask-input"],
  ["Copilot", "copilot", "https://copilot.microsoft.com/", "textarea#userInput"],
  ["Kimi", "kimi", "https://www.kimi.com/", ".chat-input-editor"],
  ["Qwen", "qwen", "https://chat.qwen.ai/", "textarea#chat-input"],
  ["OpenRouter", "openrouter", "https://openrouter.ai/chat", "textarea[data-testid=\"composer-input\"]"],
  ["ChatGPT, second imitation", "chatgpt-2", "https://chatgpt.com/?variant=2", "#prompt-textarea"],
  ["Claude, second imitation", "claude-2", "https://claude.ai/new?variant=2", ".ProseMirror"],
  ["Gemini, second imitation", "gemini-2", "https://gemini.google.com/app?variant=2", ".ql-editor"],
  ["AI Studio, second imitation", "aistudio-2", "https://aistudio.google.com/prompts/new_chat?variant=2", "textarea"],
];

/** The replies of a whole task on `name`'s site: a file (`file`), a command, a commit, done. */
export function siteTaskReplies(name, file = "src/greet.py", { long = false } = {}) {
  return [
    fenced(
      [
        "@@say", "<<<MSG", `Working on ${name}.`, "MSG>>>", "@@end",
        `@@newfile ${file}`, "<<<CONTENT", GREET_PY, "CONTENT>>>", "@@end",
        "@@runcommand", "<<<CMD", `python3 ${file}`, "CMD>>>", "@@end",
        // `long`: results of about 2,000 characters, more than a site set to paste 1,000.
        ...(long ? ["@@runcommand", "<<<CMD", "seq 1 500", "CMD>>>", "@@end"] : []),
        "@@next", "@@end", "@@eof",
      ].join("\n"),
    ),
    fenced(["@@commit", "<<<MSG", `Add the greeting module (${name})`, "MSG>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    fenced(["@@say", "<<<MSG", "Done.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
}

/**
 * The user's keyless.json declaring tests/mcp/recorder.mjs (a server on the official TypeScript
 * SDK: `steps` sends three progress notifications, `ask` asks the user a form with a required
 * name, a count of 1 to 9 defaulting to 3, and a yes/no), recording to `record`; and the
 * workspace piece `mcp-form` that offers those two tools.
 */
export function recorderPiece(w, root, record) {
  mkdirSync(join(w.config, "keyless"), { recursive: true });
  writeFileSync(
    join(w.config, "keyless", "keyless.json"),
    JSON.stringify({ Mcp: { Servers: { recorder: { Command: "node", Args: [join(root, "tests/mcp/recorder.mjs")], Env: { KEYLESS_RECORD: record } } } } }),
  );
  mkdirSync(join(w.ws, ".agent", "pieces"), { recursive: true });
  writeFileSync(
    join(w.ws, ".agent", "pieces", "mcp-form.yaml"),
    [
      "name: mcp-form",
      "description: A tool that asks the user",
      "max_movements: 3",
      "initial_movement: talk",
      "required_mcp: [recorder]",
      "movements:",
      "  - name: talk",
      "    edit: false",
      "    persona: an assistant",
      "    instruction: Ask through the server.",
      "    allowed_tools: [Read, mcp__recorder__ask, mcp__recorder__steps]",
      "    rules: []",
      "",
    ].join("\n"),
  );
}

/** An `@@mcp recorder.TOOL` block with no arguments, as lines. */
export const recorderCall = (tool) => [`@@mcp recorder.${tool}`, "<<<ARGS", "{}", "ARGS>>>", "@@end"];

/** What the content script of `page` (at `url`) finds, once it has its adapter. */
export async function inspect(browser, url) {
  const pattern = `${new URL(url).origin}/*`;
  return until(`the content script on ${url}`, async () => {
    const r = await browser.worker.evaluate(async ({ pattern, url }) => {
      const tab = (await chrome.tabs.query({ url: pattern })).find((t) => t.url === url);
      if (!tab?.id) return null;
      try {
        return await chrome.tabs.sendMessage(tab.id, { type: "inspect" });
      } catch {
        return null;
      }
    }, { pattern, url });
    return r?.site ? r : null;
  });
}

/** Every real page with its expected values (tests/realpages/expected): [site, name]. */
export function realPages() {
  const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "realpages", "expected");
  const out = [];
  if (!existsSync(dir)) return out;
  for (const site of readdirSync(dir).sort()) {
    for (const f of readdirSync(join(dir, site)).sort()) if (f.endsWith(".json")) out.push([site, f.replace(/\.json$/, "")]);
  }
  return out;
}

/** The code blocks of a rebuilt reply: each fence's language and its lines. */
export function codeBlocks(text) {
  const blocks = [];
  const lines = (text ?? "").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(.*)$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l === open[1]);
    if (end < 0) break;
    blocks.push({ lang: open[2], code: lines.slice(i + 1, end).join("\n") });
    i = end;
  }
  return blocks;
}

/** Opens the popup for `tab` and pairs it with the host by its code. */
export async function pairPopup(context, extensionId, tabId, host) {
  const popup = await context.newPage();
  await popup.setViewportSize({ width: 380, height: 720 });
  await popup.goto(`chrome-extension://${extensionId}/popup.html?tab=${tabId}`);
  await popup.locator("#pair").waitFor();
  await popup.locator("#host-url").fill(`http://127.0.0.1:${host.port}`);
  await popup.locator("#code").fill(host.code);
  await popup.locator("#pair-btn").click();
  await popup.locator("#paired").waitFor();
  await until("the connection", async () => (await popup.locator("#conn-text").textContent()).startsWith("connected"));
  return popup;
}

/** Opens the popup for `tab`, pairs with the host, sets mode and pace, and starts `task`. */
export async function pairAndStart(context, extensionId, tabId, host, { mode = "Ask", pace = "Balanced", task, piece }) {
  const popup = await pairPopup(context, extensionId, tabId, host);
  await popup.selectOption("#mode", mode);
  await popup.selectOption("#pace", pace);
  if (piece) {
    await until("the piece list", async () => (await popup.locator(`#piece option[value="${piece}"]`).count()) > 0);
    await popup.selectOption("#piece", piece);
  }
  await popup.locator("#task").fill(task);
  await popup.locator("#start").click();
  await until("the session", async () => (await popup.locator("#run").textContent()).includes("running"));
  return popup;
}

export async function tabIdOf(worker, url) {
  return worker.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id, url);
}
