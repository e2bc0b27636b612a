//! Start-up: `keyless-host run` on a reply with only `@@say` (a session, the sandbox probe, the
//! environment snapshot from its cache, one batch), beside a bare `true` process, in one run.
//! The first run fills the snapshot cache and is printed on its own. Prints figures; asserts
//! nothing about time. Run with `cargo xtask bench` (it builds the host and sets
//! KEYLESS_HOST_BIN).
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)] // a broken setup should stop the benchmark

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn time(mut c: Command) -> Duration {
    let t = Instant::now();
    let status = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    let d = t.elapsed();
    // `run`'s exit codes: 0 done, 1 rejected, 5 not finished (this reply ends with @@next).
    assert!(matches!(status.code(), Some(0 | 1 | 5)), "{status}");
    d
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let bin = keyless_tests::bench::host_bin();
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let reply = tmp.path().join("say.txt");
    std::fs::write(
        &reply,
        "@@say\n<<<MSG\nhello\nMSG>>>\n@@end\n@@next\n@@end\n@@eof\n",
    )
    .expect("reply");
    let run = || {
        let mut c = Command::new(&bin);
        c.args(["run", "--workspace"])
            .arg(&ws)
            .arg(&reply)
            .env("XDG_CONFIG_HOME", tmp.path().join("config"));
        c
    };
    let first = time(run());
    println!(
        "keyless-host run, first start (probes every tool, fills the cache): {:>8.1} ms",
        first.as_secs_f64() * 1e3
    );
    let runs: Vec<Duration> = (0..20).map(|_| time(run())).collect();
    let trues: Vec<Duration> = (0..20).map(|_| time(Command::new("true"))).collect();
    let (r, t) = (median(runs), median(trues));
    println!(
        "keyless-host run, later starts (median of 20):                     {:>8.1} ms",
        r.as_secs_f64() * 1e3
    );
    println!(
        "bare `true` process (median of 20):                                 {:>8.1} ms",
        t.as_secs_f64() * 1e3
    );
}
