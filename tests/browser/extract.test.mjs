// extension/src/extract.ts against saved message DOMs, like refined-github's selector tests: each
// extension/fixtures/extract/<site>-<case>.html is an assistant message as the site renders it; the
// text expected from it sits next to it in <case>.txt (and <case>.streaming.txt for the text while
// the site still streams). The site's own adapter (core/data/sites.json as the wasm core resolves
// it, with the common ignore list) finds the message and its content with the same alternatives
// code, and says what to ignore, exactly as the content script does. Runs in Debian's Chromium.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { launch, root } from "./host.mjs";
import { initSync, loadSites } from "../../target/wasm-pkg/keyless_wasm.js";

const dir = join(root, "extension", "fixtures", "extract");
initSync({ module: readFileSync(join(root, "target", "wasm-pkg", "keyless_wasm_bg.wasm")) });
const sites = Object.fromEntries(loadSites(undefined).map((s) => [s.id, s]));

test("the reply text rebuilt from each saved message DOM is the expected text", async () => {
  const bundle = await build({
    stdin: {
      contents: 'export { contentIn, readReply } from "./extract.ts"; export { match, matchAll } from "./select.ts";',
      resolveDir: join(root, "extension", "src"),
      loader: "ts",
    },
    bundle: true,
    format: "iife",
    globalName: "KeylessExtract",
    write: false,
    target: "es2022",
  });
  const script = bundle.outputFiles[0].text;
  const cases = readdirSync(dir).filter((f) => f.endsWith(".html")).sort();
  assert.ok(cases.length >= 6, `fixtures in ${dir}`);
  const browser = await launch();
  try {
    const page = await browser.newPage();
    for (const file of cases) {
      const name = file.replace(/\.html$/, "");
      const siteId = name.split("-")[0];
      const site = sites[siteId];
      assert.ok(site, `${file}: the name starts with a site id (${Object.keys(sites).join(", ")})`);
      const expected = join(dir, `${name}.txt`);
      assert.ok(existsSync(expected), `${file} has no ${name}.txt`);
      await page.setContent(`<!doctype html><html><body>${readFileSync(join(dir, file), "utf8")}</body></html>`);
      await page.addScriptTag({ content: script });
      const modes = [[false, expected]];
      const streamingFile = join(dir, `${name}.streaming.txt`);
      if (existsSync(streamingFile)) modes.push([true, streamingFile]);
      for (const [streaming, want] of modes) {
        const got = await page.evaluate(
          ({ sel, streaming }) => {
            const x = globalThis.KeylessExtract;
            const messages = x.matchAll(sel.assistant_message);
            const message = messages[messages.length - 1];
            if (!message) return { error: `no element matches ${sel.assistant_message.join(" | ")}` };
            const content = x.contentIn(message, sel.assistant_content, sel.ignore);
            const r = x.readReply(content, [...sel.ignore, ...sel.user_message, ...sel.streaming], streaming);
            return { text: r.incomplete ? `INCOMPLETE\n${r.text}` : r.text };
          },
          { sel: site.selectors, streaming },
        );
        assert.equal(got.error, undefined, `${file}: ${got.error}`);
        assert.equal(got.text, readFileSync(want, "utf8").replace(/\n$/, ""), `${file} (streaming: ${streaming})`);
      }
    }
  } finally {
    await browser.close();
  }
});
