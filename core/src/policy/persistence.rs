//! Files the user's own tools run later, outside the sandbox: git hooks in the folder
//! `core.hooksPath` names and the hook managers' folders, direnv's `.envrc`, editor tasks and
//! settings, dev containers, CI workflows, the install-time scripts of package manifests, the
//! settings of other coding agents, and programs in a PATH folder inside the workspace. A file
//! command that creates, changes, moves or deletes one is Risky: asked in every mode but Auto,
//! with its diff, whatever the rest of the batch is. The `@@done` summary lists every such file
//! the task changed.
//!
//! The table is data: each row is a path pattern and who runs the file. A pattern is matched
//! against the workspace-relative path at any depth (a tool opened on a subfolder reads that
//! folder's files): `dir/**` is everything under a folder of that name, a bare name is a file of
//! that name, `a/b` a path suffix on segment boundaries.

use super::Context;

/// Path patterns and who runs what they match.
const TABLE: &[(&str, &str)] = &[
    // Git hook managers (the folder `core.hooksPath` names comes from the host, see
    // `Context::hooks_path`).
    (".husky/**", "git runs husky's hooks on your next commit or push"),
    (".githooks/**", "git runs these hooks when core.hooksPath names the folder"),
    (".git-hooks/**", "git runs these hooks when core.hooksPath names the folder"),
    (".lefthook/**", "lefthook runs these on your next commit"),
    ("lefthook.yml", "lefthook runs its commands on your next commit"),
    ("lefthook.yaml", "lefthook runs its commands on your next commit"),
    ("lefthook.json", "lefthook runs its commands on your next commit"),
    ("lefthook.toml", "lefthook runs its commands on your next commit"),
    (".lefthook.yml", "lefthook runs its commands on your next commit"),
    (".lefthook.yaml", "lefthook runs its commands on your next commit"),
    ("lefthook-local.yml", "lefthook runs its commands on your next commit"),
    (".lefthook-local.yml", "lefthook runs its commands on your next commit"),
    (".pre-commit-config.yaml", "pre-commit runs its hooks on your next commit"),
    (".pre-commit-config.yml", "pre-commit runs its hooks on your next commit"),
    (".simple-git-hooks.json", "simple-git-hooks installs these as git hooks"),
    (".simple-git-hooks.js", "simple-git-hooks installs these as git hooks"),
    (".simple-git-hooks.cjs", "simple-git-hooks installs these as git hooks"),
    (".overcommit.yml", "overcommit runs its hooks on your next commit"),
    // Shell environments.
    (".envrc", "direnv runs it when your shell enters the folder"),
    ("mise.toml", "mise runs its hooks and tasks when your shell enters the folder"),
    (".mise.toml", "mise runs its hooks and tasks when your shell enters the folder"),
    (".mise/**", "mise runs its hooks and tasks when your shell enters the folder"),
    ("mise.local.toml", "mise runs its hooks and tasks when your shell enters the folder"),
    (".mise.local.toml", "mise runs its hooks and tasks when your shell enters the folder"),
    ("mise/config.toml", "mise runs its hooks and tasks when your shell enters the folder"),
    (".config/mise/**", "mise runs its hooks and tasks when your shell enters the folder"),
    ("bin/activate", "your shell runs it when you activate the environment"),
    ("bin/activate.fish", "your shell runs it when you activate the environment"),
    ("bin/activate.csh", "your shell runs it when you activate the environment"),
    (".npmrc", "npm, pnpm and yarn obey it on your next install (script-shell, node-options run programs)"),
    (".yarnrc", "yarn obeys it on your next install"),
    (".yarnrc.yml", "yarn runs the program its yarnPath names"),
    (".pnpmfile.cjs", "pnpm runs it on your next install"),
    // Editors.
    (".vscode/tasks.json", "VS Code runs its tasks (some when the folder opens)"),
    (".vscode/settings.json", "VS Code runs the programs its settings name"),
    (".vscode/launch.json", "VS Code runs it when you start debugging"),
    (".vscode/mcp.json", "VS Code starts the MCP servers it names"),
    ("*.code-workspace", "VS Code runs the tasks and programs a workspace file names"),
    (".idea/watcherTasks.xml", "your JetBrains IDE runs its file watchers"),
    (".zed/tasks.json", "Zed runs its tasks"),
    (".zed/settings.json", "Zed runs the programs its settings name"),
    (".idea/runConfigurations/**", "your JetBrains IDE runs these configurations"),
    (".idea/workspace.xml", "your JetBrains IDE runs the configurations it holds"),
    (".run/**", "your JetBrains IDE runs these configurations"),
    (".devcontainer/**", "your editor runs its commands when it opens the dev container (initializeCommand runs on your machine)"),
    (".devcontainer.json", "your editor runs its commands when it opens the dev container (initializeCommand runs on your machine)"),
    // Continuous integration (it runs with the repository's secrets).
    (".github/workflows/**", "CI runs it with the repository's secrets"),
    (".github/actions/**", "CI runs it with the repository's secrets"),
    (".gitlab-ci.yml", "CI runs it with the repository's secrets"),
    (".gitlab/ci/**", "CI runs it with the repository's secrets"),
    (".circleci/**", "CI runs it with the repository's secrets"),
    (".travis.yml", "CI runs it with the repository's secrets"),
    ("azure-pipelines.yml", "CI runs it with the repository's secrets"),
    ("bitbucket-pipelines.yml", "CI runs it with the repository's secrets"),
    ("Jenkinsfile", "CI runs it with the repository's secrets"),
    (".buildkite/**", "CI runs it with the repository's secrets"),
    (".drone.yml", "CI runs it with the repository's secrets"),
    (".woodpecker.yml", "CI runs it with the repository's secrets"),
    (".woodpecker/**", "CI runs it with the repository's secrets"),
    (".forgejo/workflows/**", "CI runs it with the repository's secrets"),
    (".gitea/workflows/**", "CI runs it with the repository's secrets"),
    // Other coding agents' settings (their hooks and servers run as you).
    (".claude/settings.json", "Claude Code runs the hooks it names"),
    (".claude/settings.local.json", "Claude Code runs the hooks it names"),
    (".claude/hooks/**", "Claude Code runs these hooks"),
    (".mcp.json", "coding agents start the MCP servers it names"),
    (".cursor/mcp.json", "Cursor starts the MCP servers it names"),
    (".gemini/settings.json", "Gemini CLI runs the servers and commands it names"),
    (".aider.conf.yml", "aider runs the lint and test commands it names"),
    (".cursor/hooks.json", "Cursor runs the hooks it names"),
    (".cursor/environment.json", "Cursor runs the commands it names"),
    (".codex/config.toml", "Codex runs the servers and commands it names"),
    (".continue/**", "Continue starts the servers and commands it names"),
    ("opencode.json", "opencode runs the servers and commands it names"),
    (".roo/mcp.json", "Roo starts the MCP servers it names"),
    (".amazonq/mcp.json", "Amazon Q starts the MCP servers it names"),
    (".kiro/settings/mcp.json", "Kiro starts the MCP servers it names"),
];

/// Package manifests whose scripts run at install time, and those scripts' names.
const INSTALL_SCRIPTS: &[(&str, &[&str])] = &[
    (
        "package.json",
        &[
            "preinstall",
            "install",
            "postinstall",
            "prepare",
            "preprepare",
            "postprepare",
            "prepublish",
            "prepack",
            "postpack",
        ],
    ),
    (
        "composer.json",
        &[
            "pre-install-cmd",
            "post-install-cmd",
            "pre-update-cmd",
            "post-update-cmd",
            "post-autoload-dump",
            "post-root-package-install",
            "post-create-project-cmd",
        ],
    ),
];

/// The user's own configuration files in their home (relative to it) that programs run or obey
/// outside the sandbox: shells, git, ssh, editors, the desktop session. When one is a link into
/// the workspace (a dotfiles repository), the host protects its target like keyless.json: no
/// file command writes it, it is read-only inside the sandbox, and a command that changes it is
/// put back. `~/.config/git` and `~/.ssh/config` also keep the host's own git and ssh from
/// running: a push is refused while git or ssh would read a file the model can write.
pub const HOME_CONFIG: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".config/git/attributes",
    ".config/git/ignore",
    ".gitattributes",
    ".ssh/config",
    ".ssh/rc",
    ".ssh/environment",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".bash_aliases",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".config/fish/config.fish",
    ".config/fish/conf.d",
    ".config/fish/functions",
    ".inputrc",
    ".xprofile",
    ".xinitrc",
    ".xsessionrc",
    ".pam_environment",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd/user",
    ".vimrc",
    ".vim",
    ".config/nvim",
    ".emacs",
    ".emacs.d",
    ".tmux.conf",
    ".config/tmux",
    ".npmrc",
    ".yarnrc",
    ".config/pip",
    ".cargo/config.toml",
    ".cargo/config",
    ".direnvrc",
    ".config/direnv",
    ".config/mise",
    ".tool-versions",
    ".local/bin",
    "bin",
    ".config/Code/User/settings.json",
    ".config/Code/User/tasks.json",
    ".claude/settings.json",
    ".claude.json",
];

/// Why a package manifest's new content makes the next install run something, if it does:
/// content that is not known (a move, a delete, an edit judged without the file) or not JSON, an
/// install-time script (keys compared after JSON decoding, so `"postinstal\u006c"` is
/// `postinstall`), or a dependency that is not a version range from the registry (a git URL, a
/// path, a tarball, `user/repo`, an alias: each runs its own install scripts).
fn manifest_risk(name: &str, keys: &[&str], content: Option<&str>) -> Option<String> {
    let who = if name == "package.json" {
        "npm, yarn and pnpm"
    } else {
        "composer"
    };
    let Some(text) = content else {
        return Some(format!(
            "{who} run its install-time scripts on your next install, and what this command leaves in it is not known before it runs"
        ));
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return Some(format!(
            "{who} read it on your next install, and it is not JSON keyless can read"
        ));
    };
    if let Some(k) = v
        .get("scripts")
        .and_then(serde_json::Value::as_object)
        .and_then(|s| s.keys().find(|k| keys.contains(&k.as_str())))
    {
        return Some(format!(
            "{who} run its install-time script \"{k}\" on your next install"
        ));
    }
    if name == "package.json" {
        for field in [
            "dependencies",
            "devDependencies",
            "optionalDependencies",
            "peerDependencies",
            "bundleDependencies",
            "overrides",
            "resolutions",
        ] {
            let Some(deps) = v.get(field).and_then(serde_json::Value::as_object) else {
                continue;
            };
            for (dep, spec) in deps {
                let plain = spec.as_str().is_some_and(|t| {
                    t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || " .^~<>=*|-+".contains(c))
                });
                if !plain {
                    return Some(format!(
                        "npm, yarn and pnpm fetch and install \"{dep}\" from what it names (not a version from the registry), running its own install scripts"
                    ));
                }
            }
        }
    }
    None
}

/// What a write to a persistence file is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Persistence {
    /// The workspace-relative path.
    pub path: String,
    /// Who runs it, in words.
    pub why: String,
}

fn segments(rel: &str) -> Vec<&str> {
    rel.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect()
}

/// Whether `name` ends with `ext` once lowercased (`ext` as the table writes it).
fn ends_with_lower(name: &str, ext: &str) -> bool {
    let (n, e) = (name.as_bytes(), ext.as_bytes());
    n.len() >= e.len()
        && n[n.len() - e.len()..]
            .iter()
            .map(u8::to_ascii_lowercase)
            .eq(e.iter().copied())
}

/// Whether the path `path` (split into its segments, once for the whole table) matches `pattern`
/// at any depth (see the module docs).
fn matches_segments(path: &[&str], pattern: &str) -> bool {
    if let Some(folder) = pattern.strip_suffix("/**") {
        let pat = segments(folder);
        // The folder itself, or anything under it, at any depth.
        return (0..path.len()).any(|i| {
            path.len() >= i + pat.len()
                && path[i..i + pat.len()]
                    .iter()
                    .zip(&pat)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
        });
    }
    if let Some(ext) = pattern.strip_prefix('*') {
        return path
            .last()
            .is_some_and(|n| n.len() > ext.len() && ends_with_lower(n, ext));
    }
    // The last segment first: most paths end in no name the table has.
    if let Some(last) = pattern.rsplit('/').find(|s| !s.is_empty() && *s != ".") {
        if !path.last().is_some_and(|n| n.eq_ignore_ascii_case(last)) {
            return false;
        }
    }
    let pat = segments(pattern);
    path.len() >= pat.len()
        && path[path.len() - pat.len()..]
            .iter()
            .zip(&pat)
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Whether `rel` is at or under the workspace-relative folder `dir`.
fn under(rel: &str, dir: &str) -> bool {
    let path = segments(rel);
    let d = segments(dir);
    !d.is_empty() && path.len() >= d.len() && path[..d.len()] == d[..]
}

/// Whether `rel` lies in a folder named by a relative PATH entry (`node_modules/.bin`, `.`),
/// at any depth (the shell looks it up from whichever folder it is in).
fn in_relative_path_dir(rel: &str, entry: &str) -> bool {
    let path = segments(rel);
    let e = segments(entry);
    if path.is_empty() {
        return false;
    }
    let parent = &path[..path.len() - 1];
    if e.is_empty() {
        // `.` or an empty entry: every folder is on PATH.
        return true;
    }
    parent.len() >= e.len() && parent[parent.len() - e.len()..] == e[..]
}

/// Whether a file named `name` may be a persistence file whatever folder it is in: the quick
/// test a scan of a whole workspace asks before [`persistence`] (a file in a folder that
/// [`in_persistence_folder`] names is one too).
#[must_use]
pub fn is_persistence_name(name: &str) -> bool {
    TABLE.iter().any(|(p, _)| {
        if p.ends_with("/**") {
            return false;
        }
        if let Some(ext) = p.strip_prefix('*') {
            return ends_with_lower(name, ext);
        }
        p.rsplit('/')
            .next()
            .is_some_and(|last| last.eq_ignore_ascii_case(name))
    }) || INSTALL_SCRIPTS.iter().any(|(f, _)| *f == name)
}

/// Whether every file in the workspace-relative folder `dir` is a persistence file (a hooks
/// folder, `.vscode`'s siblings excluded: only the table's `folder/**` rows, the hooks path and
/// the PATH folders the model can write).
#[must_use]
pub fn in_persistence_folder(dir: &str, ctx: &Context) -> bool {
    persistence(&format!("{dir}/x"), None, ctx).is_some()
}

/// Why a write to `rel` changes a file the user's tools run later, if it does. `content` is
/// what the command writes (`@@newfile`/`@@updatefile`'s CONTENT, or `@@editfile`'s FIND and
/// REPLACE together): a package manifest counts when it holds an install-time script, or when
/// what is written is not known (`None`: a move, a delete).
#[must_use]
pub fn persistence(rel: &str, content: Option<&str>, ctx: &Context) -> Option<Persistence> {
    let hit = |why: &str| {
        Some(Persistence {
            path: rel.to_string(),
            why: why.to_string(),
        })
    };
    if let Some(dir) = ctx.hooks_path.as_deref() {
        if under(rel, dir) {
            return hit("git runs the hooks in this folder (core.hooksPath) on your next commit");
        }
    }
    if ctx.linked_config.iter().any(|l| under(rel, l)) {
        return hit(
            "it is one of your own configuration files (a link from your home into the workspace)",
        );
    }
    for d in &ctx.path_dirs {
        let absolute_in_ws =
            !d.relative && under(rel, &d.dir) && segments(rel).len() == segments(&d.dir).len() + 1;
        if absolute_in_ws || (d.relative && in_relative_path_dir(rel, &d.dir)) {
            return hit(
                "it is in a folder on your PATH: your shell runs it when you type its name",
            );
        }
    }
    let path = segments(rel);
    if let Some((_, why)) = TABLE.iter().find(|(p, _)| matches_segments(&path, p)) {
        return hit(why);
    }
    let name = path.last().copied().unwrap_or("");
    if let Some((_, keys)) = INSTALL_SCRIPTS.iter().find(|(f, _)| *f == name) {
        if let Some(why) = manifest_risk(name, keys, content) {
            return hit(&why);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PathDir;
    use proptest::prelude::*;

    /// The table's matching as it was before it split each path once (the reference).
    fn matches_as_before(rel: &str, pattern: &str) -> bool {
        let path = segments(rel);
        if let Some(folder) = pattern.strip_suffix("/**") {
            let pat = segments(folder);
            return (0..path.len()).any(|i| {
                path.len() >= i + pat.len()
                    && path[i..i + pat.len()]
                        .iter()
                        .zip(&pat)
                        .all(|(a, b)| a.eq_ignore_ascii_case(b))
            });
        }
        if let Some(ext) = pattern.strip_prefix('*') {
            return path
                .last()
                .is_some_and(|n| n.len() > ext.len() && n.to_ascii_lowercase().ends_with(ext));
        }
        let pat = segments(pattern);
        path.len() >= pat.len()
            && path[path.len() - pat.len()..]
                .iter()
                .zip(&pat)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    }

    fn is_persistence_name_as_before(name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        TABLE.iter().any(|(p, _)| {
            if p.ends_with("/**") {
                return false;
            }
            if let Some(ext) = p.strip_prefix('*') {
                return lower.ends_with(ext);
            }
            p.rsplit('/')
                .next()
                .is_some_and(|last| last.eq_ignore_ascii_case(name))
        }) || INSTALL_SCRIPTS.iter().any(|(f, _)| *f == name)
    }

    /// Paths made of the table's own segments (in any case), and a few others.
    fn paths() -> impl Strategy<Value = String> {
        let mut words: Vec<String> = TABLE
            .iter()
            .flat_map(|(p, _)| p.split('/'))
            .chain(INSTALL_SCRIPTS.iter().map(|(f, _)| *f))
            .map(|w| w.trim_start_matches('*').to_string())
            .collect();
        words.extend(["", ".", "src", "x", "a.TXT", "É"].map(String::from));
        let word = (proptest::sample::select(words), any::<bool>(), "[a-z]{0,2}").prop_map(
            |(w, upper, tail)| {
                let w = if upper { w.to_ascii_uppercase() } else { w };
                if tail.is_empty() {
                    w
                } else {
                    format!("{tail}{w}")
                }
            },
        );
        proptest::collection::vec(word, 1..5).prop_map(|v| v.join("/"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Splitting each path once, and comparing the last segment first, decides as before.
        #[test]
        fn the_table_decides_as_it_did_before_it_was_made_quicker(rel in paths()) {
            let path = segments(&rel);
            for (p, _) in TABLE {
                prop_assert_eq!(matches_segments(&path, p), matches_as_before(&rel, p), "{} {}", rel, p);
            }
            let name = rel.rsplit('/').next().unwrap_or(&rel);
            prop_assert_eq!(is_persistence_name(name), is_persistence_name_as_before(name), "{}", name);
        }
    }

    fn ctx() -> Context {
        Context::default()
    }

    #[test]
    fn the_table_matches_at_any_depth_and_only_on_segments() {
        let c = ctx();
        for p in [
            ".husky/pre-commit",
            "web/.husky/_/pre-push",
            ".envrc",
            "sub/.envrc",
            ".vscode/tasks.json",
            ".github/workflows/ci.yml",
            ".devcontainer/devcontainer.json",
            ".claude/settings.json",
            ".pre-commit-config.yaml",
            ".idea/runConfigurations/App.xml",
        ] {
            assert!(persistence(p, None, &c).is_some(), "{p}");
        }
        for p in [
            "src/husky.rs",
            "my.envrc",
            "vscode/tasks.json",
            "docs/github/workflows.md",
            "README.md",
        ] {
            assert!(persistence(p, None, &c).is_none(), "{p}");
        }
    }

    #[test]
    fn manifests_count_only_with_install_time_scripts() {
        let c = ctx();
        assert!(persistence(
            "package.json",
            Some(r#"{"scripts":{"postinstall":"node x.js"}}"#),
            &c
        )
        .is_some());
        assert!(persistence(
            "app/package.json",
            Some(r#"{"dependencies":{"x":"git+https://e.invalid/x.git"}}"#),
            &c
        )
        .is_some());
        assert!(persistence(
            "package.json",
            Some(r#"{"scripts":{"test":"node --test"}, "dependencies": {"a": "^1.2.3", "b": "~2 || 3.x", "c": "latest"}}"#),
            &c
        )
        .is_none());
        for risky in [
            r#"{"scripts":{"postinstal\u006c":"x"}}"#,
            r#"{"dependencies":{"x":"../evil"}}"#,
            r#"{"dependencies":{"x":"user/repo"}}"#,
            r#"{"devDependencies":{"x":"https://h.invalid/x.tgz"}}"#,
            r#"{"dependencies":{"x":"npm:other@1"}}"#,
            "not json",
        ] {
            assert!(
                persistence("package.json", Some(risky), &c).is_some(),
                "{risky}"
            );
        }
        assert!(persistence("package.json", None, &c).is_some());
        assert!(persistence("a/b.code-workspace", None, &c).is_some());
        assert!(persistence(".venv/bin/activate", None, &c).is_some());
    }

    #[test]
    fn the_hooks_folder_path_folders_and_linked_config_come_from_the_host() {
        let c = Context {
            hooks_path: Some("tools/hooks".into()),
            linked_config: vec!["dotfiles/bashrc".into()],
            path_dirs: vec![
                PathDir {
                    dir: "node_modules/.bin".into(),
                    relative: true,
                },
                PathDir {
                    dir: ".venv/bin".into(),
                    relative: false,
                },
            ],
            ..Context::default()
        };
        assert!(persistence("tools/hooks/pre-commit", None, &c).is_some());
        assert!(persistence("dotfiles/bashrc", None, &c).is_some());
        assert!(persistence("node_modules/.bin/ssh", None, &c).is_some());
        assert!(persistence("pkg/node_modules/.bin/ls", None, &c).is_some());
        assert!(persistence(".venv/bin/node", None, &c).is_some());
        assert!(persistence("sub/.venv/bin/node", None, &c).is_none());
        assert!(persistence("tools/other", None, &c).is_none());
    }
}
