//! The tree-walking interpreter of `.as` programs. Pure: every effect (the model, tools, memory,
//! file imports, agent imports) goes through [`Effects`], which the host implements (and tests
//! script). It returns the entry function's value and a nested [`Trace`].
//!
//! Scopes (seed 002 and the decisions in docs/language.md):
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

/// One model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelCall {
    /// The llm import's URI (`openai://gpt-4.1-mini`).
    pub model: String,
    /// The whole prompt: for an attempt after the first, the first prompt and why the previous
    /// answer was not accepted (a provider without memory of the conversation needs it all).
    pub prompt: String,
    /// `limit`, passed to the provider as its answer budget.
    pub limit: Option<u64>,
    /// 1 for a generate's first attempt, then 2, 3, … for its retries.
    pub attempt: u32,
    /// Why the previous attempt's answer was not accepted (attempts after the first): a
    /// provider that keeps the conversation (`keyless://chat`) sends only this.
    pub correction: Option<String>,
    /// The shape the answer must fit (an object shape).
    pub shape: Shape,
}

/// An effect that failed, with its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectError {
    pub code: Code,
    pub message: String,
}

impl EffectError {
    #[must_use]
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Everything a program does to the world.
pub trait Effects {
    /// One answer of the model. An error is a provider error: it fails the run at once.
    ///
    /// # Errors
    /// The provider's failure, or a scripted model with no answer left.
    fn generate(&mut self, call: &ModelCall) -> Result<String, EffectError>;
    /// A tool method: `Find.run({…})`.
    ///
    /// # Errors
    /// The tool's refusal or failure.
    fn tool(&mut self, uri: &str, method: &str, args: &Value) -> Result<Value, EffectError>;
    /// A memory method: `Lessons.add({…})`, `Lessons.query({…})`; a `file://` memory's path is
    /// relative to the module `from`, like a file import.
    ///
    /// # Errors
    /// The memory's failure.
    fn memory(
        &mut self,
        from: &str,
        uri: &str,
        method: &str,
        args: &Value,
    ) -> Result<Value, EffectError>;
    /// The text of `import file X from "path"`, relative to the module `from`.
    ///
    /// # Errors
    /// A file that cannot be read, or is outside the workspace.
    fn read_file(&mut self, from: &str, path: &str) -> Result<String, EffectError>;
    /// The source of `import agent X from "path"` (relative to the module `from`) and its key
    /// (the same file always has the same key).
    ///
    /// # Errors
    /// A file that cannot be read.
    fn load_agent(&mut self, from: &str, path: &str) -> Result<(String, String), EffectError>;
    /// `generate({ debug: true })`: the whole prompt, for stderr.
    fn debug(&mut self, _prompt: &str) {}
    /// Who answered the last generate, where its model URI does not say it all (the trace's
    /// `via`): the chat site of a `keyless://chat` answer.
    fn answered_by(&mut self) -> Option<String> {
        None
    }
    /// The clock, in milliseconds from any fixed point: the trace's durations.
    fn now_ms(&mut self) -> u64;
    /// Each trace event as it completes (a call when it returns, with its nested events), for
    /// following a run live.
    fn observe(&mut self, _event: &TraceEvent) {}
}

/// Why a run failed: a code, a message, the agent/function stack (outermost first), and where:
/// the file (the module's key) and the line and column of the innermost expression or statement
/// that failed, when the failure happened inside the program's code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunError {
    #[serde(serialize_with = "code_str")]
    pub code: Code,
    pub message: String,
    pub stack: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pos: Option<Pos>,
    /// How to fix it, when the failure is a static problem found as the program loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl RunError {
    /// A failure outside any program code (a process that died, a refused entry).
    #[must_use]
    pub fn bare(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            stack: Vec::new(),
            file: None,
            pos: None,
            help: None,
        }
    }
}

fn code_str<S: serde::Serializer>(c: &Code, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

impl RunError {
    /// The code, the place when known, and the message on one line:
    /// `KA_AS_RUNTIME main.as:4:16: a list has no field "nope"`.
    #[must_use]
    pub fn headline(&self) -> String {
        let mut line = match (&self.file, self.pos) {
            (Some(file), Some(p)) => {
                format!(
                    "{} {file}:{}:{}: {}",
                    self.code, p.line, p.column, self.message
                )
            }
            _ => format!("{} {}", self.code, self.message),
        };
        if let Some(help) = &self.help {
            line.push_str(" (help: ");
            line.push_str(help);
            line.push(')');
        }
        line
    }
}

impl RunError {
    /// The failure as the one diagnostic carrier: its file and place, its message, and the
    /// agent and function stack as notes, innermost first.
    #[must_use]
    pub fn diagnostic(&self) -> crate::diag::Diagnostic {
        let mut d = match self.pos {
            Some(p) => crate::diag::Diagnostic::at(self.code, p, self.message.clone()),
            None => crate::diag::Diagnostic::new(self.code, None, self.message.clone()),
        };
        d.file.clone_from(&self.file);
        d.help.clone_from(&self.help);
        d.notes = self.stack.iter().rev().map(|s| format!("in {s}")).collect();
        d
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.headline())?;
        for s in &self.stack {
            write!(f, "\n    in {s}")?;
        }
        Ok(())
    }
}

/// One model answer of a `generate` and what became of it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Attempt {
    pub prompt: String,
    pub answer: String,
    /// Why it was not accepted.
    pub error: Option<String>,
    /// Where in the answer the value was read: "the whole answer", "fenced block 2", "line 7".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub source: Option<String>,
    /// Every repair and coercion the reading took (empty for strict JSON that fits as it is).
    #[serde(default)]
    pub repairs: Vec<String>,
    /// The chosen candidate's score (0: strict JSON that fits) and how many were weighed.
    #[serde(default)]
    pub score: u32,
    #[serde(default)]
    pub candidates: u32,
}

/// A trace event; calls nest the events they caused.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent {
    Call {
        agent: String,
        func: String,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        duration_ms: u64,
        #[cfg_attr(feature = "ts", ts(type = "unknown"))]
        input: Value,
        #[cfg_attr(feature = "ts", ts(type = "unknown | null"))]
        output: Option<Value>,
        error: Option<String>,
        events: Vec<TraceEvent>,
    },
    Generate {
        model: String,
        /// Who answered, where the model URI does not say it all (`keyless://chat`: the chat
        /// site whose tab answered).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        via: Option<String>,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        duration_ms: u64,
        #[cfg_attr(feature = "ts", ts(type = "number | null"))]
        limit: Option<u64>,
        attempts: Vec<Attempt>,
        #[cfg_attr(feature = "ts", ts(type = "unknown | null"))]
        value: Option<Value>,
    },
    Tool {
        tool: String,
        method: String,
        #[cfg_attr(feature = "ts", ts(type = "unknown"))]
        args: Value,
        #[cfg_attr(feature = "ts", ts(type = "unknown | null"))]
        result: Option<Value>,
        error: Option<String>,
    },
    Memory {
        memory: String,
        method: String,
        #[cfg_attr(feature = "ts", ts(type = "unknown"))]
        args: Value,
        #[cfg_attr(feature = "ts", ts(type = "unknown | null"))]
        result: Option<Value>,
        error: Option<String>,
    },
    /// A loop stopped at its cap.
    Cap {
        line: u32,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        cap: u64,
    },
}

/// The whole trace of a run: the entry call, with everything nested in it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Trace {
    pub events: Vec<TraceEvent>,
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The agent (default: the main agent, or the only one).
    pub agent: Option<String>,
    /// The function (default: the agent's main func, or its only one).
    pub func: Option<String>,
    pub input: Value,
}

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
    fn start(&mut self, key: &str, program: Program, entry: &Entry) -> Result<Value, RunError> {
        let at = |it: &Self, f: Fail, stack: &[String]| {
            if let Some((key, d)) = &it.static_problem {
                return RunError {
                    code: f.0,
                    message: f.1,
                    stack: stack.to_vec(),
                    file: Some(key.clone()),
                    pos: d.pos(),
                    help: d.help.clone(),
                };
            }
            let place = it
                .failed_at
                .and_then(|(m, p)| Some((it.modules.get(m)?.key.clone(), p)));
            RunError {
                code: f.0,
                message: f.1,
                stack: stack.to_vec(),
                file: place.as_ref().map(|(k, _)| k.clone()),
                pos: place.map(|(_, p)| p),
                help: None,
            }
        };
        let root = self
            .load_program(key, program)
            .map_err(|f| at(self, f, &[]))?;
        let program = self.modules[root].program.clone();
        let agents: Vec<(usize, &Agent)> = program.agents().enumerate().collect();
        let chosen = match &entry.agent {
            Some(name) => agents
                .iter()
                .find(|(_, a)| a.name.as_deref() == Some(name.as_str())),
            None => agents
                .iter()
                .find(|(_, a)| a.main)
                .or(if agents.len() == 1 {
                    agents.first()
                } else {
                    None
                }),
        };
        let Some((ai, agent)) = chosen.copied() else {
            let names: Vec<String> = agents.iter().filter_map(|(_, a)| a.name.clone()).collect();
            return Err(at(
                self,
                Fail(
                    Code::AsEntry,
                    match &entry.agent {
                        Some(n) => format!("no agent \"{n}\" (agents: {})", names.join(", ")),
                        None => "no main agent to start with; pass --agent".into(),
                    },
                ),
                &[],
            ));
        };
        let func = match pick_func(agent, entry.func.as_deref()) {
            Ok(f) => f,
            Err(m) => return Err(at(self, Fail(Code::AsEntry, m), &[])),
        };
        let name = func.name.clone();
        self.call_func(root, ai, name.as_deref(), entry.input.clone())
            .map_err(|f| at(self, f, &self.stack))
    }

    /// Parses and checks a module and, recursively, its agent imports. Returns its index.
    fn load(&mut self, key: &str, source: &str) -> R<usize> {
        if let Some(i) = self.modules.iter().position(|m| m.key == key) {
            return Ok(i);
        }
        let program = parser::parse(source).map_err(|d| self.static_fail(key, d))?;
        self.load_program(key, program)
    }

    /// A file that does not load: the failure carries the problem's own place and help.
    fn static_fail(&mut self, key: &str, d: crate::diag::Diagnostic) -> Fail {
        let f = Fail(d.code, d.message.clone());
        self.static_problem = Some((key.to_string(), d));
        f
    }

    fn load_program(&mut self, key: &str, program: Program) -> R<usize> {
        if self.modules.len() >= MAX_MODULES {
            return fail(
                Code::AsLimit,
                format!("more than {MAX_MODULES} .as files imported"),
            );
        }
        if let Some(d) = analyze::analyze(&program).into_iter().next() {
            return Err(self.static_fail(key, d));
        }
        let index = self.modules.len();
        self.loading.push(key.to_string());
        let program = Rc::new(program);
        self.modules.push(Module {
            key: key.to_string(),
            program: program.clone(),
            agent_imports: Vec::new(),
            files: Vec::new(),
        });
        for item in &program.items {
            if let Item::Import(i) = item {
                if i.kind == ImportKind::Agent {
                    let (k, text) = self.effects.load_agent(key, &i.uri)?;
                    if self.loading.contains(&k) {
                        return fail(
                            Code::AsImportCycle,
                            format!("{key}: importing {} closes a cycle of agent imports", i.uri),
                        );
                    }
                    let m = self.load(&k, &text)?;
                    let p = self.modules[m].program.clone();
                    let agents: Vec<&Agent> = p.agents().collect();
                    let pick = agents.iter().position(|a| a.main).or(if agents.len() == 1 {
                        Some(0)
                    } else {
                        None
                    });
                    let Some(ai) = pick else {
                        return fail(
                            Code::AsEntry,
                            format!(
                                "{}: an imported file needs a main agent (or only one agent)",
                                i.uri
                            ),
                        );
                    };
                    self.modules[index]
                        .agent_imports
                        .push((i.name.clone(), m, ai));
                }
            }
        }
        self.loading.pop();
        Ok(index)
    }

    fn call_func(&mut self, mi: usize, ai: usize, func: Option<&str>, input: Value) -> R<Value> {
        if self.stack.len() >= MAX_CALL_DEPTH as usize {
            return fail(
                Code::AsDepth,
                format!("calls nested more than {MAX_CALL_DEPTH} deep (runaway recursion?)"),
            );
        }
        let program = self.modules[mi].program.clone();
        let Some(agent) = program.agents().nth(ai) else {
            return rt("no such agent");
        };
        let f = pick_func(agent, func).map_err(|m| Fail(Code::AsRuntime, m))?;
        let agent_name = agent.name.clone().unwrap_or_else(|| "main".into());
        let func_name = f.name.clone().unwrap_or_else(|| "main".into());
        self.stack.push(format!("{agent_name}.{func_name}"));
        self.trace.push(Vec::new());
        let start = self.effects.now_ms();
        let result = self.invoke(mi, ai, f, input.clone());
        let duration_ms = self.effects.now_ms().saturating_sub(start);
        let events = self.trace.pop().unwrap_or_default();
        let (output, error) = match &result {
            Ok(v) => (Some(self.traced(v)?), None),
            Err(Fail(c, m)) => (None, Some(format!("{c} {m}"))),
        };
        let input = self.traced(&input)?;
        self.event(TraceEvent::Call {
            agent: agent_name,
            func: func_name,
            duration_ms,
            input,
            output,
            error,
            events,
        });
        if result.is_ok() {
            self.stack.pop();
        }
        result
    }

    fn invoke(&mut self, mi: usize, ai: usize, f: &Func, input: Value) -> R<Value> {
        let mut frame = Frame::default();
        if let Some(p) = &f.param {
            let value = match &p.shape {
                Some(fields) => check_object(&input, fields)
                    .map_err(|e| Fail(Code::AsShape, format!("the input does not fit: {e}")))?,
                None => input,
            };
            frame.vars.push(self.new_var(&p.name, value)?);
        }
        let mut ctx = Ctx {
            module: mi,
            agent: ai,
            frames: vec![frame],
        };
        let flow = self.block(&mut ctx, &f.body);
        for frame in ctx.frames {
            self.release(&frame);
        }
        match flow? {
            Flow::Return(v) => Ok(v),
            Flow::Normal => Ok(Value::Null),
        }
    }

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

    /// Makes room for `bytes` more of the run's values, or fails with `KA_AS_LIMIT`.
    fn charge(&self, bytes: usize, what: &str) -> R<()> {
        if self.held.saturating_add(self.pending).saturating_add(bytes) > MAX_VALUE_BYTES {
            return fail(
                Code::AsLimit,
                format!(
                    "{what} would take the run's values past {} MiB, the most one run may hold",
                    MAX_VALUE_BYTES >> 20
                ),
            );
        }
        Ok(())
    }

    /// A value the run keeps (a variable, a file): counted until it is released.
    fn hold(&mut self, bytes: usize, what: &str) -> R<()> {
        self.charge(bytes, what)?;
        self.held += bytes;
        Ok(())
    }

    /// A scope's variables are gone.
    fn release(&mut self, frame: &Frame) {
        let freed: usize = frame.vars.iter().map(|v| v.size).sum();
        self.held = self.held.saturating_sub(freed);
    }

    /// One more part of a list or an object being built: its size (plus the slot's `extra`),
    /// counted against the limit; too deep a value is refused.
    fn part(&self, v: &Value, extra: usize, what: &str) -> R<usize> {
        let (size, depth) = measure(v);
        if depth + 1 > MAX_NESTING {
            return fail(
                Code::AsLimit,
                format!("{what} would nest values more than {MAX_NESTING} deep"),
            );
        }
        self.charge(size + extra, what)?;
        Ok(size + extra)
    }

    /// A value an effect handed the program (a tool's result, a file): within the limits.
    fn admit_value(&self, v: &Value, what: &str) -> R<(usize, usize)> {
        let (size, depth) = measure(v);
        if depth > MAX_NESTING {
            return fail(
                Code::AsLimit,
                format!("{what} nests more than {MAX_NESTING} deep"),
            );
        }
        self.charge(size, what)?;
        Ok((size, depth))
    }

    fn new_var(&mut self, name: &str, value: Value) -> R<Var> {
        let (size, depth) = measure(&value);
        self.hold(size, &format!("\"{name}\""))?;
        Ok(Var {
            name: name.to_string(),
            value,
            size,
            depth,
        })
    }

    /// A value as the trace keeps it: itself, or a description when it is large; counted.
    fn traced(&mut self, v: &Value) -> R<Value> {
        let (size, _) = measure(v);
        let kept = if size > MAX_TRACE_VALUE_BYTES {
            trace_summary(v, size)
        } else {
            v.clone()
        };
        self.hold(size.min(MAX_TRACE_VALUE_BYTES), "the trace")?;
        Ok(kept)
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

    fn arg(&mut self, ctx: &mut Ctx, args: &[Expr]) -> R<Value> {
        match args {
            [] => Ok(Value::Null),
            [one] => self.expr(ctx, one),
            _ => rt(format!("a call takes one argument, not {}", args.len())),
        }
    }

    fn call(&mut self, ctx: &mut Ctx, callee: &Expr, args: &[Expr]) -> R<Value> {
        match &callee.kind {
            ExprKind::Name { name } => {
                let input = self.arg(ctx, args)?;
                let (mi, ai) = (ctx.module, ctx.agent);
                let program = self.modules[mi].program.clone();
                // A function of this agent first, then an agent.
                let own = program.agents().nth(ai).is_some_and(|a| {
                    a.body.iter().any(|m| matches!(m, Member::Func(f) if f.name.as_deref() == Some(name.as_str())))
                });
                if own {
                    return self.call_func(mi, ai, Some(name), input);
                }
                let (m, a) = self.agent_ref(mi, name)?;
                self.call_func(m, a, None, input)
            }
            ExprKind::Field {
                target,
                name: method,
                ..
            } => {
                if let ExprKind::Name { name } = &target.kind {
                    let is_var = ctx
                        .frames
                        .iter()
                        .any(|f| f.vars.iter().any(|v| v.name == *name));
                    if !is_var {
                        match self.global(ctx.module, name) {
                            Some((Some(ImportKind::Tool), uri)) => {
                                let a = self.arg(ctx, args)?;
                                return self.effect(ctx.module, name, &uri, method, a, true);
                            }
                            Some((Some(ImportKind::Memory), uri)) => {
                                let a = self.arg(ctx, args)?;
                                return self.effect(ctx.module, name, &uri, method, a, false);
                            }
                            Some((None | Some(ImportKind::Agent), _)) => {
                                let input = self.arg(ctx, args)?;
                                let (m, a) = self.agent_ref(ctx.module, name)?;
                                return self.call_func(m, a, Some(method), input);
                            }
                            _ => {}
                        }
                    }
                }
                if method == "add" {
                    let v = self.arg(ctx, args)?;
                    let (size, depth) = measure(&v);
                    self.hold(size + SLOT, "add")?;
                    return add(ctx, target, v, size + SLOT, depth).map(|()| Value::Null);
                }
                rt(format!("\"{method}\" cannot be called here"))
            }
            _ => rt("this cannot be called"),
        }
    }

    /// The module and agent index a name calls: an agent of the module, or an agent import.
    fn agent_ref(&self, mi: usize, name: &str) -> R<(usize, usize)> {
        if let Some((_, m, a)) = self.modules[mi]
            .agent_imports
            .iter()
            .find(|(n, _, _)| n == name)
        {
            return Ok((*m, *a));
        }
        let program = &self.modules[mi].program;
        program
            .agents()
            .position(|a| a.name.as_deref() == Some(name))
            .map(|a| (mi, a))
            .ok_or_else(|| Fail(Code::AsRuntime, format!("\"{name}\" cannot be called")))
    }

    fn effect(
        &mut self,
        mi: usize,
        name: &str,
        uri: &str,
        method: &str,
        args: Value,
        tool: bool,
    ) -> R<Value> {
        let result = if tool {
            self.effects.tool(uri, method, &args)
        } else {
            let from = self.modules[mi].key.clone();
            self.effects.memory(&from, uri, method, &args)
        };
        if let Ok(v) = &result {
            self.admit_value(v, &format!("{name}.{method}"))?;
        }
        let (res, err) = match &result {
            Ok(v) => (Some(self.traced(v)?), None),
            Err(e) => (None, Some(format!("{} {}", e.code, e.message))),
        };
        let args = self.traced(&args)?;
        self.event(if tool {
            TraceEvent::Tool {
                tool: name.to_string(),
                method: method.to_string(),
                args,
                result: res,
                error: err,
            }
        } else {
            TraceEvent::Memory {
                memory: name.to_string(),
                method: method.to_string(),
                args,
                result: res,
                error: err,
            }
        });
        Ok(result?)
    }

    /// The configuration value `key` where the code runs: the innermost override, else the
    /// agent's.
    fn config(&self, ctx: &Ctx, key: ConfigKey) -> Option<Value> {
        for f in ctx.frames.iter().rev() {
            if let Some((_, v)) = f.config.iter().rev().find(|(k, _)| *k == key) {
                return Some(v.clone());
            }
        }
        let program = &self.modules[ctx.module].program;
        let agent = program.agents().nth(ctx.agent)?;
        agent.body.iter().rev().find_map(|m| match m {
            Member::Config(c) if c.key == key => Some(match (&c.key, &c.value.kind) {
                (ConfigKey::Model, ExprKind::Name { name }) => Value::String(name.clone()),
                (_, ExprKind::Str { value }) => Value::String(value.clone()),
                _ => Value::Null,
            }),
            _ => None,
        })
    }

    fn generate(&mut self, ctx: &mut Ctx, options: &[(String, Expr)], shape: &[Field]) -> R<Value> {
        let mut input = None;
        // `attempts` counts retries (seed 002: "the number of retries when JSON parsing fails or
        // the shape does not match; default 1"): one bad answer is asked again once by default.
        let (mut limit, mut retries, mut debug) = (None, 1u64, false);
        for (k, e) in options {
            let v = self.expr(ctx, e)?;
            match k.as_str() {
                "input" => input = Some(as_text(&v)),
                "limit" => {
                    limit = Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                        Fail(
                            Code::AsGenerate,
                            format!("limit must be a whole number of at least 1, not {v}"),
                        )
                    })?);
                }
                "attempts" => {
                    retries = v.as_u64().filter(|n| *n <= MAX_RETRIES).ok_or_else(|| {
                        Fail(
                            Code::AsGenerate,
                            format!(
                                "attempts (retries) must be a whole number from 0 to {MAX_RETRIES}, not {v}"
                            ),
                        )
                    })?;
                }
                "debug" => debug = truthy(&v),
                other => {
                    return fail(
                        Code::AsGenerate,
                        format!("generate has no option \"{other}\""),
                    )
                }
            }
        }
        let Some(input) = input else {
            return fail(Code::AsGenerate, "generate needs an input");
        };
        let model_name = match self.config(ctx, ConfigKey::Model) {
            Some(Value::String(n)) => n,
            _ => {
                return fail(
                    Code::AsGenerate,
                    "no model: set model NAME in the agent or the function",
                )
            }
        };
        let model = match self.global(ctx.module, &model_name) {
            Some((Some(ImportKind::Llm), uri)) => uri,
            _ => {
                return fail(
                    Code::AsGenerate,
                    format!("\"{model_name}\" is not an imported llm"),
                )
            }
        };
        // The prompt: role, description, the used context (evaluated now), the instruction and
        // the shape. Nothing that was not used reaches it.
        let mut prompt = String::new();
        if let Some(Value::String(r)) = self.config(ctx, ConfigKey::Role) {
            prompt.push_str(&format!("Role: {r}\n"));
        }
        if let Some(Value::String(d)) = self.config(ctx, ConfigKey::Description) {
            prompt.push_str(&format!("Description: {d}\n"));
        }
        let uses: Vec<UseDecl> = ctx
            .frames
            .iter()
            .flat_map(|f| f.uses.iter().cloned())
            .collect();
        // Sections are separated by an empty line.
        let gap = |p: &String| if p.is_empty() { "" } else { "\n" };
        if !uses.is_empty() {
            prompt.push_str(gap(&prompt));
            prompt.push_str("Context:\n");
            for u in &uses {
                let v = self.expr(ctx, &u.expr)?;
                prompt.push_str(&format!(
                    "[{}]\n{}\n",
                    label(&u.expr),
                    cut(&as_text(&v), u.budget)
                ));
            }
        }
        prompt.push_str(gap(&prompt));
        prompt.push_str(&format!("Instruction:\n{input}\n"));
        self.charge(prompt.len(), "the prompt")?;
        let shape = Shape::Object(shape.to_vec());
        prompt.push_str(&format!(
            "\nAnswer with one JSON object only, of this shape: {}\n",
            describe_shape(&shape)
        ));
        let mut tries: Vec<Attempt> = Vec::new();
        let mut current = prompt.clone();
        let mut correction: Option<String> = None;
        let start = self.effects.now_ms();
        let mut outcome: R<Value> = fail(Code::AsShape, "no attempt was made");
        for n in 1..=retries + 1 {
            if debug {
                self.effects.debug(&current);
            }
            let call = ModelCall {
                model: model.clone(),
                prompt: current.clone(),
                limit,
                attempt: u32::try_from(n).unwrap_or(u32::MAX),
                correction: correction.clone(),
                shape: shape.clone(),
            };
            let answer = match self.effects.generate(&call) {
                Ok(a) => {
                    // The attempt (prompt and answer) stays in the trace.
                    self.hold(current.len() + a.len(), "the model's answers")?;
                    a
                }
                Err(e) => {
                    // A provider error fails at once, without retries.
                    outcome = Err(e.into());
                    break;
                }
            };
            let reading = read_answer(&answer, &shape);
            let candidates = u32::try_from(reading.candidates).unwrap_or(u32::MAX);
            match reading.value {
                Ok(v) => {
                    tries.push(Attempt {
                        prompt: current.clone(),
                        answer,
                        error: None,
                        source: Some(reading.source),
                        repairs: reading.repairs,
                        score: reading.score,
                        candidates,
                    });
                    outcome = Ok(v);
                    break;
                }
                Err(why) => {
                    tries.push(Attempt {
                        prompt: current.clone(),
                        answer,
                        error: Some(why.clone()),
                        source: None,
                        repairs: Vec::new(),
                        score: 0,
                        candidates,
                    });
                    outcome = fail(
                        Code::AsShape,
                        format!(
                            "the model's answer did not fit after {n} {} ({} {}): {why}",
                            if n == 1 { "try" } else { "tries" },
                            n - 1,
                            if n == 2 { "retry" } else { "retries" }
                        ),
                    );
                    current = format!(
                        "{prompt}\nYour previous answer was not accepted: {why}. Answer again with one JSON object only.\n"
                    );
                    correction = Some(why);
                }
            }
        }
        let duration_ms = self.effects.now_ms().saturating_sub(start);
        let via = self.effects.answered_by();
        let value = match outcome.as_ref().ok() {
            Some(v) => Some(self.traced(v)?),
            None => None,
        };
        self.event(TraceEvent::Generate {
            model,
            via,
            duration_ms,
            limit,
            attempts: tries,
            value,
        });
        outcome
    }
}

fn cap_value(e: &Expr) -> u64 {
    match &e.kind {
        ExprKind::Num { text } => whole_number(text).unwrap_or(0),
        _ => 0,
    }
}

fn pick_func<'a>(agent: &'a Agent, name: Option<&str>) -> Result<&'a Func, String> {
    let funcs: Vec<&Func> = agent.funcs().collect();
    let an = agent.name.as_deref().unwrap_or("main");
    match name {
        Some(n) => funcs
            .iter()
            .find(|f| f.name.as_deref() == Some(n))
            .copied()
            .ok_or_else(|| format!("agent \"{an}\" has no function \"{n}\"")),
        None => funcs
            .iter()
            .find(|f| f.main)
            .or(if funcs.len() == 1 {
                funcs.first()
            } else {
                None
            })
            .copied()
            .ok_or_else(|| format!("agent \"{an}\" has no main func; name one")),
    }
}

fn field(t: &Value, name: &str) -> R<Value> {
    match (t, name) {
        (Value::Array(items), "length") => Ok(Value::from(items.len())),
        (Value::String(s), "length") => Ok(Value::from(s.chars().count())),
        // The list's JSON-safe view: the list itself (every value here is already JSON).
        (Value::Array(_), "summary") => Ok(t.clone()),
        (Value::Object(m), _) => Ok(m.get(name).cloned().unwrap_or(Value::Null)),
        _ => rt(format!("{} has no field \"{name}\"", kind_of(t))),
    }
}

/// `place.add(v)`: `place` is a variable or a field path of one, holding a list. `size` and
/// `depth` are `v`'s ([`measure`]), counted by the caller; the variable's size grows by them.
fn add(ctx: &mut Ctx, place: &Expr, v: Value, size: usize, depth: usize) -> R<()> {
    let mut path: Vec<&str> = Vec::new();
    let mut e = place;
    loop {
        match &e.kind {
            ExprKind::Name { name } => {
                path.push(name);
                break;
            }
            ExprKind::Field { target, name, .. } => {
                path.push(name);
                e = target;
            }
            _ => return rt("add needs a list held by a variable (or a field of one)"),
        }
    }
    path.reverse();
    let root = path[0];
    let slot = ctx
        .frames
        .iter_mut()
        .rev()
        .find_map(|f| f.vars.iter_mut().rev().find(|x| x.name == root))
        .ok_or_else(|| Fail(Code::AsRuntime, format!("unknown name \"{root}\"")))?;
    // The list sits `path.len() - 1` levels below the variable; the value one level below it.
    let new_depth = slot.depth.max(path.len() + depth);
    if new_depth > MAX_NESTING {
        return fail(
            Code::AsLimit,
            format!("add would nest \"{root}\" more than {MAX_NESTING} deep"),
        );
    }
    slot.size += size;
    slot.depth = new_depth;
    let mut target = &mut slot.value;
    for key in &path[1..] {
        target = match target {
            Value::Object(m) => m
                .get_mut(*key)
                .ok_or_else(|| Fail(Code::AsRuntime, format!("no field \"{key}\" to add to")))?,
            other => return rt(format!("{} has no field \"{key}\"", kind_of(other))),
        };
    }
    match target {
        Value::Array(items) => {
            items.push(v);
            Ok(())
        }
        // A failure ends the run, so what was counted for it no longer matters.
        other => rt(format!("add works on a list, not {}", kind_of(other))),
    }
}
