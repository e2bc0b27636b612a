//! The movement graph as Mermaid or Graphviz dot: rules are solid edges labelled with their
//! condition, `default_next` is a dashed edge, and the initial movement is marked.

use super::Piece;
use std::fmt::Write as _;

fn label(s: &str) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::truncate_chars(&one_line, 60).replace('"', "'")
}

fn id(name: &str) -> String {
    let mut out = String::from("m_");
    out.extend(
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
    );
    out
}

/// Mermaid flowchart.
#[must_use]
pub fn mermaid(piece: &Piece) -> String {
    let mut out = String::from("flowchart TD\n");
    let _ = writeln!(
        out,
        "    start((start)) --> {}",
        id(&piece.initial_movement)
    );
    for m in &piece.movements {
        let edit = if m.edit { "edits" } else { "read-only" };
        let _ = writeln!(
            out,
            "    {}[\"{}<br/><small>{edit}</small>\"]",
            id(&m.name),
            label(&m.name)
        );
    }
    let mut sentinels: Vec<&str> = Vec::new();
    for m in &piece.movements {
        for r in &m.rules {
            let _ = writeln!(
                out,
                "    {} -->|\"{}\"| {}",
                id(&m.name),
                label(&r.condition),
                id(&r.next)
            );
            if r.next == super::WAIT_SUBTASKS && !sentinels.contains(&super::WAIT_SUBTASKS) {
                sentinels.push(super::WAIT_SUBTASKS);
            }
        }
        if let Some(d) = &m.default_next {
            let _ = writeln!(out, "    {} -.->|default| {}", id(&m.name), id(d));
            if piece.movement(d).is_none() && !sentinels.contains(&d.as_str()) {
                sentinels.push(d);
            }
        }
    }
    for s in sentinels {
        let _ = writeln!(out, "    {}(({s}))", id(s));
    }
    out
}

/// Graphviz dot.
#[must_use]
pub fn dot(piece: &Piece) -> String {
    let mut out = format!(
        "digraph \"{}\" {{\n    rankdir=TB;\n    node [shape=box, style=rounded];\n",
        label(&piece.name)
    );
    let _ = writeln!(
        out,
        "    start [shape=circle, label=\"start\"];\n    start -> {};",
        id(&piece.initial_movement)
    );
    for m in &piece.movements {
        let edit = if m.edit { "edits" } else { "read-only" };
        let _ = writeln!(
            out,
            "    {} [label=\"{}\\n({edit})\"];",
            id(&m.name),
            label(&m.name)
        );
    }
    for m in &piece.movements {
        for r in &m.rules {
            let _ = writeln!(
                out,
                "    {} -> {} [label=\"{}\"];",
                id(&m.name),
                id(&r.next),
                label(&r.condition)
            );
        }
        if let Some(d) = &m.default_next {
            if piece.movement(d).is_none() {
                let _ = writeln!(out, "    {} [shape=doublecircle, label=\"{d}\"];", id(d));
            }
            let _ = writeln!(
                out,
                "    {} -> {} [style=dashed, label=\"default\"];",
                id(&m.name),
                id(d)
            );
        }
    }
    out.push_str("}\n");
    out
}
