// Pairing without typing a code: `keyless-host install` registers the native-messaging host in a
// fresh Chromium profile; the popup asks it for the address of the running serve and a token.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bin, launchWithExtension, startHost, shots } from "./host.mjs";
import { startFakeChat } from "./fakechat/server.mjs";
import { until } from "./scenario.mjs";

test("the popup pairs through the native-messaging host, with no code typed", async () => {
  const dir = mkdtempSync(join(tmpdir(), "keyless-native-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const config = join(dir, "config");
  const profile = join(dir, "profile");
  mkdirSync(profile);
  const env = { XDG_CONFIG_HOME: config };
  const host = await startHost(ws, config, "ask");
  const chat = await startFakeChat([]);
  const installed = execFileSync(bin, ["install", "--profile", profile, "--only-profiles"], { env: { ...process.env, ...env }, encoding: "utf8" });
  assert.match(installed, /registered dev\.keyless\.host in .*NativeMessagingHosts\/dev\.keyless\.host\.json/);
  const manifest = JSON.parse(readFileSync(join(profile, "NativeMessagingHosts", "dev.keyless.host.json"), "utf8"));
  const { context, extensionId } = await launchWithExtension(chat.port, { profile, env });
  try {
    assert.deepEqual(manifest.allowed_origins, [`chrome-extension://${extensionId}/`], "the registration allows the keyless extension only");
    const popup = await context.newPage();
    await popup.setViewportSize({ width: 380, height: 640 });
    await popup.goto(`chrome-extension://${extensionId}/popup.html`);
    await popup.locator("#paired").waitFor({ timeout: 15000 });
    const conn = await popup.locator("#conn-text").textContent();
    assert.equal(conn, `connected to http://127.0.0.1:${host.port}`);
    assert.equal(await popup.locator("#code").inputValue(), "", "no code was typed");
    await popup.screenshot({ path: join(shots, "extension-native-pairing.png") });
    const pairings = JSON.parse(readFileSync(join(config, "keyless", "pairing.json"), "utf8"));
    assert.deepEqual(pairings.clients.map((c) => c.extension_id), [extensionId]);
    // doctor reports the registration of a browser's own folder; here the profile holds it.
    const doctor = execFileSync(bin, ["doctor", "--workspace", ws], { env: { ...process.env, ...env }, encoding: "utf8" });
    assert.match(doctor, /pairing\s+no browser knows keyless-host yet/);
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("without the registration the popup falls back to the code and says why", async () => {
  const dir = mkdtempSync(join(tmpdir(), "keyless-native-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const config = join(dir, "config");
  const host = await startHost(ws, config, "ask");
  const chat = await startFakeChat([]);
  const { context, extensionId } = await launchWithExtension(chat.port, { env: { XDG_CONFIG_HOME: config } });
  try {
    const popup = await context.newPage();
    await popup.goto(`chrome-extension://${extensionId}/popup.html`);
    await popup.locator("#pair").waitFor();
    assert.match(await popup.locator("#auto-pair-note").textContent(), /keyless-host install/);
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

test("pairing by code explains itself: a typo is never a try, a wrong code says how many are left, keyless-host pair gives a fresh one", async () => {
  const dir = mkdtempSync(join(tmpdir(), "keyless-native-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  execFileSync("git", ["init", "-q", ws]);
  const config = join(dir, "config");
  const env = { XDG_CONFIG_HOME: config };
  const host = await startHost(ws, config, "ask");
  const chat = await startFakeChat([]);
  const { context, extensionId } = await launchWithExtension(chat.port, { env });
  try {
    // A page that is not a chat (the popup opened as a tab of its own is one): the popup says
    // so and offers the chats; Start is off.
    const popup = await context.newPage();
    await popup.setViewportSize({ width: 380, height: 640 });
    await popup.goto(`chrome-extension://${extensionId}/popup.html`);
    await popup.locator("#pair").waitFor();
    assert.doesNotMatch(await popup.locator("#code").getAttribute("placeholder"), /^[A-Z0-9]{4}-[A-Z0-9]{4}$/, "the placeholder does not look like a code");
    assert.equal(await popup.locator("#pair-btn").isDisabled(), true, "an empty field cannot be sent");
    await popup.locator("#host-url").fill(`http://127.0.0.1:${host.port}`);
    // A typo: refused before it is sent, so it is not a try.
    await popup.locator("#code").fill("ABCD-2O45");
    await popup.locator("#pair-btn").click();
    await popup.locator("#error").waitFor();
    assert.match(await popup.locator("#error").textContent(), /^KA_CONFIG_VALIDATION "O" is not in a pairing code \(codes have no O or 0\)/);
    // A wrong code: how many tries are left, and where a fresh code comes from.
    await popup.locator("#code").fill("ABCD-2345");
    await popup.locator("#pair-btn").click();
    await until("the wrong-code message", async () => /wrong or was already used/.test(await popup.locator("#error").textContent()));
    const wrong = await popup.locator("#error").textContent();
    assert.match(wrong, /^KA_UNAUTHORIZED this code is wrong or was already used; 2 more tries before pairing locks for a while\. `keyless-host pair` prints a fresh code/);
    assert.doesNotMatch(wrong, /pair the extension first/);
    await popup.screenshot({ path: join(shots, "extension-pairing-wrong-code.png") });
    // keyless-host pair: a fresh code for this serve, which pairs.
    const printed = execFileSync(bin, ["pair"], { env: { ...process.env, ...env }, encoding: "utf8" });
    assert.match(printed, new RegExp(`for keyless-host serve on http://127\\.0\\.0\\.1:${host.port} \\(workspace ${ws}\\); single use, valid for 10 minutes`));
    const code = printed.match(/^pairing code: (\S+)$/m)[1];
    await popup.locator("#code").fill(code.toLowerCase().replace("-", " "));
    await popup.locator("#pair-btn").click();
    await popup.locator("#paired").waitFor();
    await until("the not-a-chat note", async () => /This tab is not a chat keyless supports/.test(await popup.locator("#not-chat").textContent()));
    assert.match(await popup.locator("#not-chat").textContent(), /ChatGPT/);
    assert.equal(await popup.locator("#site").textContent(), "not a chat");
    await until("Start to be off", () => popup.locator("#start").isDisabled());
    await popup.screenshot({ path: join(shots, "extension-popup-not-a-chat.png") });
    // The same code again is used up.
    await popup.locator("#unpair").click();
    await popup.locator("#pair").waitFor();
    await popup.locator("#code").fill(code);
    await popup.locator("#pair-btn").click();
    await until("the used-code message", async () => /wrong or was already used; 2 more tries/.test(await popup.locator("#error").textContent()));
  } finally {
    await context.close();
    host.child.kill("SIGTERM");
    await chat.close();
  }
});

