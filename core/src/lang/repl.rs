//! What the `.as` REPL decides (the host only reads lines and prints): whether an input declares
//! (an import or an agent, kept for the rest of the session) or runs (statements, run in a REPL
//! agent whose variables persist from input to input), and how the session changes after a run.
//!
//! An input runs as the body of `main func` of an agent `Repl`, with the session's imports and
//! agents beside it; each variable of earlier inputs is assigned its value first, and the body
//! ends by returning every variable. An input that ends with an expression shows its value, which
//! is also kept as `it`. `use` (at an input's top level) and `model NAME` last for the session:
//! a `use` typed on one line reaches a `generate` typed on the next (the `.as` specification: `use` lasts for
//! its scope, and the session is the REPL's scope).

use super::ast::*;
use super::interp::Entry;
use super::{parser, Diagnostic, Pos};
use serde_json::{Map, Value};

/// The REPL's state between inputs.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// Imports and agents declared so far, as source.
    pub module: String,
    /// Variables and their values.
    pub vars: Map<String, Value>,
    /// The model chosen with `model NAME`.
    pub model: Option<String>,
    /// The `use` statements typed at an input's top level, as source, in order.
    pub uses: Vec<String>,
}

/// What an input is.
#[derive(Debug)]
pub enum Prepared {
    /// Imports or agents: the session's module becomes this source (already checked).
    Declare(String),
    /// Statements: run `program` from `entry`; `shows` says whether the input ends with an
    /// expression whose value to show.
    Run {
        program: Box<Program>,
        entry: Entry,
        shows: bool,
        /// Lines the session put before the input (see [`Prepared::localize`]).
        offset: u32,
    },
}

impl Prepared {
    /// A failure of this run, placed in the input's own lines: a place in the lines the session
    /// put around the input (its declarations, the variables it carries) is dropped.
    #[must_use]
    pub fn localize(offset: u32, mut e: super::interp::RunError) -> super::interp::RunError {
        if e.file.as_deref() == Some(REPL_FILE) {
            e.pos = e.pos.filter(|p| p.line > offset).map(|p| Pos {
                line: p.line - offset,
                column: p.column,
            });
        }
        e
    }
}

/// The name a REPL input runs under.
pub const REPL_FILE: &str = "repl.as";

const REPL_AGENT: &str = "Repl";

fn at() -> Pos {
    Pos { line: 0, column: 0 }
}

fn expr(kind: ExprKind) -> Expr {
    Expr { kind, pos: at() }
}

fn stmt(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        pos: at(),
        comment: None,
    }
}

/// A JSON value as an expression.
#[must_use]
pub fn literal(v: &Value) -> Expr {
    expr(match v {
        Value::Null => ExprKind::None,
        Value::Bool(b) => ExprKind::Bool { value: *b },
        Value::Number(n) => ExprKind::Num {
            text: n.to_string(),
        },
        Value::String(s) => ExprKind::Str { value: s.clone() },
        Value::Array(items) => ExprKind::List {
            items: items.iter().map(literal).collect(),
        },
        Value::Object(m) => ExprKind::Object {
            entries: m.iter().map(|(k, v)| (k.clone(), literal(v))).collect(),
        },
    })
}

/// How deep brackets are still open in `text` (strings and comments skipped): the REPL reads
/// more lines while this is above zero.
#[must_use]
pub fn open_depth(text: &str) -> i64 {
    let mut depth = 0i64;
    let (mut in_str, mut esc, mut comment) = (false, false, false);
    let mut prev = '\0';
    for c in text.chars() {
        if comment {
            if c == '\n' {
                comment = false;
            }
        } else if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                (false, '\n') => in_str = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_str = true,
                '#' => comment = true,
                '/' if prev == '/' => comment = true,
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                _ => {}
            }
        }
        prev = c;
    }
    depth
}

impl Session {
    fn has_main_agent(&self) -> bool {
        parser::parse(&self.module).is_ok_and(|p| p.agents().any(|a| a.main))
    }

    /// Decides what `input` is and prepares it.
    ///
    /// # Errors
    /// The input's syntax or static problem.
    pub fn prepare(&self, input: &str) -> Result<Prepared, Diagnostic> {
        let first = input.trim_start();
        let declares = ["import ", "agent ", "main agent"]
            .iter()
            .any(|k| first.starts_with(k));
        if declares {
            let module = if self.module.is_empty() {
                input.to_string()
            } else {
                format!("{}\n{input}", self.module.trim_end())
            };
            let program = parser::parse(&module)?;
            // Agents alone may miss a main agent; the REPL supplies its own.
            if let Some(d) = super::analyze::analyze(&program)
                .into_iter()
                .find(|d| d.code != crate::diag::Code::AsEntry)
            {
                return Err(d);
            }
            return Ok(Prepared::Declare(module));
        }
        let main = if self.has_main_agent() { "" } else { "main " };
        let model = self
            .model
            .as_ref()
            .map(|m| format!("    model {m}\n"))
            .unwrap_or_default();
        // The session's `use`s open the body: after the variables (which come first, below).
        let uses: String = self.uses.iter().map(|u| format!("        {u}\n")).collect();
        let prefix = format!(
            "{}\n{main}agent {REPL_AGENT} {{\n{model}    main func(input) {{\n{uses}",
            self.module
        );
        // Diagnostics name the input's own lines.
        let offset = u32::try_from(prefix.matches('\n').count()).unwrap_or(0);
        let mine = |mut d: Diagnostic| {
            if let Some(line) = d.line.filter(|l| *l > offset) {
                d.line = Some(line - offset);
                // The end moves with its start (it is never before it).
                if let Some(end) = d.end.as_mut() {
                    end.line = end.line.saturating_sub(offset).max(line - offset);
                }
            }
            d
        };
        let source = format!("{prefix}{input}\n    }}\n}}\n");
        let mut program = parser::parse(&source).map_err(mine)?;
        let Some(Item::Agent(agent)) = program
            .items
            .iter_mut()
            .rev()
            .find(|i| matches!(i, Item::Agent(a) if a.name.as_deref() == Some(REPL_AGENT)))
        else {
            return Err(Diagnostic::at(
                crate::diag::Code::AsSyntax,
                Pos { line: 1, column: 1 },
                "the input did not fit the REPL",
            ));
        };
        let Some(Member::Func(func)) = agent.body.iter_mut().find(|m| matches!(m, Member::Func(_)))
        else {
            return Err(Diagnostic::at(
                crate::diag::Code::AsSyntax,
                Pos { line: 1, column: 1 },
                "the input did not fit the REPL",
            ));
        };
        let mut body: Vec<Stmt> = self
            .vars
            .iter()
            .map(|(name, v)| {
                stmt(StmtKind::Assign {
                    name: name.clone(),
                    value: literal(v),
                })
            })
            .collect();
        let mut user = std::mem::take(&mut func.body);
        while matches!(
            user.last().map(|s| &s.kind),
            Some(StmtKind::Blank | StmtKind::Comment { .. })
        ) {
            user.pop();
        }
        let shows = matches!(user.last().map(|s| &s.kind), Some(StmtKind::Expr { .. }));
        if shows {
            if let Some(last) = user.pop() {
                if let StmtKind::Expr { expr: e } = last.kind {
                    user.push(Stmt {
                        kind: StmtKind::Assign {
                            name: "it".into(),
                            value: e,
                        },
                        ..last
                    });
                }
            }
        }
        let mut names: Vec<String> = self.vars.keys().cloned().collect();
        for s in &user {
            if let StmtKind::Assign { name, .. } = &s.kind {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        body.extend(user);
        body.push(stmt(StmtKind::Return {
            value: Some(expr(ExprKind::Object {
                entries: names
                    .iter()
                    .map(|n| (n.clone(), expr(ExprKind::Name { name: n.clone() })))
                    .collect(),
            })),
        }));
        func.body = body;
        if let Some(d) = super::analyze::analyze(&program).into_iter().next() {
            return Err(mine(d));
        }
        Ok(Prepared::Run {
            program: Box::new(program),
            entry: Entry {
                agent: Some(REPL_AGENT.into()),
                func: None,
                input: Value::Null,
            },
            shows,
            offset,
        })
    }

    /// The session after a run returned `value` (every variable): the variables are kept, and
    /// `model NAME` in the input is remembered. Returns the value to show (`it`), if any.
    pub fn absorb(&mut self, input: &str, value: &Value, shows: bool) -> Option<Value> {
        if let Value::Object(m) = value {
            for (k, v) in m {
                self.vars.insert(k.clone(), v.clone());
            }
        }
        let mut before = String::new();
        for line in input.lines() {
            let top = open_depth(&before) == 0;
            before.push_str(line);
            before.push('\n');
            let t = line.trim();
            if let Some(name) = t.strip_prefix("model ") {
                self.model = Some(name.trim().to_string());
            } else if top && t.starts_with("use ") && !self.uses.iter().any(|u| u == t) {
                self.uses.push(t.to_string());
            }
        }
        shows.then(|| self.vars.get("it").cloned().unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_typed_on_one_line_reaches_the_next_inputs() {
        let mut s = Session {
            module: "import llm M from \"openai://m\"\n".into(),
            ..Session::default()
        };
        let notes = json_text("the notes");
        s.absorb("notes = \"the notes\"", &notes, false);
        s.absorb("use notes < 2k", &Value::Object(Map::new()), false);
        assert_eq!(s.uses, ["use notes < 2k"]);
        // A use inside a block lasts for the block only.
        s.absorb(
            "if true {\n    use other\n}",
            &Value::Object(Map::new()),
            false,
        );
        assert_eq!(s.uses.len(), 1);
        let Ok(Prepared::Run { program, .. }) = s.prepare(
            "model M\ngenerate({ input: \"go\" }) {\n    return {\n        ok boolean\n    }\n}",
        ) else {
            panic!("prepared");
        };
        let text = crate::lang::format::format_program(&program);
        let at_use = text.find("use notes < 2k").unwrap_or(usize::MAX);
        let at_var = text.find("notes = \"the notes\"").unwrap_or(usize::MAX);
        let at_generate = text.find("generate(").unwrap_or(0);
        assert!(at_var < at_use && at_use < at_generate, "{text}");
    }

    fn json_text(v: &str) -> Value {
        let mut m = Map::new();
        m.insert("notes".into(), Value::String(v.into()));
        Value::Object(m)
    }
}
