// The pages' one sanitizer (www/common/visible.ts): text from the model, a command, a chat page or
// an MCP server shows its control, direction and invisible characters as code points, exactly as
// the core's `keyless_core::text::printable` (core/src/text.rs) writes them, and the shared DOM
// helpers (`el`, the diff view) show text through it. No browser: the TypeScript is bundled by
// esbuild in memory and imported; the DOM helpers run against a small stand-in `document`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const bundle = await build({
  stdin: {
    contents: 'export { visible, isHidden } from "./visible.ts"; export { el, setText } from "./dom.ts"; export { diffView } from "./diff-view.ts";',
    resolveDir: join(root, "www", "common"),
    loader: "ts",
  },
  bundle: true,
  format: "esm",
  write: false,
  target: "es2022",
  logLevel: "silent",
});
const { visible, isHidden, el, setText, diffView } = await import(`data:text/javascript;base64,${Buffer.from(bundle.outputFiles[0].text).toString("base64")}`);

/** Just enough of a DOM for `el` and `diffView`: elements with text, children and properties. */
class FakeElement {
  constructor(tag) {
    this.tagName = tag.toUpperCase();
    this.className = "";
    this.dataset = {};
    this.nodes = [];
  }
  get textContent() {
    return this.nodes.map((n) => (typeof n === "string" ? n : n.textContent)).join("");
  }
  set textContent(v) {
    this.nodes = v === "" ? [] : [String(v)];
  }
  get children() {
    return this.nodes.filter((n) => typeof n !== "string");
  }
  append(...nodes) {
    this.nodes.push(...nodes);
  }
  addEventListener() {}
}
globalThis.document = { createElement: (tag) => new FakeElement(tag) };

test("visible writes hidden characters as their code points", () => {
  assert.equal(visible("a\u202Eb"), "a<U+202E>b");
  assert.equal(visible("x\u001b[2Ky"), "x<U+001B>[2Ky");
  assert.equal(visible("crlf\r\nline"), "crlf\r\nline");
  assert.equal(visible("a\rb"), "a<U+000D>b");
  assert.equal(visible("end\r"), "end<U+000D>");
  assert.equal(visible("\r\r\n"), "<U+000D>\r\n");
  assert.equal(visible("👩\u200d💻"), "👩\u200d💻");
  assert.equal(visible("\u{E0041}"), "<U+E0041>");
  assert.equal(visible("nul\u0000"), "nul<U+0000>");
  assert.equal(visible("csi\u009b"), "csi<U+009B>");
  assert.equal(visible("del\u007f"), "del<U+007F>");
  assert.equal(visible("tab\tand\nnewline"), "tab\tand\nnewline");
  assert.equal(visible("zw\u200bsp\ufeff"), "zw<U+200B>sp<U+FEFF>");
  assert.equal(visible("shy\u00ad"), "shy<U+00AD>");
  assert.equal(visible("é ü 中文 ✓ ❤\ufe0f"), "é ü 中文 ✓ ❤\ufe0f");
  assert.equal(visible(""), "");
  const plain = "nothing to show";
  assert.equal(visible(plain), plain);
});

test("visible is idempotent", () => {
  for (const s of ["a\u202Eb", "x\u001b[2Ky", "crlf\r\nline", "a\rb", "👩\u200d💻", "\u{E0041}", "\u001b]52;c;ZXZpbA==\u0007", "\u2066\u2069\u200e\u061c"]) {
    const once = visible(s);
    assert.equal(visible(once), once, JSON.stringify(s));
    assert.ok(![...once].some((c) => isHidden(c.codePointAt(0)) && c !== "\r"), JSON.stringify(once));
  }
});

test("visible hides exactly the core's characters: every Cc but newline and tab, and HIDDEN_RANGES", () => {
  // The ranges as core/src/text.rs writes them (the generated core.ts the pages import is checked
  // against them here, code point by code point).
  const rust = readFileSync(join(root, "core", "src", "text.rs"), "utf8");
  const block = /pub const HIDDEN_RANGES[^=]*=\s*&\[([\s\S]*?)\];/.exec(rust);
  assert.ok(block, "HIDDEN_RANGES in core/src/text.rs");
  const ranges = [...block[1].matchAll(/\(\s*0x([0-9a-fA-F]+)\s*,\s*0x([0-9a-fA-F]+)\s*\)/g)].map((m) => [parseInt(m[1], 16), parseInt(m[2], 16)]);
  assert.ok(ranges.length > 0);
  const cc = /^\p{Cc}$/u;
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    const hidden = (cc.test(c) && c !== "\n" && c !== "\t") || ranges.some(([a, b]) => cp >= a && cp <= b);
    if (isHidden(cp) !== hidden) assert.fail(`U+${cp.toString(16).toUpperCase()}: isHidden ${isHidden(cp)}, core ${hidden}`);
    if (hidden) assert.equal(visible(`a${c}b`), `a<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>b`);
  }
});

test("el and setText show text through visible", () => {
  assert.equal(el("div", "say", "rm -rf /\u202E#").textContent, "rm -rf /<U+202E>#");
  assert.equal(el("span", "", "ok").textContent, "ok");
  const e = el("div");
  setText(e, "\u001b[2Jcleared");
  assert.equal(e.textContent, "<U+001B>[2Jcleared");
});

test("a diff's lines show escape sequences and direction overrides as code points", () => {
  const d = {
    path: "src/\u202Etxt.sh",
    from: null,
    change: "modified",
    added: 4,
    removed: 0,
    note: null,
    text: "--- a/src/x\n+++ b/src/x\n@@ -1 +1,5 @@\n ctx\n+safe\u001b[1A\u001b[2K\n+\u001b]52;c;ZXZpbA==\u0007\n+a\u202Eb\n+crlf\r\n",
  };
  const box = diffView(d, true);
  const [summary, pre] = box.children;
  assert.equal(summary.children[0].textContent, "src/<U+202E>txt.sh");
  const lines = pre.children.map((s) => [s.className, s.textContent]);
  assert.deepEqual(lines, [
    ["d-head", "--- a/src/x\n"],
    ["d-head", "+++ b/src/x\n"],
    ["d-hunk", "@@ -1 +1,5 @@\n"],
    ["d-ctx", " ctx\n"],
    ["d-add", "+safe<U+001B>[1A<U+001B>[2K\n"],
    ["d-add", "+<U+001B>]52;c;ZXZpbA==<U+0007>\n"],
    ["d-add", "+a<U+202E>b\n"],
    ["d-add", "+crlf\r\n"],
  ]);
});
