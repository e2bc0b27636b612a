//! What a run exchanges with its caller: the model call, an effect's failure, the run's error with
//! its place and stack, the trace events, and the entry point.

use super::*;

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
