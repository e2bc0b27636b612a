//! The movement graph as Mermaid or Graphviz dot: rules are solid edges labelled with their
//! condition, `default_next` is a dashed edge, and the initial movement is marked.
//!
//! Every movement is its own node whatever characters its name has: nodes are named by position
//! (`m0`, `m1`, …; a sentinel target is `s_NAME` of its index among targets), and names and
//! conditions are escaped as labels for each format.

use super::Piece;
use serde::Serialize;
use std::fmt::Write as _;

/// One line of at most 60 characters.
fn one_line(s: &str) -> String {
    let line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::truncate_chars(&line, 60)
}

/// A Mermaid label inside `"…"`: quotes, angle brackets, `&` and `#` as Mermaid entity codes.
fn mermaid_label(s: &str) -> String {
    let mut out = String::new();
    for c in one_line(s).chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '#' => out.push_str("#35;"),
            c => out.push(c),
        }
    }
    out
}

/// A dot string inside `"…"`: backslashes and quotes escaped.
fn dot_label(s: &str) -> String {
    one_line(s).replace('\\', "\\\\").replace('"', "\\\"")
}

/// The nodes: each movement by position, then each target that is not a movement (a sentinel
/// such as ASK or WAIT_SUBTASKS), in order of first use.
struct Nodes<'a> {
    piece: &'a Piece,
    others: Vec<&'a str>,
}

impl<'a> Nodes<'a> {
    fn new(piece: &'a Piece) -> Self {
        let mut others: Vec<&str> = Vec::new();
        let targets = piece.movements.iter().flat_map(|m| {
            m.rules
                .iter()
                .map(|r| r.next.as_str())
                .chain(m.default_next.as_deref())
        });
        for t in targets.chain(std::iter::once(piece.initial_movement.as_str())) {
            if piece.movement_index(t).is_none() && !others.contains(&t) {
                others.push(t);
            }
        }
        Nodes { piece, others }
    }

    fn id(&self, name: &str) -> String {
        match self.piece.movement_index(name) {
            Some(i) => format!("m{i}"),
            None => format!(
                "s{}",
                self.others.iter().position(|o| *o == name).unwrap_or(0)
            ),
        }
    }
}

/// What a node of the graph is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A movement that may change files.
    Edits,
    /// A movement that cannot change files.
    ReadOnly,
    /// A target that is not a movement (COMPLETE, ABORT, ASK, WAIT_SUBTASKS).
    Sentinel,
}

/// One node: its id (`m0`…, `s0`…), its name, its kind, whether the run starts there, and its
/// layer (the fewest moves from the initial movement; unreachable movements are layer 0).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphNode {
    pub id: String,
    pub name: String,
    pub kind: NodeKind,
    pub initial: bool,
    pub layer: u32,
}

/// One edge: a rule (labelled with its condition) or a `default_next` (`fallback`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub label: String,
    pub fallback: bool,
}

/// The movement graph every view draws: the CLI's mermaid and dot, and the playground's and the
/// piece editor's SVG (through the wasm core).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

/// The graph of `piece`: movements in order, then the other targets in order of first use;
/// edges in each movement's rule order, its `default_next` last.
#[must_use]
pub fn model(piece: &Piece) -> Graph {
    let ids = Nodes::new(piece);
    let mut edges = Vec::new();
    for m in &piece.movements {
        for r in &m.rules {
            edges.push(GraphEdge {
                from: ids.id(&m.name),
                to: ids.id(&r.next),
                label: one_line(&r.condition),
                fallback: false,
            });
        }
        if let Some(d) = &m.default_next {
            edges.push(GraphEdge {
                from: ids.id(&m.name),
                to: ids.id(d),
                label: "default".into(),
                fallback: true,
            });
        }
    }
    let start = ids.id(&piece.initial_movement);
    let mut layer: Vec<(String, u32)> = vec![(start.clone(), 0)];
    let mut i = 0;
    while i < layer.len() {
        let (at, depth) = layer[i].clone();
        for e in edges.iter().filter(|e| e.from == at) {
            if !layer.iter().any(|(n, _)| *n == e.to) {
                layer.push((e.to.clone(), depth + 1));
            }
        }
        i += 1;
    }
    let depth = |id: &str| layer.iter().find(|(n, _)| n == id).map_or(0, |(_, d)| *d);
    let mut nodes: Vec<GraphNode> = piece
        .movements
        .iter()
        .map(|m| {
            let id = ids.id(&m.name);
            GraphNode {
                layer: depth(&id),
                initial: id == start,
                kind: if m.edit {
                    NodeKind::Edits
                } else {
                    NodeKind::ReadOnly
                },
                name: m.name.clone(),
                id,
            }
        })
        .collect();
    for o in &ids.others {
        let id = ids.id(o);
        nodes.push(GraphNode {
            layer: depth(&id),
            initial: id == start,
            kind: NodeKind::Sentinel,
            name: (*o).to_string(),
            id,
        });
    }
    Graph { nodes, edges }
}

/// Mermaid flowchart.
#[must_use]
pub fn mermaid(piece: &Piece) -> String {
    let g = model(piece);
    let mut out = String::from("flowchart TD\n");
    let _ = writeln!(
        out,
        "    start((start)) --> {}",
        Nodes::new(piece).id(&piece.initial_movement)
    );
    for n in &g.nodes {
        let label = mermaid_label(&n.name);
        let _ = match n.kind {
            NodeKind::Sentinel => writeln!(out, "    {}((\"{label}\"))", n.id),
            NodeKind::Edits => writeln!(out, "    {}[\"{label}<br/><small>edits</small>\"]", n.id),
            NodeKind::ReadOnly => {
                writeln!(
                    out,
                    "    {}[\"{label}<br/><small>read-only</small>\"]",
                    n.id
                )
            }
        };
    }
    for e in &g.edges {
        let _ = if e.fallback {
            writeln!(out, "    {} -.->|default| {}", e.from, e.to)
        } else {
            writeln!(
                out,
                "    {} -->|\"{}\"| {}",
                e.from,
                mermaid_label(&e.label),
                e.to
            )
        };
    }
    out
}

/// Graphviz dot.
#[must_use]
pub fn dot(piece: &Piece) -> String {
    let g = model(piece);
    let mut out = format!(
        "digraph \"{}\" {{\n    rankdir=TB;\n    node [shape=box, style=rounded];\n",
        dot_label(&piece.name)
    );
    let _ = writeln!(
        out,
        "    start [shape=circle, label=\"start\"];\n    start -> {};",
        Nodes::new(piece).id(&piece.initial_movement)
    );
    for n in &g.nodes {
        let label = dot_label(&n.name);
        let _ = match n.kind {
            NodeKind::Sentinel => {
                writeln!(out, "    {} [shape=doublecircle, label=\"{label}\"];", n.id)
            }
            NodeKind::Edits => writeln!(out, "    {} [label=\"{label}\\n(edits)\"];", n.id),
            NodeKind::ReadOnly => {
                writeln!(out, "    {} [label=\"{label}\\n(read-only)\"];", n.id)
            }
        };
    }
    for e in &g.edges {
        let _ = if e.fallback {
            writeln!(
                out,
                "    {} -> {} [style=dashed, label=\"default\"];",
                e.from, e.to
            )
        } else {
            writeln!(
                out,
                "    {} -> {} [label=\"{}\"];",
                e.from,
                e.to,
                dot_label(&e.label)
            )
        };
    }
    out.push_str("}\n");
    out
}
