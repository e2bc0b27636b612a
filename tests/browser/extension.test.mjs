// The Chrome extension end to end: Debian's Chromium with the built extension, a fake chat site
// (ChatGPT-like and Claude-like DOMs, streamed replies, a ProseMirror-like composer, a strict CSP)
// answered by a scripted model, and a real `keyless-host serve` on a temp git workspace with a
// bare origin. Nobody touches the keyboard after Start, except to approve in the overlay.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHost, launchWithExtension, shots, root } from "./host.mjs";
import { startFakeChat } from "./fakechat/server.mjs";
import { COMPOSERS, fenced, git, GREET_PY, ORIGINS, pairAndStart, recorderCall, recorderPiece, tabIdOf, until, workspace } from "./scenario.mjs";

/**
 * A workspace, the fake chat with `replies`, a host in `mode`, and Chromium with the extension on
 * the `site` page (chatgpt, claude, gemini or aistudio). Runs `body`, then tears everything down.
 */
async function withChat(site, replies, mode, body, prepare = () => undefined) {
  const w = workspace();
  prepare(w);
  const chat = await startFakeChat(replies);
  const host = await startHost(w.ws, w.config, mode);
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  try {
    const page = await context.newPage();
    const origin = ORIGINS[site];
    await page.goto(`${origin}/`);
    await page.locator(COMPOSERS[site]).waitFor();
    const tabId = await until("the chat tab", () => tabIdOf(worker, `${origin}/*`));
    await body({ w, chat, host, context, worker, extensionId, page, tabId });
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
}

const overlay = (page) => page.locator("keyless-overlay");
const pill = (page) => overlay(page).locator(".pill");

test("a task runs end to end on a ChatGPT-like page", async () => {
  const w = workspace();
  const replies = [
    // 1: files and a command
    fenced(
      [
        "@@say", "<<<MSG", "Creating the greeting module.", "MSG>>>", "@@end",
        "@@newfile src/greet.py", "<<<CONTENT", GREET_PY, "CONTENT>>>", "@@end",
        "@@editfile README.md", "<<<FIND", "A demo project.", "FIND>>>", "<<<REPLACE", "A demo project.", "", "Run `python3 src/greet.py` to be greeted.", "REPLACE>>>", "@@end",
        "@@runcommand", "<<<CMD", "wc -l src/greet.py", "CMD>>>", "@@end",
        "@@next", "@@end", "@@eof",
      ].join("\n"),
    ),
    // 2: a format error (an unknown command on line 2 of the reply)
    fenced(["@@createfile notes.txt", "<<<CONTENT", "x", "CONTENT>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    // 3: a command Ask mode must confirm (it writes a file through a redirection)
    fenced(["@@runcommand", "<<<CMD", "echo built > build.txt", "CMD>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    // 4: commit and push
    fenced(["@@commit", "<<<MSG", "Add the greeting module", "MSG>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    // 5: finish
    fenced(["@@say", "<<<MSG", "All done: greet.py is committed and pushed.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
  // Reply 3 waits until the format error of reply 2 has been checked on the page: what the
  // overlay shows about a reply lasts only until the next one starts.
  let releaseReply3 = () => {};
  const reply3 = new Promise((resolve) => (releaseReply3 = resolve));
  // Reply 2 waits until batch 1's diffs have been looked at in the overlay.
  let releaseReply2 = () => {};
  const reply2 = new Promise((resolve) => (releaseReply2 = resolve));
  const chat = await startFakeChat(replies.map((text, i) => ({ text, chunk: 18, delayMs: 25, gate: i === 2 ? reply3 : i === 1 ? reply2 : undefined })));
  const host = await startHost(w.ws, w.config, "ask");
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  const errors = [];
  try {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto("https://chatgpt.com/");
    await page.locator("#prompt-textarea").waitFor();
    // A stale draft in the composer (typed through the editor), and a write that bypasses the
    // editor (innerHTML, what naive tools do): the send button stays disabled for the latter.
    await page.locator("#prompt-textarea").click();
    await page.keyboard.type("stale draft");
    await page.evaluate(() => {
      document.querySelector("#prompt-textarea").insertAdjacentHTML("beforeend", "<p>written past the editor</p>");
    });
    const tabId = await until("the chat tab", () => tabIdOf(worker, "https://chatgpt.com/*"));
    const popup = await pairAndStart(context, extensionId, tabId, host, { task: "Add a greeting module, then commit it." });
    await popup.screenshot({ path: join(shots, "extension-popup.png") });
    await page.bringToFront();

    // Start pasted the system prompt with the environment and the task, and sent it.
    await until("the prompt at the model", () => chat.received.length >= 1);
    assert.match(chat.received[0].text, /AgentScript v1/);
    assert.match(chat.received[0].text, /# Environment/);
    assert.match(chat.received[0].text, /# Task\nAdd a greeting module, then commit it\.$/);
    assert.doesNotMatch(chat.received[0].text, /stale draft|written past the editor/);

    // Reply 1 streams; the overlay follows it, then the host runs it and the results go back.
    await until("the overlay to follow the stream", async () => (await pill(page).textContent().catch(() => "")) === "streaming");
    await until("commands in the overlay", async () => (await overlay(page).locator("td.cmd").count()) >= 2);
    await page.screenshot({ path: join(shots, "extension-streaming.png") });
    await until("results of batch 1", () => chat.received.length >= 2);
    assert.match(chat.received[1].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=1/);
    assert.match(chat.received[1].text, /#2 newfile \| src\/greet\.py ---\nstatus: ok/);
    assert.match(chat.received[1].text, /#4 runcommand \| wc -l src\/greet\.py ---\nstatus: ok \| exit code: 0/);
    assert.equal(readFileSync(join(w.ws, "src/greet.py"), "utf8"), `${GREET_PY}\n`);
    assert.equal(readFileSync(join(w.ws, "README.md"), "utf8"), "# demo\n\nA demo project.\n\nRun `python3 src/greet.py` to be greeted.\n");
    // The user sees what changed: each file command's diff under its row, and the batch's changes
    // in the summary (the chat got only the verified: lines).
    await until("the diffs in the overlay", async () => (await overlay(page).locator("tr.diffs details.diff").count()) === 2);
    const readmeDiff = overlay(page).locator("tr.diffs details.diff", { hasText: "README.md" });
    assert.match(await readmeDiff.locator("summary").textContent(), /README\.md\+2 −0/);
    assert.equal(await readmeDiff.evaluate((d) => d.open), true, "a short diff starts open");
    assert.match(await readmeDiff.locator(".d-add").first().textContent(), /^\+\n$/);
    assert.match(await readmeDiff.locator(".d-add").last().textContent(), /^\+Run `python3 src\/greet\.py` to be greeted\.\n$/);
    assert.match(await overlay(page).locator(".changes h5").textContent(), /^Changes: 2 files changed, \+\d+ −0$/);
    assert.doesNotMatch(chat.received[1].text, /\+Run `python3/);
    await page.screenshot({ path: join(shots, "extension-diff.png") });
    releaseReply2();

    // Reply 2 is not valid AgentScript: the overlay shows the problem at its line while the reply
    // still streams, then the correction goes back and nothing runs.
    const diagBox = overlay(page).locator(".diag");
    await diagBox.waitFor({ timeout: 30000 });
    assert.match(await diagBox.textContent(), /line 2Unknown command "@@createfile"/);
    await page.screenshot({ path: join(shots, "extension-format-error.png") });
    await until("the correction", () => chat.received.length >= 3);
    assert.match(chat.received[2].text, /^\[KEYLESSAGENT FORMAT ERROR\]\nYour last response was rejected\. Nothing was executed\./);
    assert.match(chat.received[2].text, /line 2: Unknown command "@@createfile"/);
    assert.ok(!existsSync(join(w.ws, "notes.txt")));
    releaseReply3();

    // Reply 3 needs a confirmation in Ask mode: approve it in the overlay.
    const approve = overlay(page).locator("button", { hasText: "Approve" });
    await approve.waitFor({ timeout: 30000 });
    assert.match(await overlay(page).locator(".prompt code").first().textContent(), /echo built > build\.txt/);
    // "Always allow" is offered for the exact line; a line with a redirection gets no pattern.
    assert.equal(await overlay(page).locator("button", { hasText: "Always allow this command" }).count(), 1);
    assert.equal(await overlay(page).locator("button", { hasText: "Always allow commands like this" }).count(), 0);
    await page.screenshot({ path: join(shots, "extension-confirm.png") });
    await approve.click();
    await until("results of the approved command", () => chat.received.length >= 4);
    assert.match(chat.received[3].text, /#1 runcommand \| echo built > build\.txt ---\nstatus: ok/);
    assert.equal(readFileSync(join(w.ws, "build.txt"), "utf8"), "built\n");

    // Reply 4 commits and pushes to the bare origin: a git write, confirmed in Ask mode like
    // `git commit` through runcommand would be.
    await until("the commit's confirmation", async () => /@@commit Add the greeting module/.test((await overlay(page).locator(".prompt code").textContent().catch(() => "")) ?? ""));
    assert.match(await overlay(page).locator(".prompt").textContent(), /Risky/);
    await page.screenshot({ path: join(shots, "extension-confirm-commit.png") });
    await overlay(page).locator("button", { hasText: "Approve" }).click();
    await until("results of the commit", () => chat.received.length >= 5);
    assert.match(chat.received[4].text, /#1 commit \| Add the greeting module ---\nstatus: ok/);

    // Reply 5 finishes: the overlay says done and nothing more is sent.
    await until("the done state", async () => (await pill(page).textContent()) === "done");
    // The finished task's whole diff, in the overlay without a click.
    assert.match(await overlay(page).locator(".changes.task h5").textContent(), /^The task's changes: 3 files changed, \+\d+ −0$/);
    assert.equal(await overlay(page).locator(".changes.task details.diff[open]").count(), 3);
    await page.screenshot({ path: join(shots, "extension-done.png") });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(chat.received.length, 5, "nothing is sent after @@done");

    // The workspace and the history, checked with the git CLI.
    assert.equal(git(w.ws, "log", "-1", "--format=%s"), "Add the greeting module");
    assert.deepEqual(git(w.ws, "show", "--name-only", "--format=", "HEAD").split("\n").sort(), ["README.md", "build.txt", "src/greet.py"]);
    assert.equal(git(w.origin, "log", "-1", "--format=%s", "feature/greet"), "Add the greeting module");
    assert.equal(git(w.ws, "status", "--porcelain"), "");

    // Figures: end of streaming to results sent, overlay update per chunk.
    const m = await popup.evaluate(() => chrome.runtime.sendMessage({ type: "metrics" }));
    const sent = m.value.endToSent;
    assert.ok(sent.length >= 4, JSON.stringify(m));
    console.log(`figure: end of streaming → results sent (ms): ${sent.join(", ")}`);
    assert.deepEqual(errors, []);
  } finally {
    releaseReply2();
    releaseReply3();
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

/** A 60,000-character file body full of what markdown rendering mangles outside a code block. */
function trickyContent(chars) {
  const lines = [];
  for (let i = 0; lines.join("\n").length < chars; i++) {
    const kind = i % 12;
    lines.push(
      kind === 0 ? `# heading ${i} that markdown would eat` :
      kind === 1 ? `    indented ${i}\twith a tab and *stars* and <b>tags</b>` :
      kind === 2 ? "```js" :
      kind === 3 ? `  const x${i} = "quotes \\" and \\\\ backslash";` :
      kind === 4 ? "```" :
      kind === 5 ? `- list item ${i} with trailing spaces   ` :
      kind === 6 ? "@@end" :
      kind === 7 ? "" :
      kind === 8 ? `ünïcödé ${i} — “quotes” and emoji 🚀` :
      kind === 9 ? `<<<NOT_A_MARKER ${i}` :
      kind === 10 ? `1. numbered ${i} > quoted` :
      `plain line ${i} ${"x".repeat(i % 40)}`,
    );
  }
  return lines.join("\n").slice(0, chars).replace(/\n+$/, "").replace(/[ \t]+$/, "");
}

function extensionRss() {
  const each = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!cmd.includes("--extension-process")) continue;
      const roll = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
      const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(roll)?.[1] ?? 0) / 1024;
      each.push({ rss: kb("Rss"), pss: kb("Pss"), priv: kb("Private_Dirty") + kb("Private_Clean") });
    } catch {
      // the process ended
    }
  }
  return each;
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

test("adapters are data: a Claude-like page, a 60,000-character reply, results as an attachment, the doctor", async () => {
  const w = workspace();
  // Two files, each under MaxFileContentChars (40,000), in one reply of about 60,000 characters.
  const body = trickyContent(29000);
  const body2 = trickyContent(29000).replace(/line/g, "row");
  const big = fenced(
    ["@@newfile docs/big.md", "<<<CONTENT", body, "CONTENT>>>", "@@end", "@@newfile docs/big2.md", "<<<CONTENT", body2, "CONTENT>>>", "@@end", "@@readfile docs/big.md", "@@end", "@@next", "@@end", "@@eof"].join("\n"),
  );
  assert.ok(big.length >= 58000 && big.length <= 60500, String(big.length));
  const chat = await startFakeChat([
    { text: big, chunk: 600, delayMs: 30 },
    { text: fenced(["@@ask", "<<<MSG", "Which license should docs/big.md carry?", "MSG>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
    { text: fenced(["@@done", "@@end", "@@eof"].join("\n")) },
  ]);
  const host = await startHost(w.ws, w.config, "auto");
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  try {
    // A selector override from the options page: Claude takes at most 1,000 pasted characters
    // here, so the results go as a file attachment.
    const options = await context.newPage();
    await options.goto(`chrome-extension://${extensionId}/options.html`);
    await options.locator("#overrides").fill('{"claude": {"max_paste_chars": 10}}');
    await options.locator("#check").click();
    await until("the verdict", async () => (await options.locator("#verdict").textContent()) !== "");
    assert.match(await options.locator("#verdict").textContent(), /KA_CONFIG_VALIDATION selector overrides: claude\.max_paste_chars: must be 1000–1000000, got 10/);
    await options.locator("#overrides").fill('{"claude": {"max_paste_chars": 1000}}');
    await options.locator("#save").click();
    await until("saved", async () => (await options.locator("#verdict").textContent()).startsWith("Saved"));
    await options.screenshot({ path: join(shots, "extension-options.png") });
    await options.close();

    const page = await context.newPage();
    await page.goto("https://claude.ai/chat");
    await page.locator('div[aria-label="Write your prompt to Claude"] .ProseMirror').waitFor();
    const tabId = await until("the chat tab", () => tabIdOf(worker, "https://claude.ai/*"));
    const popup = await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Write docs/big.md." });
    await page.bringToFront();

    await until("the prompt at the model", () => chat.received.length >= 1);
    assert.equal(chat.received[0].site, "claude");
    await until("the attached results", () => chat.received.length >= 2, 60000);
    // The file on disk is byte-exact what the model wrote, through the rendered DOM.
    assert.equal(readFileSync(join(w.ws, "docs/big.md"), "utf8"), `${body}\n`);
    assert.equal(readFileSync(join(w.ws, "docs/big2.md"), "utf8"), `${body2}\n`);
    const r = chat.received[1];
    assert.equal(r.attachments.length, 1, JSON.stringify(r).slice(0, 300));
    assert.equal(r.attachments[0].name, "keyless-results-t1-b1.txt");
    assert.match(r.attachments[0].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=1\n--- result 1\/3 \| #1 newfile \| docs\/big\.md ---\nstatus: ok/);
    assert.match(r.text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=1\nThe full results \(\d+ characters\) are in the attached file keyless-results-t1-b1\.txt\./);
    // @@ask: the overlay's answer box; the answer reaches the model in the results.
    const answer = overlay(page).locator("input.answer");
    await answer.waitFor({ timeout: 30000 });
    assert.match(await overlay(page).locator(".prompt code").textContent(), /Which license/);
    await answer.fill("MIT");
    await page.screenshot({ path: join(shots, "extension-ask.png") });
    await overlay(page).locator("button", { hasText: "Answer" }).click();
    await until("the answer at the model", () => chat.received.length >= 3);
    assert.match(chat.received[2].text, /#1 ask \| Which license should docs\/big\.md carry\? ---\nstatus: ok\n<<<OUTPUT\nMIT\nOUTPUT>>>/);
    await until("the done state", async () => (await pill(page).textContent()) === "done");
    await page.screenshot({ path: join(shots, "extension-claude-done.png") });

    // The doctor runs every selector on the page, then names the one an override broke.
    await popup.reload();
    await popup.locator("#doctor-box summary").click();
    await popup.locator("#doctor").click();
    await until("the doctor", async () => (await popup.locator("#doctor-out tr").count()) === 10);
    const rows = await popup.locator("#doctor-out tr").allTextContents();
    assert.ok(rows.includes("composerok1 match"), rows.join("\n"));
    assert.ok(rows.includes("assistant_messageok3 matches"), rows.join("\n"));
    await popup.evaluate(() => chrome.runtime.sendMessage({ type: "setSettings", selectorOverrides: '{"claude": {"selectors": {"composer": "div.renamed-editor"}}}' }));
    await popup.locator("#doctor").click();
    await until("the broken composer", async () => (await popup.locator("#doctor-out").textContent()).includes("KA_SELECTOR_NOT_FOUND: no match, and the composer is always on the page"));
    await popup.screenshot({ path: join(shots, "extension-doctor.png"), fullPage: true });

    // Figures.
    const m = (await popup.evaluate(() => chrome.runtime.sendMessage({ type: "metrics" }))).value;
    const big60 = m.overlayUpdate.filter((_, i) => m.overlayChars[i] > 1000);
    assert.ok(big60.length >= 20, `${big60.length} overlay updates`);
    console.log(
      `figure: overlay update per streamed chunk, 60,000-character reply: ${big60.length} updates, median ${pct(big60, 50)} ms, p95 ${pct(big60, 95)} ms, max ${Math.max(...big60)} ms (last at ${Math.max(...m.overlayChars)} chars), round trip to the worker included`,
    );
    const page60 = m.pageMs.filter((_, i) => m.overlayChars[i] > 1000);
    console.log(`figure: of which the page's own work (read the DOM, diff, draw): median ${pct(page60, 50)} ms, p95 ${pct(page60, 95)} ms`);
    console.log(`figure: of which the core's follower update in the worker (wasm): median ${pct(m.coreMs, 50)} ms, p95 ${pct(m.coreMs, 95)} ms (${m.coreMs.length} updates)`);
    console.log(`figure: end of streaming → results sent (attachment) (ms): ${m.endToSent.join(", ")}`);
    const rss = extensionRss();
    console.log(
      `figure: extension processes (worker + wasm core, popup page open): ${rss.map((m) => `RSS ${m.rss.toFixed(1)} MB, PSS ${m.pss.toFixed(1)} MB, private ${m.priv.toFixed(1)} MB`).join(" + ")}`,
    );
    const heap = await popup.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
    console.log(`figure: popup page JS heap ${(heap / 1048576).toFixed(1)} MB`);
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("Pause holds a finished reply until Resume; Stop cancels the running command and sends nothing", async () => {
  await withChat("chatgpt", [
    { text: fenced(["@@mkdir held", "@@end", "@@next", "@@end", "@@eof"].join("\n")), chunk: 8, delayMs: 40 },
    { text: fenced(["@@runcommand", "<<<CMD", "sleep 30", "CMD>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
  ], "auto", async ({ w, chat, host, context, extensionId, page, tabId }) => {
    const popup = await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Make a folder." });
    await popup.locator("#pause").click();
    await until("paused", async () => (await popup.locator("#run").textContent()).includes("paused"));
    // The reply completes while paused: it waits, nothing runs.
    await until("the held reply", async () => (await pill(page).textContent()) === "paused");
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 1);
    assert.ok(!existsSync(join(w.ws, "held")));
    // Changing the mode in the popup changes the running session's mode at the host.
    await popup.selectOption("#mode", "AutoSafe");
    await until("the session's new mode", async () => {
      const sessions = await (await fetch(`http://127.0.0.1:${host.port}/v1/sessions`, { headers: { authorization: `Bearer ${host.token}` } })).json();
      const res = await fetch(`http://127.0.0.1:${host.port}/v1/sessions/${sessions[0].session}/settings`, {
        method: "POST",
        headers: { authorization: `Bearer ${host.token}`, "content-type": "application/json" },
        body: "{}",
      });
      return (await res.json()).mode === "AutoSafe";
    });
    await popup.selectOption("#mode", "Auto");
    await popup.locator("#pause").click(); // Resume
    await until("the results after Resume", () => chat.received.length >= 2);
    assert.ok(existsSync(join(w.ws, "held")));
    // The next reply runs `sleep 30`: Stop kills it and nothing goes back to the chat.
    await until("the running command", async () => (await overlay(page).locator(".s-running").count()) === 1);
    await popup.locator("#stop").click();
    await until("stopped", async () => (await popup.locator("#run").textContent()).includes("stopped"));
    await until("the stopped overlay", async () => (await pill(page).textContent()) === "stopped", 15000);
    await until("the cancelled batch's summary", async () => /Stopped: nothing was sent/.test(await overlay(page).locator(".summary").textContent()), 15000);
    assert.equal(await pill(page).textContent(), "stopped");
    await page.screenshot({ path: join(shots, "extension-stopped.png") });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 2, "nothing is sent after Stop");
    const batches = await (await fetch(`http://127.0.0.1:${host.port}/v1/audit?limit=5`, { headers: { authorization: `Bearer ${host.token}` } })).json();
    assert.ok(batches.some((b) => b.command === "runcommand" && b.code === "KA_CANCELLED"), JSON.stringify(batches));
  });
});

test("a reply that stays without @@eof is KA_REPLY_TRUNCATED and gets its correction; a full chat is KA_CHAT_EXHAUSTED", async () => {
  await withChat("chatgpt", [
    // AgentScript that stops before @@eof (the model ran out of output).
    { text: fenced(["@@mkdir half", "@@end", "@@newfile half/a.txt", "<<<CONTENT", "cut off here"].join("\n")) },
    // The chat is full: the site says so under a reply that is not AgentScript.
    { text: "I cannot continue here.", banner: "You've reached the maximum length for this conversation, but you can keep talking by starting a new chat." },
  ], "auto", async ({ w, chat, host, context, extensionId, page, tabId }) => {
    const options = await context.newPage();
    await options.goto(`chrome-extension://${extensionId}/options.html`);
    await options.locator("#truncation").fill("5");
    await options.locator("#save").click();
    await until("saved", async () => (await options.locator("#verdict").textContent()).startsWith("Saved"));
    await options.close();
    await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Make half a folder." });
    await page.bringToFront();
    await until("the correction", () => chat.received.length >= 2, 30000);
    await until("the truncation notice", async () => /^KA_REPLY_TRUNCATED: the last reply had no @@eof; its correction was sent/.test(await overlay(page).locator(".foot").textContent()));
    assert.match(chat.received[1].text, /^\[KEYLESSAGENT FORMAT ERROR\]/);
    assert.match(chat.received[1].text, /Your response looks truncated\. Resend it in SMALLER pieces/);
    assert.ok(!existsSync(join(w.ws, "half")), "nothing of a truncated reply runs");
    await until("KA_CHAT_EXHAUSTED", async () => (await overlay(page).locator(".error .code").textContent().catch(() => "")) === "KA_CHAT_EXHAUSTED", 30000);
    await page.screenshot({ path: join(shots, "extension-exhausted.png") });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 2, "nothing is sent into a full chat");
  });
});

test("Start without a task pastes the prompt only; offline, nothing is sent, and the results go out when the browser is back", async () => {
  await withChat("chatgpt", [
    { text: fenced(["@@runcommand", "<<<CMD", "sleep 2", "CMD>>>", "@@end", "@@mkdir later", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
  ], "auto", async ({ w, chat, host, context, extensionId, page, tabId }) => {
    // Start with no task: the prompt is only pasted; the user adds the task and sends it.
    await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "" });
    await page.bringToFront();
    await until("the pasted prompt", async () => (await page.locator("#prompt-textarea").textContent()).startsWith("You are a coding agent"));
    // Nothing is sent before the user sends: no timed wait, the order decides. A send of its own
    // would reach the chat before the user's, without the task the user types below, and the
    // first message at the model is checked to be the prompt with the task, and the only one.
    assert.equal(chat.received.length, 0, "nothing is sent before the user sends");
    assert.equal(await pill(page).textContent(), "add your task, then send");
    await page.locator("#prompt-textarea").click();
    await page.keyboard.press("End");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("# Task: wait, then make a folder.");
    await page.keyboard.press("Enter");
    await until("the prompt at the model", () => chat.received.length >= 1);
    assert.match(chat.received[0].text, /^You are a coding agent[\s\S]*# Task: wait, then make a folder\.$/, "the first message at the model is the user's, with the task");
    // The batch runs on the host (sleep 2); the page goes offline before the results are written.
    await until("the running batch", async () => (await overlay(page).locator(".s-running").count()) === 1);
    await context.setOffline(true);
    await until("KA_NETWORK_OFFLINE", async () => (await overlay(page).locator(".error .code").textContent().catch(() => "")) === "KA_NETWORK_OFFLINE", 20000);
    assert.ok(existsSync(join(w.ws, "later")), "the batch itself ran");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(chat.received.length, 1, "nothing is sent while offline");
    await context.setOffline(false);
    await until("the results once online", () => chat.received.length >= 2, 20000);
    assert.match(chat.received[1].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=1/);
  });
});

/** Records every problem the overlay draws on `page` (its shadow root is open). */
async function recordProblems(page) {
  await page.evaluate(() => {
    window.__keylessProblems = [];
    const attach = () => {
      const host = document.querySelector("keyless-overlay");
      if (!host?.shadowRoot) return void setTimeout(attach, 10);
      const seen = () => {
        for (const d of host.shadowRoot.querySelectorAll(".diag .msg")) window.__keylessProblems.push(d.textContent);
      };
      new MutationObserver(seen).observe(host.shadowRoot, { subtree: true, childList: true, characterData: true });
    };
    attach();
  });
}

test("valid replies stream without a single false problem, and their results go out right after the site stops", async () => {
  const replies = [
    fenced(
      [
        "@@say", "<<<MSG", "Starting: a file with fences and markers inside.", "MSG>>>", "@@end",
        "@@newfile docs/guide.md", "<<<CONTENT:g1", "# Guide", "", "```sh", "echo \"@@end\"", "```", "", "CONTENT>>>", "<<<CMD", "@@runcommand", "@@eof", "~~~", "CONTENT:g1>>>", "@@end",
        "@@mkdir build/out", "@@end",
        "@@runcommand timeout=20", "<<<CMD", "ls docs && wc -l docs/guide.md", "CMD>>>", "@@end",
        "@@next", "@@end", "@@eof",
      ].join("\n"),
    ),
    fenced(
      [
        "@@editfile docs/guide.md", "<<<FIND", "# Guide", "FIND>>>", "<<<REPLACE", "# The guide", "REPLACE>>>", "@@end",
        "@@readfile docs/guide.md", "@@end",
        "@@movefile docs/guide.md", "<<<TO", "docs/GUIDE.md", "TO>>>", "@@end",
        "@@next", "@@end", "@@eof",
      ].join("\n"),
    ),
    fenced(["@@say", "<<<MSG", "Done: the guide is in docs/GUIDE.md.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
  // Three characters per chunk: every prefix of every line appears on the page at some point.
  await withChat("chatgpt", replies.map((text) => ({ text, chunk: 3, delayMs: 6 })), "auto", async ({ w, chat, host, context, extensionId, page, tabId }) => {
    await recordProblems(page);
    const popup = await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Write a guide." });
    await until("the done state", async () => (await pill(page).textContent()) === "done", 120000);
    assert.equal(readFileSync(join(w.ws, "docs", "GUIDE.md"), "utf8").split("\n")[0], "# The guide");
    const problems = await page.evaluate(() => window.__keylessProblems);
    assert.deepEqual(problems, [], "the overlay drew problems while valid replies streamed");
    const m = (await popup.evaluate(() => chrome.runtime.sendMessage({ type: "metrics" }))).value;
    assert.ok(m.endToSent.length >= 2, JSON.stringify(m));
    console.log(`figure: site stopped → results sent (ms): ${m.endToSent.join(", ")}`);
    assert.equal(chat.received.length, 3);
  });
});

test("a piece's MCP tool shows in the overlay with its server and tier, is confirmed, and runs on a real server", async () => {
  const w = workspace();
  // The user's keyless.json declares server-everything (stdio, from npm); the workspace piece
  // requires it and offers two of its tools.
  const server = join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  mkdirSync(join(w.config, "keyless"), { recursive: true });
  writeFileSync(join(w.config, "keyless", "keyless.json"), JSON.stringify({ Mcp: { Servers: { everything: { Command: "node", Args: [server, "stdio"] } } } }));
  mkdirSync(join(w.ws, ".agent", "pieces"), { recursive: true });
  writeFileSync(
    join(w.ws, ".agent", "pieces", "mcp-demo.yaml"),
    [
      "name: mcp-demo",
      "description: Echo through an MCP server",
      "max_movements: 2",
      "initial_movement: talk",
      "required_mcp: [everything]",
      "movements:",
      "  - name: talk",
      "    edit: false",
      "    persona: an assistant",
      "    instruction: Echo the greeting through the MCP server.",
      "    allowed_tools: [Read, mcp__everything__echo, mcp__everything__get-sum]",
      "    rules: []",
      "",
    ].join("\n"),
  );
  const replies = [
    fenced(["@@mcp everything.echo", "<<<ARGS", '{"message": "hello from the overlay"}', "ARGS>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    fenced(["@@say", "<<<MSG", "Echoed.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
  const chat = await startFakeChat(replies.map((text) => ({ text, chunk: 24, delayMs: 20 })));
  const host = await startHost(w.ws, w.config, "ask");
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  try {
    const page = await context.newPage();
    await page.goto("https://chatgpt.com/");
    await page.locator("#prompt-textarea").waitFor();
    const tabId = await until("the chat tab", () => tabIdOf(worker, "https://chatgpt.com/*"));
    await pairAndStart(context, extensionId, tabId, host, { task: "Say hello through the server.", piece: "mcp-demo" });
    await page.bringToFront();
    // The prompt offers the tools with their schemas.
    await until("the prompt at the model", () => chat.received.length >= 1);
    assert.match(chat.received[0].text, /@@mcp SERVER\.TOOL/);
    assert.match(chat.received[0].text, /everything\.echo: Echoes back the input string\n\s+ARGS schema: \{/);
    // The overlay names the tool and its tier, and the Ask mode confirmation waits for the user.
    await until("the mcp row", async () => /everything\.echo/.test((await overlay(page).locator("td.target").first().textContent().catch(() => "")) ?? ""));
    assert.equal(await overlay(page).locator("td.cmd").first().textContent(), "mcpRisky");
    const approve = overlay(page).locator("button", { hasText: "Approve" });
    await approve.waitFor({ timeout: 30000 });
    assert.match(await overlay(page).locator(".prompt code").textContent(), /@@mcp everything\.echo \{"message": "hello from the overlay"\}/);
    assert.match(await overlay(page).locator(".prompt").textContent(), /Risky/);
    await page.screenshot({ path: join(shots, "extension-mcp-confirm.png") });
    await approve.click();
    await until("the tool's results", () => chat.received.length >= 2);
    assert.match(chat.received[1].text, /#1 mcp \| everything\.echo ---\nstatus: ok/);
    assert.match(chat.received[1].text, /Echo: hello from the overlay/);
    await until("the done state", async () => (await pill(page).textContent()) === "done");
    await page.screenshot({ path: join(shots, "extension-mcp-done.png") });
    // The dashboard shows the stored batch the same way: the tool, its server, its tier.
    const dash = await context.newPage();
    await dash.goto(host.dashboard);
    await dash.locator(".batch .head", { hasText: "Turn 1 · Batch 1" }).click();
    const row = dash.locator(".batch .cmds tr", { hasText: "everything.echo" }).first();
    await row.waitFor({ timeout: 15000 });
    const text = await row.textContent();
    assert.match(text, /mcp/);
    assert.match(text, /Risky/);
    assert.match(text, /ok/);
    await dash.screenshot({ path: join(shots, "dashboard-mcp-batch.png"), fullPage: true });
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("an MCP server's form goes to the user in the overlay and the dashboard, and its progress shows live", async () => {
  const call = recorderCall;
  const replies = [
    fenced([...call("steps"), ...call("ask"), "@@next", "@@end", "@@eof"].join("\n")),
    fenced([...call("ask"), "@@next", "@@end", "@@eof"].join("\n")),
    fenced(["@@say", "<<<MSG", "Asked.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
  await withChat(
    "chatgpt",
    replies.map((text) => ({ text, chunk: 24, delayMs: 20 })),
    "auto",
    async ({ host, context, extensionId, page, tabId, chat }) => {
      await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Ask me through the server.", piece: "mcp-form" });
      await page.bringToFront();
      // The form, in the overlay: the server's words, a field per schema property, the default in.
      const form = overlay(page).locator(".prompt .eform");
      await form.waitFor({ timeout: 60000 });
      assert.match(await overlay(page).locator(".prompt").textContent(), /The MCP server "recorder" asks this/);
      // The server's words without its escape sequences; the required field first.
      assert.equal(await form.locator(".server-words").textContent(), "Deploy <U+001B>[31mnow<U+001B>[0m?");
      assert.equal(await form.locator("label.f").first().getAttribute("data-field"), "name");
      assert.equal(await form.locator('[data-field="count"] input').inputValue(), "3");
      assert.match(await form.locator('[data-field="name"]').textContent(), /Your name \*/);
      // The tool's progress came before, live, with the output; the escape sequence the server put in it shows as its code point.
      const live = await overlay(page).locator("pre.out").textContent();
      for (const i of [1, 2, 3]) assert.ok(live.includes(`[recorder] progress ${i}/3: step ${i}<U+001B>[2J\n`), live);
      // A count out of range is refused by the host, said under the form, and the form stays.
      await form.locator('[data-field="name"] input').fill("Ada");
      await form.locator('[data-field="count"] input').fill("12");
      await form.locator("button", { hasText: "Send" }).click();
      await until("the refusal", async () => /count: .*9/.test((await form.locator(".f-error").textContent()) ?? ""));
      await page.screenshot({ path: join(shots, "extension-mcp-form.png") });
      await form.locator('[data-field="count"] input').fill("4");
      await form.locator('[data-field="go"] input').check();
      await form.locator("button", { hasText: "Send" }).click();
      await until("the results", () => chat.received.length >= 2);
      const first = chat.received[1].text;
      assert.match(first, /#1 mcp \| recorder\.steps ---\nstatus: ok/);
      assert.match(first, /three steps/);
      assert.ok(first.includes('{"action":"accept","content":{"count":4,"go":true,"name":"Ada"}}'), first);
      // The second form is answered in the dashboard: the whole call is cancelled.
      const dash = await context.newPage();
      await dash.goto(host.dashboard);
      const card = dash.locator("#pending .prompt .eform");
      await card.waitFor({ timeout: 30000 });
      assert.equal(await card.locator('[data-field="count"] input').inputValue(), "3");
      // A refused value is said under the form; what was typed and the refusal stay through the
      // list's refreshes (every 5 s, and on every event).
      await card.locator('[data-field="name"] input').fill("Bo");
      await card.locator('[data-field="count"] input').fill("0");
      await card.locator("button", { hasText: "Send" }).click();
      await until("the refusal", async () => /count: .*1 to 9/.test((await card.locator(".f-error").textContent()) ?? ""));
      await new Promise((r) => setTimeout(r, 5600));
      assert.equal(await card.locator('[data-field="name"] input').inputValue(), "Bo");
      assert.match(await card.locator(".f-error").textContent(), /count: /);
      await dash.screenshot({ path: join(shots, "dashboard-mcp-form.png"), fullPage: true });
      await card.locator("button", { hasText: "Cancel the tool call" }).click();
      await until("the second results", () => chat.received.length >= 3);
      assert.ok(chat.received[2].text.includes('{"action":"cancel"}'), chat.received[2].text);
      await until("the form gone from the overlay", async () => (await overlay(page).locator(".prompt .eform").count()) === 0);
      await until("the done state", async () => (await pill(page).textContent()) === "done");

    },
    (w) => recorderPiece(w, root, join(w.dir, "record.jsonl")),
  );
});
