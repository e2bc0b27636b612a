//! `keyless.json`: every setting the seed names, layered (defaults → user config → workspace →
//! command line), validated, with the source of each value. Pure: callers pass the file texts.
//!
//! ```json
//! { "Limits": { "MaxCommandsPerResponse": 5 }, "Agent": { "Pace": "Balanced" },
//!   "Commands": { "Mode": "Ask", "AllowList": ["npm run test *"], "BatchFailureMode": "StopOnMutationFailure",
//!                 "TimeoutSeconds": 600, "Network": false },
//!   "Git": { "ProtectedBranches": ["main", "master", "release/*"], "AutoInit": false },
//!   "Browser": { "TruncationBudgetSeconds": 90 } }
//! ```

use crate::config::{BatchFailureMode, Limits, Mode, Pace, Settings, LIMIT_RANGES};
use crate::diag::Code;
use crate::text::edit_distance;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Errors of the configuration files, with their KA_ codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFileError {
    #[error("{source_name}:{line}:{column}: not valid JSON: {message}")]
    Invalid {
        source_name: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{source_name}: {key}: {message}")]
    Validation {
        source_name: String,
        key: String,
        message: String,
    },
}

impl ConfigFileError {
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            ConfigFileError::Invalid { .. } => Code::ConfigInvalid,
            ConfigFileError::Validation { .. } => Code::ConfigValidation,
        }
    }
}

/// The effective configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeylessConfig {
    pub settings: Settings,
    pub mode: Mode,
    pub allow_list: Vec<String>,
    pub batch_failure_mode: BatchFailureMode,
    pub timeout_seconds: u32,
    /// Whether runcommand may use the network (where the sandbox can enforce it).
    pub network: bool,
    pub protected_branches: Vec<String>,
    pub auto_init: bool,
    /// The branch a session makes when it starts on a protected branch (`{date}`, `{task}`);
    /// empty: none is made.
    pub task_branch: String,
    pub truncation_budget_seconds: u32,
    /// `Agent.RepoMapChars`: the repository map's budget in the first prompt (0: no map).
    pub repo_map_chars: u32,
    /// The environment variables `.as` programs may read through `env://process` besides the
    /// harmless ones ([`crate::secrets::HARMLESS`]); a name ending in `*` allows a prefix. It also
    /// passes secret-looking variables it names exactly to commands ([`crate::secrets::withheld`]).
    pub program_env: Option<Vec<String>>,
    /// The programs `.as` programs may run as `sh://NAME` tools besides find, grep and sed (in
    /// the sandbox, without a shell).
    pub program_tools: Vec<String>,
    /// `Programs.Http`: the origins (`https://api.example.com`, `http://127.0.0.1:8080`) `.as`
    /// programs may import as `http(s)://` tools. Nothing else is reached; an origin whose name
    /// resolves to a loopback or link-local address is refused unless it names that address
    /// (or `localhost`) itself.
    pub program_http: Vec<String>,
    /// `Commands.MaxProcesses`: the most processes (and threads) one command may have at once.
    pub max_processes: u32,
    /// `Commands.MaxMemoryMiB`: the most memory one command may use, in MiB; `None`: three
    /// quarters of the machine's memory.
    pub max_memory_mib: Option<u32>,
    /// `Mcp.Servers`: the MCP servers pieces (`required_mcp`) and `.as` programs (`mcp://`) may
    /// use, by name.
    pub mcp_servers: BTreeMap<String, crate::mcp::ServerConfig>,
    /// Where each value came from, by key (`Limits.MaxCommandsPerResponse` → `default`, a path, …).
    pub sources: BTreeMap<String, String>,
}

/// Every key, in display order.
pub const KEYS: &[&str] = &[
    "Limits.MaxCommandsPerResponse",
    "Limits.MaxResponseChars",
    "Limits.MaxFileContentChars",
    "Limits.MaxCommandOutputChars",
    "Limits.MaxFormatRetries",
    "Limits.MaxIterationsPerTurn",
    "Agent.Pace",
    "Agent.RepoMapChars",
    "Commands.Mode",
    "Commands.AllowList",
    "Commands.BatchFailureMode",
    "Commands.TimeoutSeconds",
    "Commands.Network",
    "Commands.MaxProcesses",
    "Commands.MaxMemoryMiB",
    "Git.ProtectedBranches",
    "Git.AutoInit",
    "Git.TaskBranch",
    "Browser.TruncationBudgetSeconds",
    "Programs.Env",
    "Programs.Tools",
    "Programs.Http",
    "Mcp.Servers",
];

/// `Commands.MaxProcesses` unless set.
pub const DEFAULT_MAX_PROCESSES: u32 = 1024;

impl Default for KeylessConfig {
    fn default() -> Self {
        Self {
            settings: Settings::default(),
            mode: Mode::default(),
            allow_list: Vec::new(),
            batch_failure_mode: BatchFailureMode::default(),
            timeout_seconds: 600,
            network: false,
            protected_branches: vec!["main".into(), "master".into(), "release/*".into()],
            auto_init: false,
            task_branch: crate::branch::DEFAULT_TASK_BRANCH.to_string(),
            truncation_budget_seconds: 90,
            repo_map_chars: crate::repomap::DEFAULT_BUDGET,
            program_env: None,
            program_tools: Vec::new(),
            program_http: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
            max_memory_mib: None,
            mcp_servers: BTreeMap::new(),
            sources: KEYS
                .iter()
                .map(|k| ((*k).to_string(), "default".to_string()))
                .collect(),
        }
    }
}

fn limit_mut<'a>(l: &'a mut Limits, key: &str) -> Option<&'a mut u32> {
    Some(match key {
        "Limits.MaxCommandsPerResponse" => &mut l.max_commands_per_response,
        "Limits.MaxResponseChars" => &mut l.max_response_chars,
        "Limits.MaxFileContentChars" => &mut l.max_file_content_chars,
        "Limits.MaxCommandOutputChars" => &mut l.max_command_output_chars,
        "Limits.MaxFormatRetries" => &mut l.max_format_retries,
        "Limits.MaxIterationsPerTurn" => &mut l.max_iterations_per_turn,
        _ => return None,
    })
}

impl KeylessConfig {
    /// Sets one key from a JSON value, recording its source.
    ///
    /// # Errors
    /// KA_CONFIG_VALIDATION for unknown keys, wrong types and out-of-range values.
    pub fn set(
        &mut self,
        key: &str,
        value: &Value,
        source_name: &str,
    ) -> Result<(), ConfigFileError> {
        let bad = |message: String| ConfigFileError::Validation {
            source_name: source_name.to_string(),
            key: key.to_string(),
            message,
        };
        let uint = |range: (u64, u64)| -> Result<u32, ConfigFileError> {
            let n = value
                .as_u64()
                .ok_or_else(|| bad(format!("must be a whole number, not {value}")))?;
            if n < range.0 || n > range.1 {
                return Err(bad(format!(
                    "{n} is out of range ({}..={})",
                    range.0, range.1
                )));
            }
            u32::try_from(n).map_err(|_| bad(format!("{n} is too large")))
        };
        let string = || {
            value
                .as_str()
                .ok_or_else(|| bad(format!("must be a string, not {value}")))
        };
        let list = || -> Result<Vec<String>, ConfigFileError> {
            value
                .as_array()
                .ok_or_else(|| bad(format!("must be a list of strings, not {value}")))?
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad(format!("entries must be strings, not {v}")))
                })
                .collect()
        };
        let boolean = || {
            value
                .as_bool()
                .ok_or_else(|| bad(format!("must be true or false, not {value}")))
        };
        if let Some((_, min, max)) = LIMIT_RANGES.iter().find(|(k, _, _)| *k == key) {
            let n = uint((*min, *max))?;
            if let Some(slot) = limit_mut(&mut self.settings.limits, key) {
                *slot = n;
            }
        } else {
            match key {
                "Agent.Pace" => {
                    self.settings.pace = string()?.parse::<Pace>().map_err(|e| bad(e.detail()))?
                }
                "Agent.RepoMapChars" => self.repo_map_chars = uint((0, 40_000))?,
                "Commands.Mode" => {
                    self.mode = string()?.parse::<Mode>().map_err(|e| bad(e.detail()))?
                }
                "Commands.AllowList" => self.allow_list = list()?,
                "Commands.BatchFailureMode" => {
                    self.batch_failure_mode = string()?
                        .parse()
                        .map_err(|e: crate::ConfigError| bad(e.detail()))?
                }
                "Commands.TimeoutSeconds" => self.timeout_seconds = uint((1, 86_400))?,
                "Commands.Network" => self.network = boolean()?,
                "Commands.MaxProcesses" => self.max_processes = uint((16, 1_000_000))?,
                "Commands.MaxMemoryMiB" => self.max_memory_mib = Some(uint((64, 16_777_216))?),
                "Git.ProtectedBranches" => self.protected_branches = list()?,
                "Git.AutoInit" => self.auto_init = boolean()?,
                "Git.TaskBranch" => {
                    let t = string()?;
                    crate::branch::check_template(t).map_err(bad)?;
                    self.task_branch = t.to_string();
                }
                "Browser.TruncationBudgetSeconds" => {
                    self.truncation_budget_seconds = uint((5, 3_600))?
                }
                "Programs.Env" => self.program_env = Some(list()?),
                "Programs.Tools" => {
                    let l = list()?;
                    if let Some(wrong) = l.iter().find(|p| {
                        p.is_empty()
                            || !p.bytes().all(|b| {
                                b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'
                            })
                            || crate::lang::analyze::SHELLS.contains(&p.as_str())
                    }) {
                        return Err(bad(format!(
                            "\"{wrong}\" is not a program name that may be allowed (a bare name, never a shell)"
                        )));
                    }
                    self.program_tools = l;
                }
                "Programs.Http" => {
                    self.program_http = list()?
                        .iter()
                        .map(|o| http_origin(o).map_err(|e| bad(format!("\"{o}\": {e}"))))
                        .collect::<Result<_, _>>()?;
                }
                "Mcp.Servers" => {
                    self.mcp_servers = crate::mcp::servers_from_json(value).map_err(bad)?;
                }
                _ => {
                    let near = KEYS
                        .iter()
                        .map(|k| (edit_distance(key, k), *k))
                        .filter(|(d, _)| *d <= 4)
                        .min_by_key(|(d, _)| *d);
                    return Err(bad(match near {
                        Some((_, k)) => format!("unknown setting (did you mean {k}?)"),
                        None => "unknown setting".to_string(),
                    }));
                }
            }
        }
        self.sources
            .insert(key.to_string(), source_name.to_string());
        Ok(())
    }

    /// Applies one `keyless.json` text on top of this configuration.
    ///
    /// # Errors
    /// KA_CONFIG_INVALID (with line and column) or KA_CONFIG_VALIDATION.
    pub fn apply_file(&mut self, source_name: &str, text: &str) -> Result<(), ConfigFileError> {
        self.apply_layer(source_name, text, true).map(|_| ())
    }

    /// Applies a workspace `keyless.json`, which the model may have written. Unless the user
    /// approved this exact text (`approved`), a setting that would widen what runs without asking
    /// (see [`TRUST_KEYS`]) is left as it was and returned; everything else applies.
    ///
    /// # Errors
    /// KA_CONFIG_INVALID (with line and column) or KA_CONFIG_VALIDATION.
    pub fn apply_workspace_file(
        &mut self,
        source_name: &str,
        text: &str,
        approved: bool,
    ) -> Result<Vec<Ignored>, ConfigFileError> {
        self.apply_layer(source_name, text, approved)
    }

    fn apply_layer(
        &mut self,
        source_name: &str,
        text: &str,
        trusted: bool,
    ) -> Result<Vec<Ignored>, ConfigFileError> {
        let root: Value = serde_json::from_str(text).map_err(|e| ConfigFileError::Invalid {
            source_name: source_name.to_string(),
            line: e.line(),
            column: e.column(),
            message: e
                .to_string()
                .split(" at line")
                .next()
                .unwrap_or("")
                .to_string(),
        })?;
        let mut ignored = Vec::new();
        let Value::Object(groups) = root else {
            return Err(ConfigFileError::Validation {
                source_name: source_name.into(),
                key: "(root)".into(),
                message: "must be a JSON object".into(),
            });
        };
        for (group, inner) in &groups {
            let Value::Object(entries) = inner else {
                return Err(ConfigFileError::Validation {
                    source_name: source_name.into(),
                    key: group.clone(),
                    message: "must be an object of settings".into(),
                });
            };
            for (k, v) in entries {
                let key = format!("{group}.{k}");
                if trusted || !TRUST_KEYS.contains(&key.as_str()) {
                    self.set(&key, v, source_name)?;
                    continue;
                }
                let mut trial = self.clone();
                trial.set(&key, v, source_name)?;
                if trial.widens(self, &key) {
                    ignored.push(Ignored {
                        key,
                        source: source_name.to_string(),
                        wanted: trial.value_text(&format!("{group}.{k}")),
                    });
                } else {
                    *self = trial;
                }
            }
        }
        self.check(source_name)?;
        Ok(ignored)
    }

    /// Whether this configuration lets more run without asking than `before`, in `key`.
    fn widens(&self, before: &Self, key: &str) -> bool {
        let rank = |m: Mode| match m {
            Mode::Ask => 0,
            Mode::AutoSafe => 1,
            Mode::Auto => 2,
        };
        match key {
            "Commands.Mode" => rank(self.mode) > rank(before.mode),
            "Commands.Network" => self.network && !before.network,
            "Commands.AllowList" => self
                .allow_list
                .iter()
                .any(|p| !before.allow_list.contains(p)),
            "Git.ProtectedBranches" => before
                .protected_branches
                .iter()
                .any(|p| !self.protected_branches.contains(p)),
            "Git.AutoInit" => self.auto_init && !before.auto_init,
            "Programs.Tools" => self
                .program_tools
                .iter()
                .any(|p| !before.program_tools.contains(p)),
            "Programs.Http" => self
                .program_http
                .iter()
                .any(|p| !before.program_http.contains(p)),
            // A limit only narrows when it is lower than one already set.
            "Commands.MaxProcesses" => self.max_processes > before.max_processes,
            "Commands.MaxMemoryMiB" => match (self.max_memory_mib, before.max_memory_mib) {
                (Some(now), Some(was)) => now > was,
                (a, b) => a != b,
            },
            // A server runs a program (or reaches a URL) the user named: any server added or
            // changed widens what runs.
            "Mcp.Servers" => self
                .mcp_servers
                .iter()
                .any(|(name, s)| before.mcp_servers.get(name) != Some(s)),
            // A list names what may be read (beyond the harmless names every program reads): any
            // name it adds widens what a program sees.
            "Programs.Env" => match (&self.program_env, &before.program_env) {
                (Some(now), Some(was)) => now.iter().any(|n| !was.contains(n)),
                (Some(now), None) => now
                    .iter()
                    .any(|n| !crate::secrets::HARMLESS.contains(&n.as_str())),
                _ => false,
            },
            _ => false,
        }
    }

    /// Cross-field checks (the limits against each other).
    ///
    /// # Errors
    /// KA_CONFIG_VALIDATION.
    pub fn check(&self, source_name: &str) -> Result<(), ConfigFileError> {
        self.settings
            .validate()
            .map_err(|e| ConfigFileError::Validation {
                source_name: source_name.into(),
                key: e.setting().into(),
                message: e.detail(),
            })
    }

    /// The value of a key as display text.
    #[must_use]
    pub fn value_text(&self, key: &str) -> String {
        let l = &self.settings.limits;
        match key {
            "Limits.MaxCommandsPerResponse" => l.max_commands_per_response.to_string(),
            "Limits.MaxResponseChars" => l.max_response_chars.to_string(),
            "Limits.MaxFileContentChars" => l.max_file_content_chars.to_string(),
            "Limits.MaxCommandOutputChars" => l.max_command_output_chars.to_string(),
            "Limits.MaxFormatRetries" => l.max_format_retries.to_string(),
            "Limits.MaxIterationsPerTurn" => l.max_iterations_per_turn.to_string(),
            "Agent.Pace" => self.settings.pace.to_string(),
            "Agent.RepoMapChars" => self.repo_map_chars.to_string(),
            "Commands.Mode" => self.mode.to_string(),
            "Commands.AllowList" => format!("{:?}", self.allow_list),
            "Commands.BatchFailureMode" => self.batch_failure_mode.to_string(),
            "Commands.TimeoutSeconds" => self.timeout_seconds.to_string(),
            "Commands.Network" => self.network.to_string(),
            "Commands.MaxProcesses" => self.max_processes.to_string(),
            "Commands.MaxMemoryMiB" => self.max_memory_mib.map_or_else(
                || "(3/4 of this machine's memory)".into(),
                |m| m.to_string(),
            ),
            "Git.ProtectedBranches" => format!("{:?}", self.protected_branches),
            "Git.AutoInit" => self.auto_init.to_string(),
            "Git.TaskBranch" => format!("{:?}", self.task_branch),
            "Browser.TruncationBudgetSeconds" => self.truncation_budget_seconds.to_string(),
            "Programs.Env" => self.program_env.as_ref().map_or_else(
                || "(only names that describe the machine)".into(),
                |l| format!("{l:?}"),
            ),
            "Programs.Tools" => format!("{:?}", self.program_tools),
            "Programs.Http" => format!("{:?}", self.program_http),
            "Mcp.Servers" => format!("{:?}", self.mcp_servers.keys().collect::<Vec<_>>()),
            _ => String::new(),
        }
    }

    /// `key = value  (source)` for every setting.
    #[must_use]
    pub fn render(&self) -> String {
        KEYS.iter()
            .map(|k| {
                format!(
                    "{k:<34} = {:<28} ({})\n",
                    self.value_text(k),
                    self.sources.get(*k).map_or("default", String::as_str)
                )
            })
            .collect()
    }
}

/// The settings that widen what runs without the user's confirmation. From a workspace file they
/// apply only when the user approved that file (or when they narrow what runs).
pub const TRUST_KEYS: &[&str] = &[
    "Commands.Mode",
    "Commands.Network",
    "Commands.AllowList",
    "Commands.MaxProcesses",
    "Commands.MaxMemoryMiB",
    "Git.ProtectedBranches",
    "Git.AutoInit",
    "Programs.Env",
    "Programs.Tools",
    "Programs.Http",
    "Mcp.Servers",
];

/// An origin as `Programs.Http` keeps it: `scheme://host[:port]`, the scheme and host in lower
/// case, no path, query, fragment or credentials.
///
/// # Errors
/// Why it is not one.
pub fn http_origin(text: &str) -> Result<String, String> {
    let t = text.trim().trim_end_matches('/');
    let (scheme, rest) = t
        .split_once("://")
        .ok_or("an origin is http://HOST[:PORT] or https://HOST[:PORT]")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(format!("{scheme}:// is not http or https"));
    }
    if rest.is_empty() {
        return Err("an origin needs a host".into());
    }
    if rest.contains(['/', '?', '#', '@', ' ', '\\']) || rest.chars().any(char::is_control) {
        return Err(
            "an origin is a scheme and a host (and port), without a path, a query or credentials"
                .into(),
        );
    }
    Ok(format!("{scheme}://{}", rest.to_ascii_lowercase()))
}

/// A workspace setting left out because the file is not approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ignored {
    pub key: String,
    pub source: String,
    /// The value the file asks for, as display text.
    pub wanted: String,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} asks for {}, which widens what runs without asking; ignored until you approve the file (keyless-host config --approve)",
            self.key, self.source, self.wanted
        )
    }
}

/// The fingerprint an approval records: SHA-256 of the file's bytes, in hex.
#[must_use]
pub fn approval_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Loads the layers in order: `(source name, text)`.
///
/// # Errors
/// The first invalid layer.
pub fn load(layers: &[(&str, &str)]) -> Result<KeylessConfig, ConfigFileError> {
    let mut c = KeylessConfig::default();
    for (name, text) in layers {
        c.apply_file(name, text)?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn programs_settings_are_checked_and_trusted_only_when_approved() {
        let cfg = load(&[(
            "user",
            r#"{"Programs": {"Tools": ["jq"], "Env": ["HOME"]}}"#,
        )])
        .expect("valid");
        assert_eq!(cfg.program_tools, ["jq"]);
        assert_eq!(cfg.program_env.as_deref(), Some(&["HOME".to_string()][..]));
        for bad in [
            r#"{"Programs": {"Tools": ["bash"]}}"#,
            r#"{"Programs": {"Tools": ["/bin/jq"]}}"#,
        ] {
            let err = load(&[("user", bad)]).expect_err("refused");
            assert_eq!(err.code(), Code::ConfigValidation, "{bad}");
        }
        assert!(TRUST_KEYS.contains(&"Programs.Tools"));
        assert!(TRUST_KEYS.contains(&"Programs.Env"));
    }

    #[test]
    fn mcp_servers_from_the_workspace_need_approval() {
        let user = r#"{"Mcp": {"Servers": {"files": {"Command": "mcp-files"}}}}"#;
        let mut cfg = load(&[("user", user)]).expect("valid");
        assert_eq!(
            cfg.mcp_servers["files"].command.as_deref(),
            Some("mcp-files")
        );
        // A workspace file (the model can write it) adding or changing a server is left out
        // until approved; the same servers apply.
        for ws in [
            r#"{"Mcp": {"Servers": {"files": {"Command": "mcp-files"}, "evil": {"Command": "sh"}}}}"#,
            r#"{"Mcp": {"Servers": {"files": {"Command": "/tmp/evil"}}}}"#,
        ] {
            let mut trial = cfg.clone();
            let ignored = trial.apply_workspace_file("ws", ws, false).expect("valid");
            assert_eq!(ignored.len(), 1, "{ws}");
            assert_eq!(trial.mcp_servers, cfg.mcp_servers, "{ws}");
        }
        let same = cfg.apply_workspace_file("ws", user, false).expect("valid");
        assert!(same.is_empty());
        let approved = r#"{"Mcp": {"Servers": {"evil": {"Command": "x"}}}}"#;
        cfg.apply_workspace_file("ws", approved, true)
            .expect("valid");
        assert!(cfg.mcp_servers.contains_key("evil"));
        let bad = load(&[(
            "user",
            r#"{"Mcp": {"Servers": {"Bad Name": {"Command": "x"}}}}"#,
        )]);
        assert_eq!(bad.expect_err("refused").code(), Code::ConfigValidation);
    }

    use super::*;

    #[test]
    fn layers_and_sources() {
        let user = r#"{"Commands": {"Mode": "AutoSafe", "AllowList": ["npm test"]}, "Limits": {"MaxCommandsPerResponse": 8}}"#;
        let ws = r#"{"Agent": {"Pace": "Step"}, "Commands": {"Mode": "Auto"}}"#;
        let c = load(&[
            ("~/.config/keyless/keyless.json", user),
            ("keyless.json", ws),
        ])
        .unwrap();
        assert_eq!(c.mode, Mode::Auto);
        assert_eq!(c.allow_list, ["npm test"]);
        assert_eq!(c.settings.limits.max_commands_per_response, 8);
        assert_eq!(c.settings.pace, Pace::Step);
        assert_eq!(c.sources["Commands.Mode"], "keyless.json");
        assert_eq!(
            c.sources["Commands.AllowList"],
            "~/.config/keyless/keyless.json"
        );
        assert_eq!(c.sources["Git.AutoInit"], "default");
        assert!(c
            .render()
            .contains("Commands.Mode                      = Auto"));
    }

    #[test]
    fn an_unapproved_workspace_file_cannot_widen() {
        let mut c = load(&[(
            "user",
            r#"{"Commands": {"Mode": "AutoSafe", "AllowList": ["npm test"]}}"#,
        )])
        .unwrap();
        let ws = r#"{"Commands": {"Mode": "Auto", "Network": true, "AllowList": ["*"], "TimeoutSeconds": 30},
                     "Git": {"ProtectedBranches": [], "AutoInit": true}, "Agent": {"Pace": "Step"}}"#;
        let ignored = c.apply_workspace_file("keyless.json", ws, false).unwrap();
        let keys: Vec<&str> = ignored.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "Commands.AllowList",
                "Commands.Mode",
                "Commands.Network",
                "Git.AutoInit",
                "Git.ProtectedBranches"
            ]
        );
        assert_eq!(c.mode, Mode::AutoSafe);
        assert!(!c.network);
        assert_eq!(c.allow_list, ["npm test"]);
        assert_eq!(c.protected_branches, ["main", "master", "release/*"]);
        // Settings that do not widen what runs still apply.
        assert_eq!(c.timeout_seconds, 30);
        assert_eq!(c.settings.pace, Pace::Step);
        assert!(
            ignored[1].to_string().contains("asks for Auto"),
            "{}",
            ignored[1]
        );
        // Narrowing applies without approval.
        let ignored = c
            .apply_workspace_file(
                "keyless.json",
                r#"{"Commands": {"Mode": "Ask", "AllowList": []}, "Git": {"ProtectedBranches": ["main", "master", "release/*", "dev"]}}"#,
                false,
            )
            .unwrap();
        assert!(ignored.is_empty(), "{ignored:?}");
        assert_eq!(c.mode, Mode::Ask);
        assert!(c.allow_list.is_empty());
        // An approved file applies whole.
        let ignored = c.apply_workspace_file("keyless.json", ws, true).unwrap();
        assert!(ignored.is_empty());
        assert_eq!(c.mode, Mode::Auto);
        assert!(c.network);
        assert_eq!(approval_hash("x").len(), 64);
    }

    #[test]
    fn errors_carry_codes_and_positions() {
        let e = load(&[(
            "k.json",
            "{\n  \"Limits\": {\n    \"MaxResponseChars\": 1000,\n  }\n}",
        )])
        .unwrap_err();
        assert_eq!(e.code(), Code::ConfigInvalid);
        assert!(
            matches!(e, ConfigFileError::Invalid { line: 4, .. }),
            "{e:?}"
        );
        let e = load(&[("k.json", r#"{"Limits": {"MaxCommandsPerResponse": 0}}"#)]).unwrap_err();
        assert_eq!(e.code(), Code::ConfigValidation);
        assert_eq!(
            e.to_string(),
            "k.json: Limits.MaxCommandsPerResponse: 0 is out of range (1..=100)"
        );
        let e = load(&[("k.json", r#"{"Comands": {"Mode": "Ask"}}"#)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "k.json: Comands.Mode: unknown setting (did you mean Commands.Mode?)"
        );
        let e = load(&[("k.json", r#"{"Agent": {"Pace": "Turbo"}}"#)]).unwrap_err();
        assert!(e.to_string().contains("unknown value \"Turbo\""));
        let e = load(&[("k.json", r#"{"Limits": {"MaxFileContentChars": 70000}}"#)]).unwrap_err();
        assert!(e
            .to_string()
            .contains("larger than Limits.MaxResponseChars"));
    }
}
