//! The semantic analyzer: every static rule of the `.as` specification that can be checked without running the
//! program. Diagnostics come sorted by position.

use super::ast::*;
use super::{Diagnostic, Pos};
use crate::diag::Code;
use crate::text::edit_distance;
use std::collections::BTreeMap;

/// What a name is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    Import(ImportKind),
    Agent,
    Func,
    Var,
}

impl Binding {
    fn describe(&self) -> String {
        match self {
            Binding::Import(k) => format!("an imported {}", k.as_str()),
            Binding::Agent => "an agent".into(),
            Binding::Func => "a function".into(),
            Binding::Var => "a variable".into(),
        }
    }
}

/// The general shells `sh://` may never name.
pub const SHELLS: &[&str] = &["sh", "bash", "zsh", "fish", "dash", "ksh", "csh", "tcsh"];

/// The methods each kind of tool and memory offers.
fn methods(kind: ImportKind, uri: &str) -> &'static [&'static str] {
    match kind {
        ImportKind::Memory => &["add", "query"],
        ImportKind::Tool if uri.starts_with("file://") => {
            &["read", "list", "write", "patch", "undo"]
        }
        ImportKind::Tool if uri.starts_with("env://") => &["get"],
        ImportKind::Tool if uri.starts_with("http://") || uri.starts_with("https://") => {
            &["get", "post"]
        }
        ImportKind::Tool if uri.starts_with("mcp://") => &["call", "run"],
        ImportKind::Tool => &["run"],
        _ => &[],
    }
}

/// Every static problem of `program`.
#[must_use]
pub fn analyze(program: &Program) -> Vec<Diagnostic> {
    let mut a = Analyzer {
        agent_model: false,
        input_shape: None,
        out: Vec::new(),
        globals: Vec::new(),
        agents: Vec::new(),
    };
    a.program(program);
    super::by_position(&mut a.out);
    a.out
}

struct Analyzer<'p> {
    out: Vec<Diagnostic>,
    /// Imports and agents: (name, binding, uri).
    globals: Vec<(String, Binding, String)>,
    agents: Vec<&'p Agent>,
    /// The agent being checked sets a model for all its functions.
    agent_model: bool,
    /// The function's input and its declared object shape, while it is not assigned anew.
    input_shape: Option<(String, Vec<Field>)>,
}

/// The name under which a function's own `model` statement is bound in its scopes (no program
/// name can contain it): a `generate` after it, in that block or one inside, has a model.
const MODEL_SET: &str = "\0model";

fn err(code: Code, pos: Pos, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::at(code, pos, msg)
}

/// Why `uri` does not fit an import of `kind`, if it does not.
#[must_use]
pub fn uri_problem(kind: ImportKind, uri: &str) -> Option<(String, String)> {
    let (scheme, rest) = match uri.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, uri),
    };
    let bad = |m: String, h: &str| Some((m, h.to_string()));
    match kind {
        ImportKind::Llm => match scheme {
            Some("openai" | "anthropic") if !rest.is_empty() && !rest.contains('/') => None,
            Some("keyless") if rest == "chat" => None,
            Some("ollama") if rest.split_once('/').is_some_and(|(h, m)| !h.is_empty() && !m.is_empty()) => None,
            _ => bad(
                format!("\"{uri}\" is not a model URI"),
                "use openai://MODEL, anthropic://MODEL, ollama://HOST:PORT/MODEL or keyless://chat (the chat tab keyless-host serve is paired with)",
            ),
        },
        ImportKind::Tool => match scheme {
            Some("sh") => {
                let program = rest.trim_end_matches('/');
                if SHELLS.contains(&program) {
                    bad(
                        format!("\"{uri}\" is a general shell, which a program may never reach"),
                        "import the tool itself (sh://find, sh://grep, sh://sed)",
                    )
                } else if program.is_empty()
                    || !program
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                {
                    bad(
                        format!("\"{uri}\" does not name a program"),
                        "sh://NAME, a program name without a path",
                    )
                } else {
                    None
                }
            }
            Some("file") if rest == "workspace" => None,
            Some("env") if rest == "process" => None,
            Some("http" | "https")
                if !rest.is_empty()
                    && rest.trim_end_matches('/').find('/').is_none()
                    && !rest.contains(['?', '#', '@']) =>
            {
                None
            }
            Some("mcp") if rest.split_once('/').is_some_and(|(s, t)| !s.is_empty() && !t.is_empty()) => None,
            _ => bad(
                format!("\"{uri}\" is not a tool URI"),
                "use sh://PROGRAM, file://workspace, env://process, https://ORIGIN (no path) or mcp://SERVER/TOOL",
            ),
        },
        ImportKind::Memory => match scheme {
            Some("file") if rest.ends_with(".jsonl") && relative(rest) => None,
            Some("sqlite") if relative(rest.split('#').next().unwrap_or("")) && rest.split('#').next().is_some_and(|p| !p.is_empty()) => None,
            _ => bad(
                format!("\"{uri}\" is not a memory URI"),
                "use file://RELATIVE/PATH.jsonl or sqlite://RELATIVE/PATH.db#NAMESPACE",
            ),
        },
        ImportKind::File => {
            if scheme.is_none() && relative(uri) && !uri.is_empty() {
                None
            } else {
                bad(
                    format!("\"{uri}\" is not a relative file path"),
                    "files are read relative to the importing .as file, inside the workspace",
                )
            }
        }
        ImportKind::Agent => {
            if scheme.is_none() && relative(uri) && uri.ends_with(".as") {
                None
            } else {
                bad(
                    format!("\"{uri}\" is not a relative path to an .as file"),
                    "import agent A from \"./a.as\"",
                )
            }
        }
    }
}

fn relative(p: &str) -> bool {
    !p.starts_with('/') && !p.starts_with('\\') && !p.contains(':') && !p.starts_with('~')
}

/// Nearest name, for "did you mean".
fn closest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Scopes while walking a function: the agent's names (imports, agents, its functions), then a
/// stack of frames of (name, binding) for the function's variables.
struct Scopes<'a> {
    base: &'a BTreeMap<String, Binding>,
    frames: Vec<Vec<(String, Binding)>>,
}

impl Scopes<'_> {
    fn find(&self, name: &str) -> Option<&Binding> {
        self.frames
            .iter()
            .rev()
            .flat_map(|f| f.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
            .or_else(|| self.base.get(name))
    }
    fn bind(&mut self, name: &str, b: Binding) {
        if let Some(f) = self.frames.last_mut() {
            f.push((name.to_string(), b));
        }
    }
    fn names(&self) -> Vec<String> {
        self.base
            .keys()
            .cloned()
            .chain(self.frames.iter().flatten().map(|(n, _)| n.clone()))
            .filter(|n| n != MODEL_SET)
            .collect()
    }
}

impl<'p> Analyzer<'p> {
    fn push(&mut self, d: Diagnostic) {
        // One problem, once (a field chain is looked at from each of its links).
        if !self.out.contains(&d) {
            self.out.push(d);
        }
    }

    fn program(&mut self, p: &'p Program) {
        // Globals: imports and agents, one namespace.
        for item in &p.items {
            match item {
                Item::Import(i) => {
                    if let Some((m, h)) = uri_problem(i.kind, &i.uri) {
                        self.push(err(Code::AsImport, i.pos, m).with_help(h));
                    }
                    self.global(&i.name, Binding::Import(i.kind), &i.uri, i.pos);
                }
                Item::Agent(a) => {
                    match &a.name {
                        Some(n) => self.global(n, Binding::Agent, "", a.pos),
                        None if !a.main => self.push(
                            err(
                                Code::AsEntry,
                                a.pos,
                                "only the main agent may leave out its name",
                            )
                            .with_help("agent NAME { … }"),
                        ),
                        None => {}
                    }
                    self.agents.push(a);
                }
                Item::Comment { .. } | Item::Blank => {}
            }
        }
        let mains: Vec<&Agent> = self.agents.iter().copied().filter(|a| a.main).collect();
        for extra in mains.iter().skip(1) {
            self.push(err(
                Code::AsEntry,
                extra.pos,
                "a program has at most one main agent",
            ));
        }
        if self.agents.len() > 1 && mains.is_empty() {
            self.push(
                err(
                    Code::AsEntry,
                    self.agents[1].pos,
                    "a program with several agents must declare its main agent",
                )
                .with_help("write main agent NAME { … } for the one the program starts with"),
            );
        }
        let agents = self.agents.clone();
        for a in agents {
            self.agent(a);
        }
    }

    fn global(&mut self, name: &str, b: Binding, uri: &str, pos: Pos) {
        if self.globals.iter().any(|(n, _, _)| n == name) {
            self.push(err(
                Code::AsName,
                pos,
                format!("\"{name}\" is declared twice (imports and agents share one namespace)"),
            ));
            return;
        }
        self.globals.push((name.to_string(), b, uri.to_string()));
    }

    fn agent(&mut self, a: &Agent) {
        let funcs: Vec<&Func> = a.funcs().collect();
        let mut names: Vec<&str> = Vec::new();
        let mut main_seen = false;
        for f in &funcs {
            if f.main {
                if main_seen {
                    self.push(err(
                        Code::AsEntry,
                        f.pos,
                        "an agent has at most one main func",
                    ));
                }
                main_seen = true;
            }
            match &f.name {
                Some(n) if names.contains(&n.as_str()) => self.push(err(
                    Code::AsName,
                    f.pos,
                    format!("the function \"{n}\" is declared twice in this agent"),
                )),
                Some(n) => names.push(n),
                None if !f.main => self.push(
                    err(
                        Code::AsEntry,
                        f.pos,
                        "only the main func may leave out its name",
                    )
                    .with_help("func NAME(input) { … }"),
                ),
                None => {}
            }
        }
        let mut base: BTreeMap<String, Binding> = BTreeMap::new();
        for (n, b, _) in &self.globals {
            base.insert(n.clone(), b.clone());
        }
        for n in &names {
            base.insert((*n).to_string(), Binding::Func);
        }
        self.agent_model = a
            .body
            .iter()
            .any(|m| matches!(m, Member::Config(c) if c.key == ConfigKey::Model));
        for m in &a.body {
            match m {
                Member::Config(c) => self.config(c.key, &c.value, c.pos),
                Member::Func(f) => self.func(f, &base),
                Member::Comment { .. } | Member::Blank => {}
            }
        }
    }

    fn config(&mut self, key: ConfigKey, value: &Expr, pos: Pos) {
        if key == ConfigKey::Model {
            let ok = matches!(&value.kind, ExprKind::Name { name } if self.globals.iter().any(|(n, b, _)| n == name && *b == Binding::Import(ImportKind::Llm)));
            if !ok {
                let llms: Vec<&str> = self
                    .globals
                    .iter()
                    .filter(|(_, b, _)| *b == Binding::Import(ImportKind::Llm))
                    .map(|(n, _, _)| n.as_str())
                    .collect();
                let near = match &value.kind {
                    ExprKind::Name { name } => closest(name, llms.iter().copied()),
                    _ => None,
                };
                let help = match near {
                    Some(c) => format!("did you mean \"{c}\"?"),
                    None if llms.is_empty() => {
                        "import llm NAME from \"openai://…\", then model NAME".to_string()
                    }
                    None => format!("the imported llms: {}", llms.join(", ")),
                };
                self.push(
                    err(Code::AsName, pos, "model must name an imported llm").with_help(help),
                );
            }
        } else if !matches!(value.kind, ExprKind::Str { .. }) {
            self.push(err(
                Code::AsSyntax,
                value.pos,
                format!("{} takes a string", key.as_str()),
            ));
        }
    }

    fn func(&mut self, f: &Func, base: &BTreeMap<String, Binding>) {
        let mut scopes = Scopes {
            base,
            frames: vec![Vec::new()],
        };
        if let Some(p) = &f.param {
            scopes.bind(&p.name, Binding::Var);
        }
        self.input_shape = f
            .param
            .as_ref()
            .and_then(|p| p.shape.clone().map(|fields| (p.name.clone(), fields)));
        self.block(&f.body, &mut scopes);
        self.input_shape = None;
    }

    /// `input.questoin` against a declared `{ question string }`: a field the shape does not
    /// declare (at any depth of object shapes) is refused, with the nearest declared one.
    fn input_field(&mut self, e: &Expr) {
        let Some((param, fields)) = &self.input_shape else {
            return;
        };
        // The chain of field names from the input, outermost first.
        let mut chain: Vec<(&str, Pos)> = Vec::new();
        let mut at = e;
        while let ExprKind::Field {
            target,
            name,
            at: name_at,
        } = &at.kind
        {
            chain.push((name.as_str(), *name_at));
            at = target;
        }
        if !matches!(&at.kind, ExprKind::Name { name } if name == param) {
            return;
        }
        chain.reverse();
        let mut fields: &[Field] = fields;
        let mut path = param.clone();
        for (name, pos) in chain {
            let Some(f) = fields.iter().find(|f| f.name == name) else {
                let mut d = err(
                    Code::AsName,
                    pos,
                    format!("{path} has no field \"{name}\" (its shape declares {})", {
                        let names: Vec<String> =
                            fields.iter().map(|f| format!("\"{}\"", f.name)).collect();
                        names.join(", ")
                    }),
                );
                if let Some(c) = closest(name, fields.iter().map(|f| f.name.as_str())) {
                    d = d.with_help(format!("did you mean \"{c}\"?"));
                }
                self.push(d);
                return;
            };
            match &f.shape {
                Shape::Object(inner) => {
                    fields = inner;
                    path = format!("{path}.{name}");
                }
                _ => return,
            }
        }
    }

    fn block(&mut self, body: &[Stmt], scopes: &mut Scopes) {
        for s in body {
            self.stmt(s, scopes);
        }
    }

    fn child(&mut self, body: &[Stmt], scopes: &mut Scopes, var: Option<&str>) {
        scopes.frames.push(Vec::new());
        if let Some(v) = var {
            scopes.bind(v, Binding::Var);
        }
        self.block(body, scopes);
        scopes.frames.pop();
    }

    fn stmt(&mut self, s: &Stmt, scopes: &mut Scopes) {
        match &s.kind {
            StmtKind::Config { key, value } => {
                self.config(*key, value, s.pos);
                if *key == ConfigKey::Model {
                    scopes.bind(MODEL_SET, Binding::Var);
                }
            }
            StmtKind::Use { expr, budget } => {
                self.expr(expr, scopes);
                let mut root = expr;
                while let ExprKind::Field { target, .. } | ExprKind::Index { target, .. } =
                    &root.kind
                {
                    root = target;
                }
                if let ExprKind::Name { name } = &root.kind {
                    if let Some(b) = scopes.find(name) {
                        if !matches!(b, Binding::Var | Binding::Import(ImportKind::File)) {
                            self.push(
                                err(
                                    Code::AsUse,
                                    expr.pos,
                                    format!(
                                        "\"{name}\" is {}, which cannot enter a prompt",
                                        b.describe()
                                    ),
                                )
                                .with_help(
                                    "use a value: a variable, a field of one, or an imported file",
                                ),
                            );
                        }
                    }
                }
                if let Some(b) = budget {
                    self.cap(b, "a budget");
                }
            }
            StmtKind::Assign { name, value } => {
                self.expr(value, scopes);
                if self.input_shape.as_ref().is_some_and(|(p, _)| p == name) {
                    // A new value: its shape is no longer the declared one.
                    self.input_shape = None;
                }
                match scopes.find(name) {
                    Some(Binding::Var) => {}
                    Some(b) => self.push(err(
                        Code::AsName,
                        s.pos,
                        format!("\"{name}\" is {} and cannot be assigned", b.describe()),
                    )),
                    None => scopes.bind(name, Binding::Var),
                }
            }
            StmtKind::Expr { expr } => self.expr(expr, scopes),
            StmtKind::Return { value } => {
                if let Some(v) = value {
                    self.expr(v, scopes);
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond, scopes);
                self.child(then, scopes, None);
                if let Some(o) = otherwise {
                    self.child(o, scopes, None);
                }
                // Assigned in every branch: known after the `if` (the interpreter keeps it).
                for name in assigned_in_every_branch(then, otherwise.as_deref()) {
                    if scopes.find(&name).is_none() {
                        scopes.bind(&name, Binding::Var);
                    }
                }
            }
            StmtKind::LoopUntil { cond, cap, body } => {
                self.cap(cap, "a loop cap");
                // The condition is checked before each round: it reads the outer scope.
                self.expr(cond, scopes);
                self.child(body, scopes, None);
            }
            StmtKind::Repeat { count, body } => {
                self.cap(count, "a repeat count");
                self.child(body, scopes, None);
            }
            StmtKind::For {
                var,
                iter,
                cap,
                body,
            } => {
                self.expr(iter, scopes);
                if let Some(c) = cap {
                    self.cap(c, "a loop cap");
                }
                self.child(body, scopes, Some(var));
            }
            StmtKind::Comment { .. } | StmtKind::Blank => {}
        }
    }

    /// Budgets, caps and counts are positive whole numbers written in the program.
    fn cap(&mut self, e: &Expr, what: &str) {
        let ok = matches!(&e.kind, ExprKind::Num { text } if super::whole_number(text).is_some_and(|n| n >= 1));
        if !ok {
            self.push(
                err(
                    Code::AsSyntax,
                    e.pos,
                    format!("{what} must be a whole number of at least 1"),
                )
                .with_help("write it in the program: < 6, < 2k, * 3"),
            );
        }
    }

    fn expr(&mut self, e: &Expr, scopes: &Scopes) {
        match &e.kind {
            ExprKind::Str { .. }
            | ExprKind::Num { .. }
            | ExprKind::Bool { .. }
            | ExprKind::None => {}
            ExprKind::Name { name } => {
                if scopes.find(name).is_none() {
                    let names = scopes.names();
                    let mut d = err(Code::AsName, e.pos, format!("unknown name \"{name}\""));
                    if let Some(c) = closest(name, names.iter().map(String::as_str)) {
                        d = d.with_help(format!("did you mean \"{c}\"?"));
                    } else {
                        d = d.with_help("assign it first, or import it");
                    }
                    self.push(d);
                }
            }
            ExprKind::List { items } => {
                for i in items {
                    self.expr(i, scopes);
                }
            }
            ExprKind::Object { entries } => {
                for (_, v) in entries {
                    self.expr(v, scopes);
                }
            }
            ExprKind::Field { target, .. } => {
                self.input_field(e);
                self.expr(target, scopes);
            }
            ExprKind::Index { target, index, .. } => {
                self.expr(target, scopes);
                self.expr(index, scopes);
            }
            ExprKind::Call { callee, args } => {
                self.call(callee, scopes);
                // Methods (`list.add(x)`, `Memory.add({…})`, `Tool.run({…})`) take one argument.
                if let ExprKind::Field { name: method, .. } = &callee.kind {
                    let agent_call = matches!(&callee.kind, ExprKind::Field { target, .. } if matches!(&target.kind, ExprKind::Name { name } if matches!(scopes.find(name), Some(Binding::Agent | Binding::Import(ImportKind::Agent)))));
                    if !agent_call && args.len() != 1 {
                        self.push(
                            err(
                                Code::AsSyntax,
                                callee.pos,
                                format!("{method} takes exactly one argument, not {}", args.len()),
                            )
                            .with_help(if method == "add" {
                                "list.add(x), Memory.add({ … })"
                            } else {
                                "Tool.method({ … }), Memory.query({ … })"
                            }),
                        );
                    }
                }
                for a in args {
                    self.expr(a, scopes);
                }
            }
            ExprKind::Not { operand } => self.expr(operand, scopes),
            ExprKind::Binary { left, right, .. } => {
                self.expr(left, scopes);
                self.expr(right, scopes);
            }
            ExprKind::Generate { options, .. } => {
                if !self.agent_model && scopes.find(MODEL_SET).is_none() {
                    self.push(
                        err(
                            Code::AsGenerate,
                            e.pos,
                            "generate has no model: neither its agent nor its function before it sets one",
                        )
                        .with_help("model NAME (an imported llm) in the agent, or in the function before the generate"),
                    );
                }
                if !options.iter().any(|(k, _)| k == "input") {
                    self.push(
                        err(Code::AsGenerate, e.pos, "generate needs an input")
                            .with_help("generate({ input: \"what to do\" }) { return { … } }"),
                    );
                }
                for (k, v) in options {
                    if !["input", "limit", "attempts", "debug"].contains(&k.as_str()) {
                        self.push(
                            err(
                                Code::AsGenerate,
                                v.pos,
                                format!("generate has no option \"{k}\""),
                            )
                            .with_help("the options are input, limit, attempts and debug"),
                        );
                    }
                    if k == "attempts" {
                        if let ExprKind::Num { text } = &v.kind {
                            let max = super::MAX_RETRIES;
                            if super::whole_number(text).is_none_or(|n| n > max) {
                                self.push(
                                    err(
                                        Code::AsGenerate,
                                        v.pos,
                                        format!("attempts must be a whole number from 0 to {max}, not {text}"),
                                    )
                                    .with_help("attempts counts retries after a bad answer (default 1)"),
                                );
                            }
                        }
                    }
                    self.expr(v, scopes);
                }
            }
        }
    }

    /// What is called: a function of this agent, an agent (`A(x)`, `A.f(x)`), a tool or memory
    /// method, or a list's `add`.
    fn call(&mut self, callee: &Expr, scopes: &Scopes) {
        match &callee.kind {
            ExprKind::Name { name } => match scopes.find(name) {
                Some(Binding::Func | Binding::Agent | Binding::Import(ImportKind::Agent)) => {}
                Some(b) => self.push(err(
                    Code::AsName,
                    callee.pos,
                    format!("\"{name}\" is {} and cannot be called", b.describe()),
                )),
                None => self.expr(callee, scopes),
            },
            ExprKind::Field {
                target,
                name: method,
                ..
            } => {
                if let ExprKind::Name { name } = &target.kind {
                    match scopes.find(name) {
                        Some(Binding::Import(kind @ (ImportKind::Tool | ImportKind::Memory))) => {
                            let uri = self
                                .globals
                                .iter()
                                .find(|(n, _, _)| n == name)
                                .map(|(_, _, u)| u.clone())
                                .unwrap_or_default();
                            let allowed = methods(*kind, &uri);
                            if !allowed.contains(&method.as_str()) {
                                self.push(
                                    err(
                                        Code::AsName,
                                        callee.pos,
                                        format!("\"{name}\" has no method \"{method}\""),
                                    )
                                    .with_help(format!("its methods: {}", allowed.join(", "))),
                                );
                            }
                            return;
                        }
                        Some(Binding::Agent) => {
                            let known = self.agents.iter().find(|a| a.name.as_deref() == Some(name.as_str())).map(|a| {
                                a.body.iter().any(|m| matches!(m, Member::Func(f) if f.name.as_deref() == Some(method.as_str())))
                            });
                            if known == Some(false) {
                                self.push(err(
                                    Code::AsName,
                                    callee.pos,
                                    format!("agent \"{name}\" has no function \"{method}\""),
                                ));
                            }
                            return;
                        }
                        Some(Binding::Import(ImportKind::Agent)) => return,
                        _ => {}
                    }
                }
                if method != "add" {
                    self.push(
                        err(
                            Code::AsName,
                            callee.pos,
                            format!("\"{method}\" cannot be called here"),
                        )
                        .with_help("calls are F(x), Agent(x), Agent.f(x), Tool.method({…}), Memory.add/query({…}) and list.add(x)"),
                    );
                }
                self.expr(target, scopes);
            }
            _ => self.push(err(Code::AsSyntax, callee.pos, "this cannot be called")),
        }
    }
}

/// One file's agent imports: (imported file, where the import is).
pub type Imports = Vec<(String, Pos)>;

/// The agent imports of a set of `.as` files form a cycle: each file's `import agent` paths, as
/// `(file, [(imported file, position)])`, with paths already resolved by the host, the checked
/// file first. The first import that closes a cycle is reported in the file that holds it.
#[must_use]
pub fn import_cycles(graph: &[(String, Imports)]) -> Vec<(String, Diagnostic)> {
    let mut out = Vec::new();
    let edges = |f: &str| {
        graph
            .iter()
            .find(|(n, _)| n == f)
            .map(|(_, e)| e.clone())
            .unwrap_or_default()
    };
    let Some((root, _)) = graph.first() else {
        return out;
    };
    let mut path: Vec<String> = vec![root.clone()];
    let mut stack: Vec<(String, Imports, usize)> = vec![(root.clone(), edges(root), 0)];
    let mut done: Vec<String> = Vec::new();
    while let Some((file, next, i)) = stack.last_mut() {
        if let Some((to, pos)) = next.get(*i).cloned() {
            *i += 1;
            if let Some(start) = path.iter().position(|p| *p == to) {
                let mut cycle: Vec<String> = path[start..].to_vec();
                cycle.push(to.clone());
                out.push((
                    file.clone(),
                    err(
                        Code::AsImportCycle,
                        pos,
                        format!("agent imports form a cycle: {}", cycle.join(" -> ")),
                    ),
                ));
            } else if !done.contains(&to) {
                path.push(to.clone());
                let e = edges(&to);
                stack.push((to, e, 0));
            }
        } else {
            done.push(file.clone());
            path.pop();
            stack.pop();
        }
    }
    out
}
