//! `keyless-host as repl` under a pseudo-terminal: line editing is on, multi-line input, `:load`
//! from the current folder, `:trace`, variables kept between inputs, and the history file.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_repl_runs_under_a_pty() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let cfg_tmp = tempfile::tempdir().expect("cfg");
    let config = cfg_tmp.path().join("config");
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
    // Waits for `want` in what the terminal showed after byte `from` (the typed input is echoed
    // first, so an answer is looked for only after it); returns where it ends.
    let wait_for = |want: &str, from: usize, seen: &mut String| -> usize {
        let start = Instant::now();
        loop {
            if let Some(at) = seen.get(from..).and_then(|tail| tail.find(want)) {
                return from + at + want.len();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "waiting for {want:?} after byte {from} in:\n{seen}"
            );
            if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(100)) {
                seen.push_str(&chunk);
            }
        }
    };
    let mut at = wait_for("as> ", 0, &mut seen);
    // Each input, then what the REPL answers: on a line of its own, after the echoed input.
    for (line, want) in [
        ("x = 41", "as> "),
        ("y = [x,", "... "),
        ("2]", "as> "),
        ("y.length", "\n2\r\n"),
        (":load helper.as", "ok"),
        ("Helper(x)", "[\r\n  41,\r\n  41\r\n]"),
        (":trace", "trace on"),
        ("Helper(7)", "\"event\": \"call\""),
        // A top-level `use` lasts for the session.
        ("use x", "as> "),
        (":uses", "use x\r\n"),
        (":unuse", "forgot 1 use(s)"),
        (":quit", ""),
    ] {
        master
            .write_all(format!("{line}\r").as_bytes())
            .expect("type");
        // The terminal echoes the input first.
        at = wait_for(line, at, &mut seen);
        if !want.is_empty() {
            at = wait_for(want, at, &mut seen);
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
