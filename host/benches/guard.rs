//! What the git guard and the policy's context cost every confined command: the scan before it
//! (the snapshot, which also finds the files that steer programs), the context (with the programs
//! the shell would take from folders the model can write), and the check after it, on a small
//! workspace and on one shaped like a JavaScript project with its `node_modules` (about 50,000
//! files in 5,000 folders); and the first scan of a process, which lists every folder (later scans
//! list only the folders whose times changed). Prints medians; asserts nothing about time.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)] // a broken temp dir should stop the benchmark

use keyless_host::exec::gitguard::Guard;
use keyless_host::exec::policy_context::context;
use std::path::Path;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A workspace with a git repository (hooks as `git init` writes them) and `folders` folders of
/// `files` files each, a few levels deep.
fn workspace(root: &Path, folders: usize, files: usize) {
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(root)
        .output()
        .expect("git init");
    assert!(out.status.success());
    for d in 0..folders {
        let dir = root
            .join("node_modules")
            .join(format!("pkg{}", d / 10))
            .join(format!("lib{}", d % 10));
        std::fs::create_dir_all(&dir).expect("dir");
        for f in 0..files {
            std::fs::write(dir.join(format!("f{f}.js")), "module.exports = 1;\n").expect("file");
        }
    }
    std::fs::write(root.join("package.json"), "{}\n").expect("package.json");
    std::fs::write(root.join(".npmrc"), "fund=false\n").expect(".npmrc");
}

fn measure(name: &str, root: &Path) {
    // A project is not made the moment before a command: past the two seconds in which a
    // folder's times cannot tell a change, the scan lists only the folders that changed.
    std::thread::sleep(Duration::from_secs(3));
    let first = Instant::now();
    drop(Guard::take(root).expect("take"));
    let first = first.elapsed();
    let rounds = 15;
    let (mut take, mut ctx, mut check) = (Vec::new(), Vec::new(), Vec::new());
    let mut steering = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let g = Guard::take(root).expect("take");
        take.push(t.elapsed());
        let t = Instant::now();
        let c = context(root, Some(&g));
        ctx.push(t.elapsed());
        steering = c.steering.len();
        let t = Instant::now();
        let repairs = g.check();
        check.push(t.elapsed());
        assert!(repairs.is_empty(), "{repairs:?}");
    }
    let (t, c, k) = (median(take), median(ctx), median(check));
    println!(
        "{name}: the process's first scan {first:.2?}; then per command: snapshot before {t:.2?}, context {c:.2?} ({steering} steering file(s)), check after {k:.2?}, in all {:.2?}",
        t + c + k
    );
}

/// The sandbox wrapper is this binary (`/proc/self/exe __sandbox …`): it acts as the host then.
fn main() -> std::process::ExitCode {
    if let Some(code) = keyless_host::cli::wrapper_entry() {
        return code;
    }
    bench();
    std::process::ExitCode::SUCCESS
}

fn bench() {
    let small = tempfile::tempdir().expect("tmp");
    workspace(small.path(), 50, 20);
    measure("1,000 files in 50 folders", small.path());
    let large = tempfile::tempdir().expect("tmp");
    workspace(large.path(), 5_000, 10);
    measure("50,000 files in 5,000 folders", large.path());
}
