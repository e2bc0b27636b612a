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

/// The most names read from one folder a command can write: past it the list is not whole, and
/// the policy judges every program as possibly the model's.
const MAX_NAMES: usize = 5_000;

/// The programs the shell would take from places the model can write, and whether that list is
/// whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shadowed {
    pub programs: Vec<keyless_core::policy::Untrusted>,
    pub complete: bool,
}

/// Every program the shell would take from a place the model can write, when the line runs at
/// the workspace root: each executable in a PATH folder that is such a place (a relative one, or
/// inside the workspace or a temp folder), when that folder comes first in PATH for its name; and
/// every script found first in a trusted folder whose `#!` interpreter is such a program (`npm`,
/// `#!/usr/bin/env node`, with a `node` of the model's first on PATH), or lies in such a place.
/// Sorted by name.
#[must_use]
pub fn untrusted_programs(workspace: &Path) -> Shadowed {
    let roots = writable_roots(workspace);
    let mut names: Vec<String> = Vec::new();
    let mut complete = true;
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
        let before = names.len();
        names.extend(
            entries
                .flatten()
                .take(MAX_NAMES + 1)
                .map(|e| e.file_name().to_string_lossy().into_owned()),
        );
        if names.len() - before > MAX_NAMES {
            complete = false;
        }
    }
    names.sort();
    names.dedup();
    let mut programs: Vec<keyless_core::policy::Untrusted> = names
        .into_iter()
        .filter_map(|name| {
            untrusted_location(&name, workspace).map(|p| keyless_core::policy::Untrusted {
                path: p.display().to_string(),
                name,
            })
        })
        .collect();
    programs.extend(scripts_of_untrusted(workspace, &programs, &roots));
    programs.sort_by(|a, b| a.name.cmp(&b.name));
    programs.dedup_by(|a, b| a.name == b.name);
    Shadowed { programs, complete }
}

/// The scripts of the trusted PATH folders whose `#!` line runs a program of `shadowed` through
/// `env`, or an interpreter in a place the model can write (the script then runs the model's
/// program whatever its own folder).
fn scripts_of_untrusted(
    workspace: &Path,
    shadowed: &[keyless_core::policy::Untrusted],
    roots: &[PathBuf],
) -> Vec<keyless_core::policy::Untrusted> {
    let mut out = Vec::new();
    let relative_on_path = path_dirs().iter().any(|d| !d.is_absolute());
    if shadowed.is_empty() && !relative_on_path {
        return out; // `env` finds the same trusted interpreters as the launcher
    }
    let mut seen: std::collections::HashSet<String> =
        shadowed.iter().map(|u| u.name.clone()).collect();
    for d in path_dirs() {
        let dir = if d.is_absolute() {
            d
        } else {
            workspace.join(d)
        };
        for (name, interp) in interpreters_of(&dir) {
            if !seen.insert(name.clone()) {
                continue; // an earlier PATH folder has it
            }
            let bad = match &interp {
                Interp::Env(prog) => shadowed.iter().find(|u| &u.name == prog).map(|u| {
                    format!(
                        "{} (its #! line runs {prog} from PATH: {})",
                        dir.join(&name).display(),
                        u.path
                    )
                }),
                Interp::Path(p) => {
                    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
                    (!p.is_absolute() || roots.iter().any(|r| real.starts_with(r))).then(|| {
                        format!(
                            "{} (its #! line runs {})",
                            dir.join(&name).display(),
                            p.display()
                        )
                    })
                }
            };
            if let Some(path) = bad {
                out.push(keyless_core::policy::Untrusted { name, path });
            }
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Interp {
    /// `#!/usr/bin/env NAME`: looked up on PATH.
    Env(String),
    /// `#!/path/to/interpreter` (relative ones are relative to where the line runs).
    Path(PathBuf),
}

/// The `#!` interpreters of a folder's scripts, cached by the folder's change time (a system
/// folder changes when packages are installed, not at every command).
fn interpreters_of(dir: &Path) -> Vec<(String, Interp)> {
    type Cache = std::collections::HashMap<PathBuf, ((i64, i64), Vec<(String, Interp)>)>;
    static CACHE: std::sync::Mutex<Option<Cache>> = std::sync::Mutex::new(None);
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return Vec::new();
    };
    let stamp = (meta.mtime(), meta.mtime_nsec());
    if let Ok(c) = CACHE.lock() {
        if let Some((s, v)) = c.as_ref().and_then(|c| c.get(dir)) {
            if *s == stamp {
                return v.clone();
            }
        }
    }
    let mut v = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten().take(MAX_NAMES * 4) {
            let p = e.path();
            if !is_executable(&p) {
                continue;
            }
            if let Some(i) = interpreter(&p) {
                v.push((e.file_name().to_string_lossy().into_owned(), i));
            }
        }
    }
    if let Ok(mut c) = CACHE.lock() {
        c.get_or_insert_with(Default::default)
            .insert(dir.to_path_buf(), (stamp, v.clone()));
    }
    v
}

/// A script's interpreter, from its `#!` line.
fn interpreter(p: &Path) -> Option<Interp> {
    use std::io::Read;
    let mut f = std::fs::File::open(p).ok()?;
    let mut buf = [0u8; 128];
    let n = f.read(&mut buf).ok()?;
    let line = buf[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = String::from_utf8_lossy(line);
    let mut words = text.split_whitespace();
    let first = words.next()?;
    if first.rsplit('/').next() == Some("env") {
        let prog = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        return Some(if prog.contains('/') {
            Interp::Path(PathBuf::from(prog))
        } else {
            Interp::Env(prog.to_string())
        });
    }
    Some(Interp::Path(PathBuf::from(first)))
}

/// The PATH folders the model can write, for the policy: absolute ones inside the workspace
/// (workspace-relative), and relative entries as PATH holds them (`.` for an empty one).
#[must_use]
pub fn writable_path_dirs(workspace: &Path) -> Vec<keyless_core::policy::PathDir> {
    let real_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let mut out = Vec::new();
    for d in path_dirs() {
        if d.as_os_str().is_empty() || !d.is_absolute() {
            let dir = if d.as_os_str().is_empty() {
                ".".to_string()
            } else {
                d.display().to_string()
            };
            out.push(keyless_core::policy::PathDir {
                dir,
                relative: true,
            });
            continue;
        }
        let real = crate::dirs::real_path(&d);
        if let Ok(rel) = real.strip_prefix(&real_ws) {
            out.push(keyless_core::policy::PathDir {
                dir: rel.display().to_string(),
                relative: false,
            });
        }
    }
    out.dedup();
    out
}
