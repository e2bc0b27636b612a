//! A small positioned YAML tree built from saphyr-parser events, with hard bounds on size, depth,
//! node count and alias expansion, so hostile input costs bounded time and memory.

use saphyr_parser::{Event, Parser, ScalarStyle};

/// Largest piece file accepted.
pub const MAX_INPUT_BYTES: usize = 1 << 20;
/// Most nodes a document may expand to, aliases included.
pub const MAX_NODES: usize = 100_000;
/// Deepest nesting of sequences and mappings.
pub const MAX_DEPTH: usize = 64;

/// A YAML value with the 1-based line and column where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub line: u32,
    pub col: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Keys in document order.
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// The type's name, for messages.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Looks a key up in a mapping.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Why a document could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

fn pos(m: saphyr_parser::Marker) -> (u32, u32) {
    let line = u32::try_from(m.line()).unwrap_or(u32::MAX);
    let col = u32::try_from(m.col() + 1).unwrap_or(u32::MAX);
    (line, col)
}

/// Resolves a plain scalar with the YAML 1.2 core schema.
fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = s.parse::<i64>() {
            return Value::Int(i);
        }
    }
    if let Some(hex) = s.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(hex, 16) {
            return Value::Int(i);
        }
    }
    if let Some(oct) = s.strip_prefix("0o") {
        if let Ok(i) = i64::from_str_radix(oct, 8) {
            return Value::Int(i);
        }
    }
    let looks_float = s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if looks_float {
        if let Ok(f) = s.parse::<f64>() {
            return Value::Float(f);
        }
    }
    match s {
        ".inf" | ".Inf" | ".INF" | "+.inf" => Value::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => Value::Float(f64::NAN),
        _ => Value::Str(s.to_string()),
    }
}

fn count_nodes(n: &Node) -> usize {
    // Iterative, so deep trees cannot overflow the stack.
    let mut stack = vec![n];
    let mut count = 0;
    while let Some(n) = stack.pop() {
        count += 1;
        match &n.value {
            Value::Seq(items) => stack.extend(items.iter()),
            Value::Map(entries) => {
                for (k, v) in entries {
                    stack.push(k);
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    count
}

enum Frame {
    Seq(Node, usize),
    /// A mapping under construction and the key waiting for its value.
    Map(Node, usize, Option<Node>),
}

/// Loads exactly one YAML document.
///
/// # Errors
/// Syntax errors, several documents, and inputs beyond the size, depth or node bounds.
pub fn load(text: &str) -> Result<Node, YamlError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(YamlError {
            line: 1,
            col: 1,
            message: format!("the file is larger than {} KiB", MAX_INPUT_BYTES / 1024),
        });
    }
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: Vec<(usize, Node)> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    let mut nodes = 0usize;
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let (line, col) = pos(*e.marker());
            YamlError {
                line,
                col,
                message: e.info().to_string(),
            }
        })?;
        let (line, col) = pos(span.start);
        let mut complete: Option<(Node, usize)> = None;
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => {}
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError {
                        line,
                        col,
                        message: "a piece file holds one YAML document; remove the extra `---`"
                            .into(),
                    });
                }
            }
            Event::Alias(id) => {
                let Some((_, node)) = anchors.iter().rev().find(|(a, _)| *a == id) else {
                    return Err(YamlError {
                        line,
                        col,
                        message: "alias to an unknown anchor".into(),
                    });
                };
                nodes += count_nodes(node);
                if nodes > MAX_NODES {
                    return Err(YamlError { line, col, message: format!("the document expands to more than {MAX_NODES} nodes (aliases included)") });
                }
                let mut copy = node.clone();
                copy.line = line;
                copy.col = col;
                complete = Some((copy, 0));
            }
            Event::Scalar(value, style, anchor, _tag) => {
                nodes += 1;
                let v = if style == ScalarStyle::Plain {
                    resolve_plain(&value)
                } else {
                    Value::Str(value.into_owned())
                };
                complete = Some((
                    Node {
                        value: v,
                        line,
                        col,
                    },
                    anchor,
                ));
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                nodes += 1;
                if stack.len() >= MAX_DEPTH {
                    return Err(YamlError {
                        line,
                        col,
                        message: format!("nesting deeper than {MAX_DEPTH} levels"),
                    });
                }
                let is_seq = matches!(event, Event::SequenceStart(..));
                let value = if is_seq {
                    Value::Seq(Vec::new())
                } else {
                    Value::Map(Vec::new())
                };
                let node = Node { value, line, col };
                stack.push(if is_seq {
                    Frame::Seq(node, anchor)
                } else {
                    Frame::Map(node, anchor, None)
                });
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Frame::Seq(n, a) | Frame::Map(n, a, _)) => complete = Some((n, a)),
                None => {
                    return Err(YamlError {
                        line,
                        col,
                        message: "unbalanced collection end".into(),
                    })
                }
            },
        }
        if nodes > MAX_NODES {
            return Err(YamlError {
                line,
                col,
                message: format!("the document has more than {MAX_NODES} nodes"),
            });
        }
        if let Some((node, anchor)) = complete {
            if anchor > 0 {
                anchors.push((anchor, node.clone()));
            }
            match stack.last_mut() {
                None => root = Some(node),
                Some(Frame::Seq(seq, _)) => {
                    if let Value::Seq(items) = &mut seq.value {
                        items.push(node);
                    }
                }
                Some(Frame::Map(map, _, pending)) => match pending.take() {
                    None => *pending = Some(node),
                    Some(key) => {
                        if let Value::Map(entries) = &mut map.value {
                            entries.push((key, node));
                        }
                    }
                },
            }
        }
    }
    Ok(root.unwrap_or(Node {
        value: Value::Null,
        line: 1,
        col: 1,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_types() {
        let n = load("name: demo\nmax: 3\nok: true\nlist:\n  - a\n  - 'b'\nempty:\n").unwrap();
        let name = n.get("name").unwrap();
        assert_eq!((name.line, name.col), (1, 7));
        assert_eq!(n.get("max").unwrap().value, Value::Int(3));
        assert_eq!(n.get("ok").unwrap().value, Value::Bool(true));
        let list = n.get("list").unwrap();
        assert_eq!(list.line, 5);
        assert_eq!(n.get("empty").unwrap().value, Value::Null);
        assert_eq!(
            load("x: '3'").unwrap().get("x").unwrap().value,
            Value::Str("3".into())
        );
    }

    #[test]
    fn bounds_hold() {
        // A billion laughs stops at the node budget.
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            doc.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n", p = i - 1));
        }
        let err = load(&doc).unwrap_err();
        assert!(err.message.contains("expands to more than"), "{err:?}");
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(load(&deep).unwrap_err().message.contains("deeper"));
        assert!(load("a: 1\n---\nb: 2\n")
            .unwrap_err()
            .message
            .contains("one YAML document"));
        let err = load("a: [1, 2\nb: 3").unwrap_err();
        assert!(err.line >= 1);
    }
}
