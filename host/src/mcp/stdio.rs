//! Starting a stdio MCP server: the program keyless.json names, resolved and started by the
//! launcher (a trusted program, a PATH and a folder the model cannot write), and how a server is
//! described to the user.

use super::*;

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
    let service = match (&program, &cfg.url) {
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
                let buf = Arc::clone(&stderr);
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
            client.serve(transport).await.map_err(|e| e.to_string())?
        }
        (None, Some(url)) => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
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
            // A server the user logged in to gets its token (refreshed when it expires); one
            // that answers `initialize` with a challenge needs a login first.
            let login = |e: rmcp::service::ClientInitializeError| {
                if e.auth_challenge().is_some() {
                    format!("needs login: run `keyless-host mcp login {name}`")
                } else {
                    e.to_string()
                }
            };
            match crate::mcp_auth::authorized_client(url).await? {
                Some(auth) => {
                    let transport =
                        rmcp::transport::StreamableHttpClientTransport::with_client(auth, config);
                    client.serve(transport).await.map_err(login)?
                }
                None => {
                    let transport =
                        rmcp::transport::StreamableHttpClientTransport::from_config(config);
                    client.serve(transport).await.map_err(login)?
                }
            }
        }
        (None, None) => return Err("neither Command nor Url".into()),
    };
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
        service,
        stale,
    })
}
