//! `keyless-host as lsp`: a language server for `.as` programs on standard input and output
//! (lsp-server, rust-analyzer's scaffold: a synchronous loop over JSON-RPC messages, no runtime).
//!
//! It keeps each open document's text (full sync) and answers from core: live diagnostics
//! (`lang::check`, every problem of the file), formatting (`format_source`), hover and go to
//! definition (`lang::ide`) for imports, agents and functions; an agent or file import leads to
//! the imported file. Positions are converted between core's characters and the protocol's
//! UTF-16 code units here.

use keyless_core::lang::{self, ide, parser, Diagnostic};
use lsp_server::{Connection, Message, Notification, Request, Response};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The server's capabilities: full-text sync, formatting, hover, definition.
fn capabilities() -> Value {
    json!({
        "textDocumentSync": 1,
        "documentFormattingProvider": true,
        "hoverProvider": true,
        "definitionProvider": true,
    })
}

/// Runs the server until the client says `exit`.
///
/// # Errors
/// The protocol broke (the client closed the stream before `exit`).
pub fn serve() -> Result<(), String> {
    let (conn, io) = Connection::stdio();
    run(&conn).map_err(|e| e.to_string())?;
    drop(conn);
    io.join().map_err(|e| e.to_string())
}

/// The message loop on a connection (stdio, or in memory for tests).
///
/// # Errors
/// As [`serve`].
pub fn run(conn: &Connection) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (id, _params) = conn.initialize_start()?;
    conn.initialize_finish(
        id,
        json!({
            "capabilities": capabilities(),
            "serverInfo": { "name": "keyless-host as lsp", "version": env!("CARGO_PKG_VERSION") },
        }),
    )?;
    let mut docs: HashMap<String, String> = HashMap::new();
    for msg in &conn.receiver {
        match msg {
            Message::Request(req) => {
                if conn.handle_shutdown(&req)? {
                    return Ok(());
                }
                let resp = answer(&req, &docs);
                conn.sender.send(Message::Response(resp))?;
            }
            Message::Notification(n) => {
                if let Some(uri) = changed(&n, &mut docs) {
                    let text = docs.get(&uri).map_or("", String::as_str);
                    conn.sender.send(Message::Notification(Notification::new(
                        "textDocument/publishDiagnostics".into(),
                        json!({ "uri": uri, "diagnostics": diagnostics(text) }),
                    )))?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

/// Applies an open, change or close; the document whose diagnostics are due.
fn changed(n: &Notification, docs: &mut HashMap<String, String>) -> Option<String> {
    let doc = n.params.get("textDocument")?;
    let uri = doc.get("uri")?.as_str()?.to_string();
    match n.method.as_str() {
        "textDocument/didOpen" => {
            docs.insert(uri.clone(), doc.get("text")?.as_str()?.to_string());
        }
        "textDocument/didChange" => {
            // Full sync: the last change holds the whole text.
            let text = n
                .params
                .get("contentChanges")?
                .as_array()?
                .last()?
                .get("text")?;
            docs.insert(uri.clone(), text.as_str()?.to_string());
        }
        "textDocument/didClose" => {
            docs.remove(&uri);
            return None;
        }
        _ => return None,
    }
    Some(uri)
}

/// A character column (1-based) of a line as the protocol's UTF-16 offset (0-based).
fn utf16_of(line: &str, column: u32) -> u32 {
    let n: usize = line
        .chars()
        .take(column.saturating_sub(1) as usize)
        .map(char::len_utf16)
        .sum();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The protocol's UTF-16 offset (0-based) as a character column (1-based).
fn column_of(line: &str, utf16: u32) -> u32 {
    let mut units = 0u32;
    let mut col = 1u32;
    for c in line.chars() {
        if units >= utf16 {
            break;
        }
        units += u32::try_from(c.len_utf16()).unwrap_or(1);
        col += 1;
    }
    col
}

fn line_text(text: &str, line: u32) -> &str {
    text.lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or("")
}

/// The range of the name (or the one character) at a core position.
fn range_at(text: &str, line: u32, column: u32) -> Value {
    let l = line_text(text, line);
    let (start, end) = match ide::word_at(text, line, column).filter(|(_, s)| *s == column) {
        Some((w, s)) => (s, s + u32::try_from(w.chars().count()).unwrap_or(1)),
        None => (column, column + 1),
    };
    let row = line.saturating_sub(1);
    json!({
        "start": { "line": row, "character": utf16_of(l, start) },
        "end": { "line": row, "character": utf16_of(l, end) },
    })
}

/// The protocol's position (0-based line, UTF-16 offset) of a byte offset of the text.
fn position_at(text: &str, byte: usize) -> Value {
    let before = &text[..byte.min(text.len())];
    let row = before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let character: usize = before[line_start..].chars().map(char::len_utf16).sum();
    json!({ "line": row, "character": character })
}

/// The range a diagnostic underlines, as the terminal renderer does
/// ([`Diagnostic::byte_range`]); the end of the text when its line is past it.
fn range_of(text: &str, d: &Diagnostic) -> Value {
    let r = d.byte_range(text).unwrap_or(text.len()..text.len());
    json!({ "start": position_at(text, r.start), "end": position_at(text, r.end) })
}

/// Every problem of the document, as protocol diagnostics.
fn diagnostics(text: &str) -> Vec<Value> {
    lang::check(text)
        .diagnostics
        .iter()
        .map(|d: &Diagnostic| {
            let message = match &d.help {
                Some(h) => format!("{}\nhelp: {h}", d.message),
                None => d.message.clone(),
            };
            json!({
                "range": range_of(text, d),
                "severity": 1,
                "code": d.code.as_str(),
                "source": "keyless",
                "message": message,
            })
        })
        .collect()
}

fn whole(text: &str) -> Value {
    let lines = text.split('\n').count();
    json!({
        "start": { "line": 0, "character": 0 },
        "end": { "line": lines, "character": 0 },
    })
}

/// The document and the core position a request points at.
fn place<'a>(
    req: &Request,
    docs: &'a HashMap<String, String>,
) -> Option<(String, &'a str, u32, u32)> {
    let uri = req
        .params
        .get("textDocument")?
        .get("uri")?
        .as_str()?
        .to_string();
    let text = docs.get(&uri)?;
    let pos = req.params.get("position")?;
    let line = u32::try_from(pos.get("line")?.as_u64()?).ok()? + 1;
    let utf16 = u32::try_from(pos.get("character")?.as_u64()?).ok()?;
    let column = column_of(line_text(text, line), utf16);
    Some((uri, text.as_str(), line, column))
}

/// A `file://` URI's path (percent-escapes decoded).
fn path_of(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if let Some(b) = rest
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok().map(std::path::PathBuf::from)
}

/// A path as a `file://` URI (the characters a path may hold unescaped kept).
fn uri_of(path: &std::path::Path) -> String {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn answer(req: &Request, docs: &HashMap<String, String>) -> Response {
    let ok = |v: Value| Response::new_ok(req.id.clone(), v);
    match req.method.as_str() {
        "textDocument/formatting" => {
            let uri = req
                .params
                .get("textDocument")
                .and_then(|d| d.get("uri"))
                .and_then(Value::as_str)
                .unwrap_or("");
            match docs.get(uri).map(|t| (t, lang::format::format_source(t))) {
                Some((text, Ok(formatted))) if formatted != *text => {
                    ok(json!([{ "range": whole(text), "newText": formatted }]))
                }
                // Nothing to change, or a file that does not parse: no edits (its
                // diagnostics say why).
                _ => ok(json!([])),
            }
        }
        "textDocument/hover" => {
            let found = place(req, docs).and_then(|(_, text, line, column)| {
                let program = parser::parse_all(text).0?;
                ide::lookup(text, &program, line, column)
            });
            ok(found.map_or(
                Value::Null,
                |f| json!({ "contents": { "kind": "markdown", "value": f.hover } }),
            ))
        }
        "textDocument/definition" => {
            let found = place(req, docs).and_then(|(uri, text, line, column)| {
                let program = parser::parse_all(text).0?;
                Some((uri, text, ide::lookup(text, &program, line, column)?))
            });
            ok(match found {
                Some((uri, text, f)) => match f.target {
                    ide::Target::Here(p) => {
                        json!({ "uri": uri, "range": range_at(text, p.line, p.column) })
                    }
                    ide::Target::File(rel) => {
                        match path_of(&uri).and_then(|p| Some(p.parent()?.join(&rel))) {
                            Some(target) => json!({
                                "uri": uri_of(&target),
                                "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } },
                            }),
                            None => Value::Null,
                        }
                    }
                },
                None => Value::Null,
            })
        }
        _ => Response::new_err(
            req.id.clone(),
            lsp_server::ErrorCode::MethodNotFound as i32,
            format!("keyless-host as lsp does not answer {}", req.method),
        ),
    }
}
