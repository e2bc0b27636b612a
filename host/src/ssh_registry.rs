//! The SSH connection registry: `<config>/keyless/ssh.json` (mode 0600), kept by
//! `keyless-host ssh add|list|remove|grant`. Which movement may use which connection is core's
//! decision (`keyless_core::ssh::permit`).

use keyless_core::ssh::{uuid_from, Connection};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    connections: Vec<Connection>,
}

/// Where the registry is.
#[must_use]
pub fn path() -> Option<PathBuf> {
    crate::dirs::user_config_path().map(|p| p.with_file_name("ssh.json"))
}

/// The local account: the owner of what it registers.
#[must_use]
pub fn current_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| format!("uid:{}", nix::unistd::getuid()))
}

/// The registered connections.
///
/// # Errors
/// A registry that cannot be read or is not valid JSON.
pub fn load() -> Result<Vec<Connection>, String> {
    let Some(p) = path() else {
        return Ok(Vec::new());
    };
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str::<File>(&text)
            .map(|f| f.connections)
            .map_err(|e| format!("{}: {e}", p.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

/// Writes the registry, readable by the user only.
///
/// # Errors
/// When it cannot be written.
pub fn save(connections: &[Connection]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let p = path().ok_or("no config folder (set HOME or XDG_CONFIG_HOME)")?;
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_vec_pretty(&File {
        connections: connections.to_vec(),
    })
    .map_err(|e| e.to_string())?;
    crate::exec::workspace::write_atomic(&p, &text).map_err(|e| format!("{}: {e}", p.display()))?;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// A new connection of the current user, granted to no piece yet.
///
/// # Errors
/// A bad name, host or user, a name already registered, or no randomness.
pub fn add(
    list: &mut Vec<Connection>,
    name: &str,
    host: &str,
    user: &str,
    port: u16,
) -> Result<Connection, String> {
    let word = |s: &str| {
        !s.is_empty()
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    };
    if !word(name) || !word(host) || !word(user) {
        return Err(
            "name, host and user are letters, digits, '.', '-' and '_' (not starting with '-')"
                .into(),
        );
    }
    if keyless_core::ssh::find(list, name).is_some() {
        return Err(format!(
            "a connection named \"{name}\" is already registered"
        ));
    }
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
    let c = Connection {
        id: uuid_from(bytes),
        name: name.to_string(),
        host: host.to_string(),
        user: user.to_string(),
        port,
        owner: current_user(),
        grants: Vec::new(),
    };
    list.push(c.clone());
    Ok(c)
}
