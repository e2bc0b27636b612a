//! The tools `.as` programs import (the `.as` specification's "Tool URI" section), with structured JSON
//! arguments in and JSON out, all confined to the workspace through its directory handle.
//!
//! - `sh://find`, `sh://grep`, `sh://sed` are implemented natively, not run: no shell and no
//!   program is ever started, so nothing a program writes can reach one (globset for names, the
//!   regex crate for patterns). Outputs are bounded.
//! - `file://workspace`: `read`, `list`, `write`, `patch` (the search text must occur exactly
//!   once, as `@@editfile`'s FIND), `undo`. `write` and `patch` return effect records (path,
//!   before/after SHA-256, backup location), and `undo` reverses a list of them.
//! - `env://process`: `get`; only the names keyless.json's `Programs.Env` allows and a few that
//!   describe the machine, never a credential-looking value unless named exactly
//!   ([`keyless_core::secrets`]).
//! - `http(s)://ORIGIN`: `get` and `post` on paths of an origin the user allows
//!   (`Programs.Http`), see [`super::http`].
//! - `mcp://SERVER/TOOL`: `call` (or `run`) with the tool's arguments as one object, on a server
//!   keyless.json's `Mcp.Servers` declares; the answer is the tool's structured content, else its
//!   text (parsed when it is JSON).
//! - Every other `sh://` program is refused unless keyless.json's `Programs.Tools` names it.

use super::arg_str;
use crate::exec::workspace::Workspace;
use cap_std::fs::Dir;
use keyless_core::lang::interp::EffectError;
use keyless_core::Code;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The most entries `find` visits, and the deepest folder it enters.
const MAX_VISIT: usize = 100_000;
const MAX_DEPTH: usize = 32;
/// The largest file `grep` and `read` look at.
const MAX_FILE: u64 = 4 << 20;
/// A line of `grep` or `sed` output is cut at this many characters.
const MAX_LINE: usize = 400;

/// A refused call (`KA_AS_TOOL_REFUSED`).
fn refuse(msg: impl Into<String>) -> EffectError {
    EffectError::new(Code::AsToolRefused, msg)
}

/// A workspace failure under its own code (`KA_PATH_OUTSIDE` for an escape, `KA_FILE_NOT_FOUND`,
/// `KA_FILE_IO`, …).
fn failed(f: crate::exec::Failure) -> EffectError {
    EffectError::new(f.code, f.reason)
}

fn io_error(what: &str, e: &std::io::Error) -> EffectError {
    EffectError::new(Code::FileIo, format!("{what}: {e}"))
}

fn arg_max(args: &Value, default: u64, cap: u64) -> usize {
    let n = args
        .get("max")
        .and_then(Value::as_u64)
        .unwrap_or(default)
        .clamp(1, cap);
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn sha(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn cut(line: &str) -> String {
    if line.chars().count() > MAX_LINE {
        let mut s: String = line.chars().take(MAX_LINE).collect();
        s.push('…');
        s
    } else {
        line.to_string()
    }
}

fn glob(pattern: Option<&str>) -> Result<Option<globset::GlobMatcher>, EffectError> {
    pattern
        .map(|p| {
            globset::Glob::new(p)
                .map(|g| g.compile_matcher())
                .map_err(|e| refuse(format!("\"{p}\" is not a glob: {e}")))
        })
        .transpose()
}

/// Workspace-relative paths of the entries under `start`, depth first, sorted, never through a
/// symlink, never into `.git` or `.agent`. Calls `visit(rel, is_dir, dir, name)`; a `false`
/// return stops the walk.
fn walk(
    ws: &Workspace,
    start: &str,
    visit: &mut dyn FnMut(&str, bool, &Dir, &str) -> bool,
) -> Result<(), EffectError> {
    let root = ws.open_folder(start).map_err(failed)?;
    let base = start.trim_matches('/').trim_start_matches("./").to_string();
    let base = if base == "." { String::new() } else { base };
    let mut stack: Vec<(Dir, String, usize)> = vec![(root, base, 0)];
    let mut seen = 0usize;
    while let Some((dir, rel, depth)) = stack.pop() {
        let mut names: Vec<(String, bool)> = Vec::new();
        let entries = dir.entries().map_err(|e| io_error(&rel, &e))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_symlink() || name == ".git" || name == ".agent" {
                continue;
            }
            names.push((name, ft.is_dir()));
        }
        names.sort();
        let mut subdirs = Vec::new();
        for (name, is_dir) in names {
            seen += 1;
            if seen > MAX_VISIT {
                return Ok(());
            }
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if !visit(&path, is_dir, &dir, &name) {
                return Ok(());
            }
            if is_dir && depth < MAX_DEPTH {
                if let Ok(sub) = cap_fs_ext::DirExt::open_dir_nofollow(&dir, &name) {
                    subdirs.push((sub, path, depth + 1));
                }
            }
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

fn read_text(dir: &Dir, name: &str) -> Option<String> {
    let meta = dir.symlink_metadata(name).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    let bytes = dir.read(name).ok()?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

fn find(ws: &Workspace, args: &Value) -> Result<Value, EffectError> {
    let path = arg_str(args, "path").unwrap_or(".");
    let name = glob(arg_str(args, "name"))?;
    let kind = arg_str(args, "type");
    if let Some(k) = kind {
        if !matches!(k, "file" | "dir") {
            return Err(refuse(format!("type is \"file\" or \"dir\", not \"{k}\"")));
        }
    }
    let max = arg_max(args, 100, 1000);
    let mut files = Vec::new();
    let mut truncated = false;
    walk(ws, path, &mut |rel, is_dir, _, n| {
        let kind_ok = match kind {
            Some("file") => !is_dir,
            Some("dir") => is_dir,
            _ => true,
        };
        if kind_ok && name.as_ref().is_none_or(|g| g.is_match(n)) {
            if files.len() == max {
                truncated = true;
                return false;
            }
            files.push(Value::String(rel.to_string()));
        }
        true
    })?;
    Ok(json!({ "ok": true, "files": files, "truncated": truncated }))
}

fn grep(ws: &Workspace, args: &Value) -> Result<Value, EffectError> {
    let path = arg_str(args, "path").unwrap_or(".");
    let Some(pattern) = arg_str(args, "pattern") else {
        return Err(refuse("grep needs a pattern"));
    };
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| refuse(format!("\"{pattern}\" is not a pattern: {e}")))?;
    let include = glob(arg_str(args, "include"))?;
    let max = arg_max(args, 100, 1000);
    let mut matches = Vec::new();
    let mut truncated = false;
    let mut scan = |rel: &str, dir: &Dir, name: &str| -> bool {
        if include.as_ref().is_some_and(|g| !g.is_match(name)) {
            return true;
        }
        let Some(text) = read_text(dir, name) else {
            return true;
        };
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                if matches.len() == max {
                    truncated = true;
                    return false;
                }
                matches.push(json!({ "path": rel, "line": i + 1, "text": cut(line) }));
            }
        }
        true
    };
    // A file path greps that file.
    if let Ok(t) = ws.resolve(path) {
        if let Ok(d) = ws.dir_of(&t) {
            if d.symlink_metadata(&t.name).is_ok_and(|m| m.is_file()) {
                scan(&t.rel, &d, &t.name);
                return Ok(json!({ "ok": true, "matches": matches, "truncated": truncated }));
            }
        }
    }
    walk(ws, path, &mut |rel, is_dir, dir, name| {
        is_dir || scan(rel, dir, name)
    })?;
    Ok(json!({ "ok": true, "matches": matches, "truncated": truncated }))
}

fn sed(ws: &Workspace, args: &Value) -> Result<Value, EffectError> {
    let Some(path) = arg_str(args, "path") else {
        return Err(refuse("sed needs a path"));
    };
    let start = args
        .get("start")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let max = arg_max(args, 20, 500);
    let t = ws.resolve(path).map_err(failed)?;
    let d = ws.dir_of(&t).map_err(failed)?;
    let text = read_text(&d, &t.name)
        .ok_or_else(|| refuse(format!("{path} is not a readable text file")))?;
    let total = text.lines().count();
    let lines: Vec<Value> = text
        .lines()
        .enumerate()
        .skip(usize::try_from(start - 1).unwrap_or(usize::MAX))
        .take(max)
        .map(|(i, l)| json!({ "line": i + 1, "text": cut(l) }))
        .collect();
    Ok(json!({ "ok": true, "lines": lines, "total": total }))
}

/// `file://workspace`, with the run's backup folder for `write` and `patch`.
#[derive(Debug)]
pub struct FileTool<'w> {
    pub ws: &'w Workspace,
    /// `.agent/as-backups/<run>` (workspace-relative folder under `.agent`).
    pub run: String,
    pub saved: u64,
}

impl FileTool<'_> {
    fn backup(&mut self, bytes: &[u8]) -> Result<String, EffectError> {
        self.saved += 1;
        let name = format!("as-backups/{}/{}", self.run, self.saved);
        self.ws
            .save_state(&name, bytes)
            .map_err(|e| io_error(&format!(".agent/{name}"), &e))?;
        Ok(format!(".agent/{name}"))
    }

    fn current(&self, path: &str) -> Result<Option<Vec<u8>>, EffectError> {
        let t = self.ws.resolve(path).map_err(failed)?;
        match self.ws.read(&t) {
            Ok(b) => Ok(Some(b)),
            Err(f) if f.code == Code::FileNotFound => Ok(None),
            Err(f) => Err(failed(f)),
        }
    }

    fn put(&mut self, path: &str, after: &[u8]) -> Result<Value, EffectError> {
        let t = self.ws.writable(path).map_err(failed)?;
        let before = self.current(path)?;
        let backup = before.as_deref().map(|b| self.backup(b)).transpose()?;
        self.ws
            .write(&t, after, before.as_deref())
            .map_err(failed)?;
        Ok(json!({
            "path": t.rel,
            "before": before.as_deref().map(sha),
            "after": sha(after),
            "backup": backup,
        }))
    }

    fn undo_one(&mut self, effect: &Value) -> Result<String, EffectError> {
        let path = arg_str(effect, "path").ok_or_else(|| refuse("an effect record has a path"))?;
        let after =
            arg_str(effect, "after").ok_or_else(|| refuse("an effect record has an after hash"))?;
        let t = self.ws.writable(path).map_err(failed)?;
        let now = self.current(path)?;
        if now.as_deref().map(sha).as_deref() != Some(after) {
            return Err(refuse(format!(
                "{path} changed since the effect; not undone"
            )));
        }
        match arg_str(effect, "backup") {
            Some(backup) => {
                let rel = backup
                    .strip_prefix(".agent/")
                    .filter(|r| r.starts_with("as-backups/") && !r.contains(".."))
                    .ok_or_else(|| refuse(format!("{backup} is not a backup of a run")))?;
                let agent = self.ws.agent().map_err(|e| refuse(e.to_string()))?;
                let bytes = agent
                    .read(rel)
                    .map_err(|e| refuse(format!("{backup}: {e}")))?;
                self.ws.write(&t, &bytes, now.as_deref()).map_err(failed)?;
            }
            None => self.ws.remove_file(&t).map_err(failed)?,
        }
        Ok(t.rel.clone())
    }

    /// One method of `file://workspace`.
    ///
    /// # Errors
    /// A bad argument, a path outside the workspace, an edit that does not apply.
    pub fn call(&mut self, method: &str, args: &Value) -> Result<Value, EffectError> {
        let path = || arg_str(args, "path").ok_or_else(|| refuse(format!("{method} needs a path")));
        match method {
            "read" => {
                let p = path()?;
                let bytes = self.current(p)?.ok_or_else(|| {
                    EffectError::new(Code::FileNotFound, format!("{p} does not exist"))
                })?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| refuse(format!("{p} is not UTF-8 text")))?;
                Ok(json!({ "path": p, "content": text }))
            }
            "list" => {
                let p = arg_str(args, "path").unwrap_or(".");
                let dir = self.ws.open_folder(p).map_err(failed)?;
                let mut entries: Vec<(String, &str)> = Vec::new();
                for e in dir
                    .entries()
                    .map_err(|e| refuse(format!("{p}: {e}")))?
                    .flatten()
                {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name == ".git" || name == ".agent" {
                        continue;
                    }
                    let kind = match e.file_type() {
                        Ok(t) if t.is_symlink() => "symlink",
                        Ok(t) if t.is_dir() => "dir",
                        _ => "file",
                    };
                    entries.push((name, kind));
                }
                entries.sort();
                let list: Vec<Value> = entries
                    .into_iter()
                    .map(|(n, k)| json!({ "name": n, "type": k }))
                    .collect();
                Ok(json!({ "path": p, "entries": list }))
            }
            "write" => {
                let p = path()?;
                let content =
                    arg_str(args, "content").ok_or_else(|| refuse("write needs content"))?;
                self.put(p, content.as_bytes())
            }
            "patch" => {
                let p = path()?;
                // Asked before anything is read: a refused path is refused whatever it holds.
                self.ws.writable(p).map_err(failed)?;
                let search = arg_str(args, "search").ok_or_else(|| refuse("patch needs search"))?;
                let replace = arg_str(args, "replace").unwrap_or("");
                let bytes = self.current(p)?.ok_or_else(|| {
                    EffectError::new(Code::FileNotFound, format!("{p} does not exist"))
                })?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| refuse(format!("{p} is not UTF-8 text")))?;
                let edited =
                    keyless_core::textfile::apply_edit(&text, search, replace).map_err(|m| {
                        EffectError::new(Code::FindNotUnique, format!("{p}: {}", m.reason()))
                    })?;
                self.put(p, edited.as_bytes())
            }
            "undo" => {
                let list = match args {
                    Value::Array(a) => a.clone(),
                    Value::Object(_) if args.get("path").is_some() => vec![args.clone()],
                    _ => return Err(refuse("undo takes a list of effect records")),
                };
                let mut restored = Vec::new();
                for e in list.iter().rev() {
                    restored.push(Value::String(self.undo_one(e)?));
                }
                Ok(json!({ "ok": true, "restored": restored }))
            }
            other => Err(refuse(format!(
                "file://workspace has no method \"{other}\""
            ))),
        }
    }
}

/// What keyless.json lets programs reach beyond the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowed<'a> {
    /// `Programs.Env`: the variables `env://process` may read besides the harmless ones.
    pub env: Option<&'a [String]>,
    /// `Programs.Tools`: the programs `sh://NAME` may run.
    pub programs: &'a [String],
    /// `Programs.Http`: the origins `http(s)://` tools may reach.
    pub http: &'a [String],
    /// `Mcp.Servers`, for `mcp://` tools.
    pub mcp: Option<&'a crate::mcp::Pool>,
    /// The run the servers are kept for.
    pub scope: &'a str,
}

/// How long an `mcp://` call may take unless its arguments say `timeout` (milliseconds).
const MCP_TIMEOUT_MS: u64 = 120_000;

/// `T.call({...})` of an `mcp://SERVER/TOOL` import: the object is the tool's arguments (an
/// optional `timeout` in milliseconds is keyless's and is not passed on).
fn mcp_call(allowed: &Allowed<'_>, rest: &str, args: &Value) -> Result<Value, EffectError> {
    let (server, tool) = rest
        .split_once('/')
        .ok_or_else(|| refuse(format!("mcp://{rest}: write mcp://SERVER/TOOL")))?;
    let pool = allowed.mcp.ok_or_else(|| {
        EffectError::new(
            Code::McpNotConfigured,
            format!("mcp://{rest}: keyless.json declares no MCP server (Mcp.Servers)"),
        )
    })?;
    let mut arguments = match args {
        Value::Null => serde_json::Map::new(),
        Value::Object(m) => m.clone(),
        other => {
            return Err(refuse(format!(
                "mcp://{rest}: the arguments are one object, not {other}"
            )))
        }
    };
    let timeout = arguments
        .remove("timeout")
        .and_then(|v| v.as_u64())
        .unwrap_or(MCP_TIMEOUT_MS)
        .clamp(1, 600_000);
    let out = pool
        .call(
            allowed.scope,
            server,
            tool,
            Some(arguments),
            std::time::Duration::from_millis(timeout),
            &mut crate::mcp::Nobody,
        )
        .map_err(|e| EffectError::new(e.code(), e.to_string()))?;
    if out.is_error {
        return Err(EffectError::new(
            Code::McpToolFailed,
            format!(
                "mcp://{rest}: {}",
                keyless_core::text::truncate_chars(&out.text, 2000)
            ),
        ));
    }
    Ok(out
        .structured
        .unwrap_or_else(|| serde_json::from_str(&out.text).unwrap_or(Value::String(out.text))))
}

/// The most characters of an allowed program's output returned.
const MAX_PROGRAM_OUTPUT: usize = 16_000;

/// `Tool.run({ args, timeout })` of a program keyless.json allows: its arguments are literal
/// words (never read by a shell), it runs in the sandbox like runcommand (the workspace, no
/// network, `.git`, `.agent` and keyless.json read-only), the policy's Denied tier still holds,
/// and its output is capped. → `{ exit_code, output, timed_out }`.
fn program_run(
    ws: &Workspace,
    program: &str,
    args: &Value,
    pass_env: &[String],
) -> Result<Value, EffectError> {
    let words: Vec<String> = match args.get("args") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(_) | Value::Bool(_) => Ok(v.to_string()),
                other => Err(refuse(format!("args are strings, not {other}"))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(refuse(format!("args is a list of strings, not {other}"))),
    };
    let line = std::iter::once(program.to_string())
        .chain(words)
        .map(|w| keyless_core::text::shell_word(&w))
        .collect::<Vec<_>>()
        .join(" ");
    let verdict = keyless_core::policy::decide(&line, keyless_core::Mode::Auto, &[]);
    if verdict.decision == keyless_core::policy::Decision::Deny {
        return Err(refuse(format!(
            "{line}: {} ({})",
            verdict.reason, verdict.tier
        )));
    }
    let timeout = args
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(60)
        .clamp(1, 600);
    let spec = crate::exec::sandbox::Spec {
        pass_env: pass_env.to_vec(),
        ..crate::exec::sandbox::spec_for(ws.root(), false, false)
    };
    let out = crate::exec::shell::run(
        &line,
        Some(&spec),
        ws.root(),
        std::time::Duration::from_secs(timeout),
        MAX_PROGRAM_OUTPUT,
        |_| true,
    )
    .map_err(|e| EffectError::new(Code::AsEffect, format!("{program}: cannot start: {e}")))?;
    if !out.repairs.is_empty() {
        return Err(EffectError::new(
            Code::GitProtected,
            format!(
                "{program}: {}",
                crate::exec::gitguard::describe(&out.repairs)
            ),
        ));
    }
    Ok(json!({ "exit_code": out.exit_code, "output": out.output, "timed_out": out.timed_out }))
}

/// A tool call of a program.
///
/// # Errors
/// A refused tool or argument, or the tool's failure.
pub fn call(
    ws: &Workspace,
    files: &mut FileTool<'_>,
    allowed: &Allowed<'_>,
    uri: &str,
    method: &str,
    args: &Value,
) -> Result<Value, EffectError> {
    let env_allow = allowed.env;
    match uri.split_once("://") {
        Some(("sh", program)) => match (program.trim_end_matches('/'), method) {
            ("find", "run") => find(ws, args),
            ("grep", "run") => grep(ws, args),
            ("sed", "run") => sed(ws, args),
            (p, "run") if allowed.programs.iter().any(|a| a == p) => {
                program_run(ws, p, args, allowed.env.unwrap_or(&[]))
            }
            (p, _) => Err(refuse(format!(
                "sh://{p}: find, grep and sed run without a shell; any other program only when keyless.json's Programs.Tools names it"
            ))),
        },
        Some(("file", "workspace")) => files.call(method, args),
        Some(("env", "process")) if method == "get" => {
            let name = arg_str(args, "name").ok_or_else(|| refuse("get needs a name"))?;
            let value = std::env::var(name).ok();
            keyless_core::secrets::may_read(name, value.as_deref(), env_allow).map_err(refuse)?;
            Ok(value.map_or(Value::Null, Value::String))
        }
        Some(("http" | "https", _)) => super::http::call(uri, method, args, allowed.http),
        Some(("mcp", rest)) if matches!(method, "call" | "run") => mcp_call(allowed, rest, args),
        _ => Err(refuse(format!("{uri} ({method}): this tool is not in this build yet; nothing ran"))),
    }
}
