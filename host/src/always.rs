//! "Always allow" rules, per workspace, in the user's config folder (`always.json`, mode 0600):
//! never in the workspace, so nothing the model writes can add one. Core decides what a rule
//! covers ([`keyless_core::policy::always`]); this file only keeps them.

use keyless_core::policy::always::{refusal, AllowRule};
use keyless_core::policy::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    /// The workspace's real path → its rules, oldest first.
    #[serde(default)]
    workspaces: BTreeMap<String, Vec<AllowRule>>,
}

/// Where the rules are kept: beside the user's keyless.json.
#[must_use]
pub fn path() -> Option<PathBuf> {
    crate::dirs::user_config_dir().map(|d| d.join("always.json"))
}

fn key(workspace: &Path) -> String {
    crate::dirs::real_path(workspace).display().to_string()
}

fn read(p: &Path) -> File {
    std::fs::read(p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn write(p: &Path, f: &File) -> std::io::Result<()> {
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = p.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(f).map_err(std::io::Error::other)?,
    )?;
    crate::pairing::set_private(&tmp)?;
    std::fs::rename(&tmp, p)
}

/// The workspace's rules (none when there is no config folder or the file is unreadable).
#[must_use]
pub fn rules(workspace: &Path) -> Vec<AllowRule> {
    path()
        .map(|p| read(&p))
        .and_then(|mut f| f.workspaces.remove(&key(workspace)))
        .unwrap_or_default()
}

/// Saves a rule for the workspace after core's check (`ctx` is the workspace's context now).
///
/// # Errors
/// The refusal (a pattern too wide, a Denied line) or the I/O error, in words.
pub fn add(workspace: &Path, rule: AllowRule, ctx: &Context) -> Result<(), String> {
    if let Some(why) = refusal(&rule, ctx) {
        return Err(format!("not saved: {why}"));
    }
    let p = path().ok_or("no config folder (HOME is not set)")?;
    let mut f = read(&p);
    let list = f.workspaces.entry(key(workspace)).or_default();
    if !list.contains(&rule) {
        list.push(rule);
    }
    write(&p, &f).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

/// Removes the workspace's rules whose 1-based number or text is `which`; returns the removed.
///
/// # Errors
/// I/O, or nothing matched.
pub fn remove(workspace: &Path, which: &str) -> Result<Vec<AllowRule>, String> {
    let p = path().ok_or("no config folder (HOME is not set)")?;
    let mut f = read(&p);
    let k = key(workspace);
    let list = f
        .workspaces
        .get_mut(&k)
        .ok_or_else(|| format!("no rules for {k}; `keyless-host allow list` shows them"))?;
    let n: Option<usize> = which.parse().ok();
    let (gone, kept): (Vec<_>, Vec<_>) = list
        .drain(..)
        .enumerate()
        .partition(|(i, r)| n == Some(i + 1) || r.text == which.trim());
    *list = kept.into_iter().map(|(_, r)| r).collect();
    if gone.is_empty() {
        return Err(format!(
            "no rule numbered or written `{which}` for {k}; `keyless-host allow list` shows them"
        ));
    }
    if list.is_empty() {
        f.workspaces.remove(&k);
    }
    write(&p, &f).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    Ok(gone.into_iter().map(|(_, r)| r).collect())
}
