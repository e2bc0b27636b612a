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
use keyless_core::policy::pattern_matches;
use keyless_core::Code;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Git settings (Git.* in keyless.json).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSettings {
    pub protected_branches: Vec<String>,
    pub auto_init: bool,
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
}

fn open_here(root: &Path) -> Option<git2::Repository> {
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
            },
            None => Self::default(),
        }
    }
}

fn git_err(what: &str, e: &git2::Error) -> Failure {
    Failure::new(Code::GitFailure, format!("{what}: {}", e.message()))
}

/// Opens the recorded repository, or creates one with Git.AutoInit when there was none.
fn open_recorded(
    ws: &Workspace,
    s: &GitSettings,
    rec: &RepoRecord,
) -> Result<git2::Repository, Failure> {
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
        return git2::Repository::init(ws.root()).map_err(|e| {
            Failure::new(
                Code::GitInitFailed,
                format!("git init failed: {}", e.message()),
            )
        });
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
    Ok(repo)
}

fn branch_name(repo: &git2::Repository) -> Result<String, Failure> {
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
    if let Some(p) = s
        .protected_branches
        .iter()
        .find(|p| pattern_matches(p, &branch))
    {
        return Err(Failure::new(
            Code::BranchProtected,
            format!(
                "branch \"{branch}\" is protected (pattern \"{p}\"); create a feature branch first"
            ),
        ));
    }
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
    let git = super::programs::trusted("git", ws.root()).ok_or_else(|| {
        Failure::new(
            Code::GitNotInstalled,
            "the commit is made, but pushing needs the git program, which is not installed (or only found in a folder the model can write)",
        )
    })?;
    let bare = push_repo(ws, repo)?;
    let mut c = Command::new(git);
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
            url,
        ])
        .arg(format!("{oid}:refs/heads/{branch}"))
        // Relative local URLs resolve from the workspace, as they did for origin.
        .current_dir(ws.root())
        .env("GIT_TERMINAL_PROMPT", "0");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
    ] {
        c.env_remove(var);
    }
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
