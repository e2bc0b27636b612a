//! The formatter: a parsed program back to canonical `.as` text. Four-space indents, one
//! statement per line, `//` comments (own-line and end-of-line comments are kept), at most one
//! empty line in a row, objects on one line when they fit in 80 columns, shapes one field per
//! line, numbers as written. Formatting never changes the
//! syntax tree (a property test holds it) and formatting twice changes nothing.

use super::ast::*;
use super::parser::parse;
use super::Diagnostic;
use std::fmt::Write as _;

const WIDTH: usize = 80;
const INDENT: &str = "    ";

/// Formats `src`.
///
/// # Errors
/// The syntax error, when `src` does not parse (nothing is formatted then).
pub fn format_source(src: &str) -> Result<String, Diagnostic> {
    Ok(format_program(&parse(src)?))
}

/// The canonical text of a program.
#[must_use]
pub fn format_program(p: &Program) -> String {
    let mut out = String::new();
    for item in &p.items {
        match item {
            Item::Blank => out.push('\n'),
            Item::Comment { text, .. } => {
                let _ = writeln!(out, "{}", comment(text));
            }
            Item::Import(i) => {
                let _ = write!(
                    out,
                    "import {} {} from {}",
                    i.kind.as_str(),
                    i.name,
                    string(&i.uri)
                );
                eol(&mut out, i.comment.as_deref());
            }
            Item::Agent(a) => agent(&mut out, a),
        }
    }
    out
}

fn comment(text: &str) -> String {
    if text.is_empty() {
        "//".into()
    } else {
        format!("// {text}")
    }
}

fn eol(out: &mut String, c: Option<&str>) {
    if let Some(c) = c {
        out.push(' ');
        out.push_str(&comment(c));
    }
    out.push('\n');
}

fn pad(depth: usize) -> String {
    INDENT.repeat(depth)
}

fn agent(out: &mut String, a: &Agent) {
    if a.main {
        out.push_str("main ");
    }
    out.push_str("agent ");
    if let Some(n) = &a.name {
        out.push_str(n);
        out.push(' ');
    }
    out.push_str("{\n");
    for m in &a.body {
        match m {
            Member::Blank => out.push('\n'),
            Member::Comment { text, .. } => {
                let _ = writeln!(out, "{}{}", pad(1), comment(text));
            }
            Member::Config(c) => {
                let _ = write!(out, "{}{} {}", pad(1), c.key.as_str(), expr(&c.value, 1));
                eol(out, c.comment.as_deref());
            }
            Member::Func(f) => func(out, f),
        }
    }
    out.push_str("}\n");
}

fn func(out: &mut String, f: &Func) {
    out.push_str(&pad(1));
    if f.main {
        out.push_str("main ");
    }
    out.push_str("func");
    if let Some(n) = &f.name {
        out.push(' ');
        out.push_str(n);
    }
    out.push('(');
    if let Some(p) = &f.param {
        out.push_str(&p.name);
        if let Some(fields) = &p.shape {
            out.push(' ');
            out.push_str(&shape_fields(fields, 1));
        }
    }
    out.push_str(") ");
    block(out, &f.body, 1);
    out.push('\n');
}

/// `{`, the statements one level deeper, and `}` at `depth` (no newline after it).
fn block(out: &mut String, body: &[Stmt], depth: usize) {
    out.push_str("{\n");
    for s in body {
        stmt(out, s, depth + 1);
    }
    out.push_str(&pad(depth));
    out.push('}');
}

fn stmt(out: &mut String, s: &Stmt, depth: usize) {
    if matches!(s.kind, StmtKind::Blank) {
        out.push('\n');
        return;
    }
    out.push_str(&pad(depth));
    match &s.kind {
        StmtKind::Blank => {}
        StmtKind::Comment { text } => {
            out.push_str(&comment(text));
            out.push('\n');
            return;
        }
        StmtKind::Config { key, value } => {
            let _ = write!(out, "{} {}", key.as_str(), expr(value, depth));
        }
        StmtKind::Use { expr: e, budget } => {
            let _ = write!(out, "use {}", expr(e, depth));
            if let Some(b) = budget {
                let _ = write!(out, " < {}", expr(b, 0));
            }
        }
        StmtKind::Assign { name, value } => {
            let _ = write!(out, "{name} = {}", expr(value, depth));
        }
        StmtKind::Expr { expr: e } => out.push_str(&expr(e, depth)),
        StmtKind::Return { value } => {
            out.push_str("return");
            if let Some(v) = value {
                out.push(' ');
                out.push_str(&expr(v, depth));
            }
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => if_stmt(out, cond, then, otherwise.as_deref(), depth),
        StmtKind::LoopUntil { cond, cap: c, body } => {
            let _ = write!(out, "loop until {} < {} ", expr(cond, depth), expr(c, 0));
            block(out, body, depth);
        }
        StmtKind::Repeat { count, body } => {
            let _ = write!(out, "repeat * {} ", expr(count, 0));
            block(out, body, depth);
        }
        StmtKind::For {
            var,
            iter,
            cap: c,
            body,
        } => {
            let _ = write!(out, "for {var} in {}", expr(iter, depth));
            if let Some(c) = c {
                let _ = write!(out, " < {}", expr(c, 0));
            }
            out.push(' ');
            block(out, body, depth);
        }
    }
    eol(out, s.comment.as_deref());
}

fn if_stmt(out: &mut String, cond: &Expr, then: &[Stmt], otherwise: Option<&[Stmt]>, depth: usize) {
    let _ = write!(out, "if {} ", expr(cond, depth));
    block(out, then, depth);
    match otherwise {
        None => {}
        // `else if`: an else block holding only an if (with no comment of its own).
        Some([only]) if only.comment.is_none() && matches!(only.kind, StmtKind::If { .. }) => {
            if let StmtKind::If {
                cond,
                then,
                otherwise,
            } = &only.kind
            {
                out.push_str(" else ");
                if_stmt(out, cond, then, otherwise.as_deref(), depth);
            }
        }
        Some(o) => {
            out.push_str(" else ");
            block(out, o, depth);
        }
    }
}

/// A string literal with the lexer's escapes.
#[must_use]
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn key(k: &str) -> String {
    let word = k
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_alphanumeric() || c == '_');
    if word {
        k.to_string()
    } else {
        string(k)
    }
}

fn prec(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary { op: BinOp::Or, .. } => 1,
        ExprKind::Binary { op: BinOp::And, .. } => 2,
        ExprKind::Not { .. } => 3,
        ExprKind::Binary { .. } => 4,
        _ => 5,
    }
}

fn wrap(e: &Expr, at_least: u8, depth: usize) -> String {
    let s = expr(e, depth);
    if prec(e) < at_least {
        format!("({s})")
    } else {
        s
    }
}

/// An expression at `depth` (multi-line parts indent from there).
fn expr(e: &Expr, depth: usize) -> String {
    match &e.kind {
        ExprKind::Str { value } => string(value),
        ExprKind::Num { text } => text.clone(),
        ExprKind::Bool { value } => value.to_string(),
        ExprKind::None => "none".into(),
        ExprKind::Name { name } => name.clone(),
        ExprKind::List { items } => {
            let parts: Vec<String> = items.iter().map(|i| expr(i, depth)).collect();
            format!("[{}]", parts.join(", "))
        }
        ExprKind::Object { entries } => object(entries, depth),
        ExprKind::Field { target, name, .. } => format!("{}.{name}", wrap(target, 5, depth)),
        ExprKind::Index { target, index, .. } => {
            format!("{}[{}]", wrap(target, 5, depth), expr(index, depth))
        }
        ExprKind::Call { callee, args } => {
            let parts: Vec<String> = args.iter().map(|a| expr(a, depth)).collect();
            format!("{}({})", wrap(callee, 5, depth), parts.join(", "))
        }
        ExprKind::Not { operand } => format!("not {}", wrap(operand, 3, depth)),
        ExprKind::Binary { op, left, right } => {
            let p = prec(e);
            // Left-associative: the right side needs a higher precedence to keep its grouping.
            format!(
                "{} {} {}",
                wrap(left, p, depth),
                op.as_str(),
                wrap(right, p + 1, depth)
            )
        }
        ExprKind::Generate { options, shape } => {
            let mut s = format!("generate({}) {{\n", object(options, depth));
            let _ = writeln!(
                s,
                "{}return {}",
                pad(depth + 1),
                shape_fields(shape, depth + 1)
            );
            s.push_str(&pad(depth));
            s.push('}');
            s
        }
    }
}

fn object(entries: &[(String, Expr)], depth: usize) -> String {
    if entries.is_empty() {
        return "{}".into();
    }
    let inline: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}: {}", key(k), expr(v, depth)))
        .collect();
    let one = format!("{{ {} }}", inline.join(", "));
    if !one.contains('\n') && one.len() + depth * INDENT.len() <= WIDTH {
        return one;
    }
    let mut s = String::from("{\n");
    for (k, v) in entries {
        let _ = writeln!(s, "{}{}: {}", pad(depth + 1), key(k), expr(v, depth + 1));
    }
    s.push_str(&pad(depth));
    s.push('}');
    s
}

fn shape_fields(fields: &[Field], depth: usize) -> String {
    if fields.is_empty() {
        return "{}".into();
    }
    let mut s = String::from("{\n");
    for f in fields {
        let _ = writeln!(
            s,
            "{}{} {}",
            pad(depth + 1),
            f.name,
            shape(&f.shape, depth + 1)
        );
    }
    s.push_str(&pad(depth));
    s.push('}');
    s
}

fn shape(s: &Shape, depth: usize) -> String {
    match s {
        Shape::String => "string".into(),
        Shape::Number => "number".into(),
        Shape::Boolean => "boolean".into(),
        Shape::Json => "json".into(),
        Shape::List(None) => "list".into(),
        Shape::List(Some(inner)) => format!("list[{}]", shape(inner, depth)),
        Shape::Object(fields) => shape_fields(fields, depth),
    }
}
