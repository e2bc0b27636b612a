//! The Landlock sandbox for runcommand. The host starts commands through itself
//! (`keyless-host __sandbox … -- COMMAND`): that wrapper restricts itself with Landlock (writes only
//! in the workspace, the temp folders and a few `/dev` files; TCP denied unless the network is
//! allowed), then replaces itself with `/bin/sh -c COMMAND`. No `unsafe` is needed.

use std::path::PathBuf;

/// What the sandbox enforces on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Every requested restriction is enforced.
    Full,
    /// Some restrictions are enforced (an older kernel ABI); the text says which are missing.
    Partial(String),
    /// Nothing is enforced; the text says why.
    Unavailable(String),
}

impl SandboxStatus {
    #[must_use]
    pub fn describe(&self, network: bool) -> String {
        let net = if network {
            "network allowed"
        } else {
            "network denied"
        };
        match self {
            SandboxStatus::Full => format!("Landlock enforced: writes only in the workspace and temp folders; {net}"),
            SandboxStatus::Partial(why) => format!("Landlock partly enforced ({why}): writes confined to the workspace and temp folders where the kernel allows"),
            SandboxStatus::Unavailable(why) => format!("UNAVAILABLE ({why}): commands run without confinement, limited only by the command policy"),
        }
    }
}

/// Folders a sandboxed command may write to, besides the workspace.
#[must_use]
pub fn temp_dirs() -> Vec<PathBuf> {
    let mut v = vec![
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ];
    v.sort();
    v.dedup();
    v.retain(|p| p.is_dir());
    v
}

/// Applies the restrictions to the current process.
///
/// # Errors
/// When the ruleset cannot be built (a programming error, not a kernel limitation).
#[cfg(target_os = "linux")]
pub fn restrict_self(write_dirs: &[PathBuf], network: bool) -> Result<SandboxStatus, String> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, ABI,
    };
    let abi = ABI::V5;
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| e.to_string())?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| e.to_string())?;
    }
    let devices = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
    ];
    let status = ruleset
        .create()
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(write_dirs, AccessFs::from_all(abi)))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(devices, AccessFs::from_all(abi)))
        .map_err(|e| e.to_string())?
        .restrict_self()
        .map_err(|e| e.to_string())?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => SandboxStatus::Full,
        RulesetStatus::PartiallyEnforced => SandboxStatus::Partial(
            "this kernel's Landlock ABI lacks some of the requested rights".into(),
        ),
        RulesetStatus::NotEnforced => {
            SandboxStatus::Unavailable("this kernel does not offer Landlock".into())
        }
    })
}

/// Landlock exists only on Linux.
///
/// # Errors
/// Never; the status says the sandbox is unavailable.
#[cfg(not(target_os = "linux"))]
pub fn restrict_self(_write_dirs: &[PathBuf], _network: bool) -> Result<SandboxStatus, String> {
    Ok(SandboxStatus::Unavailable("Landlock is Linux-only".into()))
}

/// `keyless-host __sandbox --write DIR… [--network] [--probe] -- COMMAND`: restrict, then exec the
/// shell (or, with `--probe`, print the status and exit).
#[must_use]
pub fn wrapper_main(
    write: Vec<PathBuf>,
    network: bool,
    probe: bool,
    command: &str,
) -> std::process::ExitCode {
    let status = restrict_self(&write, network);
    if probe {
        match status {
            Ok(SandboxStatus::Full) => println!("full"),
            Ok(SandboxStatus::Partial(why)) => println!("partial: {why}"),
            Ok(SandboxStatus::Unavailable(why)) => println!("unavailable: {why}"),
            Err(e) => println!("unavailable: {e}"),
        }
        return std::process::ExitCode::SUCCESS;
    }
    if let Err(e) = status {
        eprintln!("keyless sandbox: {e}");
        return std::process::ExitCode::from(126);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(command)
            .exec();
        eprintln!("keyless sandbox: cannot start /bin/sh: {err}");
        std::process::ExitCode::from(126)
    }
    #[cfg(not(unix))]
    {
        let _ = command;
        std::process::ExitCode::from(126)
    }
}

/// Asks the wrapper what it can enforce here.
#[must_use]
pub fn probe(exe: &std::path::Path, workspace: &std::path::Path, network: bool) -> SandboxStatus {
    let mut c = std::process::Command::new(exe);
    c.arg("__sandbox")
        .arg("--probe")
        .arg("--write")
        .arg(workspace);
    if network {
        c.arg("--network");
    }
    match c.arg("--").arg("true").output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            match text.split_once(": ") {
                _ if text == "full" => SandboxStatus::Full,
                Some(("partial", why)) => SandboxStatus::Partial(why.to_string()),
                Some((_, why)) => SandboxStatus::Unavailable(why.to_string()),
                None => SandboxStatus::Unavailable(format!("the probe answered \"{text}\"")),
            }
        }
        Err(e) => SandboxStatus::Unavailable(format!("cannot run the sandbox probe: {e}")),
    }
}
