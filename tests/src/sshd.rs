//! A real OpenSSH server on 127.0.0.1 for the SSH tests: Debian's `sshd` (openssh-server, which
//! `cargo xtask test` installs) with a host key and a user key made for the test, in a folder of
//! the test's own. Nothing in the real home is read or written: the client side is an ssh_config
//! file (`KEYLESS_SSH_CONFIG`) naming the test's key and known_hosts.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd and the client files that reach it.
#[derive(Debug)]
pub struct Sshd {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    /// ssh_config for the client: the user key, known_hosts with the server's key.
    pub client_config: PathBuf,
    /// The same, with an empty known_hosts (the server's key unknown).
    pub unknown_host_config: PathBuf,
    pub known_hosts: PathBuf,
    /// The local account the server logs in.
    pub user: String,
}

/// Whether the tests can run a real sshd here. Under CI it must: `cargo xtask test` installs it.
#[must_use]
pub fn available() -> bool {
    if Path::new(SSHD).exists() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{SSHD} is missing under CI: cargo xtask test installs openssh-server"
    );
    eprintln!("skipped: {SSHD} is not installed (apt install openssh-server, or CI=true cargo xtask test)");
    false
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen")
        .success();
    assert!(ok, "ssh-keygen {}", path.display());
}

fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Sshd {
    /// Starts sshd in `dir` (which it fills) on a free port of 127.0.0.1.
    pub fn start(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("sshd dir");
        let host_key = dir.join("host_key");
        let user_key = dir.join("id_user");
        keygen(&host_key);
        keygen(&user_key);
        std::fs::copy(dir.join("id_user.pub"), dir.join("authorized_keys")).expect("keys");
        // sshd run by root wants its privilege-separation folder.
        if whoami() == "root" {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let d = dir.display();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nMaxStartups 100\n"
            ),
        )
        .expect("sshd_config");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("sshd.log")).expect("log"))
            .spawn()
            .expect("start sshd");
        let pubkey = std::fs::read_to_string(dir.join("host_key.pub")).expect("host key");
        let key: Vec<&str> = pubkey.split_whitespace().take(2).collect();
        let known_hosts = dir.join("known_hosts");
        std::fs::write(
            &known_hosts,
            format!("[127.0.0.1]:{port} {}\n", key.join(" ")),
        )
        .expect("known_hosts");
        std::fs::write(dir.join("empty_known_hosts"), "").expect("empty known_hosts");
        let config = |name: &str, hosts: &str| {
            let p = dir.join(name);
            std::fs::write(
                &p,
                format!(
                    "Host *\n  IdentityFile {d}/id_user\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/{hosts}\n  GlobalKnownHostsFile /dev/null\n"
                ),
            )
            .expect("ssh_config");
            p
        };
        let client_config = config("ssh_config", "known_hosts");
        let unknown_host_config = config("ssh_config_unknown", "empty_known_hosts");
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "sshd did not listen: {}",
                std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Sshd {
            child,
            port,
            dir: dir.to_path_buf(),
            client_config,
            unknown_host_config,
            known_hosts,
            user: whoami(),
        }
    }

    /// What sshd logged.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
