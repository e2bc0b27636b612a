//! Where the user's own keyless files live. A leaf: the configuration, the pairing, the sandbox
//! and the snapshot all ask it, and it asks nothing of them.

use std::path::{Path, PathBuf};

/// The native-messaging host name the extension asks for.
pub const HOST_NAME: &str = "dev.keyless.host";

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

/// The folders a browser reads user-level native-messaging hosts from.
#[must_use]
pub fn browser_dirs() -> Vec<(&'static str, PathBuf)> {
    let mut v = Vec::new();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    if cfg!(target_os = "macos") {
        if let Some(h) = &home {
            let base = h.join("Library").join("Application Support");
            v.push(("chrome", base.join("Google/Chrome/NativeMessagingHosts")));
            v.push(("chromium", base.join("Chromium/NativeMessagingHosts")));
            v.push(("firefox", base.join("Mozilla/NativeMessagingHosts")));
        }
    } else if let Some(c) = config {
        v.push(("chromium", c.join("chromium/NativeMessagingHosts")));
        v.push(("chrome", c.join("google-chrome/NativeMessagingHosts")));
        v.push((
            "chrome-beta",
            c.join("google-chrome-beta/NativeMessagingHosts"),
        ));
        v.push((
            "brave",
            c.join("BraveSoftware/Brave-Browser/NativeMessagingHosts"),
        ));
    }
    if !cfg!(target_os = "macos") {
        if let Some(h) = &home {
            // Firefox and Firefox ESR share one folder. (The snap and the flatpak start a native
            // host inside their sandbox, where keyless-host and its config folder are not the
            // user's: not registered.)
            v.push(("firefox", h.join(".mozilla/native-messaging-hosts")));
        }
    }
    v
}

/// The user's keyless config folder (`$XDG_CONFIG_HOME/keyless`).
#[must_use]
pub fn user_config_dir() -> Option<PathBuf> {
    user_config_path().and_then(|p| p.parent().map(Path::to_path_buf))
}

/// `p` with every symlink of its longest existing part resolved, the rest appended: the real
/// place of a path that may not exist yet.
#[must_use]
pub fn real_path(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = p.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            return rest
                .iter()
                .rev()
                .fold(real, |acc, r: &std::ffi::OsString| acc.join(r));
        }
        match (
            at.file_name().map(std::ffi::OsStr::to_os_string),
            at.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// Everything of keyless's own that lives outside a workspace and that nothing the model writes
/// may change, wherever it lies (a workspace of `~` holds the config folder): the user's config
/// folder, the host binary (as started and as it runs), and the native-messaging manifests,
/// which a browser starts as a program. Real paths.
#[must_use]
pub fn own_locations() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    v.extend(user_config_dir());
    v.extend(std::env::current_exe().ok());
    v.extend(std::fs::read_link("/proc/self/exe").ok());
    v.extend(
        browser_dirs()
            .into_iter()
            .map(|(_, d)| d.join(format!("{}.json", HOST_NAME))),
    );
    let mut real: Vec<PathBuf> = v.iter().map(|p| real_path(p)).collect();
    real.sort();
    real.dedup();
    real
}
