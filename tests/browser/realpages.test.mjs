// The real-page suite (tests/realpages/README.md): every page a chat site really rendered, and
// every capture a user sent, served at its site's host over HTTPS with its own scripts blocked,
// loaded in Chromium with the built extension; the content script says what it finds (composer,
// send button, replies and user messages, the newest reply as the parser would get it) and it
// must be what tests/realpages/expected/SITE/NAME.json says a reader finds in the page.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchWithExtension, root } from "./host.mjs";
import { REAL_PAGES, SITE_HOSTS, startFakeChat } from "./fakechat/server.mjs";
import { codeBlocks, inspect, realPages } from "./scenario.mjs";

const EXPECTED = join(root, "tests", "realpages", "expected");

describe("the adapters on the pages the sites really rendered", () => {
  let chat;
  let browser;
  const pages = realPages();

  before(async () => {
    chat = await startFakeChat([]);
    browser = await launchWithExtension(chat.port);
  });

  /// Which alternative of each selector matched on each page (the closing note's table).
  const table = [];

  after(async () => {
    await browser?.context.close();
    await chat?.close();
    const keys = ["composer", "send_button", "assistant_message", "assistant_content", "user_message", "streaming"];
    const lines = [`| page | ${keys.join(" | ")} |`, `|${" --- |".repeat(keys.length + 1)}`];
    for (const [page, alts] of table) {
      const cell = (k) => {
        const a = alts.find((x) => x.key === k);
        return !a || a.alternative === null ? "–" : `${a.alternative + 1}${a.alternative > 0 ? " (fallback)" : ""}`;
      };
      lines.push(`| ${page} | ${keys.map(cell).join(" | ")} |`);
    }
    writeFileSync(join(root, "target", "realpages-alternatives.md"), `${lines.join("\n")}\n`);
  });

  it("has the pages and their expected values", () => {
    assert.ok(pages.length >= 29, `expected values in ${EXPECTED}: ${pages.length}`);
    for (const [site, name] of pages) assert.ok(existsSync(join(REAL_PAGES, site, `${name}.html`)), `${site}/${name}.html`);
  });

  for (const [site, name] of pages) {
    it(`${site}/${name}`, async () => {
      const want = JSON.parse(readFileSync(join(EXPECTED, site, `${name}.json`), "utf8"));
      const url = `https://${SITE_HOSTS[site][0]}/__real/${site}/${name}.html`;
      const page = await browser.context.newPage();
      try {
        await page.goto(url);
        const got = await inspect(browser, url);
        table.push([`${site}/${name}`, got.alternatives]);
        const seen = {
          composer: want.composer === null ? null : got.composer,
          send: want.send === null ? null : got.send,
          assistant_messages: got.assistantMessages,
          user_messages: got.userMessages,
          last_reply: got.incomplete ? `INCOMPLETE\n${got.lastReply}` : got.lastReply,
          code_blocks: codeBlocks(got.lastReply),
        };
        const expected = {
          composer: want.composer,
          send: want.send,
          assistant_messages: want.assistant_messages,
          user_messages: want.user_messages,
          last_reply: want.last_reply,
          code_blocks: want.code_blocks,
        };
        assert.deepEqual(seen, expected);
      } finally {
        await page.close();
      }
    });
  }
});
