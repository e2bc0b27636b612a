//! `.as` programs: every fixture under `tests/as/` is checked (its diagnostics snapshotted with
//! insta) and, when it parses, formatted (snapshotted too); formatting keeps the syntax tree and
//! is idempotent. Property tests: the parser never panics, and format→parse keeps the tree.
#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

use keyless_core::lang::{self, format::format_source, parser::parse};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/as")
        .join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixture folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "as"))
        .collect();
    v.sort();
    v
}

/// The tree without positions: what formatting must keep.
fn shape_of(src: &str) -> Option<serde_json::Value> {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("pos");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(parse(src).ok()?).ok()?;
    strip(&mut v);
    Some(v)
}

fn roundtrip(src: &str) -> Option<String> {
    let formatted = format_source(src).ok()?;
    assert_eq!(
        shape_of(src),
        shape_of(&formatted),
        "formatting changed the tree of:\n{src}\n--- formatted:\n{formatted}"
    );
    assert_eq!(
        format_source(&formatted).ok().as_deref(),
        Some(formatted.as_str()),
        "formatting twice changed:\n{formatted}"
    );
    Some(formatted)
}

/// Every code example of the `.as` specification (fragments wrapped in the program they need) is a valid
/// program, and its canonical form is snapshotted.
#[test]
fn seed_examples_check_and_format() {
    let files = fixtures("seed");
    assert_eq!(files.len(), 26, "one fixture per code example of the seed");
    for f in files {
        let src = std::fs::read_to_string(&f).expect("read");
        let report = lang::check(&src);
        assert!(report.ok, "{}: {:?}", f.display(), report.diagnostics);
        let formatted = roundtrip(&src).expect("formats");
        let name = f
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("x")
            .to_string();
        insta::assert_snapshot!(format!("seed_{name}"), formatted);
    }
}

/// Each rule's refusal: the code, the line and column, the message and the help.
#[test]
fn error_fixtures_name_the_problem() {
    for f in fixtures("errors") {
        let src = std::fs::read_to_string(&f).expect("read");
        let report = lang::check(&src);
        assert!(!report.ok, "{} should be refused", f.display());
        let name = f
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("x")
            .to_string();
        let text: Vec<String> = report.diagnostics.iter().map(ToString::to_string).collect();
        insta::assert_snapshot!(format!("error_{name}"), text.join("\n"));
        // The same program never panics the formatter either way.
        let _ = format_source(&src);
    }
}

#[test]
fn comments_blank_lines_and_spelling_are_normalised_and_kept() {
    let src = "# a file comment\nimport llm Q from \"openai://m\"   # the model\n\n\n\nmain agent {\n  model Q\n  main func(input){\n    x=1 // one\n\n\n    # why\n    use x<4000\n    if x==1 and (x != 2 or not x) { return {a:1,\"b c\":\"d\\n\"} } else if x { return none } else { return [1,2.5] }\n  }\n}\n";
    let out = roundtrip(src).expect("formats");
    insta::assert_snapshot!("normalised", out);
}

#[test]
fn limits_have_their_code() {
    let deep = format!(
        "main agent A {{\n    main func(input) {{\n        x = {}1{}\n        return x\n    }}\n}}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let r = lang::check(&deep);
    assert_eq!(
        r.diagnostics.first().map(|d| d.code.as_str()),
        Some("KA_AS_LIMIT")
    );
    let huge = "// x\n".repeat(300_000);
    let r = lang::check(&huge);
    assert_eq!(
        r.diagnostics.first().map(|d| d.code.as_str()),
        Some("KA_AS_LIMIT")
    );
}

#[test]
fn import_cycles_are_found_across_files() {
    use keyless_core::lang::{analyze::import_cycles, Pos};
    let at = Pos { line: 1, column: 1 };
    let graph = vec![
        ("a.as".to_string(), vec![("b.as".to_string(), at)]),
        ("b.as".to_string(), vec![("c.as".to_string(), at)]),
        (
            "c.as".to_string(),
            vec![("a.as".to_string(), Pos { line: 3, column: 1 })],
        ),
    ];
    let found = import_cycles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "c.as");
    assert_eq!(found[0].1.code.as_str(), "KA_AS_IMPORT_CYCLE");
    assert!(
        found[0].1.message.ends_with("a.as -> b.as -> c.as -> a.as"),
        "{:?}",
        found[0].1
    );
    let acyclic = vec![
        (
            "a.as".to_string(),
            vec![("b.as".to_string(), at), ("c.as".to_string(), at)],
        ),
        ("b.as".to_string(), vec![("c.as".to_string(), at)]),
        ("c.as".to_string(), vec![]),
    ];
    assert!(import_cycles(&acyclic).is_empty());
}

/// Random edits of the seed's programs: never a panic; whatever parses formats to the same tree.
fn seed_sources() -> Vec<String> {
    fixtures("seed")
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn the_parser_never_panics(src in "\\PC{0,200}") {
        let _ = lang::check(&src);
        let _ = format_source(&src);
    }

    #[test]
    fn edited_programs_keep_their_tree_when_formatted(
        pick in 0usize..26,
        edits in prop::collection::vec((0usize..4000, prop::sample::select(vec!["", " ", "\n", "\n\n", "x", "1", "\"", "{", "}", "(", ")", "[", "]", ",", ":", ".", "=", "==", "!=", "<", "*", "#", "//", "and", "not", "k", "2k", "a.b", "return", "\\"])), 0..6),
    ) {
        let sources = seed_sources();
        let mut src = sources[pick % sources.len()].clone();
        for (at, text) in edits {
            let mut i = at % (src.len() + 1);
            while !src.is_char_boundary(i) { i -= 1; }
            src.insert_str(i, text);
        }
        let _ = lang::check(&src);
        let _ = roundtrip(&src);
        // Recovery changes what is reported, never whether the file parses.
        let (tree, found) = lang::parser::parse_all(&src);
        let first = parse(&src);
        prop_assert_eq!(tree.is_some(), first.is_ok());
        prop_assert_eq!(found.is_empty(), first.is_ok());
        prop_assert!(found.len() <= lang::parser::MAX_SYNTAX_PROBLEMS);
        if let (Some(t), Ok(f)) = (tree, first) {
            prop_assert_eq!(t, f);
        }
    }
}

/// A file's syntax slip no longer hides its other problems (three rounds of
/// `as check` to see nine problems): one run reports them all, and what only echoes the slip
/// (a name the skipped line declared) is not reported.
#[test]
fn every_problem_of_a_file_in_one_run() {
    let src = "import llm Q from \"nope://m\"\n\nmain agent {\n    model Q\n    main func(input) {\n        x = = 1\n        y = missing\n        use x\n        use y\n        return { a: 1 }\n    }\n}\n";
    let r = lang::check(src);
    let found: Vec<(Option<u32>, &str)> = r
        .diagnostics
        .iter()
        .map(|d| (d.line, d.code.as_str()))
        .collect();
    assert!(found.contains(&(Some(1), "KA_AS_IMPORT")), "{found:?}");
    assert!(found.contains(&(Some(6), "KA_AS_SYNTAX")), "{found:?}");
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.line == Some(7) && d.message.contains("unknown name \"missing\"")),
        "{:?}",
        r.diagnostics
    );
    // `x` was declared on the skipped line: its use is not a second problem.
    assert!(
        !r.diagnostics.iter().any(|d| d.message.contains("\"x\"")),
        "{:?}",
        r.diagnostics
    );
    // In file order.
    let lines: Vec<Option<u32>> = r.diagnostics.iter().map(|d| d.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
}

/// A misspelt shape type is one problem, not the end of the check (it hid
/// an unknown field, an unknown name and an out-of-range `attempts`).
#[test]
fn a_misspelt_shape_type_hides_nothing_else() {
    let src = "import llm Fast from \"openai://gpt-4.1-mini\"\n\nmain agent A {\n    model Fast\n    main func(input { question string }) {\n        use input.questoin\n        y = undefinedThing\n        return generate({ input: \"Answer\", attempts: 99 }) {\n            return {\n                ok bolean\n            }\n        }\n    }\n}\n";
    let r = lang::check(src);
    let lines: Vec<Option<u32>> = r.diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(
        lines,
        [Some(6), Some(7), Some(8), Some(10)],
        "{:?}",
        r.diagnostics
    );
    assert!(r.diagnostics[3]
        .message
        .contains("\"bolean\" is not a shape type"));
    // The strict parse still refuses the file.
    assert!(lang::parser::parse_all(src).0.is_none());
}
