//! `keyless-host serve`: the localhost API for the extension and the dashboard.

use super::args::MODE;
use crate::config::{exec_settings, load_config, warn_ignored, Loaded};
use crate::error::HostError;
use clap::Args;
use keyless_core::Mode;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = crate::server::DEFAULT_PORT)]
    port: u16,
    /// The workspace the extension's sessions run in.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Commands.Mode (default: keyless.json, else ask).
    #[arg(long, value_parser = MODE)]
    mode: Option<Mode>,
    /// The built dashboard folder (default: `www` beside the binary's target folder).
    #[arg(long)]
    www: Option<PathBuf>,
}

pub(super) fn serve_cmd(a: ServeArgs) -> Result<ExitCode, HostError> {
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&a.workspace)?;
    warn_ignored(&ignored);
    if let Some(m) = a.mode {
        cfg.set(
            "Commands.Mode",
            &serde_json::json!(m.as_str()),
            "command line",
        )?;
    }
    let pairings =
        crate::pairing::Pairings::new(crate::pairing::Pairings::default_path().ok_or_else(
            || HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into()),
        )?);
    let port = a.port;
    // target/release/keyless-host → target/www, where cargo xtask build puts the dashboard.
    let www = a.www.or_else(|| {
        std::env::current_exe().ok().and_then(|e| {
            e.parent()
                .and_then(std::path::Path::parent)
                .map(|t| t.join("www"))
        })
    });
    crate::server::serve(crate::server::ServeOptions {
        port,
        exec: exec_settings(&cfg, true, &a.workspace),
        workspace: a.workspace,
        pairings,
        www,
    })
    .map(|()| ExitCode::SUCCESS)
    .map_err(|source| HostError::Bind { port, source })
}
