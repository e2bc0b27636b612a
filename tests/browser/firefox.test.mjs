// The extension end to end in Firefox: Debian's Firefox ESR with the Firefox build
// (target/extension-firefox), over WebDriver BiDi (puppeteer-core), on the same fake chat sites
// (strict CSP, streamed replies, a ProseMirror-like composer) as the Chromium suite, with a real
// `keyless-host serve` on a temp git workspace with a bare origin. The scenarios the Chromium suite
// runs: pairing through the native-messaging host (no code) and with a code, a whole task to a
// pushed commit with confirmations in the overlay, results sent as an attachment, Pause, Resume
// and Stop, a truncated reply and a full chat continued in a new chat, Gemini and AI Studio, an
// MCP server's form.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { bin, root, shots, startHost } from "./host.mjs";
import { startFakeChat } from "./fakechat/server.mjs";
import { COMPOSERS, fenced, git, GREET_PY, FIRST_SITES, MORE_SITES, ORIGINS, recorderCall, recorderPiece, siteTaskReplies, until, workspace } from "./scenario.mjs";
import { launchFirefox, openExtensionPage, overlayClick, overlayCount, overlayText, EXTENSION_UUID, firefoxBin } from "./firefox.mjs";

const skip = existsSync(firefoxBin) ? false : "no /usr/bin/firefox-esr (cargo xtask test installs it)";
if (skip && process.env.CI === "true") throw new Error("firefox-esr is missing under CI");

const pill = (page) => overlayText(page, ".pill");

/** The popup for `tabId`: wait until it is paired, then start `task` in `mode`. */
async function start(popup, { mode, task }) {
  await popup.waitForSelector("#paired", { visible: true, timeout: 15000 });
  await until("the connection", async () => (await popup.$eval("#conn-text", (e) => e.textContent)).startsWith("connected"));
  await popup.select("#mode", mode);
  await popup.$eval("#task", (e, t) => {
    e.value = t;
    e.dispatchEvent(new Event("input", { bubbles: true }));
  }, task);
  await popup.click("#start");
  await until("the session", async () => (await popup.$eval("#run", (e) => e.textContent)).includes("running"));
}

/** Pairs the popup with `host` by its address and code, as a user types them. */
async function pairWithCode(popup, host) {
  await popup.$eval("#host-url", (e, v) => {
    e.value = v;
  }, `http://127.0.0.1:${host.port}`);
  await popup.type("#code", host.code);
  await popup.click("#pair-btn");
}

/** The chat tab's id, as the extension sees it (asked from an extension page). */
function tabIdOf(popup, url) {
  return popup.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id, url);
}

/**
 * A workspace (made ready by `prepare` before the host starts), the fake chat with `replies`, a
 * host in `mode`, and Firefox on `site`'s page with the popup for its tab paired by code; runs
 * `body`, then closes everything.
 */
async function withFirefoxChat(site, replies, mode, body, prepare = () => undefined) {
  const w = workspace();
  prepare(w);
  const chat = await startFakeChat(replies);
  const host = await startHost(w.ws, w.config, mode);
  const ff = await launchFirefox(chat.port);
  try {
    const page = await ff.browser.newPage();
    await page.goto(`${ORIGINS[site]}/`);
    await page.waitForSelector(COMPOSERS[site]);
    const probe = await openExtensionPage(ff.browser, ff.extensionUrl("popup.html"), "#pair");
    const tabId = await until("the chat tab", () => tabIdOf(probe, `${ORIGINS[site]}/*`));
    await probe.close();
    const popup = await openExtensionPage(ff.browser, ff.extensionUrl(`popup.html?tab=${tabId}`), "#pair");
    await pairWithCode(popup, host);
    await body({ w, chat, host, ff, page, popup });
  } finally {
    await ff.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
}

test("Firefox: paired through the native-messaging host, a task runs to a pushed commit with confirmations in the overlay", { skip }, async () => {
  const w = workspace();
  const home = join(w.dir, "home");
  mkdirSync(home);
  // The user's HOME and config folder, for keyless-host install, serve, Firefox and the native
  // host Firefox starts.
  const env = { HOME: home, XDG_CONFIG_HOME: w.config };
  const replies = [
    fenced(
      [
        "@@say", "<<<MSG", "Creating the greeting module.", "MSG>>>", "@@end",
        "@@newfile src/greet.py", "<<<CONTENT", GREET_PY, "CONTENT>>>", "@@end",
        "@@runcommand", "<<<CMD", "wc -l src/greet.py", "CMD>>>", "@@end",
        "@@next", "@@end", "@@eof",
      ].join("\n"),
    ),
    fenced(["@@runcommand", "<<<CMD", "echo built > build.txt", "CMD>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    fenced(["@@commit", "<<<MSG", "Add the greeting module", "MSG>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
    fenced(["@@say", "<<<MSG", "Done: committed and pushed.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
  // Reply 2 waits until batch 1's change has been looked at in the overlay.
  let releaseReply2 = () => {};
  const reply2 = new Promise((resolve) => (releaseReply2 = resolve));
  const chat = await startFakeChat(replies.map((text, i) => ({ text, chunk: 18, delayMs: 25, gate: i === 1 ? reply2 : undefined })));
  const installed = execFileSync(bin, ["install"], { env: { ...process.env, ...env }, encoding: "utf8" });
  const registration = join(home, ".mozilla", "native-messaging-hosts", "dev.keyless.host.json");
  assert.match(installed, new RegExp(`registered dev\\.keyless\\.host in ${registration.replace(/[.]/g, "\\.")}`));
  const manifest = JSON.parse(readFileSync(registration, "utf8"));
  assert.deepEqual(manifest.allowed_extensions, ["keyless@keyless.dev"], "the registration allows the keyless add-on only");
  assert.equal(manifest.allowed_origins, undefined);
  // doctor sees the registration, and Firefox on this machine.
  const doctor = execFileSync(bin, ["doctor", "--workspace", w.ws], { env: { ...process.env, ...env }, encoding: "utf8" });
  assert.match(doctor, /pairing\s+firefox: the extension pairs without a code \(.*\.mozilla\/native-messaging-hosts\/dev\.keyless\.host\.json\)/);
  const host = await startHost(w.ws, w.config, "ask", { ...process.env, HOME: home });
  const ff = await launchFirefox(chat.port, { env });
  const errors = [];
  try {
    const page = await ff.browser.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto("https://chatgpt.com/");
    await page.waitForSelector("#prompt-textarea");
    // The popup pairs by itself: Firefox starts keyless-host as its native-messaging host.
    const probe = await openExtensionPage(ff.browser, ff.extensionUrl("popup.html"), "#pair, #paired");
    const tabId = await until("the chat tab", () => tabIdOf(probe, "https://chatgpt.com/*"));
    await probe.close();
    const popup = await openExtensionPage(ff.browser, ff.extensionUrl(`popup.html?tab=${tabId}`), "#paired");
    assert.equal(await popup.$eval("#conn-text", (e) => e.textContent), `connected to http://127.0.0.1:${host.port}`);
    assert.equal(await popup.$eval("#code", (e) => e.value), "", "no code was typed");
    const pairings = JSON.parse(readFileSync(join(w.config, "keyless", "pairing.json"), "utf8"));
    assert.deepEqual(pairings.clients.map((c) => c.extension_id), [EXTENSION_UUID], "the token is bound to the add-on's moz-extension origin");
    await popup.screenshot({ path: join(shots, "firefox-native-pairing.png") });
    await start(popup, { mode: "Ask", task: "Add a greeting module, then commit it." });
    await page.bringToFront();

    await until("the prompt at the model", () => chat.received.length >= 1);
    assert.match(chat.received[0].text, /AgentScript v1/);
    assert.match(chat.received[0].text, /# Task\nAdd a greeting module, then commit it\.$/);
    // Reply 1 streams; the overlay follows it; the results go back by themselves.
    await until("commands in the overlay", async () => (await overlayCount(page, "td.cmd")) >= 2);
    await page.screenshot({ path: join(shots, "firefox-streaming.png") });
    await until("results of batch 1", () => chat.received.length >= 2);
    assert.match(chat.received[1].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=1/);
    assert.match(chat.received[1].text, /#2 newfile \| src\/greet\.py ---\nstatus: ok/);
    assert.match(chat.received[1].text, /#3 runcommand \| wc -l src\/greet\.py ---\nstatus: ok \| exit code: 0/);
    assert.equal(readFileSync(join(w.ws, "src/greet.py"), "utf8"), `${GREET_PY}\n`);
    // The batch's change, under the summary, with its diff.
    await until("the change in the overlay", async () => /^Changes: 1 file changed, \+7 −0$/.test(await overlayText(page, ".changes h5")));
    assert.equal(await overlayCount(page, "tr.diffs details.diff"), 1);
    await page.screenshot({ path: join(shots, "firefox-diff.png") });
    releaseReply2();

    // Reply 2 needs a confirmation in Ask mode: approved in the overlay.
    await until("the confirmation", async () => /echo built > build\.txt/.test(await overlayText(page, ".prompt code")));
    assert.match(await overlayText(page, ".prompt"), /Risky/);
    await page.screenshot({ path: join(shots, "firefox-confirm.png") });
    await overlayClick(page, "Approve");
    await until("results of the approved command", () => chat.received.length >= 3);
    assert.match(chat.received[2].text, /#1 runcommand \| echo built > build\.txt ---\nstatus: ok/);
    assert.equal(readFileSync(join(w.ws, "build.txt"), "utf8"), "built\n");

    // Reply 3 commits and pushes, confirmed too.
    await until("the commit's confirmation", async () => /@@commit Add the greeting module/.test(await overlayText(page, ".prompt code")));
    await overlayClick(page, "Approve");
    await until("results of the commit", () => chat.received.length >= 4);
    assert.match(chat.received[3].text, /#1 commit \| Add the greeting module ---\nstatus: ok/);

    await until("the done state", async () => (await pill(page)) === "done");
    await page.screenshot({ path: join(shots, "firefox-done.png") });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 4, "nothing is sent after @@done");
    assert.equal(git(w.ws, "log", "-1", "--format=%s"), "Add the greeting module");
    assert.equal(git(w.origin, "log", "-1", "--format=%s", "feature/greet"), "Add the greeting module");
    assert.equal(git(w.ws, "status", "--porcelain"), "");
    assert.deepEqual(errors, []);
  } finally {
    releaseReply2();
    await ff.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("Firefox: paired with a code on a Claude-like page, results too long to paste go as an attachment, @@ask is answered in the overlay", { skip }, async () => {
  const w = workspace();
  const lines = Array.from({ length: 400 }, (_, i) => `line ${i}: *stars*, <tags>, \`ticks\` and a tab\there`);
  const body = lines.join("\n");
  const chat = await startFakeChat([
    { text: fenced(["@@newfile docs/notes.md", "<<<CONTENT", body, "CONTENT>>>", "@@end", "@@readfile docs/notes.md", "@@end", "@@next", "@@end", "@@eof"].join("\n")), chunk: 400, delayMs: 20 },
    { text: fenced(["@@ask", "<<<MSG", "Which license should docs/notes.md carry?", "MSG>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
    { text: fenced(["@@done", "@@end", "@@eof"].join("\n")) },
  ]);
  // A home of its own, with no registration: the popup must ask for a code.
  const home = join(w.dir, "home");
  mkdirSync(home);
  const env = { HOME: home, XDG_CONFIG_HOME: w.config };
  const host = await startHost(w.ws, w.config, "auto", { ...process.env, HOME: home });
  const ff = await launchFirefox(chat.port, { env });
  try {
    // Claude takes at most 1,000 pasted characters here (a selector override): the results go as
    // a file.
    const options = await openExtensionPage(ff.browser, ff.extensionUrl("options.html"), "#overrides");
    await options.$eval("#overrides", (e) => {
      e.value = '{"claude": {"max_paste_chars": 1000}}';
    });
    await options.click("#save");
    await until("saved", async () => (await options.$eval("#verdict", (e) => e.textContent)).startsWith("Saved"));
    await options.close();

    const page = await ff.browser.newPage();
    await page.goto("https://claude.ai/chat");
    await page.waitForSelector('div[aria-label="Write your prompt to Claude"] .ProseMirror');
    const probe = await openExtensionPage(ff.browser, ff.extensionUrl("popup.html"), "#pair");
    const tabId = await until("the chat tab", () => tabIdOf(probe, "https://claude.ai/*"));
    await probe.close();
    const popup = await openExtensionPage(ff.browser, ff.extensionUrl(`popup.html?tab=${tabId}`), "#pair");
    // No native host registered here: the popup says how to pair without a code, and takes one.
    // Firefox's own words for a missing native host are read as such (extension/src/browser.ts).
    await until("the hint", async () => /To pair without a code, run keyless-host install once/.test(await popup.$eval("body", (e) => e.textContent)));
    await pairWithCode(popup, host);
    await start(popup, { mode: "Auto", task: "Write docs/notes.md." });
    await page.bringToFront();

    await until("the attached results", () => chat.received.length >= 2, 60000);
    assert.equal(chat.received[0].site, "claude");
    assert.equal(readFileSync(join(w.ws, "docs/notes.md"), "utf8"), `${body}\n`, "byte-exact through the rendered DOM");
    const r = chat.received[1];
    assert.equal(r.attachments.length, 1, JSON.stringify(r).slice(0, 300));
    assert.equal(r.attachments[0].name, "keyless-results-t1-b1.txt");
    assert.match(r.attachments[0].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=1\n--- result 1\/2 \| #1 newfile \| docs\/notes\.md ---\nstatus: ok/);
    assert.match(r.text, /The full results \(\d+ characters\) are in the attached file keyless-results-t1-b1\.txt\./);

    await until("the question", async () => /Which license/.test(await overlayText(page, ".prompt code")));
    await page.evaluate(() => {
      const input = document.querySelector("keyless-overlay").shadowRoot.querySelector("input.answer");
      input.value = "MIT";
    });
    await page.screenshot({ path: join(shots, "firefox-ask.png") });
    await overlayClick(page, "Answer");
    await until("the answer at the model", () => chat.received.length >= 3);
    assert.match(chat.received[2].text, /#1 ask \| Which license should docs\/notes\.md carry\? ---\nstatus: ok\n<<<OUTPUT\nMIT\nOUTPUT>>>/);
    await until("the done state", async () => (await pill(page)) === "done");
    await page.screenshot({ path: join(shots, "firefox-claude-done.png") });
  } finally {
    await ff.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("Firefox: Pause holds a finished reply until Resume; Stop cancels the running command and sends nothing", { skip }, async () => {
  const replies = [
    { text: fenced(["@@mkdir held", "@@end", "@@next", "@@end", "@@eof"].join("\n")), chunk: 8, delayMs: 40 },
    { text: fenced(["@@runcommand", "<<<CMD", "sleep 30", "CMD>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
  ];
  await withFirefoxChat("chatgpt", replies, "auto", async ({ w, chat, host, page, popup }) => {
    await start(popup, { mode: "Auto", task: "Make a folder." });
    await popup.click("#pause");
    await until("paused", async () => (await popup.$eval("#run", (e) => e.textContent)).includes("paused"));
    // The reply completes while paused: it waits, nothing runs.
    await until("the held reply", async () => (await pill(page)) === "paused");
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 1);
    assert.ok(!existsSync(join(w.ws, "held")));
    await popup.click("#pause"); // Resume
    await until("the results after Resume", () => chat.received.length >= 2);
    assert.ok(existsSync(join(w.ws, "held")));
    // The next reply runs `sleep 30`: Stop kills it and nothing goes back to the chat.
    await until("the running command", async () => (await overlayCount(page, ".s-running")) === 1);
    await popup.click("#stop");
    await until("stopped", async () => (await popup.$eval("#run", (e) => e.textContent)).includes("stopped"));
    await until("the stopped overlay", async () => (await pill(page)) === "stopped", 15000);
    await until("the cancelled batch's summary", async () => /Stopped: nothing was sent/.test(await overlayText(page, ".summary")), 15000);
    await page.screenshot({ path: join(shots, "firefox-stopped.png") });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 2, "nothing is sent after Stop");
    const batches = await (await fetch(`http://127.0.0.1:${host.port}/v1/audit?limit=5`, { headers: { authorization: `Bearer ${host.token}` } })).json();
    assert.ok(batches.some((b) => b.command === "runcommand" && b.code === "KA_CANCELLED"), JSON.stringify(batches));
  });
});

test("Firefox: a reply without @@eof gets its correction and nothing runs; a full chat is KA_CHAT_EXHAUSTED and the task continues in a new chat", { skip }, async () => {
  const replies = [
    { text: fenced(["@@mkdir half", "@@end", "@@newfile half/a.txt", "<<<CONTENT", "cut off here"].join("\n")) },
    { text: "I cannot continue here.", banner: "You've reached the maximum length for this conversation, but you can keep talking by starting a new chat." },
    // The new chat, after the handover.
    { text: fenced(["@@mkdir whole", "@@end", "@@next", "@@end", "@@eof"].join("\n")) },
    { text: fenced(["@@done", "@@end", "@@eof"].join("\n")) },
  ];
  await withFirefoxChat("chatgpt", replies, "auto", async ({ w, chat, ff, page, popup }) => {
    const options = await openExtensionPage(ff.browser, ff.extensionUrl("options.html"), "#truncation");
    await options.$eval("#truncation", (e) => {
      e.value = "5";
    });
    await options.click("#save");
    await until("saved", async () => (await options.$eval("#verdict", (e) => e.textContent)).startsWith("Saved"));
    await options.close();
    await start(popup, { mode: "Auto", task: "Make half a folder." });
    await page.bringToFront();
    await until("the correction", () => chat.received.length >= 2, 30000);
    assert.match(chat.received[1].text, /^\[KEYLESSAGENT FORMAT ERROR\]/);
    assert.match(chat.received[1].text, /Your response looks truncated\. Resend it in SMALLER pieces/);
    assert.ok(!existsSync(join(w.ws, "half")), "nothing of a truncated reply runs");
    await until("KA_CHAT_EXHAUSTED", async () => (await overlayText(page, ".error .code")) === "KA_CHAT_EXHAUSTED", 30000);
    await page.screenshot({ path: join(shots, "firefox-exhausted.png") });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(chat.received.length, 2, "nothing is sent into a full chat");
    // Continue in a new chat: a new tab, the handover, and the task goes on there.
    const before = new Set(await ff.browser.pages());
    await overlayClick(page, "Continue in a new ChatGPT chat");
    await until("the handover", () => chat.received.length >= 3, 60000);
    assert.match(chat.received[2].text, /^\[KEYLESSAGENT HANDOVER\] session=\S+ turn=1 batch=\d+\n/);
    assert.match(chat.received[2].text, /\n# Task\nMake half a folder\.\n/);
    await until("the old chat's note", async () => (await pill(page)).includes("continued in ChatGPT"));
    const next = await until("the new tab", async () => (await ff.browser.pages()).find((p) => !before.has(p) && p.url().startsWith("https://chatgpt.com/")));
    await until("@@done in the new chat", async () => (await pill(next)) === "done", 60000);
    assert.ok(existsSync(join(w.ws, "whole")));
    assert.ok(!existsSync(join(w.ws, "half")));
    assert.match(chat.received[3].text, /^\[KEYLESSAGENT RESULTS\] turn=1 batch=\d+\n/);
  });
});

test("Firefox: Gemini, AI Studio, the eight more sites and AI Studio's second imitation, in one browser with one host", { skip }, async () => {
  const w = workspace();
  const chat = await startFakeChat([]);
  const host = await startHost(w.ws, w.config, "auto");
  const ff = await launchFirefox(chat.port);
  // One extension page for the whole run: it finds each chat tab, and (after the first site,
  // started from the popup as a user does) starts each task as the popup's Start does.
  let ext = null;
  try {
    // The other second imitations run in Chromium only (tests/browser/sites.test.mjs).
    for (const [label, slug, url, composer] of [...FIRST_SITES, ...MORE_SITES.filter(([, s]) => !s.endsWith("-2") || s === "aistudio-2")]) {
      const file = `src/greet_${slug.replace("-", "_")}.py`;
      chat.setReplies(siteTaskReplies(label, file).map((text) => ({ text, chunk: 40, delayMs: 10 })));
      const from = chat.received.length;
      const page = await ff.browser.newPage();
      await page.goto(url);
      await page.waitForSelector(composer);
      ext ??= await openExtensionPage(ff.browser, ff.extensionUrl("popup.html"), "#pair");
      const tabId = await until(`${label}: the chat tab`, () => tabIdOf(ext, `${new URL(url).origin}/*`));
      const task = `Add ${file} and commit it.`;
      if (from === 0) {
        const popup = await openExtensionPage(ff.browser, ff.extensionUrl(`popup.html?tab=${tabId}`), "#pair");
        await pairWithCode(popup, host);
        await start(popup, { mode: "Auto", task });
        await popup.close();
      } else {
        const r = await ext.evaluate((req) => chrome.runtime.sendMessage(req), { type: "start", tabId, task });
        assert.ok(r?.ok, `${label}: Start: ${JSON.stringify(r?.error)}`);
      }
      await page.bringToFront();
      await until(`${label}: the done state`, async () => (await pill(page)) === "done", 60000);
      const got = chat.received.slice(from);
      assert.equal(got.length, 3, `${label}: the prompt and two results`);
      assert.equal(readFileSync(join(w.ws, file), "utf8"), `${GREET_PY}\n`, `${label}: the file is byte-exact`);
      assert.match(got[1].text, /status: ok[^\n]*\n<<<OUTPUT\nHello, world!\nOUTPUT>>>/, label);
      assert.equal(git(w.origin, "log", "-1", "--format=%s", "feature/greet"), `Add the greeting module (${label})`);
      if (["gemini", "aistudio", "qwen"].includes(slug)) await page.screenshot({ path: join(shots, `firefox-${slug}-done.png`) });
      await page.close();
    }
  } finally {
    await ff.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("Firefox: an MCP server's form is filled in the overlay, refused values said under it, and its progress shows live", { skip }, async () => {
  const prepare = (w) => recorderPiece(w, root, join(w.dir, "record.jsonl"));
  const call = recorderCall;
  const replies = [
    fenced([...call("steps"), ...call("ask"), "@@next", "@@end", "@@eof"].join("\n")),
    fenced(["@@say", "<<<MSG", "Asked.", "MSG>>>", "@@end", "@@done", "@@end", "@@eof"].join("\n")),
  ];
  await withFirefoxChat(
    "chatgpt",
    replies.map((text) => ({ text, chunk: 24, delayMs: 20 })),
    "auto",
    async ({ chat, page, popup }) => {
      await popup.waitForSelector("#paired", { visible: true, timeout: 15000 });
      await until("the piece list", async () => (await popup.$$('#piece option[value="mcp-form"]')).length > 0);
      await popup.select("#piece", "mcp-form");
      await start(popup, { mode: "Auto", task: "Ask me through the server." });
      await page.bringToFront();
      await until("the form", async () => (await overlayCount(page, ".prompt .eform")) === 1, 60000);
      assert.equal(await overlayText(page, ".eform .server-words"), "Deploy <U+001B>[31mnow<U+001B>[0m?");
      const live = await overlayText(page, "pre.out");
      for (const i of [1, 2, 3]) assert.ok(live.includes(`[recorder] progress ${i}/3: step ${i}<U+001B>[2J\n`), live);
      const fill = (field, value) =>
        page.evaluate(
          (f, v) => {
            const input = document.querySelector("keyless-overlay").shadowRoot.querySelector(`[data-field="${f}"] input`);
            input.value = v;
          },
          field,
          value,
        );
      await fill("name", "Ada");
      await fill("count", "12");
      await overlayClick(page, "Send");
      await until("the refusal", async () => /count: 12 is out of range \(1 to 9\)/.test(await overlayText(page, ".f-error")));
      await page.screenshot({ path: join(shots, "firefox-mcp-form.png") });
      await fill("count", "4");
      await overlayClick(page, "Send");
      await until("the results", () => chat.received.length >= 2);
      assert.ok(chat.received[1].text.includes('{"action":"accept","content":{"count":4,"go":false,"name":"Ada"}}'), chat.received[1].text);
      await until("the done state", async () => (await pill(page)) === "done");
    },
    prepare,
  );
});

// The real-page suite in Firefox (tests/realpages): every page the sites rendered, served at its
// host with its scripts blocked, read by the Firefox build's content script; what it finds must be
// what the expected values say, as in Chromium.
test("Firefox: the adapters on the pages the sites really rendered", { skip }, async () => {
  const { realPages, codeBlocks } = await import("./scenario.mjs");
  const { SITE_HOSTS } = await import("./fakechat/server.mjs");
  const chat = await startFakeChat([]);
  const ff = await launchFirefox(chat.port);
  const failures = [];
  try {
    const popup = await openExtensionPage(ff.browser, ff.extensionUrl("popup.html"), "body");
    for (const [site, name] of realPages()) {
      const want = JSON.parse(readFileSync(join(root, "tests", "realpages", "expected", site, `${name}.json`), "utf8"));
      const url = `https://${SITE_HOSTS[site][0]}/__real/${site}/${name}.html`;
      const page = await ff.browser.newPage();
      try {
        await page.goto(url, { waitUntil: "domcontentloaded" });
        const got = await until(`the content script on ${url}`, () =>
          popup.evaluate(async (u) => {
            const tab = (await browser.tabs.query({})).find((t) => t.url === u);
            if (!tab) return null;
            const r = await browser.tabs.sendMessage(tab.id, { type: "inspect" }).catch(() => null);
            return r?.site ? r : null;
          }, url),
        );
        const seen = {
          composer: want.composer === null ? null : got.composer,
          send: want.send === null ? null : got.send,
          assistant_messages: got.assistantMessages,
          user_messages: got.userMessages,
          last_reply: got.incomplete ? `INCOMPLETE\n${got.lastReply}` : got.lastReply,
          code_blocks: codeBlocks(got.lastReply),
        };
        const expected = { composer: want.composer, send: want.send, assistant_messages: want.assistant_messages, user_messages: want.user_messages, last_reply: want.last_reply, code_blocks: want.code_blocks };
        try {
          assert.deepEqual(seen, expected);
        } catch (e) {
          failures.push(`${site}/${name}: ${e.message}`);
        }
      } finally {
        await page.close();
      }
    }
  } finally {
    await ff.close();
    await chat.close();
  }
  assert.deepEqual(failures, []);
});
