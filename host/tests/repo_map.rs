//! The repository map of the first prompt ("the model starts blind"), measured the way
//! a user meets it: a real `serve`, a session started over HTTP, and a scripted model that reads
//! only what the prompt and the results show. It fixes a small Python project's bug with the map
//! and without it (`Agent.RepoMapChars: 0`), and the figures are printed: the characters the map
//! adds and the turns each run took.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)] // the helpers fail the test loudly

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

struct Serve {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(ws: &Path, config: &Path) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["serve", "--port", "0", "--mode", "auto", "--workspace"])
        .arg(ws)
        .env("XDG_CONFIG_HOME", config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let b = keyless_tests::serve::read_banner(&mut reader);
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = reader.read_to_string(&mut sink);
    });
    Serve {
        child,
        port: b.port,
        token: b.token,
    }
}

impl Serve {
    fn post(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        let body = body.to_string();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n\r\n",
            self.port,
            self.token,
            body.len()
        );
        s.write_all(head.as_bytes()).expect("write");
        s.write_all(body.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        let (_, json) = out.split_once("\r\n\r\n").expect("http");
        // Chunked or not: the JSON is the text between the first `{` and the last `}`.
        let start = json.find('{').expect("json");
        let end = json.rfind('}').expect("json");
        serde_json::from_str(&json[start..=end]).expect("json")
    }
}

fn git(ws: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// A small Python project with the bug in one of its modules among many.
fn project(dir: &Path) {
    let w = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    w("README.md", "# calc\n\nA small calculator.\n");
    w("calc/__init__.py", "");
    w(
        "calc/ops.py",
        "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n",
    );
    w(
        "calc/cli.py",
        "import sys\n\nfrom calc import ops\n\n\ndef main():\n    print(ops.add(1, 2))\n",
    );
    for i in 0..12 {
        w(
            &format!("calc/unit{i}.py"),
            &format!("class Unit{i}:\n    def value(self):\n        return {i}\n\n\ndef make{i}():\n    return Unit{i}()\n"),
        );
    }
    w(
        "check.py",
        "from calc import ops\ntry:\n    ops.divide(1, 0)\nexcept ValueError:\n    print('fixed')\n",
    );
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "calc"]);
}

const TASK: &str = "divide(1, 0) should raise ValueError, not ZeroDivisionError. Fix it.";

/// The scripted model: it knows Python, and nothing of the repository but what it was shown.
#[derive(Default)]
struct Model {
    /// The file that defines `divide`, once seen.
    file: Option<String>,
    /// That file's content, once read.
    read: bool,
    listed: Option<Vec<String>>,
    fixed: bool,
}

impl Model {
    /// Learns from a text it was shown (the prompt, or a results message).
    fn learn(&mut self, text: &str) {
        for line in text.lines() {
            // The map: `calc/ops.py (55 B): def add, def divide`.
            if let Some((path, rest)) = line.split_once(" (") {
                if rest.contains(": ")
                    && rest
                        .split(": ")
                        .nth(1)
                        .is_some_and(|s| s.split(", ").any(|s| s == "def divide"))
                {
                    self.file = Some(path.to_string());
                }
            }
            // grep -l's answer.
            let t = line.trim();
            if t.ends_with(".py")
                && !t.contains(' ')
                && self.listed.is_some()
                && text.contains("grep -l")
            {
                self.file = Some(t.to_string());
            }
        }
        if text.contains("git ls-files") && self.listed.is_none() {
            self.listed = Some(
                text.lines()
                    .map(str::trim)
                    .filter(|l| l.ends_with(".py") && !l.contains(' '))
                    .map(str::to_string)
                    .collect(),
            );
        }
        if text.contains("return a / b") {
            self.read = true;
        }
        // The check after the edit: grep counted the new line.
        if text.contains("grep -c") && text.contains("<<<OUTPUT\n1\n") {
            self.fixed = true;
        }
    }

    /// The next reply.
    fn reply(&mut self) -> String {
        let run = |cmd: &str| {
            format!("@@runcommand\n<<<CMD\n{cmd}\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n")
        };
        if self.fixed {
            return "@@done\n<<<MSG\ndivide raises ValueError now\nMSG>>>\n@@end\n@@eof\n".into();
        }
        match (&self.file, self.read, &self.listed) {
            (Some(f), true, _) => format!(
                "@@editfile {f}\n<<<FIND\n    return a / b\nFIND>>>\n<<<REPLACE\n    if b == 0:\n        raise ValueError(\"division by zero\")\n    return a / b\nREPLACE>>>\n@@end\n@@runcommand\n<<<CMD\ngrep -c 'raise ValueError' {f}\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n"
            ),
            (Some(f), false, _) => format!("@@readfile {f}\n@@end\n@@next\n@@end\n@@eof\n"),
            (None, _, None) => run("git ls-files"),
            (None, _, Some(files)) => {
                let sources: Vec<&str> = files
                    .iter()
                    .map(String::as_str)
                    .filter(|f| f.starts_with("calc/"))
                    .collect();
                run(&format!("grep -l 'def divide' {}", sources.join(" ")))
            }
        }
    }
}

/// Fixes the bug through serve; gives back the turns it took and the prompt's length and its
/// map's.
fn fix(map_chars: Option<u32>) -> (u32, usize, usize) {
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("calc");
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&ws).expect("ws");
    project(&ws);
    if let Some(n) = map_chars {
        std::fs::create_dir_all(config.join("keyless")).expect("config");
        std::fs::write(
            config.join("keyless").join("keyless.json"),
            serde_json::json!({ "Agent": { "RepoMapChars": n } }).to_string(),
        )
        .expect("config");
    }
    let srv = serve(&ws, &config);
    let started = srv.post("/v1/sessions", &serde_json::json!({ "task": TASK }));
    let session = started["session"].as_str().expect("session").to_string();
    let prompt = started["prompt"].as_str().expect("prompt").to_string();
    let map_len = prompt.split_once("\n# Repository\n").map_or(0, |(_, m)| {
        m.split("\n\n").next().unwrap_or("").chars().count()
    });
    let mut model = Model::default();
    model.learn(&prompt);
    let mut turns = 0;
    loop {
        turns += 1;
        assert!(turns <= 10, "the scripted model did not finish");
        let reply = model.reply();
        let done = reply.starts_with("@@done");
        let answer = srv.post(
            &format!("/v1/sessions/{session}/replies"),
            &serde_json::json!({ "reply": reply }),
        );
        let text = answer["text"].as_str().unwrap_or_default().to_string();
        assert!(!text.contains("FORMAT ERROR"), "{reply}\n{text}");
        if done {
            break;
        }
        model.learn(&text);
    }
    let fixed = std::fs::read_to_string(ws.join("calc/ops.py")).expect("ops");
    assert!(fixed.contains("raise ValueError"), "{fixed}");
    (turns, prompt.chars().count(), map_len)
}

#[test]
fn the_map_shows_the_model_where_things_are_and_saves_turns() {
    let (with, prompt, map) = fix(None);
    let (without, bare, none) = fix(Some(0));
    println!(
        "repository map: {map} characters ({} of the first prompt's {prompt}; {bare} without it); the scripted fix took {with} turns with the map, {without} without",
        prompt - bare
    );
    assert_eq!(none, 0, "Agent.RepoMapChars 0 leaves the map out");
    assert!(map > 0 && map <= keyless_core::repomap::DEFAULT_BUDGET as usize);
    assert!(
        with < without,
        "with the map {with} turns, without {without}"
    );
}

#[test]
fn the_map_lists_top_level_symbols_read_by_tree_sitter() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("calc");
    std::fs::create_dir_all(&ws).expect("ws");
    project(&ws);
    let w = |rel: &str, text: &str| std::fs::write(ws.join(rel), text).expect("write");
    w(
        "lib.rs",
        "pub struct Parser {\n    at: usize,\n}\n\nimpl Parser {\n    pub fn new() -> Self {\n        Self { at: 0 }\n    }\n}\n\npub fn parse(s: &str) -> usize {\n    s.len()\n}\n\npub trait Visit {}\n",
    );
    w(
        "app.js",
        "export function start() {}\nclass Store {\n  get() {}\n}\nfunction helper() {\n  function inner() {}\n}\n",
    );
    w(
        "main.go",
        "package main\n\ntype Server struct{}\n\nfunc (s *Server) Run() {}\n\nfunc main() {}\n",
    );
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "more"]);
    let workspace = keyless_host::exec::workspace::Workspace::open(&ws).expect("ws");
    let map = keyless_host::exec::repomap::gather(&workspace);
    let of = |path: &str| -> Vec<String> {
        map.files
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.symbols.clone())
            .unwrap_or_default()
    };
    assert_eq!(of("calc/ops.py"), ["def add", "def divide"]);
    assert_eq!(of("calc/unit0.py"), ["class Unit0", "def make0"]);
    let rust = of("lib.rs");
    assert!(rust.contains(&"type Parser".to_string()), "{rust:?}");
    assert!(rust.contains(&"fn parse".to_string()), "{rust:?}");
    assert!(rust.contains(&"trait Visit".to_string()), "{rust:?}");
    assert!(
        !rust.iter().any(|s| s.ends_with(" new")),
        "a method is not top-level: {rust:?}"
    );
    let js = of("app.js");
    assert!(
        js.contains(&"class Store".to_string()) && js.contains(&"function helper".to_string()),
        "{js:?}"
    );
    assert!(
        !js.iter()
            .any(|s| s.ends_with("inner") || s.ends_with(" get")),
        "{js:?}"
    );
    let go = of("main.go");
    assert!(go.contains(&"func main".to_string()), "{go:?}");
    // The newest commit's files rank as changed lately.
    let lib = map
        .files
        .iter()
        .find(|f| f.path == "lib.rs")
        .expect("lib.rs");
    assert_eq!(lib.recent, Some(1));
    // A symlink out of the workspace is never read.
    let outside = tmp.path().join("secret.py");
    std::fs::write(&outside, "def leaked_secret():\n    pass\n").expect("secret");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, ws.join("link.py")).expect("symlink");
        git(&ws, &["add", "-A"]);
        let map = keyless_host::exec::repomap::gather(&workspace);
        assert!(
            !map.files
                .iter()
                .any(|f| f.symbols.iter().any(|s| s.contains("leaked_secret"))),
            "{map:?}"
        );
    }
}
