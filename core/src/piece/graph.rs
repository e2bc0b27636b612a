//! The movement graph as Mermaid or Graphviz dot: rules are solid edges labelled with their
//! condition, `default_next` is a dashed edge, and the initial movement is marked.
//!
//! Every movement is its own node whatever characters its name has: nodes are named by position
//! (`m0`, `m1`, …; a sentinel target is `s_NAME` of its index among targets), and names and
//! conditions are escaped as labels for each format.

use super::Piece;
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

/// Mermaid flowchart.
#[must_use]
pub fn mermaid(piece: &Piece) -> String {
    let nodes = Nodes::new(piece);
    let mut out = String::from("flowchart TD\n");
    let _ = writeln!(
        out,
        "    start((start)) --> {}",
        nodes.id(&piece.initial_movement)
    );
    for m in &piece.movements {
        let edit = if m.edit { "edits" } else { "read-only" };
        let _ = writeln!(
            out,
            "    {}[\"{}<br/><small>{edit}</small>\"]",
            nodes.id(&m.name),
            mermaid_label(&m.name)
        );
    }
    for s in &nodes.others {
        let _ = writeln!(out, "    {}((\"{}\"))", nodes.id(s), mermaid_label(s));
    }
    for m in &piece.movements {
        for r in &m.rules {
            let _ = writeln!(
                out,
                "    {} -->|\"{}\"| {}",
                nodes.id(&m.name),
                mermaid_label(&r.condition),
                nodes.id(&r.next)
            );
        }
        if let Some(d) = &m.default_next {
            let _ = writeln!(
                out,
                "    {} -.->|default| {}",
                nodes.id(&m.name),
                nodes.id(d)
            );
        }
    }
    out
}

/// Graphviz dot.
#[must_use]
pub fn dot(piece: &Piece) -> String {
    let nodes = Nodes::new(piece);
    let mut out = format!(
        "digraph \"{}\" {{\n    rankdir=TB;\n    node [shape=box, style=rounded];\n",
        dot_label(&piece.name)
    );
    let _ = writeln!(
        out,
        "    start [shape=circle, label=\"start\"];\n    start -> {};",
        nodes.id(&piece.initial_movement)
    );
    for m in &piece.movements {
        let edit = if m.edit { "edits" } else { "read-only" };
        let _ = writeln!(
            out,
            "    {} [label=\"{}\\n({edit})\"];",
            nodes.id(&m.name),
            dot_label(&m.name)
        );
    }
    for s in &nodes.others {
        let _ = writeln!(
            out,
            "    {} [shape=doublecircle, label=\"{}\"];",
            nodes.id(s),
            dot_label(s)
        );
    }
    for m in &piece.movements {
        for r in &m.rules {
            let _ = writeln!(
                out,
                "    {} -> {} [label=\"{}\"];",
                nodes.id(&m.name),
                nodes.id(&r.next),
                dot_label(&r.condition)
            );
        }
        if let Some(d) = &m.default_next {
            let _ = writeln!(
                out,
                "    {} -> {} [style=dashed, label=\"default\"];",
                nodes.id(&m.name),
                nodes.id(d)
            );
        }
    }
    out.push_str("}\n");
    out
}
