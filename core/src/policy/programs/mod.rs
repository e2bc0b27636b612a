//! Classifies segments: the pipeline rules, the rules that hold for every program, the
//! known-safe lists, then every program keyless knows something about, one family a file, found
//! by name in [`RATERS`]. Anything else is an unknown program, Risky.
//!
//! - [`common`]: what the raters share (the call, the option helpers, the wrapper rule);
//! - one file a family of programs, each with the rule it applies and why.

mod archivers;
mod builds;
mod cargo;
mod cd;
mod common;
mod compilers;
mod editors;
mod files;
mod find;
mod git;
mod go;
mod interpreters;
mod network;
mod node;
mod packages;
mod python;
mod sed_awk;
mod shells;
mod system;
mod tooling;
mod wrappers;

use super::args::Operands;
use super::known;
use super::lexer::{base_name, RedirKind, Segment, Word};
use super::{classify_line, rated, worse, Context, Rated, SegmentVerdict, Tier};
use common::{rate_known, texts, unknown_program, Call, Names, Rater, DOWNLOADERS};

/// The programs rated by what their arguments do, each family's names with its rater. A name
/// stands in one family only; `mkfs.*` stands for every name that begins with `mkfs.`.
const RATERS: &[(Names, Rater)] = &[
    (cd::NAMES, cd::rate),
    (wrappers::NAMES, wrappers::rate),
    (shells::NAMES, shells::rate),
    (find::NAMES, find::rate),
    (sed_awk::NAMES, sed_awk::rate),
    (system::NAMES, system::rate),
    (files::NAMES, files::rate),
    (archivers::NAMES, archivers::rate),
    (network::NAMES, network::rate),
    (editors::NAMES, editors::rate),
    (packages::NAMES, packages::rate),
    (git::NAMES, git::rate),
    (node::NAMES, node::rate),
    (python::NAMES, python::rate),
    (interpreters::NAMES, interpreters::rate),
    (cargo::NAMES, cargo::rate),
    (go::NAMES, go::rate),
    (builds::NAMES, builds::rate),
    (compilers::NAMES, compilers::rate),
    (tooling::NAMES, tooling::rate),
];

/// Whether a table name stands for the program `name`.
fn names_program(entry: &str, name: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => entry == name,
    }
}

/// The rater of a program, by name.
fn rater(name: &str) -> Option<Rater> {
    RATERS
        .iter()
        .find(|(names, _)| {
            names
                .iter()
                .any(|group| group.iter().any(|n| names_program(n, name)))
        })
        .map(|(_, rate)| *rate)
}

/// Programs that run code they read: fed a pipe, a here-document or a download, they run it.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "mksh",
    "python",
    "python3",
    "python2",
    "py",
    "pypy",
    "pypy3",
    "node",
    "nodejs",
    "perl",
    "ruby",
    "php",
    "lua",
    "iex",
    "invoke-expression",
    "pwsh",
    "powershell",
    "cmd",
    "sudo",
    "source",
    "eval",
    "deno",
    "bun",
    "tclsh",
    "osascript",
    "xargs",
];
const VERSION_PROBE_PROGRAMS: &[&str] = &[
    "git",
    "node",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "bun",
    "deno",
    "python",
    "python3",
    "py",
    "pip",
    "pip3",
    "cargo",
    "rustc",
    "rustup",
    "dotnet",
    "go",
    "java",
    "javac",
    "gcc",
    "g++",
    "cc",
    "clang",
    "clang++",
    "make",
    "cmake",
    "tsc",
    "ruby",
    "perl",
    "php",
    "mvn",
    "gradle",
    "docker",
    "kubectl",
    "curl",
    "wget",
    "ls",
    "cat",
    "grep",
    "sed",
    "awk",
    "uv",
    "poetry",
    "pytest",
    "jest",
    "vitest",
    "eslint",
    "prettier",
    "ruff",
    "mypy",
    "black",
    "terraform",
    "swift",
    "zig",
    "ninja",
    "meson",
    "bazel",
    "sqlite3",
    "psql",
    "gh",
    "conda",
    "rg",
    "jq",
    "bun",
];
/// Shell words that start control structures the policy does not analyse.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "select", "function", "{", "}", "!", "[[", "]]", "in", "coproc",
];
/// Environment variables that only change how a program reports, never what it runs.
const HARMLESS_ENV: &[&str] = &[
    "RUST_LOG",
    "RUST_BACKTRACE",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "CI",
    "TERM",
    "COLUMNS",
    "LINES",
    "LANG",
    "LC_ALL",
    "LC_MESSAGES",
    "TZ",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "CARGO_TERM_COLOR",
    "CARGO_INCREMENTAL",
    "DEBUG",
    "VERBOSE",
];

/// Classifies the segments of one line, with the pipeline rules (a download piped into an
/// interpreter is denied; a here-document piped into one is classified as the script it is).
pub(crate) fn classify_segments(raw: &[Segment], depth: u32, ctx: &Context) -> Vec<SegmentVerdict> {
    let mut out: Vec<SegmentVerdict> = Vec::with_capacity(raw.len());
    let mut pipeline_has_downloader = false;
    let mut pipeline_heredoc: Option<&str> = None;
    let relative_path = ctx
        .path_dirs
        .iter()
        .find(|d| d.relative)
        .map(|d| d.dir.as_str());
    let mut moved = false;
    for seg in raw {
        if !seg.piped {
            pipeline_has_downloader = false;
            pipeline_heredoc = None;
        }
        let mut r = classify_segment(seg, depth, ctx);
        let prog = program_name(seg);
        if let Some(why) = maybe_shadowed(seg, &prog, moved, relative_path, ctx) {
            r = worse(r, rated(Tier::Risky, why));
        }
        if ctx.unguarded {
            let why = match ctx.unguarded_folders.first() {
                Some(folder) => format!(
                    "keyless cannot check git's files after a command in this workspace: it cannot look into the folder {folder} (its permissions or its name); make it readable (chmod u+rx) or rename it, and commands are judged again"
                ),
                None => "keyless cannot check git's files after a command in this workspace (it holds more entries than keyless looks through)".to_string(),
            };
            r = worse(r, rated(Tier::Risky, why));
        }
        if matches!(prog.as_str(), "cd" | "pushd" | "popd") {
            moved = true;
        }
        if seg.piped && INTERPRETERS.contains(&prog.as_str()) {
            if pipeline_has_downloader {
                r = worse(
                    r,
                    rated(
                        Tier::Denied,
                        format!("pipes a download into {prog} (curl | sh)"),
                    ),
                );
            }
            if let Some(why) = pipeline_heredoc.and_then(|body| denied_within(body, depth, ctx)) {
                r = worse(
                    r,
                    rated(
                        Tier::Denied,
                        format!("pipes a here-document into {prog} that runs: {why}"),
                    ),
                );
            }
        }
        if DOWNLOADERS.contains(&prog.as_str()) {
            pipeline_has_downloader = true;
        }
        if let Some((body, _)) = &seg.heredoc {
            pipeline_heredoc = Some(body);
        }
        out.push(SegmentVerdict {
            text: seg.text.clone(),
            tier: r.0,
            reason: r.1,
        });
    }
    out
}

/// Commands the shell runs itself, whatever PATH holds.
const SHELL_BUILTINS: &[&str] = &[
    "cd", "pushd", "popd", "echo", "printf", "pwd", "true", "false", "test", "[", ":", "exit",
    "export", "set", "unset", "shift", "umask", "wait", "read", "type", "hash",
];

/// Why a segment's program may be one the model wrote although the host's list of shadowed
/// programs does not name it: that list was cut short, or PATH has a relative folder and the line
/// changed folder before (the shell then looks the program up from there).
fn maybe_shadowed(
    seg: &Segment,
    prog: &str,
    moved: bool,
    relative_path: Option<&str>,
    ctx: &Context,
) -> Option<String> {
    if prog.is_empty() || SHELL_BUILTINS.contains(&prog) {
        return None;
    }
    if seg.program().is_some_and(|w| w.text.contains('/')) {
        return None; // a path is judged as a path
    }
    if ctx.untrusted_unknown {
        return Some(format!(
            "{prog} may be a program the model wrote: keyless could not list every program in the PATH folders the model can write"
        ));
    }
    match relative_path {
        Some(dir) if moved => Some(format!(
            "{prog} may be a program the model wrote: PATH holds the relative folder \"{dir}\", which the shell looks up from the folder the line changed to"
        )),
        _ => None,
    }
}

/// A program word's name: without folder or Windows extension, lower case.
fn normalized(word: &str) -> String {
    let name = base_name(word).to_ascii_lowercase();
    for ext in [".exe", ".cmd", ".bat", ".com"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return stem.to_string();
        }
    }
    name
}

fn program_name(seg: &Segment) -> String {
    seg.program()
        .map(|w| normalized(&w.text))
        .unwrap_or_default()
}

fn classify_segment(seg: &Segment, depth: u32, ctx: &Context) -> Rated {
    let prog = program_name(seg);
    let mut r = if seg.subshell || seg.words.is_empty() {
        if seg.assignments.is_empty() {
            rated(Tier::ReadOnly, "nothing to run")
        } else {
            rated(
                Tier::Risky,
                "sets a shell variable for the commands after it",
            )
        }
    } else {
        classify_words(&seg.words, depth, ctx)
    };
    for a in &seg.assignments {
        let name = a.text.split('=').next().unwrap_or("");
        if !HARMLESS_ENV.contains(&name) {
            r = worse(
                r,
                rated(
                    Tier::Risky,
                    format!("{name}=… changes the program's environment"),
                ),
            );
        }
    }
    for (tier, why) in &seg.notes {
        r = worse(r, rated(*tier, why.clone()));
    }
    for redir in &seg.redirects {
        r = worse(r, rate_redirect(redir.kind, &redir.target, ctx));
    }
    let reads_code = INTERPRETERS.contains(&prog.as_str())
        && seg.words.iter().skip(1).all(|w| w.text.starts_with('-'));
    let scripts = [
        ("here-document", seg.heredoc.as_ref().map(|(body, _)| body)),
        ("here-string", seg.herestring.as_ref()),
    ];
    for (what, text) in scripts {
        if let Some(text) = text {
            if INTERPRETERS.contains(&prog.as_str()) {
                r = worse(
                    r,
                    rated(Tier::Risky, format!("{prog} runs a {what} script")),
                );
                if let Some(why) = denied_within(text, depth, ctx) {
                    r = worse(r, rated(Tier::Denied, format!("the {what} runs: {why}")));
                }
            }
        }
    }
    if seg.piped && reads_code && seg.heredoc.is_none() {
        r = worse(
            r,
            rated(Tier::Risky, format!("{prog} runs the code piped into it")),
        );
    }
    for inner in &seg.inner {
        if let Some(why) = denied_within(inner, depth, ctx) {
            r = worse(
                r,
                rated(Tier::Denied, format!("runs a denied command inside: {why}")),
            );
        }
        // A shell given a download to run is curl | sh in disguise.
        if INTERPRETERS.contains(&prog.as_str()) || prog == "." {
            let first = inner
                .split_whitespace()
                .next()
                .map(normalized)
                .unwrap_or_default();
            if DOWNLOADERS.contains(&first.as_str()) {
                r = worse(
                    r,
                    rated(Tier::Denied, "runs code downloaded from the network"),
                );
            }
        }
    }
    if seg.background {
        r = worse(r, rated(Tier::Risky, "runs in the background"));
    }
    r
}

/// Why a line this segment runs (a here-document, a here-string, a substitution), one level
/// deeper, is Denied, when it is.
fn denied_within(line: &str, depth: u32, ctx: &Context) -> Option<String> {
    let inner = classify_line(line, depth + 1, ctx);
    (inner.0 == Tier::Denied).then_some(inner.1)
}

fn rate_redirect(kind: RedirKind, target: &Word, ctx: &Context) -> Rated {
    let t = target.text.as_str();
    match kind {
        RedirKind::Read => match super::reads::outside_path(t, target.expanded, target.glob, ctx) {
            Some(why) => rated(Tier::Risky, why),
            None => rated(Tier::ReadOnly, ""),
        },
        RedirKind::Dup | RedirKind::HereString => rated(Tier::ReadOnly, ""),
        RedirKind::HereDoc => rated(Tier::Execute, "a here-document feeds text to the program"),
        RedirKind::ReadWrite => rated(Tier::Risky, format!("<> opens a file for writing ({t})")),
        RedirKind::Both => rated(
            Tier::Risky,
            "&> is a redirection in bash but a background job in sh",
        ),
        RedirKind::Write => {
            if matches!(t, "/dev/null" | "/dev/stdout" | "/dev/stderr")
                || t.eq_ignore_ascii_case("nul")
                || (t.starts_with("/dev/fd/") && t[8..].bytes().all(|b| b.is_ascii_digit()))
            {
                rated(Tier::ReadOnly, "")
            } else if [
                "/dev/sd",
                "/dev/nvme",
                "/dev/disk",
                "/dev/hd",
                "/dev/mmcblk",
                "/dev/vd",
            ]
            .iter()
            .any(|p| t.starts_with(p))
            {
                rated(
                    Tier::Denied,
                    format!("redirection writes to a raw disk ({t})"),
                )
            } else {
                rated(Tier::Risky, format!("redirection writes a file ({t})"))
            }
        }
    }
}

/// Classifies a command given as words (a segment's, or a wrapper's inner command), then the
/// rules that hold for every program: a glob that may expand into an option, and a workspace
/// file that steers the program.
fn classify_words(words: &[Word], depth: u32, ctx: &Context) -> Rated {
    let mut r = classify_program(words, depth, ctx);
    let name = normalized(&words[0].text);
    if let Some(w) = option_glob(&name, &words[1..]) {
        r = worse(
            r,
            rated(
                Tier::Execute,
                format!("the glob {w} may expand to a file named like an option of {name} (write -- before it, or ./{w})"),
            ),
        );
    }
    let all = texts(words);
    if let Some(why) =
        super::steering::steered(&name, &all[1..], &ctx.steering, ctx.steering_unknown)
    {
        r = worse(r, rated(Tier::Execute, why));
    }
    if r.0 < Tier::Risky {
        if let Some(why) = super::reads::outside_arguments(&name, &words[1..], ctx) {
            r = worse(r, rated(Tier::Risky, why));
        }
    }
    r
}

/// A glob word that the shell may expand into a file named like an option (it begins with a
/// glob character, before any `--`), for a program whose options are not all harmless: a file
/// named `--pre=./x` in the workspace would become `rg`'s option. A known program whose every
/// option only changes its output (no risky options, no output operand) is spared.
fn option_glob<'a>(name: &str, args: &'a [Word]) -> Option<&'a str> {
    if let Some(k) = known::lookup(name) {
        if k.spec.risky.is_empty() && k.spec.operands == Operands::Any {
            return None;
        }
    }
    args.iter()
        .take_while(|w| w.text != "--")
        .find(|w| w.glob && w.text.starts_with(['*', '?', '[']))
        .map(|w| w.text.as_str())
}

/// Rates one command by its program: the rules for the program word (a variable, a shell
/// construct, a program the model may have written, a script by path), a version probe, the
/// known-safe lists, then the rater [`RATERS`] names; any other program is unknown (Risky).
fn classify_program(words: &[Word], depth: u32, ctx: &Context) -> Rated {
    let program = &words[0];
    if program.expanded {
        return rated(
            Tier::Risky,
            "the program name comes from a variable or a substitution",
        );
    }
    if !program.quoted && RESERVED.contains(&program.text.as_str()) {
        return rated(
            Tier::Risky,
            format!("the shell construct \"{}\" is not analysed", program.text),
        );
    }
    let all = texts(words);
    let whole = all.join(" ");
    if whole.contains(":(){")
        || whole.contains(":() {")
        || whole.replace(' ', "").contains(":(){:|:&};:")
    {
        return rated(Tier::Denied, "a fork bomb");
    }
    let word = program.text.as_str();
    let name = normalized(word);
    if let Some(place) = ctx
        .untrusted
        .iter()
        .find(|u| normalized(&u.name) == name)
        .map(|u| &u.path)
    {
        if !word.contains('/') {
            return rated(
                Tier::Risky,
                format!("{name} would run {place}, from a folder the model can write"),
            );
        }
    }
    // A program given by path that is not a system one: a script of the workspace or elsewhere.
    if word.contains('/') || word.contains('\\') {
        let system = [
            "/usr/bin/",
            "/bin/",
            "/usr/local/bin/",
            "/usr/sbin/",
            "/sbin/",
        ]
        .iter()
        .any(|p| word.starts_with(p) && !word[p.len()..].contains('/'));
        if !system {
            if matches!(name.as_str(), "gradlew" | "mvnw") {
                return rated(Tier::Execute, format!("{name} runs the project's build"));
            }
            return rated(Tier::Risky, format!("runs a script by path ({word})"));
        }
    }
    let args = &words[1..];
    let a = &all[1..];
    if a.len() == 1
        && matches!(a[0], "--version" | "-version" | "-V" | "version")
        && VERSION_PROBE_PROGRAMS.contains(&name.as_str())
    {
        return rated(
            Tier::ReadOnly,
            format!("{name} {} only prints its version", a[0]),
        );
    }
    if a.len() == 1
        && a[0] == "-v"
        && matches!(
            name.as_str(),
            "node" | "npm" | "yarn" | "pnpm" | "bun" | "deno" | "go"
        )
    {
        return rated(Tier::ReadOnly, format!("{name} -v only prints its version"));
    }
    if let Some(k) = known::lookup(&name) {
        return rate_known(&name, k.tier, k.does, &k.spec, args);
    }
    if let Some(rate) = rater(&name) {
        return rate(&Call {
            name: &name,
            words,
            depth,
            ctx,
            classify_words,
            classify_line,
        });
    }
    unknown_program(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_stands_in_one_family_and_is_not_on_the_known_safe_list() {
        let mut seen = std::collections::BTreeSet::new();
        for (names, _) in RATERS {
            for n in names.iter().flat_map(|g| g.iter()) {
                assert!(seen.insert(*n), "{n} is named twice");
                assert!(known::lookup(n).is_none(), "{n} is on the known-safe list");
            }
        }
    }
}
