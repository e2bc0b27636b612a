// Copies the dashboard's static files next to the bundle in target/www.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "target", "www");
mkdirSync(out, { recursive: true });
for (const f of ["index.html", "dashboard.css"]) {
  copyFileSync(join(here, "dashboard", f), join(out, f));
}
// The playground: a static page that is deployable as it is (target/www/playground).
mkdirSync(join(out, "playground"), { recursive: true });
for (const f of ["index.html", "playground.css"]) {
  copyFileSync(join(here, "playground", f), join(out, "playground", f));
}
copyFileSync(join(here, "..", "target", "wasm-pkg", "keyless_wasm_bg.wasm"), join(out, "playground", "keyless_wasm_bg.wasm"));
// The piece editor: it runs the wasm core too (served under /pieces/).
mkdirSync(join(out, "pieces"), { recursive: true });
for (const f of ["index.html", "pieces.css"]) {
  copyFileSync(join(here, "pieces", f), join(out, "pieces", f));
}
copyFileSync(join(here, "..", "target", "wasm-pkg", "keyless_wasm_bg.wasm"), join(out, "pieces", "keyless_wasm_bg.wasm"));
