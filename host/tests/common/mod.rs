//! Shared fixture of the host's integration tests: a temp folder with a git workspace (`ws/`, on
//! branch `feature`, one commit, origin = the bare `origin.git` beside it) and the user's config
//! folder (`config/`), so that nothing outside the temp folder is read or written.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(dead_code, clippy::expect_used)] // each test file uses a part; fixture helpers fail loudly

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Fixture {
    /// `ws/` is a git repository on branch `feature` with one commit and `origin` = `origin.git`.
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().to_path_buf();
        git(&root, &["init", "-q", "--bare", "origin.git"]);
        git(&root, &["init", "-q", "-b", "feature", "ws"]);
        let ws = root.join("ws");
        git(&ws, &["config", "user.name", "Test"]);
        git(&ws, &["config", "user.email", "test@example.com"]);
        std::fs::write(ws.join("README.md"), "# demo\n").expect("write");
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "init"]);
        git(&ws, &["remote", "add", "origin", "../origin.git"]);
        std::fs::create_dir_all(root.join("config")).expect("config dir");
        std::fs::create_dir_all(root.join("home")).expect("home dir");
        Fixture { _tmp: tmp, root }
    }

    pub fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }

    /// The user's keyless config folder (`$XDG_CONFIG_HOME/keyless`).
    pub fn user_config(&self) -> PathBuf {
        self.root.join("config").join("keyless")
    }

    /// The host binary with this fixture's config folder and home (never the real ones).
    pub fn host(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_keyless-host"));
        c.env("XDG_CONFIG_HOME", self.root.join("config"));
        c.env("HOME", self.home());
        c
    }

    /// The fixture's home folder (`$HOME` of every host it starts).
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Writes the replies to files and runs them as one session.
    pub fn run(&self, replies: &[&str], extra: &[&str]) -> (Output, String) {
        let files = self.reply_files(replies);
        let out = self
            .host()
            .arg("run")
            .arg("--workspace")
            .arg(self.ws())
            .args(extra)
            .args(&files)
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out, text)
    }

    pub fn reply_files(&self, replies: &[&str]) -> Vec<PathBuf> {
        replies
            .iter()
            .map(|r| {
                let n = std::fs::read_dir(&self.root).map_or(0, Iterator::count);
                let f = self.root.join(format!("reply-{n}.txt"));
                std::fs::write(&f, r).expect("write reply");
                f
            })
            .collect()
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.ws().join(rel)).expect("read")
    }
}

/// Runs the host with `args` and this fixture's config folder.
pub fn host_in(fx: &Fixture, args: &[&str]) -> (Output, String) {
    let out = fx.host().args(args).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

pub fn block(cmd: &str, sections: &[(&str, &str)]) -> String {
    let mut s = format!("@@{cmd}\n");
    for (name, text) in sections {
        s.push_str(&format!("<<<{name}\n{text}\n{name}>>>\n"));
    }
    s.push_str("@@end\n");
    s
}

pub fn reply(blocks: &[String]) -> String {
    blocks.concat() + "@@next\n@@end\n@@eof\n"
}

/// A reply that runs one command line.
pub fn run_cmd(line: &str) -> String {
    reply(&[block("runcommand", &[("CMD", line)])])
}

/// The session id `keyless-host run` prints on its first line.
pub fn session_of(run_output: &str) -> String {
    run_output
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("session "))
        .and_then(|l| l.split_whitespace().next())
        .expect("session id")
        .to_string()
}

/// Marks a file executable (a planted hook or program).
pub fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The processes whose command line holds `token` (a word unique to one test), from /proc.
pub fn processes_with(token: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .collect()
}

/// Waits until `done` holds (checked every 10 ms), at most `limit`; whether it did.
pub fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() > end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A token no other test's command line holds: `sleep` takes it as a number of seconds
/// (`sleep 30.000123456` sleeps 30 s), so a test can find its own processes, and only those.
pub fn unique_seconds(seconds: u32) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "{seconds}.{:06}{:03}",
        std::process::id() % 1_000_000,
        n % 1000
    )
}

/// `git add -A` and a commit with a test identity, in `dir`.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            message,
        ],
    );
}
