//! What the release's install script put on this machine (the binary, the folder with the
//! extension and the dashboard), recorded in the user's config folder so that
//! `keyless-host install --uninstall` takes it back. Only what was recorded is removed, and only
//! when it still looks like keyless's own: a file named `keyless-host`, a folder holding
//! `extension/manifest.json`.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Serialize, Deserialize)]
struct Installed {
    #[serde(default)]
    binary: Option<PathBuf>,
    #[serde(default)]
    share: Option<PathBuf>,
}

fn record_path() -> Option<PathBuf> {
    crate::dirs::user_config_dir().map(|d| d.join("installed.json"))
}

/// Records the installed binary and share folder (absolute paths).
///
/// # Errors
/// When there is no config folder, a path is not absolute, or the record cannot be written.
pub fn record(binary: Option<&Path>, share: Option<&Path>) -> std::io::Result<PathBuf> {
    let path = record_path()
        .ok_or_else(|| std::io::Error::other("no user config dir (set HOME or XDG_CONFIG_HOME)"))?;
    for p in binary.iter().chain(share.iter()) {
        if !p.is_absolute() {
            return Err(std::io::Error::other(format!(
                "{} is not an absolute path",
                p.display()
            )));
        }
    }
    let rec = Installed {
        binary: binary.map(Path::to_path_buf),
        share: share.map(Path::to_path_buf),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let json = serde_json::to_vec_pretty(&rec).map_err(std::io::Error::other)?;
    crate::exec::workspace::write_atomic(&path, &json)?;
    Ok(path)
}

/// Removes what the install script recorded; returns a line per thing removed or kept.
#[must_use]
pub fn remove_installed() -> Vec<String> {
    let mut out = Vec::new();
    let Some(path) = record_path() else {
        return out;
    };
    let Some(rec) = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Installed>(&b).ok())
    else {
        return out;
    };
    if let Some(b) = &rec.binary {
        if b.file_name().is_some_and(|n| n == "keyless-host")
            && std::fs::symlink_metadata(b).is_ok_and(|m| m.is_file())
        {
            match std::fs::remove_file(b) {
                Ok(()) => out.push(format!("removed {}", b.display())),
                Err(e) => out.push(format!("could not remove {}: {e}", b.display())),
            }
        }
    }
    if let Some(s) = &rec.share {
        if s.join("extension").join("manifest.json").is_file()
            && std::fs::symlink_metadata(s).is_ok_and(|m| m.is_dir())
        {
            match std::fs::remove_dir_all(s) {
                Ok(()) => out.push(format!(
                    "removed {} (the extension and the dashboard; remove the extension from chrome://extensions too)",
                    s.display()
                )),
                Err(e) => out.push(format!("could not remove {}: {e}", s.display())),
            }
        }
    }
    let _ = std::fs::remove_file(&path);
    if let Some(dir) = crate::dirs::user_config_dir() {
        out.push(format!(
            "kept your settings and pairings in {} (remove that folder to forget them too)",
            dir.display()
        ));
    }
    out
}
