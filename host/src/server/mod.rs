//! `keyless-host serve`: the localhost API the extension (and the user's scripts) talk to.
//!
//! Safety, in order, on every request:
//! 1. Host must be `127.0.0.1:<port>` or `localhost:<port>` (DNS rebinding);
//! 2. every route but `POST /v1/pair` needs `Authorization: Bearer <token>`: a paired extension's
//!    token, or the local token `serve` prints for scripts and the dashboard;
//! 3. an `Origin`, when sent, must be exactly the token's extension origin (`chrome-extension://<id>`,
//!    or Firefox's `moz-extension://<uuid>`; this server's own origin for the local token); a web
//!    page the user visits is refused;
//! 4. POST bodies must be `application/json` (no text/plain CSRF) and at most [`MAX_BODY_BYTES`].

use crate::exec::batch::ExecSettings;
use crate::exec::workspace::Workspace;
use crate::pairing::Pairings;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{self};
use axum::routing::{get, post};
use axum::Router;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

mod as_runs;
mod assets;
mod auth;
mod batches;
mod chat;
pub mod claim;
mod generations;
mod prompts;
mod pure;
mod sessions;
mod state;

use self::as_runs::{get_run, list_runs, start_run};
use self::assets::{
    dashboard_asset, dashboard_index, not_found, pieces_file, pieces_index, playground_file,
    playground_index,
};
use self::auth::{guard, log_and_limit, pair};
use self::batches::{audit, get_batch, undo_batch_route};
use self::prompts::{answer_prompt, events, list_prompts};
use self::pure::{check_route, policy_route, prompt_route, status};
use self::sessions::{
    cancel, create_session, delete_piece, get_piece, get_session, handover_route, list_pieces,
    list_sessions, put_piece, session_diff, session_settings, submit_reply,
};
pub use state::{ApiError, Shared, StateParts, MAX_BODY_BYTES};

/// The default port (core's, which the extension's defaults use too).
pub const DEFAULT_PORT: u16 = keyless_core::site::DEFAULT_PORT;

/// The router for a shared state.
pub fn router(st: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/pair", post(pair))
        .route("/v1/status", get(status))
        .route("/v1/check", post(check_route))
        .route("/v1/policy", post(policy_route))
        .route("/v1/prompt", get(prompt_route))
        .route("/v1/sessions", post(create_session).get(list_sessions))
        .route("/v1/sessions/{id}", get(get_session))
        .route("/v1/sessions/{id}/replies", post(submit_reply))
        .route("/v1/sessions/{id}/cancel", post(cancel))
        .route("/v1/sessions/{id}/settings", post(session_settings))
        .route("/v1/sessions/{id}/diff", get(session_diff))
        .route("/v1/sessions/{id}/handover", post(handover_route))
        .route("/v1/pieces", get(list_pieces))
        .route(
            "/v1/pieces/{name}",
            get(get_piece).put(put_piece).delete(delete_piece),
        )
        .route("/pieces/", get(pieces_index))
        .route("/pieces/{file}", get(pieces_file))
        .route("/v1/batches/{id}", get(get_batch))
        .route("/v1/batches/{id}/undo", post(undo_batch_route))
        .route("/v1/audit", get(audit))
        .route("/v1/as/runs", post(start_run).get(list_runs))
        .route("/v1/as/runs/{id}", get(get_run))
        .route(
            "/v1/generations",
            post(generations::ask).get(generations::list),
        )
        .route(
            "/v1/generations/{id}",
            get(generations::get).post(generations::answer),
        )
        .route("/v1/generations/{id}/claim", post(generations::claim))
        .route("/v1/generations/{id}/cancel", post(generations::cancel))
        .route("/v1/generations/{id}/seen", post(generations::seen))
        .route("/v1/generations/{id}/release", post(generations::release))
        .route("/v1/chat-tab", post(generations::chat_tab))
        .route("/", get(dashboard_index))
        .route("/assets/{file}", get(dashboard_asset))
        .route("/playground/", get(playground_index))
        .route("/playground/{file}", get(playground_file))
        .route("/v1/confirmations", get(list_prompts))
        .route("/v1/confirmations/{id}", post(answer_prompt))
        .route("/v1/events", get(events))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(st.clone(), guard))
        .layer(middleware::from_fn(log_and_limit))
        .with_state(st)
}

/// Options of `keyless-host serve`.
#[derive(Debug)]
pub struct ServeOptions {
    pub port: u16,
    pub workspace: PathBuf,
    pub exec: ExecSettings,
    pub pairings: Pairings,
    /// The built dashboard folder (`target/www`).
    pub www: Option<PathBuf>,
    /// The tracing log on stderr (every request, every batch) instead of warnings only.
    pub verbose: bool,
}

/// Binds 127.0.0.1:`port` (0 picks a free port), prints the address, the pairing code and the
/// local token, and serves until Ctrl-C or SIGTERM. The running command is cancelled (its batch
/// recorded, the session resumable); a batch waiting for a confirmation or an answer ends declined
/// (nobody can answer once the server stops). A second Ctrl-C quits at once.
///
/// # Errors
/// [`ServeError::Claimed`] while another `serve` runs for the workspace; [`ServeError::Io`] when
/// the port cannot be bound or the workspace opened.
pub fn serve(o: ServeOptions) -> Result<(), ServeError> {
    // A serve that refuses to start (the port is taken, …) leaves nothing behind: the `.agent`
    // folder it made is removed again. Never one another serve holds.
    let agent = o.workspace.join(crate::exec::workspace::AGENT_DIR);
    let made = std::fs::symlink_metadata(&agent).is_err();
    let r = serve_in(o);
    if made && matches!(r, Err(ServeError::Io(_))) {
        let _ = std::fs::remove_dir_all(&agent);
    }
    r
}

fn serve_in(mut o: ServeOptions) -> Result<(), ServeError> {
    let ws = Workspace::open(&o.workspace)?;
    let mut claim =
        claim::Claim::take(&ws).map_err(|e| ServeError::Claimed(e.message(ws.root())))?;
    ws.clean_leftovers();
    let snapshot = crate::exec::snapshot::gather_for(ws.root(), &mut o.exec);
    let code = crate::pairing::pairing_code()?;
    let local_token = o.pairings.local_token()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The terminal is a view (the `view` task below); the tracing log goes to stderr with
    // --verbose, else its warnings only. RUST_LOG overrides both.
    let level = if o.verbose {
        "keyless_host=info"
    } else {
        "keyless_host=warn"
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level)),
        )
        .try_init();
    let r = rt.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], o.port))).await?;
        let addr = listener.local_addr()?;
        if let Err(e) = claim.record(addr.port()) {
            tracing::warn!(error = %e, "cannot record the port in .agent/serve.lock");
        }
        let st = Shared::new(StateParts {
            port: addr.port(),
            ws,
            exec: o.exec,
            environment: snapshot.text(),
            pairings: o.pairings,
            pairing_code: code.clone(),
            local_token: local_token.clone(),
            www: o.www,
        })?;
        println!(
            "keyless-host {} listening on http://{addr}",
            env!("CARGO_PKG_VERSION")
        );
        println!("workspace: {}", st.ws.root().display());
        println!("pairing code: {code}   (enter it in the keyless extension's popup; single use)");
        println!("local token: {local_token}   (for scripts: Authorization: Bearer …)");
        println!("sandbox: {}", snapshot.sandbox);
        if let Some(n) = crate::dirs::linked_notice(st.ws.root()) {
            println!("note: {n}");
        }
        match &st.www {
            Some(_) => println!("dashboard: http://{addr}/?token={local_token}"),
            None => println!("dashboard: not built (cargo xtask build builds it)"),
        }
        if st
            .www
            .as_ref()
            .is_some_and(|w| w.join("playground").join("index.html").is_file())
        {
            println!("playground: http://{addr}/playground/");
        }
        // The extension's native-messaging host finds this server here (pairing without a code).
        let me = std::process::id();
        let previous = match crate::native::record_serve(&crate::native::ServeInfo {
            port: addr.port(),
            pid: me,
            workspace: st.ws.root().display().to_string(),
        }) {
            Ok(previous) => previous,
            Err(e) => {
                tracing::warn!(error = %e, "cannot record serve.json: the extension pairs with the code only");
                None
            }
        };
        let mut signals = Signals::install()?;
        println!("Press Ctrl-C to stop. What happens is shown below, a line each (--verbose: the full log on stderr).");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        tokio::spawn(view(st.events.subscribe()));
        let shared = Arc::clone(&st);
        let stopping = Arc::clone(&st);
        // The first Ctrl-C (or SIGTERM) stops what runs: the running command is cancelled
        // (KA_CANCELLED, its output kept, the session resumable), a waiting question ends
        // declined, and serve ends within a second or two. A second one ends it at once.
        let shutdown = async move {
            signals.next().await;
            println!("keyless-host: stopping: the running command is cancelled and its session can be resumed (Ctrl-C again quits at once)");
            let _ = std::io::stdout().flush();
            stopping.close_prompts();
            tokio::spawn(async move {
                signals.next().await;
                println!("keyless-host: quit");
                let _ = std::io::stdout().flush();
                std::process::exit(130);
            });
        };
        let r = crate::conn::serve(listener, router(st), shutdown).await;
        // Nobody can answer now: the batches waiting for an answer end declined and are recorded.
        shared.close_prompts();
        shared.close_generations();
        crate::native::forget_serve(me, previous);
        drop(claim);
        r
    });
    // A batch thread still finishing its cancelled command does not hold the exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    r?;
    Ok(())
}

/// The terminal's view: each host event a person needs, in words (core's `narrate`), with the
/// time of day. Ends with the event stream.
async fn view(mut events: tokio::sync::broadcast::Receiver<String>) {
    use std::io::Write as _;
    let mut narrator = keyless_core::narrate::Narrator::new();
    loop {
        let text = match events.recv().await {
            Ok(text) => text,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                println!("{}  ({n} events not shown: too many at once)", now());
                continue;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Ok(event) = serde_json::from_str::<keyless_core::api::HostEvent>(&text) else {
            continue;
        };
        if let Some(line) = narrator.line(&event) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}  {line}", now());
            let _ = out.flush();
        }
    }
}

/// The time of day for the view's lines.
fn now() -> String {
    chrono::Local::now().format("%H:%M:%S").to_string()
}

/// Why `serve` did not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Another `serve` runs for this workspace (the words say where).
    #[error("{0}")]
    Claimed(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Ctrl-C and SIGTERM, registered when [`Signals::install`] is called (not when first awaited):
/// a signal that arrives as soon as the banner is printed is already caught, never the default
/// action.
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    /// # Errors
    /// When the handlers cannot be installed.
    fn install() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                int: signal(SignalKind::interrupt())?,
                term: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// The next Ctrl-C or SIGTERM.
    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {},
            _ = self.term.recv() => {},
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
