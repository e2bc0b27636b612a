//! A stable randomized test: 100,000 replies made by mutating the corpus with a seeded generator.
//! Each must parse without panicking, with line numbers in range, a verdict that agrees with its
//! diagnostics, and a streaming parse that reports nothing the final parse does not.

use keyless_core::check::check;
use keyless_core::{parse, parse_partial, Settings};
use keyless_tests::{mutate, Rng};
use std::collections::BTreeSet;

#[test]
fn hundred_thousand_mutated_replies() {
    let seeds: Vec<String> = keyless_tests::cases()
        .iter()
        .map(|c| std::fs::read_to_string(&c.reply).expect("reply"))
        .filter(|t| t.len() < 4_000)
        .collect();
    let settings = Settings::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut accepted, mut rejected) = (0u32, 0u32);
    for i in 0..100_000 {
        let seed = &seeds[rng.below(seeds.len())];
        let text = mutate(&mut rng, seed);
        let full = parse(&text, &settings.limits);
        let n_lines = u32::try_from(text.split('\n').count()).unwrap_or(u32::MAX);
        for d in &full.diagnostics {
            if let Some(line) = d.line {
                assert!(
                    (1..=n_lines).contains(&line),
                    "case {i}: line {line} of {n_lines}\n{text}"
                );
            }
        }
        let report = check(&text, &settings);
        assert_eq!(report.ok, full.ok(), "case {i}");
        assert_eq!(report.correction.is_some(), !full.ok(), "case {i}");
        if full.ok() {
            accepted += 1;
            assert!(report.control.is_some());
        } else {
            rejected += 1;
        }
        // Every tenth case: the streaming parse of each prefix reports only certain problems.
        if i % 10 == 0 && full.suppressed == 0 {
            let final_keys: BTreeSet<_> =
                full.diagnostics.iter().map(|d| (d.code, d.line)).collect();
            for (idx, _) in text.match_indices('\n') {
                let partial = parse_partial(&text[..=idx], &settings.limits);
                for d in &partial.diagnostics {
                    assert!(
                        final_keys.contains(&(d.code, d.line)),
                        "case {i}: partial {d:?} not in final\n{text}"
                    );
                }
            }
        }
    }
    // The mutations must exercise both verdicts, or the test proves little.
    assert!(
        accepted > 5_000 && rejected > 50_000,
        "accepted {accepted}, rejected {rejected}"
    );
}
