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

/// The files git reads its global and system config from, whether or not they exist yet: a link
/// planted in one's place counts before it holds a setting.
#[must_use]
pub fn git_config_candidates() -> Vec<PathBuf> {
    let mut v = Vec::new();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for var in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
        if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
            v.push(PathBuf::from(p));
        }
    }
    if let Some(h) = &home {
        v.push(h.join(".gitconfig"));
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(x) = xdg {
        v.push(x.join("git").join("config"));
    }
    v.push(PathBuf::from("/etc/gitconfig"));
    v
}

/// One of the user's own configuration files that resolves into a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// Where the user's tools look for it (`~/.gitconfig`).
    pub home_path: PathBuf,
    /// Where it really is, workspace-relative (`dotfiles/gitconfig`); for a linked folder, the
    /// folder.
    pub rel: String,
}

/// The user's configuration files ([`keyless_core::policy::persistence::HOME_CONFIG`] under
/// `$HOME`, and git's config files) whose real place is inside `workspace`: a dotfiles
/// repository the user links their home to.
#[must_use]
pub fn linked_user_config(workspace: &Path) -> Vec<Linked> {
    let real_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    let mut candidates: Vec<PathBuf> = keyless_core::policy::persistence::HOME_CONFIG
        .iter()
        .map(|rel| home.join(rel))
        .chain(git_config_candidates())
        .collect();
    candidates.extend(included_config(&home));
    let mut out: Vec<Linked> = Vec::new();
    for p in candidates {
        let real = through_links(&p);
        if let Ok(rel) = real.strip_prefix(&real_ws) {
            let rel = rel.display().to_string();
            if !rel.is_empty() && !out.iter().any(|l| l.rel == rel) {
                out.push(Linked { home_path: p, rel });
            }
        }
    }
    out
}

/// What `serve` and `run` say at start when the user's own configuration files are links into
/// the workspace: which ones, and what keyless does about them.
#[must_use]
pub fn linked_notice(workspace: &Path) -> Option<String> {
    let linked = linked_user_config(workspace);
    if linked.is_empty() {
        return None;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let list: Vec<String> = linked
        .iter()
        .map(|l| {
            let shown = home
                .as_ref()
                .and_then(|h| l.home_path.strip_prefix(h).ok())
                .map_or_else(
                    || l.home_path.display().to_string(),
                    |r| format!("~/{}", r.display()),
                );
            format!("{shown} → {}", l.rel)
        })
        .collect();
    Some(format!(
        "your own configuration files are links into this workspace: {}. keyless treats them as yours: the model cannot write them (file commands are refused, commands see them read-only and what a command changes is put back), and keyless does not push while git or ssh would read one.",
        list.join(", ")
    ))
}

/// `p` with its links followed even where the last one leads nowhere yet (a `~/.bashrc` that
/// links to a workspace file the model has not written is the model's to write), then resolved as
/// far as it exists.
#[must_use]
pub fn through_links(p: &Path) -> PathBuf {
    let mut at = p.to_path_buf();
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&at) else {
            break;
        };
        at = if target.is_absolute() {
            target
        } else {
            at.parent().map_or(target.clone(), |d| d.join(&target))
        };
    }
    real_path(&at)
}

/// The files the user's git and ssh configuration pull in (`[include]` and `[includeIf]` paths,
/// ssh's `Include`), a few levels deep: they are the user's configuration as much as the files
/// that name them.
fn included_config(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut queue: Vec<(PathBuf, bool)> = git_config_candidates()
        .into_iter()
        .map(|p| (p, true))
        .collect();
    queue.push((home.join(".ssh").join("config"), false));
    let mut seen = 0;
    while let Some((file, git)) = queue.pop() {
        seen += 1;
        if seen > 32 {
            break;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut in_include = false;
        for line in text.lines() {
            let t = line.trim();
            let value = if git {
                if t.starts_with('[') {
                    let section = t.trim_start_matches('[').to_ascii_lowercase();
                    in_include = section.starts_with("include");
                    continue;
                }
                match t.split_once('=') {
                    Some((k, v)) if in_include && k.trim().eq_ignore_ascii_case("path") => v.trim(),
                    _ => continue,
                }
            } else {
                match t.split_once(char::is_whitespace) {
                    Some((k, v)) if k.eq_ignore_ascii_case("include") => v.trim(),
                    _ => continue,
                }
            };
            for word in value.split_whitespace() {
                let word = word.trim_matches('"');
                let path = if let Some(rest) = word.strip_prefix("~/") {
                    home.join(rest)
                } else if Path::new(word).is_absolute() {
                    PathBuf::from(word)
                } else if git {
                    base.join(word)
                } else {
                    home.join(".ssh").join(word)
                };
                // A glob names files of its folder: the folder counts.
                let path = if word.contains(['*', '?', '[']) {
                    path.parent().map(Path::to_path_buf).unwrap_or(path)
                } else {
                    path
                };
                out.push(path.clone());
                queue.push((path, git));
            }
        }
    }
    out
}
