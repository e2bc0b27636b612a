//! What a command costs as the repository grows: `keyless-host run` (release build) in git
//! repositories of 100, 50,000, 200,000 and 500,000 committed files (10 files per folder), on a
//! reply with no command (the run's start), one `true` command, three, and 21; and the cost of a
//! batch's backup when a command changes 1,000 tracked files and makes 1,000 new ones.
//!
//! Printed per size (medians of several runs):
//! - *run start*: the run with no command;
//! - *first command*: one `true` minus no command (a process looks at the whole tree once);
//! - *each later command*: (21 − one) / 20, what a command costs once the journal watches;
//! - *per command, issue 44's measure*: (three − none) / 3.
//!
//! `sh -c true` itself costs about 1 ms; the sandbox's start is in every command. The repositories
//! are made once under `target/scale-bench/` and reused (their content is fixed). Set
//! `KEYLESS_SCALE_SIZES=100,50000` to measure fewer sizes. Prints figures; asserts nothing about
//! time. Run with `cargo xtask bench` (it builds the host and sets KEYLESS_HOST_BIN).
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)] // a broken setup should stop the benchmark

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.com",
            "-c",
            "gc.auto=0",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A committed repository of `n` files, 10 per folder, 1,000 folders per top folder.
fn repository(base: &Path, n: usize) -> PathBuf {
    let dir = base.join(format!("r{n}"));
    if dir.join(".git").join("keyless-bench-done").exists() {
        return dir;
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("clean");
    }
    let t = Instant::now();
    for i in 0..n {
        let folder = dir
            .join("src")
            .join(format!("d{}", i / 10_000))
            .join(format!("e{}", (i / 10) % 1_000));
        if i % 10 == 0 {
            std::fs::create_dir_all(&folder).expect("folder");
        }
        std::fs::write(
            folder.join(format!("f{}.txt", i % 10)),
            format!("file {i}\n"),
        )
        .expect("file");
    }
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "files"]);
    git(&dir, &["gc", "-q"]);
    std::fs::write(dir.join(".git").join("keyless-bench-done"), "").expect("mark");
    println!(
        "  (made the repository of {n} files in {:.0?})",
        t.elapsed()
    );
    dir
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Host {
    bin: PathBuf,
    home: PathBuf,
}

impl Host {
    /// One `run` of `reply` in `ws`.
    fn run(&self, ws: &Path, reply: &Path) -> Duration {
        let t = Instant::now();
        let status = Command::new(&self.bin)
            .args(["run", "--mode", "auto", "--no-push", "--yes"])
            .args(["--pace", "batch", "--max-commands", "30", "--workspace"])
            .arg(ws)
            .arg(reply)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("spawn");
        let d = t.elapsed();
        // `run`'s exit codes: 1 no command (a reply of prose), 5 not finished (no @@done).
        assert!(matches!(status.code(), Some(0 | 1 | 5)), "{status}");
        d
    }

    fn median(&self, ws: &Path, reply: &Path, rounds: usize) -> Duration {
        // The first run of a size warms the page cache and the snapshot caches.
        self.run(ws, reply);
        median((0..rounds).map(|_| self.run(ws, reply)).collect())
    }
}

fn reply(dir: &Path, name: &str, commands: &[&str]) -> PathBuf {
    let mut s = String::new();
    if commands.is_empty() {
        s.push_str("Nothing to run yet.\n");
    }
    for c in commands {
        s.push_str(&format!("@@runcommand\n<<<CMD\n{c}\nCMD>>>\n@@end\n"));
    }
    s.push_str("@@eof\n");
    let f = dir.join(name);
    std::fs::write(&f, s).expect("reply");
    f
}

fn main() {
    let bin = keyless_tests::bench::host_bin();
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".config")).expect("home");
    let host = Host {
        bin: bin.into(),
        home,
    };
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("scale-bench");
    std::fs::create_dir_all(&base).expect("base");
    let sizes: Vec<usize> = std::env::var("KEYLESS_SCALE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100, 50_000, 200_000, 500_000]);
    let none = reply(tmp.path(), "none.txt", &[]);
    let one = reply(tmp.path(), "one.txt", &["true"]);
    let three = reply(tmp.path(), "three.txt", &["true"; 3]);
    let many = reply(tmp.path(), "many.txt", &["true"; 21]);
    println!("What a command costs as the repository grows (release build, medians):");
    println!(
        "| files | run start (no command) | first command | each later command | per command, (three − none) / 3 |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let mut rows = Vec::new();
    for n in &sizes {
        let ws = repository(&base, *n);
        let rounds = if *n >= 200_000 { 3 } else { 5 };
        let t_none = host.median(&ws, &none, rounds);
        let t_one = host.median(&ws, &one, rounds);
        let t_three = host.median(&ws, &three, rounds);
        let t_many = host.median(&ws, &many, rounds);
        let first = ms(t_one) - ms(t_none);
        let later = (ms(t_many) - ms(t_one)) / 20.0;
        let per = (ms(t_three) - ms(t_none)) / 3.0;
        println!(
            "| {n} | {:.0} ms | {first:.0} ms | {later:.1} ms | {per:.1} ms |",
            ms(t_none)
        );
        rows.push((*n, per, later));
    }
    if let (Some(small), Some(big)) = (rows.first(), rows.last()) {
        println!(
            "per command at {} files against {} files: {:.1}× (issue 44 asks for 2× or less); each later command: {:.1}×",
            big.0,
            small.0,
            big.1 / small.1.max(0.001),
            big.2 / small.2.max(0.001)
        );
    }
    // A batch's backup: a command that changes 1,000 tracked files and makes 1,000 new ones, after
    // a warm-up command, against the same batch with `true` in its place.
    let ws = repository(&base, 50_000);
    let change = reply(
        tmp.path(),
        "change.txt",
        &[
            "true",
            "for d in src/d0/e1??; do for f in $d/*.txt; do echo changed >> $f; done; done; mkdir -p made && i=0; while [ $i -lt 1000 ]; do echo $i > made/$i.txt; i=$((i+1)); done",
        ],
    );
    let plain = reply(
        tmp.path(),
        "plain.txt",
        &[
            "true",
            "for d in src/d0/e1??; do for f in $d/*.txt; do : ; done; done; i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done",
        ],
    );
    let mut with = Vec::new();
    let mut without = Vec::new();
    for _ in 0..3 {
        with.push(host.run(&ws, &change));
        git(&ws, &["checkout", "-q", "--", "."]);
        std::fs::remove_dir_all(ws.join("made")).expect("made");
        without.push(host.run(&ws, &plain));
    }
    println!(
        "a batch's backup (1,000 files changed, 1,000 made, in the repository of 50,000): {:.0} ms ({:.0} ms with the backup, {:.0} ms for the same shell work)",
        ms(median(with.clone())) - ms(median(without.clone())),
        ms(median(with)),
        ms(median(without))
    );
}
