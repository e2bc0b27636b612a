//! `keyless-host as lsp` driven by a scripted client over its standard input and output, as an
//! editor drives it: initialize, open a file with problems, read the diagnostics, fix it, format,
//! hover, go to definition (in the file and into an imported one), shut down.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

struct Client {
    child: Child,
    stdin: ChildStdin,
    got: Receiver<Value>,
    next: i64,
}

impl Client {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .args(["as", "lsp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start");
        let stdin = child.stdin.take().expect("stdin");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, got) = channel();
        std::thread::spawn(move || loop {
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if out.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(n) = line.strip_prefix("Content-Length: ") {
                    len = n.parse().expect("length");
                }
            }
            let mut body = vec![0; len];
            out.read_exact(&mut body).expect("body");
            if tx
                .send(serde_json::from_slice(&body).expect("json"))
                .is_err()
            {
                return;
            }
        });
        Self {
            child,
            stdin,
            got,
            next: 1,
        }
    }

    fn send(&mut self, msg: &Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn wait(&self, want: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let m = self.got.recv_timeout(left).expect("the server answered");
            if want(&m) {
                return m;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let m = self.wait(|m| m["id"] == id);
        assert!(m.get("error").is_none(), "{method}: {m}");
        m["result"].clone()
    }

    fn diagnostics(&self, uri: &str) -> Vec<Value> {
        let m = self.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        });
        m["params"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

#[test]
fn an_editor_gets_diagnostics_formatting_hover_and_definitions() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("my programs");
    std::fs::create_dir_all(&dir).expect("dir");
    let exec = dir.join("exec.as");
    std::fs::write(
        &exec,
        "main agent Exec {\n    main func(step) {\n        return step\n    }\n}\n",
    )
    .expect("write");
    let file = dir.join("plan.as");
    let uri = format!("file://{}", file.display()).replace(' ', "%20");
    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    assert_eq!(init["capabilities"]["definitionProvider"], true, "{init}");
    c.notify("initialized", json!({}));

    // Two problems (one past a syntax error), with a non-ASCII name before them on the line.
    let broken = "import agent Exec from \"./exec.as\"\n\nmain agent Plan {\n    main func(input) {\n        é = = 1\n        return rslt\n    }\n}\n";
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "agentscript", "version": 1, "text": broken}}));
    let d = c.diagnostics(&uri);
    // Both, in one run: the syntax slip no longer hides the unknown name after it.
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[0]["code"], "KA_AS_SYNTAX");
    assert_eq!(d[1]["code"], "KA_AS_NAME", "{d:?}");
    assert_eq!(
        d[1]["range"]["start"],
        json!({"line": 5, "character": 15}),
        "{d:?}"
    );
    assert_eq!(
        d[0]["range"]["start"],
        json!({"line": 4, "character": 12}),
        "{d:?}"
    );
    let fixed = "import agent Exec from \"./exec.as\"\n\nmain agent Plan {\n    func step(input { goal string }) {\n      return Exec(input)\n    }\n\n    main func(input) {\n        é = 1\n        return rslt\n    }\n}\n";
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "KA_AS_NAME");
    assert_eq!(
        d[0]["range"],
        json!({"start": {"line": 9, "character": 15}, "end": {"line": 9, "character": 19}})
    );

    // Formatting: one edit, the formatter's text (indentation normalised).
    let edits = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    let text = edits[0]["newText"].as_str().expect("an edit");
    assert!(text.contains("\n        return Exec(input)\n"), "{text}");

    // Hover on `Exec` (line 5), on `step`'s declaration; definition of `Exec` and of a function.
    let h = c.request("textDocument/hover", at(&uri, 4, 15));
    assert!(
        h["contents"]["value"]
            .as_str()
            .is_some_and(|v| v.contains("import agent Exec from \"./exec.as\"")),
        "{h}"
    );
    let h = c.request("textDocument/hover", at(&uri, 3, 11));
    assert!(
        h["contents"]["value"]
            .as_str()
            .is_some_and(|v| v.contains("func step(input { \"goal\": string })")),
        "{h}"
    );
    let def = c.request("textDocument/definition", at(&uri, 4, 14));
    let target = def["uri"].as_str().expect("a location");
    assert!(target.ends_with("/my%20programs/./exec.as"), "{def}");
    assert!(std::path::Path::new(&target.replace("%20", " ")["file://".len()..]).exists());
    let def = c.request("textDocument/hover", at(&uri, 0, 1));
    assert_eq!(def, Value::Null, "\"import\" is a keyword, not a name");

    // A 1 MB file: how long until its diagnostics arrive (a figure, not an assertion).
    let mut big = String::from("main agent Big {\n");
    let mut i = 0;
    while big.len() < 1_000_000 {
        big.push_str(&format!("    func f{i}(input) {{\n        x = [1, 2, 3]\n        y = {{ a: x, b: \"text\" }}\n        return y\n    }}\n"));
        i += 1;
    }
    big.push_str("    main func(input) {\n        return f0(input)\n    }\n}\n");
    let big_uri = format!("file://{}/big.as", dir.display()).replace(' ', "%20");
    let started = Instant::now();
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": big_uri, "languageId": "agentscript", "version": 1, "text": big}}));
    let d = c.diagnostics(&big_uri);
    eprintln!(
        "as lsp: diagnostics of a {} KB file in {:?}",
        big.len() / 1000,
        started.elapsed()
    );
    assert!(d.is_empty(), "{d:?}");

    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    let status = c.child.wait().expect("exits");
    assert!(status.success(), "{status:?}");
}
