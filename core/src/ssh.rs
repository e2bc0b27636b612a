//! SSH connections (the pieces specification's `SshExec`, `SshUpload`, `SshDownload`): the registry's records and
//! the one decision of whether a movement may use a connection, as the seed's
//! `allowed_ssh_connections` table says, with the ownership and grant checks it asks for.
//! Pure: the host keeps the registry and runs OpenSSH.

use crate::diag::Code;
use serde::{Deserialize, Serialize};

/// One registered connection.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// A lowercase UUID (the seed's connection-id form).
    pub id: String,
    /// A name for people (`prod-web`), unique in the registry.
    pub name: String,
    pub host: String,
    pub user: String,
    pub port: u16,
    /// The local account that registered it.
    pub owner: String,
    /// The pieces that may use it (`*`: any piece).
    pub grants: Vec<String>,
}

/// Why a movement may not use a connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The seed's `no_allowed_connections_declared`: the movement's `allowed_ssh_connections` is
    /// missing or empty.
    #[error(
        "no_allowed_connections_declared: movement \"{0}\" declares no allowed_ssh_connections"
    )]
    NotDeclared(String),
    #[error("no connection \"{0}\" is registered (keyless-host ssh list)")]
    Unknown(String),
    #[error("movement \"{movement}\" does not allow connection {id} ({name}); allowed: {allowed}")]
    NotAllowed {
        movement: String,
        id: String,
        name: String,
        allowed: String,
    },
    #[error("connection {name} belongs to {owner}, not to {user}")]
    NotOwner {
        name: String,
        owner: String,
        user: String,
    },
    #[error("connection {name} is not granted to piece \"{piece}\" (keyless-host ssh grant {name} --piece {piece})")]
    NotGranted { name: String, piece: String },
}

impl Refusal {
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::NotDeclared(_) => Code::SshNotDeclared,
            Self::Unknown(_) => Code::SshUnknown,
            Self::NotAllowed { .. } => Code::SshNotAllowed,
            Self::NotOwner { .. } => Code::SshNotOwner,
            Self::NotGranted { .. } => Code::SshNotGranted,
        }
    }
}

/// Whether `text` has the seed's connection-id form: `*`, or lowercase hex and `-`, 8 or more.
#[must_use]
pub fn is_connection_id(text: &str) -> bool {
    text == "*"
        || (text.len() >= 8
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-'))
}

/// A new connection id from 16 random bytes: a lowercase UUID v4.
#[must_use]
pub fn uuid_from(bytes: [u8; 16]) -> String {
    let mut b = bytes;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Whether `key` can name a connection on an SSH command's line: an id or a registered name
/// (letters, digits, `. - _`, not starting with `-`).
#[must_use]
pub fn valid_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && !key.starts_with('-')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// A remote path an SSH copy may name: not empty, at most 1024 bytes, no control characters,
/// and not starting with `-` (never read as an option).
///
/// # Errors
/// Why it is refused.
pub fn check_remote_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.len() > 1024 {
        return Err("the remote path is empty or longer than 1024 bytes".into());
    }
    if path.starts_with('-') {
        return Err("a remote path may not start with -".into());
    }
    if path.chars().any(char::is_control) {
        return Err("the remote path has a control character".into());
    }
    Ok(())
}

/// `text` as one word for a POSIX shell on the remote side ([`crate::text::shell_word`]).
#[must_use]
pub fn shell_quote(text: &str) -> String {
    crate::text::shell_word(text)
}

/// The registry's connection named by `key` (its id or its name).
#[must_use]
pub fn find<'a>(registry: &'a [Connection], key: &str) -> Option<&'a Connection> {
    registry.iter().find(|c| c.id == key || c.name == key)
}

/// The connections movement `movement` of piece `piece` may use for `user` (every check of
/// [`permit`] passed), in registry order: what the model is told it may name.
#[must_use]
pub fn usable<'a>(
    registry: &'a [Connection],
    piece: &str,
    movement: &str,
    allowed: Option<&[String]>,
    user: &str,
) -> Vec<&'a Connection> {
    registry
        .iter()
        .filter(|c| permit(registry, piece, movement, allowed, &c.id, user).is_ok())
        .collect()
}

/// Whether movement `movement` of piece `piece`, declaring `allowed`, may use the connection
/// `key` for `user`: declared, listed (or `*`), the user's own, and granted to the piece.
///
/// # Errors
/// The first check that fails, with its code.
pub fn permit<'a>(
    registry: &'a [Connection],
    piece: &str,
    movement: &str,
    allowed: Option<&[String]>,
    key: &str,
    user: &str,
) -> Result<&'a Connection, Refusal> {
    let allowed = match allowed {
        Some(a) if !a.is_empty() => a,
        _ => return Err(Refusal::NotDeclared(movement.to_string())),
    };
    let c = find(registry, key).ok_or_else(|| Refusal::Unknown(key.to_string()))?;
    if !allowed.iter().any(|a| a == "*" || *a == c.id) {
        return Err(Refusal::NotAllowed {
            movement: movement.to_string(),
            id: c.id.clone(),
            name: c.name.clone(),
            allowed: allowed.join(", "),
        });
    }
    if c.owner != user {
        return Err(Refusal::NotOwner {
            name: c.name.clone(),
            owner: c.owner.clone(),
            user: user.to_string(),
        });
    }
    if !c.grants.iter().any(|g| g == "*" || g == piece) {
        return Err(Refusal::NotGranted {
            name: c.name.clone(),
            piece: piece.to_string(),
        });
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(grants: &[&str]) -> Connection {
        Connection {
            id: "6f9619ff-8b86-4011-b42d-00c04fc964ff".into(),
            name: "prod".into(),
            host: "127.0.0.1".into(),
            user: "deploy".into(),
            port: 22,
            owner: "alice".into(),
            grants: grants.iter().map(|g| (*g).to_string()).collect(),
        }
    }

    /// Every row of the seed's `allowed_ssh_connections` table, then ownership and grants.
    #[test]
    fn the_seeds_table_and_the_checks_after_it() {
        let reg = [conn(&["ssh-ops"])];
        let id = reg[0].id.clone();
        let list = |l: &[&str]| l.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        let code =
            |r: Result<&Connection, Refusal>| r.map(|c| c.name.clone()).map_err(|e| e.code());
        assert_eq!(
            code(permit(&reg, "ssh-ops", "ops", None, &id, "alice")),
            Err(Code::SshNotDeclared)
        );
        assert_eq!(
            code(permit(&reg, "ssh-ops", "ops", Some(&[]), &id, "alice")),
            Err(Code::SshNotDeclared)
        );
        assert_eq!(
            code(permit(
                &reg,
                "ssh-ops",
                "ops",
                Some(&list(&[&id])),
                "prod",
                "alice"
            )),
            Ok("prod".into())
        );
        assert_eq!(
            code(permit(
                &reg,
                "ssh-ops",
                "ops",
                Some(&list(&["*"])),
                &id,
                "alice"
            )),
            Ok("prod".into())
        );
        assert_eq!(
            code(permit(
                &reg,
                "ssh-ops",
                "ops",
                Some(&list(&["00000000-0000"])),
                &id,
                "alice"
            )),
            Err(Code::SshNotAllowed)
        );
        assert_eq!(
            code(permit(
                &reg,
                "ssh-ops",
                "ops",
                Some(&list(&["*"])),
                "nope",
                "alice"
            )),
            Err(Code::SshUnknown)
        );
        // '*' is still subject to ownership and grants (defense in depth).
        assert_eq!(
            code(permit(
                &reg,
                "ssh-ops",
                "ops",
                Some(&list(&["*"])),
                &id,
                "mallory"
            )),
            Err(Code::SshNotOwner)
        );
        assert_eq!(
            code(permit(
                &reg,
                "other",
                "ops",
                Some(&list(&["*"])),
                &id,
                "alice"
            )),
            Err(Code::SshNotGranted)
        );
        let e = permit(&reg, "ssh-ops", "ops", None, &id, "alice").expect_err("refused");
        assert!(e.to_string().starts_with("no_allowed_connections_declared"));
    }

    #[test]
    fn ids_are_lowercase_uuids_in_the_seeds_form() {
        let id = uuid_from([0xAB; 16]);
        assert_eq!(id, "abababab-abab-4bab-abab-abababababab");
        assert!(is_connection_id(&id) && is_connection_id("*"));
        assert!(!is_connection_id("ABABABAB") && !is_connection_id("abc"));
    }
}
