//! Where pieces come from: `<workspace>/.agent/pieces/`, the user's `keyless/pieces/`, then the
//! pieces that ship inside the binary (the repository's `pieces/` folder).

use keyless_core::piece::{validate, Strictness};
use std::path::{Path, PathBuf};

/// The pieces that ship with keyless.
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "plan-implement-review",
        include_str!("../../pieces/plan-implement-review.yaml"),
    ),
    ("review-only", include_str!("../../pieces/review-only.yaml")),
    ("fix-loop", include_str!("../../pieces/fix-loop.yaml")),
    ("ssh-ops", include_str!("../../pieces/ssh-ops.yaml")),
];

fn dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut v = vec![workspace.join(".agent").join("pieces")];
    if let Some(p) = crate::cli::user_config_path() {
        v.push(p.with_file_name("pieces"));
    }
    v
}

/// A piece's YAML and where it came from, by name.
#[must_use]
pub fn lookup(workspace: &Path, name: &str) -> Option<(String, String)> {
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return None;
    }
    for d in dirs(workspace) {
        let p = d.join(format!("{name}.yaml"));
        if let Ok(text) = std::fs::read_to_string(&p) {
            return Some((text, p.display().to_string()));
        }
    }
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, y)| ((*y).to_string(), "built-in".to_string()))
}

/// Every available piece that loads: (name, description, source).
#[must_use]
pub fn list(workspace: &Path) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut add = |name: String, yaml: &str, source: String| {
        if out.iter().any(|(n, _, _)| *n == name) {
            return;
        }
        if let Some(p) = validate(yaml, Strictness::Lenient).piece {
            out.push((name, p.description, source));
        }
    };
    for d in dirs(workspace) {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for f in files {
            if let (Some(stem), Ok(text)) = (
                f.file_stem().map(|s| s.to_string_lossy().into_owned()),
                std::fs::read_to_string(&f),
            ) {
                add(stem, &text, f.display().to_string());
            }
        }
    }
    for (n, y) in BUILT_IN {
        add((*n).to_string(), y, "built-in".into());
    }
    out
}
