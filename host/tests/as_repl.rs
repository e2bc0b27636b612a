//! `keyless-host as repl` under a pseudo-terminal: line editing is on, multi-line input, `:load`
//! from the current folder, `:trace`, variables kept between inputs, and the history file.
#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_repl_runs_under_a_pty() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let config = d.join("config");
    std::fs::write(
        d.join("helper.as"),
        "main agent Helper {\n    main func(n) {\n        return [n, n]\n    }\n}\n",
    )
    .expect("write");
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["as", "repl"])
        .current_dir(d)
        .env("XDG_CONFIG_HOME", &config)
        .env("TERM", "dumb")
        .stdin(slave(&pty.slave))
        .stdout(slave(&pty.slave))
        .stderr(slave(&pty.slave))
        .spawn()
        .expect("spawn");
    drop(pty.slave);
    let mut master = std::fs::File::from(pty.master);
    let mut reader = master.try_clone().expect("clone");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0
                || tx
                    .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                    .is_err()
            {
                break;
            }
        }
    });
    let mut seen = String::new();
    let wait_for = |want: &str, seen: &mut String| {
        let start = Instant::now();
        while !seen.contains(want) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "waiting for {want:?} in:\n{seen}"
            );
            if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(100)) {
                seen.push_str(&chunk);
            }
        }
    };
    wait_for("as> ", &mut seen);
    for (line, want) in [
        ("x = 41", "as> "),
        ("y = [x,", "... "),
        ("2]", "as> "),
        ("y.length", "2"),
        (":load helper.as", "ok"),
        ("Helper(x)", "41"),
        (":trace", "trace on"),
        ("Helper(7)", "\"event\": \"call\""),
        (":quit", ""),
    ] {
        master
            .write_all(format!("{line}\r").as_bytes())
            .expect("type");
        if !want.is_empty() {
            wait_for(want, &mut seen);
        }
    }
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the repl did not quit:\n{seen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}\n{seen}");
    // The history is kept in the user's config folder.
    let history = std::fs::read_to_string(config.join("keyless/as_history")).expect("history");
    assert!(
        history.contains("Helper(7)") && history.contains("y = [x,\\n2]"),
        "{history}"
    );
}
