// Shared by the browser tests: start a real keyless-host serve and Debian's Chromium.
import { spawn } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { ALL_HOSTS } from "./fakechat/server.mjs";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const shots = join(root, "docs", "screenshots");
export const bin = process.env.KEYLESS_HOST_BIN ?? join(root, "target", "release", "keyless-host");

/**
 * Starts `keyless-host serve` on 127.0.0.1:0 (in `env`, the test's own environment by default)
 * and resolves with its port, token and URLs.
 */
export function startHost(ws, config, mode = "ask", env = process.env) {
  const child = spawn(bin, ["serve", "--port", "0", "--mode", mode, "--www", join(root, "target", "www"), "--workspace", ws], {
    env: { ...env, XDG_CONFIG_HOME: config },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const info = { child };
    const rl = createInterface({ input: child.stdout });
    rl.on("line", (line) => {
      const port = line.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (port) info.port = Number(port[1]);
      if (line.startsWith("local token: ")) info.token = line.split(/\s+/)[2];
      if (line.startsWith("pairing code: ")) info.code = line.split(/\s+/)[2];
      if (line.startsWith("dashboard: ")) info.dashboard = line.slice("dashboard: ".length).trim();
      if (line.startsWith("playground: ")) info.playground = line.slice("playground: ".length).trim();
      if (line.startsWith("Press Ctrl-C")) resolve(info);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}`)));
  });
}

export function launch() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
  });
}

const FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"];
export const extensionDir = join(root, "target", "extension");

/**
 * Debian's Chromium with the built extension loaded, every imitated site's host mapped to the fake
 * chat site on 127.0.0.1:`chatPort`, in `profile` (a fresh folder by default), with `env` added to
 * the browser's environment (it passes it on to native-messaging hosts), the extension from
 * `extension` (the built one by default). Resolves with
 * {context, worker, extensionId}.
 */
export async function launchWithExtension(chatPort, { profile = mkdtempSync(join(tmpdir(), "keyless-chromium-")), env, extension = extensionDir } = {}) {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    ...(env ? { env: { ...process.env, ...env } } : {}),
    headless: false,
    ignoreDefaultArgs: ["--disable-extensions", "--headless"],
    ignoreHTTPSErrors: true,
    viewport: { width: 1280, height: 860 },
    args: [
      ...FLAGS,
      `--disable-extensions-except=${extension}`,
      `--load-extension=${extension}`,
      `--host-resolver-rules=${ALL_HOSTS.map((h) => `MAP ${h} 127.0.0.1:${chatPort}`).join(", ")}`,
      "--ignore-certificate-errors",
    ],
  });
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker"));
  const extensionId = new URL(worker.url()).host;
  return { context, worker, extensionId };
}

/** The playground's time from a keystroke to its diagnostics, with `text` in the reply box (median of 20). */
export function keystrokeToDiagnostics(page, text) {
  return page.evaluate((t) => {
    const area = document.getElementById("reply");
    area.value = t;
    const times = [];
    for (let i = 0; i < 20; i++) {
      const start = performance.now();
      area.value += i % 2 ? "" : " ";
      area.dispatchEvent(new Event("input"));
      document.getElementById("verdict").textContent;
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    return { median: times[10], chars: area.value.length };
  }, text);
}
