//! What the host knows of the workspace for the command policy ([`keyless_core::policy::Context`]):
//! the programs the shell would take from folders the model can write, the files that steer
//! programs and the symlinks that lead out (the git guard's scan), the PATH folders the model can
//! write, the hooks folder and the user's linked configuration files; each list says when it is
//! not whole.

use super::gitguard::{Guard, ScanFacts};
use std::path::Path;

/// What the host knows of the workspace for the command policy, now: the programs the shell would
/// take from folders the model can write, and the files that steer programs (the same scan as the
/// guard's).
#[must_use]
pub fn context(workspace: &Path, guard: Option<&Guard>) -> keyless_core::policy::Context {
    let facts = match guard {
        Some(g) => g.facts(),
        None => super::gitguard::scan_facts(workspace).unwrap_or(ScanFacts {
            // The workspace cannot be read: nothing is known, so nothing is proven harmless.
            steering_unknown: true,
            links_whole: false,
            links_any: true,
            unguarded: true,
            ..ScanFacts::default()
        }),
    };
    let shadowed = super::programs::untrusted_programs(workspace);
    keyless_core::policy::Context {
        untrusted: shadowed.programs,
        untrusted_unknown: !shadowed.complete,
        steering: facts.steering,
        steering_unknown: facts.steering_unknown,
        links_out: facts.links_out,
        links_unknown: !facts.links_whole,
        links_any: facts.links_any,
        always: crate::always::rules(workspace),
        unguarded: facts.unguarded,
        unguarded_folders: facts.opaque,
        path_dirs: super::programs::writable_path_dirs(workspace),
        hooks_path: super::persistence::hooks_path(workspace),
        linked_config: crate::dirs::linked_user_config(workspace)
            .into_iter()
            .map(|l| l.rel)
            .collect(),
    }
}
