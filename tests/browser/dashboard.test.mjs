// The dashboard in real Chromium, against a real keyless-host serve on 127.0.0.1:0.
// Needs KEYLESS_HOST_BIN (cargo xtask test sets it) and /usr/bin/chromium.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, existsSync, readFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHost, launch, shots } from "./host.mjs";

async function api(host, path, body) {
  const res = await fetch(`http://127.0.0.1:${host.port}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${host.token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

test("the dashboard shows batches, approves a confirmation, and looks right", async () => {
  const ws = mkdtempSync(join(tmpdir(), "keyless-dash-ws-"));
  execFileSync("git", ["init", "-q", ws]);
  const host = await startHost(ws, mkdtempSync(join(tmpdir(), "keyless-dash-cfg-")));
  assert.match(host.dashboard, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
  const browser = await launch();
  try {
    const { json: s } = await api(host, "/v1/sessions", {});
    const reply1 = "@@say\n<<<MSG\nAdding the greeting module.\nMSG>>>\n@@end\n@@newfile src/greet.rs\n<<<CONTENT\npub fn hello() -> &'static str {\n    \"hello\"\n}\nCONTENT>>>\n@@end\n@@runcommand\n<<<CMD\nls -la src\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n";
    const r1 = await api(host, `/v1/sessions/${s.session}/replies`, { reply: reply1 });
    assert.equal(r1.status, 200);
    assert.equal(r1.json.status, "done");
    // A Risky command waits for the user: submit without waiting.
    const pending = api(host, `/v1/sessions/${s.session}/replies`, { reply: "@@runcommand\n<<<CMD\necho built > build.log && cat build.log\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n" });

    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    await page.goto(host.dashboard);
    // The token leaves the address bar.
    assert.equal(new URL(page.url()).search, "");
    await page.getByText("Approve").waitFor({ timeout: 15000 });
    await page.getByText("echo built > build.log && cat build.log").first().waitFor();
    await page.locator(".conn.on").waitFor({ timeout: 10000 });
    await page.locator(".batch .head", { hasText: "Turn 1 · Batch 1" }).click();
    await page.locator(".results").first().waitFor();
    // Each command's outcome comes from its stored result, not from the results text.
    const rows = page.locator(".batch .cmds tr");
    await rows.first().waitFor();
    const cells = await rows.evaluateAll((trs) => trs.map((tr) => [tr.querySelector(".c")?.textContent, tr.querySelector("td.o .chip")?.textContent ?? "", tr.querySelector("td.o .sub")?.textContent ?? ""]));
    assert.deepEqual(cells.map(([c, chip]) => [c, chip]), [["say", ""], ["newfile", "ok"], ["runcommand", "ok"], ["next", ""]], JSON.stringify(cells));
    assert.match(cells[2][2], /^exit 0 · \d+ ms$/, JSON.stringify(cells));
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, "dashboard-pending.png"), fullPage: true });

    await page.getByText("Approve").click();
    const r2 = await pending;
    assert.equal(r2.json.status, "done");
    assert.match(r2.json.text, /status: ok \| exit code: 0/);
    assert.equal(readFileSync(join(ws, "build.log"), "utf8"), "built\n");
    await page.locator(".batch .head", { hasText: "Turn 1 · Batch 2" }).waitFor({ timeout: 10000 });
    await page.getByText("Nothing is waiting for you.").waitFor();
    await page.locator(".audit td", { hasText: "src/greet.rs" }).first().waitFor();
    await page.screenshot({ path: join(shots, "dashboard.png"), fullPage: true });
    assert.deepEqual(errors, []);
    assert.ok(existsSync(join(ws, "src", "greet.rs")));
  } finally {
    await browser.close();
    host.child.kill();
  }
});
