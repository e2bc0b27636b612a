//! No import circles between files: a module that imports another never ends up imported by it,
//! however long the way round. A circle means neither file can be read, tested or moved without
//! the other; the fix is to move what both need into a module below them.
//!
//! The graph is read from the sources, as a reader follows them:
//! - Rust: every path that starts with `crate::`, `super::` or `self::` (in `use` lines and in
//!   code, with `{…}` groups expanded), resolved to the deepest module file it names; a folder's
//!   face (`a/mod.rs`) counts like any file, so a part that uses its face's names makes a circle
//!   if the face uses the part's. `mod` lines are declarations, not imports, and a face's bare
//!   paths into its own parts (`setup::run` in `cli/mod.rs`) are not read: a face that hands on
//!   its parts' names (`pub use`) would otherwise be in a circle with every part that uses a name
//!   through it. This is how `farm-studio look` reads the house too. Comments are not read, so a
//!   doc link is no import.
//! - TypeScript: every relative `import … from`, `export … from` and `import(…)`.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The Rust crates' source folders and the TypeScript trees, from the repository root.
const RUST_CRATES: &[&str] = &["core/src", "core/wasm/src", "core/abi/src", "host/src"];
const TS_TREES: &[&str] = &["extension/src", "www"];

type Graph = BTreeMap<PathBuf, BTreeSet<PathBuf>>;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "node_modules" || name == "generated" || name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            files(&p, ext, out);
        } else if name.ends_with(ext) && !name.ends_with(".d.ts") {
            out.push(p);
        }
    }
}

/// The module path of a Rust file under its crate's `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The text without `//` comments (a `//` after `:` is a URL in a string, kept).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut cut = line.len();
        let b = line.as_bytes();
        let mut i = 0;
        while i + 1 < b.len() {
            if b[i] == b'/' && b[i + 1] == b'/' && (i == 0 || b[i - 1] != b':') {
                cut = i;
                break;
            }
            i += 1;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

fn ident_at(b: &[u8], mut i: usize) -> (String, usize) {
    let start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    (String::from_utf8_lossy(&b[start..i]).into_owned(), i)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads a path tree at `i` (segments joined by `::`, with `{a, b::c}` groups), appending every
/// whole path to `out`. Returns where it stopped.
fn path_tree(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        i = skip_ws(b, i);
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                i = skip_ws(b, i);
                if i >= b.len() {
                    return i;
                }
                if b[i] == b'}' {
                    return i + 1;
                }
                if b[i] == b',' {
                    i += 1;
                    continue;
                }
                let before = i;
                i = path_tree(b, i, &path, out);
                if i == before {
                    i += 1;
                }
            }
        }
        let (seg, next) = ident_at(b, i);
        if seg.is_empty() {
            out.push(path);
            return i;
        }
        path.push(seg);
        i = next;
        let j = skip_ws(b, i);
        if b.get(j..j + 2) == Some(b"::") {
            i = j + 2;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// The module paths a Rust file names, absolute from its crate's root.
fn rust_refs(module: &[String], text: &str) -> Vec<Vec<String>> {
    let text = without_comments(text);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if at_word && b[i].is_ascii_alphabetic() {
            let (word, next) = ident_at(b, i);
            let starts = matches!(word.as_str(), "crate" | "super" | "self")
                && b.get(next..next + 2) == Some(b"::");
            if !starts {
                i = next.max(i + 1);
                continue;
            }
            // The module the path starts from: `self` of a face (`a/mod.rs`) is `a`, `super`
            // of `a/b.rs` is `a`.
            let mut base: Vec<String> = if word == "crate" {
                Vec::new()
            } else {
                module.to_vec()
            };
            let mut j = next + 2;
            if word == "super" {
                base.pop();
                // `super::super::…`
                loop {
                    let (w, n) = ident_at(b, j);
                    if w == "super" && b.get(n..n + 2) == Some(b"::") {
                        base.pop();
                        j = n + 2;
                    } else {
                        break;
                    }
                }
            }
            let mut paths = Vec::new();
            i = path_tree(b, j, &base, &mut paths);
            out.extend(paths);
            continue;
        }
        i += 1;
    }
    out
}

fn rust_graph(root: &Path, crates: &[&str]) -> Graph {
    let mut graph = Graph::new();
    for krate in crates {
        let src = root.join(krate);
        let mut list = Vec::new();
        files(&src, ".rs", &mut list);
        let modules: BTreeMap<Vec<String>, PathBuf> = list
            .iter()
            .map(|f| (module_of(&src, f), f.clone()))
            .collect();
        for f in &list {
            let module = module_of(&src, f);
            let text = std::fs::read_to_string(f).expect("readable source");
            let edges = graph.entry(f.clone()).or_default();
            for path in rust_refs(&module, &text) {
                // The deepest module file the path names.
                let Some(target) = (0..=path.len())
                    .rev()
                    .find_map(|n| modules.get(&path[..n]).map(|t| (n, t)))
                else {
                    continue;
                };
                if target.1 != f {
                    edges.insert(target.1.clone());
                }
            }
        }
    }
    graph
}

fn ts_graph(root: &Path, trees: &[&str]) -> Graph {
    let mut graph = Graph::new();
    for tree in trees {
        let mut list = Vec::new();
        files(&root.join(tree), ".ts", &mut list);
        for f in &list {
            let text = without_comments(&std::fs::read_to_string(f).expect("readable source"));
            let edges = graph.entry(f.clone()).or_default();
            for spec in ts_specifiers(&text) {
                if !spec.starts_with('.') {
                    continue;
                }
                let base = f.parent().expect("file has a folder").join(&spec);
                let stem = base.to_string_lossy().trim_end_matches(".js").to_string();
                let candidates = [
                    PathBuf::from(format!("{stem}.ts")),
                    base.clone(),
                    base.join("index.ts"),
                ];
                if let Some(t) = candidates.iter().find(|c| c.is_file()) {
                    edges.insert(normalize(t));
                }
            }
        }
    }
    graph.into_iter().map(|(k, v)| (normalize(&k), v)).collect()
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The quoted module names after `from` and inside `import(`.
fn ts_specifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["from", "import("] {
        let mut rest = text;
        while let Some(at) = rest.find(key) {
            let after = rest[at + key.len()..].trim_start();
            let quote = after.chars().next();
            if let Some(q @ ('"' | '\'')) = quote {
                if let Some(end) = after[1..].find(q) {
                    out.push(after[1..=end].to_string());
                }
            }
            rest = &rest[at + key.len()..];
        }
    }
    out
}

/// The circles of a graph (Tarjan's strongly connected components of more than one file).
fn circles(graph: &Graph) -> Vec<Vec<PathBuf>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        on_stack: BTreeSet<&'g PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(ws) = s.graph.get(v) {
            for w in ws {
                let Some((w, _)) = s.graph.get_key_value(w) else {
                    continue;
                };
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn describe(root: &Path, graph: &Graph, found: &[Vec<PathBuf>]) -> String {
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut text = String::new();
    for c in found {
        text.push_str("a circle:\n");
        for a in c {
            for b in graph.get(a).into_iter().flatten().filter(|b| c.contains(b)) {
                text.push_str(&format!("  {} -> {}\n", rel(a), rel(b)));
            }
        }
    }
    text
}

#[test]
fn no_file_is_imported_by_what_it_imports() {
    let root = repo();
    let mut graph = rust_graph(&root, RUST_CRATES);
    graph.extend(ts_graph(&root, TS_TREES));
    assert!(
        graph.len() > 100,
        "the sources were not found under {}",
        root.display()
    );
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "import circles (move what both files need into a module below them):\n{}",
        describe(&root, &graph, &found)
    );
}

/// The check finds what it is for: a circle through a `use` group, one through `super::` in code,
/// one in TypeScript, and no circle between a folder's face and its parts.
#[test]
fn the_check_sees_a_circle() {
    let dir = std::env::temp_dir().join(format!("keyless-circles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("a/src/lib.rs", "pub mod x;\npub mod y;\npub mod z;\n");
    write("a/src/x/mod.rs", "use crate::{y::Y, z};\npub mod inner;\n");
    write(
        "a/src/x/inner.rs",
        "// crate::z is only named here\nuse super::X;\n",
    );
    write(
        "a/src/y.rs",
        "pub struct Y;\nfn f() { super::x::inner::g() }\n",
    );
    write("a/src/z.rs", "use self::q::R;\n");
    write("t/one.ts", "import { two } from \"./two\";\n");
    write("t/two.ts", "import type { one } from './one.js';\n");
    write("t/three.ts", "import { one } from './one';\n");
    let mut graph = rust_graph(&dir, &["a/src"]);
    graph.extend(ts_graph(&dir, &["t"]));
    let found = circles(&graph);
    let names: Vec<Vec<String>> = found
        .iter()
        .map(|c| {
            c.iter()
                .map(|p| p.strip_prefix(&dir).unwrap().display().to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        names,
        vec![
            vec![
                "a/src/x/inner.rs".to_string(),
                "a/src/x/mod.rs".into(),
                "a/src/y.rs".into()
            ],
            vec!["t/one.ts".to_string(), "t/two.ts".into()],
        ],
        "{}",
        describe(&dir, &graph, &found)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
