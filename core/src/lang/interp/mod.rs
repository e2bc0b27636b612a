//! The tree-walking interpreter of `.as` programs. Pure: every effect (the model, tools, memory,
//! file imports, agent imports) goes through [`Effects`], which the host implements (and tests
//! script). It returns the entry function's value and a nested [`Trace`].
//!
//! Scopes (the `.as` specification and the decisions in docs/language.md):
//! - a function call starts a fresh scope: the callee sees its parameter, its agent's names and
//!   configuration, and nothing of the caller (no variables, no `use`);
//! - every loop iteration and each `if` branch is a child scope: assigning a variable that exists
//!   outside updates it there, a new one is dropped when the scope ends; `use` declarations are
//!   inherited by child scopes and dropped with the scope that made them;
//! - `use expr < budget` is deferred: the expression is evaluated when a prompt is built;
//! - a loop that reaches its cap ends (a `cap` trace event says so); it is not an error.

use super::ast::*;
use super::shape::{check_object, describe_shape, kind_of, read_answer};
use super::{analyze, parser, whole_number, Pos, MAX_RETRIES};
use crate::diag::Code;
use serde::Serialize;
use serde_json::{Map, Value};
use std::rc::Rc;

mod calls;
mod load;
mod memory;
mod types;

use calls::*;
pub use types::*;

/// How deep agent and function calls may nest.
pub const MAX_CALL_DEPTH: u32 = 64;
/// How many statements a run may execute.
pub const MAX_STEPS: u64 = 5_000_000;
/// How many `.as` files a program may load through `import agent`.
pub const MAX_MODULES: usize = 64;
/// About how much memory a run's values may take, all together: its variables, the values it is
/// building, its imported files and its trace. A program past it fails with `KA_AS_LIMIT` instead
/// of exhausting the machine (`repeat * 40 { x = [x, x] }` would need a terabyte).
pub const MAX_VALUE_BYTES: usize = 64 << 20;
/// How deep a value may nest (lists in lists in objects …): deeper ones cannot even be dropped
/// safely.
pub const MAX_NESTING: usize = 128;
/// A value larger than this is kept in the trace as a short description.
pub const MAX_TRACE_VALUE_BYTES: usize = 64 << 10;

struct Module {
    key: String,
    program: Rc<Program>,
    /// Agent imports: name → (module, agent index).
    agent_imports: Vec<(String, usize, usize)>,
    /// File imports read so far: name → value.
    files: Vec<(String, Value)>,
}

#[derive(Clone)]
struct UseDecl {
    expr: Expr,
    budget: Option<u64>,
}

/// A variable: its value, and the value's size and depth ([`measure`]).
struct Var {
    name: String,
    value: Value,
    size: usize,
    depth: usize,
}

#[derive(Default)]
struct Frame {
    vars: Vec<Var>,
    uses: Vec<UseDecl>,
    config: Vec<(ConfigKey, Value)>,
}

struct Ctx {
    module: usize,
    agent: usize,
    frames: Vec<Frame>,
}

enum Flow {
    Normal,
    Return(Value),
}

/// A failure inside the interpreter, before the stack is attached.
struct Fail(Code, String);

type R<T> = Result<T, Fail>;

fn fail<T>(code: Code, msg: impl Into<String>) -> R<T> {
    Err(Fail(code, msg.into()))
}

fn rt<T>(msg: impl Into<String>) -> R<T> {
    fail(Code::AsRuntime, msg)
}

impl From<EffectError> for Fail {
    fn from(e: EffectError) -> Self {
        Fail(e.code, e.message)
    }
}

/// Runs `source` (the module `key`) from `entry`.
///
/// # Errors
/// The first static problem of any loaded file, or the runtime failure, with the call stack.
pub fn run(
    key: &str,
    source: &str,
    entry: &Entry,
    effects: &mut dyn Effects,
) -> (Result<Value, RunError>, Trace) {
    match parser::parse(source) {
        Ok(program) => run_program(key, program, entry, effects),
        Err(d) => (
            Err(RunError {
                code: d.code,
                message: d.message.clone(),
                stack: Vec::new(),
                file: Some(key.to_string()),
                pos: d.pos(),
                help: d.help,
            }),
            Trace { events: Vec::new() },
        ),
    }
}

/// Runs a program already parsed (the REPL builds its own): checked, then run like [`run`].
///
/// # Errors
/// As [`run`].
pub fn run_program(
    key: &str,
    program: Program,
    entry: &Entry,
    effects: &mut dyn Effects,
) -> (Result<Value, RunError>, Trace) {
    let mut it = Interp {
        effects,
        modules: Vec::new(),
        trace: vec![Vec::new()],
        stack: Vec::new(),
        steps: 0,
        loading: Vec::new(),
        held: 0,
        pending: 0,
        failed_at: None,
        static_problem: None,
    };
    let result = it.start(key, program, entry);
    let events = it.trace.into_iter().next().unwrap_or_default();
    (result, Trace { events })
}

struct Interp<'e> {
    effects: &'e mut dyn Effects,
    modules: Vec<Module>,
    /// Open event lists: the innermost call's last.
    trace: Vec<Vec<TraceEvent>>,
    /// "Agent.func" of the calls in progress.
    stack: Vec<String>,
    steps: u64,
    /// The modules being loaded (an import of one of them is a cycle).
    loading: Vec<String>,
    /// Bytes of the values the run keeps: variables, imported files, the trace.
    held: usize,
    /// Bytes of the values inside lists and objects being built right now.
    pending: usize,
    /// Where the failure being returned happened: the module and the innermost expression or
    /// statement (set once, on the way out).
    failed_at: Option<(usize, Pos)>,
    /// The static problem that stopped a file from loading (parse or analysis), and the file's key.
    static_problem: Option<(String, crate::diag::Diagnostic)>,
}

/// What one slot of a list or an object costs besides its value.
const SLOT: usize = 16;

/// A value's approximate size in memory (bytes) and its nesting depth (a scalar is 0), without
/// recursion.
fn measure(v: &Value) -> (usize, usize) {
    let mut size = 0usize;
    let mut depth = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        depth = depth.max(d);
        size = size.saturating_add(match v {
            Value::String(s) => 24 + s.len(),
            Value::Array(items) => {
                stack.extend(items.iter().map(|i| (i, d + 1)));
                24 + SLOT * items.len()
            }
            Value::Object(m) => {
                stack.extend(m.values().map(|i| (i, d + 1)));
                24 + m.keys().map(|k| SLOT + 24 + k.len()).sum::<usize>()
            }
            _ => 16,
        });
    }
    (size, depth)
}

/// How a value too large for the trace is kept there.
fn trace_summary(v: &Value, size: usize) -> Value {
    let what = match v {
        Value::Array(items) => format!("a list of {} items", items.len()),
        Value::Object(m) => format!("an object of {} fields", m.len()),
        Value::String(s) => format!("a text of {} characters", s.chars().count()),
        other => kind_of(other).to_string(),
    };
    Value::String(format!(
        "[{what}, about {} KiB: too large to keep in the trace]",
        size / 1024
    ))
}

fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Null | Value::Bool(false))
}

/// JSON equality, numbers by value.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// A value as prompt text: strings as they are, everything else as JSON.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// At most `budget` characters of `text`, with a visible marker when cut.
fn cut(text: &str, budget: Option<u64>) -> String {
    let total = text.chars().count();
    match budget {
        Some(b) if (total as u64) > b => {
            let keep: String = text
                .chars()
                .take(usize::try_from(b).unwrap_or(usize::MAX))
                .collect();
            format!("{keep}\n[… cut: {b} of {total} characters kept]")
        }
        _ => text.to_string(),
    }
}

/// The source text of an expression, for labels in the prompt.
fn label(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name { name } => name.clone(),
        ExprKind::Field { target, name, .. } => format!("{}.{name}", label(target)),
        ExprKind::Index { target, index, .. } => format!("{}[{}]", label(target), label(index)),
        ExprKind::Num { text } => text.clone(),
        ExprKind::Str { value } => format!("{value:?}"),
        _ => "value".into(),
    }
}

/// Where an expression's own operation is, for a failure of that operation (its parts, failing
/// first, name their own places): a field's name, an index's `[`, a method call's name; the start
/// of anything else.
fn operation_at(e: &Expr) -> Pos {
    match &e.kind {
        ExprKind::Field { at, .. } | ExprKind::Index { at, .. } => *at,
        ExprKind::Call { callee, .. } => match &callee.kind {
            ExprKind::Field { at, .. } => *at,
            _ => e.pos,
        },
        _ => e.pos,
    }
}

impl Interp<'_> {
    fn child(&mut self, ctx: &mut Ctx, body: &[Stmt], var: Option<(&str, Value)>) -> R<Flow> {
        let mut frame = Frame::default();
        if let Some((n, v)) = var {
            frame.vars.push(self.new_var(n, v)?);
        }
        ctx.frames.push(frame);
        let flow = self.block(ctx, body);
        if let Some(frame) = ctx.frames.pop() {
            self.release(&frame);
        }
        flow
    }

    /// `name = v`: the variable where it lives, else a new one in the innermost scope.
    fn assign(&mut self, ctx: &mut Ctx, name: &str, v: Value) -> R<()> {
        let (size, depth) = measure(&v);
        let slot = ctx
            .frames
            .iter_mut()
            .rev()
            .find_map(|f| f.vars.iter_mut().rev().find(|x| x.name == name));
        match slot {
            Some(slot) => {
                let old = slot.size;
                let total = self.held.saturating_sub(old);
                if total.saturating_add(self.pending).saturating_add(size) > MAX_VALUE_BYTES {
                    return self.charge(usize::MAX, &format!("\"{name}\""));
                }
                self.held = total + size;
                slot.value = v;
                slot.size = size;
                slot.depth = depth;
            }
            None => {
                let var = self.new_var(name, v)?;
                if let Some(f) = ctx.frames.last_mut() {
                    f.vars.push(var);
                }
            }
        }
        Ok(())
    }

    fn block(&mut self, ctx: &mut Ctx, body: &[Stmt]) -> R<Flow> {
        for s in body {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return fail(
                    Code::AsLimit,
                    format!("the run took more than {MAX_STEPS} steps"),
                );
            }
            if let Flow::Return(v) = self.stmt(ctx, s)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Normal)
    }

    fn stmt(&mut self, ctx: &mut Ctx, s: &Stmt) -> R<Flow> {
        // A failure swallowed earlier (and so never reported) must not lend this one its place.
        self.failed_at = None;
        let r = self.stmt_here(ctx, s);
        if r.is_err() && self.failed_at.is_none() {
            self.failed_at = Some((ctx.module, s.pos));
        }
        r
    }

    fn stmt_here(&mut self, ctx: &mut Ctx, s: &Stmt) -> R<Flow> {
        match &s.kind {
            StmtKind::Comment { .. } | StmtKind::Blank => {}
            StmtKind::Config { key, value } => {
                let v = match (key, &value.kind) {
                    (ConfigKey::Model, ExprKind::Name { name }) => Value::String(name.clone()),
                    _ => self.expr(ctx, value)?,
                };
                if let Some(f) = ctx.frames.last_mut() {
                    f.config.push((*key, v));
                }
            }
            StmtKind::Use { expr, budget } => {
                let budget = budget.as_ref().and_then(|b| match &b.kind {
                    ExprKind::Num { text } => whole_number(text),
                    _ => None,
                });
                if let Some(f) = ctx.frames.last_mut() {
                    f.uses.push(UseDecl {
                        expr: expr.clone(),
                        budget,
                    });
                }
            }
            StmtKind::Assign { name, value } => {
                let v = self.expr(ctx, value)?;
                self.assign(ctx, name, v)?;
            }
            StmtKind::Expr { expr } => {
                self.expr(ctx, expr)?;
            }
            StmtKind::Return { value } => {
                let v = match value {
                    Some(e) => self.expr(ctx, e)?,
                    None => Value::Null,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(ctx, cond)?;
                // A name every branch assigns is known after the `if`: it is made here first,
                // so the branch's assignment updates it instead of dropping it with the branch.
                for name in assigned_in_every_branch(then, otherwise.as_deref()) {
                    let known = ctx
                        .frames
                        .iter()
                        .any(|f| f.vars.iter().any(|v| v.name == name));
                    if !known {
                        let var = self.new_var(&name, Value::Null)?;
                        if let Some(f) = ctx.frames.last_mut() {
                            f.vars.push(var);
                        }
                    }
                }
                if truthy(&c) {
                    return self.child(ctx, then, None);
                } else if let Some(o) = otherwise {
                    return self.child(ctx, o, None);
                }
            }
            StmtKind::LoopUntil { cond, cap, body } => {
                let cap = cap_value(cap);
                let mut rounds = 0;
                loop {
                    if truthy(&self.expr(ctx, cond)?) {
                        break;
                    }
                    if rounds >= cap {
                        self.event(TraceEvent::Cap {
                            line: s.pos.line,
                            cap,
                        });
                        break;
                    }
                    rounds += 1;
                    if let Flow::Return(v) = self.child(ctx, body, None)? {
                        return Ok(Flow::Return(v));
                    }
                }
            }
            StmtKind::Repeat { count, body } => {
                for _ in 0..cap_value(count) {
                    if let Flow::Return(v) = self.child(ctx, body, None)? {
                        return Ok(Flow::Return(v));
                    }
                }
            }
            StmtKind::For {
                var,
                iter,
                cap,
                body,
            } => {
                let list = match self.expr(ctx, iter)? {
                    Value::Array(items) => items,
                    other => return rt(format!("for … in needs a list, not {}", kind_of(&other))),
                };
                let cap = cap.as_ref().map(cap_value);
                for (i, item) in list.into_iter().enumerate() {
                    if cap.is_some_and(|c| i as u64 >= c) {
                        self.event(TraceEvent::Cap {
                            line: s.pos.line,
                            cap: cap.unwrap_or(0),
                        });
                        break;
                    }
                    if let Flow::Return(v) = self.child(ctx, body, Some((var, item)))? {
                        return Ok(Flow::Return(v));
                    }
                }
            }
        }
        Ok(Flow::Normal)
    }

    fn event(&mut self, e: TraceEvent) {
        self.effects.observe(&e);
        if let Some(t) = self.trace.last_mut() {
            t.push(e);
        }
    }

    /// What a global name is in module `mi`: an import (kind, uri), an agent of the module.
    fn global(&self, mi: usize, name: &str) -> Option<(Option<ImportKind>, String)> {
        for item in &self.modules[mi].program.items {
            match item {
                Item::Import(i) if i.name == name => return Some((Some(i.kind), i.uri.clone())),
                Item::Agent(a) if a.name.as_deref() == Some(name) => {
                    return Some((None, String::new()))
                }
                _ => {}
            }
        }
        None
    }

    fn lookup(&mut self, ctx: &Ctx, name: &str) -> R<Value> {
        for f in ctx.frames.iter().rev() {
            if let Some(v) = f.vars.iter().rev().find(|v| v.name == name) {
                return Ok(v.value.clone());
            }
        }
        match self.global(ctx.module, name) {
            Some((Some(ImportKind::File), uri)) => self.file(ctx.module, name, &uri),
            Some((Some(kind), _)) => rt(format!(
                "\"{name}\" is an imported {}, not a value",
                kind.as_str()
            )),
            Some((None, _)) => rt(format!("\"{name}\" is an agent; call it: {name}(input)")),
            None => rt(format!("unknown name \"{name}\"")),
        }
    }

    fn file(&mut self, mi: usize, name: &str, uri: &str) -> R<Value> {
        if let Some((_, v)) = self.modules[mi].files.iter().find(|(n, _)| n == name) {
            return Ok(v.clone());
        }
        let key = self.modules[mi].key.clone();
        let text = self.effects.read_file(&key, uri)?;
        let value = if uri.to_ascii_lowercase().ends_with(".json") {
            serde_json::from_str(&text)
                .map_err(|e| Fail(Code::AsEffect, format!("{uri} is not valid JSON: {e}")))?
        } else {
            Value::String(text)
        };
        let (size, _) = self.admit_value(&value, uri)?;
        self.hold(size, uri)?;
        self.modules[mi]
            .files
            .push((name.to_string(), value.clone()));
        Ok(value)
    }

    fn expr(&mut self, ctx: &mut Ctx, e: &Expr) -> R<Value> {
        let r = self.expr_here(ctx, e);
        if r.is_err() && self.failed_at.is_none() {
            self.failed_at = Some((ctx.module, operation_at(e)));
        }
        r
    }

    fn expr_here(&mut self, ctx: &mut Ctx, e: &Expr) -> R<Value> {
        Ok(match &e.kind {
            ExprKind::Str { value } => Value::String(value.clone()),
            ExprKind::Num { text } => {
                let n = super::number_value(text).and_then(serde_json::Number::from_f64);
                match (whole_number(text), n) {
                    (Some(w), _) => Value::from(w),
                    (None, Some(n)) => Value::Number(n),
                    _ => return rt(format!("\"{text}\" is not a number")),
                }
            }
            ExprKind::Bool { value } => Value::Bool(*value),
            ExprKind::None => Value::Null,
            ExprKind::Name { name } => self.lookup(ctx, name)?,
            ExprKind::List { items } => {
                // The items built so far count against the limit while the rest are built (a
                // failure ends the run, so the count needs no putting back then).
                let mark = self.pending;
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    let v = self.expr(ctx, i)?;
                    self.pending += self.part(&v, SLOT, "a list")?;
                    out.push(v);
                }
                self.pending = mark;
                Value::Array(out)
            }
            ExprKind::Object { entries } => {
                let mark = self.pending;
                let mut m = Map::new();
                for (k, v) in entries {
                    let v = self.expr(ctx, v)?;
                    self.pending += self.part(&v, SLOT + 24 + k.len(), "an object")?;
                    m.insert(k.clone(), v);
                }
                self.pending = mark;
                Value::Object(m)
            }
            ExprKind::Field { target, name, .. } => {
                let t = self.expr(ctx, target)?;
                field(&t, name)?
            }
            ExprKind::Index { target, index, .. } => {
                let t = self.expr(ctx, target)?;
                let i = self.expr(ctx, index)?;
                let Value::Array(items) = &t else {
                    return rt(format!("only a list can be indexed, not {}", kind_of(&t)));
                };
                let Some(i) = i.as_u64() else {
                    return rt(format!("an index is a whole number of at least 0, not {i}"));
                };
                usize::try_from(i)
                    .ok()
                    .and_then(|i| items.get(i))
                    .cloned()
                    .ok_or_else(|| {
                        Fail(
                            Code::AsRuntime,
                            format!(
                                "index {i} is out of range (the list has {} items)",
                                items.len()
                            ),
                        )
                    })?
            }
            ExprKind::Not { operand } => Value::Bool(!truthy(&self.expr(ctx, operand)?)),
            ExprKind::Binary { op, left, right } => {
                let l = self.expr(ctx, left)?;
                match op {
                    BinOp::And if !truthy(&l) => Value::Bool(false),
                    BinOp::Or if truthy(&l) => Value::Bool(true),
                    BinOp::And | BinOp::Or => Value::Bool(truthy(&self.expr(ctx, right)?)),
                    BinOp::Eq => Value::Bool(equal(&l, &self.expr(ctx, right)?)),
                    BinOp::Ne => Value::Bool(!equal(&l, &self.expr(ctx, right)?)),
                }
            }
            ExprKind::Call { callee, args } => self.call(ctx, callee, args)?,
            ExprKind::Generate { options, shape } => self.generate(ctx, options, shape)?,
        })
    }
}
