//! `keyless-host serve`: the localhost API for the extension and the dashboard.

use super::args::{ChosenWorkspace, ModeOverride};
use crate::config::{exec_settings, load_config, warn_ignored, Loaded};
use crate::error::HostError;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = crate::server::DEFAULT_PORT)]
    port: u16,
    #[command(flatten)]
    workspace: ChosenWorkspace,
    #[command(flatten)]
    mode: ModeOverride,
    /// The built dashboard folder (default: `../share/keyless/www` from the binary, where the
    /// release installs it, else `www` beside the binary's target folder, where
    /// `cargo xtask build` puts it).
    #[arg(long)]
    www: Option<PathBuf>,
    /// Print the full log (every request, every batch) on stderr, not only warnings. The terminal
    /// shows what happens in words either way.
    #[arg(long, short = 'v')]
    verbose: bool,
}

pub(super) fn serve_cmd(a: ServeArgs) -> Result<ExitCode, HostError> {
    let workspace = a.workspace.choose()?;
    crate::workspace_choice::offer_git_init(&workspace);
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&workspace)?;
    warn_ignored(&ignored);
    if let Some(m) = a.mode.mode {
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
    let www = a.www.or_else(default_www);
    crate::server::serve(crate::server::ServeOptions {
        port,
        // Servers' forms are shown in the overlay and the dashboard: elicitation is offered.
        exec: exec_settings(&cfg, true, &workspace, true),
        workspace,
        pairings,
        www,
        verbose: a.verbose,
    })
    .map(|()| ExitCode::SUCCESS)
    .map_err(|e| match e {
        crate::server::ServeError::Claimed(message) => HostError::Coded {
            code: keyless_core::Code::ConfigValidation,
            message,
        },
        crate::server::ServeError::Io(source) => HostError::Bind { port, source },
    })
}

/// Where the dashboard is: installed (`~/.local/bin/keyless-host` → `~/.local/share/keyless/www`)
/// or built (`target/release/keyless-host` → `target/www`).
fn default_www() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?;
    let prefix = bin.parent()?;
    let installed = prefix.join("share").join("keyless").join("www");
    if installed.join("index.html").is_file() {
        return Some(installed);
    }
    Some(prefix.join("www"))
}
