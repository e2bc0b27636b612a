// A local imitation of a chat site, served over HTTPS (self-signed) so Chromium can reach it as
// https://chatgpt.com or https://claude.ai through --host-resolver-rules. The page follows the
// site's DOM (see SITES.md), streams each reply in small chunks with a stop button, has a
// ProseMirror-like composer, and is served under a strict Content-Security-Policy (no inline code,
// no 'wasm-unsafe-eval'). A scripted "model" answers each message with the next reply of a list.
import { createServer } from "node:https";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, extname, join, normalize } from "node:path";
import { buildSync } from "esbuild";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const TITLES = {
  chatgpt: "ChatGPT", claude: "Claude", gemini: "Gemini", aistudio: "Google AI Studio", deepseek: "DeepSeek", grok: "Grok",
  mistral: "Le Chat - Mistral AI", perplexity: "Perplexity", copilot: "Microsoft Copilot", kimi: "Kimi", qwen: "Qwen Chat", openrouter: "OpenRouter",
};
/** Each imitated site's host names (the adapters' hosts, with the www. the real sites use). */
export const SITE_HOSTS = {
  chatgpt: ["chatgpt.com", "chat.openai.com"],
  claude: ["claude.ai"],
  gemini: ["gemini.google.com"],
  aistudio: ["aistudio.google.com"],
  deepseek: ["chat.deepseek.com"],
  grok: ["grok.com"],
  mistral: ["chat.mistral.ai"],
  perplexity: ["www.perplexity.ai"],
  copilot: ["copilot.microsoft.com"],
  kimi: ["www.kimi.com"],
  qwen: ["chat.qwen.ai"],
  openrouter: ["openrouter.ai"],
};
export const ALL_HOSTS = Object.values(SITE_HOSTS).flat();
/** The sites chat.js builds itself; the others are skins (skins.js). */
const OWN = new Set(["chatgpt", "claude", "gemini", "aistudio"]);
const siteOf = (host) => Object.keys(SITE_HOSTS).find((k) => SITE_HOSTS[k].includes(host)) ?? "chatgpt";
export const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

function certificate() {
  const dir = mkdtempSync(join(tmpdir(), "keyless-fakechat-cert-"));
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=chatgpt.com",
    "-addext", `subjectAltName=${[...ALL_HOSTS, "localhost"].map((h) => `DNS:${h}`).join(",")}`,
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
  ], { stdio: "ignore" });
  return { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
}

// The real code editors a site's code blocks may be (Qwen's, see skins.js), served from the npm
// packages: the reader must get their whole text while they keep only what is in view.
const modules = join(here, "..", "..", "..", "node_modules");
/** The real-page suite's pages (tests/realpages/pages). */
export const REAL_PAGES = join(here, "..", "..", "realpages", "pages");
/** More folders `/__real/` serves from after REAL_PAGES (a test's fresh captures). */
export const REAL_ROOTS = [];
const VENDOR = {
  "/vendor/monaco/": join(modules, "monaco-editor", "min"),
  "/vendor/ace/": join(modules, "ace-builds"),
  "/vendor/cm5/": join(modules, "codemirror", "lib"),
};
const TYPES = { ".js": "text/javascript", ".css": "text/css", ".ttf": "font/ttf", ".svg": "image/svg+xml", ".json": "application/json" };
/** CodeMirror 6 as one script (it ships as ES modules with bare imports). */
function codemirror6() {
  const out = buildSync({
    stdin: { contents: 'import { EditorView } from "@codemirror/view"; import { EditorState } from "@codemirror/state"; window.CM6 = { EditorView, EditorState };', resolveDir: here },
    bundle: true, format: "iife", minify: true, write: false, logLevel: "silent",
  });
  return Buffer.from(out.outputFiles[0].contents);
}
/** The page's scripts and styles for `?editor=` on a site whose code blocks are editors. */
function editorAssets(editor) {
  switch (editor) {
    case "monaco":
    case "monaco-bundled":
      return '<link rel="stylesheet" href="/vendor/monaco/vs/editor/editor.main.css"><script src="/vendor/monaco/vs/loader.js"></script>';
    case "ace":
      return '<link rel="stylesheet" href="/vendor/ace/css/ace.css"><script src="/vendor/ace/src-min-noconflict/ace.js"></script>';
    case "cm5":
      return '<link rel="stylesheet" href="/vendor/cm5/codemirror.css"><script src="/vendor/cm5/codemirror.js"></script>';
    case "hidden":
      return "";
    default:
      return '<script src="/vendor/cm6.js"></script>';
  }
}

/**
 * Starts the fake chat site on 127.0.0.1:0.
 * `replies`: what the model answers, in order; each is a string or {text, chunk, delayMs, banner,
 * gate}
 * (`banner`: a notice the site shows under the reply, such as its "conversation is full" text).
 * Resolves with {port, received, setReplies, close}; `received` lists every message the model got:
 * {site, text, attachments: [{name, text}], at} (`at`: when it arrived, Unix ms).
 */
export function startFakeChat(replies = []) {
  const state = { replies: [...replies], next: 0, received: [] };
  const files = {
    "/chat.js": ["text/javascript", readFileSync(join(here, "chat.js"))],
    "/chat.css": ["text/css", readFileSync(join(here, "chat.css"))],
    "/skins.js": ["text/javascript", readFileSync(join(here, "skins.js"))],
    "/vendor/cm6.js": ["text/javascript", codemirror6()],
  };
  const server = createServer(certificate(), (req, res) => {
    const host = (req.headers.host ?? "").split(":")[0];
    const site = siteOf(host);
    const url = new URL(req.url ?? "/", "https://x");
    const headers = { "content-security-policy": CSP, "cache-control": "no-store" };
    if (req.method === "POST" && url.pathname === "/backend/conversation") {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const msg = JSON.parse(body);
        state.received.push({ site, text: msg.text, attachments: msg.attachments ?? [], at: Date.now() });
        const r = state.replies[state.next++] ?? "I have nothing more to say.";
        const reply = typeof r === "string" ? { text: r } : r;
        // `gate`: a promise the test resolves when this reply may start (so that what the page
        // shows about the previous reply can be checked before it changes).
        Promise.resolve(reply.gate).then(() => {
          res.writeHead(200, { ...headers, "content-type": "application/json" });
          res.end(JSON.stringify({ text: reply.text, chunk: reply.chunk ?? 24, delayMs: reply.delayMs ?? 25, banner: reply.banner ?? null }));
        });
      });
      return;
    }
    // A page the real site rendered (tests/realpages/pages, or a capture a user sent), at the
    // site's own host, with its scripts blocked: only the extension runs on it.
    if (url.pathname.startsWith("/__real/")) {
      const rel = normalize(decodeURIComponent(url.pathname.slice("/__real/".length)));
      try {
        if (rel.startsWith("..") || !rel.endsWith(".html")) throw new Error("outside");
        const root = [REAL_PAGES, ...REAL_ROOTS].find((r) => existsSync(join(r, rel)));
        if (!root) throw new Error("not found");
        const data = readFileSync(join(root, rel));
        res.writeHead(200, {
          "content-security-policy": "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:",
          "cache-control": "no-store",
          "content-type": "text/html; charset=utf-8",
        });
        res.end(data);
      } catch {
        res.writeHead(404, headers);
        res.end("not found");
      }
      return;
    }
    if (files[url.pathname]) {
      const [type, data] = files[url.pathname];
      res.writeHead(200, { ...headers, "content-type": type });
      res.end(data);
      return;
    }
    const vendor = Object.keys(VENDOR).find((prefix) => url.pathname.startsWith(prefix));
    if (vendor) {
      const rel = normalize(decodeURIComponent(url.pathname.slice(vendor.length)));
      try {
        if (rel.startsWith("..")) throw new Error("outside");
        const data = readFileSync(join(VENDOR[vendor], rel));
        res.writeHead(200, { ...headers, "content-type": TYPES[extname(rel)] ?? "application/octet-stream" });
        res.end(data);
      } catch {
        res.writeHead(404, headers);
        res.end("not found");
      }
      return;
    }
    if (url.pathname === "/" || url.pathname.startsWith("/c/") || url.pathname.startsWith("/chat") || url.pathname.startsWith("/app") || url.pathname.startsWith("/prompts") || url.pathname.startsWith("/a/") || url.pathname === "/new") {
      // ?variant=2: the second imitation of one of the first four sites.
      // ?variant=2026-09: ChatGPT's layout since September 2026.
      const asked = url.searchParams.get("variant");
      const variant = (asked === "2" && OWN.has(site)) || (asked === "2026-09" && site === "chatgpt") ? asked : "";
      const skin = variant ? `${site}-${variant}` : OWN.has(site) ? "" : site;
      res.writeHead(200, { ...headers, "content-type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><html lang="en" data-site="${site}" data-skin="${skin}"><head><meta charset="utf-8"><title>${TITLES[site]}</title><link rel="stylesheet" href="/chat.css">${site === "qwen" ? editorAssets(url.searchParams.get("editor")) : ""}</head><body class="${site}${skin ? " skin" : ""}"><div id="root"></div><script src="/skins.js"></script><script src="/chat.js"></script></body></html>`);
      return;
    }
    res.writeHead(404, headers);
    res.end("not found");
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: server.address().port,
        received: state.received,
        setReplies(list) {
          state.replies = [...list];
          state.next = 0;
        },
        close: () => new Promise((r) => server.close(r)),
      });
    });
  });
}
