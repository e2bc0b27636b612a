//! Which environment variables the model may see. The environment holds the user's credentials
//! (API keys, database URLs with passwords, tokens), and whatever a program or a command reads
//! ends up in the chat.
//!
//! - `.as` programs read (`env://process`) only the names the user allows (keyless.json's
//!   `Programs.Env`, where a name may end in `*` to allow a prefix) and a short list of names that
//!   describe the machine ([`HARMLESS`]); and never a value that looks like a credential
//!   ([`credential_in`]) or a name that looks like a secret ([`secret_like`]) unless the user named
//!   that variable exactly ([`may_read`]).
//! - Commands get the user's environment without the variables that look like secrets, by name
//!   ([`secret_like`]) or by value, unless `Programs.Env` names them exactly ([`withheld`]).

/// Names any program may read: they describe the machine and the user's locale, never a secret.
pub const HARMLESS: &[&str] = &[
    "HOME",
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "PWD",
    "OLDPWD",
    "TMPDIR",
    "HOSTNAME",
    "COLUMNS",
    "LINES",
    "CI",
    "NO_COLOR",
];

/// keyless's own secrets in the user's keyless config folder (relative to it): the pairing tokens
/// and the tokens of the MCP servers the user logged in to. The sandbox hides them from every
/// command like [`HOME_SECRETS`] (the rest of the folder stays readable: snapshot scripts run
/// from it).
pub const KEYLESS_SECRETS: &[&str] = &["pairing.json", "mcp-tokens.json"];

/// Where credentials live in a home folder (relative to it): the sandbox hides these from every
/// command (an empty, read-only folder over a folder, an empty file over a file), so neither a
/// read nor a build nor a test prints them into the results. Folders and files a build needs to
/// work offline (caches, toolchains) are not here.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".config/gh",
    ".config/hub",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".config/pip/pip.conf",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".config/op",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".lesshst",
];

/// Whether an environment variable's name looks like a secret. A name is split at `_` and `-`;
/// a word that is, or ends with, one of these marks it (`OPENAI_API_KEY`, `GH_TOKEN`,
/// `DB_PASSWORD`, `APIKEY`, `GITHUB_TOKEN2`, `OPENAI_APIKEYS`), while `KEYLESS_HOME` is fine.
#[must_use]
pub fn secret_like(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "KEYS",
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "PWD",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "PRIVATE",
        "COOKIE",
        "SESSION",
        "SIGNATURE",
        "JWT",
        "DSN",
        "WEBHOOK",
        "CONNECTION",
        "CONNSTR",
        "BEARER",
        "OAUTH",
        "KUBECONFIG",
        "NETRC",
        "SALT",
    ];
    // Words that count only whole: `GITLAB_PAT`, `AZURE_SAS`, but not `NODE_COMPAT`.
    const WHOLE: &[&str] = &["PAT", "SAS", "OTP", "TOTP"];
    let upper = name.to_ascii_uppercase();
    // The shell's working folders, not passwords.
    !matches!(upper.as_str(), "PWD" | "OLDPWD")
        && upper.split(['_', '-']).any(|w| {
            // A word with a number after it counts as the word (`TOKEN2`).
            let w = w.trim_end_matches(|c: char| c.is_ascii_digit());
            WHOLE.contains(&w)
                || WORDS
                    .iter()
                    .any(|s| w == *s || (w.len() > s.len() && w.ends_with(s) && s.len() >= 3))
        })
}

/// Prefixes of well-known credential formats.
const PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "hf_",
    "SG.",
    "shpat_",
    "dop_v1_",
    "eyJ",
];

/// Phrases of connection strings and key files that carry a credential.
const PHRASES: &[&str] = &[
    "-----begin",
    "password=",
    "pwd=",
    "accountkey=",
    "sharedaccesskey",
    "sharedaccesssignature",
    "secret=",
    "token=",
    "apikey=",
    "api_key=",
    "sig=",
];

/// A value that looks like a token: one word of 20 characters or more in a key alphabet (base64,
/// URL-safe, hex), holding a run of 16 or more letters and digits that mixes letters with digits
/// (or, 20 long, upper with lower case) and is varied (at least 3 bits of entropy per
/// character). Identifiers such as `x86_64-unknown-linux-gnu`, paths and versions are made of
/// short runs and are not tokens.
fn token_shaped(s: &str) -> bool {
    let n = s.len();
    if !(20..=4096).contains(&n)
        || !s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-' | '.' | '~')
        })
    {
        return false;
    }
    s.split(|c: char| !c.is_ascii_alphanumeric()).any(|run| {
        let digits = run.bytes().any(|b| b.is_ascii_digit());
        let letters = run.bytes().any(|b| b.is_ascii_alphabetic());
        let mixed_case = run.bytes().any(|b| b.is_ascii_lowercase())
            && run.bytes().any(|b| b.is_ascii_uppercase());
        run.len() >= 16
            && ((digits && letters) || (mixed_case && run.len() >= 20))
            && entropy(run) >= 3.0
    })
}

/// Shannon entropy of an ASCII string, in bits per character.
fn entropy(run: &str) -> f64 {
    let mut counts = [0u32; 128];
    for b in run.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
    }
    #[allow(clippy::cast_precision_loss)] // lengths are far below 2^52
    let len = run.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / len;
            -p * p.log2()
        })
        .sum()
}

/// Why a value looks like a credential, if it does: a URL with a password or a token in it, a
/// connection string or key file, a well-known credential format, or a token-shaped word.
#[must_use]
pub fn credential_in(value: &str) -> Option<&'static str> {
    let v = value.trim();
    if let Some((_, rest)) = v.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            if userinfo.contains(':') || token_shaped(userinfo) || userinfo.len() >= 16 {
                return Some("a URL with a password or a token in it");
            }
        }
        let after = &rest[authority.len()..];
        if after
            .split(['/', '?', '&', '=', '#'])
            .any(|part| token_shaped(part) || PREFIXES.iter().any(|p| part.starts_with(p)))
        {
            return Some("a URL with a token in it");
        }
    }
    let lower = v.to_ascii_lowercase();
    if PHRASES.iter().any(|p| lower.contains(p)) {
        return Some("a connection string or key with a secret in it");
    }
    if v.len() >= 12 && PREFIXES.iter().any(|p| v.starts_with(p)) {
        return Some("a well-known credential format");
    }
    if token_shaped(v) {
        return Some("a token-shaped string");
    }
    None
}

/// Whether `list` (keyless.json's `Programs.Env`) names `name` exactly.
fn named_exactly(list: &[String], name: &str) -> bool {
    list.iter().any(|n| n == name)
}

/// Whether `list` allows `name`: exactly, or by a prefix ending in `*`.
fn allowed(list: &[String], name: &str) -> bool {
    list.iter().any(|n| match n.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => n == name,
    })
}

/// Whether an `.as` program may read variable `name`, whose value is `value` (`None`: unset),
/// given keyless.json's `Programs.Env`.
///
/// # Errors
/// Why not, for the program's error.
pub fn may_read(name: &str, value: Option<&str>, allow: Option<&[String]>) -> Result<(), String> {
    let list = allow.unwrap_or(&[]);
    if !HARMLESS.contains(&name) && !allowed(list, name) {
        return Err(format!(
            "{name} is not a variable programs read: keyless.json's Programs.Env names the ones they may (besides {})",
            HARMLESS.join(", ")
        ));
    }
    if named_exactly(list, name) {
        return Ok(());
    }
    if secret_like(name) {
        return Err(format!(
            "{name} looks like a secret; programs read it only when keyless.json's Programs.Env names {name} exactly (a prefix with * is not enough)"
        ));
    }
    if let Some(why) = value.and_then(credential_in) {
        return Err(format!(
            "{name}'s value looks like a credential ({why}); programs read it only when keyless.json's Programs.Env names {name} exactly"
        ));
    }
    Ok(())
}

/// Whether a command's environment keeps variable `name`: not when its name looks like a secret
/// or its value like a credential, unless `Programs.Env` names it exactly.
#[must_use]
pub fn withheld(name: &str, value: &str, allow: Option<&[String]>) -> bool {
    if allow.is_some_and(|l| named_exactly(l, name)) {
        return false;
    }
    secret_like(name) || credential_in(value).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for s in [
            "OPENAI_API_KEY",
            "GH_TOKEN",
            "GITHUB_TOKEN2",
            "OPENAI_APIKEYS",
            "DB_PASSWORD",
            "GPG_PASSPHRASE",
            "MYSQL_PWD",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "AZURE_STORAGE_CONNECTION_STRING",
            "CI_JOB_JWT",
            "APIKEY",
            "aws-secret-access-key",
            "SESSION",
            "GITLAB_PAT",
            "ADO_PAT2",
            "HTTP_BEARER",
            "GOOGLE_OAUTH_CLIENT",
            "KUBECONFIG",
            "NETRC",
            "AZURE_STORAGE_SAS",
            "NPM_OTP",
        ] {
            assert!(secret_like(s), "{s}");
        }
        for s in [
            "HOME",
            "PATH",
            "PWD",
            "KEYLESS_HOME",
            "LANG",
            "TOKENIZER_THREADS",
            "CARGO_HOME",
            "SSL_CERT_FILE",
            "CARGO_BUILD_TARGET",
            "NODE_COMPAT",
            "PATTERN",
        ] {
            assert!(!secret_like(s), "{s}");
        }
    }

    #[test]
    fn credential_values() {
        for v in [
            "postgres://app:s3cr3t@db.example.com:5432/app",
            "https://user:pass@proxy.example.com:8080",
            "https://examplePublicKey@o0.ingest.sentry.io/0",
            "https://hooks.slack.com/services/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",
            "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=abc==;EndpointSuffix=core.windows.net",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            "sk-proj-abcdefghijklmnop1234567890",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
            "AKIAIOSFODNN7EXAMPLE",
            "tT4qS9ZpUu0nYb2kV7xWl3Hc5R8eJm1Ad6Gf",
            "e83c5163316f89bfbde7d9ab23ca2e25604af290",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        ] {
            assert!(credential_in(v).is_some(), "{v}");
        }
        for v in [
            "/usr/local/bin:/usr/bin:/bin",
            "/root",
            "en_US.UTF-8",
            "Europe/Berlin",
            "xterm-256color",
            "https://example.com/path/to/page",
            "rustc-1.95.0-x86_64-unknown-linux-gnu",
            "stable-x86_64-unknown-linux-gnu",
            "123e4567-e89b-12d3-a456-426614174000",
            "/etc/ssl/certs/ca-certificates.crt",
            "git@github.com:user/repo.git",
            "true",
            "1",
        ] {
            assert!(credential_in(v).is_none(), "{v}");
        }
    }

    #[test]
    fn reading_needs_the_name_and_a_credential_needs_it_exactly() {
        let list = vec!["APP_*".to_string(), "DATABASE_URL".to_string()];
        assert!(may_read("HOME", Some("/root"), None).is_ok());
        assert!(may_read("MY_VAR", Some("x"), None).is_err());
        assert!(may_read("APP_MODE", Some("dev"), Some(&list)).is_ok());
        assert!(may_read("APP_TOKEN", Some("ghp_0123456789abcdefghij"), Some(&list)).is_err());
        assert!(may_read("DATABASE_URL", Some("postgres://a:b@h/db"), Some(&list)).is_ok());
        assert!(may_read("HTTPS_PROXY", Some("http://u:p@h:1"), None).is_err());
        let all = vec!["*".to_string()];
        assert!(may_read("GPG_PASSPHRASE", Some("hunter2"), Some(&all)).is_err());
        assert!(may_read("EDITOR", Some("vim"), Some(&all)).is_ok());
        assert!(withheld("GITHUB_TOKEN", "x", None));
        assert!(withheld("HTTPS_PROXY", "http://u:p@h:1", None));
        assert!(!withheld("PATH", "/usr/bin", None));
        assert!(!withheld(
            "GITHUB_TOKEN",
            "x",
            Some(&["GITHUB_TOKEN".to_string()])
        ));
    }
}
