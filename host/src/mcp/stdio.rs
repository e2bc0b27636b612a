//! Starting a stdio MCP server: the program keyless.json names, resolved and started by the
//! launcher (a trusted program, a PATH and a folder the model cannot write), and how a server is
//! described to the user.

use super::*;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};

/// `stdio: COMMAND ARGS…` or `http: URL`.
#[must_use]
pub fn describe(cfg: &ServerConfig) -> String {
    match (&cfg.command, &cfg.url) {
        (Some(c), _) => {
            let mut s = format!("stdio: {c}");
            for a in &cfg.args {
                s.push(' ');
                s.push_str(a);
            }
            s
        }
        (None, Some(u)) => format!("http: {u}"),
        (None, None) => "(none)".into(),
    }
}

/// How keyless opens a server: `server/discover` with the newest revision it speaks
/// (2026-07-28, stateless), and `initialize` with 2025-11-25 when the server answers that it does
/// not know `server/discover` (the revision's backward-compatibility rule). One client either way:
/// the revision is a detail of the transport.
fn newest() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: Some(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// The program a stdio server runs, checked: a server runs outside the sandbox as the user's own
/// program, so neither it nor a file it is given may be one the model can write. A bare name is
/// looked up only in the absolute PATH folders a command cannot write (not the workspace, not a
/// temp folder: `/tmp`, `/var/tmp`, `/dev/shm`); the program, and every argument naming an
/// existing file, must be outside every such folder (a folder argument, such as the root a file
/// server serves, is fine).
///
/// # Errors
/// Why the server is not started.
pub(super) fn stdio_program(
    command: &str,
    args: &[String],
    workspace: &std::path::Path,
) -> Result<(crate::launch::Launcher, crate::launch::Program), String> {
    let launcher = crate::launch::Launcher::new(Some(workspace));
    let program = launcher
        .program(command)
        .map_err(|e| format!("{}: {e}", Code::LaunchRefused))?;
    let cwd = launcher.working_dir(crate::launch::Purpose::McpServer);
    for a in args {
        let p = cwd.join(a);
        if p.is_file() && launcher.model_writable(&p) {
            return Err(format!(
                "{}: argument {a} is a file in the workspace or a temp folder, which the model can write; keyless does not run it outside the sandbox",
                Code::LaunchRefused
            ));
        }
    }
    Ok((launcher, program))
}

pub(super) async fn start(
    name: String,
    cfg: ServerConfig,
    program: Option<(crate::launch::Launcher, crate::launch::Program)>,
    client: Client,
    stderr: Arc<Mutex<String>>,
) -> Result<Live, String> {
    let questions = Arc::clone(&client.questions);
    let stale = Arc::clone(&client.stale);
    let login = |e: &rmcp::service::ClientInitializeError| {
        if needs_login(e) {
            format!("needs login: run `keyless-host mcp login {name}`")
        } else {
            e.to_string()
        }
    };
    // The newest revision first; a server that neither speaks it nor answers `server/discover`
    // as the revision says an old server does (some answer any request with an empty result) is
    // started again and opened with `initialize`, exactly as before 2026-07-28.
    let service = match open(&cfg, program.as_ref(), client.clone(), &stderr, newest()).await {
        Ok(s) => s,
        Err(Opened::Init(e)) if needs_login(&e) => return Err(login(&e)),
        Err(Opened::Other(e)) => return Err(e),
        Err(Opened::Init(first)) => {
            match open(
                &cfg,
                program.as_ref(),
                client,
                &stderr,
                ClientLifecycleMode::Initialize,
            )
            .await
            {
                Ok(s) => s,
                Err(Opened::Init(e)) if needs_login(&e) => return Err(login(&e)),
                Err(Opened::Init(e)) => {
                    return Err(format!("{} (with server/discover: {})", e, first))
                }
                Err(Opened::Other(e)) => return Err(e),
            }
        }
    };
    let revision = service
        .peer()
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    let listed = service.list_all_tools().await.map_err(|e| {
        if e.auth_challenge().is_some() {
            format!("needs login: run `keyless-host mcp login {name}`")
        } else {
            format!("tools/list failed: {e}")
        }
    })?;
    Ok(Live {
        questions,
        tools: Mutex::new(ServerTools::of(&name, &cfg, listed)),
        revision,
        service,
        stale,
    })
}

/// Whether a server refused keyless for want of authorization (a 401 challenge, a 403 asking for
/// more scopes, or a token that expired): then it is never tried again with `initialize` (an old
/// handshake a server may still let through unauthenticated), and the user is told to log in.
fn needs_login(e: &rmcp::service::ClientInitializeError) -> bool {
    e.auth_challenge().is_some() || e.is_authorization_required()
}

/// Why a server did not open: its handshake failed, or it could not be reached or started.
enum Opened {
    Init(Box<rmcp::service::ClientInitializeError>),
    Other(String),
}

impl From<rmcp::service::ClientInitializeError> for Opened {
    fn from(e: rmcp::service::ClientInitializeError) -> Self {
        Opened::Init(Box::new(e))
    }
}

impl From<String> for Opened {
    fn from(e: String) -> Self {
        Opened::Other(e)
    }
}

/// Starts (stdio) or reaches (HTTP) the server and opens it with `mode`.
async fn open(
    cfg: &ServerConfig,
    program: Option<&(crate::launch::Launcher, crate::launch::Program)>,
    client: Client,
    stderr: &Arc<Mutex<String>>,
    mode: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, Client>, Opened> {
    Ok(match (&program, &cfg.url) {
        (Some((launcher, command)), _) => {
            // Like the reference MCP clients: a short list of harmless variables and what
            // `Env` names, never the host's whole environment (its keys and tokens); PATH holds
            // only folders the model cannot write, so `npx`'s `#!/usr/bin/env node` finds a
            // trusted node.
            let mut cmd = launcher.tokio_command(command, crate::launch::Purpose::McpServer);
            cmd.args(&cfg.args).envs(&cfg.env).kill_on_drop(true);
            let (transport, err) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", command.path.display()))?;
            if let Some(mut err) = err {
                let buf = Arc::clone(stderr);
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut chunk = vec![0u8; 4096];
                    while let Ok(n) = err.read(&mut chunk).await {
                        if n == 0 {
                            break;
                        }
                        keep_tail(&buf, &String::from_utf8_lossy(&chunk[..n]));
                    }
                });
            }
            client.serve_with_lifecycle(transport, mode).await?
        }
        (None, Some(url)) => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            crate::mcp_auth::tls_ready();
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (header, value) in &cfg.headers {
                let value = keyless_core::mcp::expand_env(value, |n| std::env::var(n).ok())
                    .map_err(|e| format!("header {header}: {e}"))?;
                let h = axum::http::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|e| format!("header {header}: {e}"))?;
                let v = axum::http::HeaderValue::from_str(&value)
                    .map_err(|e| format!("header {header}: {e}"))?;
                config.custom_headers.insert(h, v);
            }
            // A server the user logged in to gets its token (refreshed when it expires).
            match crate::mcp_auth::authorized_client(url).await? {
                Some(auth) => {
                    let transport =
                        rmcp::transport::StreamableHttpClientTransport::with_client(auth, config);
                    client.serve_with_lifecycle(transport, mode).await?
                }
                None => {
                    let transport =
                        rmcp::transport::StreamableHttpClientTransport::from_config(config);
                    client.serve_with_lifecycle(transport, mode).await?
                }
            }
        }
        (None, None) => return Err(Opened::Other("neither Command nor Url".into())),
    })
}
