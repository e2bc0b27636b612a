// The piece editor in real Chromium, against a real keyless-host serve on 127.0.0.1:0: live
// strict validation, effective tools and the movement graph from the wasm core, then save and
// delete through the API, checked on disk.
// Needs KEYLESS_HOST_BIN (cargo xtask test sets it) and /usr/bin/chromium.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, existsSync, readFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHost, launch, shots } from "./host.mjs";

test("the piece editor validates live, draws the graph, saves and deletes a workspace piece", async () => {
  const ws = mkdtempSync(join(tmpdir(), "keyless-pieces-ws-"));
  execFileSync("git", ["init", "-q", ws]);
  const host = await startHost(ws, mkdtempSync(join(tmpdir(), "keyless-pieces-cfg-")));
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    // From the dashboard's link: the token travels in the tab's sessionStorage, not the URL.
    await page.goto(host.dashboard);
    await page.locator(".conn.on").waitFor({ timeout: 10000 });
    await page.getByRole("link", { name: "Pieces" }).click();
    await page.waitForURL(/\/pieces\/$/);
    await page.locator("body[data-ready=true]").waitFor({ timeout: 15000 });
    // The workspace has no piece yet: the editor starts from a new one, which is valid.
    await page.locator("#pieces li", { hasText: "fix-loop" }).waitFor();
    assert.match(await page.locator("#verdict").textContent(), /Ready to save as "my-piece" — 2 movement\(s\)/);
    assert.equal(await page.locator("#graph svg g[data-node]").count(), 2);
    assert.match(await page.locator("#tools").textContent(), /runcommand only: git status \| git diff \* \| ls \*/);

    // A typo: strict validation, as saving checks, with the path and line; Save is off.
    const template = await page.locator("#yaml").inputValue();
    await page.fill("#yaml", template.replace("    persona: reviewer\n    instruction: Read", "    persna: reviewer\n    instruction: Read"));
    await page.locator("#verdict.bad").waitFor();
    const findings = await page.locator("#findings li").allTextContents();
    assert.ok(findings.some((f) => /KA_PIECE_UNKNOWN_KEY\s*line 8\s*movements\[0\]\.persna/.test(f)), JSON.stringify(findings));
    assert.ok(findings.some((f) => /KA_PIECE_MISSING_FIELD/.test(f)), JSON.stringify(findings));
    assert.equal(await page.locator("#save").isDisabled(), true);
    const bad = await page.locator("#gutter .bad").allTextContents();
    assert.ok(bad.includes("8"), JSON.stringify(bad));
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, "pieces-editor-error.png"), fullPage: true });

    // Fixed, but saved under another name than the one inside: refused live too.
    await page.fill("#yaml", template);
    await page.fill("#name", "mine");
    await page.locator("#verdict.bad").waitFor();
    assert.match(await page.locator("#findings").textContent(), /KA_PIECE_FORMAT.*the piece is named "my-piece" but is saved as "mine"/);
    await page.fill("#yaml", template.replace("name: my-piece", "name: mine"));
    await page.locator("#verdict.ok").waitFor();
    await page.locator("#save").click();
    await page.locator("#saved", { hasText: "Saved to" }).waitFor();
    const file = join(ws, ".agent", "pieces", "mine.yaml");
    assert.equal(readFileSync(file, "utf8"), template.replace("name: my-piece", "name: mine"));
    await page.locator("#pieces li.on", { hasText: "workspace" }).waitFor();
    // A long line wraps in the editor, and its number takes the wrapped line's height.
    const heights = await page.locator("#gutter span").evaluateAll((spans) => spans.map((s) => s.getBoundingClientRect().height));
    const longest = Math.max(...heights), shortest = Math.min(...heights);
    assert.ok(longest > shortest * 1.5, `a wrapped line's number is taller: ${heights.join(", ")}`);
    assert.equal(await page.locator("#yaml").evaluate((t) => t.scrollWidth <= t.clientWidth), true, "nothing scrolls sideways");
    await page.screenshot({ path: join(shots, "pieces-editor.png"), fullPage: true });

    // A built-in piece: its graph has the ASK sentinel its fallback leads to.
    await page.locator("#pieces li", { hasText: "fix-loop" }).click();
    await page.locator("#source", { hasText: "built-in" }).waitFor();
    await page.locator('#graph svg g[data-node="ASK"]').waitFor();
    assert.equal(await page.locator("#delete").isDisabled(), true, "built-in pieces are not deleted");

    // Delete asks twice, then the file is gone.
    await page.locator("#pieces li", { hasText: "mine" }).click();
    await page.locator("#delete:not([disabled])").waitFor();
    await page.locator("#delete").click();
    assert.equal(existsSync(file), true, "one click only arms it");
    await page.locator("#delete", { hasText: "Really delete?" }).click();
    await page.locator("#saved", { hasText: 'Deleted "mine"' }).waitFor();
    assert.equal(existsSync(file), false);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    host.child.kill();
  }
});
