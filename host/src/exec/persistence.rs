//! The part of the policy's context that the persistence table reads: the hooks folder, the
//! PATH folders the model can write and the user's linked configuration files. The git guard's
//! scan needs it to know which files the user's tools run, and the full context
//! ([`super::policy_context`]) is built on the scan, so this part reads no scan.

use std::path::Path;

/// The part of the policy's context that the persistence table reads (the hooks folder, the PATH
/// folders the model can write, the user's linked configuration files), without the scan.
#[must_use]
pub fn persistence_context(workspace: &Path) -> keyless_core::policy::Context {
    keyless_core::policy::Context {
        path_dirs: super::programs::writable_path_dirs(workspace),
        hooks_path: hooks_path(workspace),
        linked_config: crate::dirs::linked_user_config(workspace)
            .into_iter()
            .map(|l| l.rel)
            .collect(),
        ..keyless_core::policy::Context::default()
    }
}

/// The folder `core.hooksPath` names for the workspace's repository (its own config, the user's
/// and the system's), workspace-relative, when it lies in the workspace.
pub(super) fn hooks_path(workspace: &Path) -> Option<String> {
    let repo = git2::Repository::open(workspace).ok()?;
    let value = repo.config().ok()?.get_path("core.hooksPath").ok()?;
    let base = repo.workdir().unwrap_or(workspace);
    let real = crate::dirs::real_path(&base.join(value));
    let root = std::fs::canonicalize(workspace).ok()?;
    real.strip_prefix(&root)
        .ok()
        .map(|r| r.display().to_string())
        .filter(|r| !r.is_empty())
}
