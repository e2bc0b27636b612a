//! Setting up this machine: `keyless-host pair`, `install` and `config`.

use crate::config::{approve_workspace_file, load_config, Loaded};
use crate::error::HostError;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn pair_cmd(reset: bool) -> Result<ExitCode, HostError> {
    let path = crate::pairing::Pairings::default_path().ok_or_else(|| {
        HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into())
    })?;
    let p = crate::pairing::Pairings::new(path);
    if !reset {
        return Err(HostError::Usage("keyless-host pair --reset revokes every paired extension; pairing itself happens through the code `serve` prints".into()));
    }
    let n = p.reset().map_err(|source| HostError::Read {
        path: p.path().display().to_string(),
        source,
    })?;
    println!("revoked {n} paired extension(s) ({})", p.path().display());
    Ok(ExitCode::SUCCESS)
}

pub(super) fn install_cmd(
    profiles: &[PathBuf],
    only_profiles: bool,
    extra_ids: Vec<String>,
    uninstall: bool,
) -> Result<ExitCode, HostError> {
    let mut ids = vec![crate::native::EXTENSION_ID.to_string()];
    for id in extra_ids {
        if !crate::pairing::valid_extension_id(&id) {
            return Err(HostError::Usage(format!(
                "{id} is not a Chrome extension id (32 letters a-p)"
            )));
        }
        ids.push(id);
    }
    let mut dirs: Vec<PathBuf> = profiles
        .iter()
        .map(|p| p.join("NativeMessagingHosts"))
        .collect();
    if !only_profiles {
        dirs.extend(crate::native::browser_dirs().into_iter().map(|(_, d)| d));
    }
    let mut out = io::stdout().lock();
    if uninstall {
        for f in crate::native::uninstall(&dirs) {
            writeln!(out, "removed {}", f.display()).map_err(HostError::Write)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let written = crate::native::install(&dirs, &ids).map_err(|source| HostError::Read {
        path: "NativeMessagingHosts".into(),
        source,
    })?;
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
