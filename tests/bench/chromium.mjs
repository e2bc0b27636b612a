// The Chromium half of tests/benches/side_by_side.rs: the same keyless-abi wasm module in V8
// (raw WebAssembly API, the reply copied into its memory once, like wasmtime), then the
// playground's keystroke-to-diagnostics time. Prints: median_us best_us keystroke_ms chars.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, extname } from "node:path";
import { launch, root, keystrokeToDiagnostics } from "../browser/host.mjs";

const [wasmPath, replyPath, expected] = process.argv.slice(2);
const wasm = readFileSync(wasmPath).toString("base64");
const reply = readFileSync(replyPath, "utf8");
const www = join(root, "target", "www");
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".wasm": "application/wasm" };
const server = createServer((req, res) => {
  const path = join(www, decodeURIComponent(new URL(req.url, "http://x").pathname).replace(/\/$/, "/index.html"));
  try {
    const body = readFileSync(path);
    res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/playground/`);
  await page.locator("body[data-ready=true]").waitFor();
  const parse = await page.evaluate(async ({ wasm, reply, expected }) => {
    const bytes = Uint8Array.from(atob(wasm), (c) => c.charCodeAt(0));
    const { instance } = await WebAssembly.instantiate(bytes, {});
    const { memory, keyless_alloc, keyless_parse } = instance.exports;
    const utf8 = new TextEncoder().encode(reply);
    const ptr = keyless_alloc(utf8.length);
    new Uint8Array(memory.buffer, ptr, utf8.length).set(utf8);
    if (String(keyless_parse(ptr, utf8.length)) !== expected) throw new Error("Chromium parses differently");
    for (let i = 0; i < 30; i++) keyless_parse(ptr, utf8.length);
    const per = [];
    for (let w = 0; w < 20; w++) {
      const t = performance.now();
      let n = 0;
      while (performance.now() - t < 50) {
        keyless_parse(ptr, utf8.length);
        n++;
      }
      per.push(((performance.now() - t) / n) * 1000);
    }
    per.sort((a, b) => a - b);
    return [per[10], per[0]];
  }, { wasm, reply, expected });
  // The playground: type into a 60,000-character reply and wait for its diagnostics.
  const keystroke = await keystrokeToDiagnostics(page, reply);
  console.log(`${parse[0]} ${parse[1]} ${keystroke.median} ${keystroke.chars}`);
} finally {
  await browser.close();
  server.close();
}
