//! Classifies segments: the known-safe lists first, then every program keyless knows something
//! about (wrappers, interpreters, package managers, git, deletions, the denied list). Anything
//! else is an unknown program, Risky.

use super::args::{check, Check, Operands, Spec};
use super::known::{self, CC, CC_RISKY};
use super::lexer::{base_name, RedirKind, Segment, Word};
use super::{classify_line, rated, worse, Context, Rated, SegmentVerdict, Tier, MAX_DEPTH};

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox", "mksh",
];
const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "iwr",
    "invoke-webrequest",
    "irm",
    "invoke-restmethod",
    "aria2c",
    "http",
    "https",
    "xh",
];
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
            r = worse(
                r,
                rated(
                    Tier::Risky,
                    "keyless cannot check git's files after a command in this workspace (it holds more entries than keyless looks through)",
                ),
            );
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
            if let Some(body) = pipeline_heredoc {
                let inner = classify_line(body, depth + 1, ctx);
                if inner.0 == Tier::Denied {
                    r = worse(
                        r,
                        rated(
                            Tier::Denied,
                            format!("pipes a here-document into {prog} that runs: {}", inner.1),
                        ),
                    );
                }
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
    if let Some((body, _)) = &seg.heredoc {
        if INTERPRETERS.contains(&prog.as_str()) {
            r = worse(
                r,
                rated(Tier::Risky, format!("{prog} runs a here-document script")),
            );
            let inner = classify_line(body, depth + 1, ctx);
            if inner.0 == Tier::Denied {
                r = worse(
                    r,
                    rated(Tier::Denied, format!("the here-document runs: {}", inner.1)),
                );
            }
        }
    }
    if let Some(text) = &seg.herestring {
        if INTERPRETERS.contains(&prog.as_str()) {
            r = worse(
                r,
                rated(Tier::Risky, format!("{prog} runs a here-string script")),
            );
            let inner = classify_line(text, depth + 1, ctx);
            if inner.0 == Tier::Denied {
                r = worse(
                    r,
                    rated(Tier::Denied, format!("the here-string runs: {}", inner.1)),
                );
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
        let inner_r = classify_line(inner, depth + 1, ctx);
        if inner_r.0 == Tier::Denied {
            r = worse(
                r,
                rated(
                    Tier::Denied,
                    format!("runs a denied command inside: {}", inner_r.1),
                ),
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

fn texts(words: &[Word]) -> Vec<&str> {
    words.iter().map(|w| w.text.as_str()).collect()
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
    match name.as_str() {
        "cd" | "pushd" | "popd" | "chdir" => rate_cd(&name, a, ctx),
        "command" => {
            if a.first().is_some_and(|x| *x == "-v" || *x == "-V") {
                rated(Tier::ReadOnly, "command -v only looks a program up")
            } else {
                wrapper(&name, words, 1, depth, ctx)
            }
        }
        "find" => rate_find(words, depth, ctx),
        "sed" | "gsed" => rate_sed(a),
        "awk" | "gawk" | "mawk" | "nawk" => rate_awk(a),
        "xxd" => rated(
            Tier::Execute,
            "xxd with these arguments is not on the known-safe list",
        ),
        "env" => rate_env(words, depth, ctx),
        "sudo" | "doas" => wrapper_skip(
            &name,
            words,
            &["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D"],
            depth,
            ctx,
        ),
        "nice" => wrapper_skip(&name, words, &["-n", "--adjustment"], depth, ctx),
        "ionice" => wrapper_skip(&name, words, &["-c", "-n", "-p", "-t"], depth, ctx),
        "stdbuf" => wrapper_skip(&name, words, &["-i", "-o", "-e"], depth, ctx),
        "nohup" | "time" | "exec" | "builtin" | "unbuffer" | "caffeinate" | "strace" | "ltrace"
        | "chroot" | "setsid" | "flock" | "script" | "runuser" | "su" | "taskset" | "proot"
        | "firejail" | "systemd-run" | "start" | "start-process" | "call" | "trap" | "unshare"
        | "nsenter" | "chrt" | "prlimit" | "catchsegv" | "valgrind" | "gdb" | "rr" => {
            wrapper_skip(&name, words, &[], depth, ctx)
        }
        "timeout" | "gtimeout" => {
            // timeout [options] DURATION COMMAND…
            let mut i = 1;
            while i < words.len() && words[i].text.starts_with('-') {
                if matches!(
                    words[i].text.as_str(),
                    "-s" | "-k" | "--signal" | "--kill-after"
                ) {
                    i += 1;
                }
                i += 1;
            }
            wrapper(&name, words, i + 1, depth, ctx)
        }
        "watch" => wrapper_skip(&name, words, &["-n", "--interval", "-d"], depth, ctx),
        "xargs" => wrapper_skip(
            &name,
            words,
            &[
                "-I",
                "-i",
                "-n",
                "-P",
                "-d",
                "-L",
                "-l",
                "-s",
                "-E",
                "-e",
                "-a",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
                "--replace",
            ],
            depth,
            ctx,
        ),
        "parallel" => rated(Tier::Risky, "parallel runs other commands"),
        "eval" => shell_string("eval", &a.join(" "), depth, ctx),
        "source" | "." => rated(
            Tier::Risky,
            format!("{name} runs a script in the current shell"),
        ),
        "export" | "declare" | "typeset" | "local" | "readonly" | "set" | "unset" | "alias"
        | "unalias" | "read" | "shift" | "let" | "getopts" | "ulimit" | "umask" | "hash"
        | "enable" | "shopt" | "bind" => rated(
            Tier::Risky,
            format!("{name} changes the shell's state for the commands after it"),
        ),
        "exit" | "return" | "wait" | "jobs" => {
            rated(Tier::ReadOnly, format!("{name} only ends or waits"))
        }
        s if SHELLS.contains(&s) => {
            if let Some(pos) = a.iter().position(|x| {
                *x == "-c"
                    || (x.starts_with('-')
                        && !x.starts_with("--")
                        && x.ends_with('c')
                        && x.len() <= 4)
            }) {
                let inner = a.get(pos + 1).copied().unwrap_or("");
                shell_string(&name, inner, depth, ctx)
            } else {
                rated(Tier::Risky, format!("{name} runs a shell script"))
            }
        }
        "cmd" => {
            if let Some(pos) = a
                .iter()
                .position(|x| matches!(x.to_ascii_lowercase().as_str(), "/c" | "/k" | "/r"))
            {
                shell_string("cmd", &a[pos + 1..].join(" "), depth, ctx)
            } else {
                rated(Tier::Risky, "cmd runs a shell")
            }
        }
        "powershell" | "pwsh" => rated(
            Tier::Risky,
            "powershell runs a script; keyless analyses only POSIX shell lines",
        ),

        // --- denied outright ---
        "shutdown" | "reboot" | "halt" | "poweroff" | "stop-computer" | "restart-computer"
        | "format" | "format-volume" | "clear-disk" | "diskpart" | "fdisk" | "sfdisk"
        | "parted" | "wipefs" | "mkswap" | "mkfs" | "cryptsetup" => rated(
            Tier::Denied,
            format!("{name} can destroy the machine or its disks"),
        ),
        p if p.starts_with("mkfs.") => rated(Tier::Denied, format!("{name} formats a disk")),
        "init" | "telinit" if a.first().is_some_and(|x| matches!(*x, "0" | "6")) => {
            rated(Tier::Denied, "init 0/6 shuts the machine down")
        }
        "systemctl" => rate_systemctl(a),
        "dd" => {
            if a.iter()
                .any(|x| x.starts_with("of=/dev/") && !x.starts_with("of=/dev/null"))
            {
                rated(Tier::Denied, "dd writes to a device")
            } else {
                rated(Tier::Risky, "dd writes data")
            }
        }

        // --- deletion and other writes ---
        "rm" | "del" | "erase" | "rd" | "rmdir" | "remove-item" | "ri" => rate_rm(&name, args),
        "chmod" | "chown" | "chgrp" => {
            let recursive = has_flag(a, 'R', &["--recursive"]);
            if recursive && a.iter().any(|x| is_dangerous_target(x)) {
                rated(Tier::Denied, format!("{name} -R on the system or home"))
            } else {
                rated(Tier::Risky, format!("{name} changes permissions"))
            }
        }
        "mv" | "cp" | "ln" | "mkdir" | "touch" | "tee" | "install" | "rsync" | "scp" | "patch"
        | "truncate" | "shred" | "unlink" | "move" | "copy" | "xcopy" | "robocopy" | "ren"
        | "rename" | "new-item" | "set-content" | "add-content" | "out-file" | "copy-item"
        | "move-item" | "tar" | "zip" | "unzip" | "gzip" | "gunzip" | "bzip2" | "xz" | "7z"
        | "split" | "csplit" | "mkfifo" | "mknod" | "setfacl" | "chattr" | "mount" | "umount"
        | "ssh" | "sftp" | "ftp" | "nc" | "ncat" | "netcat" | "socat" | "telnet" | "kill"
        | "killall" | "pkill" | "taskkill" | "crontab" | "at" | "useradd" | "userdel"
        | "usermod" | "passwd" | "visudo" | "iptables" | "ufw" | "docker" | "podman"
        | "kubectl" | "helm" | "terraform" | "ansible" | "ansible-playbook" | "vagrant"
        | "open" | "xdg-open" | "code" | "vim" | "vi" | "nano" | "emacs" | "sqlite3" | "psql"
        | "mysql" | "redis-cli" | "mongo" | "mongosh" | "gh" | "hub" | "aws" | "gcloud" | "az"
        | "heroku" | "vercel" | "netlify" | "fly" | "firebase" | "less" | "more" | "man" | "dc"
        | "ldd" | "ack" | "ag" | "msedge" | "firefox" | "chromium" | "google-chrome" => rated(
            Tier::Risky,
            format!("{name} can change files, processes or remote systems, or run other programs"),
        ),
        d if DOWNLOADERS.contains(&d) => rated(Tier::Risky, format!("{name} reaches the network")),
        "apt" | "apt-get" | "yum" | "dnf" | "pacman" | "apk" | "brew" | "port" | "choco"
        | "winget" | "scoop" | "snap" | "flatpak" | "zypper" | "emerge" | "nix-env" | "pipx"
        | "gem" | "composer" | "conda" | "mamba" | "nvm" | "rustup" | "sdkmanager" => {
            rated(Tier::Risky, format!("{name} installs or changes packages"))
        }

        // --- toolchains ---
        "git" => rate_git(args),
        "npm" | "pnpm" | "yarn" | "bun" => rate_js_pm(&name, a),
        "npx" | "pnpx" | "bunx" => rated(
            Tier::Risky,
            format!("{name} may download and run a package"),
        ),
        "node" | "nodejs" | "deno" | "ts-node" | "tsx" => rate_node(&name, a),
        "python" | "python3" | "python2" | "py" | "pypy" | "pypy3" => rate_python(&name, args),
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" | "pdm" => rate_pip(&name, a),
        "ruby" | "perl" | "php" | "lua" | "rscript" | "julia" | "groovy" | "scala" | "kotlin"
        | "elixir" | "erl" | "ghci" | "runghc" | "racket" | "guile" | "tclsh" | "osascript" => {
            if has_flag(a, 'e', &["--eval"])
                || has_flag(a, 'E', &[])
                || (name == "php" && has_flag(a, 'r', &[]))
            {
                rated(
                    Tier::Risky,
                    format!("{name} -e runs code given on the command line"),
                )
            } else if a.iter().any(|x| !x.starts_with('-')) {
                rated(Tier::Execute, format!("{name} runs a program"))
            } else {
                rated(Tier::Execute, format!("{name} starts an interpreter"))
            }
        }
        "cargo" => rate_cargo(args),
        "dotnet" => rate_dotnet(a),
        "go" => rate_go(args),
        "make" | "gmake" | "nmake" | "just" | "task" | "rake" | "invoke" | "nox" | "tox" => {
            if has_flag(a, 'n', &["--dry-run", "--just-print", "--recon"]) {
                rated(
                    Tier::Execute,
                    format!("{name} -n still runs $(shell …) and + recipes"),
                )
            } else {
                rated(Tier::Execute, format!("{name} runs the project's recipes"))
            }
        }
        "cmake" => rate_cmake(a),
        "ninja" | "meson" | "msbuild" | "xcodebuild" | "bazel" | "bazelisk" | "buck" | "buck2"
        | "scons" => {
            if a.iter().any(|x| matches!(*x, "test" | "run" | "install")) {
                rated(
                    Tier::Execute,
                    format!("{name} runs tests, programs or installs"),
                )
            } else {
                rated(Tier::Build, format!("{name} builds"))
            }
        }
        "mvn" | "mvnw" | "gradle" | "gradlew" => rate_jvm_build(&name, a),
        "gcc" | "g++" | "cc" | "c++" | "clang" | "clang++" | "gfortran" | "tcc" => {
            const SPEC: Spec = Spec {
                opts: CC,
                risky: CC_RISKY,
                operands: Operands::Any,
            };
            rate_known(&name, Tier::Build, "compiles", &SPEC, args)
        }
        "rustc" => rate_rustc(a),
        "zig" => {
            if a.first().is_some_and(|x| matches!(*x, "run" | "test")) {
                rated(Tier::Execute, "zig run/test runs code")
            } else if a.first() == Some(&"cc") || a.first() == Some(&"c++") {
                const SPEC: Spec = Spec {
                    opts: CC,
                    risky: CC_RISKY,
                    operands: Operands::Any,
                };
                rate_known(&name, Tier::Build, "compiles", &SPEC, &args[1..])
            } else if a.first() == Some(&"build") {
                rated(Tier::Build, "zig build runs the project's build")
            } else {
                rated(
                    Tier::Execute,
                    format!(
                        "zig {} is not on the known-safe list",
                        a.first().unwrap_or(&"")
                    ),
                )
            }
        }
        "webpack" | "rollup" | "vite" | "parcel" | "babel" | "swc" | "turbo" | "nx" => rated(
            Tier::Execute,
            format!("{name} runs the project's configuration (JavaScript)"),
        ),
        "java" => {
            if a.iter().any(|x| *x == "--version" || *x == "-version") {
                rated(Tier::ReadOnly, "java -version only prints its version")
            } else {
                rated(Tier::Execute, "java runs a program")
            }
        }
        "pytest" | "py.test" | "jest" | "vitest" | "mocha" | "ava" | "tap" | "karma"
        | "cypress" | "playwright" | "phpunit" | "rspec" | "ctest" | "nextest" | "behave"
        | "nose2" | "unittest" => rated(Tier::Execute, format!("{name} runs tests")),
        "eslint" | "prettier" | "stylelint" | "biome" | "black" | "isort" | "rustfmt" | "gofmt"
        | "clang-format" | "autopep8" | "yapf" | "standard" | "rubocop" | "swiftformat"
        | "ktlint" => {
            let checking = a.iter().any(|x| {
                matches!(
                    *x,
                    "--check" | "-l" | "--list-different" | "--diff" | "-d" | "--dry-run"
                )
            });
            let writing = a.iter().any(|x| {
                matches!(
                    *x,
                    "--write" | "-w" | "--fix" | "-i" | "--in-place" | "-a" | "--autocorrect"
                )
            });
            if checking && !writing {
                rated(Tier::Build, format!("{name} only checks"))
            } else {
                rated(
                    Tier::Execute,
                    format!("{name} runs the project's tooling and may rewrite sources"),
                )
            }
        }
        "ruff" | "mypy" | "pyright" | "flake8" | "pylint" | "shellcheck" | "hadolint"
        | "tflint" | "clippy-driver" | "golangci-lint" | "staticcheck" | "cppcheck"
        | "clang-tidy" => {
            if a.iter().any(|x| *x == "--fix" || *x == "format") {
                rated(Tier::Execute, format!("{name} rewrites sources"))
            } else {
                rated(Tier::Build, format!("{name} only analyses"))
            }
        }
        _ => rated(Tier::Risky, format!("{name} is not a known program")),
    }
}

/// A known-safe program's arguments, checked against its spec.
fn rate_known(name: &str, tier: Tier, does: &str, spec: &Spec, args: &[Word]) -> Rated {
    match check(spec, args) {
        Check::Known => rated(tier, format!("{name} {does}")),
        Check::Unknown(opt) => rated(
            Tier::Execute.max(tier),
            format!("{name}: the option {opt} is not on keyless's known-safe list"),
        ),
        Check::Risky(opt, why) => rated(Tier::Risky, format!("{name} {opt}: {why}")),
        Check::ExtraOperand(op) => rated(
            Tier::Risky,
            format!("{name}: the extra operand {op} is an output file it writes"),
        ),
    }
}

fn has_flag(args: &[&str], short: char, longs: &[&str]) -> bool {
    args.iter().any(|a| {
        longs
            .iter()
            .any(|l| *a == *l || a.starts_with(&format!("{l}=")))
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a.len() > 1
                && a[1..].contains(short)
                && a[1..].bytes().all(|b| b.is_ascii_alphabetic()))
    })
}

/// Whether a relative folder or file stays beneath the workspace: not absolute, not `~`, no
/// variable, and never above the start with `..`.
fn within_workspace(d: &str) -> bool {
    if d.is_empty()
        || d.starts_with('/')
        || d.starts_with('~')
        || d.contains('$')
        || d.contains('\\')
        || d.contains(':')
        || d == "-"
    {
        return false;
    }
    let mut depth: i32 = 0;
    for seg in d.split('/') {
        match seg {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// The value of `--name=V` or `--name V` among `args` (before a bare `--`), for each use.
fn option_values<'a>(args: &[&'a str], names: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() && args[i] != "--" {
        let x = args[i];
        for n in names {
            if x == *n {
                out.push(args.get(i + 1).copied().unwrap_or(""));
            } else if let Some(v) = x.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                out.push(v);
            }
        }
        i += 1;
    }
    out
}

/// Whether one of `names` is given among `args` (before a bare `--`), alone or as `--name=V`.
fn has_option(args: &[&str], names: &[&str]) -> bool {
    args.iter().take_while(|x| **x != "--").any(|x| {
        names
            .iter()
            .any(|n| x == n || x.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
    })
}

/// `cd DIR`: harmless inside the workspace; leaving it changes where the next commands run.
fn rate_cd(name: &str, a: &[&str], ctx: &Context) -> Rated {
    let dirs: Vec<&str> = a
        .iter()
        .copied()
        .filter(|x| !x.starts_with('-') || *x == "-")
        .collect();
    match (name, dirs.as_slice()) {
        ("cd" | "pushd" | "chdir", [d])
            if within_workspace(d)
                && super::reads::outside_path(d, false, d.contains(['*', '?', '[']), ctx)
                    .is_none() =>
        {
            rated(Tier::ReadOnly, format!("{name} moves within the workspace"))
        }
        _ => rated(
            Tier::Execute,
            format!("{name} leaves the workspace (the next commands run elsewhere)"),
        ),
    }
}

fn rate_systemctl(a: &[&str]) -> Rated {
    if a.iter().any(|x| {
        matches!(
            *x,
            "poweroff"
                | "reboot"
                | "halt"
                | "kexec"
                | "suspend"
                | "hibernate"
                | "rescue"
                | "emergency"
        )
    }) {
        rated(
            Tier::Denied,
            "systemctl power actions shut the machine down",
        )
    } else if a.iter().filter(|x| !x.starts_with('-')).take(1).all(|x| {
        matches!(
            *x,
            "status"
                | "list-units"
                | "is-active"
                | "show"
                | "cat"
                | "list-unit-files"
                | "is-enabled"
        )
    }) && !a.is_empty()
    {
        rated(Tier::ReadOnly, "systemctl only reports")
    } else {
        rated(Tier::Risky, "systemctl changes system services")
    }
}

fn to_words(texts: &[&str]) -> Vec<Word> {
    texts
        .iter()
        .map(|t| Word {
            text: (*t).to_string(),
            ..Word::default()
        })
        .collect()
}

fn wrapper_skip(
    prog: &str,
    words: &[Word],
    takes_value: &[&str],
    depth: u32,
    ctx: &Context,
) -> Rated {
    let mut i = 1;
    while i < words.len() && words[i].text.starts_with('-') {
        if takes_value.contains(&words[i].text.as_str()) {
            i += 1;
        }
        i += 1;
    }
    wrapper(prog, words, i, depth, ctx)
}

/// A program that runs another: at least Risky, and as bad as what it runs.
fn wrapper(prog: &str, words: &[Word], inner_start: usize, depth: u32, ctx: &Context) -> Rated {
    let base = rated(Tier::Risky, format!("{prog} runs another program"));
    if depth >= MAX_DEPTH {
        return base;
    }
    let inner = &words[inner_start.min(words.len())..];
    if inner.is_empty() {
        return base;
    }
    let inner_r = classify_words(inner, depth + 1, ctx);
    if inner_r.0 > Tier::Risky {
        return (inner_r.0, format!("{prog} runs: {}", inner_r.1));
    }
    base
}

fn shell_string(prog: &str, inner: &str, depth: u32, ctx: &Context) -> Rated {
    let base = rated(Tier::Risky, format!("{prog} runs a command string"));
    if depth >= MAX_DEPTH {
        return base;
    }
    let inner_r = classify_line(inner, depth + 1, ctx);
    if inner_r.0 > Tier::Risky {
        return (inner_r.0, format!("{prog} runs: {}", inner_r.1));
    }
    base
}

fn rate_env(words: &[Word], depth: u32, ctx: &Context) -> Rated {
    // `env` alone prints the environment; with a command it is a wrapper.
    let mut i = 1;
    while i < words.len() {
        let t = words[i].text.as_str();
        if matches!(t, "-S" | "--split-string")
            || t.starts_with("-S")
            || t.starts_with("--split-string=")
        {
            return rated(
                Tier::Risky,
                "env -S splits a string into a command and runs it",
            );
        }
        if t.starts_with('-') || super::lexer::is_assignment(t) {
            if matches!(t, "-u" | "-C" | "--unset" | "--chdir") {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    if i >= words.len() {
        if words.len() == 1
            || words[1..]
                .iter()
                .all(|w| matches!(w.text.as_str(), "-0" | "--null"))
        {
            return rated(Tier::ReadOnly, "env only prints the environment");
        }
        return rated(Tier::Risky, "env changes the environment");
    }
    wrapper("env", words, i, depth, ctx)
}

/// find: known tests and actions only; -exec, -delete and the file-writing actions are Risky.
fn rate_find(words: &[Word], depth: u32, ctx: &Context) -> Rated {
    const SAFE: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-type",
        "-xtype",
        "-size",
        "-empty",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-newer",
        "-anewer",
        "-cnewer",
        "-maxdepth",
        "-mindepth",
        "-print",
        "-print0",
        "-printf",
        "-ls",
        "-prune",
        "-o",
        "-or",
        "-a",
        "-and",
        "-not",
        "!",
        "(",
        ")",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-nouser",
        "-nogroup",
        "-perm",
        "-links",
        "-inum",
        "-samefile",
        "-lname",
        "-ilname",
        "-readable",
        "-writable",
        "-executable",
        "-quit",
        "-true",
        "-false",
        "-depth",
        "-d",
        "-xdev",
        "-mount",
        "-follow",
        "-regextype",
        "-daystart",
        "-noleaf",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-used",
        "-fstype",
        "-context",
        ",",
        "-L",
        "-H",
        "-P",
        "-O0",
        "-O1",
        "-O2",
        "-O3",
        "-D",
        "--help",
        "--version",
    ];
    const WITH_VALUE: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-newer",
        "-anewer",
        "-cnewer",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-perm",
        "-links",
        "-inum",
        "-samefile",
        "-lname",
        "-ilname",
        "-regextype",
        "-used",
        "-fstype",
        "-context",
        "-D",
    ];
    let a = texts(words);
    let mut i = 1;
    let mut unknown: Option<&str> = None;
    while i < a.len() {
        let x = a[i];
        match x {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = a[i + 1..]
                    .iter()
                    .position(|y| *y == ";" || *y == "+")
                    .map_or(a.len(), |p| i + 1 + p);
                let base = rated(Tier::Risky, format!("find {x} runs another program"));
                if end == i + 1 || depth >= MAX_DEPTH {
                    return base;
                }
                let inner = classify_words(&to_words(&a[i + 1..end]), depth + 1, ctx);
                return if inner.0 > Tier::Risky {
                    (inner.0, format!("find {x} runs: {}", inner.1))
                } else {
                    base
                };
            }
            "-delete" => return rated(Tier::Risky, "find -delete deletes files"),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                return rated(Tier::Risky, format!("find {x} writes a file"))
            }
            x if x.starts_with('-') || matches!(x, "!" | "(" | ")" | ",") => {
                if !SAFE.contains(&x) && unknown.is_none() {
                    unknown = Some(x);
                }
                if WITH_VALUE.contains(&x) {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    match unknown {
        Some(x) => rated(
            Tier::Execute,
            format!("find: {x} is not on keyless's known-safe list"),
        ),
        None => rated(Tier::ReadOnly, "find only lists files"),
    }
}

/// sed: known options, and a script without the commands that write files or run programs.
fn rate_sed(args: &[&str]) -> Rated {
    let mut scripts: Vec<&str> = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    let mut options_done = false;
    let mut sandbox = false;
    while i < args.len() {
        let x = args[i];
        i += 1;
        if options_done || !x.starts_with('-') || x == "-" {
            if !explicit && scripts.is_empty() {
                scripts.push(x);
            }
            continue;
        }
        if x == "--" {
            options_done = true;
            continue;
        }
        if x.starts_with("--") {
            let (name, value) = x.split_once('=').map_or((x, None), |(n, v)| (n, Some(v)));
            match name {
                "--expression" => {
                    let s = value.or_else(|| {
                        i += 1;
                        args.get(i - 1).copied()
                    });
                    scripts.extend(s);
                    explicit = true;
                }
                "--quiet" | "--silent" | "--regexp-extended" | "--posix" | "--null-data"
                | "--zero-terminated" | "--separate" | "--unbuffered" | "--debug" | "--help"
                | "--version" => {}
                "--sandbox" => sandbox = true,
                "--line-length" => {
                    if value.is_none() {
                        i += 1;
                    }
                }
                n if "--in-place".starts_with(n) && n.len() >= 4 => {
                    return rated(Tier::Risky, "sed --in-place edits files")
                }
                n if "--file".starts_with(n) && n.len() >= 4 => {
                    return rated(Tier::Risky, "sed -f runs a script file")
                }
                _ => {
                    return rated(
                        Tier::Execute,
                        format!("sed: the option {x} is not on keyless's known-safe list"),
                    )
                }
            }
            continue;
        }
        for (k, c) in x[1..].char_indices() {
            match c {
                'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
                'i' => return rated(Tier::Risky, "sed -i edits files in place"),
                'f' => return rated(Tier::Risky, "sed -f runs a script file"),
                'e' => {
                    let rest = &x[1 + k + 1..];
                    if rest.is_empty() {
                        scripts.extend(args.get(i).copied());
                        i += 1;
                    } else {
                        scripts.push(rest);
                    }
                    explicit = true;
                    break;
                }
                'l' => {
                    if x[1 + k + 1..].is_empty() {
                        i += 1;
                    }
                    break;
                }
                _ => {
                    return rated(
                        Tier::Execute,
                        format!("sed: the option {x} is not on keyless's known-safe list"),
                    )
                }
            }
        }
    }
    for script in &scripts {
        match sed_script(script) {
            SedScript::Safe => {}
            SedScript::Writes if !sandbox => {
                return rated(
                    Tier::Risky,
                    "the sed script writes files or runs commands (w, W, e, or the s///e and s///w flags)",
                )
            }
            SedScript::Writes => {}
            SedScript::Unknown(c) => {
                return rated(
                    Tier::Execute,
                    format!("sed: the script command {c:?} is not on keyless's known-safe list"),
                )
            }
        }
    }
    rated(Tier::ReadOnly, "sed only prints")
}

/// What a sed script is: only commands on the known-safe list, or one that writes files or runs
/// commands, or one with a command keyless does not list.
#[derive(Debug, PartialEq, Eq)]
enum SedScript {
    Safe,
    Writes,
    Unknown(char),
}

/// Checks a sed script against the known-safe commands: addresses, `p P d D s y = q Q l n N a i
/// c { } !`; `s` with the flags `g p i I m M` and numbers. `w`, `W`, `e` and the `e`/`w` flags of
/// `s` write files or run commands; anything else is not on the list.
fn sed_script(script: &str) -> SedScript {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let n = chars.len();
    while i < n {
        while i < n
            && (chars[i].is_whitespace()
                || matches!(chars[i], ';' | '{' | '}' | '!' | ',' | '$' | '+' | '~')
                || chars[i].is_ascii_digit())
        {
            i += 1;
        }
        if i < n && (chars[i] == '/' || chars[i] == '\\') {
            let delim = if chars[i] == '\\' {
                i += 1;
                chars.get(i).copied().unwrap_or('/')
            } else {
                '/'
            };
            i += 1;
            while i < n && chars[i] != delim {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            while i < n && matches!(chars[i], 'I' | 'M') {
                i += 1;
            }
            continue;
        }
        if i >= n {
            break;
        }
        let cmd = chars[i];
        i += 1;
        match cmd {
            'w' | 'W' | 'e' => return SedScript::Writes,
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    return SedScript::Unknown(cmd);
                };
                i += 1;
                for _ in 0..2 {
                    while i < n && chars[i] != delim {
                        if chars[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if cmd == 's' {
                    while i < n && !matches!(chars[i], ';' | '\n' | '}') {
                        match chars[i] {
                            'e' | 'w' | 'W' => return SedScript::Writes,
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' => {}
                            c if c.is_ascii_digit() => {}
                            c => return SedScript::Unknown(c),
                        }
                        i += 1;
                    }
                }
            }
            'a' | 'i' | 'c' => {
                // Text to insert runs to the end of the line.
                while i < n && chars[i] != '\n' {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | '=' | 'q' | 'Q' | 'l' | 'n' | 'N' => {}
            c => return SedScript::Unknown(c),
        }
    }
    SedScript::Safe
}

/// awk: `-F` and `-v` only, and a program that neither runs commands nor writes files.
fn rate_awk(args: &[&str]) -> Rated {
    let mut i = 0;
    let mut program: Option<&str> = None;
    while i < args.len() {
        let x = args[i];
        i += 1;
        if x == "--" {
            program = program.or_else(|| args.get(i).copied());
            break;
        }
        if !x.starts_with('-') || x == "-" {
            program = Some(x);
            break;
        }
        match x {
            "-F" | "-v" => i += 1,
            x if (x.starts_with("-F") || x.starts_with("-v")) && x.len() > 2 => {}
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                return rated(
                    Tier::Risky,
                    "awk runs a program file, an include or a loadable extension",
                )
            }
            x if x.starts_with("-f")
                || x.starts_with("-i")
                || x.starts_with("-l")
                || x.starts_with("-E") =>
            {
                return rated(
                    Tier::Risky,
                    "awk runs a program file, an include or a loadable extension",
                )
            }
            "--posix"
            | "--traditional"
            | "--lint"
            | "-P"
            | "-c"
            | "--re-interval"
            | "-r"
            | "--characters-as-bytes"
            | "-b"
            | "--sandbox"
            | "-S"
            | "--help"
            | "--version" => {}
            _ => {
                return rated(
                    Tier::Execute,
                    format!("awk: the option {x} is not on keyless's known-safe list"),
                )
            }
        }
    }
    let script = program.unwrap_or("");
    if script.contains("system")
        || script.contains('>')
        || script.contains('|')
        || script.contains("getline")
        || script.contains("@load")
        || script.contains("@include")
    {
        rated(
            Tier::Risky,
            "the awk program can run commands, read or write files (system, |, >, getline, @load)",
        )
    } else {
        rated(Tier::ReadOnly, "awk only reads")
    }
}

fn is_dangerous_target(a: &str) -> bool {
    let t = a.trim_end_matches('/');
    t.is_empty()
        || t == "/*"
        || t == "~"
        || t.starts_with("~/")
        || t == "$HOME"
        || t.starts_with("$HOME/")
        || t == "${HOME}"
        || t == "."
        || t == ".."
        || t == "*"
        || t == "./*"
        || t.starts_with('/')
        || (t.len() >= 2 && t.as_bytes()[1] == b':')
        || t.starts_with("../")
        || t.starts_with('%')
}

fn rate_rm(prog: &str, words: &[Word]) -> Rated {
    let args = texts(words);
    let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let l: Vec<&str> = lower.iter().map(String::as_str).collect();
    let recursive = match prog {
        "rm" => has_flag(&args, 'r', &["--recursive"]) || has_flag(&args, 'R', &[]),
        "rmdir" => false,
        "remove-item" | "ri" => l.iter().any(|a| a.starts_with("-r")),
        _ => l.contains(&"/s"),
    };
    let force = match prog {
        "rm" => has_flag(&args, 'f', &["--force"]),
        "remove-item" | "ri" => l.iter().any(|a| a.starts_with("-fo")),
        _ => l.contains(&"/q"),
    };
    if args.contains(&"--no-preserve-root") {
        return rated(Tier::Denied, "rm --no-preserve-root");
    }
    let targets: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-') && (!a.starts_with('/') || a.len() != 2 || prog == "rm"))
        .collect();
    let glob_target = words
        .iter()
        .any(|w| w.glob && (w.text == "*" || w.text.starts_with('~')));
    if recursive && (targets.iter().any(|t| is_dangerous_target(t)) || glob_target) {
        return rated(
            Tier::Denied,
            format!(
                "recursive delete of {}",
                targets
                    .iter()
                    .find(|t| is_dangerous_target(t))
                    .copied()
                    .unwrap_or("everything")
            ),
        );
    }
    if recursive && force {
        return rated(Tier::Risky, format!("{prog} -rf deletes a folder tree"));
    }
    rated(Tier::Risky, format!("{prog} deletes files"))
}

// --- git ---

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
            let spec = Spec {
                opts: LIST,
                risky: &[],
                operands: if listing {
                    Operands::Any
                } else {
                    Operands::None
                },
            };
            match check(&spec, rest_words) {
                Check::Known => rated(Tier::ReadOnly, "git branch only lists"),
                _ => rated(Tier::Risky, "git branch changes branches"),
            }
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
            let spec = Spec {
                opts: LIST,
                risky: &[],
                operands: if listing {
                    Operands::Any
                } else {
                    Operands::None
                },
            };
            match check(&spec, rest_words) {
                Check::Known => rated(Tier::ReadOnly, "git tag only lists"),
                _ => rated(Tier::Risky, "git tag changes tags"),
            }
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

// --- JavaScript, Python, Rust, Go, .NET, JVM ---

fn rate_js_pm(prog: &str, args: &[&str]) -> Rated {
    // Options that name a program, or a configuration file (which can name programs to run).
    const PROGRAMS: &[&str] = &[
        "--userconfig",
        "--globalconfig",
        "--script-shell",
        "--shell",
        "--node-options",
        "--editor",
        "--browser",
        "--viewer",
        "--git",
        "--onload-script",
        "--call",
        "--rcfile",
        "--use-yarnrc",
        "--config",
    ];
    if has_option(args, PROGRAMS)
        || args
            .iter()
            .take_while(|x| **x != "--")
            .any(|x| x.starts_with("--config."))
    {
        return rated(
            Tier::Risky,
            format!("{prog}: an option names a program or a configuration file that can name one"),
        );
    }
    if option_values(args, &["--prefix", "-C", "--cwd", "--dir"])
        .iter()
        .any(|d| !within_workspace(d))
    {
        return rated(
            Tier::Risky,
            format!(
                "{prog} points at another project, whose configuration can name programs to run"
            ),
        );
    }
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        if matches!(
            args[i],
            "--prefix" | "-C" | "--cwd" | "--filter" | "-F" | "-w" | "--workspace" | "--dir"
        ) {
            i += 1;
        }
        i += 1;
    }
    let sub = args.get(i).copied();
    match sub {
        None if prog == "yarn" || prog == "bun" => {
            rated(Tier::Risky, format!("{prog} installs packages"))
        }
        None => rated(Tier::ReadOnly, format!("{prog} alone prints help")),
        Some(
            "test" | "t" | "tst" | "start" | "run" | "run-script" | "rum" | "urn" | "dev" | "serve"
            | "preview",
        ) => rated(
            Tier::Execute,
            format!("{prog} {} runs the project's scripts", sub.unwrap_or("")),
        ),
        Some("pkg") => {
            if args.get(i + 1) == Some(&"get") {
                rated(Tier::ReadOnly, format!("{prog} pkg get only reads"))
            } else {
                rated(Tier::Risky, format!("{prog} pkg changes package.json"))
            }
        }
        Some("config" | "get") => {
            if sub == Some("get") || matches!(args.get(i + 1).copied(), Some("get" | "list" | "ls"))
            {
                rated(Tier::ReadOnly, format!("{prog} config only reads"))
            } else {
                rated(Tier::Risky, format!("{prog} config changes settings"))
            }
        }
        Some(
            "ls" | "list" | "ll" | "la" | "view" | "info" | "show" | "v" | "outdated" | "why"
            | "explain" | "root" | "prefix" | "licenses" | "fund" | "query",
        ) => rated(
            Tier::ReadOnly,
            format!("{prog} {} only reads", sub.unwrap_or("")),
        ),
        Some("help") if args.len() > i + 1 => rated(
            Tier::Risky,
            format!("{prog} help TOPIC opens the manual with a viewer program (man or a browser)"),
        ),
        Some("help") => rated(Tier::ReadOnly, format!("{prog} help only prints")),
        Some("audit") if args.contains(&"fix") => {
            rated(Tier::Risky, format!("{prog} audit fix changes packages"))
        }
        Some("audit" | "doctor" | "search" | "whoami" | "ping") => rated(
            Tier::Execute,
            format!("{prog} {} contacts the registry", sub.unwrap_or("")),
        ),
        Some(s) if prog == "npm" => rated(
            Tier::Risky,
            format!("npm {s} installs, publishes, changes packages or runs downloaded code"),
        ),
        // yarn/pnpm/bun run package scripts by name, and install by other names.
        Some(
            s @ ("add" | "install" | "i" | "remove" | "rm" | "up" | "upgrade" | "update" | "dlx"
            | "exec" | "x" | "create" | "init" | "link" | "publish" | "patch" | "import"
            | "set" | "unlink" | "global"),
        ) => rated(
            Tier::Risky,
            format!("{prog} {s} changes packages or runs downloaded code"),
        ),
        Some("build") if prog == "bun" => rated(Tier::Build, "bun build bundles"),
        Some(s) => rated(
            Tier::Execute,
            format!("{prog} {s} runs a project script or file"),
        ),
    }
}

fn rate_node(prog: &str, args: &[&str]) -> Rated {
    if args.iter().any(|a| {
        matches!(*a, "-e" | "--eval" | "-p" | "--print")
            || a.starts_with("--eval=")
            || a.starts_with("--print=")
    }) || (prog == "deno" && args.first() == Some(&"eval"))
    {
        return rated(
            Tier::Risky,
            format!("{prog} -e runs code given on the command line"),
        );
    }
    if prog == "deno"
        && args
            .first()
            .is_some_and(|a| matches!(*a, "install" | "upgrade" | "compile"))
    {
        return rated(Tier::Risky, "deno install/upgrade changes the system");
    }
    if args.iter().any(|a| !a.starts_with('-')) {
        rated(Tier::Execute, format!("{prog} runs a program"))
    } else {
        rated(Tier::Execute, format!("{prog} starts an interpreter"))
    }
}

fn rate_python(prog: &str, words: &[Word]) -> Rated {
    let args = texts(words);
    let mut isolated = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-c"
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a.ends_with('c')
                && a[1..].bytes().all(|b| b.is_ascii_alphabetic()))
        {
            return rated(
                Tier::Risky,
                format!("{prog} -c runs code given on the command line"),
            );
        }
        if a == "-I"
            || a == "-P"
            || (a.starts_with('-')
                && !a.starts_with("--")
                && (a.contains('I') || a.contains('P'))
                && a[1..].bytes().all(|b| b.is_ascii_alphabetic()))
        {
            isolated = true;
        }
        if a == "-m" || (a.starts_with("-m") && a.len() > 2) {
            let module = if a == "-m" {
                args.get(i + 1).copied().unwrap_or("")
            } else {
                &a[2..]
            };
            let module_args = &args[(i + 2).min(args.len())..];
            return match module {
                "pytest" | "unittest" | "nose2" | "doctest" | "tox" | "nox" | "behave" | "coverage" | "hypothesis" => {
                    rated(Tier::Execute, format!("{prog} -m {module} runs tests"))
                }
                "pip" => rate_pip("pip", module_args),
                "http.server" | "smtpd" | "ftplib" => rated(Tier::Risky, format!("{prog} -m {module} serves the network")),
                "venv" | "virtualenv" => rated(Tier::Build, format!("{prog} -m venv creates an environment")),
                "mypy" | "pyflakes" | "flake8" | "pylint" | "compileall" | "py_compile" | "pyright" | "ruff" if !module_args.contains(&"--fix") => {
                    rated(Tier::Build, format!("{prog} -m {module} only analyses or compiles"))
                }
                "json.tool" | "platform" | "sysconfig" | "this" | "tokenize" | "dis" if isolated && module_args.iter().filter(|x| !x.starts_with('-')).count() <= 1 => {
                    rated(Tier::ReadOnly, format!("{prog} -I -m {module} only prints"))
                }
                m => rated(
                    Tier::Execute,
                    format!("{prog} -m {m} runs a module, which may be loaded from the workspace (python -I -m keeps the workspace out)"),
                ),
            };
        }
        if matches!(a, "-W" | "-X" | "-Q") {
            i += 2;
            continue;
        }
        if !a.starts_with('-') {
            return rated(Tier::Execute, format!("{prog} runs a program"));
        }
        i += 1;
    }
    rated(Tier::Execute, format!("{prog} starts an interpreter"))
}

fn rate_pip(prog: &str, args: &[&str]) -> Rated {
    if has_option(args, &["--python"]) {
        return rated(
            Tier::Risky,
            format!("{prog} --python runs another interpreter"),
        );
    }
    if has_option(args, &["--log", "--log-file", "--report"]) {
        return rated(
            Tier::Risky,
            format!("{prog}: --log and --report write a file"),
        );
    }
    let sub = args.iter().copied().find(|a| !a.starts_with('-'));
    match sub {
        Some("list" | "show" | "freeze" | "check" | "help" | "inspect" | "debug") => rated(
            Tier::ReadOnly,
            format!("{prog} {} only reads", sub.unwrap_or("")),
        ),
        Some("run") if prog != "pip" => {
            rated(Tier::Execute, format!("{prog} run runs a project command"))
        }
        Some("build") if prog != "pip" => rated(Tier::Build, format!("{prog} build builds")),
        Some("test") if prog != "pip" => rated(Tier::Execute, format!("{prog} test runs tests")),
        None if args.iter().any(|a| *a == "--version" || *a == "-V") => {
            rated(Tier::ReadOnly, format!("{prog} --version"))
        }
        _ => rated(
            Tier::Risky,
            format!("{prog} {} installs or changes packages", sub.unwrap_or("")),
        ),
    }
}

fn rate_cargo(words: &[Word]) -> Rated {
    let a = texts(words);
    let mut i = 0;
    while i < a.len() && a[i].starts_with('-') {
        match a[i] {
            "--config" => return rated(Tier::Risky, "cargo --config can name programs to run"),
            x if x.starts_with("--config=") => {
                return rated(Tier::Risky, "cargo --config can name programs to run")
            }
            "-Z" => {
                return rated(
                    Tier::Execute,
                    "cargo -Z options are not on the known-safe list",
                )
            }
            "-C" => {
                return rated(
                    Tier::Risky,
                    "cargo -C runs in another folder, with its configuration",
                )
            }
            "-q" | "--quiet" | "-v" | "-vv" | "--verbose" | "--locked" | "--frozen"
            | "--offline" => {}
            "--color" => i += 1,
            x if x.starts_with("--color=") => {}
            "--version" | "-V" => {
                return rated(Tier::ReadOnly, "cargo --version only prints its version")
            }
            "--list" | "--help" | "-h" => return rated(Tier::ReadOnly, "cargo only prints help"),
            x => {
                return rated(
                    Tier::Execute,
                    format!("cargo: the option {x} is not on keyless's known-safe list"),
                )
            }
        }
        i += 1;
    }
    let Some(mut sub) = a.get(i).copied() else {
        return rated(Tier::ReadOnly, "cargo alone prints help");
    };
    if sub.starts_with('+') {
        i += 1;
        sub = a.get(i).copied().unwrap_or("");
    }
    let rest = &words[(i + 1).min(words.len())..];
    let rest_texts = texts(rest);
    if has_option(&rest_texts, &["--config"]) {
        return rated(Tier::Risky, "cargo --config can name programs to run");
    }
    if option_values(&rest_texts, &["--manifest-path"])
        .iter()
        .any(|p| !within_workspace(p))
    {
        return rated(
            Tier::Risky,
            "cargo --manifest-path points at another project, whose configuration can name programs to run",
        );
    }
    const BUILD_OPTS: &[&str] = &[
        "-p=",
        "--package=",
        "--workspace",
        "--all",
        "--exclude=",
        "--lib",
        "--bins",
        "--bin=",
        "--examples",
        "--example=",
        "--tests",
        "--test=",
        "--benches",
        "--bench=",
        "--all-targets",
        "-r",
        "--release",
        "--profile=",
        "-F=",
        "--features=",
        "--all-features",
        "--no-default-features",
        "--target=",
        "--target-dir=",
        "-j=",
        "--jobs=",
        "--keep-going",
        "--locked",
        "--frozen",
        "--offline",
        "-q",
        "--quiet",
        "-v",
        "-vv",
        "--verbose",
        "--color=",
        "--message-format=",
        "--manifest-path=",
        "--timings=?",
        "--future-incompat-report",
        "--ignore-rust-version",
        "--no-deps",
        "--document-private-items",
        "--all-targets",
        "--doc",
        "-D*",
        "-W*",
        "-A*",
        "--check",
        "--allow-dirty",
        "--allow-staged",
        "--no-verify",
        "--list",
        "--help",
        "-h",
        "--dry-run",
        "--tests",
        "--lib",
        "--unit-graph",
        "--build-plan",
        "--",
        "-Dwarnings",
    ];
    const READ_OPTS: &[&str] = &[
        "--*", "-p=", "-e=", "-i=", "-d", "-q", "-v", "-h", "-V", "-F=", "-Z*",
    ];
    let build_spec = Spec {
        opts: BUILD_OPTS,
        risky: &[("--open", "opens a browser")],
        operands: Operands::Any,
    };
    match sub {
        "build" | "b" | "check" | "c" | "clippy" | "doc" | "d" | "clean" | "fetch"
        | "generate-lockfile" | "package" => {
            if sub == "clippy" && rest.iter().any(|w| w.text == "--fix") {
                return rated(Tier::Execute, "cargo clippy --fix rewrites sources");
            }
            let r = rate_known(
                &format!("cargo {sub}"),
                Tier::Build,
                "builds",
                &build_spec,
                rest,
            );
            if r.1.contains("--open") {
                return rated(Tier::Risky, "cargo doc --open starts a browser");
            }
            r
        }
        "fmt" => {
            if rest.iter().any(|w| w.text == "--check") {
                rated(Tier::Build, "cargo fmt --check only checks")
            } else {
                rated(Tier::Execute, "cargo fmt rewrites sources")
            }
        }
        "test" | "t" | "run" | "r" | "bench" | "nextest" | "xtask" | "miri" | "fix"
        | "llvm-cov" | "tarpaulin" => rated(
            Tier::Execute,
            format!("cargo {sub} runs the project's code"),
        ),
        "tree" | "metadata" | "version" | "pkgid" | "locate-project" | "verify-project"
        | "help" | "read-manifest" => {
            let spec = Spec {
                opts: READ_OPTS,
                risky: &[],
                operands: Operands::Any,
            };
            rate_known(
                &format!("cargo {sub}"),
                Tier::ReadOnly,
                "only reads",
                &spec,
                rest,
            )
        }
        "search" | "info" | "outdated" | "audit" | "deny" => rated(
            Tier::Execute,
            format!("cargo {sub} contacts a registry or runs a plugin"),
        ),
        _ => rated(
            Tier::Risky,
            format!("cargo {sub} installs, publishes or changes the project"),
        ),
    }
}

fn rate_rustc(a: &[&str]) -> Rated {
    const CODEGEN_OK: &[&str] = &[
        "opt-level",
        "debuginfo",
        "codegen-units",
        "lto",
        "target-cpu",
        "target-feature",
        "panic",
        "incremental",
        "overflow-checks",
        "debug-assertions",
        "strip",
        "relocation-model",
        "code-model",
        "embed-bitcode",
        "prefer-dynamic",
        "rpath",
        "force-frame-pointers",
        "split-debuginfo",
        "symbol-mangling-version",
        "metadata",
        "extra-filename",
        "instrument-coverage",
        "link-dead-code",
    ];
    let mut i = 0;
    while i < a.len() {
        let x = a[i];
        i += 1;
        let codegen = if x == "-C" || x == "--codegen" {
            i += 1;
            a.get(i - 1).copied()
        } else {
            x.strip_prefix("-C")
                .or_else(|| x.strip_prefix("--codegen="))
        };
        if let Some(cg) = codegen {
            let key = cg.split('=').next().unwrap_or("");
            if CODEGEN_OK.contains(&key) {
                continue;
            }
            if key.starts_with("link")
                || key == "llvm-args"
                || key == "passes"
                || key == "profile-use"
            {
                return rated(
                    Tier::Risky,
                    format!("rustc -C {key} runs or loads another program"),
                );
            }
            return rated(
                Tier::Execute,
                format!("rustc: -C {key} is not on keyless's known-safe list"),
            );
        }
        if x == "-Z" || x.starts_with("-Z") {
            return rated(
                Tier::Execute,
                "rustc -Z options are not on the known-safe list",
            );
        }
        if x.starts_with('@') {
            return rated(Tier::Risky, "rustc @file reads more options from a file");
        }
    }
    rated(Tier::Build, "rustc compiles")
}

fn rate_dotnet(args: &[&str]) -> Rated {
    let sub = args.first().copied().unwrap_or("");
    match sub {
        "build" | "restore" | "clean" | "msbuild" | "pack" | "publish" | "build-server" => {
            rated(Tier::Build, format!("dotnet {sub} builds"))
        }
        "test" | "run" | "watch" | "vstest" | "format" | "ef" => rated(
            Tier::Execute,
            format!("dotnet {sub} runs the project's code"),
        ),
        "--version" | "--info" | "--list-sdks" | "--list-runtimes" | "-h" | "--help" | "help"
        | "" => rated(Tier::ReadOnly, "dotnet only prints information"),
        "list" if args.iter().any(|a| *a == "package" || *a == "reference") => {
            rated(Tier::ReadOnly, "dotnet list only reads")
        }
        "sln" if args.get(1) == Some(&"list") => {
            rated(Tier::ReadOnly, "dotnet sln list only reads")
        }
        _ => rated(
            Tier::Risky,
            format!("dotnet {sub} installs or changes the project"),
        ),
    }
}

fn rate_go(words: &[Word]) -> Rated {
    let a = texts(words);
    let sub = a.first().copied().unwrap_or("");
    let rest = &words[1.min(words.len())..];
    const BUILD: &[&str] = &[
        "-o=",
        "-v",
        "-x",
        "-a",
        "-n",
        "-race",
        "-msan",
        "-asan",
        "-cover",
        "-coverpkg=",
        "-covermode=",
        "-tags=",
        "-trimpath",
        "-buildvcs=*",
        "-buildvcs",
        "-mod=",
        "-modcacherw",
        "-modfile=",
        "-pgo=",
        "-p=",
        "-work",
        "-buildmode=",
        "-compiler=",
        "-gcflags=",
        "-asmflags=",
        "-installsuffix=",
        "-linkshared",
        "-json",
        "-C=",
    ];
    const RISKY: &[(&str, &str)] = &[
        (
            "-toolexec*",
            "runs every compiler tool under another program",
        ),
        ("-exec*", "runs the built program under another program"),
        ("-vettool*", "runs another program as the vet tool"),
        ("-ldflags*", "can name an external linker to run"),
        ("-overlay*", "replaces source files with others"),
    ];
    match sub {
        "build" | "vet" => {
            // Go's flags are single-dash long words; check them whole.
            for w in rest {
                let t = w.text.as_str();
                if !t.starts_with('-') {
                    continue;
                }
                let name = t.split('=').next().unwrap_or(t);
                if let Some((_, why)) = RISKY
                    .iter()
                    .find(|(p, _)| name.starts_with(p.trim_end_matches('*')))
                {
                    return rated(Tier::Risky, format!("go {sub} {name}: {why}"));
                }
                if !BUILD
                    .iter()
                    .any(|o| o.trim_end_matches('=').trim_end_matches('*') == name)
                {
                    return rated(
                        Tier::Execute,
                        format!("go {sub}: the option {name} is not on keyless's known-safe list"),
                    );
                }
            }
            rated(Tier::Build, format!("go {sub} builds"))
        }
        "test" | "run" | "generate" | "fmt" => {
            rated(Tier::Execute, format!("go {sub} runs the project's code"))
        }
        "version" | "doc" | "help" | "list" => {
            if rest
                .iter()
                .any(|w| w.text.starts_with("-toolexec") || w.text.starts_with("-exec"))
            {
                rated(
                    Tier::Risky,
                    format!("go {sub} -toolexec runs another program"),
                )
            } else {
                rated(Tier::ReadOnly, format!("go {sub} only reads"))
            }
        }
        "env" => {
            if a.iter().any(|x| *x == "-w" || *x == "-u") {
                rated(Tier::Risky, "go env -w changes settings")
            } else {
                rated(Tier::ReadOnly, "go env only reads")
            }
        }
        "mod"
            if a.get(1)
                .is_some_and(|x| matches!(*x, "graph" | "verify" | "why")) =>
        {
            rated(Tier::ReadOnly, "go mod graph/verify/why only reads")
        }
        _ => rated(Tier::Risky, format!("go {sub} installs or changes modules")),
    }
}

fn rate_cmake(a: &[&str]) -> Rated {
    if a.first() == Some(&"-P") || a.contains(&"-E") {
        return rated(Tier::Risky, "cmake -P/-E runs a script or command");
    }
    if a.iter()
        .any(|x| *x == "--install" || x.starts_with("--install"))
    {
        return rated(
            Tier::Risky,
            "cmake --install copies files into the install prefix",
        );
    }
    rated(Tier::Build, "cmake configures or builds")
}

fn rate_jvm_build(prog: &str, a: &[&str]) -> Rated {
    if a.iter().any(|x| {
        matches!(
            *x,
            "test" | "verify" | "run" | "bootRun" | "exec:java" | "check" | "integration-test"
        )
    }) {
        rated(Tier::Execute, format!("{prog} runs tests or the program"))
    } else if a
        .iter()
        .any(|x| matches!(*x, "deploy" | "publish" | "release:perform"))
    {
        rated(Tier::Risky, format!("{prog} publishes artifacts"))
    } else if a.iter().all(|x| {
        matches!(
            *x,
            "compile"
                | "clean"
                | "build"
                | "assemble"
                | "package"
                | "install"
                | "jar"
                | "classes"
                | "-q"
                | "--quiet"
                | "-DskipTests"
                | "-x"
                | "test-compile"
                | "--offline"
                | "-o"
        )
    }) {
        rated(Tier::Build, format!("{prog} builds"))
    } else {
        rated(Tier::Execute, format!("{prog} runs project tasks"))
    }
}
