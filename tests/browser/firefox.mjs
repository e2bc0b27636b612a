// Debian's Firefox ESR with the Firefox build of the extension (target/extension-firefox), driven
// over WebDriver BiDi by puppeteer-core, for tests/browser/firefox.test.mjs. The chat sites'
// names reach the fake chat site through a CONNECT proxy on 127.0.0.1 (Firefox has no
// --host-resolver-rules): it tunnels chatgpt.com:443, claude.ai:443, … to the fake site's HTTPS
// port and refuses everything else. Loopback (the host's API) never goes through a proxy.
import { createServer } from "node:http";
import { connect } from "node:net";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { ALL_HOSTS } from "./fakechat/server.mjs";
import { root } from "./host.mjs";

export const firefoxBin = "/usr/bin/firefox-esr";
export const firefoxExtension = join(root, "target", "extension-firefox");
/** The internal UUID the tests give the add-on (its `moz-extension://` host). */
export const EXTENSION_UUID = "4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7c";
export const ADDON_ID = "keyless@keyless.dev";
const SITES = new Set(ALL_HOSTS);

/** A CONNECT proxy that tunnels the chat sites to 127.0.0.1:`port`. Resolves with its server. */
function tunnel(port) {
  const proxy = createServer((_req, res) => {
    res.writeHead(403);
    res.end();
  });
  proxy.on("connect", (req, sock, head) => {
    const [name, p] = (req.url ?? "").split(":");
    if (!SITES.has(name) || p !== "443") {
      sock.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const up = connect(port, "127.0.0.1", () => {
      sock.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      up.write(head);
      up.pipe(sock);
      sock.pipe(up);
    });
    up.on("error", () => sock.destroy());
    sock.on("error", () => up.destroy());
  });
  return new Promise((resolve) => proxy.listen(0, "127.0.0.1", () => resolve(proxy)));
}

/**
 * Firefox ESR, headless, in a fresh profile, with the extension installed (a temporary add-on,
 * as about:debugging loads it) and the chat sites tunnelled to the fake site on `chatPort`; `env`
 * is added to the browser's environment (its native-messaging hosts inherit it). Resolves with
 * {browser, close, extensionUrl(path)}.
 */
export async function launchFirefox(chatPort, { env } = {}) {
  const proxy = await tunnel(chatPort);
  const { port } = proxy.address();
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: firefoxBin,
    headless: true,
    acceptInsecureCerts: true,
    userDataDir: mkdtempSync(join(tmpdir(), "keyless-firefox-")),
    defaultViewport: { width: 1280, height: 860 },
    // Firefox's remote agent opens moz-extension:// pages (the popup) only with this set.
    env: { ...process.env, ...(env ?? {}), MOZ_REMOTE_ALLOW_SYSTEM_ACCESS: "1" },
    extraPrefsFirefox: {
      "network.proxy.type": 1,
      "network.proxy.ssl": "127.0.0.1",
      "network.proxy.ssl_port": port,
      "network.proxy.no_proxies_on": "",
      "extensions.webextensions.uuids": JSON.stringify({ [ADDON_ID]: EXTENSION_UUID }),
    },
  });
  const id = await browser.installExtension(firefoxExtension);
  if (id !== ADDON_ID) throw new Error(`the add-on installed as ${id}, not ${ADDON_ID}`);
  return {
    browser,
    extensionUrl: (path) => `moz-extension://${EXTENSION_UUID}/${path}`,
    async close() {
      await browser.close();
      proxy.close();
    },
  };
}

/** Opens an extension page (the popup) in a new tab; Firefox's navigation of it does not end in
 * a load event puppeteer sees, so this waits for `selector` instead. */
export async function openExtensionPage(browser, url, selector) {
  const page = await browser.newPage();
  await page.setViewport({ width: 380, height: 720 });
  await page.goto(url, { waitUntil: "domcontentloaded", timeout: 3000 }).catch(() => undefined);
  await page.waitForSelector(selector, { timeout: 15000 });
  return page;
}

/** The text of the first element under the overlay's shadow root matching `selector` ("" when none). */
export function overlayText(page, selector) {
  return page.evaluate((s) => document.querySelector("keyless-overlay")?.shadowRoot?.querySelector(s)?.textContent ?? "", selector);
}

/** How many elements under the overlay's shadow root match `selector`. */
export function overlayCount(page, selector) {
  return page.evaluate((s) => document.querySelector("keyless-overlay")?.shadowRoot?.querySelectorAll(s).length ?? 0, selector);
}

/** Clicks the overlay's button whose text is `text`. */
export async function overlayClick(page, text) {
  const clicked = await page.evaluate((t) => {
    const b = [...(document.querySelector("keyless-overlay")?.shadowRoot?.querySelectorAll("button") ?? [])].find((x) => x.textContent === t);
    b?.click();
    return b !== undefined;
  }, text);
  if (!clicked) throw new Error(`no overlay button "${text}"`);
}
