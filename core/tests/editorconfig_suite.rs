//! The official EditorConfig core tests (`tests/peer-suites/editorconfig/`, see its SOURCE.md)
//! through `textfile::editorconfig_eol`. keyless reads only `end_of_line`, so each check asks one
//! section: a variant of the config files keeps every line but drops every property except that
//! section's, whose property lines become `end_of_line = crlf`; the section applies to the path
//! exactly when the answer is CRLF. Every case must agree.
#![allow(clippy::expect_used, clippy::panic)]

use keyless_core::textfile::{editorconfig_eol, Eol};
use std::path::PathBuf;

#[derive(serde::Deserialize)]
struct Suite {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    path: String,
    chain: Vec<Link>,
    checks: Vec<Check>,
}

#[derive(serde::Deserialize)]
struct Link {
    file: String,
    dir: String,
}

#[derive(serde::Deserialize)]
struct Check {
    config: usize,
    section: usize,
    header: String,
    applies: bool,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/peer-suites/editorconfig")
}

/// `text` with every property dropped except those of section `keep` (0-based), which become
/// `end_of_line = crlf`; the preamble (before the first section) and comments stay.
fn variant(text: &str, keep: Option<usize>) -> String {
    let mut section: Option<usize> = None;
    let mut out = Vec::new();
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            out.push(line.to_string());
        } else if t.starts_with('[') {
            section = Some(section.map_or(0, |s| s + 1));
            out.push(line.to_string());
        } else if section.is_none() {
            out.push(line.to_string());
        } else if section == keep {
            let indent = &line[..line.len() - line.trim_start().len()];
            let eol = if line.ends_with("\r\n") { "\r\n" } else { "\n" };
            out.push(format!("{indent}end_of_line = crlf{eol}"));
        }
    }
    out.concat()
}

#[test]
fn the_official_editorconfig_tests_agree() {
    let suite: Suite = serde_json::from_str(
        &std::fs::read_to_string(root().join("cases.json")).expect("cases.json"),
    )
    .expect("json");
    let mut failed = Vec::new();
    let mut checks = 0;
    for case in &suite.cases {
        let texts: Vec<String> = case
            .chain
            .iter()
            .map(|l| std::fs::read_to_string(root().join("in").join(&l.file)).expect("config"))
            .collect();
        let mut wrong = Vec::new();
        for c in &case.checks {
            checks += 1;
            let variants: Vec<String> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| variant(t, (i == c.config).then_some(c.section)))
                .collect();
            let chain: Vec<(&str, &str)> = case
                .chain
                .iter()
                .zip(&variants)
                .map(|(l, t)| (l.dir.as_str(), t.as_str()))
                .collect();
            let applies = editorconfig_eol(&chain, &case.path) == Some(Eol::CrLf);
            if applies != c.applies {
                wrong.push(format!(
                    "{} (config {}) applies={}",
                    c.header, c.config, c.applies
                ));
            }
        }
        if case.checks.is_empty() {
            // The direct checks: `end_of_line = CRLF` is crlf (values are case-insensitive); the
            // empty, newline-only and comment-only configs set nothing.
            let want = (case.name == "lowercase_values1_ML").then_some(Eol::CrLf);
            let chain: Vec<(&str, &str)> = case
                .chain
                .iter()
                .zip(&texts)
                .map(|(l, t)| (l.dir.as_str(), t.as_str()))
                .collect();
            let got = editorconfig_eol(&chain, &case.path);
            if got != want {
                wrong.push(format!("end_of_line {got:?}, not {want:?}"));
            }
        }
        if !wrong.is_empty() {
            failed.push(format!(
                "{} ({}): {}",
                case.name,
                case.path,
                wrong.join("; ")
            ));
        }
    }
    println!(
        "figure: EditorConfig core tests: {} of {} cases agree ({checks} section checks)",
        suite.cases.len() - failed.len(),
        suite.cases.len()
    );
    assert!(
        failed.is_empty(),
        "{} cases differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// The suite's direct checks: values are case-insensitive, and `unset` clears an outer value.
#[test]
fn values_are_case_insensitive_and_unset_clears() {
    assert_eq!(
        editorconfig_eol(&[("", "[*]\nend_of_line = CRLF\n")], "a.txt"),
        Some(Eol::CrLf)
    );
    let outer = "root = true\n[*.txt]\nend_of_line = crlf\n";
    let inner = "[end_of_line.txt]\nend_of_line = unset\n";
    let chain = [("", outer), ("unset", inner)];
    assert_eq!(editorconfig_eol(&chain, "unset/end_of_line.txt"), None);
    assert_eq!(editorconfig_eol(&chain, "unset/other.txt"), Some(Eol::CrLf));
}
