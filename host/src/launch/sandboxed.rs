//! The processes the host starts that are not the user's programs, so the launcher's PATH and
//! folder rules do not apply: the host binary itself (the sandbox wrapper `__sandbox`, its init,
//! an `.as` run in a process of its own) and `/bin/sh -c` for the model's command lines, which
//! runs only inside the sandbox or where the policy and the user let the line run.
//!
//! Invariant: this module imports nothing of the host's, so the sandbox can start itself through
//! it while the launcher asks the sandbox what it confines.
#![allow(clippy::disallowed_methods)] // the host starting itself, and the model's shell line

use std::path::PathBuf;

/// The wrapper program: the running host binary. `/proc/self/exe` names the binary the host is
/// running from even if its file was replaced since, so a model that rebuilds the host inside the
/// workspace cannot swap the wrapper.
#[must_use]
fn wrapper_program() -> PathBuf {
    let proc_exe = PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        proc_exe
    } else {
        std::env::current_exe().unwrap_or(proc_exe)
    }
}

/// The running keyless-host binary (`/proc/self/exe`, even if its file was replaced since), for
/// its own subcommands: the sandbox wrapper `__sandbox` and its init, an `.as` run in a process of
/// its own. Not a program of the user's PATH.
#[must_use]
pub fn host_binary() -> std::process::Command {
    std::process::Command::new(wrapper_program())
}

/// `/bin/sh -c LINE` for a command line of the model's: only inside the sandbox (the wrapper and
/// its init, already confined), or where no sandbox exists at all (a command the policy and the
/// user let run, with the workspace as its folder). Never for a program keyless starts for the
/// user.
#[must_use]
pub fn model_shell(line: &str) -> std::process::Command {
    let mut c = std::process::Command::new("/bin/sh");
    c.arg("-c").arg(line);
    c
}
