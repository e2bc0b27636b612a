//! The docs link only to files that exist: every relative link in README.md and docs/*.md
//! (a `](path)` or `](path#anchor)`) names a file or folder of the repository.

use keyless_tests::wasm::workspace_root;
use std::path::Path;

fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].trim();
        rest = &rest[end..];
        let target = target.split_whitespace().next().unwrap_or("");
        if target.is_empty()
            || target.starts_with('#')
            || target.contains("://")
            || target.starts_with("mailto:")
        {
            continue;
        }
        out.push(target.split('#').next().unwrap_or(target).to_string());
    }
    out
}

#[test]
fn relative_links_in_the_docs_name_files_that_exist() {
    let root = workspace_root();
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs"))
        .expect("docs")
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "md") {
            files.push(e.path());
        }
    }
    let mut broken = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        let dir = f.parent().unwrap_or(Path::new("."));
        for l in links(&text) {
            if !dir.join(&l).exists() {
                broken.push(format!(
                    "{}: {l}",
                    f.strip_prefix(&root).unwrap_or(f).display()
                ));
            }
        }
        // Repository paths named in the text (`host/src/exec/undo.rs`, `docs/api.md`).
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c))) {
            let word = word.trim_end_matches('.');
            let top = [
                "docs/",
                "host/",
                "core/",
                "www/",
                "extension/",
                "xtask/",
                "dist/",
            ];
            let ext = [".md", ".rs", ".ts", ".mjs", ".sh"];
            if top.iter().any(|t| word.starts_with(t))
                && ext.iter().any(|e| word.ends_with(e))
                && !word.contains('*')
                && !root.join(word).exists()
            {
                broken.push(format!(
                    "{}: {word}",
                    f.strip_prefix(&root).unwrap_or(f).display()
                ));
            }
        }
    }
    assert!(files.len() > 5, "found the docs");
    assert!(
        broken.is_empty(),
        "links to files that do not exist:\n{}",
        broken.join("\n")
    );
}
