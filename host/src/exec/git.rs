//! `@@commit`: `git add -A` (deletions included) and commit through libgit2, then
//! `git push -u origin <branch>` through the user's own git, so their credential helpers and
//! ssh-agent work exactly as they do for them.

use super::workspace::Workspace;
use super::Failure;
use keyless_core::policy::pattern_matches;
use keyless_core::Code;
use std::path::Path;
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

fn git_err(what: &str, e: &git2::Error) -> Failure {
    Failure::new(Code::GitFailure, format!("{what}: {}", e.message()))
}

fn open_or_init(ws: &Workspace, s: &GitSettings) -> Result<git2::Repository, Failure> {
    match git2::Repository::open(ws.root()) {
        Ok(r) => Ok(r),
        Err(_) if s.auto_init => git2::Repository::init(ws.root()).map_err(|e| {
            Failure::new(
                Code::GitInitFailed,
                format!("git init failed: {}", e.message()),
            )
        }),
        Err(_) => Err(Failure::new(
            Code::NotAGitRepository,
            "the workspace is not a git repository (set Git.AutoInit to create one)",
        )),
    }
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
pub fn commit(ws: &Workspace, s: &GitSettings, message: &str) -> Result<String, Failure> {
    let repo = open_or_init(ws, s)?;
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
    if repo.find_remote("origin").is_err() {
        text.push_str("\nnot pushed: the repository has no remote named origin");
        return Ok(text);
    }
    push(ws.root(), &branch).map(|out| {
        text.push_str("\npushed to origin/");
        text.push_str(&branch);
        if !out.trim().is_empty() {
            text.push('\n');
            text.push_str(out.trim());
        }
        text
    })
}

fn push(root: &Path, branch: &str) -> Result<String, Failure> {
    let out = Command::new("git")
        .args(["push", "--porcelain", "-u", "origin", branch])
        .current_dir(root)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Failure::new(
                    Code::GitNotInstalled,
                    "the commit is made, but pushing needs the git program, which is not installed",
                )
            } else {
                Failure::new(Code::GitFailure, format!("cannot run git push: {e}"))
            }
        })?;
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
