//! Shared by the benches (`tests/benches`): the maximal realistic reply and the timing loop.
//! Benches print figures and assert nothing about time.

use std::time::{Duration, Instant};

/// A realistic reply: a say, then new files of Rust source, an edit and commands, in a fence.
#[must_use]
pub fn realistic_reply(target_chars: usize) -> String {
    let source = r#"use std::collections::HashMap;

/// A small in-memory store used by the service layer.
pub struct Store {
    items: HashMap<String, Vec<u8>>,
}

impl Store {
    pub fn new() -> Self {
        Self { items: HashMap::new() }
    }

    pub fn put(&mut self, key: &str, value: &[u8]) -> Option<Vec<u8>> {
        self.items.insert(key.to_string(), value.to_vec())
    }

    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.items.get(key).map(Vec::as_slice)
    }
}
"#;
    let mut out = String::from("~~~~agentscript\n@@say\n<<<MSG\nI will add the store modules and run the tests.\nMSG>>>\n@@end\n");
    let tail = "@@editfile src/lib.rs\n<<<FIND\npub mod api;\nFIND>>>\n<<<REPLACE\npub mod api;\npub mod store;\nREPLACE>>>\n@@end\n\
@@runcommand timeout=600\n<<<CMD\ncargo test --workspace\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n~~~~\n";
    let mut i = 0;
    loop {
        let block =
            format!("@@newfile src/store/part_{i}.rs\n<<<CONTENT\n{source}CONTENT>>>\n@@end\n");
        if out.len() + block.len() + tail.len() > target_chars {
            break;
        }
        out.push_str(&block);
        i += 1;
    }
    out.push_str(tail);
    out
}

/// Runs `f` in 20 windows of about 50 ms and returns (median, best) time per call. The best
/// window is the least disturbed by other load on a shared machine.
pub fn measure<F: FnMut()>(mut f: F) -> (Duration, Duration) {
    for _ in 0..50 {
        f();
    }
    let mut per_call = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let mut n = 0u32;
        while start.elapsed() < Duration::from_millis(50) {
            for _ in 0..10 {
                f();
            }
            n += 10;
        }
        per_call.push(start.elapsed() / n);
    }
    per_call.sort();
    (per_call[per_call.len() / 2], per_call[0])
}

/// The `keyless-host` binary a bench drives: `KEYLESS_HOST_BIN` (set by `cargo xtask bench`),
/// else the one in the bench's own target folder.
///
/// # Panics
/// When neither is known.
#[must_use]
pub fn host_bin() -> String {
    std::env::var("KEYLESS_HOST_BIN").unwrap_or_else(|_| {
        let exe = std::env::current_exe().expect("the bench's own path");
        exe.parent()
            .and_then(|d| d.parent())
            .map(|d| d.join("keyless-host").display().to_string())
            .expect("the target folder")
    })
}

/// Gigabytes per second for `bytes` in `d`.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}
