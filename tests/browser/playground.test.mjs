// The playground in real Chromium: the wasm core in the page, live diagnostics at the right lines,
// the plan with tiers, the piece graph, and keystroke-to-diagnostics time for a maximal reply.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHost, launch, shots, keystrokeToDiagnostics } from "./host.mjs";

test("the playground shows the core's verdict live", async () => {
  // Served by the host, under its strict CSP (only the playground may compile wasm).
  const host = await startHost(mkdtempSync(join(tmpdir(), "keyless-play-ws-")), mkdtempSync(join(tmpdir(), "keyless-play-cfg-")));
  const url = host.playground;
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/playground\/$/);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    await page.goto(url);
    await page.locator("body[data-ready=true]").waitFor();
    assert.match(await page.locator("#verdict").textContent(), /Valid — 4 block\(s\), control: done/);
    // Type a broken reply: the unknown command is on line 3, the bad path on line 8.
    const broken = "@@say\n<<<MSG\nhi\nMSG>>>\n@@end\n@@createfile a.txt\n@@end\n@@newfile ../x\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n";
    await page.locator("#reply").fill("");
    await page.locator("#reply").pressSequentially(broken.slice(0, 40));
    await page.locator("#reply").fill(broken);
    const diags = await page.locator("#diags li").allTextContents();
    assert.ok(diags.some((d) => d.startsWith("KA_PARSE_UNKNOWN_COMMANDline 6Unknown command \"@@createfile\".")), diags.join("\n"));
    assert.ok(diags.some((d) => d.startsWith("KA_PARSE_BAD_PATHline 8")), diags.join("\n"));
    assert.deepEqual(await page.locator("#gutter .bad").allTextContents(), ["6", "8"]);
    // Clicking a problem selects its line, at the UTF-16 span the core computes.
    await page.locator("#diags li", { hasText: "line 6" }).click();
    const selected = await page.locator("#reply").evaluate((a) => a.value.slice(a.selectionStart, a.selectionEnd));
    assert.equal(selected, "@@createfile a.txt");
    assert.match(await page.locator("#correction").textContent(), /^\[KEYLESSAGENT FORMAT ERROR\]/);
    await page.screenshot({ path: join(shots, "playground-reply.png") });
    // A risky command line gets its tier from the same policy as the host.
    await page.selectOption("#example", "Risky commands");
    const tiers = await page.locator("#plan .chip").allTextContents();
    assert.ok(tiers.includes("Build · run") && tiers.includes("Denied · deny"), tiers.join(", "));
    // Keystroke to diagnostics on a maximal (≈60,000-character) reply.
    const block = "@@newfile src/part.rs\n<<<CONTENT\n" + "let value = compute(input, options); // realistic line\n".repeat(40) + "CONTENT>>>\n@@end\n";
    let text = "";
    while (text.length + block.length < 59_800) text += block;
    const ms = await keystrokeToDiagnostics(page, text + "@@next\n@@end\n@@eof\n");
    console.log(`keystroke to diagnostics for a ${ms.chars}-character reply: median ${ms.median.toFixed(1)} ms`);
    // The piece tab: findings, tools, and the graph as SVG.
    await page.getByRole("button", { name: "Piece" }).click();
    assert.match(await page.locator("#piece-verdict").textContent(), /Valid piece "plan-implement-review" — 3 movement/);
    assert.equal(await page.locator("#graph svg rect").count(), 4, "3 movements and ABORT");
    await page.screenshot({ path: join(shots, "playground-piece.png") });
    await page.locator("#piece").fill("name: Bad Name\nmax_movements: 0\n");
    assert.match(await page.locator("#piece-verdict").textContent(), /Invalid/);
    assert.ok((await page.locator("#findings li").allTextContents()).some((t) => t.includes("KA_PIECE_FORMAT")));
    // The .as tab: the example program is valid and shown formatted; a typo gets its code, line
    // and column, the gutter mark, and a click selects the line.
    await page.getByRole("button", { name: ".as program" }).click();
    assert.match(await page.locator("#as-verdict").textContent(), /Valid program/);
    assert.match(await page.locator("#as-formatted").textContent(), /^\/\/ Seed 002's agent composition/);
    const program = await page.locator("#as-src").inputValue();
    await page.locator("#as-src").fill(program.replace("results.add(result)", "results.add(reslt)").replace("main agent Controller {\n    main func(input) {", "main agent Controller {\n    main func(input) {\n        x = input  y"));
    await page.locator("#as-verdict.bad").waitFor();
    const asDiags = await page.locator("#as-diags li").allTextContents();
    // Both problems in one run: the syntax slip no longer hides the unknown name.
    assert.deepEqual(
      asDiags,
      ["KA_AS_SYNTAX" + "line 34, column 20" + "expected the end of the line, found \"y\"", "KA_AS_NAME" + "line 39, column 25" + "unknown name \"reslt\"" + "help: did you mean \"result\"?"],
      asDiags.join("\n"),
    );
    assert.match(await page.locator("#as-formatted").textContent(), /not formatted: line 34, column 20: KA_AS_SYNTAX/);
    await page.locator("#as-src").fill(program.replace("results.add(result)", "results.add(reslt)"));
    await page.locator("#as-diags li", { hasText: "KA_AS_NAME" }).waitFor();
    const nameDiag = await page.locator("#as-diags li").first().textContent();
    assert.equal(nameDiag, "KA_AS_NAMEline 38, column 25unknown name \"reslt\"help: did you mean \"result\"?");
    // The editor is coloured by the grammar VS Code uses, and follows each change: the painted
    // copy holds exactly the program's text.
    const paint = page.locator("#as-paint");
    assert.equal(await paint.evaluate((p) => p.textContent), (await page.locator("#as-src").inputValue()) + "\n");
    const scopeOf = (text) => paint.evaluate((p, t) => [...p.querySelectorAll("span")].find((s) => s.textContent === t)?.dataset.scope ?? null, text);
    assert.equal(await scopeOf("Controller"), "entity.name.type.agent.keyless-as");
    assert.equal(await scopeOf("import"), "keyword.control.import.keyless-as");
    assert.equal(await scopeOf("reslt"), null, "a plain name has no scope of its own");
    // Painted text is transparent in the textarea; the colours are the paint's.
    assert.equal(await page.locator("#as-src").evaluate((a) => getComputedStyle(a).color), "rgba(0, 0, 0, 0)");
    assert.notEqual(await paint.locator('[data-scope^="keyword.control"]').first().evaluate((s) => getComputedStyle(s).color), await paint.locator('[data-scope^="comment"]').first().evaluate((s) => getComputedStyle(s).color));
    assert.deepEqual(await page.locator("#as-gutter .bad").allTextContents(), ["38"]);
    await page.locator("#as-diags li").first().click();
    const picked = await page.locator("#as-src").evaluate((a) => a.value.slice(a.selectionStart, a.selectionEnd));
    assert.equal(picked, "            results.add(reslt)");
    await page.screenshot({ path: join(shots, "playground-as.png") });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    host.child.kill();
  }
});

test("the playground gives every corpus reply the same verdict as keyless-host check", async () => {
  const { readdirSync, readFileSync, existsSync } = await import("node:fs");
  const { root } = await import("./host.mjs");
  const corpus = join(root, "tests", "corpus");
  const host = await startHost(mkdtempSync(join(tmpdir(), "keyless-play-ws-")), mkdtempSync(join(tmpdir(), "keyless-play-cfg-")));
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.goto(host.playground);
    await page.locator("body[data-ready=true]").waitFor();
    let compared = 0;
    for (const file of readdirSync(corpus).filter((f) => f.endsWith(".txt")).sort()) {
      const args = existsSync(join(corpus, file.replace(/\.txt$/, ".args"))) ? readFileSync(join(corpus, file.replace(/\.txt$/, ".args")), "utf8").trim().split(/\s+/) : [];
      // The playground's controls set the pace; limit flags are not among them.
      if (args.length > 0 && !(args.length === 2 && args[0] === "--pace")) continue;
      const pace = args[1] ? args[1][0].toUpperCase() + args[1].slice(1) : "Balanced";
      const want = JSON.parse(readFileSync(join(corpus, file.replace(/\.txt$/, ".json")), "utf8"));
      await page.selectOption("#pace", pace);
      await page.locator("#reply").fill(readFileSync(join(corpus, file), "utf8"));
      const verdict = await page.locator("#verdict").textContent();
      assert.equal(verdict.startsWith("✓"), want.ok, `${file}: ${verdict}`);
      const shown = await page.$$eval("#diags li:not(.empty)", (lis) =>
        lis.map((li) => `${li.querySelector(".dcode")?.textContent ?? ""}:${(li.querySelector(".ln")?.textContent ?? "").replace("line ", "")}`),
      );
      const expected = want.diagnostics.map((d) => `${d.code}:${d.line ?? ""}`);
      assert.deepEqual(shown, expected, file);
      compared++;
    }
    assert.ok(compared >= 55, `only ${compared} corpus replies compared`);
    console.log(`the playground matched keyless-host check on ${compared} corpus replies`);
  } finally {
    await browser.close();
    host.child.kill();
  }
});
