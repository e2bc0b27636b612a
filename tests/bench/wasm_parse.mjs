// Parse throughput of the wasm build through its JS adapter (Node's V8), on the same maximal
// reply as tests/benches/parse.rs. Run by cargo xtask bench after the wasm build.
import { readFileSync } from "node:fs";
import { initSync, checkReply, parsePartial } from "../../target/wasm-pkg/keyless_wasm.js";
initSync({ module: readFileSync(new URL("../../target/wasm-pkg/keyless_wasm_bg.wasm", import.meta.url)) });
// The same maximal reply, written by the native parse bench (tests/benches/parse.rs) just before.
const reply = readFileSync(new URL("../../target/bench-reply.txt", import.meta.url), "utf8");
const settings = { limits: { MaxCommandsPerResponse: 100 } };
const ok = checkReply(reply, settings);
if (!ok.ok) throw new Error(JSON.stringify(ok.diagnostics));
const bytes = Buffer.byteLength(reply);
function time(fn) {
  for (let i = 0; i < 50; i++) fn();
  const samples = [];
  for (let w = 0; w < 20; w++) { const t = performance.now(); let n = 0; while (performance.now() - t < 50) { fn(); n++; } samples.push((performance.now() - t) / n); }
  samples.sort((a, b) => a - b);
  return [samples[10], samples[0]];
}
const [m1, b1] = time(() => checkReply(reply, settings));
const [m2, b2] = time(() => parsePartial(reply, settings));
console.log(`reply ${reply.length} chars; wasm checkReply (parse+plan+JS objects): median ${(m1*1000).toFixed(0)} µs (${(bytes/m1/1e6).toFixed(2)} GB/s), best ${(b1*1000).toFixed(0)} µs`);
console.log(`wasm parsePartial: median ${(m2*1000).toFixed(0)} µs (${(bytes/m2/1e6).toFixed(2)} GB/s), best ${(b2*1000).toFixed(0)} µs`);
