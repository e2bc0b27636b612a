// A session outlives its chat: Debian's Chromium with the built extension, the fake chat sites, a
// real `keyless-host serve` on a git workspace with a bare origin. A chat that says it is full or
// at its usage limit offers to continue in a new chat; keyless opens it, sends the handover made
// by the core from the host's record, and the task goes on there. A reply the old chat finishes
// afterwards runs nothing (KA_SESSION_MOVED).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startHost, launchWithExtension, shots } from "./host.mjs";
import { startFakeChat } from "./fakechat/server.mjs";
import { COMPOSERS, fenced, git, GREET_PY, ORIGINS, pairAndStart, tabIdOf, until, workspace } from "./scenario.mjs";

const overlay = (page) => page.locator("keyless-overlay");
const code = (page) => overlay(page).locator(".error .code").textContent().catch(() => "");
const get = async (host, path) => (await fetch(`http://127.0.0.1:${host.port}${path}`, { headers: { authorization: `Bearer ${host.token}` } })).json();
const FULL = "You've reached the maximum length for this conversation, but you can keep talking by starting a new chat.";
const LIMITED = "You've reached our limit of messages. Please try again later.";

/** The session the host keeps for this workspace (one per test). */
async function session(host) {
  const all = await get(host, "/v1/sessions");
  assert.equal(all.length, 1, JSON.stringify(all));
  return all[0];
}

test("a full ChatGPT chat continues in a new Claude chat from the overlay, with the handover of everything done", async () => {
  const w = workspace();
  let releaseCommit = () => {};
  const commitGate = new Promise((resolve) => (releaseCommit = resolve));
  const chat = await startFakeChat([
    { text: fenced(["@@newfile src/greet.py", "<<<CONTENT", GREET_PY, "CONTENT>>>", "@@end", "@@runcommand", "<<<CMD", "wc -l src/greet.py", "CMD>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
    { text: "I cannot continue here.", banner: FULL },
    // On Claude: a file, a command and a commit pushed.
    {
      text: fenced(
        [
          "@@editfile README.md", "<<<FIND", "A demo project.", "FIND>>>", "<<<REPLACE", "A demo project that greets.", "REPLACE>>>", "@@end",
          "@@runcommand", "<<<CMD", "python3 src/greet.py", "CMD>>>", "@@end",
          "@@commit", "<<<MSG", "Add the greeting module", "MSG>>>", "@@end",
          "@@next", "@@end", "@@eof",
        ].join("\n"),
      ),
      gate: commitGate,
    },
    { text: fenced(["@@say", "<<<MSG", "Done: greet.py is committed and pushed.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")) },
  ]);
  const host = await startHost(w.ws, w.config, "auto");
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  const errors = [];
  try {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${ORIGINS.chatgpt}/`);
    await page.locator(COMPOSERS.chatgpt).waitFor();
    const tabId = await until("the chat tab", () => tabIdOf(worker, `${ORIGINS.chatgpt}/*`));
    const popup = await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Add a greeting module and commit it." });
    await popup.close();
    await page.bringToFront();
    await until("KA_CHAT_EXHAUSTED", async () => (await code(page)) === "KA_CHAT_EXHAUSTED", 60000);
    assert.equal(chat.received.length, 2, "nothing is sent into a full chat");
    assert.ok(existsSync(join(w.ws, "src/greet.py")), "batch 1 ran");
    const box = overlay(page).locator(".error");
    assert.match(await box.textContent(), /The chat says it is full\. Nothing was run\. keyless can continue the task in a new chat/);
    assert.equal(await box.locator("button", { hasText: "Continue in a new ChatGPT chat" }).count(), 1);
    await box.locator("button", { hasText: "Continue on another site…" }).click();
    await until("the site list", async () => (await box.locator("button", { hasText: /^Claude$/ }).count()) === 1);
    await page.screenshot({ path: join(shots, "handover-pick-site.png") });
    const opened = context.waitForEvent("page");
    await box.locator("button", { hasText: /^Claude$/ }).click();
    const next = await opened;
    next.on("pageerror", (e) => errors.push(String(e)));
    await until("the handover in the new chat", () => chat.received.length >= 3, 60000);
    assert.match(next.url(), /^https:\/\/claude\.ai\//);
    const handover = chat.received[2];
    assert.equal(handover.site, "claude", "the handover went to the new tab");
    assert.match(handover.text, /^\[KEYLESSAGENT HANDOVER\] session=\S+ turn=1 batch=2\n/);
    assert.match(handover.text, /\n# Task\nAdd a greeting module and commit it\.\n/);
    assert.match(handover.text, /- turn 1 batch 1: #1 newfile src\/greet\.py: ok; #2 runcommand wc -l src\/greet\.py: ok/);
    assert.match(handover.text, /src\/greet\.py \| 7 \+{7}/);
    // The last message keyless sent (batch 1's results), in full.
    assert.ok(handover.text.includes(chat.received[1].text.trim()), "the last results are in the handover whole");
    assert.match(handover.text, /Your next reply is turn=1 batch=2/);
    // The host recorded the move, and made the handover from its record, not from the old page.
    const moved = await session(host);
    assert.equal(moved.moves.length, 1, JSON.stringify(moved));
    assert.deepEqual([moved.moves[0].site, moved.moves[0].turn, moved.moves[0].batch], ["Claude", 1, 2]);
    assert.equal(moved.moves[0].tab, await tabIdOf(worker, `${ORIGINS.claude}/*`));
    // Pasted exactly as the core makes it: the same record (nothing ran since) gives the same text.
    const again = await (
      await fetch(`http://127.0.0.1:${host.port}/v1/sessions/${moved.session}/handover`, {
        method: "POST",
        headers: { authorization: `Bearer ${host.token}`, "content-type": "application/json" },
        body: JSON.stringify({ site: "Claude", max_paste_chars: 30000, uploads: true }),
      })
    ).json();
    assert.deepEqual(again.delivery, { kind: "paste" });
    assert.equal(handover.text, again.text);
    // The old chat says where the task went; the new one where it came from.
    await page.bringToFront();
    await until("the old chat's note", async () => (await overlay(page).locator(".pill").textContent().catch(() => "")).includes("continued in Claude"));
    await page.screenshot({ path: join(shots, "handover-old-chat.png") });
    await next.bringToFront();
    await until("the new chat's header", async () => /^Claude · turn 1 batch 2 · from ChatGPT$/.test(await overlay(next).locator(".where").textContent().catch(() => "")));
    releaseCommit();
    await until("@@done in the new chat", async () => /^done$/.test(await overlay(next).locator(".pill").textContent().catch(() => "")), 60000);
    await next.screenshot({ path: join(shots, "handover-new-chat.png") });
    assert.equal(chat.received.length, 4, "the commit's results went to the new chat");
    assert.equal(chat.received[3].site, "claude");
    assert.match(chat.received[3].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=2\n/);
    assert.match(chat.received[3].text, /Hello, world!/);
    assert.equal(readFileSync(join(w.ws, "README.md"), "utf8"), "# demo\n\nA demo project that greets.\n");
    assert.equal(git(w.ws, "status", "--porcelain"), "");
    const branch = git(w.ws, "rev-parse", "--abbrev-ref", "HEAD");
    assert.equal(git(w.origin, "log", "-1", "--format=%s", branch), "Add the greeting module");
    assert.equal(readFileSync(join(w.ws, "src/greet.py"), "utf8"), `${GREET_PY}\n`);
    // Every batch ran once, whichever chat it came from.
    const audit = await get(host, "/v1/audit?limit=50");
    const ran = audit.map((a) => `${a.batch} ${a.command} ${a.target}`);
    assert.equal(new Set(ran).size, ran.length, JSON.stringify(audit));
    for (const c of ["newfile", "editfile", "commit"]) assert.equal(audit.filter((a) => a.command === c).length, 1, c);
    assert.equal(audit.filter((a) => a.command === "runcommand").length, 2);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("from the popup mid-reply: the late reply in the old chat runs nothing; a usage limit on the new site continues on a third", async () => {
  const w = workspace();
  let releaseLate = () => {};
  const lateGate = new Promise((resolve) => (releaseLate = resolve));
  const chat = await startFakeChat([
    { text: fenced(["@@mkdir one", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
    // Still on its way in the old chat when the task moves.
    { text: fenced(["@@mkdir late", "@@end", "@@next", "@@end", "@@eof"].join("\n")), gate: lateGate },
    // The first new chat is at its usage limit.
    { text: "Sorry.", banner: LIMITED },
    { text: fenced(["@@mkdir two", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
    { text: fenced(["@@done", "@@end", "@@eof"].join("\n")) },
  ]);
  const host = await startHost(w.ws, w.config, "auto");
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  const errors = [];
  try {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${ORIGINS.gemini}/app`);
    await page.locator(COMPOSERS.gemini).waitFor();
    const tabId = await until("the chat tab", () => tabIdOf(worker, `${ORIGINS.gemini}/*`));
    // Gemini's long-thread mark lowered to 1,000 characters: the first results pass it.
    const options = await context.newPage();
    await options.goto(`chrome-extension://${extensionId}/options.html`);
    assert.ok(await options.locator("#suggest-new-chat").isChecked(), "on by default");
    await options.locator("#overrides").fill('{"gemini": {"long_thread_chars": 1000}}');
    await options.locator("#save").click();
    await until("saved", async () => (await options.locator("#verdict").textContent()).startsWith("Saved"));
    await options.close();
    const popup = await pairAndStart(context, extensionId, tabId, host, { mode: "Auto", task: "Make two folders." });
    await until("batch 1's results", () => chat.received.length >= 2, 60000);
    assert.ok(existsSync(join(w.ws, "one")));
    // The suggestion, while the task goes on (the results were sent).
    await page.bringToFront();
    await until("the long-thread suggestion", async () => (await code(page)) === "This chat is getting long");
    const suggestion = overlay(page).locator(".error");
    assert.match(await suggestion.textContent(), /About \d+k characters so far \(this site's mark is 1k\)\. Models lose track of the task in long threads/);
    assert.equal(await suggestion.locator("button", { hasText: "Continue in a new Gemini chat" }).count(), 1);
    await page.screenshot({ path: join(shots, "handover-long-thread.png") });
    await suggestion.locator("button", { hasText: "Not now" }).click();
    await until("the suggestion put away", async () => !(await suggestion.isVisible()));
    // The popup offers the move while the reply to batch 1's results is still on its way.
    await popup.reload();
    await popup.locator("#continue-row").waitFor({ state: "visible" });
    assert.equal(await popup.locator("#continue-site").inputValue(), "Gemini", "the site of this tab first");
    await popup.selectOption("#continue-site", "ChatGPT");
    await popup.screenshot({ path: join(shots, "handover-popup.png") });
    const opened = context.waitForEvent("page");
    await popup.locator("#continue").click();
    const first = await opened;
    first.on("pageerror", (e) => errors.push(String(e)));
    await until("the popup's note", async () => (await popup.locator("#run").textContent()).includes("continues in a new ChatGPT chat"));
    assert.ok(await popup.locator("#continue-row").isHidden());
    await until("the handover", () => chat.received.length >= 3, 60000);
    assert.equal(chat.received[2].site, "chatgpt");
    assert.match(chat.received[2].text, /^\[KEYLESSAGENT HANDOVER\] session=\S+ turn=1 batch=2\n/);
    // The late reply ends in the old chat: refused, nothing of it runs, nothing is sent.
    releaseLate();
    await page.bringToFront();
    await until("KA_SESSION_MOVED", async () => (await code(page)) === "KA_SESSION_MOVED", 60000);
    assert.match(await overlay(page).locator(".error").textContent(), /continues in a new ChatGPT chat \(another tab\); this reply was not run/);
    assert.equal(await overlay(page).locator(".error button", { hasText: "Retry" }).count(), 0);
    await page.screenshot({ path: join(shots, "handover-late-reply.png") });
    // The new chat is at its usage limit: KA_CHAT_LIMITED, and it continues once more.
    await first.bringToFront();
    await until("KA_CHAT_LIMITED", async () => (await code(first)) === "KA_CHAT_LIMITED", 60000);
    assert.ok(!existsSync(join(w.ws, "late")), "the old chat's late reply ran nothing");
    assert.equal(chat.received.length, 3, "nothing is sent into a chat at its limit, nor from the old chat");
    assert.match(await overlay(first).locator(".error").textContent(), /usage limit is reached\. Nothing was run/);
    await first.screenshot({ path: join(shots, "handover-limited.png") });
    // On to a site where the user still has messages.
    assert.equal(await overlay(first).locator(".error button", { hasText: "Continue in a new ChatGPT chat" }).count(), 1);
    await overlay(first).locator(".error button", { hasText: "Continue on another site…" }).click();
    const again = context.waitForEvent("page");
    await overlay(first).locator(".error button", { hasText: /^DeepSeek$/ }).click();
    const second = await again;
    second.on("pageerror", (e) => errors.push(String(e)));
    await until("@@done in the second new chat", async () => /^done$/.test(await overlay(second).locator(".pill").textContent().catch(() => "")), 60000);
    assert.ok(existsSync(join(w.ws, "two")));
    assert.ok(!existsSync(join(w.ws, "late")));
    assert.deepEqual(chat.received.slice(3).map((r) => r.site), ["deepseek", "deepseek"]);
    assert.match(second.url(), /^https:\/\/chat\.deepseek\.com\//);
    assert.match(chat.received[3].text, /^\[KEYLESSAGENT HANDOVER\] session=\S+ turn=1 batch=2\n/);
    assert.match(chat.received[4].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=2\n/);
    const s = await session(host);
    assert.deepEqual(s.moves.map((m) => [m.site, m.turn, m.batch]), [["ChatGPT", 1, 2], ["DeepSeek", 1, 2]]);
    // The dashboard says where the session went, with the tab and the time.
    const dash = await context.newPage();
    await dash.goto(host.dashboard);
    const moved = dash.locator("#sessions .moved");
    await until("the moves on the dashboard", async () => (await moved.count()) === 2);
    for (const [i, m] of s.moves.entries()) {
      assert.match(await moved.nth(i).textContent(), new RegExp(`^continued in a new ${m.site} chat \\(tab ${m.tab}\\) at .+, from turn 1 batch 2$`));
    }
    await dash.screenshot({ path: join(shots, "handover-dashboard.png") });
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});
