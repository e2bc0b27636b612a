//! The branch a task works on. A session that starts on a protected branch (`main`, `master`,
//! `release/*` by default) works on a branch of its own, named from `Git.TaskBranch`
//! (`keyless/{date}-{task}`): the date and a short slug of the task. The model is told the
//! branch, which branches are protected and whether there is an origin ([`GitFacts`]).

use serde::{Deserialize, Serialize};

/// The default `Git.TaskBranch`.
pub const DEFAULT_TASK_BRANCH: &str = "keyless/{date}-{task}";

/// A short, ref-safe slug of a task: its first words, lower case ASCII letters and digits joined
/// by `-`, at most 40 characters; `task` when nothing is left.
#[must_use]
pub fn slug(task: &str) -> String {
    let mut out = String::new();
    for word in task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
    {
        let w = word.to_ascii_lowercase();
        if out.len() + w.len() + 1 > 40 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&w);
    }
    if out.is_empty() {
        "task".into()
    } else {
        out
    }
}

/// The calendar date (year, month, day, UTC) of a Unix time in seconds.
#[must_use]
pub fn civil_date(unix_secs: i64) -> (i64, u32, u32) {
    // Howard Hinnant's days-to-civil.
    let z = unix_secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The task branch's name: `template` with `{date}` (YYYY-MM-DD) and `{task}` ([`slug`]).
#[must_use]
pub fn task_branch(template: &str, unix_secs: i64, task: &str) -> String {
    let (y, m, d) = civil_date(unix_secs);
    template
        .replace("{date}", &format!("{y:04}-{m:02}-{d:02}"))
        .replace("{task}", &slug(task))
}

/// Why a `Git.TaskBranch` template cannot name a task branch, if it cannot: git's own rules for
/// a branch name (no `..`, `@{`, control characters, `~^:?*[\ `, no segment that starts with
/// `.` or ends with `.lock`), and none of the names that git reads as something else (`HEAD`,
/// `@`, a name under `refs/`, one shaped like a remote's branch: `origin/…`, `upstream/…`).
/// The host refuses a name whose first segment is one of the repository's remotes too.
///
/// # Errors
/// The reason, for the user.
pub fn check_template(template: &str) -> Result<(), String> {
    if template.is_empty() {
        return Ok(());
    }
    let name = task_branch(template, 0, "task");
    let segments: Vec<&str> = name.split('/').collect();
    let bad_char = name
        .chars()
        .any(|c| c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'));
    let why = if name.contains("..")
        || name.contains("@{")
        || bad_char
        || name.starts_with('-')
        || segments
            .iter()
            .any(|s| s.is_empty() || s.starts_with('.') || s.ends_with(".lock") || s.ends_with('.'))
    {
        Some("git does not take such a branch name")
    } else if matches!(name.as_str(), "HEAD" | "@") || segments[0] == "refs" {
        Some("git would read it as something else than a branch")
    } else if matches!(segments[0], "origin" | "upstream") || segments[0] == "HEAD" {
        Some("it would be named like a remote's branch, which git and the user would confuse")
    } else {
        None
    };
    match why {
        Some(why) => Err(format!(
            "\"{template}\" does not make a task branch name ({why}); for example keyless/{{date}}-{{task}}, or \"\" for none"
        )),
        None => Ok(()),
    }
}

/// The first protected-branch pattern `branch` matches, if any.
#[must_use]
pub fn protected_by<'a>(branch: &str, patterns: &'a [String]) -> Option<&'a str> {
    patterns
        .iter()
        .find(|p| crate::policy::pattern_matches(p, branch))
        .map(String::as_str)
}

/// What the model is told about git at the start of a session.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitFacts {
    /// The workspace is a git repository.
    pub repository: bool,
    /// The branch the session works on.
    pub branch: Option<String>,
    /// When keyless made `branch` for this task: the protected branch it started from.
    pub created_from: Option<String>,
    /// Git.ProtectedBranches.
    pub protected: Vec<String>,
    /// origin's URL (where `@@commit` pushes), when there is one.
    pub origin: Option<String>,
}

impl GitFacts {
    /// The system prompt's `# Git` section.
    #[must_use]
    pub fn prompt(&self) -> String {
        let protected = if self.protected.is_empty() {
            "none".to_string()
        } else {
            self.protected.join(", ")
        };
        if !self.repository {
            return format!(
                "The workspace is not a git repository: @@commit is refused (KA_NOT_A_GIT_REPOSITORY) unless the user set Git.AutoInit. Protected branches: {protected}."
            );
        }
        let mut t = match (&self.branch, &self.created_from) {
            (Some(b), Some(from)) => format!(
                "You work on branch {b}, which keyless made for this task from {from} ({from} is protected)."
            ),
            (Some(b), None) => format!("You work on branch {b}."),
            (None, _) => "HEAD is detached: @@commit is refused until the user checks out a branch.".to_string(),
        };
        t.push_str(&format!(
            " Protected branches (@@commit is refused there, KA_BRANCH_PROTECTED): {protected}. Do not switch branches."
        ));
        match &self.origin {
            Some(url) => t.push_str(&format!(
                " @@commit commits everything (git add -A) and pushes the branch to origin ({url})."
            )),
            None => t.push_str(" There is no origin: @@commit commits locally only."),
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_branch_templates_that_git_would_misread_are_refused() {
        for t in [
            "origin/main",
            "upstream/{task}",
            "refs/heads/main",
            "@",
            "HEAD",
            "a..b",
            "x.lock",
            "main.",
            "main/",
            "-x",
            "a//b",
            "a/.b",
            "x@{1}",
            "a b",
        ] {
            assert!(check_template(t).is_err(), "{t}");
        }
        for t in ["", "keyless/{date}-{task}", "ai/{task}", "task-{date}"] {
            assert!(check_template(t).is_ok(), "{t}");
        }
    }

    #[test]
    fn task_branches_are_named_from_the_date_and_the_task() {
        assert_eq!(
            task_branch(
                DEFAULT_TASK_BRANCH,
                1_796_198_400,
                "Fix the failing test in calc.py!"
            ),
            "keyless/2026-12-02-fix-the-failing-test-in-calc"
        );
        assert_eq!(slug("  ¿¡  "), "task");
        assert_eq!(slug("Add ünïcode support"), "add-n-code-support");
        assert!(slug(&"word ".repeat(30)).len() <= 40);
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(951_782_400), (2000, 2, 29));
        assert_eq!(
            protected_by("release/1.2", &["main".into(), "release/*".into()]),
            Some("release/*")
        );
        assert_eq!(protected_by("keyless/x", &["main".into()]), None);
    }
}

/// What a finished task left in the repository, for the user's review.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// The branch the task worked on.
    pub branch: String,
    /// The branch keyless made it from (a task branch), else `None`.
    pub from: Option<String>,
    /// The commit the session started from (short).
    pub base: String,
    /// Commits since then, newest first: (short id, summary).
    pub commits: Vec<(String, String)>,
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// Files changed and not committed.
    pub uncommitted: usize,
    /// Whether the branch is on origin.
    pub pushed: bool,
    /// Files the user's own tools run later ([`crate::policy::persistence`]) that differ from
    /// the commit the session started from (committed or not), with who runs each.
    pub persistence: Vec<crate::policy::persistence::Persistence>,
}

impl Review {
    /// How the user reviews and merges the task's work, in a few lines.
    #[must_use]
    pub fn text(&self) -> String {
        let b = &self.branch;
        let since = self.from.as_deref().unwrap_or(&self.base);
        let mut t = match self.commits.len() {
            0 => format!("No commit on {b} since the task started."),
            n => {
                let mut t = format!(
                    "{n} commit{} on {b} since {since}: {} file{} changed, +{} −{}",
                    if n == 1 { "" } else { "s" },
                    self.files_changed,
                    if self.files_changed == 1 { "" } else { "s" },
                    self.insertions,
                    self.deletions
                );
                for (id, summary) in self.commits.iter().take(10) {
                    t.push_str(&format!("\n  {id} {summary}"));
                }
                if n > 10 {
                    t.push_str(&format!("\n  … and {} more", n - 10));
                }
                t
            }
        };
        if self.uncommitted > 0 {
            t.push_str(&format!(
                "\nNot committed yet: {} file{} (git status; git diff).",
                self.uncommitted,
                if self.uncommitted == 1 { "" } else { "s" }
            ));
        }
        if !self.persistence.is_empty() {
            t.push_str(&format!(
                "\nFiles your own tools run later that this task changed (read them before you commit, open the folder in an editor or run git there): {}",
                self.persistence.len()
            ));
            for p in self.persistence.iter().take(20) {
                t.push_str(&format!("\n  {} ({})", p.path, p.why));
            }
            if self.persistence.len() > 20 {
                t.push_str(&format!("\n  … and {} more", self.persistence.len() - 20));
            }
        }
        if !self.commits.is_empty() {
            t.push_str(&format!("\nSee the changes: git log -p {since}..{b}"));
            if let Some(from) = &self.from {
                t.push_str(&format!("\nMerge them: git switch {from} && git merge {b}"));
                if self.pushed {
                    t.push_str(&format!(
                        " (or open a pull request for {b}: it is on origin)"
                    ));
                }
            }
        }
        t
    }
}

#[cfg(test)]
mod review_tests {
    use super::Review;

    #[test]
    fn a_review_says_what_changed_and_how_to_merge_it() {
        let r = Review {
            branch: "keyless/2026-12-02-fix".into(),
            from: Some("main".into()),
            base: "abc1234".into(),
            commits: vec![("def5678".into(), "Fix the test".into())],
            files_changed: 2,
            insertions: 5,
            deletions: 1,
            uncommitted: 1,
            pushed: true,
            persistence: vec![],
        };
        let mut with = r.clone();
        with.persistence = vec![crate::policy::persistence::Persistence {
            path: ".husky/pre-commit".into(),
            why: "git runs husky's hooks on your next commit or push".into(),
        }];
        assert!(with.text().contains(
            "Files your own tools run later that this task changed (read them before you commit, open the folder in an editor or run git there): 1\n  .husky/pre-commit (git runs husky's hooks on your next commit or push)"
        ));
        assert_eq!(
            r.text(),
            "1 commit on keyless/2026-12-02-fix since main: 2 files changed, +5 −1\n  def5678 Fix the test\nNot committed yet: 1 file (git status; git diff).\nSee the changes: git log -p main..keyless/2026-12-02-fix\nMerge them: git switch main && git merge keyless/2026-12-02-fix (or open a pull request for keyless/2026-12-02-fix: it is on origin)"
        );
    }
}
