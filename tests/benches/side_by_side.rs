//! Parse throughput of one maximal reply, measured side by side in one run: native, the wasm32
//! build in wasmtime, and the same wasm module in Chromium (V8); plus the wasm package's size and
//! the playground's keystroke-to-diagnostics time for a 60,000-character reply (from the Chromium
//! half, `tests/bench/chromium.mjs`). Prints figures; asserts nothing about time.
//!
//! Run: `cargo xtask bench` (it builds the wasm package first), or
//! `cargo bench -p keyless-tests --bench side_by_side` after `cargo xtask build`.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used, clippy::cast_precision_loss)]

use keyless_tests::bench::{gbps, measure, realistic_reply};
use keyless_tests::wasm::{wasm_file, workspace_root, WasmCore};
use std::hint::black_box;
use std::process::Command;
use std::time::Duration;

fn line(name: &str, bytes: usize, (median, best): (Duration, Duration)) {
    println!(
        "{name:<28} median {:>7.0} µs ({:.2} GB/s)   best {:>7.0} µs ({:.2} GB/s)",
        median.as_secs_f64() * 1e6,
        gbps(bytes, median),
        best.as_secs_f64() * 1e6,
        gbps(bytes, best)
    );
}

fn main() {
    let reply = realistic_reply(59_990);
    let bytes = reply.len();
    let expected = keyless_abi::parse_counts(&reply);
    println!(
        "maximal reply: {} characters, {} commands, {} diagnostics (default limits)",
        reply.chars().count(),
        expected >> 32,
        expected & 0xffff_ffff
    );

    let native = measure(|| {
        black_box(keyless_abi::parse_counts(black_box(&reply)));
    });

    let mut core = WasmCore::load();
    let at = core.put(&reply);
    assert_eq!(core.parse(at), expected, "wasmtime parses like native");
    let wasmtime = measure(|| {
        black_box(core.parse(at));
    });

    let reply_file = workspace_root().join("target/bench-reply.txt");
    std::fs::write(&reply_file, &reply).expect("reply file");
    let chromium = Command::new("node")
        .arg(workspace_root().join("tests/bench/chromium.mjs"))
        .arg(wasm_file())
        .arg(&reply_file)
        .arg(expected.to_string())
        .output();
    let pkg = workspace_root().join("target/wasm-pkg/keyless_wasm_bg.wasm");
    let raw = std::fs::metadata(&pkg).map(|m| m.len()).unwrap_or(0);
    let gzip = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -9c '{}' | wc -c", pkg.display()))
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);

    println!(
        "\nparse throughput, same reply, one run (the wasm module is keyless-abi, no JS glue):"
    );
    line("native (x86_64)", bytes, native);
    line("wasm32 in wasmtime", bytes, wasmtime);
    match chromium {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let mut fields = text
                .split_whitespace()
                .map(|v| v.parse::<f64>().unwrap_or(0.0));
            let (m, b, keystroke, chars) = (
                fields.next().unwrap_or(0.0),
                fields.next().unwrap_or(0.0),
                fields.next().unwrap_or(0.0),
                fields.next().unwrap_or(0.0),
            );
            line(
                "wasm32 in Chromium (V8)",
                bytes,
                (
                    Duration::from_secs_f64(m / 1e6),
                    Duration::from_secs_f64(b / 1e6),
                ),
            );
            println!(
                "\nwasm package (target/wasm-pkg): {:.0} KiB raw, {:.0} KiB gzip",
                raw as f64 / 1024.0,
                gzip as f64 / 1024.0
            );
            println!("playground, keystroke to diagnostics, {chars:.0}-character reply: median {keystroke:.1} ms");
        }
        Ok(out) => println!(
            "Chromium half failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
        Err(e) => println!("Chromium half not run (node: {e})"),
    }
}
