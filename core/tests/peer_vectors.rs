//! The command lines Codex CLI, Gemini CLI and Cline test as safe or unsafe
//! (`tests/peer-suites/command-safety/vectors.json`), through the policy in AutoSafe with each
//! test's allow-list. An unsafe line must never run without confirmation. A safe line runs, or is
//! listed in `peer_safe_asks.txt` with the reason keyless asks (documented in docs/policy.md).
#![allow(clippy::expect_used, clippy::panic)]

use keyless_core::policy::{decide, Decision};
use keyless_core::Mode;

#[derive(serde::Deserialize)]
struct File {
    vectors: Vec<Vector>,
}

#[derive(serde::Deserialize)]
struct Vector {
    id: String,
    line: String,
    allow: Vec<String>,
    expect: Option<String>,
    counted: bool,
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../../tests/peer-suites/command-safety/vectors.json");
    let f: File = serde_json::from_str(text).expect("vectors.json");
    f.vectors.into_iter().filter(|v| v.counted).collect()
}

/// Where the seed's own tier table decides: its Build tier (`dotnet build`, and keyless's
/// `cargo check`) is auto-approved in AutoSafe, and runs inside the sandbox.
const SEED_BUILD_TIER: &[&str] = &["codex-144"];

#[test]
fn no_unsafe_peer_line_runs_unconfirmed() {
    let mut ran = Vec::new();
    let mut n = 0;
    for v in vectors()
        .iter()
        .filter(|v| v.expect.as_deref() == Some("unsafe"))
    {
        n += 1;
        let verdict = decide(&v.line, Mode::AutoSafe, &v.allow);
        if SEED_BUILD_TIER.contains(&v.id.as_str()) {
            assert_eq!(
                verdict.tier,
                keyless_core::policy::Tier::Build,
                "{}",
                v.line
            );
            continue;
        }
        if verdict.decision == Decision::Run {
            ran.push(format!("{} {:?}: {}", v.id, v.line, verdict.reason));
        }
    }
    assert_eq!(n, 231, "the unsafe vectors changed");
    assert!(
        ran.is_empty(),
        "{} unsafe lines run:\n{}",
        ran.len(),
        ran.join("\n")
    );
}

#[test]
fn safe_peer_lines_run_or_their_reason_is_documented() {
    let documented = include_str!("peer_safe_asks.txt");
    let listed: std::collections::BTreeMap<&str, &str> = documented
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(" | "))
        .map(|(id, why)| (id.trim(), why.trim()))
        .collect();
    let mut asks = Vec::new();
    let mut undocumented = Vec::new();
    let mut n = 0;
    let all = vectors();
    for v in all.iter().filter(|v| v.expect.as_deref() == Some("safe")) {
        n += 1;
        let verdict = decide(&v.line, Mode::AutoSafe, &v.allow);
        if verdict.decision != Decision::Run {
            asks.push(v.id.as_str());
            if !listed.contains_key(v.id.as_str()) {
                undocumented.push(format!("{} | {:?} → {}", v.id, v.line, verdict.reason));
            }
        }
    }
    assert_eq!(n, 86, "the safe vectors changed");
    assert!(
        undocumented.is_empty(),
        "safe peer lines that ask without a documented reason:\n{}",
        undocumented.join("\n")
    );
    let stale: Vec<&&str> = listed.keys().filter(|id| !asks.contains(id)).collect();
    assert!(
        stale.is_empty(),
        "listed but now run (remove them): {stale:?}"
    );
    eprintln!(
        "peer safe lines: {} of {n} run, {} ask (documented)",
        n - asks.len(),
        asks.len()
    );
}
