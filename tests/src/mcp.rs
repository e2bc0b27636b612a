//! Real MCP servers from npm for the tests (`@modelcontextprotocol/server-everything` and
//! `server-filesystem`, installed by `npm ci` as dev dependencies): where they are, and
//! server-everything over Streamable HTTP on 127.0.0.1 (tests/mcp/loopback.mjs binds it there).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// A server of this repository's own, in tests/mcp/ (`recorder.mjs`).
#[must_use]
pub fn own_server(file: &str) -> PathBuf {
    root().join("tests").join("mcp").join(file)
}

/// `dist/index.js` of an `@modelcontextprotocol` server package.
#[must_use]
pub fn server(package: &str) -> PathBuf {
    root()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
}

/// Whether Node.js and the servers are here. Under CI they must be (`cargo xtask test` runs
/// `npm ci` first).
#[must_use]
pub fn available() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let ok = node && server("server-everything").exists() && server("server-filesystem").exists();
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "node or the npm MCP servers are missing under CI (npm ci installs them)"
        );
        eprintln!("skipped: node or node_modules/@modelcontextprotocol/* missing (run npm ci)");
    }
    ok
}

/// An MCP server over Streamable HTTP on 127.0.0.1: server-everything, or one of tests/mcp/.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    pub url: String,
}

impl HttpServer {
    /// server-everything.
    #[must_use]
    pub fn start() -> Self {
        Self::spawn(
            Command::new("node")
                .arg("--import")
                .arg(root().join("tests/mcp/loopback.mjs"))
                .arg(server("server-everything"))
                .arg("streamableHttp"),
        )
    }

    /// tests/mcp/protected.mjs: a server that needs a login, its authorization server beside it
    /// (access tokens living `token_seconds`), recording what happens to `record`.
    #[must_use]
    pub fn protected(record: &std::path::Path, token_seconds: u32) -> Self {
        Self::spawn(
            Command::new("node")
                .arg(own_server("protected.mjs"))
                .env("KEYLESS_RECORD", record)
                .env("KEYLESS_TOKEN_SECONDS", token_seconds.to_string()),
        )
    }

    /// tests/mcp/protected.mjs whose authorization server lets no client register itself.
    #[must_use]
    pub fn protected_without_registration(record: &std::path::Path) -> Self {
        Self::spawn(
            Command::new("node")
                .arg(own_server("protected.mjs"))
                .env("KEYLESS_RECORD", record)
                .env("KEYLESS_NO_REGISTRATION", "1"),
        )
    }

    /// tests/mcp/modern.mjs over Streamable HTTP: a server of the 2026-07-28 revision only,
    /// recording what it receives to `record`.
    #[must_use]
    pub fn modern(record: &std::path::Path) -> Self {
        Self::spawn(
            Command::new("node")
                .arg(own_server("modern.mjs"))
                .arg("http")
                .env("KEYLESS_RECORD", record),
        )
    }

    /// Starts `cmd` and waits for its `KEYLESS_LISTENING PORT` line on standard error.
    fn spawn(cmd: &mut Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the MCP server");
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let port = loop {
            line.clear();
            let n = err.read_line(&mut line).expect("read stderr");
            assert!(n > 0, "the MCP server ended before listening");
            if let Some(p) = line.trim().strip_prefix("KEYLESS_LISTENING ") {
                break p.parse::<u16>().expect("port");
            }
        };
        std::thread::spawn(move || {
            let mut sink = String::new();
            while err.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
