// Every site adapter on its imitation, in one Chromium with the built extension and one
// `keyless-host serve` (Auto mode) on one git workspace with a bare origin: Gemini and AI Studio
// (ChatGPT and Claude have their own tests in extension.test.mjs), the eight more sites of
// SITES.md, and the second imitations of the first four (markup that differs where the facts say
// nothing: no data-turn-role on AI Studio, whose Run button comes back before its last tokens; no
// author-role attributes on ChatGPT; thinking panels holding command lines). Each runs the whole
// task: a file, a command, a commit pushed, @@done; on the eight, the first results are too long
// to paste and go through the site's file input. Then Qwen's code editors without a readable
// model (KA_REPLY_INCOMPLETE, nothing runs), a reply inside each real editor the page script
// reads (CodeMirror 6 and 5, Ace, Monaco, from npm), and the selector picker on a page whose composer was
// renamed: the doctor's report, "Pick it", the derived override, the task running.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchWithExtension, shots, startHost } from "./host.mjs";
import { REAL_ROOTS, startFakeChat } from "./fakechat/server.mjs";
import { fenced, FIRST_SITES, git, GREET_PY, inspect, MORE_SITES, siteTaskReplies, until, workspace } from "./scenario.mjs";

const SITES = [...FIRST_SITES, ...MORE_SITES];

const overlay = (page) => page.locator("keyless-overlay");
const pill = (page) => overlay(page).locator(".pill");

describe("every site adapter on its imitation, in one browser with one host", () => {
  let w;
  let chat;
  let host;
  let browser;
  let paired = false;

  before(async () => {
    w = workspace();
    chat = await startFakeChat([]);
    host = await startHost(w.ws, w.config, "auto");
    browser = await launchWithExtension(chat.port);
    // The eight more sites paste at most 1,000 characters here: the first results of their task
    // go as a file through the site's own file input.
    const overrides = Object.fromEntries(MORE_SITES.filter(([, slug]) => !slug.endsWith("-2")).map(([, slug]) => [slug, { max_paste_chars: 1000 }]));
    await setOverrides(JSON.stringify(overrides));
  });

  after(async () => {
    await browser?.context.close();
    host?.child.kill("SIGTERM");
    await chat?.close();
  });

  /** Stores the user's selector overrides (JSON text), as the options page saves them. */
  async function setOverrides(text) {
    await browser.worker.evaluate(async (t) => {
      const { settings = {} } = await chrome.storage.local.get("settings");
      await chrome.storage.local.set({ settings: { ...settings, selectorOverrides: t } });
    }, text);
  }

  /** Opens `url`, waits for `composer`, and returns the page with its tab id. */
  async function open(url, composer) {
    const page = await browser.context.newPage();
    await page.goto(url);
    await page.locator(composer).first().waitFor();
    const pattern = `${new URL(url).origin}/*`;
    const tabId = await until("the chat tab", () => browser.worker.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id, pattern));
    // What the overlay draws as a problem while valid replies stream.
    await page.evaluate(() => {
      window.__keylessProblems = [];
      const attach = () => {
        const el = document.querySelector("keyless-overlay");
        if (!el?.shadowRoot) return void setTimeout(attach, 10);
        new MutationObserver(() => {
          for (const d of el.shadowRoot.querySelectorAll(".diag .msg")) window.__keylessProblems.push(d.textContent);
        }).observe(el.shadowRoot, { subtree: true, childList: true, characterData: true });
      };
      attach();
    });
    return { page, tabId };
  }

  /** The popup for `tabId`, paired with the host (with its code, the first time). */
  async function popupFor(tabId) {
    const popup = await browser.context.newPage();
    await popup.setViewportSize({ width: 380, height: 720 });
    await popup.goto(`chrome-extension://${browser.extensionId}/popup.html?tab=${tabId}`);
    if (!paired) {
      await popup.locator("#pair").waitFor();
      await popup.locator("#host-url").fill(`http://127.0.0.1:${host.port}`);
      await popup.locator("#code").fill(host.code);
      await popup.locator("#pair-btn").click();
      paired = true;
    }
    await popup.locator("#paired").waitFor();
    await until("the connection", async () => (await popup.locator("#conn-text").textContent()).startsWith("connected"));
    return popup;
  }

  async function start(tabId, task) {
    const popup = await popupFor(tabId);
    await popup.selectOption("#mode", "Auto");
    await popup.locator("#task").fill(task);
    await popup.locator("#start").click();
    await until("the session", async () => (await popup.locator("#run").textContent()).includes("running"));
    await popup.close();
  }

  for (const [label, slug, url, composer] of SITES) {
    it(`${label}: the task runs to a pushed commit and @@done`, async () => {
      const file = `src/greet_${slug.replace("-", "_")}.py`;
      const attached = MORE_SITES.some(([, s]) => s === slug) && !slug.endsWith("-2");
      chat.setReplies(siteTaskReplies(label, file, { long: attached }).map((text) => ({ text, chunk: attached ? 80 : 40, delayMs: 10 })));
      const from = chat.received.length;
      const { page, tabId } = await open(url, composer);
      try {
        await start(tabId, `Add ${file} and commit it.`);
        await until(`${label}: the done state`, async () => (await pill(page).textContent()) === "done", 90000);
        if (!slug.endsWith("-2")) {
          const name = FIRST_SITES.some(([, s]) => s === slug) ? `extension-${slug}-done.png` : `sites-${slug}.png`;
          await page.screenshot({ path: join(shots, name) });
        }
        const got = chat.received.slice(from);
        assert.equal(got.length, 3, `${label}: the prompt and two results, nothing after @@done`);
        assert.match(got[0].text, /AgentScript v1/);
        assert.equal(readFileSync(join(w.ws, file), "utf8"), `${GREET_PY}\n`, `${label}: the file is byte-exact`);
        const ran = new RegExp(`#3 runcommand \\| python3 ${file.replace(".", "\\.")} ---\\nstatus: ok[^\\n]*\\n<<<OUTPUT\\nHello, world!\\nOUTPUT>>>`);
        if (attached) {
          // Through the site's file input: one file with the whole results, a pointer pasted.
          assert.equal(got[1].attachments.length, 1, `${label}: the results as one attachment`);
          assert.match(got[1].attachments[0].name, /^keyless-results-t\d+-b\d+\.txt$/);
          assert.match(got[1].attachments[0].text, ran);
          assert.match(got[1].attachments[0].text, /\n500\nOUTPUT>>>/);
          assert.match(got[1].text, /The full results \(\d+ characters\) are in the attached file keyless-results-t\d+-b\d+\.txt\./);
          assert.equal(got[2].attachments.length, 0, `${label}: short results pasted`);
        } else assert.match(got[1].text, ran);
        assert.equal(git(w.origin, "log", "-1", "--format=%s", "feature/greet"), `Add the greeting module (${label})`);
        assert.deepEqual(await page.evaluate(() => window.__keylessProblems), [], `${label}: no false problem while streaming`);
        if (slug === "aistudio-2") {
          // The results went out only after each reply's footer showed (its last tokens came
          // after the Run button was back).
          const footers = await page.evaluate(() => window.__footers);
          assert.ok(footers.length >= 2, `footers seen: ${footers}`);
          assert.ok(got[1].at >= footers[0], "the first results waited for the first footer");
          assert.ok(got[2].at >= footers[1], "the second results waited for the second footer");
        }
      } finally {
        await page.close();
      }
    });
  }

  // ChatGPT's layout since 2026-09 (SITES.md): units keyed by data attributes, the reply body
  // by its style attribute, code blocks drawn again without pre, and a virtualized thread that
  // unmounts the newest exchanges while the user scrolls up and mounts them again as new
  // elements. The whole task runs while the test scrolls up and down all along.
  it("ChatGPT 2026-09: the task runs to a pushed commit and @@done while the user scrolls the virtualized thread", async () => {
    const label = "ChatGPT 2026-09";
    const file = "src/greet_chatgpt_2026_09.py";
    chat.setReplies(siteTaskReplies(label, file).map((text) => ({ text, chunk: 30, delayMs: 15 })));
    const from = chat.received.length;
    const { page, tabId } = await open("https://chatgpt.com/?variant=2026-09", "form[data-chatgpt-composer] [data-composer-markdown]");
    let scrolling = true;
    let scrolls = 0;
    const scroller = (async () => {
      while (scrolling) {
        await new Promise((r) => setTimeout(r, 350));
        await page.evaluate((n) => (n % 2 ? window.__timeline.down() : window.__timeline.up()), scrolls).catch(() => undefined);
        scrolls++;
      }
    })();
    try {
      await start(tabId, `Add ${file} and commit it.`);
      await until(`${label}: the done state`, async () => (await pill(page).textContent()) === "done", 90000);
      scrolling = false;
      await scroller;
      await page.evaluate(() => window.__timeline.down());
      await page.screenshot({ path: join(shots, "sites-chatgpt-2026-09.png") });
      const got = chat.received.slice(from);
      assert.equal(got.length, 3, `${label}: the prompt and two results, nothing after @@done (scrolled ${scrolls} times)`);
      assert.equal(readFileSync(join(w.ws, file), "utf8"), `${GREET_PY}\n`, `${label}: the file is byte-exact`);
      assert.match(got[1].text, new RegExp(`#3 runcommand \\| python3 ${file.replace(".", "\\.")} ---\\nstatus: ok`));
      assert.equal(git(w.origin, "log", "-1", "--format=%s", "feature/greet"), `Add the greeting module (${label})`);
      assert.deepEqual(await page.evaluate(() => window.__keylessProblems), [], `${label}: no false problem while streaming`);
      assert.ok(scrolls >= 4, `the thread was scrolled during the task (${scrolls})`);
    } finally {
      scrolling = false;
      await page.close();
    }
  });

  // Fail safe when a site differs from its adapter: every imitation with its stop
  // signal selector broken (the reply streams with no recognized stop signal: no false problem,
  // it completes on @@eof and quiet), and with the class (or attribute) its replies carry renamed
  // on the page (the reply is read, or the doctor shows the reply selector broken; it is never
  // taken for the user's message).
  const RENAMED = {
    chatgpt: "markdown", claude: "font-claude-message", gemini: "markdown", aistudio: "turn-content", deepseek: "ds-markdown",
    grok: "response-content-markdown", mistral: "[data-message-part-type]", perplexity: "prose", copilot: "[data-content=ai-message]",
    kimi: "markdown-container", qwen: "response-message-content", openrouter: "[data-testid=assistant-message]", "chatgpt-2": "markdown", "claude-2": "font-claude-message",
    "gemini-2": "markdown", "aistudio-2": "turn-content", "chatgpt-2026-09": "[data-markdown-text-style]",
  };
  const FAILSAFE = [
    ["ChatGPT", "chatgpt", "https://chatgpt.com/", "#prompt-textarea"],
    ["Claude", "claude", "https://claude.ai/new", ".ProseMirror"],
    ["ChatGPT 2026-09", "chatgpt-2026-09", "https://chatgpt.com/?variant=2026-09", "form[data-chatgpt-composer] [data-composer-markdown]"],
    ...SITES,
  ];
  const adapterOf = (slug) => slug.replace(/-2$|-2026-09$/, "");
  const shortTask = (slug, marker) => fenced(["@@say", "<<<MSG", `Reply ${marker} from the model.`, "MSG>>>", "@@end", "@@newfile", `src/failsafe_${slug.replaceAll("-", "_")}.txt`].join("\n").replace("@@newfile\n", "@@newfile ") + ["", "<<<CONTENT", "safe", "CONTENT>>>", "@@end", "@@done", "<<<MSG", "done", "MSG>>>", "@@end", "@@eof"].join("\n"));
  it("every imitation with its stop signal selector broken: no false problem, the reply completes on @@eof and quiet", async () => {
    for (const [label, slug, url, composer] of FAILSAFE) {
      await setOverrides(JSON.stringify({ [adapterOf(slug)]: { selectors: { streaming: ["#keyless-no-such-stop-signal"] } } }));
      chat.setReplies([{ text: shortTask(slug, "one"), chunk: 6, delayMs: 12 }]);
      const sep = url.includes("?") ? "&" : "?";
      const { page, tabId } = await open(`${url}${sep}x=stop`, composer);
      try {
        await start(tabId, `Write the failsafe file (${label}).`);
        await until(`${label}: done without a stop signal`, async () => (await pill(page).textContent()) === "done", 60000);
        assert.deepEqual(await page.evaluate(() => window.__keylessProblems), [], `${label}: no false problem while streaming without a stop signal`);
        assert.equal(readFileSync(join(w.ws, `src/failsafe_${slug.replaceAll("-", "_")}.txt`), "utf8"), "safe\n", label);
      } finally {
        await page.close();
      }
    }
    await setOverrides("{}");
  });

  it("every imitation whose replies lost their class: the reply is read or the doctor says why, never taken for the user's message", async () => {
    const outcomes = [];
    const failures = [];
    for (const [label, slug, url, composer] of FAILSAFE) {
      chat.setReplies([{ text: shortTask(`${slug}_renamed`, "two"), chunk: 40, delayMs: 10 }]);
      const sep = url.includes("?") ? "&" : "?";
      const page = (await open(`${url}${sep}renamed=${encodeURIComponent(RENAMED[slug])}`, composer));
      try {
        await start(page.tabId, `Write the failsafe file (${label}, renamed).`);
        const target = `${new URL(url).origin}/*`;
        const seen = await until(`${label}: the reply on the page`, async () => {
          const r = await browser.worker.evaluate(async ({ tabId }) => chrome.tabs.sendMessage(tabId, { type: "inspect" }), { tabId: page.tabId, target });
          const done = (await pill(page.page).textContent()) === "done";
          const broken = r.alternatives.find((a) => a.key === "assistant_message")?.matches === 0;
          return done || broken || (r.lastReply ?? "").includes("Reply two") ? { r, done, broken } : null;
        }, 30000);
        // The reply is never one of the user's messages (a user selector the rename broke too may
        // find none: then the doctor shows it broken as well).
        if (seen.r.userMessages > 1) failures.push(`${label}: the reply was taken for the user's message (${JSON.stringify(seen.r)})`);
        else if (!(seen.done || seen.broken || (seen.r.assistantMessages >= 1 && seen.r.lastReply.includes("Reply two")))) failures.push(`${label}: neither read nor the selector broken`);
        outcomes.push(`${label}: ${seen.done ? "read and run" : seen.broken ? "reply selector broken (the doctor says so)" : "read"}${seen.r.ambiguous ? `, ${seen.r.ambiguous} element(s) both selectors take, decided by position` : ""}`);
      } finally {
        await page.page.close();
      }
    }
    console.log(`figure: renamed reply classes:\n${outcomes.join("\n")}`);
    assert.deepEqual(failures, []);
  });

  // "Save this page for a bug report": a capture of three imitations, read back by the
  // real-page suite's route, finds what the live page showed (the texts as placeholders, code as
  // its line count) and holds none of the conversation's text.
  it("a capture of a page reads back as the live page did and holds none of the conversation", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyless-captures-"));
    REAL_ROOTS.push(dir);
    const placeholder = (t) => t.replace(/\p{L}/gu, "x").replace(/\p{N}/gu, "0");
    /** A reply's text with fence lines bare and code lines empty (a capture keeps code's line count only). */
    const shape = (text) => {
      let inCode = null;
      return (text ?? "").split("\n").map((l) => {
        const f = /^(`{3,})/.exec(l)?.[1];
        if (f && (inCode === null || f === inCode)) {
          inCode = inCode === null ? f : null;
          return "```";
        }
        return inCode !== null ? "" : l;
      }).join("\n");
    };
    const sites = [FAILSAFE[2], FAILSAFE.find(([, s]) => s === "deepseek"), FAILSAFE.find(([, s]) => s === "claude")];
    for (const [label, slug, url, composer] of sites) {
      chat.setReplies([{ text: shortTask(`${slug}_capture`, "three"), chunk: 60, delayMs: 5 }]);
      const { page, tabId } = await open(url, composer);
      try {
        await start(tabId, `Write the capture file (${label}).`);
        await until(`${label}: done`, async () => (await pill(page).textContent()) === "done", 60000);
        const live = await browser.worker.evaluate(async (id) => chrome.tabs.sendMessage(id, { type: "inspect" }), tabId);
        const cap = await browser.worker.evaluate(async (id) => chrome.tabs.sendMessage(id, { type: "capture" }), tabId);
        assert.match(cap.name, new RegExp(`^keyless-capture-${adapterOf(slug)}-\\d{8}-\\d{6}\\.html$`));
        for (const secret of ["Reply three", "capture file", "failsafe", "safe\n", "Working on", "AgentScript"]) {
          assert.ok(!cap.html.includes(secret), `${label}: the capture holds "${secret}"`);
        }
        assert.match(cap.html, /data-keyless-match="[^"]*assistant_message/, `${label}: the adapter's matches are marked`);
        const site = adapterOf(slug);
        mkdirSync(join(dir, site), { recursive: true });
        writeFileSync(join(dir, site, cap.name), cap.html);
        const back = `${new URL(url).origin}/__real/${site}/${cap.name}`;
        const again = await browser.context.newPage();
        try {
          await again.goto(back);
          const read = await inspect(browser, back);
          assert.deepEqual(
            { composer: read.composer, send: read.send, assistant: read.assistantMessages, user: read.userMessages, reply: shape(read.lastReply) },
            { composer: live.composer, send: live.send, assistant: live.assistantMessages, user: live.userMessages, reply: shape(placeholder(live.lastReply ?? "")) },
            `${label}: the capture reads back as the live page (live ${JSON.stringify(live.lastReply)}, capture ${JSON.stringify(read.lastReply)})`,
          );
        } finally {
          await again.close();
        }
      } finally {
        await page.close();
      }
    }
  });

  it("Qwen: code editors the page script cannot read are KA_REPLY_INCOMPLETE, and nothing runs", async () => {
    const body = ["@@newfile src/partial.py", "<<<CONTENT", ...Array.from({ length: 20 }, (_, i) => `x${i} = ${i}`), "CONTENT>>>", "@@end", "@@next", "@@end", "@@eof"];
    chat.setReplies([{ text: fenced(body.join("\n")), chunk: 60, delayMs: 10 }]);
    const from = chat.received.length;
    const { page, tabId } = await open("https://chat.qwen.ai/?editor=hidden", "textarea#chat-input");
    try {
      await start(tabId, "Write src/partial.py.");
      await until("KA_REPLY_INCOMPLETE in the overlay", async () => (await overlay(page).locator(".error .code").textContent().catch(() => "")) === "KA_REPLY_INCOMPLETE", 30000);
      assert.match(await overlay(page).locator(".error").textContent(), /Nothing was run/);
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(chat.received.length - from, 1, "no results went back");
      assert.equal(existsSync(join(w.ws, "src", "partial.py")), false, "the partial reply ran nothing");
    } finally {
      await page.close();
    }
  });

  // A whole reply inside one editor, longer than the editor shows: indentation, tabs, blank
  // lines, markup characters and non-ASCII text must come out byte-exact.
  const LONG_PY = [
    "# A module longer than the code block shows: naïve — 日本語 <b>&amp;</b>",
    ...Array.from({ length: 200 }, (_, i) => (i % 10 === 9 ? "" : i % 5 === 0 ? `def f${i}(x):` : i % 5 === 4 ? `\treturn x  # tab ${i}` : `    x = x * ${i} + 1  # ${"<>&".repeat(i % 3)}`)),
    "print(f195(1))",
  ].join("\n");
  const EDITORS = [["cm6", "CodeMirror 6"], ["cm5", "CodeMirror 5"], ["ace", "Ace"], ["monaco", "Monaco"], ["monaco-bundled", "Monaco without its global (read through the site's copy button)"]];
  for (const [editor, name] of EDITORS) {
    it(`Qwen: a reply inside a real ${name} editor, which keeps only the lines in view, is read whole`, async () => {
      const file = `src/long_${editor.replace("-", "_")}.py`;
      const replies = [
        fenced([`@@newfile ${file}`, "<<<CONTENT", LONG_PY, "CONTENT>>>", "@@end", "@@next", "@@end", "@@eof"].join("\n")),
        fenced(["@@done", "@@end", "@@eof"].join("\n")),
      ];
      chat.setReplies(replies.map((text) => ({ text, chunk: 800, delayMs: 20 })));
      const from = chat.received.length;
      const { page, tabId } = await open(`https://chat.qwen.ai/?editor=${editor}`, "textarea#chat-input");
      try {
        await start(tabId, `Write ${file}.`);
        await until(`${name}: the done state`, async () => (await pill(page).textContent()) === "done", 90000);
        assert.equal(readFileSync(join(w.ws, file), "utf8"), `${LONG_PY}\n`, `${name}: the file is byte-exact`);
        assert.equal(chat.received.length - from, 2, "the prompt and one result");
        // The editor really kept only part of the reply in the page.
        const lines = await page.evaluate(() => document.querySelector(".chat-response-message").querySelectorAll(".cm-line, .view-line, .CodeMirror-line, .ace_line").length);
        console.log(`figure: ${name}: ${lines} of ${replies[0].split("\n").length} reply lines in the page`);
        assert.ok(lines > 0 && lines < 120, `${name}: ${lines} of ${replies[0].split("\n").length} lines in the page`);
        assert.deepEqual(await page.evaluate(() => window.__keylessProblems), [], `${name}: no false problem while streaming`);
        if (editor === "monaco") await page.screenshot({ path: join(shots, "sites-qwen-monaco.png") });
        if (editor === "monaco-bundled") {
          // The clipboard was caught only for a moment: the page's own is back.
          await until("the clipboard released", () => page.evaluate(() => !Object.hasOwn(navigator.clipboard, "writeText") && !Object.hasOwn(document, "execCommand")), 5000);
        }
      } finally {
        await page.close();
      }
    });
  }

  it("an override that changes the reply's selector while the reply streams: the reply is still followed", async () => {
    const file = "src/greet_rebased.py";
    chat.setReplies(siteTaskReplies("Qwen, rebased", file).map((text, i) => (i === 0 ? { text, chunk: 10, delayMs: 60 } : { text, chunk: 40, delayMs: 10 })));
    const from = chat.received.length;
    // The site renamed its reply's class and the action icons the fallback selector finds a
    // finished reply by: neither of the adapter's own assistant_message selectors matches any
    // reply on this page, so only the override can follow it.
    const { page, tabId } = await open("https://chat.qwen.ai/?renamed=chat-response-message,qwen-chat-package-comp-new-action-control-icons", "textarea#chat-input");
    const before = await browser.worker.evaluate(async () => (await chrome.storage.local.get("settings")).settings.selectorOverrides);
    try {
      await start(tabId, `Add ${file} and commit it.`);
      await until("the first reply streaming", () => page.evaluate(() => document.querySelectorAll(".chat-response-message-renamed").length === 1 && document.querySelector(".send-button.stop") !== null));
      assert.equal(await page.locator(".chat-response-message, div:has(> .qwen-chat-package-comp-new-action-control-icons)").count(), 0, "the default selectors match no reply");
      // An import (or another tab's pick) changes the adapter mid-reply.
      const overrides = { ...JSON.parse(before), qwen: { ...JSON.parse(before).qwen, selectors: { assistant_message: ["div.chat-response-message-renamed.turn"] } } };
      await setOverrides(JSON.stringify(overrides));
      assert.ok(await page.locator(".send-button.stop").count(), "the override came while the reply streamed");
      await until("the done state", async () => (await pill(page).textContent()) === "done", 60000);
      assert.equal(readFileSync(join(w.ws, file), "utf8"), `${GREET_PY}\n`);
      assert.equal(chat.received.length - from, 3);
    } finally {
      await page.close();
      await setOverrides(before);
    }
  });

  it("the picker: the doctor reports a renamed composer, the user picks it, and the task runs", async () => {
    const file = "src/greet_picked.py";
    chat.setReplies(siteTaskReplies("Kimi, picked", file).map((text) => ({ text, chunk: 40, delayMs: 10 })));
    const from = chat.received.length;
    const { page, tabId } = await open("https://www.kimi.com/?composer=renamed", ".input-editor-v2");
    try {
      const popup = await popupFor(tabId);
      await popup.locator("#doctor-box summary").click();
      await popup.locator("#doctor").click();
      await until("the doctor's report", async () => (await popup.locator("#doctor-out").textContent()).includes("composer"));
      assert.match(await popup.locator("#doctor-out").textContent(), /composerbrokenKA_SELECTOR_NOT_FOUND/);
      await popup.close();
      // The page's panel offers to pick it.
      const pickButton = overlay(page).locator("button", { hasText: "Pick the composer" });
      await pickButton.waitFor();
      await page.screenshot({ path: join(shots, "extension-picker-offer.png") });
      await pickButton.click();
      await until("the picker's instruction", async () => (await overlay(page).locator(".error").textContent()).includes("Click the box where you type"));
      await page.locator(".input-editor-v2").hover();
      await page.locator(".input-editor-v2").click();
      await until("the picked selector", async () => (await overlay(page).locator(".error").textContent()).includes("is now"));
      const shown = await overlay(page).locator(".error .sel").textContent();
      assert.equal(shown, 'div[aria-label="Ask Kimi anything"]', "a label before classes and roles");
      assert.match(await overlay(page).locator(".error").textContent(), /matches 1 element on this page, the one you clicked/);
      await page.screenshot({ path: join(shots, "extension-picker-picked.png") });
      const stored = await browser.worker.evaluate(async () => (await chrome.storage.local.get("settings")).settings.selectorOverrides);
      assert.deepEqual(JSON.parse(stored).kimi.selectors.composer[0], 'div[aria-label="Ask Kimi anything"]');
      // The task now runs on the page with the override.
      await start(tabId, `Add ${file} and commit it.`);
      await until("the done state", async () => (await pill(page).textContent()) === "done", 90000);
      assert.equal(readFileSync(join(w.ws, file), "utf8"), `${GREET_PY}\n`);
      assert.equal(chat.received.length - from, 3);
    } finally {
      await page.close();
    }
    // One user's repair helps another: the overrides go out as a file and come back in.
    const options = await browser.context.newPage();
    try {
      await options.goto(`chrome-extension://${browser.extensionId}/options.html`);
      await until("the overrides", async () => (await options.locator("#overrides").inputValue()).includes("Ask Kimi anything"));
      const download = options.waitForEvent("download");
      await options.locator("#export").click();
      const saved = join(mkdtempSync(join(tmpdir(), "keyless-overrides-")), "overrides.json");
      await (await download).saveAs(saved);
      assert.equal(JSON.parse(readFileSync(saved, "utf8")).kimi.selectors.composer[0], 'div[aria-label="Ask Kimi anything"]');
      const shared = join(mkdtempSync(join(tmpdir(), "keyless-overrides-")), "shared.json");
      writeFileSync(shared, JSON.stringify({ qwen: { selectors: { send_button: ["button#send-v2", "button.send-button"] } } }));
      await options.locator("#import-file").setInputFiles(shared);
      await until("the import", async () => (await options.locator("#verdict").textContent()).includes("Imported"));
      const merged = JSON.parse(await browser.worker.evaluate(async () => (await chrome.storage.local.get("settings")).settings.selectorOverrides));
      assert.equal(merged.kimi.selectors.composer[0], 'div[aria-label="Ask Kimi anything"]', "the user's own pick stays");
      assert.deepEqual(merged.qwen.selectors.send_button, ["button#send-v2", "button.send-button"]);
      // A file with a mistake is refused with its key, and nothing changes.
      writeFileSync(shared, JSON.stringify({ qwen: { selectors: { composr: "textarea" } } }));
      await options.locator("#import-file").setInputFiles(shared);
      await until("the refusal", async () => (await options.locator("#verdict").textContent()).includes("KA_CONFIG_VALIDATION"));
      assert.match(await options.locator("#verdict").textContent(), /qwen\.selectors\.composr.*did you mean "composer"/);
    } finally {
      await options.close();
    }
  });
});
