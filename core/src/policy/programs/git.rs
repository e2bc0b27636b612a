//! `git`: ReadOnly only for the reading subcommands (status, log, diff, show, blame, ls-files,
//! rev-parse, …) with options on their known-safe lists, and for the listing forms of `branch`,
//! `tag`, `remote`, `stash`, `reflog`, `worktree` and `config`. An option not on a list is
//! Execute. Every other subcommand changes the repository or a remote: Risky.
//!
//! - Options that make a reading command run a program or write a file (`--output`,
//!   `--ext-diff`, `--textconv`, a pager, `--upload-pack`), a manual viewer (`git help TOPIC`,
//!   `--help`), and verifying a signature (which runs `gpg.program`): Risky.
//! - Global options are rated too, and the worse rating counts: `-c` and `--config-env` set
//!   configuration that can name programs, and `-C`, `--git-dir`, `--work-tree` point git at a
//!   repository whose configuration can (Risky).
//! - Force-pushing (`--force`, `-f`, `+refspec`, `--mirror`, `--prune`) rewrites the remote's
//!   history, and `filter-branch`/`filter-repo` rewrite all of it: Denied. So is changing the
//!   user's global or system configuration, which changes git everywhere.
//! - Reading configuration that may hold credentials (the user's global config, another file)
//!   prints them into the chat: Risky.

use super::super::args::{check, Check, Operands, Spec};
use super::super::lexer::Word;
use super::super::{rated, worse, Rated, Tier};
use super::common::{has_flag, has_option, texts, Call, Names};

pub(super) const NAMES: Names = &[&["git"]];

pub(super) fn rate(c: &Call) -> Rated {
    rate_git(c.args())
}

/// Options of the commands that show history and diffs (log, show, diff, …).
const GIT_DIFF_LOG: &[&str] = &[
    "-#",
    "-n=",
    "-p",
    "-u",
    "-s",
    "-z",
    "-w",
    "-b",
    "-a",
    "-R",
    "-M*",
    "-C*",
    "-B*",
    "-D",
    "-S*",
    "-G*",
    "-L*",
    "-U*",
    "-O*",
    "-l*",
    "-i",
    "-E",
    "-F",
    "-P",
    "-m",
    "-c",
    "-t",
    "-r",
    "-v",
    "-q",
    "--patch",
    "--no-patch",
    "--raw",
    "--patch-with-raw",
    "--patch-with-stat",
    "--stat=?",
    "--compact-summary",
    "--numstat",
    "--shortstat",
    "--dirstat=?",
    "--cumulative",
    "--summary",
    "--name-only",
    "--name-status",
    "--submodule=?",
    "--color=?",
    "--no-color",
    "--color-moved=?",
    "--no-color-moved",
    "--color-moved-ws=",
    "--word-diff=?",
    "--word-diff-regex=",
    "--color-words=?",
    "--no-renames",
    "--rename-empty",
    "--no-rename-empty",
    "--check",
    "--ws-error-highlight=",
    "--full-index",
    "--binary",
    "--abbrev=?",
    "--break-rewrites=?",
    "--find-renames=?",
    "--find-copies=?",
    "--find-copies-harder",
    "--irreversible-delete",
    "--diff-filter=",
    "--pickaxe-all",
    "--pickaxe-regex",
    "--find-object=",
    "--skip-to=",
    "--rotate-to=",
    "--relative=?",
    "--no-relative",
    "--text",
    "--ignore-cr-at-eol",
    "--ignore-space-at-eol",
    "--ignore-space-change",
    "--ignore-all-space",
    "--ignore-blank-lines",
    "--ignore-matching-lines=",
    "--inter-hunk-context=",
    "--function-context",
    "--exit-code",
    "--quiet",
    "--no-ext-diff",
    "--no-textconv",
    "--ignore-submodules=?",
    "--src-prefix=",
    "--dst-prefix=",
    "--no-prefix",
    "--default-prefix",
    "--line-prefix=",
    "--unified=",
    "--minimal",
    "--patience",
    "--histogram",
    "--anchored=",
    "--diff-algorithm=",
    "--indent-heuristic",
    "--no-indent-heuristic",
    "--cached",
    "--staged",
    "--merge-base",
    "--no-index",
    "--oneline",
    "--format=",
    "--pretty=?",
    "--abbrev-commit",
    "--no-abbrev-commit",
    "--encoding=",
    "--expand-tabs=?",
    "--no-expand-tabs",
    "--notes=?",
    "--no-notes",
    "--show-notes=?",
    "--relative-date",
    "--date=",
    "--parents",
    "--children",
    "--left-right",
    "--graph",
    "--show-linear-break=?",
    "--decorate=?",
    "--no-decorate",
    "--decorate-refs=",
    "--decorate-refs-exclude=",
    "--source",
    "--use-mailmap",
    "--mailmap",
    "--no-mailmap",
    "--full-diff",
    "--log-size",
    "--max-count=",
    "--skip=",
    "--since=",
    "--after=",
    "--since-as-filter=",
    "--until=",
    "--before=",
    "--author=",
    "--committer=",
    "--grep-reflog=",
    "--grep=",
    "--all-match",
    "--invert-grep",
    "--regexp-ignore-case",
    "--basic-regexp",
    "--extended-regexp",
    "--fixed-strings",
    "--perl-regexp",
    "--remove-empty",
    "--merges",
    "--no-merges",
    "--min-parents=",
    "--max-parents=",
    "--no-min-parents",
    "--no-max-parents",
    "--first-parent",
    "--exclude-first-parent-only",
    "--not",
    "--all",
    "--branches=?",
    "--tags=?",
    "--remotes=?",
    "--glob=",
    "--exclude=",
    "--reflog",
    "--alternate-refs",
    "--single-worktree",
    "--ignore-missing",
    "--bisect",
    "--stdin",
    "--cherry-mark",
    "--cherry-pick",
    "--left-only",
    "--right-only",
    "--cherry",
    "--walk-reflogs",
    "--merge",
    "--boundary",
    "--simplify-by-decoration",
    "--show-pulls",
    "--full-history",
    "--dense",
    "--sparse",
    "--simplify-merges",
    "--ancestry-path=?",
    "--date-order",
    "--author-date-order",
    "--topo-order",
    "--reverse",
    "--no-walk=?",
    "--do-walk",
    "--follow",
    "--no-follow",
    "--diff-merges=",
    "--no-diff-merges",
    "--combined-all-paths",
    "--dd",
    "--remerge-diff",
    "--stat-width=",
    "--stat-name-width=",
    "--stat-count=",
    "--stat-graph-width=",
    "--compact-summary",
    "--timestamp",
    "--expand-tabs",
    "--ita-invisible-in-index",
    "--ita-visible-in-index",
    "--word-diff",
    "--no-standard-notes",
    "--standard-notes",
    "--clear-decorations",
    "--no-walk",
    "--mailmap",
    "--count",
    "--objects",
    "--objects-edge",
    "--no-object-names",
    "--max-age=",
    "--min-age=",
    "--header",
    "--long",
    "--porcelain",
    "--line-porcelain",
    "--incremental",
    "--show-name",
    "--show-number",
    "--show-email",
    "--score-debug",
    "--root",
    "--show-stats",
    "--contents=",
    "--reverse=",
    "--ignore-rev=",
    "--ignore-revs-file=",
    "--progress",
    "--no-progress",
    "--help",
];

/// Options that make a reading git command run a program or write a file.
const GIT_RISKY: &[(&str, &str)] = &[
    ("--output", "writes its output to a file"),
    (
        "--ext-diff",
        "runs the diff program named in the configuration",
    ),
    (
        "--textconv",
        "runs the text-conversion programs named in the configuration",
    ),
    (
        "--filters",
        "runs the filter programs named in the configuration",
    ),
    ("--open-files-in-pager", "runs a pager program"),
    ("--upload-pack", "runs another program as the remote's git"),
    ("--receive-pack", "runs another program as the remote's git"),
];

fn git_spec(sub: &str) -> Option<(Spec, &'static str)> {
    const STATUS: &[&str] = &[
        "-s",
        "-b",
        "-v",
        "-z",
        "-u*",
        "--short",
        "--branch",
        "--porcelain=?",
        "--long",
        "--verbose",
        "--untracked-files=?",
        "--ignored=?",
        "--ignore-submodules=?",
        "--column=?",
        "--no-column",
        "--ahead-behind",
        "--no-ahead-behind",
        "--renames",
        "--no-renames",
        "--find-renames=?",
        "--show-stash",
        "--null",
        "--help",
    ];
    const LS_FILES: &[&str] = &[
        "-c",
        "-d",
        "-m",
        "-o",
        "-i",
        "-s",
        "-u",
        "-k",
        "-t",
        "-v",
        "-f",
        "-z",
        "-x=",
        "-X=",
        "--cached",
        "--deleted",
        "--modified",
        "--others",
        "--ignored",
        "--stage",
        "--unmerged",
        "--killed",
        "--directory",
        "--no-empty-directory",
        "--eol",
        "--exclude=",
        "--exclude-from=",
        "--exclude-per-directory=",
        "--exclude-standard",
        "--error-unmatch",
        "--with-tree=",
        "--full-name",
        "--recurse-submodules",
        "--abbrev=?",
        "--debug",
        "--deduplicate",
        "--format=",
        "--sparse",
        "--resolve-undo",
        "--help",
    ];
    const REV_PARSE: &[&str] = &["--*", "-q", "-h"];
    const PLAIN: &[&str] = &[
        "--*", "-#", "-n=", "-l", "-r", "-t", "-z", "-d", "-a", "-s", "-q", "-v", "-h", "-e", "-p",
        "-c", "-w", "-b", "-i", "-L", "-H", "-o", "-x", "-E", "-F", "-P", "-A=", "-B=", "-C=",
        "-m=", "-f=",
    ];
    const NONE: &[(&str, &str)] = &[];
    let (opts, risky, operands, does): (
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
        Operands,
        &'static str,
    ) = match sub {
        "status" => (STATUS, GIT_RISKY, Operands::Any, "only reads"),
        "log" | "show" | "diff" | "whatchanged" | "diff-tree" | "diff-files" | "diff-index"
        | "range-diff" | "blame" | "annotate" | "shortlog" | "rev-list" | "cherry" => {
            (GIT_DIFF_LOG, GIT_RISKY, Operands::Any, "only reads")
        }
        "ls-files" => (LS_FILES, GIT_RISKY, Operands::Any, "only lists"),
        "rev-parse" | "describe" | "name-rev" | "merge-base" | "show-ref" | "for-each-ref"
        | "ls-tree" | "cat-file" | "count-objects" | "check-ignore" | "check-attr" | "var"
        | "verify-commit" | "verify-tag" | "show-branch" | "grep" => (
            if sub == "rev-parse" { REV_PARSE } else { PLAIN },
            GIT_RISKY,
            Operands::Any,
            "only reads",
        ),
        "version" | "help" => (PLAIN, NONE, Operands::Any, "only prints"),
        _ => return None,
    };
    Some((
        Spec {
            opts,
            risky,
            operands,
        },
        does,
    ))
}

/// Never used: `git_spec("log")` always answers.
const LOG_FALLBACK: Spec = Spec {
    opts: &[],
    risky: GIT_RISKY,
    operands: Operands::None,
};

const GIT_VIEWER: &str = "git help opens the manual with a viewer program (man, info or a web browser, as help.format, man.viewer and web.browser name)";

/// Why a reading git subcommand would run another program, when it would: a manual viewer, or the
/// signature program (`gpg.program`) that verifies signatures.
fn git_runs_a_program(sub: &str, rest: &[&str]) -> Option<&'static str> {
    const LISTS: &[&str] = &[
        "-a",
        "--all",
        "-g",
        "--guides",
        "-c",
        "--config",
        "--user-interfaces",
        "--developer-interfaces",
        "--no-external-commands",
        "--no-aliases",
        "--verbose",
    ];
    if sub == "help" && rest.iter().any(|x| !LISTS.contains(x)) {
        return Some(GIT_VIEWER);
    }
    if has_option(rest, &["--help"]) {
        return Some(GIT_VIEWER);
    }
    let verifies = matches!(sub, "verify-commit" | "verify-tag")
        || has_option(rest, &["--show-signature"])
        || rest.iter().take_while(|x| **x != "--").any(|x| {
            let format = x.starts_with("--format=")
                || x.starts_with("--pretty=")
                || x.starts_with("format:")
                || x.starts_with("tformat:");
            format && (x.contains("%G") || x.contains("%(signature"))
        });
    verifies.then_some("verifying a signature runs the program gpg.program names")
}

/// The global options before the subcommand: their rating (the worst of them), and where the
/// subcommand starts. `Err` when an option settles the line by itself (`--version`, `--help`).
fn git_globals(a: &[&str]) -> Result<(Option<Rated>, usize), Rated> {
    let mut worst: Option<Rated> = None;
    let mut note = |r: Rated| {
        worst = Some(match worst.take() {
            Some(w) => worse(w, r),
            None => r,
        });
    };
    let mut i = 0;
    while i < a.len() && a[i].starts_with('-') {
        let x = a[i];
        // Options whose value is the next word.
        let takes_next = matches!(
            x,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--super-prefix"
                | "--config-env"
                | "--exec-path"
                | "--list-cmds"
        );
        match x {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-replace-objects"
            | "--no-lazy-fetch"
            | "--no-advice" => {}
            "--version" | "-v" => {
                return Err(rated(
                    Tier::ReadOnly,
                    "git --version only prints its version",
                ))
            }
            "--help" | "-h" if a.len() > i + 1 => {
                return Err(rated(Tier::Risky, GIT_VIEWER));
            }
            "--help" | "-h" => return Err(rated(Tier::ReadOnly, "git --help only prints help")),
            x if x == "-c"
                || (x.starts_with("-c") && x.len() > 2)
                || x.starts_with("--config-env") =>
            {
                let kv = if x == "-c" {
                    a.get(i + 1).copied()
                } else {
                    Some(x)
                };
                if kv.is_some_and(|kv| kv.starts_with("--global")) {
                    note(rated(Tier::Denied, "git config --global"));
                }
                note(rated(
                    Tier::Risky,
                    "git -c sets configuration that can name programs to run",
                ));
            }
            x if x.starts_with("--exec-path") && x.contains('=')
                || x == "--exec-path" && a.get(i + 1).is_some_and(|n| !n.starts_with('-')) =>
            {
                note(rated(
                    Tier::Risky,
                    "git --exec-path runs git's programs from another folder",
                ));
            }
            "--exec-path" => {
                return Err(rated(
                    Tier::ReadOnly,
                    "git --exec-path only prints a folder",
                ))
            }
            x if x == "-C"
                || x.starts_with("-C")
                || x.starts_with("--git-dir")
                || x.starts_with("--work-tree")
                || x.starts_with("--namespace")
                || x.starts_with("--super-prefix")
                || x == "--bare" =>
            {
                note(rated(
                    Tier::Risky,
                    format!("git {x} points git at another repository, whose configuration can name programs to run"),
                ));
            }
            "-p" | "--paginate" => note(rated(
                Tier::Risky,
                "git -p runs the pager program named in the configuration",
            )),
            _ => note(rated(
                Tier::Execute,
                format!("git: the option {x} is not on keyless's known-safe list"),
            )),
        }
        i += 1;
        if takes_next {
            i += 1;
        }
    }
    Ok((worst, i))
}

/// Every reason counts: `git -C /elsewhere push --force` is a force-push wherever git is
/// pointed, so the global options' rating and the subcommand's are both taken.
fn rate_git(words: &[Word]) -> Rated {
    let a = texts(words);
    let (globals, i) = match git_globals(&a) {
        Ok(g) => g,
        Err(settled) => return settled,
    };
    let sub = rate_git_sub_at(words, &a, i);
    match globals {
        Some(g) => worse(g, sub),
        None => sub,
    }
}

fn rate_git_sub_at(words: &[Word], a: &[&str], i: usize) -> Rated {
    let Some(sub) = a.get(i).copied() else {
        return rated(Tier::ReadOnly, "git alone prints help");
    };
    let rest_words = &words[i + 1..];
    let rest = &a[i + 1..];
    if let Some(why) = git_runs_a_program(sub, rest) {
        return rated(Tier::Risky, why);
    }
    if sub == "var" && rest.contains(&"-l") {
        return rated(
            Tier::Risky,
            "git var -l prints the user's whole git config (credentials live there)",
        );
    }
    if let Some((spec, does)) = git_spec(sub) {
        if sub == "grep"
            && rest
                .iter()
                .any(|x| x.starts_with("-O") || x.starts_with("--open-files-in-pager"))
        {
            return rated(Tier::Risky, "git grep -O runs a pager program");
        }
        return rate_git_sub(sub, &spec, does, rest_words);
    }
    match sub {
        "branch" => {
            const LIST: &[&str] = &[
                "-a",
                "-r",
                "-v",
                "-vv",
                "-l",
                "-i",
                "--list",
                "--all",
                "--remotes",
                "--verbose",
                "--show-current",
                "--merged=?",
                "--no-merged=?",
                "--contains=?",
                "--no-contains=?",
                "--points-at=",
                "--sort=",
                "--format=",
                "--column=?",
                "--no-column",
                "--color=?",
                "--no-color",
                "--abbrev=?",
                "--omit-empty",
                "--ignore-case",
            ];
            let listing = rest
                .iter()
                .any(|x| matches!(*x, "-l" | "--list" | "-a" | "--all" | "-r" | "--remotes"));
            lists_or_changes(
                LIST,
                listing,
                rest_words,
                "git branch only lists",
                "git branch changes branches",
            )
        }
        "tag" => {
            const LIST: &[&str] = &[
                "-l",
                "-n*",
                "--list",
                "--sort=",
                "--contains=?",
                "--no-contains=?",
                "--merged=?",
                "--no-merged=?",
                "--points-at=",
                "--format=",
                "--column=?",
                "--no-column",
                "--color=?",
                "-i",
                "--ignore-case",
                "--omit-empty",
            ];
            let listing = rest.iter().any(|x| matches!(*x, "-l" | "--list"));
            lists_or_changes(
                LIST,
                listing,
                rest_words,
                "git tag only lists",
                "git tag changes tags",
            )
        }
        "remote" => match rest {
            [] | ["-v"] | ["--verbose"] => rated(Tier::ReadOnly, "git remote only lists"),
            ["get-url", ..] => rated(Tier::ReadOnly, "git remote get-url only reads"),
            ["show", ..] => rated(Tier::Execute, "git remote show contacts the remote"),
            _ => rated(Tier::Risky, "git remote changes remotes"),
        },
        // They take the log family's options, `--output=FILE` among them.
        "stash" => match rest.first().copied() {
            Some(what @ ("list" | "show")) => {
                let (spec, _) = git_spec("log").unwrap_or((LOG_FALLBACK, ""));
                rate_git_sub(
                    &format!("stash {what}"),
                    &spec,
                    "only reads",
                    &rest_words[1..],
                )
            }
            _ => rated(Tier::Risky, "git stash changes the working tree"),
        },
        "reflog" => match rest.first().copied() {
            None | Some("show") => {
                let (spec, _) = git_spec("log").unwrap_or((LOG_FALLBACK, ""));
                let skip = usize::from(rest.first() == Some(&"show"));
                rate_git_sub("reflog", &spec, "only reads", &rest_words[skip..])
            }
            Some(x) if x.starts_with('-') => {
                let (spec, _) = git_spec("log").unwrap_or((LOG_FALLBACK, ""));
                rate_git_sub("reflog", &spec, "only reads", rest_words)
            }
            _ => rated(Tier::Risky, "git reflog changes the reflog"),
        },
        "worktree" if rest.first() == Some(&"list") => {
            rated(Tier::ReadOnly, "git worktree list only reads")
        }
        "config" => rate_git_config(rest),
        "push" => {
            let force = rest.iter().any(|x| {
                x.starts_with("--force")
                    || *x == "--mirror"
                    || *x == "--prune"
                    || (x.starts_with('-') && !x.starts_with("--") && x.contains('f'))
                    || (x.starts_with('+') && x.len() > 1)
                    || x.contains(":+")
            });
            if force {
                rated(Tier::Denied, "force-push rewrites the remote's history")
            } else {
                rated(Tier::Risky, "git push changes the remote")
            }
        }
        "clean" => {
            if has_flag(rest, 'n', &["--dry-run"])
                && !has_flag(rest, 'f', &["--force"])
                && !has_flag(rest, 'i', &["--interactive"])
            {
                rated(Tier::ReadOnly, "git clean -n only lists")
            } else {
                rated(Tier::Risky, "git clean deletes untracked files")
            }
        }
        "ls-remote" | "fetch" | "pull" | "clone" | "submodule" => {
            if rest.iter().any(|x| {
                x.starts_with("--upload-pack") || x.starts_with("-u") || x.starts_with("--exec")
            }) {
                rated(
                    Tier::Risky,
                    format!("git {sub} --upload-pack runs another program"),
                )
            } else {
                rated(
                    Tier::Risky,
                    format!("git {sub} contacts a remote and can change the repository"),
                )
            }
        }
        "filter-branch" | "filter-repo" => rated(
            Tier::Denied,
            format!("git {sub} rewrites the whole history"),
        ),
        _ => rated(Tier::Risky, format!("git {sub} changes the repository")),
    }
}

/// `git branch` and `git tag`: ReadOnly when every option is on the listing list `opts` (and
/// names, as patterns, only with `listing`); otherwise they create, rename or delete: Risky.
fn lists_or_changes(
    opts: &'static [&'static str],
    listing: bool,
    rest: &[Word],
    lists: &'static str,
    changes: &'static str,
) -> Rated {
    let spec = Spec {
        opts,
        risky: &[],
        operands: if listing {
            Operands::Any
        } else {
            Operands::None
        },
    };
    match check(&spec, rest) {
        Check::Known => rated(Tier::ReadOnly, lists),
        _ => rated(Tier::Risky, changes),
    }
}

fn rate_git_sub(sub: &str, spec: &Spec, does: &str, rest: &[Word]) -> Rated {
    match check(spec, rest) {
        Check::Known => rated(Tier::ReadOnly, format!("git {sub} {does}")),
        Check::Risky(opt, why) => rated(Tier::Risky, format!("git {sub} {opt}: {why}")),
        Check::Unknown(opt) => rated(
            Tier::Execute,
            format!("git {sub}: the option {opt} is not on keyless's known-safe list"),
        ),
        Check::ExtraOperand(op) => rated(
            Tier::Execute,
            format!("git {sub}: {op} is not expected here"),
        ),
    }
}

fn rate_git_config(rest: &[&str]) -> Rated {
    let reading_flag = rest.iter().any(|x| {
        matches!(
            *x,
            "--get"
                | "--get-all"
                | "--get-regexp"
                | "--get-urlmatch"
                | "--list"
                | "-l"
                | "get"
                | "list"
        )
    });
    let global = rest.iter().any(|x| matches!(*x, "--global" | "--system"));
    if rest.iter().any(|x| matches!(*x, "--edit" | "-e" | "edit")) {
        return rated(Tier::Risky, "git config --edit opens an editor");
    }
    let operands = rest.iter().filter(|x| !x.starts_with('-')).count();
    let reads_a_file = rest.iter().any(|x| {
        x.starts_with("-f")
            || x.starts_with("--file")
            || x.starts_with("--blob")
            || x.starts_with("--glo")
            || x.starts_with("--sys")
            || x.starts_with("--inc")
    });
    let lists = rest.iter().any(|x| {
        matches!(*x, "-l" | "list" | "--get-regexp" | "--get-urlmatch")
            || (x.len() > 3 && "--list".starts_with(*x))
    });
    let own_only = rest.iter().any(|x| matches!(*x, "--local" | "--worktree"));
    if (reading_flag || operands == 1) && reads_a_file {
        return rated(
            Tier::Risky,
            "git config reads a file other than the repository's own config (the user's global config and other files hold credentials; what it prints goes to the chat)",
        );
    }
    if lists && !own_only {
        return rated(
            Tier::Risky,
            "git config --list prints the user's global config too (credentials live there; what it prints goes to the chat); --local lists the repository's own",
        );
    }
    if reading_flag
        || (operands == 1
            && !rest.iter().any(|x| {
                matches!(
                    *x,
                    "--unset"
                        | "--unset-all"
                        | "--add"
                        | "--replace-all"
                        | "--rename-section"
                        | "--remove-section"
                )
            }))
    {
        return rated(Tier::ReadOnly, "git config only reads");
    }
    if global {
        return rated(
            Tier::Denied,
            "git config --global/--system changes the user's git everywhere",
        );
    }
    rated(
        Tier::Risky,
        "git config changes the repository's configuration",
    )
}
