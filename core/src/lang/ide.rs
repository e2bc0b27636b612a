//! What an editor asks about a place in a program: the name there, what it is (for hover), and
//! where it is defined (for "go to definition"). Pure: the language server (`keyless-host as
//! lsp`) converts positions and reads files.

use super::ast::{Agent, Func, Item, Member, Program, Shape};
use super::shape::describe_shape;
use super::Pos;

/// Where a name is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// In this file.
    Here(Pos),
    /// Another file, as the import wrote it (relative to this file).
    File(String),
}

/// A name at a place, what it is, and where it is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    /// Markdown for a hover: the declaration as written, then what it holds.
    pub hover: String,
    pub target: Target,
}

/// The name (letters, digits, `_`) covering the 1-based `line` and `column` (in characters) of
/// `src`, with the column it starts at.
#[must_use]
pub fn word_at(src: &str, line: u32, column: u32) -> Option<(String, u32)> {
    let text = src
        .lines()
        .nth(usize::try_from(line.checked_sub(1)?).ok()?)?;
    let chars: Vec<char> = text.chars().collect();
    let is_word = |c: &char| c.is_alphanumeric() || *c == '_';
    let at = usize::try_from(column.checked_sub(1)?).ok()?;
    // The place may be just after the name (a cursor at its end).
    let at = if chars.get(at).is_some_and(is_word) {
        at
    } else if at > 0 && chars.get(at - 1).is_some_and(is_word) {
        at - 1
    } else {
        return None;
    };
    let start = (0..=at).rev().take_while(|&i| is_word(&chars[i])).last()?;
    let end = (at..chars.len())
        .take_while(|&i| is_word(&chars[i]))
        .last()?
        + 1;
    let word: String = chars[start..end].iter().collect();
    Some((word, u32::try_from(start + 1).ok()?))
}

fn func_line(f: &Func) -> String {
    let name = f.name.as_deref().unwrap_or("main");
    let main = if f.main { "main " } else { "" };
    let param = match &f.param {
        None => String::new(),
        Some(p) => match &p.shape {
            Some(fields) => format!(
                "{} {}",
                p.name,
                describe_shape(&Shape::Object(fields.clone()))
            ),
            None => p.name.clone(),
        },
    };
    format!("{main}func {name}({param})")
}

fn agent_hover(a: &Agent) -> String {
    let name = a.name.as_deref().unwrap_or("(unnamed)");
    let main = if a.main { "main " } else { "" };
    let mut lines = vec![format!("{main}agent {name}")];
    for m in &a.body {
        match m {
            Member::Config(c) => {
                let value = match &c.value.kind {
                    super::ast::ExprKind::Str { value } => format!("{value:?}"),
                    super::ast::ExprKind::Name { name } => name.clone(),
                    _ => "…".into(),
                };
                lines.push(format!("    {} {value}", c.key.as_str()));
            }
            Member::Func(f) => lines.push(format!("    {}", func_line(f))),
            _ => {}
        }
    }
    format!("```as\n{}\n```", lines.join("\n"))
}

/// What the name at `line`/`column` (1-based, characters) is: an import, an agent or a function
/// of this file.
#[must_use]
pub fn lookup(src: &str, program: &Program, line: u32, column: u32) -> Option<Found> {
    let (name, _) = word_at(src, line, column)?;
    for item in &program.items {
        match item {
            Item::Import(i) if i.name == name => {
                let hover = format!(
                    "```as\nimport {} {} from {:?}\n```",
                    i.kind.as_str(),
                    i.name,
                    i.uri
                );
                let target = match i.kind {
                    super::ast::ImportKind::Agent | super::ast::ImportKind::File => {
                        Target::File(i.uri.clone())
                    }
                    _ => Target::Here(i.pos),
                };
                return Some(Found {
                    name,
                    hover,
                    target,
                });
            }
            Item::Agent(a) if a.name.as_deref() == Some(name.as_str()) => {
                return Some(Found {
                    hover: agent_hover(a),
                    target: Target::Here(a.pos),
                    name,
                });
            }
            _ => {}
        }
    }
    for a in program.agents() {
        for f in a.funcs() {
            if f.name.as_deref() == Some(name.as_str()) {
                let agent = a.name.as_deref().unwrap_or("main");
                return Some(Found {
                    hover: format!("```as\n{}\n```\nin agent {agent}", func_line(f)),
                    target: Target::Here(f.pos),
                    name,
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "import agent Exec from \"./exec.as\"\nimport llm Fast from \"openai://m\"\n\nmain agent Planner {\n    model Fast\n    role \"Plans\"\n\n    func step(input { goal string }) {\n        return Exec(input)\n    }\n\n    main func(input) {\n        return step(input)\n    }\n}\n";

    #[test]
    fn names_resolve_to_their_declarations() {
        let p = super::super::parser::parse(SRC).expect("parses");
        // `Exec` in `return Exec(input)`: the imported file.
        let f = lookup(SRC, &p, 9, 17).expect("found");
        assert_eq!(f.target, Target::File("./exec.as".into()));
        assert!(
            f.hover.contains("import agent Exec from \"./exec.as\""),
            "{}",
            f.hover
        );
        // `step` in `return step(input)`: the function, with its input's shape.
        let f = lookup(SRC, &p, 13, 20).expect("found");
        assert_eq!(f.target, Target::Here(Pos { line: 8, column: 5 }));
        assert!(
            f.hover.contains("func step(input { \"goal\": string })"),
            "{}",
            f.hover
        );
        // `Fast` after `model`: the import; `Planner`: the agent with its settings.
        assert_eq!(
            lookup(SRC, &p, 5, 11).expect("found").target,
            Target::Here(Pos { line: 2, column: 1 })
        );
        let f = lookup(SRC, &p, 4, 13).expect("found");
        assert!(
            f.hover
                .contains("main agent Planner\n    model Fast\n    role \"Plans\""),
            "{}",
            f.hover
        );
        // Not a name, or an unknown one.
        assert_eq!(lookup(SRC, &p, 3, 1), None);
        assert_eq!(lookup(SRC, &p, 9, 24), lookup(SRC, &p, 9, 22));
    }
}
