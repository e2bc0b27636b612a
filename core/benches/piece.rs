//! Validation time for a 100-movement piece (strict and lenient), plus effective tools for every
//! movement. Prints figures; asserts nothing about time.

use keyless_core::piece::tools::effective;
use keyless_core::piece::{validate, Strictness};
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn hundred_movements() -> String {
    let mut t = String::from("name: big\ndescription: A piece with 100 movements.\nmax_movements: 500\ninitial_movement: m0\nshared_tools: [Read]\nrequired_mcp: [github]\ntriggers:\n  keywords: [big, test]\nmovements:\n");
    for i in 0..100u32 {
        let _ = write!(
            t,
            "  - name: m{i}\n    edit: {}\n    persona: worker {i}\n    instruction: |\n      Do step {i} of the task carefully.\n      Check the result before moving on.\n    allowed_tools: [Bash, Commit]\n    allowed_commands: [\"cargo test *\", \"git status\"]\n    max_consecutive_revisits: 2\n    default_next: ABORT\n    rules:\n      - condition: step {i} passes\n        next: m{}\n      - condition: step {i} needs rework\n        next: m{}\n",
            i % 2 == 0,
            (i + 1) % 100,
            i.saturating_sub(1)
        );
    }
    t
}

fn time<F: FnMut()>(mut f: F) -> Duration {
    for _ in 0..20 {
        f();
    }
    let mut samples = Vec::new();
    for _ in 0..15 {
        let start = Instant::now();
        let mut n = 0u32;
        while start.elapsed() < Duration::from_millis(40) {
            f();
            n += 1;
        }
        samples.push(start.elapsed() / n);
    }
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let text = hundred_movements();
    let v = validate(&text, Strictness::Strict);
    assert!(v.ok(), "{:?}", v.errors);
    println!(
        "piece: {} bytes, {} lines, 100 movements, 200 rules",
        text.len(),
        text.lines().count()
    );
    let strict = time(|| {
        black_box(validate(black_box(&text), Strictness::Strict));
    });
    let lenient = time(|| {
        black_box(validate(black_box(&text), Strictness::Lenient));
    });
    let Some(piece) = v.piece else { return };
    let tools = time(|| {
        for m in &piece.movements {
            black_box(effective(&piece, m));
        }
    });
    println!("validate (strict):  median {strict:.2?}");
    println!("validate (lenient): median {lenient:.2?}");
    println!("effective tools, all 100 movements: median {tools:.2?}");
}
