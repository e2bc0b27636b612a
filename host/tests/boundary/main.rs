//! The boundary on the newest surfaces: every write path asks the one own-file check,
//! whatever front end asks for the write. Each test runs the real `keyless-host` binary in a temp
//! folder; canaries and the user's config live outside the workspace or in a fake home, never in
//! the real one.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // fixture helpers fail the test loudly

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod opaque;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A workspace that is a fake home: the user's trusted keyless config lives inside it, as it
/// would for a workspace of `~`.
struct Home {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
}

const TRUSTED: &str = "{\"Commands\": {\"Mode\": \"Ask\"}}\n";
const SETTINGS: &str = "{\"Commands\": {\"TimeoutSeconds\": 30}}\n";

impl Home {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("home");
        std::fs::create_dir_all(ws.join(".config/keyless")).expect("config");
        std::fs::write(ws.join(".config/keyless/keyless.json"), TRUSTED).expect("trusted");
        std::fs::write(ws.join("keyless.json"), SETTINGS).expect("settings");
        std::fs::write(ws.join("notes.txt"), "notes\n").expect("notes");
        // A folder git would take for a repository (a bare one the user keeps here).
        for d in ["bare/objects", "bare/refs/heads", "bare/hooks"] {
            std::fs::create_dir_all(ws.join(d)).expect("bare");
        }
        std::fs::write(ws.join("bare/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        std::fs::write(ws.join("bare/config"), "[core]\n\tbare = true\n").expect("config");
        // Half of one: a write that completes it is refused too.
        std::fs::create_dir_all(ws.join("half/objects")).expect("half");
        std::fs::create_dir_all(ws.join("half/refs")).expect("half");
        std::fs::write(
            ws.join("half/config"),
            "[core]\n\tfsmonitor = touch /tmp/x\n",
        )
        .expect("half config");
        Home { _tmp: tmp, ws }
    }

    fn host(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_keyless-host"));
        c.env("XDG_CONFIG_HOME", self.ws.join(".config"))
            .env("HOME", &self.ws)
            .current_dir(&self.ws);
        c
    }

    /// Runs an `.as` program whose main function returns `call`.
    fn run_as(&self, call: &str) -> Output {
        let src = format!(
            "import tool File from \"file://workspace\"\n\nmain agent A {{\n    main func(input) {{\n        return {call}\n    }}\n}}\n"
        );
        self.run_program(&src)
    }

    fn run_program(&self, src: &str) -> Output {
        std::fs::write(self.ws.join("attack.as"), src).expect("program");
        self.host()
            .args(["as", "run", "attack.as", "--unsafe-workspace"])
            .output()
            .expect("run")
    }

    /// Every protected file, byte for byte, and the names that must not appear.
    fn snapshot(&self) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut v: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
        for rel in [
            ".config/keyless/keyless.json",
            "keyless.json",
            "bare/config",
            "bare/HEAD",
            "half/config",
        ] {
            v.push((self.ws.join(rel), std::fs::read(self.ws.join(rel)).ok()));
        }
        v
    }

    /// Every name in the workspace (the attack may only add its program and `.agent`).
    fn names(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).expect("dir").flatten() {
                let p = e.path();
                let rel = p
                    .strip_prefix(root)
                    .expect("prefix")
                    .to_string_lossy()
                    .into_owned();
                if rel == ".agent" || rel == "attack.as" {
                    continue;
                }
                out.push(rel);
                if e.file_type().expect("type").is_dir() {
                    walk(root, &p, out);
                }
            }
        }
        let mut v = Vec::new();
        walk(&self.ws, &self.ws, &mut v);
        v.sort();
        v
    }
}

fn refused(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    // `as run` prints rustc's layout, the other commands one line.
    assert!(
        err.starts_with("keyless-host: KA_PATH_OUTSIDE")
            || err.starts_with("error[KA_PATH_OUTSIDE]"),
        "{what}: {err}"
    );
}

/// Every spelling of a protected path that a file system could take for it.
const PROTECTED: &[&str] = &[
    "keyless.json",
    "KEYLESS.JSON",
    "Keyless.json.",
    "\u{212A}eyless.json",
    "key\u{200B}less.json",
    "keyless.j\u{FF53}on",
    "KEYLES~1.JSO",
    ".config/keyless/keyless.json",
    ".config/keyless/pairing.json",
    ".config/keyless",
    ".git/config",
    ".GIT/hooks/pre-commit",
    ".g\u{200C}it/config",
    "GIT~1/config",
    "sub/.Git./config",
    ".agent/keyless.db",
    ".AGENT/backups/x",
    "bare/config",
    "bare/hooks/post-checkout",
    "bare/HEAD",
    "half/HEAD",
];

/// The same places for a memory (whose file must end in .jsonl or .db).
const PROTECTED_MEMORY: &[&str] = &[
    ".config/keyless/m.jsonl",
    ".config/keyless/m.db",
    ".git/m.jsonl",
    ".GIT/m.db",
    ".g\u{200C}it/m.jsonl",
    "GIT~1/m.db",
    ".agent/m.jsonl",
    ".Agent/m.db",
    "bare/hooks/m.jsonl",
    "bare/info/m.db",
    "bare/modules/m.jsonl",
    "bare/refs/m.db",
];

#[test]
fn as_file_writes_ask_the_own_file_check() {
    let h = Home::new();
    let before = h.snapshot();
    let names = h.names();
    for p in PROTECTED {
        let p = p.replace('\\', "\\\\");
        for call in [
            format!("File.write({{ path: \"{p}\", content: \"{{}}\" }})"),
            format!("File.patch({{ path: \"{p}\", search: \"Ask\", replace: \"Auto\" }})"),
            // A forged effect record: undo would delete the file (no backup) or restore one.
            format!("File.undo([{{ path: \"{p}\", after: \"x\" }}])"),
            format!(
                "File.undo([{{ path: \"{p}\", after: \"x\", backup: \".agent/as-backups/x/1\" }}])"
            ),
        ] {
            refused(&h.run_as(&call), &call);
        }
    }
    assert_eq!(h.snapshot(), before, "a protected file changed");
    assert_eq!(h.names(), names, "a protected name appeared");
}

#[test]
fn undo_of_a_real_effect_record_still_asks_the_check() {
    let h = Home::new();
    // The record of a real write, with its path swapped for the settings file's: its hash is
    // right, so only the check stands in the way.
    let sha = {
        use std::io::Write;
        let mut c = Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum");
        c.stdin
            .take()
            .expect("stdin")
            .write_all(SETTINGS.as_bytes())
            .expect("write");
        let out = c.wait_with_output().expect("sha");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .expect("hash")
            .to_string()
    };
    let out = h.run_program(&format!(
        "import tool File from \"file://workspace\"\n\nmain agent A {{\n    main func(input) {{\n        w = File.write({{ path: \"notes.txt\", content: \"x\" }})\n        return File.undo([{{ path: \"keyless.json\", after: \"{sha}\", backup: w.backup }}])\n    }}\n}}\n"
    ));
    refused(&out, "undo of a swapped record");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("keyless.json")).expect("settings"),
        SETTINGS
    );
}

#[test]
fn memory_writes_ask_the_own_file_check() {
    let h = Home::new();
    let before = h.snapshot();
    let names = h.names();
    for p in PROTECTED_MEMORY {
        let uri = if p.ends_with(".db") {
            format!("sqlite://{p}#ns")
        } else {
            format!("file://{p}")
        };
        {
            let src = format!(
                "import memory M from \"{}\"\n\nmain agent A {{\n    main func(input) {{\n        return M.add({{ kind: \"x\", text: \"planted\" }})\n    }}\n}}\n",
                uri.replace('\\', "\\\\")
            );
            let out = h.run_program(&src);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{uri}: {err}");
            assert!(err.contains("KA_PATH_OUTSIDE"), "{uri}: {err}");
        }
    }
    assert_eq!(h.snapshot(), before, "a protected file changed");
    assert_eq!(h.names(), names, "a protected name appeared");
}

#[test]
fn file_commands_refuse_every_spelling_and_git_control_files() {
    let h = Home::new();
    let before = h.snapshot();
    let names = h.names();
    for p in PROTECTED {
        for r in [
            common::block(&format!("newfile {p}"), &[("CONTENT", "{}")]),
            common::block(&format!("mkdir {p}"), &[]),
            common::block("movefile notes.txt", &[("TO", p)]),
        ] {
            let f = h.ws.join("../reply.txt");
            std::fs::write(&f, common::reply(std::slice::from_ref(&r))).expect("reply");
            let out = h
                .host()
                .args(["run", "--mode", "auto", "--unsafe-workspace", "--workspace"])
                .arg(&h.ws)
                .arg(&f)
                .output()
                .expect("run");
            let text = String::from_utf8_lossy(&out.stdout);
            // .git/.agent spellings fail the format check (nothing runs); the others are
            // refused when they run.
            assert!(
                text.contains("code: KA_PATH_OUTSIDE") || text.contains("Bad path"),
                "{r}: {text}"
            );
            assert!(!text.contains("status: ok"), "{r}: {text}");
        }
    }
    assert_eq!(h.snapshot(), before, "a protected file changed");
    assert_eq!(h.names(), names, "a protected name appeared");
}

#[test]
fn batch_undo_asks_the_check_even_for_a_forged_manifest() {
    let h = Home::new();
    // A batch that changed notes.txt, then its manifest rewritten (as a command could where the
    // sandbox's namespaces are missing) to "restore" the settings file and the trusted config.
    let r = common::reply(&[common::block(
        "updatefile notes.txt",
        &[("CONTENT", "changed")],
    )]);
    let f = h.ws.join("../reply.txt");
    std::fs::write(&f, r).expect("reply");
    let out = h
        .host()
        .args(["run", "--mode", "auto", "--unsafe-workspace", "--workspace"])
        .arg(&h.ws)
        .arg(&f)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let backups = h.ws.join(".agent/backups");
    let session = std::fs::read_dir(&backups)
        .expect("backups")
        .flatten()
        .next()
        .expect("session")
        .path();
    let batch = std::fs::read_dir(&session)
        .expect("batch")
        .flatten()
        .next()
        .expect("batch")
        .path();
    for target in ["keyless.json", ".config/keyless/keyless.json"] {
        std::fs::create_dir_all(batch.join("1").join(target).parent().expect("parent"))
            .expect("dir");
        std::fs::write(
            batch.join("1").join(target),
            "{\"Commands\":{\"Mode\":\"Auto\"}}",
        )
        .expect("forged");
        std::fs::write(
            batch.join("manifest.json"),
            format!("[{{\"path\": \"{target}\", \"existed\": true}}]"),
        )
        .expect("manifest");
        let out = h
            .host()
            .args(["undo", "--workspace"])
            .arg(&h.ws)
            .output()
            .expect("undo");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("belongs to keyless") || err.contains("only the user edits it"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(h.ws.join("keyless.json")).expect("settings"),
        SETTINGS
    );
    assert_eq!(
        std::fs::read_to_string(h.ws.join(".config/keyless/keyless.json")).expect("trusted"),
        TRUSTED
    );
}

// ---- Point 2: whatever a command does to git's files, the user's own git runs nothing of it ----

/// A config line that writes `canary` when git runs it.
fn fsmonitor(canary: &Path) -> String {
    format!("sh -c 'echo ran > {}' #", canary.display())
}

/// The user's own git, later, outside keyless: status (fsmonitor), a commit (hooks), a push.
fn users_git(dir: &Path) {
    users_git_with(dir, || Command::new("git"));
}

/// [`users_git`] with the git that `git` makes (another user's, for instance).
fn users_git_with(dir: &Path, git: impl Fn() -> Command) {
    for args in [
        vec!["status", "--porcelain"],
        vec![
            "-c",
            "user.name=U",
            "-c",
            "user.email=u@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "user",
        ],
    ] {
        let _ = git().args(&args).current_dir(dir).output();
    }
}

/// The positive control for a canary test: `line` run directly by `sh` in `ws` (no keyless, no
/// sandbox), then `users` (the user's git, as the test runs it): every canary is written. So the
/// canaries' absence after keyless ran the same line is keyless's doing, not a payload that
/// never worked. The canaries are removed again afterwards.
fn runs_without_keyless(ws: &Path, line: &str, canaries: &[PathBuf], users: impl Fn()) {
    for c in canaries {
        let _ = std::fs::remove_file(c);
    }
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(ws)
        .output()
        .expect("sh");
    users();
    for c in canaries {
        assert!(
            c.exists(),
            "without keyless the payload does not write {} either, so its absence proves nothing: {}",
            c.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_file(c);
    }
}

/// The user's `git log` in `dir` at a terminal (`script` gives it one), where git starts the
/// configured pager; output to a pipe starts none.
fn user_logs_at_a_terminal(dir: &Path) {
    let _ = Command::new("timeout")
        .args(["10", "script", "-qec", "git log", "/dev/null"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output();
}

fn canary_gone(canaries: &[PathBuf], text: &str) {
    for c in canaries {
        assert!(
            !c.exists(),
            "{} ran outside the sandbox: {text}",
            c.display()
        );
    }
}

// ---- Point 6: /dev/shm is the sandbox's own ----

// ---- Point 3: programs that obey files in the workspace are never read-only ----

// ---- Point 4: secrets never reach a program through env://process ----

// ---- Point 6: an MCP server's program is never looked up where a command can write ----

// ---- Found by attacking the change: repositories made of symlinks, and keyless.json ----
