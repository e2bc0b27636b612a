//! Deleting, changing permissions, and the programs that write or move files.
//!
//! - `rm`, `rmdir` and their Windows forms (`del`, `erase`, `rd`, `remove-item`, `ri`): Risky.
//!   A recursive delete of a dangerous target is Denied, and so is `--no-preserve-root`: nothing
//!   undoes it. A dangerous target is an absolute path, a drive, the home folder (`~`, `$HOME`),
//!   the workspace itself or what is above it (`.`, `..`, `../…`, `*`, `./*`), or a `%VAR%`; a
//!   glob that may expand to everything (`*`, `~…`) counts too.
//! - `chmod`, `chown`, `chgrp`: Risky; recursive on a dangerous target, Denied.
//! - copying, moving, linking, creating, patching and truncating files: Risky, whatever the
//!   arguments.

use super::super::lexer::Word;
use super::super::{rated, Rated, Tier};
use super::common::{changes_things, has_flag, texts, Call, Names};

/// Deleting: `rm`, `rmdir`, and their Windows forms.
const DELETE: &[&str] = &["rm", "del", "erase", "rd", "rmdir", "remove-item", "ri"];

/// Changing owners and permissions.
const PERMISSIONS: &[&str] = &["chmod", "chown", "chgrp"];

/// Copying, moving, linking, creating, patching and truncating files.
const WRITES: &[&str] = &[
    "mv",
    "cp",
    "ln",
    "mkdir",
    "touch",
    "tee",
    "install",
    "patch",
    "truncate",
    "shred",
    "unlink",
    "move",
    "copy",
    "xcopy",
    "robocopy",
    "ren",
    "rename",
    "new-item",
    "set-content",
    "add-content",
    "out-file",
    "copy-item",
    "move-item",
    "split",
    "csplit",
    "mkfifo",
    "mknod",
    "setfacl",
    "chattr",
];

pub(super) const NAMES: Names = &[DELETE, PERMISSIONS, WRITES];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    match name {
        s if DELETE.contains(&s) => rate_rm(name, c.args()),
        s if PERMISSIONS.contains(&s) => {
            let a = c.texts();
            let recursive = has_flag(&a, 'R', &["--recursive"]);
            if recursive && a.iter().any(|x| is_dangerous_target(x)) {
                rated(Tier::Denied, format!("{name} -R on the system or home"))
            } else {
                rated(Tier::Risky, format!("{name} changes permissions"))
            }
        }
        _ => changes_things(name),
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
