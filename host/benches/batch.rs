//! The host's overhead per file command: a 5-command batch (newfile ×3, editfile, updatefile)
//! through the executor, against the bare filesystem work (the same five writes with
//! `std::fs::write`, the edit done in memory), and against that bare work made durable with the
//! same fsyncs. Prints the ratios; asserts nothing about time.
#![allow(clippy::expect_used)] // a broken temp dir should stop the benchmark

use keyless_host::exec::batch::{BatchRun, ExecSettings, Executor, Prompter};
use keyless_host::exec::workspace::Workspace;
use std::hint::black_box;
use std::time::{Duration, Instant};

struct Quiet;

impl Prompter for Quiet {
    fn confirm(&mut self, _: &str, _: &keyless_core::policy::Verdict) -> bool {
        true
    }
    fn ask(&mut self, _: &str) -> Option<String> {
        None
    }
    fn say(&mut self, _: &str) {}
}

fn content(i: usize) -> String {
    (0..40)
        .map(|l| format!("line {l} of file {i}: some realistic source text here;"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn reply(round: usize) -> String {
    let mut r = String::new();
    for i in 0..3 {
        r.push_str(&format!(
            "@@newfile r{round}/f{i}.rs\n<<<CONTENT\n{}\nCONTENT>>>\n@@end\n",
            content(i)
        ));
    }
    r.push_str(&format!("@@editfile r{round}/f0.rs\n<<<FIND\nline 7 of file 0: some realistic source text here;\nFIND>>>\n<<<REPLACE\nline 7 was edited\nREPLACE>>>\n@@end\n"));
    r.push_str(&format!(
        "@@updatefile r{round}/f1.rs\n<<<CONTENT\n{}\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n",
        content(9)
    ));
    r
}

fn write(path: &std::path::Path, bytes: &[u8], durable: bool) {
    if durable {
        use std::io::Write;
        let mut f = std::fs::File::create(path).expect("create");
        f.write_all(bytes).expect("write");
        f.sync_all().expect("fsync");
    } else {
        std::fs::write(path, bytes).expect("write");
    }
}

fn bare(dir: &std::path::Path, round: usize, durable: bool) {
    let d = dir.join(format!("b{round}-{durable}"));
    std::fs::create_dir_all(&d).expect("dir");
    for i in 0..3 {
        write(
            &d.join(format!("f{i}.rs")),
            (content(i) + "\n").as_bytes(),
            durable,
        );
    }
    let t = std::fs::read_to_string(d.join("f0.rs")).expect("read");
    write(
        &d.join("f0.rs"),
        t.replace(
            "line 7 of file 0: some realistic source text here;",
            "line 7 was edited",
        )
        .as_bytes(),
        durable,
    );
    write(&d.join("f1.rs"), (content(9) + "\n").as_bytes(), durable);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
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
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = Workspace::open(tmp.path()).expect("workspace");
    let cfg = ExecSettings {
        settings: keyless_core::Settings {
            pace: keyless_core::Pace::Batch,
            ..Default::default()
        },
        ..Default::default()
    };
    let exec = Executor {
        ws: &ws,
        cfg: &cfg,
        session: "bench",
        gate: None,
        repo: &keyless_host::exec::git::RepoRecord::default(),
        ext: None,
    };
    let rounds = 200;
    let replies: Vec<String> = (0..rounds).map(reply).collect();
    let mut host_times = Vec::new();
    let mut bare_times = Vec::new();
    let mut durable_times = Vec::new();
    for (round, r) in replies.iter().enumerate() {
        let t = Instant::now();
        let out = exec.execute(
            r,
            1,
            u32::try_from(round + 1).unwrap_or(u32::MAX),
            &mut Quiet,
        );
        host_times.push(t.elapsed());
        assert!(
            matches!(&out, BatchRun::Executed { results, .. } if !results.contains("status: error")),
            "{out:?}"
        );
        let t = Instant::now();
        bare(tmp.path(), round, false);
        bare_times.push(t.elapsed());
        let t = Instant::now();
        bare(tmp.path(), round, true);
        durable_times.push(t.elapsed());
        black_box(&out);
    }
    let (h, b, d) = (
        median(host_times),
        median(bare_times),
        median(durable_times),
    );
    println!(
        "5-command batch through the executor: median {h:.2?} ({:.2?} per command)",
        h / 5
    );
    println!(
        "the same bare filesystem work:        median {b:.2?} ({:.2?} per command)",
        b / 5
    );
    println!(
        "the same work with fsync per file:    median {d:.2?} ({:.2?} per command)",
        d / 5
    );
    println!(
        "overhead ratio vs bare: {:.1}x; vs bare + fsync: {:.1}x",
        h.as_secs_f64() / b.as_secs_f64(),
        h.as_secs_f64() / d.as_secs_f64()
    );
}
