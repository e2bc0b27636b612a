//! Programs that run another program given as their arguments (`sudo`, `env`, `nice`,
//! `timeout`, `xargs`, `command`, …): at least Risky, and as bad as the program they run, which is
//! rated as a command of its own (so `sudo shutdown` is Denied). The options that take a value are
//! skipped to find where the inner command starts.
//!
//! - `command -v` / `-V` only looks a program up: ReadOnly.
//! - `env` alone (or with `-0`) prints the environment: ReadOnly; with only assignments or
//!   options it changes the environment: Risky; `env -S` splits a string into a command: Risky.
//! - `parallel` runs commands keyless does not parse: Risky.

use super::super::lexer::is_assignment;
use super::super::{rated, Rated, Tier};
use super::common::{Call, Names};

pub(super) const NAMES: Names = &[&[
    "command",
    "env",
    "sudo",
    "doas",
    "nice",
    "ionice",
    "stdbuf",
    "nohup",
    "time",
    "exec",
    "builtin",
    "unbuffer",
    "caffeinate",
    "strace",
    "ltrace",
    "chroot",
    "setsid",
    "flock",
    "script",
    "runuser",
    "su",
    "taskset",
    "proot",
    "firejail",
    "systemd-run",
    "start",
    "start-process",
    "call",
    "trap",
    "unshare",
    "nsenter",
    "chrt",
    "prlimit",
    "catchsegv",
    "valgrind",
    "gdb",
    "rr",
    "timeout",
    "gtimeout",
    "watch",
    "xargs",
    "parallel",
]];

pub(super) fn rate(c: &Call) -> Rated {
    let words = c.words;
    match c.name {
        "command" => {
            if c.texts().first().is_some_and(|x| *x == "-v" || *x == "-V") {
                rated(Tier::ReadOnly, "command -v only looks a program up")
            } else {
                c.wrapper(1)
            }
        }
        "env" => rate_env(c),
        "sudo" | "doas" => c.wrapper_skip(&["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D"]),
        "nice" => c.wrapper_skip(&["-n", "--adjustment"]),
        "ionice" => c.wrapper_skip(&["-c", "-n", "-p", "-t"]),
        "stdbuf" => c.wrapper_skip(&["-i", "-o", "-e"]),
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
            c.wrapper(i + 1)
        }
        "watch" => c.wrapper_skip(&["-n", "--interval", "-d"]),
        "xargs" => c.wrapper_skip(&[
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
        ]),
        "parallel" => rated(Tier::Risky, "parallel runs other commands"),
        _ => c.wrapper_skip(&[]),
    }
}

fn rate_env(c: &Call) -> Rated {
    let words = c.words;
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
        if t.starts_with('-') || is_assignment(t) {
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
    c.wrapper(i)
}
