//! The git guard: what a sandboxed command did to git's control files, put back.
//!
//! A repository's config, hooks and `commondir`, and a `.git` file's `gitdir:` line, steer the
//! user's own `git` later, outside the sandbox (a hook, `core.fsmonitor`, a pager, an alias). The
//! sandbox mounts the workspace repository's hooks, config and info read-only and pins `.git`
//! itself, but a command can still make a repository anywhere (`git init sub`), copy one, or, where
//! the kernel offers no namespaces, write everything. So around every sandboxed command the host
//! takes a snapshot of every git control point in the workspace, and afterwards:
//! - what is unchanged stays;
//! - what changed or appeared stays only when core's rules prove it harmless
//!   ([`keyless_core::gitcontrol`]): a config of settings that never name a program, a `.sample`
//!   hook, the standard worktree `commondir`, a `.git` file pointing at a repository inside the
//!   workspace, or a byte-for-byte copy of one of the user's own files;
//! - anything else is moved aside to `.agent/quarantine/ID/PATH` (nothing is deleted) and what was
//!   there before is put back.
//!
//! The workspace's `keyless.json` is a control point too: only the user writes it (a command that
//! makes or changes it is put back, so no setting of the model's reaches the next session).
//!
//! A control point is: every entry named `.git` at any depth, and in every folder git takes for a
//! repository (`HEAD` with `objects` and `refs`, or with `commondir`, each of any kind, as git
//! accepts symlinks and dangling HEADs: the workspace's `.git`,
//! its `modules/` and `worktrees/`, a nested or bare repository): `config`, `config.worktree`,
//! `commondir`, `hooks/` and `info/` with their files. The scan goes through directory handles and
//! never follows a symlink; `.agent` is skipped except the sandbox's temp folder. On the way it
//! notes the files that steer programs, which the command policy judges with ([`context`]).
#![allow(clippy::disallowed_methods)] // keyless putting back git's own control files, never the model's write

mod repair;
pub use repair::{describe, Repair};
use repair::{persist_why, Quarantine};

use super::workspace::write_atomic_in;
use cap_std::fs::Dir;
use keyless_core::gitcontrol;
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

mod scan;
use scan::{open_folder, scan, Node, Snapshot, MAX_DEPTH, MAX_ENTRIES};

/// What a control path is, for the rules.
enum Kind<'a> {
    /// The workspace's `keyless.json`.
    Settings,
    /// An entry named `.git`.
    DotGit,
    /// `config` or `config.worktree` of a repository.
    Config,
    /// `commondir` of repository `gitdir`.
    Commondir {
        gitdir: &'a str,
    },
    /// `hooks` or `info` itself.
    Folder,
    /// A file in `hooks/` (its name) or `info/`.
    Hook {
        name: &'a str,
    },
    Info {
        gitdir: &'a str,
    },
    /// One of the user's own configuration files, a link from their home into the workspace.
    UserConfig,
}

fn kind<'a>(path: &'a str, gitdirs: &BTreeSet<String>, linked: &[String]) -> Option<Kind<'a>> {
    if path == keyless_core::path::SETTINGS_FILE {
        return Some(Kind::Settings);
    }
    if linked.iter().any(|l| l == path) {
        return Some(Kind::UserConfig);
    }
    let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
    if name == ".git" && !gitdirs.contains(parent) {
        return Some(Kind::DotGit);
    }
    if gitdirs.contains(parent) {
        return match name {
            "config" | "config.worktree" => Some(Kind::Config),
            "commondir" => Some(Kind::Commondir { gitdir: parent }),
            "hooks" | "info" => Some(Kind::Folder),
            _ => None,
        };
    }
    let (gitdir, folder) = parent.rsplit_once('/').unwrap_or(("", parent));
    if gitdirs.contains(gitdir) {
        return match folder {
            "hooks" => Some(Kind::Hook { name }),
            "info" => Some(Kind::Info { gitdir }),
            _ => None,
        };
    }
    None
}

/// The guard of one command: the snapshot from before it ran.
#[derive(Debug)]
pub struct Guard {
    root: PathBuf,
    dir: Dir,
    before: std::sync::Arc<Snapshot>,
    /// The user's configuration files that are links into the workspace (workspace-relative).
    linked: Vec<String>,
    /// The command runs without the user's confirmation, outside Auto mode: it may not change a
    /// file the user's tools run later (a build script writing `.envrc` is put back).
    pub unconfirmed: bool,
}

impl Guard {
    /// Takes the snapshot of `workspace` (call right before the command starts).
    ///
    /// # Errors
    /// When the workspace cannot be opened.
    pub fn take(workspace: &Path) -> io::Result<Self> {
        let dir = Dir::open_ambient_dir(workspace, cap_std::ambient_authority())?;
        let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        let before = scan(&dir, &root);
        let linked = linked_config(&root);
        Ok(Guard {
            root,
            dir,
            before,
            linked,
            unconfirmed: true,
        })
    }

    /// The files that steer programs, as the snapshot found them (the policy's context).
    #[must_use]
    pub fn steering(&self) -> &[String] {
        &self.before.steering
    }

    /// What the snapshot tells the policy beyond its lists: whether the steering list is whole,
    /// whether the workspace holds symlinks, whether the guard could look everywhere.
    #[must_use]
    pub fn facts(&self) -> ScanFacts {
        facts_of(&self.before, &self.root)
    }

    /// The symlinks that lead out of the workspace, as the snapshot found them, and whether
    /// that list is whole.
    #[must_use]
    pub fn links_out(&self) -> (Vec<String>, bool) {
        links_out(&self.before, &self.root)
    }

    /// Compares with the workspace now (call once the command and every process it started have
    /// ended), puts back what may not stay, and says what it did.
    #[must_use]
    pub fn check(self) -> Vec<Repair> {
        let after = scan(&self.dir, &self.root);
        let mut repairs = Vec::new();
        let mut quarantine = Quarantine::new(&self.dir);
        for (path, now) in &after.nodes {
            let was = self.before.nodes.get(path);
            if was == Some(now) {
                continue;
            }
            if let Err(why) = self.acceptable(path, now, &after) {
                repairs.push(self.put_back(path, Some(now), was, why, &mut quarantine));
            }
        }
        // A control file of a repository that is still there, gone: put it back.
        for (path, was) in &self.before.nodes {
            if after.nodes.contains_key(path) {
                continue;
            }
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            let grand = parent.rsplit_once('/').map_or("", |(p, _)| p);
            let of_live_repo = after.gitdirs.contains(parent)
                || (after.gitdirs.contains(grand)
                    && matches!(parent.rsplit('/').next(), Some("hooks" | "info")));
            let settings =
                path == keyless_core::path::SETTINGS_FILE || self.linked.iter().any(|l| l == path);
            if settings || (of_live_repo && !path.ends_with("/.git") && path != ".git") {
                repairs.push(self.put_back(
                    path,
                    None,
                    Some(was),
                    "the command removed it".into(),
                    &mut quarantine,
                ));
            }
        }
        // Files the user's tools run later, changed by a command nobody confirmed: put back.
        if self.unconfirmed {
            for (path, now) in &after.persist {
                let was = self.before.persist.get(path);
                if was != Some(now) {
                    let why = persist_why(path, &after);
                    repairs.push(self.put_back(path, Some(now), was, why, &mut quarantine));
                }
            }
            for (path, was) in &self.before.persist {
                if !after.persist.contains_key(path) {
                    let why = format!("{}; the command removed it", persist_why(path, &after));
                    repairs.push(self.put_back(path, None, Some(was), why, &mut quarantine));
                }
            }
        }
        // Folders deeper than the scan goes cannot be checked: a repository there could hold a
        // hook or an fsmonitor that the user's own git runs (through a gitlink, a `cd`). They
        // are moved aside whole, never left unchecked.
        for rel in &after.frontier {
            let why = format!(
                "a folder deeper than {MAX_DEPTH} folders, which keyless cannot look through (a repository in it could hold hooks or config git would run)"
            );
            repairs.push(self.put_back(rel, Some(&Node::Dir), None, why, &mut quarantine));
        }
        // A folder the scan could not look into, new or not the one that was there before: the
        // command made it (or made it unreadable), and what it holds cannot be checked. It is
        // moved aside whole. One that was there before the command is left: while it is there,
        // every command is confirmed (see `facts`).
        for ((parent, name), id) in &after.opaque {
            if self.before.opaque.get(&(parent.clone(), name.clone())) == Some(id) {
                continue;
            }
            repairs.push(self.put_aside_opaque(parent, name, &mut quarantine));
        }
        // What the guard put back changes folders; the next scan reads those again anyway.
        if after.too_many {
            repairs.push(Repair {
                path: ".".into(),
                why: format!("the workspace holds more than {MAX_ENTRIES} entries, more than keyless looks through: repositories past them were not checked, and nothing there was moved or put back; until it holds fewer, every command is confirmed"),
                moved_to: None,
                restored: false,
            });
        }
        repairs
    }

    /// Whether what the command left at `path` may stay (the module docs' rules).
    fn acceptable(&self, path: &str, now: &Node, after: &Snapshot) -> Result<(), String> {
        let copy_of_users = |now: &Node| {
            matches!(now, Node::File { .. })
                && self.before.nodes.iter().any(|(p, n)| {
                    n == now
                        && p.rsplit('/').next() == path.rsplit('/').next()
                        && kind(p, &self.before.gitdirs, &self.linked).is_some()
                })
        };
        match kind(path, &after.gitdirs, &self.linked) {
            None => Ok(()),
            Some(Kind::DotGit) => match now {
                Node::Dir => Ok(()),
                Node::File { bytes, .. } => self.gitdir_line(path, bytes, after),
                Node::Link(_) => Err("a .git that is a symlink".into()),
                Node::Other => Err("a .git that is not a file or folder".into()),
            },
            Some(Kind::Config) => match now {
                _ if copy_of_users(now) => Ok(()),
                Node::File { bytes, .. } => {
                    let text = String::from_utf8_lossy(bytes);
                    let gitdir = path.rsplit_once('/').map_or("", |(p, _)| p);
                    let base = self.root.join(gitdir);
                    let inside = |v: &str| self.inside(&base, v);
                    gitcontrol::vet_config(&text, &inside).map_err(|r| {
                        format!("a git config the command wrote ({r})")
                    })
                }
                _ => Err("a git config that is not a file".into()),
            },
            Some(Kind::Commondir { gitdir }) => match now {
                Node::File { bytes, .. }
                    if gitdir.rsplit_once('/').is_some_and(|(p, _)| p.ends_with("worktrees"))
                        && gitcontrol::is_standard_commondir(&String::from_utf8_lossy(bytes)) =>
                {
                    Ok(())
                }
                _ if copy_of_users(now) => Ok(()),
                _ => Err("a commondir the command wrote (it sends git to another repository's config and hooks)".into()),
            },
            Some(Kind::Folder) => match now {
                Node::Dir => Ok(()),
                _ => Err("git's hooks or info folder replaced by something else".into()),
            },
            Some(Kind::Hook { name }) => match now {
                Node::File { .. } if gitcontrol::is_sample_hook(name) => Ok(()),
                Node::Dir => Ok(()),
                _ if copy_of_users(now) => Ok(()),
                _ => Err("a git hook the command wrote (git runs it outside the sandbox)".into()),
            },
            Some(Kind::Settings) => Err(
                "keyless.json holds keyless's own settings; only the user writes it".into(),
            ),
            Some(Kind::UserConfig) => Err(
                "one of your own configuration files (your home links it into the workspace); only you write it".into(),
            ),
            Some(Kind::Info { gitdir }) => {
                if self.before.gitdirs.contains(gitdir) {
                    Err("the command changed git's info folder".into())
                } else {
                    Ok(())
                }
            }
        }
    }

    /// A `.git` file's `gitdir:` line must name a repository inside the workspace.
    fn gitdir_line(&self, path: &str, bytes: &[u8], after: &Snapshot) -> Result<(), String> {
        let text = String::from_utf8_lossy(bytes);
        let target = text
            .strip_prefix("gitdir:")
            .map(str::trim)
            .ok_or("a .git file without a gitdir: line")?;
        let folder = path.rsplit_once('/').map_or("", |(p, _)| p);
        let real = std::fs::canonicalize(self.root.join(folder).join(target))
            .map_err(|_| format!("a .git file pointing at {target}, which does not exist"))?;
        let rel = real
            .strip_prefix(&self.root)
            .map_err(|_| format!("a .git file pointing outside the workspace ({target})"))?;
        if after.gitdirs.contains(&rel.to_string_lossy().into_owned()) {
            Ok(())
        } else {
            Err(format!(
                "a .git file pointing at {target}, which is not a repository"
            ))
        }
    }

    /// Whether `v` (relative to `base`, or absolute) names a place inside the workspace.
    fn inside(&self, base: &Path, v: &str) -> bool {
        let p = base.join(v);
        let mut real = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => {
                    real.pop();
                }
                std::path::Component::CurDir => {}
                other => real.push(other),
            }
        }
        let real = std::fs::canonicalize(&real).unwrap_or(real);
        real.starts_with(&self.root)
    }

    /// Moves aside a folder the scan could not look into, made readable and writable by its
    /// owner first so that it can be moved (nothing in it is lost).
    fn put_aside_opaque(
        &self,
        parent: &str,
        name: &std::ffi::OsStr,
        quarantine: &mut Quarantine,
    ) -> Repair {
        let path = scan::shown(parent, name);
        let mut repair = Repair {
            why: format!(
                "a folder the command made or changed that keyless cannot look into ({}): a repository in it could hold hooks or config git would run",
                scan::opaque_why(name)
            ),
            path,
            moved_to: None,
            restored: false,
        };
        let Some(dir) = open_folder(&self.dir, parent) else {
            repair.why.push_str("; its folder is gone");
            return repair;
        };
        #[cfg(unix)]
        if let Ok(m) = dir.symlink_metadata(name) {
            use cap_std::fs::PermissionsExt;
            let mode = m.permissions().mode() | 0o700;
            let _ = dir.set_permissions(name, cap_std::fs::Permissions::from_mode(mode));
        }
        repair.moved_to = quarantine.take(&dir, name, &repair.path);
        repair
    }

    fn put_back(
        &self,
        path: &str,
        now: Option<&Node>,
        was: Option<&Node>,
        why: String,
        quarantine: &mut Quarantine,
    ) -> Repair {
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        let mut repair = Repair {
            path: path.to_string(),
            why,
            moved_to: None,
            restored: false,
        };
        let Some(parent) = open_folder(&self.dir, folder) else {
            repair
                .why
                .push_str("; its folder is gone, nothing to put back");
            return repair;
        };
        if now.is_some() {
            repair.moved_to = quarantine.take(&parent, name.as_ref(), path);
        }
        repair.restored = match was {
            Some(Node::File { bytes, mode }) => write_atomic_in(&parent, name, bytes)
                .and_then(|()| set_mode(&parent, name, *mode))
                .is_ok(),
            Some(Node::Link(target)) => parent.symlink_contents(target, name).is_ok(),
            Some(Node::Dir) => parent.create_dir(name).is_ok(),
            Some(Node::Other) | None => false,
        };
        repair
    }
}

fn set_mode(d: &Dir, name: &str, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt;
        d.set_permissions(name, cap_std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (d, name, mode);
        Ok(())
    }
}

/// The user's configuration files that are links into the workspace at `root` (real path),
/// workspace-relative: control points like keyless.json.
pub(super) fn linked_config(root: &Path) -> Vec<String> {
    crate::dirs::linked_user_config(root)
        .into_iter()
        .map(|l| l.rel)
        .collect()
}

/// The most symlinks leading out that the context lists (it travels with every session); with
/// more, every relative read is judged as possibly leading out.
const MAX_LINKS_OUT: usize = 1_000;

/// The links that lead out, and whether the list is whole: the scan looked everywhere, the
/// resolver finished, and no more than [`MAX_LINKS_OUT`] lead out.
fn links_out(s: &Snapshot, root: &Path) -> (Vec<String>, bool) {
    let found = keyless_core::policy::reads::links_out(&s.links, &root.to_string_lossy());
    let whole = found.complete && !s.incomplete && found.out.len() <= MAX_LINKS_OUT;
    let mut out = found.out;
    out.truncate(MAX_LINKS_OUT);
    (out, whole)
}

/// What a scan tells the policy ([`super::policy_context`]).
#[derive(Debug, Clone, Default)]
pub struct ScanFacts {
    pub steering: Vec<String>,
    /// The steering list is not whole.
    pub steering_unknown: bool,
    pub links_out: Vec<String>,
    /// The list of links that lead out is whole.
    pub links_whole: bool,
    pub links_any: bool,
    /// The guard cannot look through the whole workspace.
    pub unguarded: bool,
    /// The folders it cannot look into, for people (the first few).
    pub opaque: Vec<String>,
}

/// The most opaque folders the policy's context names.
const MAX_OPAQUE_NAMED: usize = 5;

fn facts_of(s: &Snapshot, root: &Path) -> ScanFacts {
    let (links_out, links_whole) = links_out(s, root);
    ScanFacts {
        steering: s.steering.clone(),
        steering_unknown: s.steering_cut || s.incomplete,
        links_out,
        links_whole,
        links_any: !s.links.is_empty(),
        unguarded: s.too_many || !s.opaque.is_empty(),
        opaque: s
            .opaque
            .keys()
            .take(MAX_OPAQUE_NAMED)
            .map(|(parent, name)| scan::shown(parent, name))
            .collect(),
    }
}

/// A scan of `workspace` now (from the last one where folders did not change), for the policy;
/// `None` when the workspace cannot be read.
#[must_use]
pub fn scan_facts(workspace: &Path) -> Option<ScanFacts> {
    let d = Dir::open_ambient_dir(workspace, cap_std::ambient_authority()).ok()?;
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    Some(facts_of(&scan(&d, &root), &root))
}
