//! The MCP client: keyless.json's `Mcp.Servers`, started on demand and kept per session (stdio
//! children and Streamable HTTP endpoints), on the official Rust SDK (rmcp). Pieces (`@@mcp`),
//! `.as` programs (`mcp://server/tool`), `keyless-host mcp list` and `doctor` all go through one
//! [`Pool`]. Which tool a movement may call and how risky it is are core's decisions
//! (`keyless_core::mcp`, `piece::tools`).
//!
//! The servers are programs and endpoints the user named in a trusted keyless.json (`Mcp.Servers`
//! is a trust key: a workspace file the model wrote cannot add one). A tool's answer is hostile
//! input like any command's output: it is capped and goes back to the model as text.

mod client;
mod stdio;
use client::Questions;
pub use client::{CallUser, Client, Nobody, Notice};
use keyless_core::diag::Code;
use keyless_core::mcp::{McpTool, ServerConfig};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
pub use stdio::describe;
use stdio::*;

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many sessions keep their servers running; the oldest session's are stopped beyond it.
const SESSIONS_KEPT: usize = 8;

/// An MCP failure, with its code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("MCP server \"{0}\" is not declared in keyless.json (Mcp.Servers)")]
    NotConfigured(String),
    #[error("MCP server \"{server}\" is unavailable: {why}")]
    Unavailable { server: String, why: String },
    #[error("MCP server \"{server}\" has no tool \"{tool}\" (its tools: {known})")]
    UnknownTool {
        server: String,
        tool: String,
        known: String,
    },
    #[error("MCP tool {server}.{tool} did not answer within {seconds}s")]
    Timeout {
        server: String,
        tool: String,
        seconds: u64,
    },
    #[error("cancelled by the user")]
    Cancelled,
    /// The server refused the token for this call (expired beyond refresh, or a scope it does
    /// not grant): `challenge` is its `WWW-Authenticate`, for logging in again with what it asks.
    #[error("MCP server \"{server}\" needs you to log in (again) for this: run `keyless-host mcp login {server}`")]
    NeedsLogin { server: String, challenge: String },
}

impl McpError {
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::NotConfigured(_) => Code::McpNotConfigured,
            Self::Unavailable { .. } => Code::McpUnavailable,
            Self::UnknownTool { .. } => Code::McpUnknownTool,
            Self::Timeout { .. } => Code::Timeout,
            Self::Cancelled => Code::Cancelled,
            Self::NeedsLogin { .. } => Code::McpUnavailable,
        }
    }
}

/// A tool call's answer: its text (every text block, structured content as JSON, other blocks
/// named), whether the tool said it failed, and how long the call took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutput {
    pub text: String,
    pub is_error: bool,
    pub structured: Option<serde_json::Value>,
    pub duration: Duration,
}

/// What `mcp list` and `doctor` show of a server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio: COMMAND ARGS…` or `http: URL`.
    pub transport: String,
    pub trust_read_only: bool,
    /// `running` or the reason it is not.
    pub state: String,
    pub start_ms: Option<u64>,
    /// The MCP revision the server and keyless agreed on (`2026-07-28`, stateless, found with
    /// `server/discover`; or `2025-11-25` and older, opened with `initialize`); none when it did
    /// not start.
    pub revision: Option<String>,
    pub tools: Vec<McpTool>,
}

struct Live {
    /// Where the server's elicitations go: the call waiting on it (see [`Pool::call`]).
    questions: Questions,
    service: RunningService<RoleClient, Client>,
    tools: Mutex<ServerTools>,
    /// The revision negotiated at the start (see [`ServerStatus::revision`]).
    revision: String,
    /// Set when the server says its tools changed (`notifications/tools/list_changed`): they are
    /// listed again before the next use.
    stale: Arc<std::sync::atomic::AtomicBool>,
}

/// A server's tools as keyless offers them, and those that declare an `outputSchema` (their
/// `structuredContent` is their result).
#[derive(Debug, Default)]
struct ServerTools {
    tools: Vec<McpTool>,
    structured: std::collections::HashSet<String>,
}

impl ServerTools {
    fn of(server: &str, cfg: &ServerConfig, listed: Vec<rmcp::model::Tool>) -> Self {
        let structured = listed
            .iter()
            .filter(|t| t.output_schema.is_some())
            .map(|t| t.name.to_string())
            .collect();
        let tools = listed
            .into_iter()
            .filter(|t| keyless_core::mcp::valid_tool(&t.name))
            .map(|t| McpTool {
                server: server.to_string(),
                name: t.name.to_string(),
                description: t.description.as_deref().unwrap_or("").to_string(),
                input_schema: serde_json::to_string(&*t.input_schema).unwrap_or_default(),
                read_only: cfg.trust_read_only
                    && t.annotations
                        .as_ref()
                        .and_then(|a| a.read_only_hint)
                        .unwrap_or(false),
            })
            .collect();
        Self { tools, structured }
    }
}

/// How many times a tool call is made again for a server's input-required results before it
/// fails (the bound the official SDKs use).
const MRTR_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The running servers, by (scope, server): a scope is a session (or one `.as` run, or one CLI
/// command).
pub struct Pool {
    /// Taken only by `Drop`.
    rt: Option<tokio::runtime::Runtime>,
    servers: BTreeMap<String, ServerConfig>,
    /// The workspace: what the model can write, so never where a server's program comes from.
    workspace: PathBuf,
    live: Mutex<HashMap<(String, String), Arc<Live>>>,
    scopes: Mutex<Vec<String>>,
    /// Whether a user answers the servers' elicitations ([`Pool::answering`]).
    answers: bool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Keeps the tail of a server's stderr, for the reason a start failed.
fn keep_tail(buf: &Mutex<String>, chunk: &str) {
    if let Ok(mut b) = buf.lock() {
        b.push_str(chunk);
        if b.len() > 4096 {
            let cut = b.len() - 4096;
            let cut = (cut..b.len()).find(|i| b.is_char_boundary(*i)).unwrap_or(0);
            b.drain(..cut);
        }
    }
}

impl Pool {
    /// The workspace whose model the pool's servers are kept from.
    #[must_use]
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// A pool for the servers of `servers`, for the workspace at `workspace`.
    ///
    /// # Errors
    /// When the runtime cannot be built.
    pub fn new(
        servers: BTreeMap<String, ServerConfig>,
        workspace: PathBuf,
    ) -> std::io::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("keyless-mcp")
            .enable_all()
            .build()?;
        Ok(Self {
            rt: Some(rt),
            servers,
            workspace,
            live: Mutex::new(HashMap::new()),
            scopes: Mutex::new(Vec::new()),
            answers: false,
        })
    }

    /// The pool of a front end where a user answers forms (a terminal, `--answer`): its servers
    /// are told they may ask (elicitation), and their questions go to the call's [`CallUser`].
    #[must_use]
    pub fn answering(mut self, answers: bool) -> Self {
        self.answers = answers;
        self
    }

    /// The declared servers' names.
    #[must_use]
    pub fn declared(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    /// Whether any server is declared.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Runs `fut` on the pool's runtime and waits for it from any thread (a session's blocking
    /// worker, the CLI), giving up at `deadline` or when `cancel` says so (the task is then
    /// dropped, which ends the request).
    fn wait<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
        deadline: Instant,
        mut cancel: impl FnMut() -> bool,
    ) -> Result<T, Waited> {
        self.wait_with(fut, deadline, move |_| cancel())
    }

    /// [`Pool::wait`], where `tick` (asked every 25 ms) may also move the deadline (the time a
    /// user takes to answer a server's form does not count against the call).
    fn wait_with<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
        deadline: Instant,
        mut tick: impl FnMut(&mut Instant) -> bool,
    ) -> Result<T, Waited> {
        let mut deadline = deadline;
        let (tx, rx) = mpsc::channel();
        let Some(rt) = &self.rt else {
            return Err(Waited::Timeout);
        };
        let task = rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        loop {
            let now = Instant::now();
            if now >= deadline {
                task.abort();
                return Err(Waited::Timeout);
            }
            match rx.recv_timeout((deadline - now).min(Duration::from_millis(25))) {
                Ok(v) => return Ok(v),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if tick(&mut deadline) {
                        task.abort();
                        return Err(Waited::Cancelled);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Waited::Timeout),
            }
        }
    }

    /// How keyless.json declares `server`.
    ///
    /// # Errors
    /// KA_MCP_NOT_CONFIGURED when it does not.
    pub fn config(&self, server: &str) -> Result<&ServerConfig, McpError> {
        self.servers
            .get(server)
            .ok_or_else(|| McpError::NotConfigured(server.to_string()))
    }

    /// The server `server` for `scope`, started (and its tools listed) when it is not running.
    fn live(&self, scope: &str, server: &str) -> Result<Arc<Live>, McpError> {
        let key = (scope.to_string(), server.to_string());
        if let Some(l) = self.live.lock().ok().and_then(|m| m.get(&key).cloned()) {
            if !l.service.is_closed() {
                if l.stale.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    self.relist(server, &l);
                }
                return Ok(l);
            }
        }
        let cfg = self.config(server)?.clone();
        let unavailable = |why: String| McpError::Unavailable {
            server: server.to_string(),
            why,
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        let program = match &cfg.command {
            Some(c) => Some(stdio_program(c, &cfg.args, &self.workspace).map_err(unavailable)?),
            None => None,
        };
        let client = Client::new(&self.workspace, self.answers);
        let fut = start(
            server.to_string(),
            cfg,
            program,
            client,
            Arc::clone(&stderr),
        );
        let live = match self.wait(fut, Instant::now() + START_TIMEOUT, || false) {
            Ok(Ok(l)) => Arc::new(l),
            Ok(Err(why)) => {
                let tail = stderr
                    .lock()
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default();
                return Err(unavailable(if tail.is_empty() {
                    why
                } else {
                    format!(
                        "{why}; its stderr: {}",
                        keyless_core::text::truncate_chars(&tail, 600)
                    )
                }));
            }
            Err(_) => {
                return Err(unavailable(format!(
                    "no answer within {}s",
                    START_TIMEOUT.as_secs()
                )))
            }
        };
        self.remember(scope);
        if let Ok(mut m) = self.live.lock() {
            m.insert(key, Arc::clone(&live));
        }
        Ok(live)
    }

    /// Lists a running server's tools again (it said they changed); on failure the old list
    /// stays.
    fn relist(&self, server: &str, live: &Live) {
        let Ok(cfg) = self.config(server) else {
            return;
        };
        let peer = live.service.peer().clone();
        if let Ok(Ok(listed)) = self.wait(
            async move { peer.list_all_tools().await },
            Instant::now() + START_TIMEOUT,
            || false,
        ) {
            if let Ok(mut t) = live.tools.lock() {
                *t = ServerTools::of(server, cfg, listed);
            }
        }
    }

    /// Records that `scope` uses servers; beyond [`SESSIONS_KEPT`] scopes, the oldest one's
    /// servers are stopped.
    fn remember(&self, scope: &str) {
        let Ok(mut scopes) = self.scopes.lock() else {
            return;
        };
        scopes.retain(|s| s != scope);
        scopes.push(scope.to_string());
        while scopes.len() > SESSIONS_KEPT {
            let old = scopes.remove(0);
            if let Ok(mut m) = self.live.lock() {
                m.retain(|(s, _), _| *s != old);
            }
        }
    }

    /// Stops the servers of `scope`.
    pub fn close_scope(&self, scope: &str) {
        self.close_where(|s, _| s == scope);
    }

    /// Stops `server`'s connection for `scope`; its next call starts it again. After a new
    /// login (step-up): the running connection's client is the old one, and could not refresh
    /// the new token.
    pub fn restart(&self, scope: &str, server: &str) {
        self.close_where(|s, n| s == scope && n == server);
    }

    /// Stops the connections whose (scope, server) `which` picks.
    fn close_where(&self, which: impl Fn(&str, &str) -> bool) {
        if let Ok(mut m) = self.live.lock() {
            let gone: Vec<Arc<Live>> = m
                .iter()
                .filter(|((s, n), _)| which(s, n))
                .map(|(_, l)| Arc::clone(l))
                .collect();
            m.retain(|(s, n), _| !which(s, n));
            drop(m);
            for l in gone {
                if let Ok(l) = Arc::try_unwrap(l) {
                    let _ = self.wait(
                        async move {
                            let _ = l.service.cancel().await;
                        },
                        Instant::now() + Duration::from_secs(5),
                        || false,
                    );
                }
            }
        }
    }

    /// The tools of `server` (started for `scope` when needed).
    ///
    /// # Errors
    /// KA_MCP_NOT_CONFIGURED, KA_MCP_UNAVAILABLE.
    pub fn tools(&self, scope: &str, server: &str) -> Result<Vec<McpTool>, McpError> {
        self.live(scope, server)
            .map(|l| l.tools.lock().map(|t| t.tools.clone()).unwrap_or_default())
    }

    /// Calls `server`'s `tool` with `args` for `scope`, waiting at most `timeout` (plus the time
    /// `user` takes to answer the server's forms); `user` is asked while it waits whether to stop,
    /// and answers the forms.
    ///
    /// # Errors
    /// KA_MCP_NOT_CONFIGURED, KA_MCP_UNAVAILABLE, KA_MCP_UNKNOWN_TOOL, KA_TIMEOUT, KA_CANCELLED.
    pub fn call(
        &self,
        scope: &str,
        server: &str,
        tool: &str,
        args: Option<serde_json::Map<String, serde_json::Value>>,
        timeout: Duration,
        user: &mut dyn CallUser,
    ) -> Result<CallOutput, McpError> {
        let live = self.live(scope, server)?;
        let names = |live: &Live| -> Vec<String> {
            live.tools
                .lock()
                .map(|t| t.tools.iter().map(|t| t.name.clone()).collect())
                .unwrap_or_default()
        };
        let mut known = names(&live);
        if !known.iter().any(|t| t == tool) {
            // The server may have added it since (its list_changed can still be on its way).
            self.relist(server, &live);
            known = names(&live);
        }
        if !known.iter().any(|t| t == tool) {
            return Err(McpError::UnknownTool {
                server: server.to_string(),
                tool: tool.to_string(),
                known: known.join(", "),
            });
        }
        use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
        use rmcp::service::PeerRequestOptions;
        let peer = live.service.peer().clone();
        let client = live.service.service().clone();
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = args;
        let started = Instant::now();
        // The request's id, once sent: a call keyless stops waiting for is cancelled with it.
        let (sent, sent_id) = mpsc::channel();
        let (ask, asked) = mpsc::channel::<Notice>();
        if let Ok(mut q) = live.questions.lock() {
            *q = Some(ask);
        }
        let answer = self.wait_with(
            async move {
                // A 2026-07-28 server may answer "input required" (MRTR): the call is made
                // again with the user's answers, at most MRTR_ROUNDS times.
                for _ in 0..MRTR_ROUNDS {
                    let request =
                        ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
                    let handle = peer
                        .send_cancellable_request(request, PeerRequestOptions::no_options())
                        .await?;
                    let _ = sent.send(handle.id.clone());
                    match handle.await_response().await? {
                        ServerResult::InputRequiredResult(asked) => {
                            let (answers, state) = client.answer_input(asked).await?;
                            params.input_responses = answers;
                            params.request_state = state;
                        }
                        other => return Ok(other),
                    }
                }
                Err(rmcp::ServiceError::InputRequiredRoundsExceeded {
                    max_rounds: MRTR_ROUNDS,
                })
            },
            started + timeout,
            |deadline| {
                while let Ok(notice) = asked.try_recv() {
                    match notice {
                        Notice::Question { form, reply } => {
                            let t = Instant::now();
                            let _ = reply.send(user.elicit(server, &form));
                            *deadline += t.elapsed();
                        }
                        Notice::Progress(line) => user.progress(server, &line),
                    }
                }
                user.cancel_requested()
            },
        );
        if let Ok(mut q) = live.questions.lock() {
            *q = None;
        }
        let duration = started.elapsed();
        // The request of the call's last round is the one the server is working on.
        let stopped = |reason: &str| {
            if let Some(id) = sent_id.try_iter().last() {
                self.notify_cancelled(&live, id, reason);
            }
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(r))) => {
                let structured = live.tools.lock().is_ok_and(|t| t.structured.contains(tool));
                Ok(output(r, duration, structured))
            }
            Ok(Ok(_)) => Err(McpError::Unavailable {
                server: server.to_string(),
                why: "the answer to tools/call is not a tool result".into(),
            }),
            Ok(Err(e)) => Err(match e.auth_challenge() {
                Some(challenge) => McpError::NeedsLogin {
                    server: server.to_string(),
                    challenge: challenge.to_string(),
                },
                None => McpError::Unavailable {
                    server: server.to_string(),
                    why: e.to_string(),
                },
            }),
            Err(Waited::Timeout) => {
                stopped("timed out");
                Err(McpError::Timeout {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    seconds: timeout.as_secs(),
                })
            }
            Err(Waited::Cancelled) => {
                stopped("cancelled by the user");
                Err(McpError::Cancelled)
            }
        }
    }

    /// Tells the server keyless no longer waits for request `id` (`notifications/cancelled`),
    /// waiting at most a second for the message to leave.
    fn notify_cancelled(&self, live: &Live, id: rmcp::model::RequestId, reason: &str) {
        use rmcp::model::CancelledNotificationParam;
        let peer = live.service.peer().clone();
        let param = CancelledNotificationParam::new(Some(id), Some(reason.to_string()));
        let _ = self.wait(
            async move { peer.notify_cancelled(param).await },
            Instant::now() + Duration::from_secs(1),
            || false,
        );
    }

    /// Every declared server started for `scope`, with its state and tools (`mcp list`, doctor).
    #[must_use]
    pub fn status(&self, scope: &str) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|(name, cfg)| {
                let t = Instant::now();
                let (state, start_ms, revision, tools) = match self.live(scope, name) {
                    Ok(live) => (
                        "running".to_string(),
                        Some(u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)),
                        Some(live.revision.clone()),
                        live.tools
                            .lock()
                            .map(|t| t.tools.clone())
                            .unwrap_or_default(),
                    ),
                    Err(e) => (format!("{} {e}", e.code()), None, None, Vec::new()),
                };
                ServerStatus {
                    name: name.clone(),
                    transport: describe(cfg),
                    trust_read_only: cfg.trust_read_only,
                    state,
                    start_ms,
                    revision,
                    tools,
                }
            })
            .collect()
    }
}

impl Drop for Pool {
    /// Stops every server (their transports close and stdio children are killed) without
    /// blocking: the pool may be dropped on one of serve's async threads, where a runtime may not
    /// wait for its tasks.
    fn drop(&mut self) {
        if let Ok(mut m) = self.live.lock() {
            m.clear();
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

enum Waited {
    Timeout,
    Cancelled,
}

/// A tool result as text. A tool that declares an `outputSchema` answers with its
/// `structuredContent`, as JSON (the protocol's result for such a tool; its text blocks are only a
/// courtesy copy). Otherwise: text blocks as they are, other blocks by kind (an image is never
/// pasted into a chat as base64), and structured content when there is nothing else.
fn output(r: CallToolResult, duration: Duration, declares_output: bool) -> CallOutput {
    if declares_output && !r.is_error.unwrap_or(false) {
        if let Some(s) = &r.structured_content {
            return CallOutput {
                text: s.to_string(),
                is_error: false,
                structured: r.structured_content,
                duration,
            };
        }
    }
    let mut text = String::new();
    for block in &r.content {
        if !text.is_empty() {
            text.push('\n');
        }
        match serde_json::to_value(block) {
            Ok(v) => match v.get("type").and_then(|t| t.as_str()) {
                Some("text") => text.push_str(v.get("text").and_then(|t| t.as_str()).unwrap_or("")),
                Some(kind) => {
                    let mime = v.get("mimeType").and_then(|m| m.as_str()).unwrap_or("");
                    text.push_str(&format!("[{kind} {mime}]"));
                }
                None => text.push_str("[content]"),
            },
            Err(_) => text.push_str("[content]"),
        }
        let _: &ContentBlock = block;
    }
    if text.is_empty() {
        if let Some(s) = &r.structured_content {
            text = s.to_string();
        }
    }
    CallOutput {
        text,
        is_error: r.is_error.unwrap_or(false),
        structured: r.structured_content,
        duration,
    }
}
