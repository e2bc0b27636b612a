//! Where the configuration comes from: the user's and the workspace's keyless.json (the latter
//! only as far as the user approved it), and the executor settings made from them.

use crate::dirs::user_config_path;
use crate::error::HostError;
use keyless_core::keyless_json::KeylessConfig;
use keyless_core::Code;
use std::io;
use std::path::PathBuf;

/// A loaded configuration: the settings, the files they came from, and the workspace settings
/// left out because the user has not approved the workspace file.
#[derive(Debug)]
pub struct Loaded {
    pub cfg: KeylessConfig,
    pub files: Vec<PathBuf>,
    pub ignored: Vec<keyless_core::keyless_json::Ignored>,
}

/// `<config>/keyless/approved.json`: the workspace files the user approved, by path, with the
/// SHA-256 of the approved text.
fn approvals_path() -> Option<PathBuf> {
    user_config_path().map(|p| p.with_file_name("approved.json"))
}

fn approvals() -> std::collections::BTreeMap<String, String> {
    approvals_path()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn workspace_config_file(workspace: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(workspace)
        .unwrap_or_else(|_| workspace.to_path_buf())
        .join("keyless.json")
}

/// Loads defaults → user keyless.json → workspace keyless.json. Settings of the workspace file
/// that widen what runs apply only when the user approved that exact file.
///
/// # Errors
/// KA_CONFIG_INVALID / KA_CONFIG_VALIDATION from a file, KA_FILE_IO when one cannot be read.
pub fn load_config(workspace: &std::path::Path) -> Result<Loaded, HostError> {
    let mut cfg = KeylessConfig::default();
    let mut files = Vec::new();
    let mut ignored = Vec::new();
    let read = |path: &PathBuf| match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HostError::Read {
            path: path.display().to_string(),
            source,
        }),
    };
    if let Some(user) = user_config_path() {
        if let Some(text) = read(&user)? {
            cfg.apply_file(&user.display().to_string(), &text)?;
            files.push(user);
        }
    }
    let ws_file = workspace_config_file(workspace);
    if let Some(text) = read(&ws_file)? {
        let approved = approvals()
            .get(&ws_file.display().to_string())
            .is_some_and(|h| *h == keyless_core::keyless_json::approval_hash(&text));
        ignored = cfg.apply_workspace_file(&ws_file.display().to_string(), &text, approved)?;
        files.push(ws_file);
    }
    Ok(Loaded {
        cfg,
        files,
        ignored,
    })
}

/// `keyless-host config --approve`: trusts the workspace keyless.json as it is now.
pub fn approve_workspace_file(workspace: &std::path::Path) -> Result<String, HostError> {
    let ws_file = workspace_config_file(workspace);
    let text = std::fs::read_to_string(&ws_file).map_err(|source| HostError::Read {
        path: ws_file.display().to_string(),
        source,
    })?;
    // Validate it first: an approval of a broken file would be useless.
    let mut probe = KeylessConfig::default();
    probe.apply_file(&ws_file.display().to_string(), &text)?;
    let path = approvals_path().ok_or_else(|| {
        HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into())
    })?;
    let mut all = approvals();
    all.insert(
        ws_file.display().to_string(),
        keyless_core::keyless_json::approval_hash(&text),
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| HostError::Read {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let json = serde_json::to_vec_pretty(&all)?;
    crate::exec::workspace::write_atomic(&path, &json)
        .and_then(|()| crate::pairing::set_private(&path))
        .map_err(|source| HostError::Read {
            path: path.display().to_string(),
            source,
        })?;
    Ok(ws_file.display().to_string())
}

/// The executor's settings from a loaded configuration, for the workspace at `root` (where its
/// MCP servers start). `answers`: whether a user answers the MCP servers' forms (elicitation)
/// in this front end.
pub fn exec_settings(
    cfg: &KeylessConfig,
    push: bool,
    root: &std::path::Path,
    answers: bool,
) -> crate::exec::batch::ExecSettings {
    let tools = crate::exec::tools::Tools::new(cfg, root, answers).unwrap_or_else(|e| {
        eprintln!(
            "keyless-host: {} cannot prepare the MCP client: {e}",
            Code::McpUnavailable
        );
        crate::exec::tools::Tools::default()
    });
    crate::exec::batch::ExecSettings {
        settings: cfg.settings,
        mode: cfg.mode,
        allow: cfg.allow_list.clone(),
        failure_mode: cfg.batch_failure_mode,
        timeout_seconds: cfg.timeout_seconds,
        git: crate::exec::git::GitSettings {
            protected_branches: cfg.protected_branches.clone(),
            auto_init: cfg.auto_init,
            task_branch: cfg.task_branch.clone(),
            push,
            ..crate::exec::git::GitSettings::default()
        },
        sandbox: true,
        network: cfg.network,
        pass_env: cfg.program_env.clone().unwrap_or_default(),
        limits: crate::exec::limits::Limits::new(cfg.max_processes, cfg.max_memory_mib),
        missing_tools: Vec::new(),
        tools,
        repo_map_chars: cfg.repo_map_chars,
    }
}

/// Tells the user which workspace settings are left out, on stderr.
pub fn warn_ignored(ignored: &[keyless_core::keyless_json::Ignored]) {
    for i in ignored {
        eprintln!("keyless-host: {} {i}", Code::ConfigValidation);
    }
}
