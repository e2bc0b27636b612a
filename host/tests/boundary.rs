//! The boundary on the newest surfaces: every write path asks the one own-file check,
//! whatever front end asks for the write. Each test runs the real `keyless-host` binary in a temp
//! folder; canaries and the user's config live outside the workspace or in a fake home, never in
//! the real one.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // fixture helpers fail the test loudly

mod common;

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
        let _ = Command::new("git").args(&args).current_dir(dir).output();
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

#[test]
fn an_approved_command_cannot_replace_git_or_plant_its_control_files() {
    let fx = common::Fixture::new();
    let c1 = fx.root.join("canary-hook");
    let c2 = fx.root.join("canary-fsmonitor");
    let c3 = fx.root.join("canary-commondir");
    let c4 = fx.root.join("canary-worktree-config");
    // The issue's attack, then the next variants: a commondir that sends git to a repository the
    // command made, and a config.worktree.
    let line = format!(
        "mv .git .git-old; cp -a .git-old .git; \
         printf '#!/bin/sh\\necho ran > {c1}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         git config core.fsmonitor \"{f2}\"; \
         git init -q --bare evil; git -C evil config core.fsmonitor \"{f3}\"; \
         printf '%s\\n' \"$PWD/evil\" > .git/commondir; \
         git config -f .git/config.worktree core.fsmonitor \"{f4}\"; \
         echo done",
        c1 = c1.display(),
        f2 = fsmonitor(&c2),
        f3 = fsmonitor(&c3),
        f4 = fsmonitor(&c4),
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("[approved by --yes]"), "{text}");
    users_git(&fx.ws());
    canary_gone(&[c1.clone(), c2.clone(), c3.clone(), c4.clone()], &text);
    // The repository is the user's, untouched, and still works.
    assert!(fx.ws().join(".git/HEAD").is_file());
    assert!(!fx.ws().join(".git/commondir").exists(), "{text}");
    assert!(!fx.ws().join(".git/config.worktree").exists(), "{text}");
    assert!(!fx.ws().join(".git/hooks/pre-commit").exists(), "{text}");
    assert!(
        !std::fs::read_to_string(fx.ws().join(".git/config"))
            .expect("config")
            .contains("fsmonitor"),
        "{text}"
    );
    // What was put back is said, and nothing was deleted: it is in the quarantine.
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(text.contains(".git/commondir"), "{text}");
    assert!(text.contains("evil/config"), "{text}");
    assert!(text.contains(".git/config.worktree"), "{text}");
    assert!(fx.ws().join(".agent/quarantine").is_dir());
    // Positive control, one variant at a time (a commondir hides the repository's own config,
    // so together they would mask each other): each writes its canary without keyless.
    let variants = [
        (
            format!(
                "mv .git .git-old; cp -a .git-old .git; printf '#!/bin/sh\\necho ran > {}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
                c1.display()
            ),
            c1,
        ),
        (format!("git config core.fsmonitor \"{}\"", fsmonitor(&c2)), c2),
        (
            format!(
                "git init -q --bare evil; git -C evil config core.fsmonitor \"{}\"; printf '%s\\n' \"$PWD/evil\" > .git/commondir",
                fsmonitor(&c3)
            ),
            c3,
        ),
        (
            format!(
                "git config extensions.worktreeConfig true; git config -f .git/config.worktree core.fsmonitor \"{}\"",
                fsmonitor(&c4)
            ),
            c4,
        ),
    ];
    for (variant, canary) in variants {
        let control = common::Fixture::new();
        runs_without_keyless(&control.ws(), &variant, &[canary], || {
            users_git(&control.ws());
        });
    }
}

#[test]
fn repositories_a_command_makes_anywhere_keep_no_program_of_its_choosing() {
    let fx = common::Fixture::new();
    let c = |n: &str| fx.root.join(format!("canary-{n}"));
    let canaries = [c("nested"), c("bare"), c("alias"), c("link"), c("hook")];
    // Unapproved (Auto mode runs them unasked): a nested repository, a bare one, an alias, a
    // `.git` file sending git to a repository in the sandbox's temp folder, a nested hook.
    let line = format!(
        "git init -q sub && git -C sub config core.fsmonitor \"{nested}\"; \
         git clone -q --bare . deep/er/bare.git && git -C deep/er/bare.git config core.pager \"{bare}\"; \
         git -C sub config alias.st \"!echo ran > {alias}\"; \
         git init -q --bare .agent/sandbox-tmp/g && git --git-dir=.agent/sandbox-tmp/g config core.bare false && git --git-dir=.agent/sandbox-tmp/g config core.fsmonitor \"{link}\"; \
         mkdir -p linked && echo 'gitdir: ../.agent/sandbox-tmp/g' > linked/.git; \
         printf '#!/bin/sh\\necho ran > {hook}\\n' > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit; \
         echo done",
        nested = fsmonitor(&canaries[0]),
        bare = fsmonitor(&canaries[1]),
        alias = canaries[2].display(),
        link = fsmonitor(&canaries[3]),
        hook = canaries[4].display(),
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    for dir in ["sub", "linked"] {
        users_git(&fx.ws().join(dir));
    }
    user_logs_at_a_terminal(&fx.ws().join("deep/er/bare.git"));
    let _ = Command::new("git")
        .arg("st")
        .current_dir(fx.ws().join("sub"))
        .output();
    canary_gone(&canaries, &text);
    // Positive control: the same line and the same git, without keyless, write every canary.
    let control = common::Fixture::new();
    let cws = control.ws();
    std::fs::create_dir_all(cws.join(".agent/sandbox-tmp")).expect("tmp");
    runs_without_keyless(&cws, &line, &canaries, || {
        for dir in ["sub", "linked"] {
            users_git(&cws.join(dir));
        }
        user_logs_at_a_terminal(&cws.join("deep/er/bare.git"));
        let _ = Command::new("git")
            .arg("st")
            .current_dir(cws.join("sub"))
            .output();
    });
    // A repository the command made with harmless settings is kept as it is.
    let (_, text) = fx.run(
        &[&common::run_cmd(
            "git init -q plain && git -C plain config user.name Model && git -C plain config remote.origin.url https://example.com/x.git && echo made",
        )],
        &["--mode", "auto"],
    );
    assert!(text.contains("status: ok"), "{text}");
    assert!(!text.contains("KA_GIT_PROTECTED"), "{text}");
    assert!(std::fs::read_to_string(fx.ws().join("plain/.git/config"))
        .expect("config")
        .contains("Model"));
}

#[test]
fn an_approved_worktree_is_kept_and_its_links_are_checked() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-wt");
    let (_, text) = fx.run(
        &[&common::run_cmd("git worktree add -q wt && echo added")],
        &["--mode", "ask", "--yes"],
    );
    assert!(text.contains("status: ok"), "{text}");
    assert!(!text.contains("KA_GIT_PROTECTED"), "{text}");
    assert!(fx.ws().join("wt/.git").is_file());
    // The worktree's commondir pointed at a repository the command made: put back.
    let line = format!(
        "git init -q --bare evil && git -C evil config core.fsmonitor \"{}\"; printf '../../../evil\\n' > .git/worktrees/wt/commondir; echo done",
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws().join("wt"));
    canary_gone(std::slice::from_ref(&canary), &text);
    assert_eq!(
        std::fs::read_to_string(fx.ws().join(".git/worktrees/wt/commondir")).expect("commondir"),
        "../..\n"
    );
    // Positive control: in a worktree made the same way, the line without keyless runs it.
    let control = common::Fixture::new();
    common::git(&control.ws(), &["worktree", "add", "-q", "wt"]);
    runs_without_keyless(&control.ws(), &line, &[canary], || {
        users_git(&control.ws().join("wt"));
    });
}

#[test]
fn a_git_file_link_cannot_be_redirected() {
    // The workspace's .git is a file (a separate git folder, as worktrees and submodules have).
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    common::git(root, &["init", "-q", "--separate-git-dir", "gitdir", "ws"]);
    let ws = root.join("ws");
    std::fs::write(ws.join("a.txt"), "a\n").expect("write");
    common::commit_all(&ws, "a");
    let canary = root.join("canary-gitdir");
    let line = format!(
        "git init -q --bare evil && git -C evil config core.bare false && git -C evil config core.fsmonitor \"{}\"; echo 'gitdir: evil' > .git; echo done",
        fsmonitor(&canary)
    );
    let reply = root.join("reply.txt");
    std::fs::write(&reply, common::run_cmd(&line)).expect("reply");
    for mode in [&["--mode", "auto"][..], &["--mode", "ask", "--yes"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .args(["run", "--workspace"])
            .arg(&ws)
            .args(mode)
            .arg(&reply)
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        users_git(&ws);
        canary_gone(std::slice::from_ref(&canary), &text);
        assert!(
            std::fs::read_to_string(ws.join(".git"))
                .expect(".git")
                .contains("gitdir"),
            "{text}"
        );
        assert!(!std::fs::read_to_string(ws.join(".git"))
            .expect(".git")
            .contains("evil"));
    }
    // Positive control: the same line on the same kind of workspace, without keyless.
    common::git(
        root,
        &["init", "-q", "--separate-git-dir", "gitdir2", "control"],
    );
    let control = root.join("control");
    runs_without_keyless(&control, &line, &[canary], || users_git(&control));
}

// ---- Point 6: /dev/shm is the sandbox's own ----

#[test]
fn dev_shm_is_private_to_the_command() {
    let fx = common::Fixture::new();
    let name = format!("keyless-shm-{}", std::process::id());
    let shared = Path::new("/dev/shm").join(&name);
    let _ = std::fs::remove_file(&shared);
    let (_, text) = fx.run(
        &[&common::run_cmd(&format!(
            "echo planted > /dev/shm/{name} && cat /dev/shm/{name}"
        ))],
        &["--mode", "auto"],
    );
    // Writable inside (programs that need shared memory still work)…
    assert!(text.contains("<<<OUTPUT\nplanted\nOUTPUT>>>"), "{text}");
    // …but never the /dev/shm the user's other programs share.
    assert!(!shared.exists(), "{text}");
}

// ---- Point 3: programs that obey files in the workspace are never read-only ----

#[test]
fn a_planted_toolchain_never_runs_unasked() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    // The attack: a toolchain file naming a toolchain the model wrote. rustup's proxy (`cargo`)
    // runs it for `cargo --version`, which was ReadOnly and ran unasked in AutoSafe.
    std::fs::create_dir_all(ws.join("tc/bin")).expect("dir");
    std::fs::write(
        ws.join("tc/bin/cargo"),
        "#!/bin/sh\necho PLANTED-TOOLCHAIN-RAN\n",
    )
    .expect("cargo");
    common::make_executable(&ws.join("tc/bin/cargo"));
    std::fs::write(
        ws.join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}/tc\"\n", ws.display()),
    )
    .expect("toolchain");
    for line in [
        "cargo --version",
        "cargo metadata --format-version 1",
        "cargo tree",
    ] {
        let (_, text) = fx.run(&[&common::run_cmd(line)], &["--mode", "autosafe"]);
        assert!(!text.contains("PLANTED-TOOLCHAIN-RAN"), "{line}: {text}");
        assert!(text.contains("code: KA_COMMAND_DECLINED"), "{line}: {text}");
        assert!(text.contains("rust-toolchain.toml"), "{line}: {text}");
    }
    // What the user is shown agrees with what ran.
    let (_, shown) = common::host_in(
        &fx,
        &[
            "policy",
            "--mode",
            "autosafe",
            "--workspace",
            ws.to_str().expect("utf8"),
            "--",
            "cargo",
            "--version",
        ],
    );
    assert!(
        shown.starts_with("tier: Execute  decision: confirm"),
        "{shown}"
    );
    // Every steering file of the table, in the root or a subfolder, for its program.
    for (file, line) in [
        (".mvn/jvm.config", "mvn --version"),
        ("sub/.cargo/config.toml", "cargo build"),
        (".npmrc", "npm --version"),
        (".yarnrc.yml", "yarn --version"),
        ("go.work", "go version"),
        (".python-version", "python3 --version"),
        ("gradle.properties", "gradle --version"),
    ] {
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join(file);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, "x\n").expect("file");
        let (_, shown) = common::host_in(
            &fx,
            &[
                "policy",
                "--mode",
                "autosafe",
                "--workspace",
                tmp.path().to_str().expect("utf8"),
                "--",
                line,
            ],
        );
        assert!(
            shown.starts_with("tier: Execute") && shown.contains(file),
            "{file}: {shown}"
        );
    }
}

// ---- Point 4: secrets never reach a program through env://process ----

#[test]
fn env_process_reads_only_allowed_names_and_never_a_credential() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let cfg_tmp = tempfile::tempdir().expect("cfg");
    let secrets: &[(&str, &str)] = &[
        (
            "DATABASE_URL",
            "postgres://app:s3cr3t-canary@db.example.com/app",
        ),
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=c4nary==",
        ),
        ("GPG_PASSPHRASE", "canary horse battery"),
        ("GITHUB_TOKEN2", "ghp_canary0123456789abcdefghijklmnop"),
        ("OPENAI_APIKEYS", "sk-canary-0123456789abcdefghij"),
        ("MYSQL_PWD", "canary"),
        (
            "SENTRY_DSN",
            "https://c4nary0123456789abcdef@o1.ingest.sentry.io/1",
        ),
        (
            "SLACK_WEBHOOK_URL",
            "https://hooks.slack.com/services/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",
        ),
        ("HTTPS_PROXY", "http://user:canary@proxy.example.com:3128"),
        ("CI_JOB_JWT", "eyJhbGciOiJSUzI1NiJ9.canary.sig"),
        ("APP_SETTING", "https://u:canary@h.example.com"),
    ];
    let cfg = cfg_tmp.path().join("cfg");
    for allow in [
        None,
        // A prefix or * lets names through, never a secret-looking name or a credential value.
        Some(r#"["*"]"#),
        Some(r#"["APP_*", "GPG_*"]"#),
    ] {
        std::fs::create_dir_all(cfg.join("keyless")).expect("cfg");
        match allow {
            Some(list) => std::fs::write(
                cfg.join("keyless/keyless.json"),
                format!("{{\"Programs\": {{\"Env\": {list}}}}}"),
            )
            .expect("config"),
            None => {
                let _ = std::fs::remove_file(cfg.join("keyless/keyless.json"));
            }
        }
        for (name, value) in secrets {
            std::fs::write(
                d.join("e.as"),
                format!("import tool Env from \"env://process\"\n\nmain agent A {{\n    main func(input) {{\n        return Env.get({{ name: \"{name}\" }})\n    }}\n}}\n"),
            )
            .expect("program");
            let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
                .args(["as", "run", "e.as"])
                .current_dir(d)
                .env("XDG_CONFIG_HOME", &cfg)
                .env(name, value)
                .output()
                .expect("run");
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains("anary"), "{allow:?} {name}: {all}");
            assert!(
                all.contains("KA_AS_TOOL_REFUSED"),
                "{allow:?} {name}: {all}"
            );
        }
    }
    // Named exactly, the user means it.
    std::fs::write(
        cfg.join("keyless/keyless.json"),
        r#"{"Programs": {"Env": ["DATABASE_URL"]}}"#,
    )
    .expect("config");
    std::fs::write(
        d.join("e.as"),
        "import tool Env from \"env://process\"\n\nmain agent A {\n    main func(input) {\n        return Env.get({ name: \"DATABASE_URL\" })\n    }\n}\n",
    )
    .expect("program");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["as", "run", "e.as"])
        .current_dir(d)
        .env("XDG_CONFIG_HOME", &cfg)
        .env("DATABASE_URL", "postgres://a:b@h/db")
        .output()
        .expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "\"postgres://a:b@h/db\"\n"
    );
}

/// The next variant: `printenv` is ReadOnly and its output reaches the chat, so commands never
/// get the user's secrets in their environment, unless `Programs.Env` names one exactly.
#[test]
fn commands_never_see_secret_environment_variables() {
    let fx = common::Fixture::new();
    let files = fx.reply_files(&[&common::run_cmd("printenv")]);
    let run = |fx: &common::Fixture| {
        let out = fx
            .host()
            .args(["run", "--mode", "ask", "--workspace"])
            .arg(fx.ws())
            .args(&files)
            .env("GITHUB_TOKEN", "ghp_c4nary0123456789abcdefghijklmn")
            .env("DATABASE_URL", "postgres://app:c4nary@db.example.com/app")
            .env("KEYLESS_VISIBLE", "yes")
            .output()
            .expect("run");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = run(&fx);
    assert!(text.contains("KEYLESS_VISIBLE=yes"), "{text}");
    assert!(!text.contains("c4nary"), "{text}");
    // The model is told which names are withheld (names only), so a failing command is explained.
    assert!(text.contains("status: ok"), "{text}");
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        r#"{"Programs": {"Env": ["DATABASE_URL"]}}"#,
    )
    .expect("config");
    let text = run(&fx);
    assert!(
        text.contains("DATABASE_URL=postgres://app:c4nary@db.example.com/app"),
        "{text}"
    );
    assert!(!text.contains("ghp_c4nary"), "{text}");
}

// ---- Point 6: an MCP server's program is never looked up where a command can write ----

#[test]
fn an_mcp_server_program_is_never_taken_from_a_temp_folder_on_path() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-mcp");
    let name = format!("keyless-test-mcp-{}", std::process::id());
    let mut planted = Vec::new();
    for folder in [std::env::temp_dir(), PathBuf::from("/dev/shm")] {
        let dir = folder.join(format!("keyless-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("bin");
        let p = dir.join(&name);
        std::fs::write(&p, format!("#!/bin/sh\necho ran > {}\n", canary.display()))
            .expect("server");
        common::make_executable(&p);
        planted.push(dir);
    }
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({"Mcp": {"Servers": {"planted": {"Command": name}}}}).to_string(),
    )
    .expect("config");
    let path = format!(
        "{}:{}:{}",
        planted[0].display(),
        planted[1].display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = fx
        .host()
        .args(["mcp", "list", "--json", "--workspace"])
        .arg(fx.ws())
        .env("PATH", path)
        .output()
        .expect("mcp list");
    let text = String::from_utf8_lossy(&out.stdout);
    for d in &planted {
        let _ = std::fs::remove_dir_all(d);
    }
    assert!(text.contains("KA_MCP_UNAVAILABLE"), "{text}");
    assert!(
        text.contains("KA_LAUNCH_REFUSED")
            && text.contains("not in a PATH folder the model cannot write"),
        "{text}"
    );
    assert!(!canary.exists(), "a server planted in a temp folder ran");
}

#[test]
fn a_submodules_git_folder_keeps_no_program_of_the_commands_choosing() {
    let fx = common::Fixture::new();
    // A submodule: its git folder lives in the workspace's .git/modules/lib.
    common::git(&fx.root, &["init", "-q", "--bare", "lib.git"]);
    common::git(&fx.root, &["clone", "-q", "lib.git", "lib-work"]);
    let work = fx.root.join("lib-work");
    std::fs::write(work.join("x.txt"), "x\n").expect("x");
    common::commit_all(&work, "x");
    common::git(&work, &["push", "-q", "origin", "HEAD"]);
    common::git(
        &fx.ws(),
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            fx.root.join("lib.git").to_str().expect("utf8"),
            "lib",
        ],
    );
    common::git(&fx.ws(), &["commit", "-qm", "submodule"]);
    let (c1, c2) = (
        fx.root.join("canary-sub-fsmonitor"),
        fx.root.join("canary-sub-hook"),
    );
    // Approved: the command may write .git, so the submodule's config and hooks are writable;
    // the top-level `git status` runs the submodule's fsmonitor when it looks inside.
    let line = format!(
        "git -C lib config core.fsmonitor \"{}\"; printf '#!/bin/sh\\necho ran > {}\\n' > .git/modules/lib/hooks/post-checkout; chmod +x .git/modules/lib/hooks/post-checkout; echo done",
        fsmonitor(&c1),
        c2.display()
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws());
    let _ = Command::new("git")
        .args(["submodule", "update", "--checkout", "--force"])
        .current_dir(fx.ws())
        .output();
    users_git(&fx.ws().join("lib"));
    canary_gone(&[c1, c2], &text);
    assert!(
        !std::fs::read_to_string(fx.ws().join(".git/modules/lib/config"))
            .expect("config")
            .contains("fsmonitor"),
        "{text}"
    );
}

/// The guard lists again only the folders whose times changed since its last scan: a repository
/// made deep inside old folders, and a `.git` file rewritten in place (which changes no folder's
/// times), are still found on the second command of a run.
#[test]
fn the_guard_finds_changes_in_folders_it_did_not_list_again() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("old/a/b")).expect("dirs");
    std::fs::create_dir_all(ws.join("old/link")).expect("dirs");
    common::git(&fx.root, &["init", "-q", "--bare", "other.git"]);
    std::fs::write(ws.join("old/link/.git"), "gitdir: ../../.git\n").expect(".git file");
    // Old enough that the scans trust their times.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let canary = fx.root.join("canary-deep");
    let attack = format!(
        "printf 'gitdir: {}\\n' > old/link/.git; git init -q old/a/b/sub && git -C old/a/b/sub config core.fsmonitor \"{}\"; echo done",
        fx.root.join("other.git").display(),
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(
        &[&common::run_cmd("echo warm"), &common::run_cmd(&attack)],
        &["--mode", "auto"],
    );
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(text.contains("old/a/b/sub/.git/config"), "{text}");
    assert!(text.contains("old/link/.git"), "{text}");
    assert_eq!(
        std::fs::read_to_string(ws.join("old/link/.git")).expect(".git"),
        "gitdir: ../../.git\n"
    );
    users_git(&ws.join("old/a/b/sub"));
    canary_gone(std::slice::from_ref(&canary), &text);
    // Positive control: the same attack without keyless runs the fsmonitor.
    let control = common::Fixture::new();
    let cws = control.ws();
    std::fs::create_dir_all(cws.join("old/a/b")).expect("dirs");
    runs_without_keyless(&cws, &attack, &[canary], || {
        users_git(&cws.join("old/a/b/sub"));
    });
}

// ---- Found by attacking the change: repositories made of symlinks, and keyless.json ----

#[test]
fn repositories_made_of_symlinks_are_repositories_too() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("src")).expect("src");
    let c = |n: &str| fx.root.join(format!("canary-{n}"));
    // A folder that borrows the workspace's history through symlinks, with a HEAD that is a
    // symlink: `git status` there looks normal and runs the config's fsmonitor.
    let stealth = format!(
        "cd src && ln -s ../.git/objects objects && ln -s ../.git/refs refs && ln -s ../.git/index index && ln -s refs/heads/feature HEAD && printf '[core]\\n\\tworktree = ..\\n\\tfsmonitor = \"%s\"\\n' \"{}\" > config; cd ..; \
         mkdir -p a && touch a/objects && chmod +x a/objects && mkdir a/refs && echo 'ref: refs/heads/x' > a/HEAD && git config -f a/config core.fsmonitor \"{}\"; \
         mkdir -p sub/.git/objects sub/.git/refs && ln -s refs/heads/main sub/.git/HEAD && git config -f sub/.git/config core.fsmonitor \"{}\"; echo done",
        fsmonitor(&c("stealth")).replace('"', "\\\""),
        fsmonitor(&c("exec-objects")),
        fsmonitor(&c("nested-link-head")),
    );
    let (_, text) = fx.run(&[&common::run_cmd(&stealth)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    for (dir, n) in [
        ("src", "stealth"),
        ("a", "exec-objects"),
        ("sub", "nested-link-head"),
    ] {
        users_git(&ws.join(dir));
        canary_gone(&[c(n)], &text);
    }
    // Positive control: the same line without keyless makes a repository in sub/ whose git
    // runs the fsmonitor. Not for "stealth" (src/) nor "exec-objects" (a/): git there says
    // "this operation must be run in a work tree" and runs nothing even without keyless, so
    // those two canaries prove nothing yet.
    let control = common::Fixture::new();
    let cws = control.ws();
    std::fs::create_dir_all(cws.join("src")).expect("src");
    runs_without_keyless(&cws, &stealth, &[c("nested-link-head")], || {
        users_git(&cws.join("sub"));
    });
    // The symlinked folder is a repository to the write check too: its config is refused.
    let write = common::reply(&[common::block(
        "newfile src/config",
        &[("CONTENT", "[core]\n\tfsmonitor = x")],
    )]);
    let (_, text) = fx.run(&[&write], &["--mode", "auto"]);
    assert!(text.contains("code: KA_PATH_OUTSIDE"), "{text}");
    assert!(!ws.join("src/config").exists(), "{text}");
}

#[test]
fn an_embedded_repository_added_to_the_index_runs_nothing() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-gitlink");
    // Approved: a repository with a symlinked HEAD and an fsmonitor, added to the index as a
    // gitlink, so the user's `git status` at the root would look inside it.
    let line = format!(
        "git init -q vendor/lib && cd vendor/lib && git -c user.name=M -c user.email=m@x commit -q --allow-empty -m x && rm .git/HEAD && ln -s refs/heads/master .git/HEAD; git config core.fsmonitor \"{}\"; cd ../..; git add vendor/lib; echo done",
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws());
    canary_gone(std::slice::from_ref(&canary), &text);
    // Positive control: the same line without keyless, and the user's git status runs it.
    let control = common::Fixture::new();
    runs_without_keyless(&control.ws(), &line, &[canary], || {
        users_git(&control.ws());
    });
}

#[test]
fn a_command_cannot_make_or_change_keyless_json() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    let (_, text) = fx.run(
        &[&common::run_cmd(
            "echo '{\"Commands\": {\"TimeoutSeconds\": 100000}}' > keyless.json; echo done",
        )],
        &["--mode", "auto"],
    );
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(
        text.contains("keyless.json holds keyless's own settings"),
        "{text}"
    );
    assert!(!ws.join("keyless.json").exists(), "{text}");
    // keyless still starts: nothing of the model's reached the next session.
    let (out, text) = fx.run(&[&common::run_cmd("echo next")], &["--mode", "auto"]);
    assert_eq!(out.status.code(), Some(5), "{text}");
}
