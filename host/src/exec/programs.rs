//! Where programs come from. The host runs `git` and the version probes itself, outside the
//! sandbox, so it finds them only in PATH folders the model cannot write: absolute, and outside
//! the workspace and the temp folders. A command line whose program the shell would find inside
//! the workspace (a PATH entry such as `node_modules/.bin`, `.venv/bin` or `.`) is marked for the
//! policy, which then never treats it as a known program.

use std::path::{Path, PathBuf};

/// Folders a sandboxed command can write, besides the workspace: the model's programs may be
/// there.
fn writable_roots(workspace: &Path) -> Vec<PathBuf> {
    let mut v = vec![workspace.to_path_buf()];
    for t in [
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ] {
        v.push(std::fs::canonicalize(&t).unwrap_or(t));
    }
    v
}

/// Whether `path` (symlinks resolved, as far as it exists) is somewhere a sandboxed command can
/// write: the workspace always; the temp folders (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`) too
/// where the kernel does not confine commands' writes (no Landlock here), since a command can
/// then write them.
#[must_use]
pub fn model_writable(path: &Path, workspace: &Path) -> bool {
    let real = crate::dirs::real_path(path);
    let roots = if super::sandbox::confines_writes(workspace) {
        vec![crate::dirs::real_path(workspace)]
    } else {
        writable_roots(workspace)
    };
    roots
        .iter()
        .any(|r| real.starts_with(r) || path.starts_with(r))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The PATH folders, as given.
fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

/// Finds `name` in the PATH folders the model cannot write (see the module docs).
#[must_use]
pub fn trusted(name: &str, workspace: &Path) -> Option<PathBuf> {
    let roots = writable_roots(workspace);
    path_dirs()
        .into_iter()
        .filter(|d| d.is_absolute())
        .filter(|d| {
            let real = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
            !roots.iter().any(|r| real.starts_with(r))
        })
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// Where the shell would find `name` when it runs in `workspace`, if that is somewhere the model
/// can write.
#[must_use]
pub fn untrusted_location(name: &str, workspace: &Path) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None; // a path is judged by the policy itself
    }
    let roots = writable_roots(workspace);
    for d in path_dirs() {
        let dir = if d.is_absolute() {
            d
        } else {
            workspace.join(d)
        };
        let p = dir.join(name);
        if is_executable(&p) {
            let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
            let dir_real = std::fs::canonicalize(&dir).unwrap_or(dir);
            return roots
                .iter()
                .any(|r| real.starts_with(r) || dir_real.starts_with(r))
                .then_some(p);
        }
    }
    None
}

/// The most names read from one folder a command can write.
const MAX_NAMES: usize = 5_000;

/// Every program the shell would take from a place the model can write: each executable in a
/// PATH folder that is such a place (a relative one, or inside the workspace or a temp folder),
/// when that folder comes first in PATH for its name. Sorted by name.
#[must_use]
pub fn untrusted_programs(workspace: &Path) -> Vec<keyless_core::policy::Untrusted> {
    let roots = writable_roots(workspace);
    let mut names: Vec<String> = Vec::new();
    for d in path_dirs() {
        let dir = if d.is_absolute() {
            d
        } else {
            workspace.join(d)
        };
        let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !roots.iter().any(|r| real.starts_with(r)) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        names.extend(
            entries
                .flatten()
                .take(MAX_NAMES)
                .map(|e| e.file_name().to_string_lossy().into_owned()),
        );
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            untrusted_location(&name, workspace).map(|p| keyless_core::policy::Untrusted {
                path: p.display().to_string(),
                name,
            })
        })
        .collect()
}
