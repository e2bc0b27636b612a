//! Runs one command line in the platform shell, in its own process group, with a timeout that
//! kills the whole group, and output streamed through a bounded head+tail cap.

use keyless_core::textfile::OutputCap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutput {
    /// `None` when it was killed by a signal (or the timeout).
    pub exit_code: Option<i32>,
    pub duration: Duration,
    /// Merged stdout and stderr, capped.
    pub output: String,
    pub timed_out: bool,
    /// The user cancelled it; the output so far is kept.
    pub cancelled: bool,
    /// What the git guard put back after a confined command ([`super::gitguard`]).
    pub repairs: Vec<super::gitguard::Repair>,
    /// The limit the command hit ([`super::limits`]): its code and reason.
    pub limit: Option<(keyless_core::Code, String)>,
}

/// Decodes a byte stream as UTF-8 across chunk boundaries (invalid bytes become U+FFFD).
#[derive(Debug, Default)]
struct Utf8Stream {
    carry: Vec<u8>,
}

impl Utf8Stream {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.carry.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.carry) {
                Ok(s) => {
                    out.push_str(s);
                    self.carry.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.carry[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // Incomplete sequence at the end: keep it for the next chunk.
                        None => {
                            self.carry.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{fffd}');
                            self.carry.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }
}

fn pump(
    mut r: impl Read + Send + 'static,
    tx: mpsc::SyncSender<String>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16 * 1024];
        let mut dec = Utf8Stream::default();
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            if tx.send(dec.push(&buf[..n])).is_err() {
                break;
            }
        }
        if !dec.carry.is_empty() {
            let _ = tx.send("\u{fffd}".into());
        }
    })
}

#[cfg(unix)]
fn kill_group(pid: u32) {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(pid) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

/// Stops the sandbox's wrapper `pid` with SIGTERM and waits up to [`WRAPPER_GRACE`] for it to
/// end (it ends once every process of its command has). `None`: it has not.
fn stop_wrapper(
    child: &mut std::process::Child,
    pid: u32,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    #[cfg(unix)]
    if let Ok(p) = i32::try_from(pid) {
        use nix::sys::signal::{kill, Signal};
        let _ = kill(nix::unistd::Pid::from_raw(p), Signal::SIGTERM);
    }
    #[cfg(not(unix))]
    let _ = pid;
    let until = Instant::now() + WRAPPER_GRACE;
    while Instant::now() < until {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(None)
}

fn shell_command(
    line: &str,
    confine: Option<&super::sandbox::Spec>,
    group: Option<&super::limits::CommandGroup>,
) -> Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut c = match confine {
            Some(spec) => {
                let mut c = crate::launch::sandboxed::host_binary();
                // The user's environment, without what looks like a secret: whatever a command
                // prints reaches the chat.
                let (env, _) = super::sandbox::command_env(&spec.pass_env);
                c.env_clear()
                    .envs(env)
                    .args(super::sandbox::wrapper_args(spec))
                    .args(
                        group
                            .map(super::limits::CommandGroup::wrapper_args)
                            .unwrap_or_default(),
                    )
                    .arg("--")
                    .arg(line)
                    .env("TMPDIR", &spec.tmp);
                c
            }
            None => crate::launch::sandboxed::model_shell(line),
        };
        c.process_group(0);
        c
    }
    #[cfg(not(unix))]
    {
        let _ = (confine, group);
        let mut c = Command::new("cmd");
        c.arg("/C").arg(line);
        c
    }
}

/// How often the runner looks at the clock and the cancel flag, whatever the command prints.
const TICK: Duration = Duration::from_millis(20);

/// Runs `line` in `cwd`, confined by `confine` when given. `on_output` sees every chunk as it
/// arrives (for live output) and returns false to cancel the command.
///
/// The deadline and a cancel hold within [`TICK`] however much the command prints: the clock is
/// read on every turn of the loop, not only when the output pauses.
///
/// # Errors
/// When the shell cannot be started.
pub fn run(
    line: &str,
    confine: Option<&super::sandbox::Spec>,
    cwd: &Path,
    timeout: Duration,
    max_output_chars: usize,
    on_output: impl FnMut(&str) -> bool,
) -> std::io::Result<ShellOutput> {
    // A confined command is watched by the git guard: a snapshot right before it starts, the
    // check once it and every process it started have ended.
    let guard = match confine {
        Some(spec) => Some(super::gitguard::Guard::take(&spec.workspace)?),
        None => None,
    };
    run_guarded(
        line,
        confine.zip(guard),
        cwd,
        timeout,
        max_output_chars,
        on_output,
    )
}

/// [`run`] with the git guard's snapshot already taken (right before this call: the caller took
/// it to judge the command with what it found).
///
/// # Errors
/// When the shell cannot be started.
pub fn run_guarded(
    line: &str,
    confine: Option<(&super::sandbox::Spec, super::gitguard::Guard)>,
    cwd: &Path,
    timeout: Duration,
    max_output_chars: usize,
    on_output: impl FnMut(&str) -> bool,
) -> std::io::Result<ShellOutput> {
    let (spec, guard) = match confine {
        Some((spec, guard)) => {
            std::fs::create_dir_all(&spec.tmp)?;
            (Some(spec), Some(guard))
        }
        None => (None, None),
    };
    // A confined command is bounded: a group of its own (or resource limits).
    let group = spec.map(|s| std::sync::Arc::new(super::limits::CommandGroup::new(s.limits)));
    let mut command = shell_command(line, spec, group.as_deref());
    command.current_dir(cwd).env("KEYLESS", "1");
    let io = Io {
        group: group.clone(),
        wrapper: spec.is_some(),
        ..Io::default()
    };
    let mut out = run_program(command, io, timeout, max_output_chars, on_output)?;
    if let Some(g) = &group {
        out.limit = g.report(&out.output, out.exit_code != Some(0));
    }
    drop(group);
    if let Some(g) = guard {
        out.repairs = g.check();
    }
    Ok(out)
}

/// Where a program's standard streams go besides the capped, merged output.
#[derive(Debug, Default)]
pub struct Io {
    /// Bytes written to its stdin (then closed); `None`: stdin is /dev/null.
    pub input: Option<Vec<u8>>,
    /// Its stdout goes to this file, untouched (binary-safe), instead of the merged output.
    pub stdout_to: Option<std::fs::File>,
    /// The command's control group: reaching its process limit stops the command at once.
    pub group: Option<std::sync::Arc<super::limits::CommandGroup>>,
    /// The program is the sandbox's wrapper: it is stopped with SIGTERM, which it passes on to
    /// the command, and it ends only once every process of the command has (see
    /// `sandbox::wrapper_main`); only when it has not within [`WRAPPER_GRACE`] is its group
    /// killed.
    pub wrapper: bool,
}

/// How long a stopped sandbox wrapper has to see every process of its command end.
const WRAPPER_GRACE: Duration = Duration::from_secs(3);

/// Runs a prepared program in its own process group, like [`run`]: a deadline that kills the
/// group, cancel through `on_output`, output merged and capped (stderr only when `io.stdout_to`
/// takes stdout).
///
/// # Errors
/// When the program cannot be started.
pub fn run_program(
    mut command: Command,
    io: Io,
    timeout: Duration,
    max_output_chars: usize,
    mut on_output: impl FnMut(&str) -> bool,
) -> std::io::Result<ShellOutput> {
    let start = Instant::now();
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command
        .stdin(if io.input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(match io.stdout_to {
            Some(f) => Stdio::from(f),
            None => Stdio::piped(),
        })
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let pid = child.id();
    let io_group = io.group;
    let wrapper = io.wrapper;
    let mut limited = false;
    let writer = match (io.input, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => Some(std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        })),
        _ => None,
    };
    // Bounded: when the results side lags, the readers block, the pipe fills and the command
    // waits, so memory stays bounded however much it prints.
    let (tx, rx) = mpsc::sync_channel::<String>(16);
    let readers = [
        child.stdout.take().map(|o| pump(o, tx.clone())),
        child.stderr.take().map(|e| pump(e, tx.clone())),
    ];
    drop(tx);
    let mut cap = OutputCap::new(max_output_chars);
    let deadline = start + timeout;
    let mut timed_out = false;
    let mut cancelled = false;
    let mut status = None;
    let mut exited_at: Option<Instant> = None;
    let mut closed_wait = Duration::from_millis(1);
    loop {
        let now = Instant::now();
        if status.is_none() {
            status = child.try_wait()?;
            if status.is_some() {
                exited_at = Some(now);
            }
        }
        if status.is_none()
            && !cancelled
            && io_group
                .as_deref()
                .is_some_and(|g| g.processes_exhausted(pid))
        {
            // A command at its process limit is a fork bomb or broken: stop it now.
            cancelled = true;
            limited = true;
        }
        if status.is_none() && (cancelled || now >= deadline) {
            timed_out = !cancelled;
            if wrapper {
                status = stop_wrapper(&mut child, pid)?;
            }
            if status.is_none() {
                kill_group(pid);
                let _ = child.kill();
                status = Some(child.wait()?);
            }
            exited_at = Some(now);
        }
        // A background process still holds the pipes open: give it a moment, then end the group.
        if let Some(t) = exited_at {
            let since = now.duration_since(t);
            if since > Duration::from_millis(500) {
                kill_group(pid);
            }
            if since > Duration::from_secs(2) {
                break;
            }
        }
        let wait = if status.is_none() {
            TICK.min(deadline.saturating_duration_since(now))
        } else {
            TICK
        };
        match rx.recv_timeout(wait.max(Duration::from_millis(1))) {
            Ok(chunk) => {
                if !on_output(&chunk) && status.is_none() {
                    cancelled = true;
                }
                cap.push(&chunk);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if status.is_some() {
                    break;
                }
                // Both pipes are closed: the process is usually exiting right now. Look again
                // after 1 ms, backing off to TICK if it lives on (without spinning), so a command
                // is not held 20 ms past its end.
                if !on_output("") {
                    cancelled = true;
                }
                std::thread::sleep(closed_wait);
                closed_wait = (closed_wait * 2).min(TICK);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !on_output("") && status.is_none() {
                    cancelled = true;
                }
            }
        }
    }
    for r in readers.into_iter().flatten() {
        if r.is_finished() {
            let _ = r.join();
        }
    }
    if let Some(w) = writer {
        if w.is_finished() {
            let _ = w.join();
        }
    }
    let code = status.and_then(|s| s.code());
    Ok(ShellOutput {
        exit_code: if timed_out || cancelled { None } else { code },
        duration: start.elapsed(),
        output: cap.finish(),
        timed_out,
        // Stopped at its process limit: not the user's cancel (the limit is reported instead).
        cancelled: cancelled && !limited,
        repairs: Vec::new(),
        limit: None,
    })
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    /// A command that closes its output and lives on is still cancelled (it used to be only
    /// timed out: nothing asked for the cancel once both pipes were closed).
    #[cfg(unix)]
    #[test]
    fn a_command_without_output_pipes_is_still_cancelled() {
        let tmp = std::env::temp_dir();
        let start = std::time::Instant::now();
        let out = super::run(
            "exec >/dev/null 2>&1; sleep 30",
            None,
            &tmp,
            std::time::Duration::from_secs(60),
            1000,
            |_| start.elapsed() < std::time::Duration::from_millis(200),
        )
        .expect("run");
        assert!(out.cancelled, "{out:?}");
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn utf8_across_chunks() {
        let mut d = Utf8Stream::default();
        let bytes = "é€😀".as_bytes();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&d.push(&[*b]));
        }
        assert_eq!(out, "é€😀");
        assert_eq!(d.push(b"a\xffb"), "a\u{fffd}b");
    }
}
