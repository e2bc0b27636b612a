//! Pairing: `serve` prints a one-time code; the extension exchanges it for a long random token
//! bound to its extension id. Only SHA-256 hashes of tokens are stored, in the user's config dir
//! (`keyless/pairing.json`, mode 0600). `keyless-host pair --reset` revokes every token.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A paired client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    pub extension_id: String,
    pub token_sha256: String,
}

/// A code `keyless-host pair` issued for the running `serve`: only its hash, until it expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedCode {
    pub code_sha256: String,
    pub expires_unix: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    clients: Vec<Client>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    codes: Vec<IssuedCode>,
}

/// How long a code from `keyless-host pair` stays valid.
pub const ISSUED_CODE_SECONDS: u64 = 10 * 60;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Random bytes as lowercase hex.
///
/// # Errors
/// When the OS has no randomness to give.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A short pairing code such as `K7QM-2XD9` (no look-alike characters).
///
/// # Errors
/// When the OS has no randomness to give.
pub fn pairing_code() -> std::io::Result<String> {
    let mut buf = [0u8; keyless_core::pairing::LEN];
    getrandom::fill(&mut buf).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(keyless_core::pairing::code_from(buf))
}

#[must_use]
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Wrong pairing codes allowed before pairing locks.
pub const FREE_ATTEMPTS: u32 = 3;

/// How long pairing stays locked after `failures` wrong codes in a row: nothing for the first
/// [`FREE_ATTEMPTS`], then 2 s, doubling with every further wrong code, at most 10 minutes.
#[must_use]
pub fn lock_seconds(failures: u32) -> u64 {
    if failures < FREE_ATTEMPTS {
        return 0;
    }
    let n = failures - FREE_ATTEMPTS;
    (2u64 << n.min(16)).min(600)
}

/// Wrong pairing codes in a row, and until when pairing is locked.
#[derive(Debug, Default)]
pub struct Throttle {
    failures: u32,
    locked_until: Option<std::time::Instant>,
}

impl Throttle {
    /// Seconds left of a lock, if pairing is locked at `now`.
    #[must_use]
    pub fn locked(&self, now: std::time::Instant) -> Option<u64> {
        self.locked_until
            .filter(|t| *t > now)
            .map(|t| t.duration_since(now).as_secs().max(1))
    }

    /// Records a wrong code; returns the lock it starts, in seconds (0: none yet).
    pub fn failed(&mut self, now: std::time::Instant) -> u64 {
        self.failures += 1;
        let secs = lock_seconds(self.failures);
        if secs > 0 {
            self.locked_until = Some(now + std::time::Duration::from_secs(secs));
        }
        secs
    }

    #[must_use]
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// A right code clears the count.
    pub fn succeeded(&mut self) {
        *self = Self::default();
    }
}

/// Compares two strings in time independent of where they differ.
#[must_use]
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The client id prefix of `keyless-host as run` processes' tokens.
pub const PROGRAM_CLIENT_PREFIX: &str = "as-run-";

/// Whether a process runs (its tokens are kept while it does).
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        i32::try_from(pid).is_ok_and(|p| {
            !matches!(
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None),
                Err(nix::errno::Errno::ESRCH)
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// The paired clients, kept on disk.
#[derive(Debug, Clone)]
pub struct Pairings {
    path: PathBuf,
}

impl Pairings {
    #[must_use]
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// `<user config dir>/keyless/pairing.json`.
    #[must_use]
    pub fn default_path() -> Option<PathBuf> {
        crate::dirs::user_config_path().map(|p| p.with_file_name("pairing.json"))
    }

    fn read(&self) -> File {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn write(&self, f: &File) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let json = serde_json::to_vec_pretty(f).map_err(std::io::Error::other)?;
        write_private(&self.path, &json)
    }

    /// Adds a client and returns its new token.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn add(&self, extension_id: &str) -> std::io::Result<String> {
        let token = random_hex(32)?;
        let mut f = self.read();
        f.clients.retain(|c| c.extension_id != extension_id);
        f.clients.push(Client {
            extension_id: extension_id.to_string(),
            token_sha256: hash(&token),
        });
        self.write(&f)?;
        Ok(token)
    }

    /// A token for one `keyless-host as run` process (`as-run-PID`): it reaches only the
    /// `keyless://chat` generations, and [`Pairings::remove`] revokes it when the run ends. Tokens
    /// of runs whose process is gone are dropped here.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn add_program(&self, pid: u32) -> std::io::Result<(String, String)> {
        let id = format!("{PROGRAM_CLIENT_PREFIX}{pid}");
        let mut f = self.read();
        f.clients.retain(|c| {
            c.extension_id
                .strip_prefix(PROGRAM_CLIENT_PREFIX)
                .and_then(|p| p.parse::<u32>().ok())
                .is_none_or(process_alive)
        });
        self.write(&f)?;
        let token = self.add(&id)?;
        Ok((id, token))
    }

    /// Revokes one client's tokens.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn remove(&self, client: &str) -> std::io::Result<()> {
        let mut f = self.read();
        let before = f.clients.len();
        f.clients.retain(|c| c.extension_id != client);
        if f.clients.len() != before {
            self.write(&f)?;
        }
        Ok(())
    }

    /// The extension id a token belongs to.
    #[must_use]
    pub fn verify(&self, token: &str) -> Option<String> {
        let h = hash(token);
        self.read()
            .clients
            .into_iter()
            .find(|c| constant_time_eq(&c.token_sha256, &h))
            .map(|c| c.extension_id)
    }

    /// Issues a fresh one-time code that the running `serve` accepts for
    /// [`ISSUED_CODE_SECONDS`] (`keyless-host pair`); only its hash is stored.
    ///
    /// # Errors
    /// When there is no randomness or the file cannot be written.
    pub fn issue_code(&self) -> std::io::Result<String> {
        let code = pairing_code()?;
        let now = unix_now();
        let mut f = self.read();
        f.codes.retain(|c| c.expires_unix > now);
        f.codes.push(IssuedCode {
            code_sha256: hash(&code),
            expires_unix: now + ISSUED_CODE_SECONDS,
        });
        self.write(&f)?;
        Ok(code)
    }

    /// Whether `code` (as [`keyless_core::pairing::read_code`] gives it) is an issued code that
    /// has not expired; it is used up.
    pub fn take_code(&self, code: &str) -> bool {
        let now = unix_now();
        let h = hash(code);
        let mut f = self.read();
        let before = f.codes.len();
        f.codes.retain(|c| c.expires_unix > now);
        let found = f
            .codes
            .iter()
            .position(|c| constant_time_eq(&c.code_sha256, &h));
        if let Some(i) = found {
            f.codes.remove(i);
        }
        if (found.is_some() || f.codes.len() != before) && self.write(&f).is_err() {
            // A code that cannot be used up is not accepted.
            return false;
        }
        found.is_some()
    }

    /// `local-token` beside the pairing file: the token `serve` prints for scripts and the
    /// dashboard.
    fn local_token_path(&self) -> PathBuf {
        self.path.with_file_name("local-token")
    }

    /// The local token: the same for every `serve` of this user until `pair --reset`
    /// (so a dashboard tab left open across a restart reconnects), kept mode 0600 in the config
    /// folder, made on first use.
    ///
    /// # Errors
    /// When it cannot be made or written.
    pub fn local_token(&self) -> std::io::Result<String> {
        let path = self.local_token_path();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let t = text.trim();
            if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
                set_private(&path)?;
                return Ok(t.to_string());
            }
        }
        let token = random_hex(32)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        write_private(&path, token.as_bytes())?;
        Ok(token)
    }

    /// Revokes every token (and every issued code), the local token too.
    ///
    /// # Errors
    /// When the file exists and cannot be removed.
    pub fn reset(&self) -> std::io::Result<usize> {
        let n = self.read().clients.len();
        match std::fs::remove_file(self.local_token_path()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(unix)]
pub fn set_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
pub fn set_private(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Writes `bytes` to `path` through a new file of mode 0600 renamed over it: the tokens are
/// never readable by others, not even for a moment.
///
/// # Errors
/// When the folder or the file cannot be made, written or renamed.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or(std::io::ErrorKind::InvalidInput)?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or(std::io::ErrorKind::InvalidInput)?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    // A temp file left by a process that died is removed; the new one is created, never
    // opened through whatever is at its name (a link planted there is not followed).
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = (|| {
        let mut f = options.open(&tmp)?;
        std::io::Write::write_all(&mut f, bytes)?;
        f.sync_all()?;
        set_private(&tmp)?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reset() {
        let dir = std::env::temp_dir().join(format!("keyless-pair-{}", std::process::id()));
        let p = Pairings::new(dir.join("pairing.json"));
        let ext = "abcdefghijklmnopabcdefghijklmnop";
        let token = p.add(ext).unwrap();
        assert_eq!(token.len(), 64);
        assert_eq!(p.verify(&token).as_deref(), Some(ext));
        assert_eq!(p.verify("nope"), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(p.path()).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        assert!(
            !std::fs::read_to_string(p.path()).unwrap().contains(&token),
            "only the hash is stored"
        );
        // An issued code works once, and only its hash is stored.
        let issued = p.issue_code().unwrap();
        assert!(!std::fs::read_to_string(p.path()).unwrap().contains(&issued));
        assert!(!p.take_code("AAAA-AAAA"));
        assert!(p.take_code(&issued));
        assert!(!p.take_code(&issued), "single use");
        assert_eq!(p.verify(&token).as_deref(), Some(ext), "tokens are kept");
        assert_eq!(p.reset().unwrap(), 1);
        assert_eq!(p.verify(&token), None);
        let code = pairing_code().unwrap();
        assert_eq!(code.len(), 9);
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[cfg(test)]
mod throttle_tests {
    use super::*;

    #[test]
    fn wrong_codes_lock_pairing_for_a_growing_delay() {
        assert_eq!(
            (0..10).map(lock_seconds).collect::<Vec<_>>(),
            [0, 0, 0, 2, 4, 8, 16, 32, 64, 128]
        );
        assert_eq!(lock_seconds(40), 600);
        let mut t = Throttle::default();
        let now = std::time::Instant::now();
        assert_eq!((t.failed(now), t.failed(now), t.failed(now)), (0, 0, 2));
        assert_eq!(t.locked(now), Some(2));
        assert_eq!(t.locked(now + std::time::Duration::from_secs(3)), None);
        t.succeeded();
        assert_eq!(t.failures(), 0);
    }
}
