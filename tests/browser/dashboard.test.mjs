// The dashboard in real Chromium, against a real keyless-host serve on 127.0.0.1:0.
// Needs KEYLESS_HOST_BIN (cargo xtask test sets it) and /usr/bin/chromium.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, existsSync, readFileSync, mkdirSync, writeFileSync } from "node:fs";
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
    const rows = page.locator(".batch .cmds tr:not(.diffs)");
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
    // Decline with a reason: the model reads why, as the command's result.
    const declined = api(host, `/v1/sessions/${s.session}/replies`, { reply: "@@runcommand\n<<<CMD\necho again > build.log\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n" });
    await page.getByText("Approve").waitFor({ timeout: 15000 });
    await page.locator("input.why-not").fill("build.log is fine as it is");
    await page.getByRole("button", { name: "Decline" }).click();
    const r3 = await declined;
    assert.match(r3.json.text, /KA_COMMAND_DECLINED/);
    assert.match(r3.json.text, /and says: build\.log is fine as it is/);
    assert.equal(readFileSync(join(ws, "build.log"), "utf8"), "built\n");
    assert.deepEqual(errors, []);
    assert.ok(existsSync(join(ws, "src", "greet.rs")));
  } finally {
    await browser.close();
    host.child.kill();
  }
});

test("at 1280 px the dashboard tells the truth: a failed batch is red, diffs, the session's whole diff, undo by the rules", async () => {
  const ws = mkdtempSync(join(tmpdir(), "keyless-dash-review-"));
  execFileSync("git", ["init", "-q", "-b", "feature", ws]);
  execFileSync("git", ["-C", ws, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"]);
  writeFileSync(join(ws, "app.py"), "def greet():\n    return 'hi'\n");
  execFileSync("git", ["-C", ws, "add", "-A"]);
  execFileSync("git", ["-C", ws, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "app"]);
  const host = await startHost(ws, mkdtempSync(join(tmpdir(), "keyless-dash-review-cfg-")));
  const browser = await launch();
  try {
    const { json: s } = await api(host, "/v1/sessions", { task: "Make greet() say hello to a name, and keep the tests green" });
    const edit = "@@editfile app.py\n<<<FIND\ndef greet():\n    return 'hi'\nFIND>>>\n<<<REPLACE\ndef greet(name):\n    return f'hello {name}'\nREPLACE>>>\n@@end\n@@newfile test_app.py\n<<<CONTENT\nfrom app import greet\n\ndef test_greet():\n    assert greet('ana') == 'hello ana'\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n";
    const r1 = await api(host, `/v1/sessions/${s.session}/replies`, { reply: edit });
    assert.equal(r1.json.outcome, "ok");
    assert.equal(r1.json.diff.length, 2);
    const long = `ls ${"a-very-long-file-name-that-does-not-exist-".repeat(8)}x`;
    const r2 = await api(host, `/v1/sessions/${s.session}/replies`, { reply: `@@runcommand\n<<<CMD\n${long}\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n` });
    assert.equal(r2.json.status, "done");
    assert.equal(r2.json.outcome, "failed", "a batch whose command failed is not ok");

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("dialog", (d) => void d.accept());
    await page.goto(host.dashboard);
    // The session says what it is: its task, branch and state in words.
    await page.locator(".list .task", { hasText: "Make greet() say hello" }).waitFor({ timeout: 15000 });
    await page.locator(".list .state", { hasText: "waiting for the model's next reply" }).waitFor();
    assert.match(await page.locator(".list li.sel .sub").textContent(), /on feature/);
    const failed = page.locator(".batch.o-failed .head .chip.failed");
    await failed.waitFor();
    assert.match(await failed.textContent(), /1 failed/);
    assert.equal(await failed.evaluate((e) => getComputedStyle(e).color), "rgb(207, 34, 46)");
    await page.locator(".batch.o-ok .head .chip.ok", { hasText: "2 ok" }).waitFor();
    // The failed batch's long target wraps; nothing scrolls sideways.
    await page.locator(".batch .head", { hasText: "Turn 1 · Batch 2" }).click();
    await page.locator(".cmds td.t", { hasText: "a-very-long-file-name" }).waitFor();
    // Batch 1's diffs, under their commands.
    await page.locator(".batch .head", { hasText: "Turn 1 · Batch 1" }).click();
    const diff = page.locator(".batch .cmds tr.diffs details.diff").first();
    await diff.waitFor();
    assert.match(await diff.locator("summary").textContent(), /app\.py\+2 −2/);
    await page.locator(".d-add", { hasText: "+    return f'hello {name}'" }).first().waitFor();
    // The session's whole diff against the commit it started from.
    await page.locator("details.whole > summary").click();
    await page.locator(".session-diff .sub", { hasText: "Since the session started: 2 files changed, +6 −2" }).waitFor();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    const wide = await page.evaluate(() => [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 1281).map((e) => `${e.tagName}.${e.className}`).slice(0, 8).join(", "));
    assert.ok(width <= 1280, `the page scrolls sideways: ${width} px (${wide})`);
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, "dashboard-review.png"), fullPage: true });
    // Undo: only the batch that changed files offers it; once undone, it says so.
    assert.equal(await page.locator(".batch.o-failed .head button", { hasText: "Undo" }).count(), 0);
    await page.locator(".batch.o-ok .head button", { hasText: "Undo" }).click();
    await page.locator(".batch.o-ok .head .chip", { hasText: "undone" }).waitFor({ timeout: 10000 });
    assert.equal(await page.locator(".batch.o-ok .head button", { hasText: "Undo" }).count(), 0);
    assert.equal(readFileSync(join(ws, "app.py"), "utf8"), "def greet():\n    return 'hi'\n");
    assert.ok(!existsSync(join(ws, "test_app.py")));
    // The API follows the same rule: undoing it again is refused with the reason.
    const again = await api(host, `/v1/batches/${r1.json.batch_id}/undo`, {});
    assert.equal(again.status, 409);
    assert.match(JSON.stringify(again.json), /already undone/);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    host.child.kill();
  }
});

test("the dashboard shows .as runs as a nested, collapsible trace", async () => {
  const ws = mkdtempSync(join(tmpdir(), "keyless-dash-as-"));
  execFileSync("git", ["init", "-q", ws]);
  mkdirSync(join(ws, "src"), { recursive: true });
  writeFileSync(join(ws, "src", "lib.rs"), "// TODO: wire the health check\n");
  writeFileSync(
    join(ws, "plan.as"),
    `import llm Fast from "openai://gpt-4.1-mini"
import tool Grep from "sh://grep"
import memory Notes from "file://./.agentscript/notes.jsonl"

main agent Planner {
    model Fast
    role "Planner"

    main func(input {
        goal string
    }) {
        todos = Grep.run({ path: "src", pattern: "TODO" })
        use input.goal
        use todos.matches < 500
        plan = generate({ input: "Plan the work in steps.", attempts: 2 }) {
            return {
                steps list[string]
            }
        }
        Notes.add({ kind: "plan", steps: plan.steps })
        return { steps: plan.steps, todos: todos.matches.length }
    }
}
`,
  );
  const host = await startHost(ws, mkdtempSync(join(tmpdir(), "keyless-dash-as-cfg-")), "auto");
  const browser = await launch();
  try {
    // The event stream carries the run's trace as it happens.
    const events = [];
    const ctl = new AbortController();
    const stream = fetch(`http://127.0.0.1:${host.port}/v1/events?token=${host.token}`, { signal: ctl.signal }).then(async (res) => {
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // A chunk may end inside a line: only whole lines are read.
        buf += dec.decode(value, { stream: true });
        const lines = buf.split("\n");
        buf = lines.pop() ?? "";
        for (const line of lines) if (line.startsWith("data: ")) events.push(JSON.parse(line.slice(6)));
      }
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    const res = await fetch(`http://127.0.0.1:${host.port}/v1/as/runs`, {
      method: "POST",
      headers: { Authorization: `Bearer ${host.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ file: "plan.as", input: { goal: "add a health check" }, mock: ["not json", "{\"steps\": [\"add the route\", \"add a test\"]}"] }),
    });
    assert.equal(res.status, 202);
    const { run } = await res.json();
    // Listed at once, running or already done.
    const listed = await api(host, "/v1/as/runs");
    assert.ok(listed.json.some((r) => r.run === run), JSON.stringify(listed.json));
    let detail;
    for (let i = 0; i < 100; i++) {
      detail = await api(host, `/v1/as/runs/${run}`);
      assert.equal(detail.status, 200, JSON.stringify(detail.json));
      if (detail.json.state !== "running") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(detail.json.state, "done", JSON.stringify(detail.json));
    assert.deepEqual(detail.json.value, { steps: ["add the route", "add a test"], todos: 1 });
    // The stream delivers on its own schedule: wait for the run's end there too.
    for (let i = 0; i < 100 && !events.some((e) => e.type === "as_run" && e.run === run && e.state === "done"); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const kinds = events.filter((e) => e.type === "as_trace" && e.run === run).map((e) => e.event.event);
    assert.deepEqual(kinds, ["tool", "generate", "memory", "call"]);
    ctl.abort();
    await stream;
    // A run from the command line is kept for the dashboard too.
    execFileSync(process.env.KEYLESS_HOST_BIN, ["as", "run", "plan.as", "--input", "{\"goal\": \"docs\"}", "--mock", writeMock(ws, ["{\"steps\": [\"write docs\"]}"])], { cwd: ws });

    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    await page.goto(host.dashboard);
    await page.locator("#runs li").nth(1).waitFor({ timeout: 10000 });
    assert.equal(await page.locator("#runs-count").textContent(), "2");
    await page.locator(`#runs li[data-run="${run}"]`).click();
    await page.locator(".trace details.call > summary", { hasText: "Planner.main" }).waitFor();
    const gen = page.locator(".trace details.generate").first();
    assert.match(await gen.locator("summary").textContent(), /openai:\/\/gpt-4\.1-mini2 attempt\(s\).*fits/);
    await gen.locator("summary").click();
    await gen.getByText("the answer holds no JSON object", { exact: true }).waitFor();
    assert.match(await gen.locator("pre").first().textContent(), /^Role: Planner\n\nContext:\n\[input\.goal\]\nadd a health check/);
    await page.locator(".trace details.tool > summary", { hasText: "Grep.run" }).click();
    await page.locator(".trace details.memory > summary", { hasText: "Notes.add" }).waitFor();
    await page.screenshot({ path: join(shots, "dashboard-as-run.png"), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    host.child.kill();
  }
});

function writeMock(dir, answers) {
  const p = join(dir, "answers.json");
  writeFileSync(p, JSON.stringify(answers));
  return p;
}
