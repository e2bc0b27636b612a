//! Authorization for remote MCP servers: the MCP authorization spec (OAuth 2.1 with PKCE,
//! protected resource metadata from the server's `WWW-Authenticate` challenge or its well-known
//! paths, authorization server metadata with its fallbacks, dynamic client registration or a
//! pre-registered client, the `resource` parameter, refresh) on rmcp's own `auth` support, so
//! none of it is written here. What is keyless's own: where tokens live (the user's config
//! folder, mode 0600, never the workspace, a trace or a log line), the loopback redirect that
//! receives the code, and opening the browser.
//!
//! `keyless-host mcp login NAME` runs the flow once; afterwards the server's transport sends the
//! token and refreshes it (`AuthClient`).

use keyless_core::mcp::ServerConfig;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState,
    StoredCredentials,
};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

/// The tokens file in the user's keyless config folder.
const TOKENS_FILE: &str = "mcp-tokens.json";
/// How long `mcp login` waits for the browser to come back.
pub const LOGIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Makes ring the process's TLS provider, once, before any HTTP client is built: reqwest (and
/// rmcp through it) is built without a provider of its own and panics when none is installed.
/// Every path to a `reqwest::Client` in the host goes through this module, and each calls this
/// first; a provider already installed (by a caller, or an earlier call) is kept.
pub fn tls_ready() {
    static READY: std::sync::Once = std::sync::Once::new();
    READY.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err only when another thread installed one in between: that one is kept.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// Where the tokens are: `<config>/keyless/mcp-tokens.json`.
///
/// # Errors
/// When there is no config folder (no HOME).
pub fn tokens_path() -> Result<PathBuf, String> {
    crate::dirs::user_config_dir()
        .map(|d| d.join(TOKENS_FILE))
        .ok_or_else(|| "no keyless config folder (HOME is not set)".to_string())
}

/// The tokens of one server (by its URL) in the tokens file: read and written whole, the file
/// always replaced with one of mode 0600.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
    key: String,
}

impl FileStore {
    #[must_use]
    pub fn new(path: PathBuf, url: &str) -> Self {
        Self {
            path,
            key: url.to_string(),
        }
    }

    fn read_all(&self) -> Result<BTreeMap<String, serde_json::Value>, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(AuthError::CredentialStoreError(format!(
                "{}: {e}",
                self.path.display()
            ))),
        }
    }

    fn write_all(&self, all: &BTreeMap<String, serde_json::Value>) -> Result<(), AuthError> {
        let fail = |e: std::io::Error| {
            AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()))
        };
        let json = serde_json::to_vec_pretty(all)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        crate::pairing::write_private(&self.path, &json).map_err(fail)
    }

    /// Whether tokens are stored for this server.
    #[must_use]
    pub fn has_tokens(&self) -> bool {
        self.read_all()
            .ok()
            .and_then(|m| m.get(&self.key).cloned())
            .and_then(|v| serde_json::from_value::<StoredCredentials>(v).ok())
            .is_some_and(|c| c.token_response.is_some())
    }

    /// Forgets this server's tokens; whether there were any.
    ///
    /// # Errors
    /// When the file cannot be read or written.
    pub fn forget(&self) -> Result<bool, String> {
        let mut all = self.read_all().map_err(|e| e.to_string())?;
        let had = all.remove(&self.key).is_some();
        if had {
            self.write_all(&all).map_err(|e| e.to_string())?;
        }
        Ok(had)
    }
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .read_all()?
            .get(&self.key)
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let mut all = self.read_all()?;
        all.insert(
            self.key.clone(),
            serde_json::to_value(credentials)
                .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?,
        );
        self.write_all(&all)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut all = self.read_all()?;
        all.remove(&self.key);
        self.write_all(&all)
    }
}

/// The scopes a server's `WWW-Authenticate` challenge asks for, when it names them (read by
/// rmcp's own parser).
#[must_use]
pub fn challenge_scope(challenge: &str, server_url: &str) -> Option<String> {
    let base = url::Url::parse(server_url).ok()?;
    rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &base).scope
}

/// The HTTP client of a server the user logged in to: it sends the stored token and refreshes
/// it. `None` when no tokens are stored for the server's URL.
///
/// # Errors
/// When the stored tokens cannot be read, or the server's metadata cannot be found again.
pub async fn authorized_client(url: &str) -> Result<Option<AuthClient<reqwest::Client>>, String> {
    tls_ready();
    let store = FileStore::new(tokens_path()?, url);
    if !store.has_tokens() {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| e.to_string())?;
    manager.set_credential_store(store);
    if !manager
        .initialize_from_store()
        .await
        .map_err(|e| e.to_string())?
    {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(reqwest::Client::default(), manager)))
}

/// The server's challenge to a request without a token (`WWW-Authenticate` of its 401), which
/// names its resource metadata and the scopes it wants: asked as keyless opens a server, with
/// `server/discover` (2026-07-28) first, then `initialize` (2025-11-25).
async fn challenge(url: &str) -> Option<String> {
    tls_ready();
    let client =
        || serde_json::json!({"name": "keyless-host", "version": env!("CARGO_PKG_VERSION")});
    let discover = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": client(),
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    });
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client()}
    });
    // 2026-07-28 names the revision and the method in headers too; 2025-11-25's initialize goes
    // as it always did.
    let modern = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ];
    for (body, headers) in [(discover, &modern[..]), (initialize, &[][..])] {
        let mut request = reqwest::Client::new()
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let Ok(r) = request.body(body.to_string()).send().await else {
            continue;
        };
        if r.status() == reqwest::StatusCode::UNAUTHORIZED {
            return r
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string);
        }
    }
    None
}

/// Whether keyless hands `url` (from the authorization server's metadata) to a browser: https,
/// or http on loopback; nothing else (no `file:`, no `javascript:`, no option-like text).
#[must_use]
pub fn openable(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => u.host().is_some(),
        "http" => {
            matches!(
                u.host(),
                Some(url::Host::Ipv4(ip)) if ip.is_loopback()
            ) || matches!(u.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
                || u.host_str() == Some("localhost")
        }
        _ => false,
    }
}

/// How the authorization URL reaches the user's browser: the program `$BROWSER` names (run with
/// the URL as its one argument, no shell), else `xdg-open`, each through the launcher (found only
/// where the model cannot write, PATH cut to such folders); the URL is always printed too.
fn open_browser(url: &str, workspace: Option<&std::path::Path>) -> bool {
    let launcher = crate::launch::Launcher::new(workspace);
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let (program, args): (String, Vec<String>) = match program {
        Some(p) => {
            let mut words = p.split_whitespace().map(str::to_string);
            let first = words.next().unwrap_or_default();
            (first, words.collect())
        }
        None => ("xdg-open".to_string(), Vec::new()),
    };
    let Ok(mut cmd) = launcher.start(&program, crate::launch::Purpose::Desktop) else {
        return false;
    };
    cmd.args(args)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// Waits for the browser's redirect on `listener`: the callback URL it was sent to (with its
/// `code` and `state`), answered with a page saying the login is done. Gives up at `deadline`, or
/// as soon as `stop` says so (checked every 100 ms).
fn receive_redirect(
    listener: &std::net::TcpListener,
    deadline: std::time::Instant,
    stop: &mut dyn FnMut() -> bool,
) -> Result<String, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    loop {
        if stop() {
            return Err("stopped before the browser came back".into());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "no answer from the browser within {}s",
                LOGIN_TIMEOUT.as_secs()
            ));
        }
        let mut stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(100));
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
        let mut line = String::new();
        if BufReader::new(&stream).read_line(&mut line).is_err() {
            continue;
        }
        let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
        if !target.starts_with("/callback") {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            continue;
        }
        let page = "<!doctype html><title>keyless</title><p>keyless-host is logged in. You can close this tab.</p>";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        return Ok(target);
    }
}

/// How long each exchange with the servers (discovery, registration, the token) may take.
const EXCHANGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// `keyless-host mcp login NAME`: the whole flow for the server `name` (its `Url`), the
/// resulting tokens stored in the tokens file. `ClientId` (and the secret from the environment
/// variable `ClientSecretEnv` names) is a pre-registered client; otherwise the client registers
/// itself where the authorization server allows it.
///
/// `challenge`: the server's `WWW-Authenticate` that asked for more (a call's 403
/// `insufficient_scope`: step-up); without it, the server is asked for its challenge first.
/// `stop`: asked while it waits for the browser (the user pressed Stop, Ctrl+C). The login ends
/// within [`LOGIN_TIMEOUT`] whatever happens; each exchange with the servers within a minute.
///
/// # Errors
/// Why the login did not complete, in words.
pub fn login(
    name: &str,
    cfg: &ServerConfig,
    workspace: Option<&std::path::Path>,
    challenge_given: Option<&str>,
    out: &mut dyn Write,
    stop: &mut dyn FnMut() -> bool,
) -> Result<(), String> {
    tls_ready();
    let deadline = std::time::Instant::now() + LOGIN_TIMEOUT;
    let url = cfg
        .url
        .clone()
        .ok_or_else(|| format!("MCP server \"{name}\" has no Url: only remote servers log in"))?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store = FileStore::new(tokens_path()?, &url);
    let timed = |what: &str| format!("{what} took longer than {}s", EXCHANGE_TIMEOUT.as_secs());
    let (state, auth_url) = rt.block_on(async {
        tokio::time::timeout(EXCHANGE_TIMEOUT, async {
            let mut manager = AuthorizationManager::new(url.as_str())
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            manager.set_credential_store(store);
            let mut state = OAuthState::Unauthorized(manager);
            let mut request = AuthorizationRequest::new(redirect.clone())
                .with_client_name("keyless-host")
                .with_initial_scope_selection();
            let found = match challenge_given {
                Some(h) => Some(h.to_string()),
                None => challenge(&url).await,
            };
            if let Some(h) = found {
                request = request.with_challenge(h);
            }
            if let Some(id) = cfg.client_id.as_deref() {
                request = request.with_preregistered_client(id);
                if let Some(var) = cfg.client_secret_env.as_deref() {
                    let secret = std::env::var(var).map_err(|_| {
                        format!("the environment variable {var} (ClientSecretEnv) is not set")
                    })?;
                    request = request.with_client_secret(secret);
                }
            }
            state.start_authorization(request).await.map_err(|e| {
                if cfg.client_id.is_some() {
                    format!("authorization could not start: {e}")
                } else {
                    // A server that takes only pre-registered clients or Client ID Metadata
                    // Documents (an https URL of the client's own, which keyless has not).
                    format!(
                        "authorization could not start: {e}. If the service lets no client register \
                         itself, register keyless with it by hand and put the client id it gives \
                         you in this server's entry of your keyless.json as \"ClientId\" (and the \
                         name of the environment variable holding a secret as \"ClientSecretEnv\")"
                    )
                }
            })?;
            let auth_url = state
                .get_authorization_url()
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((state, auth_url))
        })
        .await
        .map_err(|_| timed("finding the authorization server"))?
    })?;
    if !openable(&auth_url) {
        return Err(format!(
            "the authorization server's login page is not an https address; keyless does not open it: {}",
            keyless_core::text::truncate_chars(&keyless_core::text::printable(&auth_url), 200)
        ));
    }
    let opened = open_browser(&auth_url, workspace);
    let _ = writeln!(
        out,
        "{} the authorization page for MCP server \"{name}\"; if it did not open, open this URL:\n  {auth_url}\nWaiting for the browser to come back to {redirect} …",
        if opened { "Opened" } else { "Could not open" }
    );
    let callback = receive_redirect(&listener, deadline, stop)?;
    let mut state = state;
    rt.block_on(async {
        tokio::time::timeout(
            EXCHANGE_TIMEOUT,
            state.handle_callback_url(&format!("http://127.0.0.1:{port}{callback}")),
        )
        .await
        .map_err(|_| timed("the token exchange"))?
        .map_err(|e| format!("the authorization server's answer was refused: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(client: &str) -> StoredCredentials {
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "secret-access", "token_type": "bearer", "refresh_token": "secret-refresh"
        }))
        .expect("token");
        StoredCredentials::new(client.into(), Some(token), vec!["read".into()], Some(1))
    }

    #[test]
    fn only_an_https_or_loopback_login_page_is_opened() {
        for ok in [
            "https://auth.example.com/authorize?x=1",
            "http://127.0.0.1:9000/authorize",
            "http://localhost:9000/authorize",
            "http://[::1]:9000/authorize",
        ] {
            assert!(openable(ok), "{ok}");
        }
        for bad in [
            "http://auth.example.com/authorize",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "--new-window=x",
            "-x https://a.example/",
            "data:text/html,hi",
            "ftp://a.example/",
            "",
        ] {
            assert!(!openable(bad), "{bad}");
        }
    }

    #[test]
    fn the_tokens_file_is_private_and_keeps_each_server_apart() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("keyless").join(TOKENS_FILE);
        let a = FileStore::new(path.clone(), "https://a.example/mcp");
        let b = FileStore::new(path.clone(), "https://b.example/mcp");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("rt");
        assert!(!a.has_tokens());
        rt.block_on(a.save(creds("client-a"))).expect("save a");
        rt.block_on(b.save(creds("client-b"))).expect("save b");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let loaded = rt.block_on(a.load()).expect("load").expect("some");
        assert_eq!(loaded.client_id, "client-a");
        assert!(a.has_tokens() && b.has_tokens());
        assert_eq!(a.forget(), Ok(true));
        assert_eq!(a.forget(), Ok(false));
        assert!(!a.has_tokens() && b.has_tokens());
        // No temp file is left beside it.
        let names: Vec<String> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![TOKENS_FILE.to_string()]);
    }
}
