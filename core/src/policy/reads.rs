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

/// Programs whose first operand is a pattern, a script or a filter, not a file, unless an option
/// gives it ([`pattern_options`]).
const PATTERN_FIRST: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "mawk", "jq", "yq",
];

/// What the value of an option that gives a pattern program its pattern is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Given {
    /// The pattern or script itself (`grep -e PAT`).
    Pattern,
    /// A file it is read from (`grep -f FILE`): a path like any operand.
    File,
}

/// The options that give a [`PATTERN_FIRST`] program its pattern (short letters, long names):
/// with one of them, every operand is a file.
type ShortOptions = &'static [(char, Given)];
type LongOptions = &'static [(&'static str, Given)];

fn pattern_options(program: &str) -> (ShortOptions, LongOptions) {
    match program {
        "grep" | "egrep" | "fgrep" | "rg" => (
            &[('e', Given::Pattern), ('f', Given::File)],
            &[("--regexp", Given::Pattern), ("--file", Given::File)],
        ),
        "sed" => (
            &[('e', Given::Pattern), ('f', Given::File)],
            &[("--expression", Given::Pattern), ("--file", Given::File)],
        ),
        "awk" | "gawk" | "mawk" => (
            &[('f', Given::File), ('e', Given::Pattern)],
            &[("--file", Given::File), ("--source", Given::Pattern)],
        ),
        "jq" | "yq" => (&[('f', Given::File)], &[("--from-file", Given::File)]),
        _ => (&[], &[]),
    }
}

/// Options that make a reading program follow symlinks while it walks folders.
fn follows_links(program: &str, option: &str) -> bool {
    let short = |c: char| {
        option.len() > 1
            && !option.starts_with("--")
            && option.starts_with('-')
            && option[1..].contains(c)
    };
    match program {
        "grep" | "egrep" | "fgrep" => short('R') || option == "--dereference-recursive",
        "rg" => short('L') || option == "--follow",
        "find" => matches!(option, "-L" | "-H" | "-follow"),
        "tree" => short('l'),
        "du" | "ls" => short('L') || option == "--dereference",
        _ => false,
    }
}

/// Why the words (a program's arguments) read outside the workspace, if they may.
pub(crate) fn outside_arguments(program: &str, args: &[Word], ctx: &Context) -> Option<String> {
    if NO_FILE_OPERANDS.contains(&program) {
        return None;
    }
    let (short, long) = pattern_options(program);
    let mut operands: Vec<&Word> = Vec::new();
    // Option values that name files, checked like operands.
    let mut files: Vec<(&str, bool, bool)> = Vec::new();
    let mut given = false;
    let mut next_value: Option<Given> = None;
    let mut options_done = false;
    for w in args {
        let text = w.text.as_str();
        if let Some(kind) = next_value.take() {
            if kind == Given::File {
                files.push((text, w.expanded, w.glob));
            }
            continue;
        }
        if options_done || text == "-" || !text.starts_with('-') {
            operands.push(w);
            continue;
        }
        if text == "--" {
            options_done = true;
            continue;
        }
        if !ctx.links_out.is_empty() && follows_links(program, text) {
            return Some(format!(
                "{program} {text} follows symlinks, and {} leads out of the workspace",
                ctx.links_out[0]
            ));
        }
        if let Some(name) = text.strip_prefix("--") {
            let (name, value) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (name, None),
            };
            // GNU programs take any unambiguous abbreviation of a long option.
            let kind = long.iter().find_map(|(full, k)| {
                (name.len() >= 3 && full.trim_start_matches('-').starts_with(name)).then_some(*k)
            });
            match (kind, value) {
                (Some(k), Some(v)) => {
                    given = true;
                    if k == Given::File {
                        files.push((v, w.expanded, w.glob));
                    }
                }
                (Some(k), None) => {
                    given = true;
                    next_value = Some(k);
                }
                (None, Some(v)) => files.push((v, w.expanded, w.glob)),
                (None, None) if w.expanded => {
                    return Some(format!(
                        "{text} comes from a variable: where it reads is not known"
                    ))
                }
                (None, None) => {}
            }
            continue;
        }
        // A cluster of short options; the first that takes a value takes the rest of the word,
        // or the next word (`-ie.`, `-f FILE`, `-e1p`).
        if w.expanded {
            return Some(format!(
                "{text} comes from a variable: where it reads is not known"
            ));
        }
        let mut known = false;
        for (i, c) in text.char_indices().skip(1) {
            if let Some((_, k)) = short.iter().find(|(s, _)| *s == c) {
                given = true;
                known = true;
                let rest = &text[i + c.len_utf8()..];
                if rest.is_empty() {
                    next_value = Some(*k);
                } else if *k == Given::File {
                    files.push((rest, false, w.glob));
                }
                break;
            }
        }
        // An option this table does not know may take its value glued to it (`make -f/etc/x`,
        // `go test -C../other`, `-o=../x`): the value is checked like a path, as the spaced
        // spelling's operand would be.
        if !known {
            if let Some((i, c)) = text.char_indices().nth(1) {
                let rest = &text[i + c.len_utf8()..];
                let rest = rest.strip_prefix('=').unwrap_or(rest);
                if !rest.is_empty() {
                    files.push((rest, false, w.glob));
                }
            }
        }
    }
    let skip = usize::from(PATTERN_FIRST.contains(&program) && !given);
    let checked = operands
        .iter()
        .skip(skip)
        .map(|w| (w.text.as_str(), w.expanded, w.glob))
        .chain(files);
    for (text, expanded, glob) in checked {
        if let Some(why) = outside_path(text, expanded, glob, ctx) {
            return Some(why);
        }
    }
    None
}

/// Whether a glob segment may match `..` (`.?`, `.*`, `.[.]`), or a name it does not spell.
fn glob_segment(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Why a path (an operand, an option's value, a redirection's file) may be outside the workspace.
/// `glob`: the word holds unquoted glob characters (the shell may expand them).
pub(crate) fn outside_path(
    text: &str,
    expanded: bool,
    glob: bool,
    ctx: &Context,
) -> Option<String> {
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
        let system = !glob
            && (SYSTEM_FILES.contains(&text)
                || SYSTEM
                    .iter()
                    .any(|p| text.starts_with(p) && !text.split('/').any(|s| s == "..")));
        return (!system).then(|| {
            format!("reads {text}, outside the workspace (what it prints goes to the chat)")
        });
    }
    let segments: Vec<&str> = text
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    // Climbing above the workspace, with `..` or a glob that may match it.
    let mut depth: i32 = 0;
    for s in &segments {
        let up = *s == ".." || (glob && glob_segment(s) && s.starts_with(['.', '[']));
        depth += if up { -1 } else { 1 };
        if depth < 0 {
            return Some(format!(
                "reads {text}, which may climb above the workspace (what it prints goes to the chat)"
            ));
        }
    }
    if ctx.links_any && segments.contains(&"..") {
        return Some(format!(
            "reads {text}: a `..` after a symlink climbs from where the link leads, and the workspace holds symlinks"
        ));
    }
    if ctx.links_unknown && !segments.is_empty() {
        return Some(format!(
            "reads {text}: the workspace holds more symlinks than keyless follows, so where it leads is not known"
        ));
    }
    if ctx.links_out.is_empty() {
        return None;
    }
    if glob && segments.iter().any(|s| glob_segment(s)) {
        return Some(format!(
            "reads {text}, a glob that may match {}, a symlink that leads out of the workspace",
            ctx.links_out[0]
        ));
    }
    // Through a symlink that leads out: a prefix of the path, as written or with its `..`
    // taken, is such a link (or ends one, as a `cd` earlier in the line may have moved into a
    // folder).
    let mut normal: Vec<&str> = Vec::new();
    for s in &segments {
        if *s == ".." {
            normal.pop();
        } else {
            normal.push(s);
        }
    }
    for path in [segments, normal] {
        let mut prefix = String::new();
        for s in path {
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
    }
    None
}

/// The most links followed in resolving one path (the kernel's own limit is 40).
const MAX_HOPS: usize = 40;
/// The most path segments the resolver walks for a whole workspace: past it (a workspace built
/// to make resolving slow) the answer is "not known", and reads are judged as such.
const MAX_STEPS: usize = 4_000_000;

/// The workspace's symlinks that lead out of it, and whether every link could be resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinksOut {
    pub out: Vec<String>,
    /// False when resolving stopped at [`MAX_STEPS`]: the list may miss some.
    pub complete: bool,
}

/// Of the workspace's symlinks (workspace-relative path, target as the link holds it), those that
/// lead out of the workspace, resolved as the kernel would: through other links of the list, `..`
/// taken after each link. A target that is absolute leads out unless it names a place inside
/// `root` (the workspace's real path); a loop, or a chain longer than the kernel follows, is taken
/// to lead out. Each link is resolved once.
#[must_use]
pub fn links_out(links: &[(String, String)], root: &str) -> LinksOut {
    let mut r = Resolver {
        map: links
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect(),
        memo: std::collections::HashMap::new(),
        visiting: std::collections::HashSet::new(),
        steps: 0,
        root: root.trim_end_matches('/').trim_start_matches('/'),
    };
    let mut out = Vec::new();
    for (p, _) in links {
        if r.link(p, 0).is_none() {
            if r.steps > MAX_STEPS {
                return LinksOut {
                    out,
                    complete: false,
                };
            }
            out.push(p.clone());
        }
    }
    LinksOut {
        out,
        complete: true,
    }
}

struct Resolver<'a> {
    map: std::collections::HashMap<&'a str, &'a str>,
    /// A link's resolved place (workspace-relative), or `None` when it leads out.
    memo: std::collections::HashMap<String, Option<String>>,
    visiting: std::collections::HashSet<String>,
    steps: usize,
    root: &'a str,
}

impl Resolver<'_> {
    /// Where a link leads, workspace-relative; `None` when out (or a loop, or too deep).
    fn link(&mut self, link: &str, hops: usize) -> Option<String> {
        if let Some(m) = self.memo.get(link) {
            return m.clone();
        }
        if hops > MAX_HOPS || self.visiting.contains(link) || self.steps > MAX_STEPS {
            return None;
        }
        let target = *self.map.get(link)?;
        self.visiting.insert(link.to_string());
        let start = if let Some(abs) = target.strip_prefix('/') {
            let inside = if self.root.is_empty() {
                None
            } else if abs.trim_end_matches('/') == self.root {
                Some(String::new())
            } else {
                abs.strip_prefix(self.root)
                    .and_then(|r| r.strip_prefix('/'))
                    .map(str::to_string)
            };
            inside
        } else {
            // Read from the link's folder.
            Some(match link.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{target}"),
                None => target.to_string(),
            })
        };
        let resolved = start.and_then(|p| self.path(&p, hops + 1));
        self.visiting.remove(link);
        if self.steps <= MAX_STEPS {
            self.memo.insert(link.to_string(), resolved.clone());
        }
        resolved
    }

    /// A workspace-relative path with every link in it resolved; `None` when it leads out.
    fn path(&mut self, path: &str, hops: usize) -> Option<String> {
        let mut done: Vec<String> = Vec::new();
        let mut todo: std::collections::VecDeque<String> =
            path.split('/').map(str::to_string).collect();
        while let Some(seg) = todo.pop_front() {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return None;
            }
            match seg.as_str() {
                "" | "." => continue,
                ".." => {
                    done.pop()?;
                    continue;
                }
                _ => {}
            }
            done.push(seg);
            let cur = done.join("/");
            if self.map.contains_key(cur.as_str()) {
                let place = self.link(&cur, hops)?;
                done = place
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
            }
        }
        Some(done.join("/"))
    }
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
        let found = links_out(&links, "/work/repo");
        assert!(found.complete);
        let mut out = found.out;
        out.sort();
        assert_eq!(
            out,
            vec!["a", "b", "c", "home", "loop1", "loop2", "sub/out", "up"]
        );
        // `..` after a link climbs from where the link leads: `self/self/../..` is above.
        let links = vec![l("self", "."), l("deep/up2", "../self/../..")];
        assert_eq!(links_out(&links, "/w").out, vec!["deep/up2"]);
    }

    #[test]
    fn a_workspace_made_to_slow_the_resolver_down_is_not_known() {
        // 3,000 links with 2,000-segment targets, each leading to the next: a few million steps.
        let hop = "./".repeat(2_000);
        let links: Vec<(String, String)> = (0..3_000)
            .map(|i| (format!("l{i}"), format!("{hop}l{}", (i + 1) % 3_000)))
            .collect();
        let found = links_out(&links, "/w");
        assert!(!found.complete);
    }
}
