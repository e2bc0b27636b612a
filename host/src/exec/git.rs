//! `@@commit`: `git add -A` (deletions included) and commit through libgit2, then a push of that
//! commit to the origin URL recorded at session start.
//!
//! Nothing the model can write runs here, outside the sandbox:
//! - libgit2 runs no hooks, no fsmonitor and no filter programs;
//! - the repository must be the one recorded at session start (a `.git` a command created or
//!   redirected since is refused);
//! - the push runs the user's own git (so their credential helpers and ssh-agent work), but from
//!   a bare repository keyless owns (`.agent/push.git`, read-only inside the sandbox) that borrows
//!   the workspace's objects. The workspace's `.git/config` and hooks are never read by that
//!   process, hooks are switched off, and the URL is the one recorded at session start.

use super::workspace::Workspace;
use super::Failure;
use keyless_core::Code;
use std::path::{Path, PathBuf};

/// Git settings (Git.* in keyless.json).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSettings {
    pub protected_branches: Vec<String>,
    pub auto_init: bool,
    /// Git.TaskBranch: the branch a session makes when it starts on a protected one.
    pub task_branch: String,
    /// Used when the repository has no user.name/user.email.
    pub fallback_name: String,
    pub fallback_email: String,
    pub push: bool,
}

impl Default for GitSettings {
    fn default() -> Self {
        Self {
            protected_branches: vec!["main".into(), "master".into(), "release/*".into()],
            auto_init: false,
            task_branch: keyless_core::branch::DEFAULT_TASK_BRANCH.into(),
            fallback_name: "keyless".into(),
            fallback_email: "keyless@localhost".into(),
            push: true,
        }
    }
}

/// The repository as it was at session start: where its git folder is and where origin points.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepoRecord {
    /// The canonical git folder, when the workspace was a repository.
    pub git_dir: Option<PathBuf>,
    /// origin's URL, when there was one.
    pub origin_url: Option<String>,
    /// The branch keyless made for the task (the session started on a protected one).
    #[serde(default)]
    pub task_branch: Option<String>,
    /// The branch the session started on.
    #[serde(default)]
    pub base_branch: Option<String>,
    /// The commit the session started from.
    #[serde(default)]
    pub base_commit: Option<String>,
}

pub(crate) fn open_here(root: &Path) -> Option<git2::Repository> {
    git2::Repository::open_ext(
        root,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .ok()
}

fn canonical_git_dir(repo: &git2::Repository) -> PathBuf {
    std::fs::canonicalize(repo.path()).unwrap_or_else(|_| repo.path().to_path_buf())
}

fn origin_of(repo: &git2::Repository) -> Option<String> {
    repo.find_remote("origin")
        .ok()
        .and_then(|r| r.url().ok().map(str::to_string))
}

impl RepoRecord {
    /// Reads the workspace's repository now (at session start).
    #[must_use]
    pub fn capture(root: &Path) -> Self {
        match open_here(root) {
            Some(repo) => Self {
                git_dir: Some(canonical_git_dir(&repo)),
                origin_url: origin_of(&repo),
                base_branch: branch_name(&repo).ok(),
                base_commit: repo
                    .head()
                    .ok()
                    .and_then(|h| h.peel_to_commit().ok())
                    .map(|c| c.id().to_string()),
                task_branch: None,
            },
            None => Self::default(),
        }
    }

    /// What the model is told about git (the branch it works on now).
    #[must_use]
    pub fn facts(&self, root: &Path, s: &GitSettings) -> keyless_core::branch::GitFacts {
        keyless_core::branch::GitFacts {
            repository: self.git_dir.is_some(),
            branch: open_here(root).and_then(|r| branch_name(&r).ok()),
            created_from: self.task_branch.as_ref().and(self.base_branch.clone()),
            protected: s.protected_branches.clone(),
            origin: self.origin_url.clone(),
        }
    }
}

/// Starts a session's repository record. On a protected branch (and with `Git.TaskBranch` set),
/// the task gets a branch of its own from there, `keyless/{date}-{task}` (a number added when the
/// name is taken), checked out with the working tree as it is. Returns the record and, when a
/// branch was made, a sentence for the user.
#[must_use]
pub fn start_session(
    root: &Path,
    s: &GitSettings,
    task: &str,
    unix_secs: i64,
) -> (RepoRecord, Option<String>) {
    let mut rec = RepoRecord::capture(root);
    let (Some(repo), Some(from), Some(commit)) = (
        open_here(root),
        rec.base_branch.clone(),
        rec.base_commit.clone(),
    ) else {
        return (rec, None);
    };
    let Some(pattern) = keyless_core::branch::protected_by(&from, &s.protected_branches) else {
        return (rec, None);
    };
    if s.task_branch.is_empty() {
        return (rec, None);
    }
    let mut base = keyless_core::branch::task_branch(&s.task_branch, unix_secs, task);
    // A name shaped like one of this repository's remotes' branches (`fork/main` with a remote
    // `fork`) would be confused with it: the default name is used instead.
    let first = base.split('/').next().unwrap_or("");
    if repo
        .remotes()
        .is_ok_and(|r| r.iter().any(|name| name.ok().flatten() == Some(first)))
    {
        base = keyless_core::branch::task_branch(
            keyless_core::branch::DEFAULT_TASK_BRANCH,
            unix_secs,
            task,
        );
    }
    if keyless_core::branch::protected_by(&base, &s.protected_branches).is_some() {
        return (rec, None);
    }
    let Ok(target) = git2::Oid::from_str(&commit).and_then(|o| repo.find_commit(o)) else {
        return (rec, None);
    };
    let name = (1..100)
        .map(|n| {
            if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            }
        })
        .find(|n| repo.find_branch(n, git2::BranchType::Local).is_err());
    let Some(name) = name else {
        return (rec, None);
    };
    // HEAD moves to a new branch at the same commit: the index and the working tree stay as
    // they are (libgit2 runs no hooks).
    let made = repo
        .branch(&name, &target, false)
        .and_then(|_| repo.set_head(&format!("refs/heads/{name}")));
    match made {
        Ok(()) => {
            rec.task_branch = Some(name.clone());
            (
                rec,
                Some(format!(
                    "{from} is protected (Git.ProtectedBranches: {pattern}), so this task works on a new branch, {name}, made from it; merge it when you are happy with it."
                )),
            )
        }
        Err(e) => (
            rec,
            Some(format!(
                "{from} is protected, and the task branch {name} could not be made ({}); @@commit will be refused on {from}.",
                e.message()
            )),
        ),
    }
}

pub(crate) fn git_err(what: &str, e: &git2::Error) -> Failure {
    Failure::new(Code::GitFailure, format!("{what}: {}", e.message()))
}

/// Opens the recorded repository, or creates one with Git.AutoInit when there was none.
fn open_recorded(
    ws: &Workspace,
    s: &GitSettings,
    rec: &RepoRecord,
) -> Result<git2::Repository, Failure> {
    match check_recorded(ws, s, rec)? {
        Some(repo) => Ok(repo),
        None => git2::Repository::init(ws.root()).map_err(|e| {
            Failure::new(
                Code::GitInitFailed,
                format!("git init failed: {}", e.message()),
            )
        }),
    }
}

/// The recorded repository, or `None` when there was none and Git.AutoInit will make one.
fn check_recorded(
    ws: &Workspace,
    s: &GitSettings,
    rec: &RepoRecord,
) -> Result<Option<git2::Repository>, Failure> {
    let dot_git = ws.root().join(".git");
    let Some(want) = &rec.git_dir else {
        if std::fs::symlink_metadata(&dot_git).is_ok() {
            return Err(Failure::new(
                Code::NotAGitRepository,
                "the workspace was not a git repository when the session started; a .git made during the session is not used (run git init yourself, or set Git.AutoInit before the session)",
            ));
        }
        if !s.auto_init {
            return Err(Failure::new(
                Code::NotAGitRepository,
                "the workspace is not a git repository (set Git.AutoInit to create one)",
            ));
        }
        return Ok(None);
    };
    let repo = open_here(ws.root()).ok_or_else(|| {
        Failure::new(
            Code::NotAGitRepository,
            "the repository recorded at session start is gone",
        )
    })?;
    if &canonical_git_dir(&repo) != want {
        return Err(Failure::new(
            Code::GitFailure,
            format!(
                ".git now points to {}, not to {} as at session start; nothing was committed",
                repo.path().display(),
                want.display()
            ),
        ));
    }
    Ok(Some(repo))
}

/// KA_BRANCH_PROTECTED when `branch` matches Git.ProtectedBranches.
pub(crate) fn refuse_protected(s: &GitSettings, branch: &str) -> Result<(), Failure> {
    match keyless_core::branch::protected_by(branch, &s.protected_branches) {
        Some(p) => Err(Failure::new(
            Code::BranchProtected,
            format!(
                "branch \"{branch}\" is protected (pattern \"{p}\"); nothing was committed. Commit on another branch (the user can make one, or start the session there)."
            ),
        )),
        None => Ok(()),
    }
}

/// Why `@@commit` would be refused now, asked before anyone is asked to approve it: a
/// workspace that is not (or no longer) the recorded repository, a detached HEAD, a protected
/// branch. `None`: it may go ahead.
#[must_use]
pub fn commit_refusal(ws: &Workspace, s: &GitSettings, rec: &RepoRecord) -> Option<Failure> {
    let repo = match check_recorded(ws, s, rec) {
        Ok(Some(repo)) => repo,
        // Git.AutoInit makes the repository on its default branch when the commit runs: that
        // branch is judged now, before anyone is asked (and before anything is made).
        Ok(None) => return refuse_protected(s, &init_branch()).err(),
        Err(f) => return Some(f),
    };
    branch_name(&repo)
        .and_then(|b| refuse_protected(s, &b))
        .err()
}

/// The branch `git init` (libgit2's, as Git.AutoInit runs it) starts on: the user's
/// `init.defaultBranch`, else `master`.
fn init_branch() -> String {
    git2::Config::open_default()
        .and_then(|c| c.get_string("init.defaultBranch"))
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "master".to_string())
}

pub(crate) fn branch_name(repo: &git2::Repository) -> Result<String, Failure> {
    // An unborn HEAD still names its branch.
    let head = repo
        .find_reference("HEAD")
        .map_err(|e| git_err("cannot read HEAD", &e))?;
    match head.symbolic_target() {
        Ok(Some(t)) => Ok(t.trim_start_matches("refs/heads/").to_string()),
        Ok(None) => Err(Failure::new(
            Code::GitFailure,
            "HEAD is detached; check out a branch first",
        )),
        Err(e) => Err(git_err("cannot read HEAD", &e)),
    }
}

/// Commits everything with `message` and pushes. Returns the text for the result.
///
/// # Errors
/// KA_NOT_A_GIT_REPOSITORY, KA_GIT_INIT_FAILED, KA_BRANCH_PROTECTED, KA_GIT_FAILURE (with git's own
/// message), KA_GIT_NOT_INSTALLED (push needs the git program).
pub fn commit(
    ws: &Workspace,
    s: &GitSettings,
    rec: &RepoRecord,
    message: &str,
) -> Result<String, Failure> {
    let repo = open_recorded(ws, s, rec)?;
    // Keep keyless's own folder out of every commit.
    ws.agent_dir()
        .map_err(|e| Failure::new(Code::FileIo, format!("cannot prepare .agent: {e}")))?;
    let branch = branch_name(&repo)?;
    refuse_protected(s, &branch)?;
    let mut index = repo
        .index()
        .map_err(|e| git_err("cannot open the index", &e))?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .map_err(|e| git_err("git add -A failed", &e))?;
    index
        .update_all(["*"], None)
        .map_err(|e| git_err("git add -A failed", &e))?;
    index
        .write()
        .map_err(|e| git_err("cannot write the index", &e))?;
    let tree_id = index
        .write_tree()
        .map_err(|e| git_err("cannot write the tree", &e))?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| git_err("cannot read the tree", &e))?;
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    if parent.as_ref().is_some_and(|p| p.tree_id() == tree_id) {
        return Ok(format!(
            "nothing to commit on {branch}; the working tree is clean"
        ));
    }
    let sig = repo
        .signature()
        .or_else(|_| git2::Signature::now(&s.fallback_name, &s.fallback_email))
        .map_err(|e| git_err("no commit identity", &e))?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let oid = repo
        .commit(Some("HEAD"), &sig, &sig, message.trim(), &tree, &parents)
        .map_err(|e| git_err("git commit failed", &e))?;
    let short = oid.to_string()[..8].to_string();
    let mut text = format!(
        "committed {short} on {branch}: {}",
        message.lines().next().unwrap_or("").trim()
    );
    if !s.push {
        return Ok(text);
    }
    let Some(url) = &rec.origin_url else {
        text.push_str("\nnot pushed: the repository had no remote named origin at session start");
        return Ok(text);
    };
    match origin_of(&repo) {
        Some(now) if &now == url => {}
        now => {
            return Err(Failure::new(
                Code::GitFailure,
                format!(
                    "the commit is made, but not pushed: origin now points to {}, not to {url} as recorded at session start. keyless pushes only where you pointed origin yourself.",
                    now.as_deref().unwrap_or("nothing")
                ),
            ))
        }
    }
    let out = push(ws, &repo, url, oid, &branch)?;
    set_upstream(&repo, &branch, oid);
    text.push_str("\npushed to origin/");
    text.push_str(&branch);
    if !out.trim().is_empty() {
        text.push('\n');
        text.push_str(out.trim());
    }
    Ok(text)
}

/// `.agent/push.git`: a bare repository keyless owns, borrowing the workspace's objects.
fn push_repo(ws: &Workspace, repo: &git2::Repository) -> Result<PathBuf, Failure> {
    let io =
        |e: std::io::Error| Failure::new(Code::FileIo, format!("cannot prepare the push: {e}"));
    let dir = ws.agent_dir().map_err(io)?.join("push.git");
    if !dir.join("HEAD").is_file() {
        git2::Repository::init_bare(&dir).map_err(|e| git_err("cannot prepare the push", &e))?;
    }
    // Only keyless writes here; start from a known config and no hooks every time.
    std::fs::write(
        dir.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
    )
    .map_err(io)?;
    let _ = std::fs::remove_dir_all(dir.join("hooks"));
    let objects = std::fs::canonicalize(repo.path().join("objects")).map_err(io)?;
    std::fs::create_dir_all(dir.join("objects").join("info")).map_err(io)?;
    std::fs::write(
        dir.join("objects").join("info").join("alternates"),
        format!("{}\n", objects.display()),
    )
    .map_err(io)?;
    let shallow = repo.path().join("shallow");
    if shallow.is_file() {
        std::fs::copy(&shallow, dir.join("shallow")).map_err(io)?;
    } else {
        let _ = std::fs::remove_file(dir.join("shallow"));
    }
    Ok(dir)
}

fn push(
    ws: &Workspace,
    repo: &git2::Repository,
    url: &str,
    oid: git2::Oid,
    branch: &str,
) -> Result<String, Failure> {
    let launcher = crate::launch::Launcher::new(Some(ws.root()));
    let git = launcher.program("git").map_err(|e| {
        Failure::new(
            Code::GitNotInstalled,
            format!("the commit is made, but pushing needs the git program: {e}"),
        )
    })?;
    let bare = push_repo(ws, repo)?;
    let url = absolute_local_url(url, ws.root());
    let refused = |why: String| {
        Failure::new(
            Code::LaunchRefused,
            format!("the commit is made, but not pushed: {why}. Push it yourself with `git push` once you have checked that."),
        )
    };
    if let Some(local) = local_path(&url) {
        if launcher.config_writable(&local) {
            return Err(refused(format!(
                "origin ({url}) is a folder the model can write, and git would run what its hooks and config name"
            )));
        }
    }
    let (files, values) = config_files(&launcher, &git, &bare);
    if let Some(file) = launcher.writable_among(&files).first() {
        return Err(refused(format!(
            "git would read {}, which is in the workspace (or a temp folder) where the model can write",
            file.display()
        )));
    }
    // A setting that names a program or a file (core.sshCommand with `-F FILE`, a credential
    // helper, core.askPass, a url.*.insteadOf to a local folder) where the model can write.
    let runs_or_reads = |entry: &&String| {
        let key = entry.split('=').next().unwrap_or("").to_ascii_lowercase();
        ["core.", "credential.", "url.", "gpg.", "http.", "ssh."]
            .iter()
            .any(|p| key.starts_with(p))
    };
    if let Some(v) = values
        .iter()
        .filter(runs_or_reads)
        .find(|v| launcher.names_writable_place(v))
    {
        return Err(refused(format!(
            "your git configuration names a place in the workspace (or a temp folder) where the model can write: {}",
            keyless_core::text::printable(&keyless_core::text::truncate_chars(v, 200))
        )));
    }
    if let Some(file) = launcher.writable_among(&ssh_config_files()).first() {
        return Err(refused(format!(
            "ssh would read {}, which is in the workspace (or a temp folder) where the model can write",
            file.display()
        )));
    }
    let mut c = launcher.command(&git, crate::launch::Purpose::Git);
    c.arg("--git-dir")
        .arg(&bare)
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "push",
            "--porcelain",
            "--",
            &url,
        ])
        .arg(format!("{oid}:refs/heads/{branch}"))
        .env("GIT_TERMINAL_PROMPT", "0");
    let out = c
        .output()
        .map_err(|e| Failure::new(Code::GitFailure, format!("cannot run git push: {e}")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(Failure::new(
            Code::GitFailure,
            format!("the commit is made, but git push failed:\n{}", text.trim()),
        ))
    }
}

/// A local origin as git reads it (a path, or `file://`), made absolute against the workspace so
/// that git can start outside it; any other URL unchanged.
fn absolute_local_url(url: &str, root: &Path) -> String {
    if url.contains("://") || is_scp_like(url) || Path::new(url).is_absolute() {
        return url.to_string();
    }
    root.join(url).display().to_string()
}

/// `host:path`, git's short form of an ssh URL: a colon before any slash.
fn is_scp_like(url: &str) -> bool {
    match (url.find(':'), url.find('/')) {
        (Some(c), Some(s)) => c < s,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The folder a local origin names.
fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(rest) = url.strip_prefix("file://") {
        return Some(PathBuf::from(rest));
    }
    (!url.contains("://") && !is_scp_like(url)).then(|| PathBuf::from(url))
}

/// Every file the push's git reads its config from (the system's, the user's, their includes),
/// as git itself lists them (`git config --list --show-origin --includes`), and every value set
/// there (`key=value`).
fn config_files(
    launcher: &crate::launch::Launcher,
    git: &crate::launch::Program,
    bare: &Path,
) -> (Vec<PathBuf>, Vec<String>) {
    let mut c = launcher.command(git, crate::launch::Purpose::Git);
    c.arg("--git-dir")
        .arg(bare)
        .args(["config", "--list", "--show-origin", "--includes", "-z"])
        .stdin(std::process::Stdio::null());
    let mut files: Vec<PathBuf> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    if let Ok(out) = c.output() {
        // `-z`: `ORIGIN NUL key NL value NUL`, repeated.
        let mut parts = out.stdout.split(|b| *b == 0);
        while let (Some(origin), Some(entry)) = (parts.next(), parts.next()) {
            let entry = String::from_utf8_lossy(entry).replacen('\n', "=", 1);
            if let Some(p) = origin.strip_prefix(b"file:") {
                let p = PathBuf::from(String::from_utf8_lossy(p).into_owned());
                let p = if p.is_absolute() { p } else { bare.join(p) };
                // The push repository's own config: keyless writes it afresh before every push.
                if p.starts_with(bare) {
                    continue;
                }
                files.push(p);
            }
            values.push(entry);
        }
    }
    // The files git would read even when they hold nothing yet (a symlink into the workspace
    // is planted before it holds a setting).
    files.extend(crate::dirs::git_config_candidates());
    files.sort();
    files.dedup();
    (files, values)
}

/// The ssh client's config files a push over ssh reads.
fn ssh_config_files() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("/etc/ssh/ssh_config")];
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        v.push(home.join(".ssh").join("config"));
    }
    v
}

/// What `push -u` records: origin/<branch> and the branch's upstream.
fn set_upstream(repo: &git2::Repository, branch: &str, oid: git2::Oid) {
    let _ = repo.reference(
        &format!("refs/remotes/origin/{branch}"),
        oid,
        true,
        "keyless: push",
    );
    if let Ok(mut cfg) = repo.config() {
        let _ = cfg.set_str(&format!("branch.{branch}.remote"), "origin");
        let _ = cfg.set_str(
            &format!("branch.{branch}.merge"),
            &format!("refs/heads/{branch}"),
        );
    }
}

/// What the task left in the repository, for the user's review at `@@done`: the commits since
/// the session started (on the task branch, when keyless made one), their diff stat, what is not
/// committed yet, and how to merge. `None` outside a repository.
#[must_use]
pub fn review(root: &Path, rec: &RepoRecord) -> Option<String> {
    let repo = open_here(root)?;
    let branch = branch_name(&repo).ok()?;
    let base = rec
        .base_commit
        .as_ref()
        .and_then(|c| git2::Oid::from_str(c).ok());
    let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let mut commits = Vec::new();
    let (mut files_changed, mut insertions, mut deletions) = (0, 0, 0);
    if let Some(head) = &head {
        if let Ok(mut walk) = repo.revwalk() {
            let _ = walk.push(head.id());
            if let Some(b) = base {
                let _ = walk.hide(b);
            }
            for oid in walk.flatten().take(1000) {
                if let Ok(c) = repo.find_commit(oid) {
                    let id = oid.to_string();
                    commits.push((
                        id[..8.min(id.len())].to_string(),
                        c.summary().ok().flatten().unwrap_or("").to_string(),
                    ));
                }
            }
        }
        let base_tree = base
            .and_then(|b| repo.find_commit(b).ok())
            .and_then(|c| c.tree().ok());
        if let Ok(stats) = head
            .tree()
            .and_then(|t| repo.diff_tree_to_tree(base_tree.as_ref(), Some(&t), None))
            .and_then(|d| d.stats())
        {
            files_changed = stats.files_changed();
            insertions = stats.insertions();
            deletions = stats.deletions();
        }
    }
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).include_ignored(false);
    let uncommitted = repo.statuses(Some(&mut opts)).map_or(0, |s| s.len());
    let pushed = repo
        .find_reference(&format!("refs/remotes/origin/{branch}"))
        .is_ok();
    Some(
        keyless_core::branch::Review {
            from: rec.task_branch.as_ref().and(rec.base_branch.clone()),
            branch,
            base: rec
                .base_commit
                .as_deref()
                .map_or_else(String::new, |c| c[..8.min(c.len())].to_string()),
            commits,
            files_changed,
            insertions,
            deletions,
            uncommitted,
            pushed,
            persistence: persistence_changed(root, &repo, base),
        }
        .text(),
    )
}

/// The files the user's own tools run later ([`keyless_core::policy::persistence`]) that differ
/// from `base` (committed since, or not committed, untracked included).
fn persistence_changed(
    root: &Path,
    repo: &git2::Repository,
    base: Option<git2::Oid>,
) -> Vec<keyless_core::policy::persistence::Persistence> {
    let tree = base
        .and_then(|b| repo.find_commit(b).ok())
        .and_then(|c| c.tree().ok());
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let Ok(diff) = repo.diff_tree_to_workdir_with_index(tree.as_ref(), Some(&mut opts)) else {
        return Vec::new();
    };
    let ctx = super::persistence::persistence_context(root);
    let mut out = Vec::new();
    for d in diff.deltas().take(100_000) {
        for f in [d.new_file(), d.old_file()] {
            let Some(rel) = f.path().map(|p| p.to_string_lossy().into_owned()) else {
                continue;
            };
            if out
                .iter()
                .any(|p: &keyless_core::policy::persistence::Persistence| p.path == rel)
            {
                continue;
            }
            let text = std::fs::read(root.join(&rel))
                .ok()
                .filter(|b| b.len() < 1 << 20)
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            if let Some(p) =
                keyless_core::policy::persistence::persistence(&rel, text.as_deref(), &ctx)
            {
                out.push(p);
            }
        }
    }
    out
}
