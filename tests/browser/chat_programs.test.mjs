// keyless://chat end to end: Debian's Chromium with the built extension on the imitation chat
// site, a real `keyless-host serve`, and `keyless-host as run` on examples/chat/triage.as. The
// popup's "Answer .as programs here" makes the tab answer programs; each generate is pasted into
// the chat, its reply is followed and checked live, and the answer goes back to the program.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bin, launchWithExtension, root, shots, startHost } from "./host.mjs";
import { startFakeChat } from "./fakechat/server.mjs";
import { pairPopup, until } from "./scenario.mjs";

function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "keyless-chat-programs-"));
  const ws = join(dir, "ws");
  mkdirSync(join(ws, "examples", "chat"), { recursive: true });
  copyFileSync(join(root, "examples", "chat", "triage.as"), join(ws, "examples", "chat", "triage.as"));
  return { ws, config: join(dir, "config") };
}

const REPORT = "Saving a file whose name has a space crashes the app.";

/** `keyless-host as run examples/chat/triage.as` in the workspace; resolves with {code, stdout, stderr}. */
function runProgram(w, extra = []) {
  const child = spawn(bin, ["as", "run", "examples/chat/triage.as", "--input", JSON.stringify({ report: REPORT }), ...extra], {
    cwd: w.ws,
    env: { ...process.env, XDG_CONFIG_HOME: w.config },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const done = new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

/** Pairs in the popup and turns on "Answer .as programs here" for `tabId`. */
async function pairForPrograms(context, extensionId, tabId, host) {
  const popup = await pairPopup(context, extensionId, tabId, host);
  await popup.locator("#programs").check();
  await until("programs on", async () => (await popup.locator("#programs-note").textContent()).includes("keyless://chat"));
  await popup.screenshot({ path: join(shots, "popup-programs.png") });
  return popup;
}

async function withChat(replies, body) {
  const w = workspace();
  const chat = await startFakeChat(replies);
  const host = await startHost(w.ws, w.config);
  const { context, worker, extensionId } = await launchWithExtension(chat.port);
  try {
    const page = await context.newPage();
    await page.goto("https://chatgpt.com/");
    await page.locator(".ProseMirror").waitFor();
    const tabId = await until("the chat tab", () => worker.evaluate(async () => (await chrome.tabs.query({ url: "https://chatgpt.com/*" }))[0]?.id));
    const popup = await pairForPrograms(context, extensionId, tabId, host);
    await popup.close();
    await page.bringToFront();
    await body({ w, chat, host, context, extensionId, page, tabId });
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
}

const overlay = (page) => page.locator("keyless-overlay");

async function generations(host) {
  const res = await fetch(`http://127.0.0.1:${host.port}/v1/generations`, { headers: { authorization: `Bearer ${host.token}` } });
  return (await res.json()).reverse();
}

test("a program with two generates thinks with the chat tab; a shape mismatch is corrected in the same chat", async () => {
  let open;
  const third = new Promise((r) => (open = r));
  await withChat(
    [
      // A kind that neither the program nor the report says: only the first answer can bring it.
      { text: "Here is the classification:\n\n```json\n{\"kind\": \"usability\", \"severity\": \"2\"}\n```" },
      // The steps come as null: the shape wants a list.
      { text: "```json\n{\"title\": \"Crash when saving a file with a space in its name\", \"steps\": null}\n```" },
      { text: "```json\n{\"title\": \"Crash when saving a file with a space in its name\", \"steps\": [\"Create a file named 'a b.txt'\", \"Press Save\", \"The app crashes\"]}\n```", gate: third, chunk: 12, delayMs: 60 },
    ],
    async ({ w, chat, host, context, page }) => {
      const run = runProgram(w);
      // The correction is in the chat; its reply waits until the overlay has been looked at.
      await until("the correction", () => chat.received.length >= 3, 60000);
      open();
      await until("the fitting JSON", async () => /fits the shape/.test(await overlay(page).locator(".fit").textContent().catch(() => "")), 30000);
      await page.screenshot({ path: join(shots, "extension-chat-program.png") });
      const out = await run.done;
      assert.equal(out.code, 0, out.stderr);
      assert.deepEqual(JSON.parse(out.stdout), {
        title: "Crash when saving a file with a space in its name",
        kind: "usability",
        severity: 2,
        steps: ["Create a file named 'a b.txt'", "Press Save", "The app crashes"],
      });
      // The chat's log: the two prompts and one correction, nothing else.
      assert.equal(chat.received.length, 3);
      const [first, second, correction] = chat.received.map((m) => m.text);
      assert.match(first, /^\[keyless · \.as program examples\/chat\/triage\.as\]/);
      assert.match(first, /Classify the report\./);
      assert.ok(first.includes(REPORT), first);
      assert.match(first, /Answer with exactly one fenced ```json block holding one JSON object of this shape: \{ "kind": string, "severity": number \}/);
      assert.match(second, /List the steps to reproduce it/);
      // The second prompt carries the first answer (`use label.kind`), which the first did not.
      assert.ok(!first.includes("usability"), first);
      assert.match(second, /\[label\.kind\]\nusability\n/);
      assert.match(correction, /attempt 2\]/);
      assert.match(correction, /Your previous answer was not accepted: "steps" is null; it must be a list\./);
      assert.ok(!correction.includes("List the steps"), "a correction carries only the correction");
      // The overhead per generate beyond the model's own streaming.
      const gens = await generations(host);
      assert.equal(gens.length, 3);
      const toPaste = gens.map((g, i) => chat.received[i].at - g.asked_at);
      const note = await overlay(page).locator(".foot").textContent();
      const endToAnswer = Number(/went to the program (\d+) ms after the reply ended/.exec(note)?.[1]);
      assert.ok(Number.isFinite(endToAnswer), note);
      console.log(`keyless://chat overhead: request to paste ${toPaste.join(", ")} ms; stream end to answer delivered ${endToAnswer} ms (the last generate)`);
      assert.ok(gens.every((g) => g.state === "answered" && g.site === "ChatGPT"), JSON.stringify(gens));
      // The dashboard's .as runs panel: the run, the chat's three requests, the trace's tab.
      const dash = await context.newPage();
      await dash.goto(host.dashboard);
      await until("the chat's requests", async () => (await dash.locator("#chat li").count()) === 3);
      await dash.locator("#runs li").first().click();
      await until("the trace", async () => /keyless:\/\/chat · the ChatGPT tab/.test(await dash.locator("#run-detail").textContent()));
      await dash.screenshot({ path: join(shots, "dashboard-chat-program.png"), fullPage: true });
      await dash.close();
    },
  );
});

test("an answer with a trailing comma completes as the program reads it; a timeout says what the page showed", async () => {
  await withChat(
    [
      // What models write: a trailing comma, in the object and in a list.
      { text: "```json\n{\"kind\": \"bug\", \"severity\": 2,}\n```" },
      { text: "```json\n{\"title\": \"Crash on save\", \"steps\": [\"Save 'a b.txt'\",],}\n```", chunk: 9, delayMs: 40 },
      // Begun and never finished: the site stops with the object open.
      { text: "```json\n{\"kind\": \"bug\", \"sev" },
    ],
    async ({ w, chat, page }) => {
      let run = runProgram(w);
      let out = await run.done;
      assert.equal(out.code, 0, out.stderr);
      assert.deepEqual(JSON.parse(out.stdout), { title: "Crash on save", kind: "bug", severity: 2, steps: ["Save 'a b.txt'"] });
      assert.equal(chat.received.length, 2, "no correction: the answers were read as the program reads them");
      assert.match(await overlay(page).locator(".fit").textContent(), /fits the shape/);
      // The program's own timeout, shorter than the truncation budget: it says what the tab saw.
      run = runProgram(w, ["--model-timeout", "6"]);
      out = await run.done;
      assert.equal(out.code, 1, out.stdout);
      assert.match(out.stderr, /error\[KA_AS_MODEL_TIMEOUT\]: no complete answer within 6s \(--model-timeout\); the ChatGPT tab showed a reply that began a JSON answer but has not finished it/, out.stderr);
      assert.equal(chat.received.length, 3);
    },
  );
});

test("a truncated reply, a full chat, the user's Cancel, a reload and a closed tab each end the program with its own code, asking once", async () => {
  let never;
  const hold = new Promise((r) => (never = r));
  await withChat(
    [
      { text: "```json\n{\"kind\": \"bug\", \"sev" },
      { text: "I cannot continue here.", banner: "You've reached the maximum length for this conversation, but you can keep talking by starting a new chat." },
      { text: "{\"kind\": \"bug\"}", gate: hold },
      { text: "{\"kind\": \"bug\"}", gate: hold },
      { text: "{\"kind\": \"bug\"}", gate: hold },
    ],
    async ({ w, chat, context, extensionId, page }) => {
      const options = await context.newPage();
      await options.goto(`chrome-extension://${extensionId}/options.html`);
      await options.locator("#truncation").fill("5");
      await options.locator("#save").click();
      await until("saved", async () => (await options.locator("#verdict").textContent()).startsWith("Saved"));
      await options.close();
      await page.bringToFront();
      const ends = async (code, before) => {
        const out = await run.done;
        assert.equal(out.code, 1, out.stdout);
        assert.match(out.stderr, new RegExp(`error\\[${code}\\]: `), out.stderr);
        assert.equal(chat.received.length, before + 1, `${code}: asked once`);
      };
      let run = runProgram(w);
      await ends("KA_REPLY_TRUNCATED", 0);
      await until("the overlay's code", async () => (await overlay(page).locator(".error .code").textContent().catch(() => "")) === "KA_REPLY_TRUNCATED");
      run = runProgram(w);
      await ends("KA_CHAT_EXHAUSTED", 1);
      // A full chat takes nothing more: the user opens a new chat in the same tab.
      await page.goto("https://chatgpt.com/");
      await page.locator(".ProseMirror").waitFor();
      // The user presses Cancel in the overlay while the model answers.
      run = runProgram(w);
      await until("the request", () => chat.received.length >= 3, 30000);
      await overlay(page).locator(".gen button.danger").click();
      await ends("KA_AS_CANCELLED", 2);
      // The page reloads while the model answers.
      run = runProgram(w);
      await until("the request", () => chat.received.length >= 4, 30000);
      await page.reload();
      await ends("KA_AS_CHAT_CLOSED", 3);
      await page.locator(".ProseMirror").waitFor();
      // The tab closes while the model answers.
      run = runProgram(w);
      await until("the request", () => chat.received.length >= 5, 30000);
      await page.close();
      await ends("KA_AS_CHAT_CLOSED", 4);
      never();
    },
  );
});

test("a tab in the middle of an AgentScript task refuses a program with KA_AS_CHAT_BUSY", async () => {
  let release;
  const held = new Promise((r) => (release = r));
  // The task's reply is held: the session runs, waiting for it.
  await withChat([{ text: "~~~~agentscript\n@@done\n<<<MSG\nNothing to do.\n>>>MSG\n@@end\n@@eof\n~~~~", gate: held }], async ({ w, chat, context, extensionId, page, tabId }) => {
    const popup = await context.newPage();
    await popup.goto(`chrome-extension://${extensionId}/popup.html?tab=${tabId}`);
    await popup.locator("#paired").waitFor();
    await popup.locator("#task").fill("Say whether anything is left to do.");
    await popup.locator("#start").click();
    await until("the session", async () => (await popup.locator("#run").textContent()).includes("running"));
    await popup.close();
    await page.bringToFront();
    await until("the task's prompt", () => chat.received.length >= 1);
    const out = await runProgram(w).done;
    assert.equal(out.code, 1);
    assert.match(out.stderr, /error\[KA_AS_CHAT_BUSY\]: the ChatGPT tab is in the middle of an AgentScript task/);
    assert.equal(chat.received.length, 1, "nothing of the program reached the chat");
    release();
  });
});
