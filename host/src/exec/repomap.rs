//! Gathers the repository map of a session's first prompt (core's `repomap` ranks and renders
//! it): the files git tracks, their sizes, which changed lately, and the top-level symbols of
//! the source files, read with tree-sitter's tag queries (each grammar's own `tags.scm`, as
//! Aider's repository map reads them).
//!
//! Invariants: nothing runs (the index and the commits are read through libgit2, which runs no
//! hook, filter or fsmonitor); files are read through the workspace's own checks (never past a
//! symlink out of it); the work is bounded (files listed, files parsed, bytes parsed, commits
//! walked), so a huge repository costs the bounds, not its size.

use super::workspace::Workspace;
use keyless_core::repomap::{MapFile, RepoMap};
use std::collections::HashMap;
use tree_sitter_tags::{TagsConfiguration, TagsContext};

/// Most tracked files listed.
const MAX_FILES: usize = 5_000;
/// Most files parsed for their symbols, and the bytes they may hold together.
const MAX_PARSED: usize = 400;
const MAX_PARSED_BYTES: u64 = 8 << 20;
/// A larger file is listed without its symbols.
const MAX_FILE_BYTES: u64 = 512 << 10;
/// Commits walked back from HEAD to find what changed lately.
const RECENT_COMMITS: usize = 30;

/// The languages whose symbols are read, by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Lang {
    Python,
    Rust,
    JavaScript,
    Go,
}

impl Lang {
    fn of(path: &str) -> Option<Self> {
        let ext = path.rsplit_once('.')?.1;
        match ext {
            "py" | "pyi" => Some(Self::Python),
            "rs" => Some(Self::Rust),
            "js" | "mjs" | "cjs" | "jsx" => Some(Self::JavaScript),
            "go" => Some(Self::Go),
            _ => None,
        }
    }

    fn config(self) -> Option<TagsConfiguration> {
        let (language, tags) = match self {
            Self::Python => (
                tree_sitter_python::LANGUAGE.into(),
                tree_sitter_python::TAGS_QUERY,
            ),
            Self::Rust => (
                tree_sitter_rust::LANGUAGE.into(),
                tree_sitter_rust::TAGS_QUERY,
            ),
            Self::JavaScript => (
                tree_sitter_javascript::LANGUAGE.into(),
                tree_sitter_javascript::TAGS_QUERY,
            ),
            Self::Go => (tree_sitter_go::LANGUAGE.into(), tree_sitter_go::TAGS_QUERY),
        };
        TagsConfiguration::new(language, tags, "").ok()
    }

    /// How a definition's kind reads in this language (`def parse`, `fn main`).
    fn word(self, kind: &str) -> String {
        let w = match (self, kind) {
            (Self::Python, "function" | "method") => "def",
            (Self::Rust, "function" | "method") => "fn",
            (Self::Rust, "class") => "type",
            (Self::Rust, "interface") => "trait",
            (Self::Rust, "module") => "mod",
            (Self::Go, "function" | "method") => "func",
            (Self::Go, "class" | "type") => "type",
            (_, "function" | "method") => "function",
            (_, k) => k,
        };
        w.to_string()
    }
}

/// The top-level definitions of one source file: a definition is top-level when it starts a
/// line (methods and nested functions are indented).
fn symbols(
    ctx: &mut TagsContext,
    lang: Lang,
    config: &TagsConfiguration,
    src: &[u8],
) -> Vec<String> {
    let Ok((tags, _)) = ctx.generate_tags(config, src, None) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for tag in tags.flatten() {
        if !tag.is_definition {
            continue;
        }
        let start = tag.range.start;
        let line_start = src[..start.min(src.len())]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        if start != line_start {
            continue;
        }
        let Some(name) = src.get(tag.name_range.clone()) else {
            continue;
        };
        let name = String::from_utf8_lossy(name);
        let line = format!(
            "{} {name}",
            lang.word(config.syntax_type_name(tag.syntax_type_id))
        );
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The map of the workspace's repository, or an empty one outside a repository.
#[must_use]
pub fn gather(ws: &Workspace) -> RepoMap {
    let Some(repo) = super::git::open_here(ws.root()) else {
        return RepoMap::default();
    };
    let Ok(index) = repo.index() else {
        return RepoMap::default();
    };
    let mut files = Vec::new();
    let mut unread = 0usize;
    let mut staged: HashMap<String, u64> = HashMap::new();
    for entry in index.iter() {
        // Gitlinks (submodules) and symlinks have no content of their own here.
        let kind = entry.mode & 0o170_000;
        if kind != 0o100_000 {
            continue;
        }
        if files.len() >= MAX_FILES {
            unread += 1;
            continue;
        }
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        staged.insert(path.clone(), u64::from(entry.file_size));
        files.push(MapFile {
            path,
            ..MapFile::default()
        });
    }
    // What changed lately: the newest commits first, each file ranked by the first that touched
    // it; a file whose size differs from the index's changed in the working tree (0).
    let mut recent: HashMap<String, u32> = HashMap::new();
    if let Ok(mut walk) = repo.revwalk() {
        if walk.push_head().is_ok() {
            for (n, oid) in walk.flatten().take(RECENT_COMMITS).enumerate() {
                let Ok(commit) = repo.find_commit(oid) else {
                    break;
                };
                let Ok(tree) = commit.tree() else { continue };
                let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
                let Ok(diff) = repo.diff_tree_to_tree(parent.as_ref(), Some(&tree), None) else {
                    continue;
                };
                let rank = u32::try_from(n + 1).unwrap_or(u32::MAX);
                for d in diff.deltas() {
                    if let Some(p) = d.new_file().path().and_then(|p| p.to_str()) {
                        recent.entry(p.to_string()).or_insert(rank);
                    }
                }
            }
        }
    }
    let mut configs: HashMap<Lang, Option<TagsConfiguration>> = HashMap::new();
    let mut ctx = TagsContext::new();
    let (mut parsed, mut parsed_bytes) = (0usize, 0u64);
    for f in &mut files {
        // The size git recorded; a source file read below gives its size now.
        f.bytes = staged.get(&f.path).copied().unwrap_or(0);
        f.recent = recent.get(&f.path).copied();
        let Some(lang) = Lang::of(&f.path) else {
            continue;
        };
        if f.bytes > MAX_FILE_BYTES
            || parsed >= MAX_PARSED
            || parsed_bytes.saturating_add(f.bytes) > MAX_PARSED_BYTES
        {
            continue;
        }
        // Through the workspace's checks: never past a symlink out of it.
        let Ok(target) = ws.resolve(&f.path) else {
            continue;
        };
        let Ok(Some(src)) = ws.read_at_most(&target, MAX_FILE_BYTES) else {
            continue;
        };
        parsed += 1;
        parsed_bytes += src.len() as u64;
        let now = src.len() as u64;
        if now != f.bytes {
            // Changed in the working tree since it was staged.
            f.bytes = now;
            f.recent = Some(0);
        }
        if let Some(config) = configs.entry(lang).or_insert_with(|| lang.config()) {
            f.symbols = symbols(&mut ctx, lang, config, &src);
        }
    }
    RepoMap { files, unread }
}
