// The TextMate grammar (editors/vscode/syntaxes) tokenized by VS Code's own engine
// (vscode-textmate with the Oniguruma wasm) on every example program: each reserved word of the
// parser gets a scope, and the example files' declarations, strings, comments and numbers get the
// scopes an editor colours.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const grammarPath = join(root, "editors", "vscode", "syntaxes", "keyless-as.tmLanguage.json");

async function grammar() {
  const wasm = readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) =>
      scope === "source.keyless-as" ? vsctm.parseRawGrammar(readFileSync(grammarPath, "utf8"), grammarPath) : null,
  });
  return registry.loadGrammar("source.keyless-as");
}

/** Every token of a text: [text, innermost scope]. */
function tokens(g, text) {
  let stack = vsctm.INITIAL;
  const out = [];
  for (const line of text.split("\n")) {
    const r = g.tokenizeLine(line, stack);
    for (const t of r.tokens) {
      out.push([line.slice(t.startIndex, t.endIndex), t.scopes[t.scopes.length - 1]]);
    }
    stack = r.ruleStack;
  }
  return out;
}

function examples(dir = join(root, "examples"), found = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) examples(p, found);
    else if (name.endsWith(".as")) found.push(p);
  }
  return found;
}

test("every reserved word of the parser has a scope", async () => {
  const g = await grammar();
  const parser = readFileSync(join(root, "core", "src", "lang", "parser.rs"), "utf8");
  const list = parser.match(/pub const RESERVED: &\[&str\] = &\[([\s\S]*?)\];/)[1];
  const words = [...list.matchAll(/"([a-z]+)"/g)].map((m) => m[1]);
  assert.ok(words.length > 20, `read ${words.length} reserved words`);
  for (const w of words) {
    const [[text, scope]] = tokens(g, `x = ${w}`).filter(([t]) => t === w);
    assert.equal(text, w);
    assert.notEqual(scope, "source.keyless-as", `"${w}" has no scope`);
  }
});

test("the example programs are coloured as an editor shows them", async () => {
  const g = await grammar();
  const files = examples();
  assert.ok(files.length >= 4, files.join(", "));
  for (const f of files) {
    const toks = tokens(g, readFileSync(f, "utf8"));
    const scoped = (text) => toks.filter(([t]) => t === text).map(([, s]) => s);
    // Every agent name after `agent` is a declaration; every `import` a keyword.
    for (const m of readFileSync(f, "utf8").matchAll(/\bagent\s+([A-Za-z_]\w*)\s*\{/g)) {
      assert.ok(scoped(m[1]).includes("entity.name.type.agent.keyless-as"), `${f}: agent ${m[1]}`);
    }
    for (const s of scoped("import")) assert.equal(s, "keyword.control.import.keyless-as", f);
    for (const s of scoped("return")) assert.equal(s, "keyword.control.keyless-as", f);
    // Nothing reads as an illegal escape in the examples.
    assert.ok(!toks.some(([, s]) => s.startsWith("invalid.")), `${f}: ${toks.filter(([, s]) => s.startsWith("invalid.")).join(" | ")}`);
  }
  const toks = tokens(g, readFileSync(join(root, "examples", "summarise.as"), "utf8"));
  const scopeOf = (text) => toks.find(([t]) => t === text)?.[1];
  assert.equal(scopeOf("Summariser"), "entity.name.type.agent.keyless-as");
  assert.equal(scopeOf("llm"), "storage.type.import-kind.keyless-as");
  assert.equal(scopeOf("Fast"), "variable.other.constant.import.keyless-as");
  assert.equal(scopeOf("generate"), "keyword.control.keyless-as");
  assert.equal(scopeOf("4k"), "constant.numeric.keyless-as");
  assert.equal(scopeOf("title"), "variable.other.property.keyless-as");
  assert.equal(scopeOf("string"), "support.type.shape.keyless-as");
  assert.ok(toks.some(([t, s]) => t.startsWith("// A file summariser") && s.startsWith("comment.line")));
  assert.ok(toks.some(([t, s]) => t === "Summariser" && s === "entity.name.type.agent.keyless-as"));
  assert.ok(toks.some(([t, s]) => t.includes("Summarise faithfully") && s === "string.quoted.double.keyless-as"));
});

/** The playground's TextMate engine (www/common/textmate.ts), bundled as the playground is. */
async function playgroundEngine() {
  const esbuild = require("esbuild");
  const out = await esbuild.build({
    entryPoints: [join(root, "www", "common", "textmate.ts")],
    bundle: true,
    format: "esm",
    target: "es2022",
    write: false,
  });
  const code = out.outputFiles[0].text;
  return import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
}

/** The innermost scope of every character of every line, as a flat list. */
function perCharacter(lines) {
  return lines.flatMap((toks) => toks.flatMap(([text, scope]) => [...text].map(() => scope)));
}

test("the playground colours with the same grammar as VS Code, character by character", async () => {
  const g = await grammar();
  const { Grammar } = await playgroundEngine();
  const mine = new Grammar(JSON.parse(readFileSync(grammarPath, "utf8")));
  const theirs = (text) => {
    let stack = vsctm.INITIAL;
    return text.split("\n").map((line) => {
      const r = g.tokenizeLine(line, stack);
      stack = r.ruleStack;
      return r.tokens.map((t) => [line.slice(t.startIndex, t.endIndex), t.scopes[t.scopes.length - 1]]);
    });
  };
  const ours = (text) => mine.tokenize(text).map((toks) => toks.map((t) => [t.text, t.scopes[t.scopes.length - 1]]));
  const tricky = [
    'x = "unterminated \\q and \\u12 and \\u00e9',
    "y = .5k + 12.25 + 4k  // a number, a comment",
    "  main agent A { model Fast\n role \"r\" }",
    "a.b.c(d)[0].e: f == g != h < 3 * 2",
    "import tool Files from \"keyless://tools/files\" # hash comment",
    "plan {steps list, done boolean}\n  title string",
    "",
    'z = "a \\"quoted\\" word" + "é🙂"',
    // Unicode words (Oniguruma's \b knows them), a CR and a line separator in a comment.
    "éfor = ñreturn + for_x + xfor + 名前if",
    "x = 1 // a comment\r",
    "y = 2 // split\u2028here",
  ];
  let chars = 0;
  for (const text of [...examples().map((f) => readFileSync(f, "utf8")), ...tricky]) {
    const a = perCharacter(ours(text));
    const b = perCharacter(theirs(text));
    assert.equal(a.length, b.length, text.slice(0, 80));
    for (let i = 0; i < a.length; i++) {
      if (a[i] !== b[i]) {
        assert.fail(`character ${i} of ${JSON.stringify(text.slice(0, 60))}: playground ${a[i]}, VS Code ${b[i]}`);
      }
    }
    chars += a.length;
  }
  assert.ok(chars > 2000, `compared ${chars} characters`);
});
