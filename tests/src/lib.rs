//! The conformance corpus: `tests/corpus/NAME.txt` is a reply, `NAME.json` the expected
//! `keyless-host check --json` report beside it, and an optional `NAME.args` the CLI flags
//! (`--pace`, `--max-commands`, `--max-response-chars`, `--max-file-content-chars`).
//!
//! Set `KEYLESS_BLESS=1` to rewrite the expected files after an intended change, then review the
//! diff.
#![allow(clippy::disallowed_methods)]
// tests and benches start the programs under test

// Test support: a broken checkout or corpus file should fail the test run loudly.
#![allow(clippy::expect_used, clippy::panic)]

use keyless_core::{Pace, Settings};

pub mod bench;
pub mod mcp;
pub mod serve;
pub mod sshd;
pub mod wasm;
use std::path::{Path, PathBuf};

/// One corpus entry.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub reply: PathBuf,
    pub expected: PathBuf,
    pub args: Vec<String>,
}

/// The corpus folder.
#[must_use]
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Every corpus case, sorted by name.
///
/// # Panics
/// When the corpus folder cannot be read (a broken checkout).
#[must_use]
pub fn cases() -> Vec<Case> {
    let dir = corpus_dir();
    let mut out: Vec<Case> = std::fs::read_dir(&dir)
        .expect("corpus folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .map(|reply| {
            let name = reply
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let args = std::fs::read_to_string(reply.with_extension("args"))
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default();
            Case {
                expected: reply.with_extension("json"),
                reply,
                name,
                args,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The settings a case's flags select, as `keyless-host check` reads them.
///
/// # Panics
/// On a malformed `.args` file.
#[must_use]
pub fn settings_for(args: &[String]) -> Settings {
    let mut s = Settings::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().expect("flag value");
        match flag.as_str() {
            "--pace" => s.pace = value.parse::<Pace>().expect("pace"),
            "--max-commands" => s.limits.max_commands_per_response = value.parse().expect("number"),
            "--max-response-chars" => {
                s.limits.max_response_chars = value.parse().expect("number");
                s.limits.max_file_content_chars = s
                    .limits
                    .max_file_content_chars
                    .min(s.limits.max_response_chars);
            }
            "--max-file-content-chars" => {
                s.limits.max_file_content_chars = value.parse().expect("number")
            }
            other => panic!("unknown corpus flag {other}"),
        }
    }
    s
}

/// Compares `actual` with the expected file, or rewrites it under `KEYLESS_BLESS=1`.
/// Returns a description of the mismatch.
#[must_use]
pub fn compare_or_bless(expected: &Path, actual: &serde_json::Value) -> Option<String> {
    let pretty = serde_json::to_string_pretty(actual).unwrap_or_default() + "\n";
    if std::env::var_os("KEYLESS_BLESS").is_some() {
        std::fs::write(expected, &pretty).expect("write expected file");
        return None;
    }
    let Ok(text) = std::fs::read_to_string(expected) else {
        return Some(format!(
            "{} is missing (run with KEYLESS_BLESS=1)",
            expected.display()
        ));
    };
    let want: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return Some(format!("{}: {e}", expected.display())),
    };
    (want != *actual).then(|| {
        format!(
            "{}\n--- expected\n{text}\n--- actual\n{pretty}",
            expected.display()
        )
    })
}

/// xorshift64*: deterministic, so every CI run tests the same replies.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next_u64() % (n.max(1) as u64)).unwrap_or(0)
    }
}

/// Marker-like lines the mutator inserts.
pub const INSERTS: &[&str] = &[
    "@@end",
    "@@eof",
    "@@next",
    "@@done",
    "@@say",
    "@@newfile x.txt",
    "<<<CONTENT",
    "CONTENT>>>",
    "<<<MSG",
    "MSG>>>",
    "<<<CMD",
    "CMD>>>",
    "~~~~",
    "```",
    "",
    "stray words",
    "@@runcommand timeout=9",
    "<<<CONTENT:z",
    "CONTENT:z>>>",
    "@@editfile ../a",
    "\u{feff}",
    "\r",
    "@@ ",
    "<<<TO",
    "TO>>>",
];

/// Applies one to four random line-level mutations (delete, duplicate, swap, insert a marker,
/// truncate mid-stream, upper-case, insert a character, indent, add a CR).
#[must_use]
pub fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    for _ in 0..=rng.below(4) {
        let n = lines.len();
        match rng.below(9) {
            0 if n > 1 => {
                lines.remove(rng.below(n));
            }
            1 => {
                let i = rng.below(n);
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 if n > 1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                lines.swap(a, b);
            }
            3 => {
                let i = rng.below(n + 1);
                lines.insert(i.min(n), INSERTS[rng.below(INSERTS.len())].to_string());
            }
            4 => {
                // Truncate at a random character boundary (a reply cut off mid-stream).
                let joined = lines.join("\n");
                let cut = rng.below(joined.len() + 1);
                let cut = (0..=cut)
                    .rev()
                    .find(|c| joined.is_char_boundary(*c))
                    .unwrap_or(0);
                lines = joined[..cut].split('\n').map(str::to_string).collect();
            }
            5 => {
                let i = rng.below(n);
                lines[i] = lines[i].to_uppercase();
            }
            6 => {
                let i = rng.below(n);
                let pos = rng.below(lines[i].len() + 1);
                if lines[i].is_char_boundary(pos) {
                    let c = char::from_u32(u32::try_from(rng.below(0x3000)).unwrap_or(32))
                        .unwrap_or('x');
                    lines[i].insert(pos, c);
                }
            }
            7 => {
                let i = rng.below(n);
                lines[i] = format!("  {}  ", lines[i]);
            }
            _ => {
                let i = rng.below(n);
                lines[i].push('\r');
            }
        }
    }
    lines.join("\n")
}
