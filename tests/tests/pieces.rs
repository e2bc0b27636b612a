//! Piece fixtures: `tests/pieces/NAME.yaml` with `NAME.json` beside it holding the strict and the
//! lenient findings and, when the piece loads, each movement's effective tools. Names say what to
//! expect: `ok_` valid in both modes, `lenient_` valid only leniently, `err_` invalid in both.
//! `KEYLESS_BLESS=1` rewrites the expected files.

#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

use keyless_core::piece::tools::effective;
use keyless_core::piece::{validate, Strictness};
use keyless_tests::compare_or_bless;
use std::path::Path;

fn fixtures(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("fixture folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn piece_fixtures_match_expected_findings() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pieces");
    let files = fixtures(&dir, "yaml");
    assert!(files.len() >= 20, "only {} piece fixtures", files.len());
    let mut failures = Vec::new();
    for file in files {
        let name = file
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&file).expect("read");
        let strict = validate(&text, Strictness::Strict);
        let lenient = validate(&text, Strictness::Lenient);
        let (want_strict, want_lenient) = match &name {
            n if n.starts_with("ok_") => (true, true),
            n if n.starts_with("lenient_") => (false, true),
            _ => (false, false),
        };
        assert_eq!(
            (strict.ok(), lenient.ok()),
            (want_strict, want_lenient),
            "{name}: strict {:?}\nlenient {:?}",
            strict.errors,
            lenient.errors
        );
        // Strict accepts => lenient accepts the same piece.
        if strict.ok() {
            assert_eq!(strict.piece, lenient.piece, "{name}");
        }
        let tools = lenient.piece.as_ref().map(|p| {
            p.movements
                .iter()
                .map(|m| effective(p, m))
                .collect::<Vec<_>>()
        });
        let actual = serde_json::json!({
            "strict": { "ok": strict.ok(), "errors": strict.errors, "warnings": strict.warnings },
            "lenient": { "ok": lenient.ok(), "errors": lenient.errors, "warnings": lenient.warnings },
            "effective_tools": tools,
        });
        if let Some(diff) = compare_or_bless(&file.with_extension("json"), &actual) {
            failures.push(diff);
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn shipped_pieces_are_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("pieces");
    let files = fixtures(&dir, "yaml");
    assert!(files.len() >= 4);
    for file in files {
        let v = validate(
            &std::fs::read_to_string(&file).expect("read"),
            Strictness::Strict,
        );
        assert!(
            v.ok() && v.warnings.is_empty(),
            "{}: {:?} {:?}",
            file.display(),
            v.errors,
            v.warnings
        );
    }
}
