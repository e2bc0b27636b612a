//! The `.as` syntax tree. Every node keeps where it starts; comments are kept (own-line comments
//! as items, end-of-line comments on their statement) so formatting never loses them.

use super::Pos;
use serde::Serialize;

/// A whole `.as` file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Program {
    pub items: Vec<Item>,
}

impl Program {
    /// The agents, in order.
    pub fn agents(&self) -> impl Iterator<Item = &Agent> {
        self.items.iter().filter_map(|i| match i {
            Item::Agent(a) => Some(a),
            _ => None,
        })
    }
}

/// A top-level item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum Item {
    Import(Import),
    Agent(Agent),
    Comment {
        text: String,
        pos: Pos,
    },
    /// An empty line kept between items (at most one in a row).
    Blank,
}

/// The five kinds of import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportKind {
    Llm,
    Tool,
    Memory,
    File,
    Agent,
}

impl ImportKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Llm => "llm",
            Self::Tool => "tool",
            Self::Memory => "memory",
            Self::File => "file",
            Self::Agent => "agent",
        }
    }

    #[must_use]
    pub fn from_word(w: &str) -> Option<Self> {
        Some(match w {
            "llm" => Self::Llm,
            "tool" => Self::Tool,
            "memory" => Self::Memory,
            "file" => Self::File,
            "agent" => Self::Agent,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Import {
    pub kind: ImportKind,
    pub name: String,
    pub uri: String,
    pub pos: Pos,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agent {
    pub main: bool,
    pub name: Option<String>,
    pub body: Vec<Member>,
    pub pos: Pos,
}

impl Agent {
    /// The functions, in order.
    pub fn funcs(&self) -> impl Iterator<Item = &Func> {
        self.body.iter().filter_map(|m| match m {
            Member::Func(f) => Some(f),
            _ => None,
        })
    }
}

/// What an agent's body holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "member", rename_all = "snake_case")]
pub enum Member {
    Config(Config),
    Func(Func),
    Comment { text: String, pos: Pos },
    Blank,
}

/// `model X`, `role "…"`, `description "…"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    pub key: ConfigKey,
    pub value: Expr,
    pub pos: Pos,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigKey {
    Model,
    Role,
    Description,
}

impl ConfigKey {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Role => "role",
            Self::Description => "description",
        }
    }

    #[must_use]
    pub fn from_word(w: &str) -> Option<Self> {
        Some(match w {
            "model" => Self::Model,
            "role" => Self::Role,
            "description" => Self::Description,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Func {
    pub main: bool,
    pub name: Option<String>,
    pub param: Option<Param>,
    pub body: Vec<Stmt>,
    pub pos: Pos,
}

/// A function's one parameter, with the shape its input must have.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Param {
    pub name: String,
    pub shape: Option<Vec<Field>>,
}

/// One field of an object shape: `name type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    pub name: String,
    pub shape: Shape,
    pub pos: Pos,
}

/// What a value must look like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "shape", content = "of", rename_all = "snake_case")]
pub enum Shape {
    String,
    Number,
    Boolean,
    Json,
    /// `list` (any items) or `list[T]`.
    List(Option<Box<Shape>>),
    Object(Vec<Field>),
}

/// A statement, with its end-of-line comment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stmt {
    pub kind: StmtKind,
    pub pos: Pos,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "stmt", rename_all = "snake_case")]
pub enum StmtKind {
    Config {
        key: ConfigKey,
        value: Expr,
    },
    Use {
        expr: Expr,
        budget: Option<Expr>,
    },
    Assign {
        name: String,
        value: Expr,
    },
    Expr {
        expr: Expr,
    },
    Return {
        value: Option<Expr>,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Option<Vec<Stmt>>,
    },
    LoopUntil {
        cond: Expr,
        cap: Expr,
        body: Vec<Stmt>,
    },
    Repeat {
        count: Expr,
        body: Vec<Stmt>,
    },
    For {
        var: String,
        iter: Expr,
        cap: Option<Expr>,
        body: Vec<Stmt>,
    },
    Comment {
        text: String,
    },
    Blank,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::And => "and",
            Self::Or => "or",
        }
    }
}

/// An expression and where it starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "expr", rename_all = "snake_case")]
pub enum ExprKind {
    Str {
        value: String,
    },
    /// A number as written: digits, an optional fraction, an optional `k` (thousands).
    /// [`super::number_value`] reads it.
    Num {
        text: String,
    },
    Bool {
        value: bool,
    },
    None,
    Name {
        name: String,
    },
    List {
        items: Vec<Expr>,
    },
    Object {
        entries: Vec<(String, Expr)>,
    },
    Field {
        target: Box<Expr>,
        name: String,
        /// Where the field's name is (a failure to read the field points there, not at the
        /// start of the whole chain).
        #[serde(skip)]
        at: Pos,
    },
    Index {
        target: Box<Expr>,
        index: Box<Expr>,
        /// Where the `[` is.
        #[serde(skip)]
        at: Pos,
    },
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    Not {
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Generate {
        options: Vec<(String, Expr)>,
        shape: Vec<Field>,
    },
}

/// The names an `if`/`else` assigns in every branch (at a branch's top level, or through an
/// `if`/`else` there that assigns them in every branch of its own): they are known after it,
/// in the analyzer and at run time alike. An `if` without `else` assigns nothing for sure.
#[must_use]
pub fn assigned_in_every_branch(then: &[Stmt], otherwise: Option<&[Stmt]>) -> Vec<String> {
    fn surely(body: &[Stmt]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in body {
            let names = match &s.kind {
                StmtKind::Assign { name, .. } => vec![name.clone()],
                StmtKind::If {
                    then, otherwise, ..
                } => assigned_in_every_branch(then, otherwise.as_deref()),
                _ => Vec::new(),
            };
            for n in names {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }
    let Some(otherwise) = otherwise else {
        return Vec::new();
    };
    let other = surely(otherwise);
    surely(then)
        .into_iter()
        .filter(|n| other.contains(n))
        .collect()
}
