//! Property tests for pieces: validation never panics, and strict acceptance implies lenient
//! acceptance of the same piece.

use keyless_core::piece::{validate, Strictness};
use proptest::prelude::*;

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("plan".to_string()),
        Just("review".to_string()),
        Just("COMPLETE".to_string()),
        Just("WAIT_SUBTASKS".to_string()),
        Just("true".to_string()),
        Just("0".to_string()),
        Just("3".to_string()),
        Just("'*'".to_string()),
        Just("6f9619ff-8b86".to_string()),
        Just("[Read, Bash]".to_string()),
        Just("[SshExec]".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("&a [x]".to_string()),
        Just("*a".to_string()),
        "[a-zA-Z0-9 _-]{0,12}",
    ]
}

fn key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "name",
        "description",
        "max_movements",
        "initial_movement",
        "shared_tools",
        "required_mcp",
        "model",
        "edit",
        "persona",
        "instruction",
        "allowed_tools",
        "allowed_commands",
        "allowed_ssh_connections",
        "default_next",
        "max_consecutive_revisits",
        "condition",
        "next",
        "rules",
        "movements",
        "triggers",
        "bogus",
        "1",
    ])
}

/// Generated pieces: a valid skeleton with random fields changed, added or removed.
fn piece_text() -> impl Strategy<Value = String> {
    let movement = (prop::collection::vec((key(), scalar()), 0..5), any::<bool>(), 0usize..3).prop_map(|(extra, edit, n_rules)| {
        let mut m = format!("  - name: m{n_rules}\n    edit: {edit}\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n");
        for (k, v) in extra {
            m.push_str(&format!("    {k}: {v}\n"));
        }
        m.push_str("    rules:\n");
        for r in 0..n_rules {
            m.push_str(&format!("      - condition: c{r}\n        next: m{r}\n"));
        }
        m
    });
    (
        prop::collection::vec(movement, 1..5),
        prop::collection::vec((key(), scalar()), 0..4),
    )
        .prop_map(|(ms, top)| {
            let mut t = String::from(
                "name: gen\ndescription: generated\nmax_movements: 9\ninitial_movement: m0\n",
            );
            for (k, v) in top {
                t.push_str(&format!("{k}: {v}\n"));
            }
            t.push_str("movements:\n");
            for m in ms {
                t.push_str(&m);
            }
            t
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1_000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_any_text(text in "\\PC{0,300}") {
        let _ = validate(&text, Strictness::Strict);
        let _ = validate(&text, Strictness::Lenient);
    }

    #[test]
    fn strict_accepts_implies_lenient_accepts_the_same(text in piece_text()) {
        let strict = validate(&text, Strictness::Strict);
        let lenient = validate(&text, Strictness::Lenient);
        if strict.ok() {
            prop_assert!(lenient.ok(), "{:?}", lenient.errors);
            prop_assert_eq!(&strict.piece, &lenient.piece);
            prop_assert_eq!(&strict.warnings, &lenient.warnings);
        }
        // Lenient never reports more errors than strict.
        prop_assert!(lenient.errors.len() <= strict.errors.len());
        // A finding has the same code in both modes: lenient only lowers some to warnings.
        for f in lenient.errors.iter().chain(&lenient.warnings) {
            prop_assert!(
                strict
                    .errors
                    .iter()
                    .chain(&strict.warnings)
                    .any(|g| g.code == f.code && g.key == f.key && g.line == f.line),
                "lenient {:?} has no strict twin in {:?}",
                f,
                strict.errors
            );
        }
        for f in strict.errors.iter().chain(&strict.warnings) {
            prop_assert!(f.line.is_some_and(|l| l >= 1));
        }
    }

    #[test]
    fn garbled_pieces_never_panic(text in piece_text(), cut in any::<prop::sample::Index>(), junk in "[\\[\\]{}:&*!|>'\" \\n-]{0,8}") {
        let mut t = text.clone();
        let at = cut.index(t.len() + 1);
        let at = (0..=at).rev().find(|i| t.is_char_boundary(*i)).unwrap_or(0);
        t.insert_str(at, &junk);
        let _ = validate(&t, Strictness::Strict);
        let _ = validate(&t, Strictness::Lenient);
    }
}
