//! Editors, viewers, browsers and database shells, and the few tools that start other programs
//! from what they are given (`less` and `man` run a pager's commands, `dc` has `!`, `ldd` may run
//! the program it inspects, `ack` and `ag` start a pager): Risky, whatever the arguments. They
//! are interactive or write files, and each can run other programs.

use super::super::Rated;
use super::common::{changes_things, Call, Names};

pub(super) const NAMES: Names = &[&[
    // opening files and editors
    "open",
    "xdg-open",
    "code",
    "vim",
    "vi",
    "nano",
    "emacs",
    // browsers
    "msedge",
    "firefox",
    "chromium",
    "google-chrome",
    // database shells
    "sqlite3",
    "psql",
    "mysql",
    "redis-cli",
    "mongo",
    "mongosh",
    // pagers and tools that start programs
    "less",
    "more",
    "man",
    "dc",
    "ldd",
    "ack",
    "ag",
]];

pub(super) fn rate(c: &Call) -> Rated {
    changes_things(c.name)
}
