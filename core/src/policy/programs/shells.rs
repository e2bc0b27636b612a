//! Shells and the shell's own commands.
//!
//! - A shell with `-c` (or a cluster ending in `c`, such as `-ec`) runs its command string, which
//!   is classified as a line of its own: at least Risky, and as bad as the line. `cmd /c` (`/k`,
//!   `/r`) and `eval` likewise. A shell without one runs a script: Risky.
//! - PowerShell scripts are not analysed (keyless reads POSIX shell lines only): Risky.
//! - `source` and `.` run a script in the current shell: Risky.
//! - Builtins that change the shell's state (`export`, `set`, `alias`, `ulimit`, …) change what
//!   the commands after them do: Risky.
//! - `exit`, `return`, `wait`, `jobs` only end or wait: ReadOnly.

use super::super::{rated, Rated, Tier};
use super::common::{Call, Names};

/// POSIX-like shells, which take `-c STRING`.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox", "mksh",
];

/// The shell's builtins that change its state for the commands after them.
const STATE: &[&str] = &[
    "export", "declare", "typeset", "local", "readonly", "set", "unset", "alias", "unalias",
    "read", "shift", "let", "getopts", "ulimit", "umask", "hash", "enable", "shopt", "bind",
];

pub(super) const NAMES: Names = &[
    SHELLS,
    STATE,
    &[
        "cmd",
        "powershell",
        "pwsh",
        "eval",
        "source",
        ".",
        "exit",
        "return",
        "wait",
        "jobs",
    ],
];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let a = c.texts();
    match name {
        "eval" => c.shell_string(&a.join(" ")),
        "source" | "." => rated(
            Tier::Risky,
            format!("{name} runs a script in the current shell"),
        ),
        s if STATE.contains(&s) => rated(
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
                c.shell_string(inner)
            } else {
                rated(Tier::Risky, format!("{name} runs a shell script"))
            }
        }
        "cmd" => {
            if let Some(pos) = a
                .iter()
                .position(|x| matches!(x.to_ascii_lowercase().as_str(), "/c" | "/k" | "/r"))
            {
                c.shell_string(&a[pos + 1..].join(" "))
            } else {
                rated(Tier::Risky, "cmd runs a shell")
            }
        }
        _ => rated(
            Tier::Risky,
            "powershell runs a script; keyless analyses only POSIX shell lines",
        ),
    }
}
