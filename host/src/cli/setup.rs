//! Setting up this machine: `keyless-host pair`, `install` and `config`.

use super::args::WorkspaceDir;
use crate::config::{approve_workspace_file, load_config, Loaded};
use crate::error::HostError;
use clap::Subcommand;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn pair_cmd(reset: bool) -> Result<ExitCode, HostError> {
    let path = crate::pairing::Pairings::default_path().ok_or_else(|| {
        HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into())
    })?;
    let p = crate::pairing::Pairings::new(path);
    if reset {
        let n = p.reset().map_err(|source| HostError::Read {
            path: p.path().display().to_string(),
            source,
        })?;
        println!(
            "revoked {n} paired extension(s), the local token and every unused code ({}); a running serve keeps its token until it restarts; pair again with the code keyless-host serve or keyless-host pair prints",
            p.path().display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let code = p.issue_code().map_err(|source| HostError::Read {
        path: p.path().display().to_string(),
        source,
    })?;
    let minutes = crate::pairing::ISSUED_CODE_SECONDS / 60;
    println!("pairing code: {code}");
    match crate::native::running_serve() {
        Ok(info) => println!(
            "  for keyless-host serve on http://127.0.0.1:{} (workspace {}); single use, valid for {minutes} minutes.",
            info.port, info.workspace
        ),
        Err(why) => println!(
            "  {why}. The code works for a serve started in the next {minutes} minutes; single use."
        ),
    }
    println!(
        "  Enter it in the keyless extension's popup. (After keyless-host install, the popup pairs by itself.)"
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) fn install_cmd(
    profiles: &[PathBuf],
    only_profiles: bool,
    extra_ids: Vec<String>,
    uninstall: bool,
    record: (Option<PathBuf>, Option<PathBuf>),
) -> Result<ExitCode, HostError> {
    let mut ids = vec![crate::native::EXTENSION_ID.to_string()];
    for id in extra_ids {
        if !keyless_core::pairing::is_chrome_id(&id) {
            return Err(HostError::Usage(format!(
                "{id} is not a Chrome extension id (32 letters a-p)"
            )));
        }
        ids.push(id);
    }
    // A --profile folder is a Chrome-based browser's profile.
    let mut dirs: Vec<(String, PathBuf)> = profiles
        .iter()
        .map(|p| ("chrome profile".to_string(), p.join("NativeMessagingHosts")))
        .collect();
    let mut out = io::stdout().lock();
    let known = crate::native::browser_dirs();
    if uninstall {
        // Every place keyless may have registered, whichever browsers are here now.
        if !only_profiles {
            dirs.extend(known.into_iter().map(|(b, d)| (b.to_string(), d)));
        }
        let folders: Vec<PathBuf> = dirs.into_iter().map(|(_, d)| d).collect();
        for f in crate::native::uninstall(&folders) {
            writeln!(out, "removed {}", f.display()).map_err(HostError::Write)?;
        }
        for line in crate::install_record::remove_installed() {
            writeln!(out, "{line}").map_err(HostError::Write)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !only_profiles {
        let (present, absent): (Vec<_>, Vec<_>) = known
            .into_iter()
            .partition(|(b, d)| crate::native::browser_present(b, d));
        if present.is_empty() && profiles.is_empty() {
            writeln!(
                out,
                "No Chrome, Chromium, Brave or Firefox found (no program on PATH, no profile folder): registering with each of them, so the first one you install finds keyless-host."
            )
            .map_err(HostError::Write)?;
            dirs.extend(absent.into_iter().map(|(b, d)| (b.to_string(), d)));
        } else {
            let names: Vec<&str> = absent.iter().map(|(b, _)| *b).collect();
            if !names.is_empty() {
                writeln!(
                    out,
                    "not registered with {} (not installed here; run keyless-host install again after installing one)",
                    names.join(", ")
                )
                .map_err(HostError::Write)?;
            }
            dirs.extend(present.into_iter().map(|(b, d)| (b.to_string(), d)));
        }
    }
    let written = crate::native::install(&dirs, &ids).map_err(|source| HostError::Read {
        path: "NativeMessagingHosts".into(),
        source,
    })?;
    if record.0.is_some() || record.1.is_some() {
        crate::install_record::record(record.0.as_deref(), record.1.as_deref()).map_err(
            |source| HostError::Read {
                path: "installed.json".into(),
                source,
            },
        )?;
    }
    for f in written {
        writeln!(
            out,
            "registered {} in {}",
            crate::native::HOST_NAME,
            f.display()
        )
        .map_err(HostError::Write)?;
    }
    writeln!(
        out,
        "The keyless extension ({}) now pairs with a running keyless-host serve when you open its popup; no code to type.",
        ids.join(", ")
    )
    .map_err(HostError::Write)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn show_config(
    workspace: &std::path::Path,
    approve: bool,
) -> Result<ExitCode, HostError> {
    if approve {
        let file = approve_workspace_file(workspace)?;
        println!("approved {file}: its settings apply until the file changes");
    }
    let Loaded {
        cfg,
        files: used,
        ignored,
    } = load_config(workspace)?;
    let mut out = io::stdout().lock();
    let files: Vec<String> = used.iter().map(|p| p.display().to_string()).collect();
    let w = |out: &mut io::StdoutLock<'_>| -> io::Result<()> {
        writeln!(
            out,
            "configuration files: {}",
            if files.is_empty() {
                "none (defaults)".to_string()
            } else {
                files.join(", ")
            }
        )?;
        write!(out, "{}", cfg.render())?;
        for i in &ignored {
            writeln!(out, "not applied: {i}")?;
        }
        Ok(())
    };
    w(&mut out).map_err(HostError::Write)?;
    Ok(ExitCode::SUCCESS)
}

/// `keyless-host allow`.
#[derive(Debug, Subcommand)]
pub(super) enum AllowCmd {
    /// List the workspace's rules, numbered.
    List {
        #[command(flatten)]
        workspace: WorkspaceDir,
    },
    /// Remove a rule by its number in `allow list`, or by its exact text.
    Remove {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// The rule's number or text.
        rule: String,
    },
}

/// `keyless-host allow list|remove`.
///
/// # Errors
/// A rule that is not there, or the rules file cannot be written.
pub(super) fn allow_cmd(c: AllowCmd) -> Result<ExitCode, HostError> {
    match c {
        AllowCmd::List { workspace } => {
            let rules = crate::always::rules(&workspace.dir);
            let shown = crate::dirs::real_path(&workspace.dir);
            if rules.is_empty() {
                println!(
                    "No \"always allow\" rules for {}. Add one at a confirmation: [a] or [l] on the terminal, \"Always allow…\" in the overlay or the dashboard.",
                    shown.display()
                );
            } else {
                println!("Always allowed in {}:", shown.display());
                for (i, r) in rules.iter().enumerate() {
                    let kind = match r.kind {
                        keyless_core::policy::always::RuleKind::Exact => "exactly",
                        keyless_core::policy::always::RuleKind::Like => "like",
                    };
                    println!(
                        "  {}. {kind:<7} {}   (up to {})",
                        i + 1,
                        super::terminal::shown(&r.text),
                        r.tier
                    );
                }
                if let Some(p) = crate::always::path() {
                    println!(
                        "(\"up to\": the highest risk tier a rule lets run; a line rated higher is asked again.\n kept in {}; `keyless-host allow remove N` takes one back)",
                        p.display()
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        AllowCmd::Remove { workspace, rule } => {
            let gone = crate::always::remove(&workspace.dir, &rule).map_err(HostError::Usage)?;
            for r in gone {
                println!("removed: {}", r.text);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
