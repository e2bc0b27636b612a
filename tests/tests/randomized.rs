//! A stable randomized test: 100,000 replies made by mutating the corpus with a seeded generator.
//! Each must parse without panicking, with line numbers in range, a verdict that agrees with its
//! diagnostics, and a streaming parse that reports nothing the final parse does not.

use keyless_core::check::check;
use keyless_core::{parse, parse_partial, Settings};
use std::collections::BTreeSet;

/// xorshift64*: deterministic, so every CI run tests the same replies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
}

const INSERTS: &[&str] = &[
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

fn mutate(rng: &mut Rng, text: &str) -> String {
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
