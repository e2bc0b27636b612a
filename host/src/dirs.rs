//! Where the user's own keyless files live. A leaf: the configuration, the pairing, the sandbox
//! and the snapshot all ask it, and it asks nothing of them.

use std::path::PathBuf;

/// The user's keyless.json: `$XDG_CONFIG_HOME/keyless`, else `~/.config/keyless` (`%APPDATA%\keyless`
/// on Windows).
#[must_use]
pub fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("APPDATA").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("keyless").join("keyless.json"))
}
