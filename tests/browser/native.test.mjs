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
