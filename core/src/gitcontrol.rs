//! What a git directory may hold when a command leaves it: the rules the host's git guard applies
//! after every sandboxed command (see `host/src/exec/gitguard.rs`).
//!
//! A repository's `config`, hooks and `commondir` steer the user's own `git` outside the sandbox:
//! `core.fsmonitor`, `core.pager`, aliases, filters and hooks are programs git runs. A command may
//! legitimately make a repository (`git init`, `git submodule add`, `git worktree add`), so a
//! control file a command wrote is kept only when it is proven harmless:
//! - a config whose every entry is on a list of settings that never name a program
//!   ([`vet_config`]), read by a deliberately strict reader that refuses any syntax it does not
//!   fully model (so git can never read more into the file than the reader did);
//! - a hook whose name ends in `.sample` (git never runs those);
//! - the `commondir` git writes for a linked worktree (`../..`).
//!
//! Anything else is put back as it was (or moved aside) by the host.

/// The largest config the reader looks at; a larger one is refused.
pub const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// Why a config is not proven harmless.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One setting of a config file: section (lower case), subsection (as written), key (lower case)
/// and raw value (`None` for a bare key, which git reads as true).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub section: String,
    pub subsection: Option<String>,
    pub key: String,
    pub value: Option<String>,
}

fn refuse<T>(line: usize, why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(format!("line {line}: {}", why.into())))
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Reads a config the strict way: blank lines, comments (`#`, `;`), `[section]`,
/// `[section "subsection"]` alone on their line, and `key = value` or a bare `key`. A value is
/// read up to an unquoted `#` or `;`; quotes are removed and the escapes `\"`, `\\`, `\n`, `\t`,
/// `\b` kept as git reads them. Refused: a continuation line (a trailing backslash), anything
/// after a section header, the deprecated `[section.subsection]` form, control characters, an
/// unknown escape, an unclosed quote, a file over [`MAX_CONFIG_BYTES`].
///
/// # Errors
/// The first line the reader does not fully model.
pub fn parse_config(text: &str) -> Result<Vec<Entry>, Refusal> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(Refusal(format!(
            "the config is larger than {MAX_CONFIG_BYTES} bytes"
        )));
    }
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut out = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.chars().any(|c| c.is_control() && c != '\t') {
            return refuse(n, "a control character");
        }
        let t = line.trim_matches([' ', '\t']);
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if t.ends_with('\\') {
            return refuse(n, "a continuation line");
        }
        if let Some(rest) = t.strip_prefix('[') {
            let Some(inner) = rest.strip_suffix(']') else {
                return refuse(n, "text after a section header");
            };
            section = Some(match inner.split_once(' ') {
                None => {
                    if !is_name(inner) {
                        return refuse(n, format!("the section [{inner}]"));
                    }
                    (inner.to_ascii_lowercase(), None)
                }
                Some((name, sub)) => {
                    let sub = sub.trim_start_matches(' ');
                    let Some(sub) = sub.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
                        return refuse(n, format!("the section [{inner}]"));
                    };
                    if !is_name(name) || sub.contains(['"', '\\']) {
                        return refuse(n, format!("the section [{inner}]"));
                    }
                    (name.to_ascii_lowercase(), Some(sub.to_string()))
                }
            });
            continue;
        }
        let Some((sec, sub)) = &section else {
            return refuse(n, "a setting before any section");
        };
        let (key, value) = match t.split_once('=') {
            Some((k, v)) => (k.trim_end_matches([' ', '\t']), Some(read_value(n, v)?)),
            None => (t, None),
        };
        if !is_name(key) {
            return refuse(n, format!("the key \"{key}\""));
        }
        out.push(Entry {
            section: sec.clone(),
            subsection: sub.clone(),
            key: key.to_ascii_lowercase(),
            value,
        });
    }
    Ok(out)
}

fn read_value(n: usize, v: &str) -> Result<String, Refusal> {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = v.trim_start_matches([' ', '\t']).chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                _ => return refuse(n, "an escape git would read differently"),
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    if quoted {
        return refuse(n, "an unclosed quote");
    }
    // Unquoted trailing blanks are not part of the value.
    Ok(out.trim_end_matches([' ', '\t']).to_string())
}

/// A URL git may fetch from or push to without running a program of the config's choosing: no
/// `transport::address` helper form (`ext::sh -c …` runs a command), no option-like value.
fn plain_url(v: &str) -> bool {
    !v.contains("::") && !v.starts_with('-') && !v.is_empty()
}

/// Whether one setting never makes git run a program. `inside` says whether a path names a place
/// inside the workspace (for `core.worktree`).
fn harmless(e: &Entry, inside: &dyn Fn(&str) -> bool) -> bool {
    let v = e.value.as_deref().unwrap_or("true");
    let sub = e.subsection.is_some();
    match (e.section.as_str(), e.key.as_str()) {
        ("core", "worktree") => !sub && inside(v),
        (
            "core",
            "repositoryformatversion"
            | "filemode"
            | "bare"
            | "logallrefupdates"
            | "ignorecase"
            | "precomposeunicode"
            | "symlinks"
            | "autocrlf"
            | "eol"
            | "safecrlf"
            | "sparsecheckout"
            | "sparsecheckoutcone"
            | "compression"
            | "loosecompression"
            | "quotepath"
            | "abbrev"
            | "untrackedcache"
            | "splitindex"
            | "commitgraph"
            | "multipackindex"
            | "checkstat"
            | "trustctime"
            | "preloadindex"
            | "bigfilethreshold"
            | "protecthfs"
            | "protectntfs",
        ) => !sub,
        ("extensions", _) | ("advice", _) | ("gc", _) | ("rerere", _) => !sub,
        ("user", "name" | "email") | ("init", "defaultbranch") => !sub,
        ("index", "version" | "threads" | "skiphash") => !sub,
        ("pull", "rebase" | "ff") | ("push", "default" | "autosetupremote" | "followtags") => !sub,
        (
            "fetch",
            "prune" | "prunetags" | "writecommitgraph" | "recursesubmodules" | "parallel",
        ) => !sub,
        ("remote", "url" | "pushurl") => sub && plain_url(v),
        (
            "remote",
            "fetch" | "push" | "mirror" | "tagopt" | "prune" | "prunetags" | "promisor"
            | "partialclonefilter" | "skipdefaultupdate" | "skipfetchall",
        ) => sub,
        ("branch", "remote" | "merge" | "rebase" | "pushremote" | "description") => sub,
        ("submodule", "url") => sub && plain_url(v),
        ("submodule", "update") => sub && matches!(v, "checkout" | "rebase" | "merge" | "none"),
        ("submodule", "active" | "branch" | "fetchrecursesubmodules" | "ignore" | "shallow") => sub,
        ("lfs", "repositoryformatversion" | "url" | "pushurl" | "locksverify") => !sub,
        // What `git lfs install --local` writes, exactly.
        ("filter", key) if e.subsection.as_deref() == Some("lfs") => matches!(
            (key, v),
            ("clean", "git-lfs clean -- %f")
                | ("smudge", "git-lfs smudge -- %f")
                | ("process", "git-lfs filter-process")
                | ("required", "true")
        ),
        _ => false,
    }
}

/// Whether a config a command wrote is harmless: strictly readable, and every setting on the
/// list of settings that never name a program.
///
/// # Errors
/// The first line the strict reader refuses, or the first setting that is not on the list.
pub fn vet_config(text: &str, inside: &dyn Fn(&str) -> bool) -> Result<(), Refusal> {
    for e in parse_config(text)? {
        if !harmless(&e, inside) {
            let name = match &e.subsection {
                Some(s) => format!("{}.{s}.{}", e.section, e.key),
                None => format!("{}.{}", e.section, e.key),
            };
            return Err(Refusal(format!(
                "{name} is not a setting keyless knows to be harmless (it may name a program git runs)"
            )));
        }
    }
    Ok(())
}

/// A hook git never runs: its name ends in `.sample`.
#[must_use]
pub fn is_sample_hook(name: &str) -> bool {
    name.ends_with(".sample")
}

/// The `commondir` git writes in a linked worktree's folder (`.git/worktrees/NAME/commondir`).
#[must_use]
pub fn is_standard_commondir(text: &str) -> bool {
    matches!(text.trim_end_matches(['\n', '\r']), "../.." | "../../")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anywhere(_: &str) -> bool {
        true
    }

    #[test]
    fn what_git_init_and_clone_write_is_harmless() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = A\n\temail = a@example.com\n";
        assert_eq!(vet_config(init, &anywhere), Ok(()));
        let sub = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ../../../lib\n[remote \"origin\"]\n\turl = ../lib.git\n";
        assert_eq!(vet_config(sub, &anywhere), Ok(()));
        assert!(vet_config(sub, &|_| false).is_err());
        let lfs = "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n";
        assert_eq!(vet_config(lfs, &anywhere), Ok(()));
    }

    #[test]
    fn settings_that_run_programs_are_refused() {
        for bad in [
            "[core]\n\tfsmonitor = touch /tmp/x\n",
            "[core]\n\thooksPath = /tmp/h\n",
            "[core]\n\tpager = less; touch /tmp/x\n",
            "[core]\n\tsshCommand = x\n",
            "[core]\n\teditor = x\n",
            "[alias]\n\tst = !touch /tmp/x\n",
            "[include]\n\tpath = ../evil\n",
            "[includeIf \"gitdir:/\"]\n\tpath = ../evil\n",
            "[filter \"lfs\"]\n\tclean = touch /tmp/x\n",
            "[filter \"x\"]\n\tclean = cat\n",
            "[diff \"x\"]\n\ttextconv = x\n",
            "[credential]\n\thelper = !x\n",
            "[remote \"o\"]\n\turl = ext::sh -c touch% /tmp/x\n",
            "[remote \"o\"]\n\tuploadpack = x\n",
            "[submodule \"s\"]\n\tupdate = !x\n",
            "[gpg]\n\tprogram = x\n",
            "[sequence]\n\teditor = x\n",
            "[CORE]\n\tFSMONITOR = x\n",
        ] {
            assert!(vet_config(bad, &anywhere).is_err(), "{bad}");
        }
    }

    #[test]
    fn syntax_the_reader_does_not_model_is_refused() {
        for bad in [
            "[core] fsmonitor = x\n",
            "[core]\n\tbare = false \\\n\n",
            "[core.x]\n\tbare = false\n",
            "fsmonitor = x\n",
            "[core]\n\tbare = \"false\n",
            "[core]\n\tbare = \\x\n",
            "[core]\n\tbare\u{0}= false\n",
            "[remote \"a\\\"b\"]\n\turl = x\n",
        ] {
            assert!(parse_config(bad).is_err(), "{bad:?}");
        }
        assert!(parse_config(&"#\n".repeat(40_000)).is_err());
        let e = parse_config(
            "\u{FEFF}# c\n; c\n[Core]\r\n  Bare = \"a;b\" # x\n[remote \"O\"]\nprune\n",
        )
        .expect("parse");
        assert_eq!(e[0].section, "core");
        assert_eq!(e[0].key, "bare");
        assert_eq!(e[0].value.as_deref(), Some("a;b"));
        assert_eq!(e[1].subsection.as_deref(), Some("O"));
        assert_eq!(e[1].value, None);
    }

    #[test]
    fn hooks_and_commondir() {
        assert!(is_sample_hook("pre-commit.sample"));
        assert!(!is_sample_hook("pre-commit"));
        assert!(!is_sample_hook("pre-commit.sample.sh"));
        assert!(is_standard_commondir("../..\n"));
        assert!(!is_standard_commondir("../../../evil\n"));
    }
}
