// Builds the unpacked extension into target/extension: bundles the worker (ES module), the
// content script (one classic script), the popup and the options page, and copies the manifest,
// the static pages and the wasm module. Load target/extension with "Load unpacked".
//
// The chat sites' addresses come from the adapters (core/data/sites.json): each host and its
// www. name get the content script, the page script (page.ts, in the page's world, to read code
// editors) and a host permission, and nothing broader.
//
// The same files make target/extension-firefox, with the manifest Firefox reads (firefoxManifest):
// nothing else differs.
import { build } from "esbuild";
import { cpSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { firefoxManifest } from "./firefox.mjs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "target", "extension");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const common = { bundle: true, target: "chrome116", logLevel: "warning", legalComments: "none" };
await Promise.all([
  build({ ...common, entryPoints: [join(here, "src", "worker.ts")], format: "esm", outfile: join(out, "worker.js") }),
  build({ ...common, entryPoints: [join(here, "src", "content.ts")], format: "iife", outfile: join(out, "content.js") }),
  build({ ...common, entryPoints: [join(here, "src", "page.ts")], format: "iife", outfile: join(out, "page.js") }),
  build({ ...common, entryPoints: [join(here, "src", "popup.ts")], format: "esm", outfile: join(out, "popup.js") }),
  build({ ...common, entryPoints: [join(here, "src", "options.ts")], format: "esm", outfile: join(out, "options.js") }),
]);
const sites = JSON.parse(readFileSync(join(here, "..", "core", "data", "sites.json"), "utf8"));
const chats = [...new Set(Object.values(sites).flatMap((s) => s.hosts.flatMap((h) => (h.split(".").length === 2 ? [h, `www.${h}`] : [h]))))].map((h) => `https://${h}/*`);
const manifest = JSON.parse(readFileSync(join(here, "manifest.json"), "utf8"));
manifest.host_permissions = [...manifest.host_permissions, ...chats];
for (const cs of manifest.content_scripts) cs.matches = chats;
writeFileSync(join(out, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
for (const f of readdirSync(join(here, "static"))) copyFileSync(join(here, "static", f), join(out, f));
copyFileSync(join(here, "..", "target", "wasm-pkg", "keyless_wasm_bg.wasm"), join(out, "keyless_wasm_bg.wasm"));
console.log(`extension built: ${out}`);

const firefox = join(here, "..", "target", "extension-firefox");
rmSync(firefox, { recursive: true, force: true });
cpSync(out, firefox, { recursive: true });
writeFileSync(join(firefox, "manifest.json"), `${JSON.stringify(firefoxManifest(manifest), null, 2)}\n`);
console.log(`Firefox extension built: ${firefox}`);
