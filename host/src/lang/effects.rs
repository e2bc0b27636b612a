//! What `.as` programs do to the world when `keyless-host as run` runs them: the scripted model
//! (`--mock`), file and agent imports, and `file://….jsonl` memory, all confined to the workspace
//! through its directory handle (the executor's resolver: no `..` out, no symlink out).
//!
//! Memory is `file://….jsonl` (flock'd appends) or `sqlite://….db#namespace` (a fixed schema, no
//! SQL from programs). The tools are in `tools`. Real model providers, HTTP and MCP come
//! with the next part of the work; until then a program that calls them fails with `KA_AS_MODEL`
//! or `KA_AS_EFFECT` and says so.

use crate::exec::workspace::Workspace;
use keyless_core::lang::interp::{EffectError, Effects, ModelCall};
use keyless_core::Code;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::io::Write;

/// What follows a run's trace events as they complete.
pub type Observer<'w> = Box<dyn FnMut(&keyless_core::lang::interp::TraceEvent) + Send + 'w>;

/// The effects of one run.
pub struct HostEffects<'w> {
    pub ws: &'w Workspace,
    /// The scripted model's answers, in order.
    pub mock: Option<VecDeque<String>>,
    /// Memory ids made in this run (with the process id and the clock they are unique).
    pub counter: u64,
    /// When the run started: the trace's clock.
    pub started: std::time::Instant,
    /// How long one model answer may take.
    pub model_timeout: std::time::Duration,
    /// The run's name, for its backups (`.agent/as-backups/RUN/`).
    pub run: String,
    /// Backups written so far.
    pub saved: u64,
    /// Called with each trace event as it completes (the API streams them).
    pub observer: Option<Observer<'w>>,
    /// keyless.json's `Programs.Env`: the variables `env://process` may read besides the
    /// harmless ones (`keyless_core::secrets`).
    pub env_allow: Option<Vec<String>>,
    /// keyless.json's `Programs.Tools`: the programs `sh://NAME` may run besides find/grep/sed.
    pub program_tools: Vec<String>,
    /// keyless.json's `Programs.Http`: the origins `http(s)://` tools may reach.
    pub program_http: Vec<String>,
    /// keyless.json's `Mcp.Servers`, started on the run's first `mcp://` call and stopped with it.
    pub mcp: Option<std::sync::Arc<crate::mcp::Pool>>,
    /// The SQLite memories opened so far, by workspace-relative path.
    dbs: Vec<(String, rusqlite::Connection)>,
    /// `keyless://chat`: the serve to ask (`--host`; default: the one `serve.json` names), the
    /// program's file (shown in the overlay), and the connection once the first generate made it.
    pub chat_host: Option<String>,
    pub file: String,
    chat: Option<crate::lang::chat::ChatClient>,
    /// Who answered the last generate (the trace's `via`).
    via: Option<String>,
}

impl<'w> HostEffects<'w> {
    /// The effects of a new run.
    #[must_use]
    pub fn new(
        ws: &'w Workspace,
        mock: Option<VecDeque<String>>,
        model_timeout: std::time::Duration,
    ) -> Self {
        HostEffects {
            ws,
            mock,
            counter: 0,
            started: std::time::Instant::now(),
            model_timeout,
            run: crate::lang::runs::new_id(0),
            saved: 0,
            observer: None,
            env_allow: None,
            program_tools: Vec::new(),
            program_http: Vec::new(),
            mcp: None,
            dbs: Vec::new(),
            chat_host: None,
            file: String::new(),
            chat: None,
            via: None,
        }
        .configured()
    }

    /// keyless.json's `Programs.*` settings for this workspace (user file, and the workspace's
    /// own where approved).
    fn configured(mut self) -> Self {
        if let Ok(l) = crate::config::load_config(self.ws.root()) {
            self.env_allow = l.cfg.program_env;
            self.program_tools = l.cfg.program_tools;
            self.program_http = l.cfg.program_http;
            if !l.cfg.mcp_servers.is_empty() {
                self.mcp = crate::mcp::Pool::new(l.cfg.mcp_servers, self.ws.root().to_path_buf())
                    .ok()
                    .map(std::sync::Arc::new);
            }
        }
        self
    }
}

impl std::fmt::Debug for HostEffects<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostEffects")
            .field("run", &self.run)
            .field("mock", &self.mock.as_ref().map(VecDeque::len))
            .finish_non_exhaustive()
    }
}

/// The largest record a memory takes, and the most a memory's file (or a query's records) may
/// hold: past them a program fails with `KA_AS_LIMIT` instead of filling the disk or the host's
/// memory.
const MAX_RECORD_BYTES: usize = 1 << 20;
const MAX_MEMORY_BYTES: u64 = 64 << 20;

fn too_large(what: String) -> EffectError {
    EffectError::new(Code::AsLimit, what)
}

/// A record, as stored, within [`MAX_RECORD_BYTES`].
fn record_text(rel: &str, record: &Value) -> Result<String, EffectError> {
    let text = record.to_string();
    if text.len() > MAX_RECORD_BYTES {
        return Err(too_large(format!(
            "{rel}: a memory record of {} KiB; a record holds at most {} KiB",
            text.len() >> 10,
            MAX_RECORD_BYTES >> 10
        )));
    }
    Ok(text)
}

/// A memory that cannot be read or written (`KA_AS_MEMORY`).
fn effect(msg: impl Into<String>) -> EffectError {
    EffectError::new(Code::AsMemory, msg)
}

/// A workspace failure under its own code (`KA_PATH_OUTSIDE`, `KA_FILE_NOT_FOUND`, …).
fn failed(f: crate::exec::Failure) -> EffectError {
    EffectError::new(f.code, f.reason)
}

fn outside(msg: String) -> EffectError {
    EffectError::new(Code::PathOutside, msg)
}

/// `path` (as written in `from`'s import) as a workspace-relative path: joined to `from`'s
/// folder, `.` and `..` resolved; leaving the workspace is refused.
///
/// # Errors
/// A path that climbs out of the workspace, or is absolute.
pub fn relative_to(from: &str, path: &str) -> Result<String, EffectError> {
    if path.starts_with('/') || path.contains('\\') {
        return Err(outside(format!("\"{path}\" must be a relative path")));
    }
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(outside(format!("\"{path}\" leaves the workspace")));
                }
            }
            s => parts.push(s),
        }
    }
    Ok(parts.join("/"))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl HostEffects<'_> {
    fn read(&self, rel: &str) -> Result<String, EffectError> {
        let t = self.ws.resolve(rel).map_err(failed)?;
        let bytes = self.ws.read(&t).map_err(failed)?;
        String::from_utf8(bytes)
            .map_err(|_| EffectError::new(Code::FileIo, format!("{rel} is not UTF-8 text")))
    }

    /// A SQLite memory's database, inside the workspace: its folder is opened through the
    /// workspace's handle (no symlink on the way), the kernel names that folder's real path, and
    /// SQLite opens the file there with `SQLITE_OPEN_NOFOLLOW`, which refuses any symlink in the
    /// path (so a folder swapped for a symlink meanwhile, or a database that is a symlink, is never
    /// opened).
    fn sqlite(&self, rel: &str) -> Result<rusqlite::Connection, EffectError> {
        use std::os::fd::AsRawFd;
        // SQLite writes the database and its -wal, -shm and -journal files beside it: each name
        // must pass the one check.
        for suffix in ["-wal", "-shm", "-journal"] {
            self.ws
                .writable(&format!("{rel}{suffix}"))
                .map_err(failed)?;
        }
        let t = self.ws.writable(rel).map_err(failed)?;
        let dir = self.ws.dir_for_write(&t, true).map_err(failed)?;
        let dir = dir.into_std_file();
        let real = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))
            .map_err(|e| effect(format!("{rel}: cannot name its folder: {e}")))?;
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_CREATE
            | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(real.join(&t.name), flags)
            .map_err(|e| effect(format!("{rel}: {e}")))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .and_then(|()| {
                conn.execute_batch(
                    "PRAGMA journal_mode = WAL;
                     CREATE TABLE IF NOT EXISTS memory (
                        id TEXT PRIMARY KEY, namespace TEXT NOT NULL, kind TEXT,
                        record TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
                     CREATE INDEX IF NOT EXISTS memory_ns ON memory (namespace, kind);",
                )
            })
            .map_err(|e| effect(format!("{rel}: {e}")))?;
        Ok(conn)
    }

    fn record(&mut self, args: &Value) -> Result<Value, EffectError> {
        let Value::Object(fields) = args else {
            return Err(effect("add takes one object"));
        };
        self.counter += 1;
        let stamp = now();
        let mut record = Map::new();
        record.insert(
            "id".into(),
            Value::String(format!("m-{stamp}-{}-{}", std::process::id(), self.counter)),
        );
        for (k, v) in fields {
            if !matches!(k.as_str(), "id" | "created_at" | "updated_at") {
                record.insert(k.clone(), v.clone());
            }
        }
        record.insert("created_at".into(), Value::from(stamp));
        record.insert("updated_at".into(), Value::from(stamp));
        Ok(Value::Object(record))
    }

    fn sqlite_memory(
        &mut self,
        from: &str,
        rest: &str,
        method: &str,
        args: &Value,
    ) -> Result<Value, EffectError> {
        let (path, namespace) = rest.split_once('#').unwrap_or((rest, "default"));
        let rel = relative_to(from, path)?;
        // One connection per database for the whole run, opened (and checked) once. Parallel
        // runs can find the database locked while one of them sets it up or switches it to WAL,
        // beyond the busy timeout's reach: such a call is tried again (nothing was written).
        let mut tries = 0;
        loop {
            let attempt = match self.dbs.iter().position(|(r, _)| *r == rel) {
                Some(i) => Ok(self.dbs.swap_remove(i).1),
                None => self.sqlite(&rel),
            }
            .and_then(|conn| {
                let out = self.sqlite_call(&conn, &rel, namespace, method, args);
                if out.is_ok() {
                    self.dbs.push((rel.clone(), conn));
                }
                out
            });
            match attempt {
                Err(e) if e.message.contains("database is locked") && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    fn sqlite_call(
        &mut self,
        conn: &rusqlite::Connection,
        rel: &str,
        namespace: &str,
        method: &str,
        args: &Value,
    ) -> Result<Value, EffectError> {
        match method {
            "add" => {
                let rec = self.record(args)?;
                let text = record_text(rel, &rec)?;
                conn.execute(
                    "INSERT INTO memory (id, namespace, kind, record, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    rusqlite::params![
                        rec["id"].as_str(),
                        namespace,
                        rec.get("kind").and_then(Value::as_str),
                        text,
                        rec["created_at"].as_u64().and_then(|n| i64::try_from(n).ok()),
                    ],
                )
                .map_err(|e| effect(format!("{rel}: {e}")))?;
                Ok(rec)
            }
            "query" => {
                let mut stmt = conn
                    .prepare("SELECT record FROM memory WHERE namespace = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY rowid DESC")
                    .map_err(|e| effect(format!("{rel}: {e}")))?;
                let kind = args.get("kind").and_then(Value::as_str);
                let rows = stmt
                    .query_map(rusqlite::params![namespace, kind], |r| {
                        r.get::<_, String>(0)
                    })
                    .map_err(|e| effect(format!("{rel}: {e}")))?;
                let mut lines: Vec<String> = Vec::new();
                let mut bytes = 0u64;
                for row in rows.filter_map(Result::ok) {
                    bytes += row.len() as u64;
                    if bytes > MAX_MEMORY_BYTES {
                        return Err(too_large(format!(
                            "{rel}: the namespace holds more than {} MiB of records; query with a kind, or start a new namespace",
                            MAX_MEMORY_BYTES >> 20
                        )));
                    }
                    lines.push(row);
                }
                Ok(filter_records(lines.iter().map(String::as_str), args))
            }
            other => Err(effect(format!("memory has no method \"{other}\""))),
        }
    }

    fn memory_add(&mut self, rel: &str, args: &Value) -> Result<Value, EffectError> {
        let t = self.ws.writable(rel).map_err(failed)?;
        let record = self.record(args)?;
        let mut line = record_text(rel, &record)?;
        line.push('\n');
        let size = self
            .ws
            .dir_of(&t)
            .ok()
            .and_then(|d| d.symlink_metadata(&t.name).ok())
            .map_or(0, |m| m.len());
        if size + line.len() as u64 > MAX_MEMORY_BYTES {
            return Err(too_large(format!(
                "{rel}: the memory holds {} MiB, and keyless reads at most {} MiB of one; start a new memory file",
                size >> 20,
                MAX_MEMORY_BYTES >> 20
            )));
        }
        let file = self
            .ws
            .append(&t)
            .map_err(|f| effect(format!("{rel}: {}", f.reason)))?;
        // One writer at a time across processes: parallel runs lose nothing.
        let mut locked = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| effect(format!("{rel}: cannot lock: {e}")))?;
        locked
            .write_all(line.as_bytes())
            .and_then(|()| locked.sync_data())
            .map_err(|e| effect(format!("{rel}: {e}")))?;
        Ok(record)
    }

    fn memory_query(&self, rel: &str, args: &Value) -> Result<Value, EffectError> {
        let t = self.ws.resolve(rel).map_err(failed)?;
        let text = match self.ws.read_at_most(&t, MAX_MEMORY_BYTES) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(None) => {
                return Err(too_large(format!(
                    "{rel}: the memory holds more than the {} MiB keyless reads of one; start a new memory file",
                    MAX_MEMORY_BYTES >> 20
                )))
            }
            Err(f) if f.code == Code::FileNotFound => String::new(),
            Err(f) => return Err(failed(f)),
        };
        // Newest first.
        Ok(filter_records(text.lines().rev(), args))
    }
}

/// The records (JSON lines, newest first) a query selects: `kind` exact, `text` a
/// case-insensitive substring of the record, `where` exact fields, at most `limit`.
fn filter_records<'a>(lines: impl Iterator<Item = &'a str>, args: &Value) -> Value {
    let want_text = args
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_lowercase);
    let want_kind = args.get("kind").and_then(Value::as_str);
    let want_where = args.get("where").and_then(Value::as_object);
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut out: Vec<Value> = Vec::new();
    for line in lines {
        if out.len() >= limit {
            break;
        }
        let Ok(rec) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if want_kind.is_some_and(|k| rec.get("kind").and_then(Value::as_str) != Some(k)) {
            continue;
        }
        if let Some(t) = &want_text {
            if !rec.to_string().to_lowercase().contains(t.as_str()) {
                continue;
            }
        }
        if let Some(w) = want_where {
            if !w.iter().all(|(k, v)| rec.get(k) == Some(v)) {
                continue;
            }
        }
        out.push(rec);
    }
    Value::Array(out)
}

impl Effects for HostEffects<'_> {
    fn generate(&mut self, call: &ModelCall) -> Result<String, EffectError> {
        match &mut self.mock {
            Some(answers) => answers.pop_front().ok_or_else(|| {
                EffectError::new(
                    Code::AsMockExhausted,
                    format!(
                        "the scripted model has no answer left for a call to {}",
                        call.model
                    ),
                )
            }),
            None if keyless_core::lang::chat::is_chat(&call.model) => {
                if self.chat.is_none() {
                    self.chat = Some(crate::lang::chat::ChatClient::connect(
                        self.chat_host.as_deref(),
                    )?);
                }
                let Some(chat) = self.chat.as_mut() else {
                    return Err(EffectError::new(Code::AsChatUnavailable, "no chat"));
                };
                let out = chat.generate(call, &self.run, &self.file, self.model_timeout);
                self.via = chat.site.as_ref().map(|s| format!("the {s} tab"));
                out
            }
            None => crate::lang::models::generate(
                call,
                &crate::lang::models::ProcessEnv,
                self.model_timeout,
            ),
        }
    }

    fn answered_by(&mut self) -> Option<String> {
        self.via.take()
    }

    fn tool(&mut self, uri: &str, method: &str, args: &Value) -> Result<Value, EffectError> {
        let mut files = crate::lang::tools::FileTool {
            ws: self.ws,
            run: self.run.clone(),
            saved: self.saved,
        };
        let allowed = crate::lang::tools::Allowed {
            env: self.env_allow.as_deref(),
            programs: &self.program_tools,
            http: &self.program_http,
            mcp: self.mcp.as_deref(),
            scope: &self.run,
        };
        let out = crate::lang::tools::call(self.ws, &mut files, &allowed, uri, method, args);
        self.saved = files.saved;
        out
    }

    fn memory(
        &mut self,
        from: &str,
        uri: &str,
        method: &str,
        args: &Value,
    ) -> Result<Value, EffectError> {
        if let Some(rest) = uri.strip_prefix("sqlite://") {
            return self.sqlite_memory(from, rest, method, args);
        }
        let Some(path) = uri.strip_prefix("file://") else {
            return Err(effect(format!("{uri} is not a memory URI")));
        };
        let rel = relative_to(from, path)?;
        match method {
            "add" => self.memory_add(&rel, args),
            "query" => self.memory_query(&rel, args),
            other => Err(effect(format!("memory has no method \"{other}\""))),
        }
    }

    fn read_file(&mut self, from: &str, path: &str) -> Result<String, EffectError> {
        self.read(&relative_to(from, path)?)
    }

    fn load_agent(&mut self, from: &str, path: &str) -> Result<(String, String), EffectError> {
        let rel = relative_to(from, path)?;
        let text = self.read(&rel)?;
        Ok((rel, text))
    }

    fn now_ms(&mut self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn observe(&mut self, event: &keyless_core::lang::interp::TraceEvent) {
        if let Some(o) = self.observer.as_mut() {
            o(event);
        }
    }

    fn debug(&mut self, prompt: &str) {
        eprintln!("--- generate prompt ---\n{prompt}--- end of prompt ---");
    }
}
