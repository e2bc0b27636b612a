//! Which folder a session may work in. The model can write anything in the workspace and run
//! commands there, so keyless refuses a folder that holds the user's home, their keyless config
//! or `/`, and does not take the current folder unless it is clearly a project (a git repository
//! other than keyless's own source checkout): otherwise it asks, or, with no terminal, says which
//! flag to pass.

use crate::error::HostError;
use keyless_core::Code;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

fn refused(message: String) -> HostError {
    HostError::Coded {
        code: Code::WorkspaceRefused,
        message,
    }
}

/// Why `dir` may not be a workspace at all: it is `/`, or holds the user's home or keyless config
/// folder (the model could then rewrite the user's dotfiles, shell startup files and keyless's
/// own trusted settings). `None`: it may.
#[must_use]
pub fn unsafe_reason(dir: &Path) -> Option<String> {
    let real = crate::dirs::real_path(dir);
    if real.parent().is_none() {
        return Some(format!("{} is the root of the file system", real.display()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(h) = home.filter(|h| h.is_absolute()) {
        let h = crate::dirs::real_path(&h);
        if h.starts_with(&real) {
            return Some(format!(
                "{} holds your home folder ({}): the model could rewrite your shell's startup files and every other program's settings",
                real.display(),
                h.display()
            ));
        }
    }
    if let Some(cfg) = crate::dirs::user_config_dir() {
        let cfg = crate::dirs::real_path(&cfg);
        if cfg.starts_with(&real) {
            return Some(format!(
                "{} holds your keyless config folder ({})",
                real.display(),
                cfg.display()
            ));
        }
        if real.starts_with(&cfg) {
            return Some(format!(
                "{} is inside your keyless config folder ({}): what the model wrote there (a snapshot script, say) would run in every session",
                real.display(),
                cfg.display()
            ));
        }
    }
    // Where credentials live: the model must never get to write them.
    if let Some(h) = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
    {
        let h = crate::dirs::real_path(&h);
        for rel in keyless_core::secrets::HOME_SECRETS {
            let secret = h.join(rel);
            if real.starts_with(&secret) {
                return Some(format!(
                    "{} is inside {}, where your credentials live",
                    real.display(),
                    secret.display()
                ));
            }
        }
    }
    None
}

/// Whether `dir` is keyless's own source checkout (its workspace manifest with the core and
/// host crates).
#[must_use]
pub fn is_keyless_checkout(dir: &Path) -> bool {
    dir.join("core/src/lib.rs").is_file()
        && dir.join("host/src/main.rs").is_file()
        && std::fs::read_to_string(dir.join("Cargo.toml"))
            .is_ok_and(|t| t.contains("\"core\"") && t.contains("\"host\""))
}

fn is_repository(dir: &Path) -> bool {
    git2::Repository::open_ext(
        dir,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .is_ok()
}

fn ask(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok()
        && matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// The workspace a session runs in: `given` (`--workspace`), else the current folder when it is
/// a git repository other than keyless's own checkout; otherwise the user is asked (on a
/// terminal) or told to pass `--workspace`. `unsafe_ok` (`--unsafe-workspace`) lifts the refusal
/// of a folder that holds the home, the config or `/`, for testing keyless's own protections.
///
/// # Errors
/// KA_WORKSPACE_REFUSED, with what to do.
pub fn choose(given: Option<&Path>, unsafe_ok: bool) -> Result<PathBuf, HostError> {
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => {
            let cwd = std::env::current_dir().map_err(|source| HostError::Read {
                path: ".".into(),
                source,
            })?;
            let why = if is_keyless_checkout(&cwd) {
                Some("is keyless's own source checkout, not a project to work on")
            } else if !is_repository(&cwd) {
                Some("is not a git repository")
            } else {
                None
            };
            if let Some(why) = why {
                let question = format!(
                    "keyless: the current folder, {}, {why}. Let the model work in it?",
                    cwd.display()
                );
                if !std::io::stdin().is_terminal() || !ask(&question) {
                    return Err(refused(format!(
                        "the current folder, {}, {why}; pass --workspace DIR with the project the model may work in",
                        cwd.display()
                    )));
                }
            }
            cwd
        }
    };
    if !dir.is_dir() {
        return Err(refused(format!("{} is not a folder", dir.display())));
    }
    if let Some(why) = unsafe_reason(&dir) {
        if !unsafe_ok {
            return Err(refused(format!(
                "{why}. Choose a project folder inside it with --workspace DIR."
            )));
        }
    }
    Ok(dir)
}

/// For a workspace that is not a git repository: on a terminal, offers to make one (keyless then
/// shows the task's diff and can commit it); otherwise prints how.
pub fn offer_git_init(dir: &Path) {
    if is_repository(dir) {
        return;
    }
    let note = format!(
        "{} is not a git repository: keyless cannot show you what a task changed in git or commit it",
        dir.display()
    );
    if std::io::stdin().is_terminal() && ask(&format!("keyless: {note}. Run git init there?")) {
        match git2::Repository::init(dir) {
            Ok(_) => eprintln!("keyless: made a git repository in {}", dir.display()),
            Err(e) => eprintln!("keyless: git init failed: {}", e.message()),
        }
    } else {
        eprintln!(
            "keyless: {note} (run git init there, or pass --auto-init to let @@commit make one)."
        );
    }
}
