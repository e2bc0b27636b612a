//! Reads outside the workspace. A program that only reads is harmless to the machine, but what it
//! reads goes into the results, and the results go to the chat: `cat ~/.ssh/id_rsa`,
//! `head /proc/self/environ` or `grep -r token ~/.config` would hand the user's secrets to the
//! model's provider without a question. So a line that names a path outside the workspace (from
//! `/`, from `~`, climbing out with `..`, through a symlink that leads out, or from a variable
//! whose value is not known here) is at least Risky: the user sees it first. Only a short list of
//! system places that hold nothing of the user's is spared.

use super::lexer::Word;
use super::Context;

/// System places that hold nothing of the user's (programs, libraries, the OS's name).
const SYSTEM: &[&str] = &[
    "/usr/bin/",
    "/usr/lib/",
    "/usr/lib64/",
    "/usr/libexec/",
    "/usr/include/",
    "/usr/share/",
    "/usr/local/bin/",
    "/usr/local/lib/",
    "/usr/local/include/",
    "/usr/local/share/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/lib64/",
];
const SYSTEM_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/stdin",
    "/etc/os-release",
    "/usr/lib/os-release",
    "/etc/lsb-release",
    "/etc/debian_version",
    "/etc/alpine-release",
    "/etc/redhat-release",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/version",
    "/proc/loadavg",
    "/proc/uptime",
];

/// Programs whose operands are never files they read (their output is what the line says).
const NO_FILE_OPERANDS: &[&str] = &[
    "echo", "printf", "true", "false", "pwd", "date", "whoami", "id", "uname", "hostname", "which",
    "type", "command", "basename", "dirname", "seq", "expr", "sleep", "test", "[", "realpath",
    "readlink", "nproc", "arch", "cd", "pushd", "popd", "chdir",
];

/// Programs whose first operand is a pattern or a script, not a file (unless `-e`/`-f` give it).
const PATTERN_FIRST: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "mawk", "jq", "yq",
];

/// Options of [`PATTERN_FIRST`] programs whose value is a pattern or a script.
const PATTERN_OPTIONS: &[&str] = &["-e", "--regexp", "--expression"];

/// Options that give those programs their pattern or script from a file or an option, leaving
/// every operand a file.
const PATTERN_GIVEN: &[&str] = &[
    "-e",
    "--regexp",
    "--expression",
    "-f",
    "--file",
    "--from-file",
];

/// Why the words (a program's arguments) read outside the workspace, if they may.
pub(crate) fn outside_arguments(program: &str, args: &[Word], ctx: &Context) -> Option<String> {
    if NO_FILE_OPERANDS.contains(&program) {
        return None;
    }
    let pattern_first = PATTERN_FIRST.contains(&program)
        && !args.iter().any(|w| {
            PATTERN_GIVEN
                .iter()
                .any(|o| w.text == *o || w.text.starts_with(&format!("{o}=")))
        });
    let mut skip_next = false;
    let mut skipped_pattern = !pattern_first;
    let mut options_done = false;
    for w in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        let text = w.text.as_str();
        if !options_done && text == "--" {
            options_done = true;
            continue;
        }
        if !options_done && text.starts_with('-') && text.len() > 1 {
            if PATTERN_FIRST.contains(&program) && PATTERN_OPTIONS.contains(&text) {
                skip_next = true;
                continue;
            }
            if let Some((opt, value)) = text.split_once('=') {
                if !PATTERN_OPTIONS.contains(&opt) {
                    if let Some(why) = outside_path(value, w.expanded, ctx) {
                        return Some(why);
                    }
                }
            } else if w.expanded {
                return Some(format!(
                    "{text} comes from a variable: where it reads is not known"
                ));
            }
            continue;
        }
        if !skipped_pattern {
            skipped_pattern = true;
            continue;
        }
        if let Some(why) = outside_path(text, w.expanded, ctx) {
            return Some(why);
        }
    }
    None
}

/// Why a path (an operand, an option's value, a redirection's file) may be outside the workspace.
pub(crate) fn outside_path(text: &str, expanded: bool, ctx: &Context) -> Option<String> {
    if expanded {
        return Some(format!(
            "{text} comes from a variable: it may name a file outside the workspace"
        ));
    }
    if text.starts_with('~') {
        return Some(format!(
            "reads {text}, outside the workspace (what it prints goes to the chat)"
        ));
    }
    if text.starts_with('/') {
        let system = SYSTEM_FILES.contains(&text)
            || SYSTEM
                .iter()
                .any(|p| text.starts_with(p) && !text.split('/').any(|s| s == ".."));
        return (!system).then(|| {
            format!("reads {text}, outside the workspace (what it prints goes to the chat)")
        });
    }
    let segments: Vec<&str> = text
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let mut depth: i32 = 0;
    for s in &segments {
        depth += if *s == ".." { -1 } else { 1 };
        if depth < 0 {
            return Some(format!(
                "reads {text}, above the workspace (what it prints goes to the chat)"
            ));
        }
    }
    // Through a symlink that leads out: a prefix of the path is such a link (or ends one, as a
    // `cd` earlier in the line may have moved into a folder).
    let mut prefix = String::new();
    for s in segments {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(s);
        if let Some(link) = ctx.links_out.iter().find(|l| {
            **l == prefix
                || l.strip_suffix(prefix.as_str())
                    .is_some_and(|head| head.ends_with('/'))
        }) {
            return Some(format!(
                "reads {text} through {link}, a symlink that leads out of the workspace"
            ));
        }
    }
    None
}

/// The most links followed in resolving one path (the kernel's own limit is 40).
const MAX_HOPS: usize = 40;

/// Of the workspace's symlinks (workspace-relative path, target as the link holds it), those that
/// lead out of the workspace, resolved as the kernel would: through other links of the list, `..`
/// taken after each link. A target that is absolute leads out unless it names a place inside
/// `root` (the workspace's real path); a chain longer than the kernel follows is taken to lead out.
#[must_use]
pub fn links_out(links: &[(String, String)], root: &str) -> Vec<String> {
    let map: std::collections::HashMap<&str, &str> = links
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    links
        .iter()
        .filter(|(p, _)| leads_out(p, &map, root))
        .map(|(p, _)| p.clone())
        .collect()
}

fn leads_out(link: &str, map: &std::collections::HashMap<&str, &str>, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    let mut todo: std::collections::VecDeque<String> =
        link.split('/').map(str::to_string).collect();
    // The resolved path so far, and where each of its segments starts.
    let mut done = String::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut hops = 0;
    while let Some(seg) = todo.pop_front() {
        match seg.as_str() {
            "" | "." => continue,
            ".." => {
                match starts.pop() {
                    Some(at) => done.truncate(at.saturating_sub(usize::from(at > 0))),
                    None => return true,
                }
                continue;
            }
            _ => {}
        }
        let at = if done.is_empty() { 0 } else { done.len() + 1 };
        if !done.is_empty() {
            done.push('/');
        }
        done.push_str(&seg);
        starts.push(at);
        let Some(target) = map.get(done.as_str()) else {
            continue;
        };
        hops += 1;
        if hops > MAX_HOPS {
            return true;
        }
        // The link is replaced by its target, read from the link's folder.
        starts.pop();
        done.truncate(at.saturating_sub(usize::from(at > 0)));
        let rest = if let Some(abs) = target.strip_prefix('/') {
            let inside = if root.is_empty() {
                None
            } else if abs == root.trim_start_matches('/') {
                Some("")
            } else {
                abs.strip_prefix(root.trim_start_matches('/'))
                    .and_then(|r| r.strip_prefix('/'))
            };
            let Some(inside) = inside else { return true };
            done.clear();
            starts.clear();
            inside
        } else {
            target
        };
        for s in rest.split('/').rev() {
            todo.push_front(s.to_string());
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Word {
        Word {
            text: text.into(),
            quoted: false,
            expanded: text.contains('$'),
            glob: false,
        }
    }

    fn outside(program: &str, args: &[&str], ctx: &Context) -> bool {
        let words: Vec<Word> = args.iter().map(|a| w(a)).collect();
        outside_arguments(program, &words, ctx).is_some()
    }

    #[test]
    fn the_users_files_are_outside_and_the_systems_are_not() {
        let ctx = Context::default();
        for (p, a) in [
            ("cat", &["~/.ssh/id_rsa"][..]),
            ("cat", &["/home/u/.aws/credentials"]),
            ("head", &["-c", "100", "/proc/self/environ"]),
            ("cat", &["../../secret"]),
            ("cat", &["src/../../x"]),
            ("grep", &["-r", "token", "/etc"]),
            ("grep", &["-e", "x", "/root"]),
            ("grep", &["--file=/etc/shadow", "src"]),
            ("cat", &["$HOME/.netrc"]),
            ("ls", &["/"]),
            ("sed", &["-n", "p", "/usr/../home/u/x"]),
        ] {
            assert!(outside(p, a, &ctx), "{p} {a:?}");
        }
        for (p, a) in [
            ("cat", &["src/main.rs"][..]),
            ("cat", &["/etc/os-release"]),
            ("ls", &["/usr/bin/"]),
            ("grep", &["-rn", "/api/", "src"]),
            ("sed", &["-n", "/start/,/end/p", "notes.md"]),
            ("awk", &["/x/ { print }", "a.txt"]),
            ("grep", &["-e", "/x", "src"]),
            ("echo", &["/etc/shadow"]),
            ("cat", &["a/../b"]),
        ] {
            assert!(!outside(p, a, &ctx), "{p} {a:?}");
        }
    }

    #[test]
    fn symlinks_out_are_outside_from_any_folder() {
        let ctx = Context {
            links_out: vec!["docs/home".into()],
            ..Context::default()
        };
        assert!(outside("cat", &["docs/home/.ssh/id_rsa"], &ctx));
        assert!(outside("cat", &["./docs/home"], &ctx));
        // After `cd docs` the same link is `home`.
        assert!(outside("cat", &["home/.ssh/id_rsa"], &ctx));
        assert!(!outside("cat", &["docs/homepage.md"], &ctx));
    }

    #[test]
    fn links_are_resolved_as_the_kernel_would() {
        let l = |p: &str, t: &str| (p.to_string(), t.to_string());
        let links = vec![
            l("home", "/home/u"),
            l("inside", "/work/repo/src"),
            l("up", "../.."),
            l("sub/back", ".."),
            l("sub/out", "../../x"),
            l("a", "b/deep"),
            l("b", "c"),
            l("c", "/etc"),
            l("loop1", "loop2"),
            l("loop2", "loop1"),
            l("node_modules/.bin/tsc", "../typescript/bin/tsc"),
            l("x/y", "../sub/back/sub/back"),
        ];
        let mut out = links_out(&links, "/work/repo");
        out.sort();
        assert_eq!(
            out,
            vec!["a", "b", "c", "home", "loop1", "loop2", "sub/out", "up"]
        );
    }
}
