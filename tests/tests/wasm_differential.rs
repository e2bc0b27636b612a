//! The wasm32 build of the core, loaded with wasmtime through its C ABI (no JS glue), must answer
//! byte for byte like the native build: on the whole conformance corpus, every piece fixture, the
//! policy table, and 50,000 generated inputs. Any difference is a bug in the core.
//!
//! The generated inputs are four tests of 12,500, each from its own seed, so the test harness
//! runs them on every core; the module is compiled once and each test has its own instance.
#![allow(clippy::expect_used, clippy::panic)] // fixture helpers fail the test loudly

use keyless_abi::{call_json, op};
use keyless_tests::wasm::{workspace_root, WasmCore};
use keyless_tests::{cases, mutate, Rng};

fn input(text: &str, extra: &serde_json::Value) -> String {
    let mut v = serde_json::json!({ "text": text });
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v.to_string()
}

struct Diff {
    wasm: WasmCore,
    compared: usize,
}

impl Diff {
    fn same(&mut self, op: u32, input: &str) {
        let native = call_json(op, input);
        let wasm = self.wasm.call_json(op, input);
        assert_eq!(
            wasm, native,
            "wasm differs from native for op {op} on {input}"
        );
        self.compared += 1;
    }
}

/// The fixed inputs' texts: the conformance corpus's replies, the `.as` fixtures and the
/// policy table's command lines.
struct Fixtures {
    replies: Vec<String>,
    programs: Vec<String>,
    lines: Vec<String>,
}

fn fixtures() -> Fixtures {
    let root = workspace_root();
    let replies = cases()
        .iter()
        .map(|c| std::fs::read_to_string(&c.reply).expect("reply"))
        .collect();
    let mut programs = Vec::new();
    for sub in ["tests/as/seed", "tests/as/errors"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(sub))
            .expect("as fixtures")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "as"))
            .collect();
        paths.sort();
        for p in paths {
            programs.push(std::fs::read_to_string(&p).expect("as"));
        }
    }
    let table = std::fs::read_to_string(root.join("core/tests/policy_table.txt")).expect("table");
    let lines = table
        .lines()
        .filter_map(|l| {
            l.split_once(" | ")
                .map(|(_, c)| c.split("  => ").next().unwrap_or(c).trim().to_string())
        })
        .collect();
    Fixtures {
        replies,
        programs,
        lines,
    }
}

#[test]
fn wasm_answers_exactly_like_native_on_every_fixture() {
    let mut d = Diff {
        wasm: WasmCore::load(),
        compared: 0,
    };
    let f = fixtures();
    // The conformance corpus, full and streaming, in every pace.
    for r in &f.replies {
        for pace in ["Step", "Balanced", "Batch"] {
            d.same(op::CHECK, &input(r, &serde_json::json!({ "pace": pace })));
        }
        d.same(op::PARTIAL, &input(r, &serde_json::json!({})));
        // The overlay's view: while streaming, stopped and quiet, and stuck past the budget.
        for page in [
            serde_json::json!({ "siteStreaming": true, "quietMs": 10 }),
            serde_json::json!({ "siteStreaming": false, "quietMs": 800, "waitedMs": 5000 }),
            serde_json::json!({ "siteStreaming": false, "quietMs": 100_000, "truncationBudgetSeconds": 90 }),
        ] {
            d.same(
                op::FOLLOW,
                &input(r, &serde_json::json!({ "mode": "Ask", "page": page })),
            );
        }
    }
    // The site-adapter override fixtures.
    for e in std::fs::read_dir(workspace_root().join("core/tests/sites")).expect("sites") {
        let p = e.expect("entry").path();
        let text = std::fs::read_to_string(&p).expect("override");
        d.same(op::SITES, &input(&text, &serde_json::json!({})));
    }
    // Every piece fixture and shipped piece, strict and lenient, with tools and graphs.
    let root = workspace_root();
    for dir in [root.join("tests/pieces"), root.join("pieces")] {
        for e in std::fs::read_dir(dir).expect("dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "yaml") {
                let y = std::fs::read_to_string(&p).expect("yaml");
                for lenient in [false, true] {
                    d.same(
                        op::PIECE,
                        &input(&y, &serde_json::json!({ "lenient": lenient })),
                    );
                }
            }
        }
    }
    // Every .as fixture: check and format.
    for text in &f.programs {
        d.same(op::AS_PROGRAM, &input(text, &serde_json::json!({})));
    }
    // The policy table in every mode.
    for l in &f.lines {
        for mode in ["Ask", "AutoSafe", "Auto"] {
            d.same(
                op::POLICY,
                &input(
                    l,
                    &serde_json::json!({ "mode": mode, "allow": ["npm run test *"] }),
                ),
            );
        }
    }
    assert!(d.compared > 500, "only {} fixed inputs", d.compared);
    println!("wasm and native agree on {} fixed inputs", d.compared);
}

/// 12,500 generated inputs from `seed`: mutated replies (full and streaming), mutated command
/// lines and mutated .as programs.
fn generated(seed: u64) {
    let mut d = Diff {
        wasm: WasmCore::load(),
        compared: 0,
    };
    let f = fixtures();
    assert!(!f.replies.is_empty() && !f.programs.is_empty() && !f.lines.is_empty());
    let mut rng = Rng(seed);
    for i in 0..GENERATED_PER_TEST {
        if i % 25 == 24 {
            let k = rng.below(f.programs.len());
            let p = mutate(&mut rng, &f.programs[k]);
            d.same(op::AS_PROGRAM, &input(&p, &serde_json::json!({})));
            continue;
        }
        match i % 10 {
            0..=6 => {
                let k = rng.below(f.replies.len());
                let r = mutate(&mut rng, &f.replies[k]);
                d.same(op::CHECK, &input(&r, &serde_json::json!({})));
            }
            7 => {
                let k = rng.below(f.replies.len());
                let r = mutate(&mut rng, &f.replies[k]);
                if i % 20 == 7 {
                    d.same(op::PARTIAL, &input(&r, &serde_json::json!({})));
                } else {
                    let page = serde_json::json!({ "siteStreaming": rng.below(2) == 0, "quietMs": rng.below(2000) });
                    d.same(
                        op::FOLLOW,
                        &input(&r, &serde_json::json!({ "mode": "Auto", "page": page })),
                    );
                }
            }
            _ => {
                let k = rng.below(f.lines.len());
                let l = mutate(&mut rng, &f.lines[k]);
                d.same(
                    op::POLICY,
                    &input(&l, &serde_json::json!({ "mode": "AutoSafe" })),
                );
            }
        }
    }
    assert_eq!(d.compared, GENERATED_PER_TEST);
}

/// Four tests of this many make the 50,000 generated inputs.
const GENERATED_PER_TEST: usize = 12_500;

#[test]
fn wasm_answers_exactly_like_native_on_generated_inputs_1() {
    generated(0x51ED_270B_A11C_E5ED);
}

#[test]
fn wasm_answers_exactly_like_native_on_generated_inputs_2() {
    generated(0x51ED_270B_A11C_E5EE);
}

#[test]
fn wasm_answers_exactly_like_native_on_generated_inputs_3() {
    generated(0x51ED_270B_A11C_E5EF);
}

#[test]
fn wasm_answers_exactly_like_native_on_generated_inputs_4() {
    generated(0x51ED_270B_A11C_E5F0);
}
