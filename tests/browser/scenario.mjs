// What the end-to-end suites share (tests/browser/extension.test.mjs on Chromium,
// tests/browser/firefox.test.mjs on Firefox): a workspace with a bare origin, a fenced reply, a
// wait with a deadline.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const git = (cwd, ...args) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();

/** A workspace on branch feature/greet with one commit, pushed to a bare origin. */
export function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "keyless-e2e-"));
  const ws = join(dir, "ws");
  const origin = join(dir, "origin.git");
  execFileSync("git", ["init", "-q", "--bare", origin]);
  execFileSync("git", ["init", "-q", "-b", "feature/greet", ws]);
  git(ws, "config", "user.name", "Test User");
  git(ws, "config", "user.email", "test@example.com");
  writeFileSync(join(ws, "README.md"), "# demo\n\nA demo project.\n");
  git(ws, "add", "-A");
  git(ws, "commit", "-q", "-m", "Initial commit");
  git(ws, "remote", "add", "origin", origin);
  git(ws, "push", "-q", "-u", "origin", "feature/greet");
  return { dir, ws, origin, config: join(dir, "config") };
}

export const fenced = (body) => `~~~~agentscript\n${body}\n~~~~`;

export const GREET_PY = 'def greet(name):\n    """Say hello."""\n    return f"Hello, {name}!"\n\n\nif __name__ == "__main__":\n    print(greet("world"))';

export async function until(what, probe, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Each imitated chat site's address, and its composer's selector. */
export const ORIGINS = { chatgpt: "https://chatgpt.com", claude: "https://claude.ai", gemini: "https://gemini.google.com", aistudio: "https://aistudio.google.com" };
export const COMPOSERS = { chatgpt: ".ProseMirror", claude: ".ProseMirror", gemini: ".ql-editor", aistudio: "textarea[aria-label=\"Enter a prompt\"]" };
