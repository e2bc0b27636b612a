//! Pieces: YAML workflows of movements, each gating which commands the model may use.
//!
//! One rule table ([`TOP`], [`MOVEMENT`], [`RULE`], [`TRIGGERS`]) drives both validators:
//! - strict (API and editor writes): every bad entry rejects the piece;
//! - lenient (file load): bad `shared_tools` / `required_mcp` entries are dropped with a warning, and
//!   unknown keys are warnings; every other rule still rejects.
//!
//! Cross-field rules (references, uniqueness, sentinels, SSH) run after the table, in both modes.

pub mod graph;
pub mod run;
pub mod tools;
pub mod yaml;

use crate::diag::Code;
use crate::text::edit_distance;
use serde::Serialize;
use yaml::{Node, Value};

/// Reserved terminal sentinels: reachable only through `@@done` / `@@ask`.
pub const SENTINELS: [&str; 3] = ["COMPLETE", "ABORT", "ASK"];
/// The subtask sentinel accepted in `rules[].next`.
pub const WAIT_SUBTASKS: &str = "WAIT_SUBTASKS";
/// Revisit threshold when a movement does not set `max_consecutive_revisits`.
pub const DEFAULT_MAX_CONSECUTIVE_REVISITS: u32 = 3;

/// Which validator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strictness {
    Strict,
    Lenient,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem in a piece: where it is (path and line), what it is, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    pub path: String,
    pub line: Option<u32>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

/// A transition rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub condition: String,
    pub next: String,
    /// Line of the rule's `next` value.
    pub line: u32,
}

/// One movement (phase) of a piece.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Movement {
    pub name: String,
    pub edit: bool,
    pub persona: String,
    pub instruction: String,
    pub allowed_tools: Vec<String>,
    pub allowed_commands: Option<Vec<String>>,
    pub allowed_ssh_connections: Option<Vec<String>>,
    pub rules: Vec<Rule>,
    pub default_next: Option<String>,
    pub max_consecutive_revisits: Option<u32>,
    pub line: u32,
}

impl Movement {
    #[must_use]
    pub fn revisit_limit(&self) -> u32 {
        self.max_consecutive_revisits
            .unwrap_or(DEFAULT_MAX_CONSECUTIVE_REVISITS)
    }
}

/// A validated piece.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Piece {
    pub name: String,
    pub description: String,
    pub max_movements: u32,
    pub initial_movement: String,
    pub keywords: Vec<String>,
    pub required_mcp: Vec<String>,
    pub shared_tools: Vec<String>,
    pub model: Option<String>,
    pub movements: Vec<Movement>,
}

impl Piece {
    #[must_use]
    pub fn movement(&self, name: &str) -> Option<&Movement> {
        self.movements.iter().find(|m| m.name == name)
    }

    #[must_use]
    pub fn movement_index(&self, name: &str) -> Option<usize> {
        self.movements.iter().position(|m| m.name == name)
    }
}

/// The outcome of validating a piece file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// The piece, when it has no errors.
    pub piece: Option<Piece>,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Validation {
    #[must_use]
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }
}

// ---------------------------------------------------------------------------------------------
// The rule table

/// String formats a field's value (or each entry of a list) must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Any,
    /// Not empty after trimming.
    NonEmpty,
    /// `[a-z0-9-]+`
    PieceName,
    /// `[a-z0-9_-]{1,64}`
    McpSlug,
    /// `'*'` or lowercase hex/hyphen, 8+ characters.
    ConnectionId,
    /// `[A-Za-z0-9_.-]{1,64}`, so `@@done next=<movement>` can name it.
    MovementName,
}

impl Format {
    fn check(self, s: &str) -> Result<(), &'static str> {
        let ok = match self {
            Format::Any => true,
            Format::NonEmpty => !s.trim().is_empty(),
            Format::PieceName => {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            }
            Format::McpSlug => {
                (1..=64).contains(&s.len())
                    && s.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    })
            }
            Format::ConnectionId => {
                s == "*"
                    || (s.len() >= 8
                        && s.bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-'))
            }
            Format::MovementName => {
                (1..=64).contains(&s.len())
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            }
        };
        if ok {
            return Ok(());
        }
        Err(match self {
            Format::Any => "",
            Format::NonEmpty => "must not be empty",
            Format::PieceName => "must be lowercase letters, digits and '-' ([a-z0-9-]+)",
            Format::McpSlug => "must be an MCP server slug ([a-z0-9_-]{1,64})",
            Format::ConnectionId => "must be '*' or a lowercase hex/hyphen connection id of 8+ characters",
            Format::MovementName => "must be 1-64 letters, digits, '_', '.' or '-' so that @@done next=<movement> can name it",
        })
    }
}

/// A field's type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Str(Format),
    Bool,
    PositiveInt,
    StrList(Format),
    Object(&'static [Field]),
    ObjectList {
        fields: &'static [Field],
        non_empty: bool,
    },
}

/// One row of the rule table.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub key: &'static str,
    pub ty: Ty,
    pub required: bool,
    /// Lenient mode drops bad entries of this list (with a warning) instead of rejecting.
    pub lenient_drop: bool,
}

const fn field(key: &'static str, ty: Ty, required: bool) -> Field {
    Field {
        key,
        ty,
        required,
        lenient_drop: false,
    }
}

pub const TRIGGERS: &[Field] = &[field("keywords", Ty::StrList(Format::NonEmpty), false)];

pub const RULE: &[Field] = &[
    field("condition", Ty::Str(Format::NonEmpty), true),
    field("next", Ty::Str(Format::NonEmpty), true),
];

pub const MOVEMENT: &[Field] = &[
    field("name", Ty::Str(Format::MovementName), true),
    field("edit", Ty::Bool, true),
    field("persona", Ty::Str(Format::NonEmpty), true),
    field("instruction", Ty::Str(Format::NonEmpty), true),
    field("allowed_tools", Ty::StrList(Format::NonEmpty), true),
    field("allowed_commands", Ty::StrList(Format::NonEmpty), false),
    field(
        "allowed_ssh_connections",
        Ty::StrList(Format::ConnectionId),
        false,
    ),
    field(
        "rules",
        Ty::ObjectList {
            fields: RULE,
            non_empty: false,
        },
        true,
    ),
    field("default_next", Ty::Str(Format::NonEmpty), false),
    field("max_consecutive_revisits", Ty::PositiveInt, false),
];

pub const TOP: &[Field] = &[
    field("name", Ty::Str(Format::PieceName), true),
    field("description", Ty::Str(Format::NonEmpty), true),
    field("max_movements", Ty::PositiveInt, true),
    field("initial_movement", Ty::Str(Format::NonEmpty), true),
    field("triggers", Ty::Object(TRIGGERS), false),
    Field {
        key: "required_mcp",
        ty: Ty::StrList(Format::McpSlug),
        required: false,
        lenient_drop: true,
    },
    Field {
        key: "shared_tools",
        ty: Ty::StrList(Format::NonEmpty),
        required: false,
        lenient_drop: true,
    },
    field("model", Ty::Str(Format::NonEmpty), false),
    field(
        "movements",
        Ty::ObjectList {
            fields: MOVEMENT,
            non_empty: true,
        },
        true,
    ),
];

// ---------------------------------------------------------------------------------------------
// Table-driven extraction

/// A value read through the table.
#[derive(Debug, Clone)]
enum Got {
    Str(String),
    Bool(bool),
    Int(u32),
    List(Vec<(String, u32)>),
    Object(Fields),
    Objects(Vec<Fields>),
}

#[derive(Debug, Clone, Default)]
struct Fields {
    line: u32,
    values: Vec<(&'static str, Got, u32)>,
}

impl Fields {
    fn get(&self, key: &str) -> Option<(&Got, u32)> {
        self.values
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, g, l)| (g, *l))
    }
    fn str(&self, key: &str) -> Option<String> {
        match self.get(key) {
            Some((Got::Str(s), _)) => Some(s.clone()),
            _ => None,
        }
    }
    fn line_of(&self, key: &str) -> u32 {
        self.get(key).map_or(self.line, |(_, l)| l)
    }
    /// The line of entry `idx` of list `key`.
    fn entry_line(&self, key: &str, idx: usize) -> u32 {
        match self.get(key) {
            Some((Got::List(v), line)) => v.get(idx).map_or(line, |(_, l)| *l),
            _ => self.line,
        }
    }

    fn list(&self, key: &str) -> Option<Vec<String>> {
        match self.get(key) {
            Some((Got::List(v), _)) => Some(v.iter().map(|(s, _)| s.clone()).collect()),
            _ => None,
        }
    }
}

struct Checker {
    mode: Strictness,
    errors: Vec<Finding>,
    warnings: Vec<Finding>,
}

impl Checker {
    fn report(
        &mut self,
        severity: Severity,
        code: Code,
        path: &str,
        line: u32,
        message: String,
        help: Option<String>,
    ) {
        let f = Finding {
            code,
            severity,
            path: path.to_string(),
            line: Some(line),
            message,
            help,
        };
        match severity {
            Severity::Error => self.errors.push(f),
            Severity::Warning => self.warnings.push(f),
        }
    }

    fn error(&mut self, code: Code, path: &str, line: u32, message: String, help: Option<String>) {
        self.report(Severity::Error, code, path, line, message, help);
    }

    fn warn(&mut self, code: Code, path: &str, line: u32, message: String, help: Option<String>) {
        self.report(Severity::Warning, code, path, line, message, help);
    }

    fn object(&mut self, node: &Node, fields: &'static [Field], path: &str) -> Option<Fields> {
        let Value::Map(entries) = &node.value else {
            let what = if path.is_empty() { "the piece" } else { path };
            self.error(
                Code::PieceType,
                path,
                node.line,
                format!("{what} must be a mapping, not {}", node.value.kind()),
                None,
            );
            return None;
        };
        let mut out = Fields {
            line: node.line,
            values: Vec::new(),
        };
        let mut seen: Vec<&str> = Vec::new();
        for (k, v) in entries {
            let Some(key) = k.as_str() else {
                self.error(
                    Code::PieceType,
                    path,
                    k.line,
                    format!("keys must be strings, not {}", k.value.kind()),
                    None,
                );
                continue;
            };
            let key_path = join(path, key);
            if seen.contains(&key) {
                self.error(
                    Code::PieceDuplicate,
                    &key_path,
                    k.line,
                    format!("\"{key}\" is given twice"),
                    Some("YAML keeps only one of them; remove the other".into()),
                );
                continue;
            }
            seen.push(key);
            match fields.iter().find(|f| f.key == key) {
                None => {
                    let near = fields
                        .iter()
                        .map(|f| (edit_distance(key, f.key), f.key))
                        .filter(|(d, _)| *d <= 3)
                        .min_by_key(|(d, _)| *d);
                    let help = near
                        .map(|(_, k)| format!("did you mean \"{k}\"?"))
                        .or_else(|| {
                            Some(format!(
                                "known keys: {}",
                                fields.iter().map(|f| f.key).collect::<Vec<_>>().join(", ")
                            ))
                        });
                    let msg = format!("unknown key \"{key}\"");
                    match self.mode {
                        Strictness::Strict => {
                            self.error(Code::PieceUnknownKey, &key_path, k.line, msg, help)
                        }
                        Strictness::Lenient => self.warn(
                            Code::PieceUnknownKey,
                            &key_path,
                            k.line,
                            format!("{msg} (ignored)"),
                            help,
                        ),
                    }
                }
                Some(f) => {
                    if let Some(got) = self.value(v, f, &key_path) {
                        out.values.push((f.key, got, v.line));
                    }
                }
            }
        }
        for f in fields.iter().filter(|f| f.required) {
            if !seen.contains(&f.key) {
                self.error(
                    Code::PieceMissingField,
                    &join(path, f.key),
                    node.line,
                    format!("missing required field \"{}\"", f.key),
                    None,
                );
            }
        }
        Some(out)
    }

    fn value(&mut self, v: &Node, f: &Field, path: &str) -> Option<Got> {
        match f.ty {
            Ty::Str(fmt) => {
                let Some(s) = v.as_str() else {
                    self.error(
                        Code::PieceType,
                        path,
                        v.line,
                        format!("{} must be a string, not {}", f.key, v.value.kind()),
                        quote_hint(v),
                    );
                    return None;
                };
                if let Err(why) = fmt.check(s) {
                    // Reported; the value is kept so references to it do not cascade.
                    self.error(
                        Code::PieceFormat,
                        path,
                        v.line,
                        format!("\"{s}\": {} {why}", f.key),
                        None,
                    );
                }
                Some(Got::Str(s.to_string()))
            }
            Ty::Bool => match v.value {
                Value::Bool(b) => Some(Got::Bool(b)),
                _ => {
                    self.error(
                        Code::PieceType,
                        path,
                        v.line,
                        format!("{} must be true or false, not {}", f.key, v.value.kind()),
                        None,
                    );
                    None
                }
            },
            Ty::PositiveInt => match v.value {
                Value::Int(i) if i >= 1 => Some(Got::Int(u32::try_from(i).unwrap_or(u32::MAX))),
                Value::Int(i) => {
                    self.error(
                        Code::PieceFormat,
                        path,
                        v.line,
                        format!("{} must be a positive integer, not {i}", f.key),
                        None,
                    );
                    None
                }
                _ => {
                    self.error(
                        Code::PieceType,
                        path,
                        v.line,
                        format!(
                            "{} must be a positive integer, not {}",
                            f.key,
                            v.value.kind()
                        ),
                        None,
                    );
                    None
                }
            },
            Ty::StrList(fmt) => {
                let Value::Seq(items) = &v.value else {
                    let msg = format!(
                        "{} must be a list of strings, not {}",
                        f.key,
                        v.value.kind()
                    );
                    if f.lenient_drop && self.mode == Strictness::Lenient {
                        self.warn(
                            Code::PieceType,
                            path,
                            v.line,
                            format!("{msg} (dropped)"),
                            None,
                        );
                        return Some(Got::List(Vec::new()));
                    }
                    self.error(Code::PieceType, path, v.line, msg, None);
                    return None;
                };
                // Bad entries are reported; the good ones are kept so later rules still run.
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let item_path = format!("{path}[{i}]");
                    let problem = match item.as_str() {
                        None => Some(format!(
                            "entries of {} must be strings, not {}",
                            f.key,
                            item.value.kind()
                        )),
                        Some(s) => fmt
                            .check(s)
                            .err()
                            .map(|why| format!("\"{s}\": {} entries {why}", f.key)),
                    };
                    match problem {
                        None => {
                            out.push((item.as_str().unwrap_or_default().to_string(), item.line))
                        }
                        Some(msg) if f.lenient_drop && self.mode == Strictness::Lenient => {
                            self.warn(
                                Code::PieceFormat,
                                &item_path,
                                item.line,
                                format!("{msg} (entry dropped)"),
                                None,
                            );
                        }
                        Some(msg) => {
                            let code = if item.as_str().is_none() {
                                Code::PieceType
                            } else {
                                Code::PieceFormat
                            };
                            self.error(code, &item_path, item.line, msg, None);
                        }
                    }
                }
                Some(Got::List(out))
            }
            Ty::Object(fields) => self.object(v, fields, path).map(Got::Object),
            Ty::ObjectList { fields, non_empty } => {
                let Value::Seq(items) = &v.value else {
                    self.error(
                        Code::PieceType,
                        path,
                        v.line,
                        format!("{} must be a list, not {}", f.key, v.value.kind()),
                        None,
                    );
                    return None;
                };
                if non_empty && items.is_empty() {
                    self.error(
                        Code::PieceFormat,
                        path,
                        v.line,
                        format!("{} must not be empty", f.key),
                        None,
                    );
                    return None;
                }
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if let Some(obj) = self.object(item, fields, &format!("{path}[{i}]")) {
                        out.push(obj);
                    }
                }
                Some(Got::Objects(out))
            }
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn quote_hint(v: &Node) -> Option<String> {
    match v.value {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Null => {
            Some("quote the value to make it a string".into())
        }
        _ => None,
    }
}

fn build_movement(f: &Fields) -> Movement {
    let rules = match f.get("rules") {
        Some((Got::Objects(rs), _)) => rs
            .iter()
            .map(|r| Rule {
                condition: r.str("condition").unwrap_or_default(),
                next: r.str("next").unwrap_or_default(),
                line: r.line_of("next"),
            })
            .collect(),
        _ => Vec::new(),
    };
    Movement {
        name: f.str("name").unwrap_or_default(),
        edit: matches!(f.get("edit"), Some((Got::Bool(true), _))),
        persona: f.str("persona").unwrap_or_default(),
        instruction: f.str("instruction").unwrap_or_default(),
        allowed_tools: f.list("allowed_tools").unwrap_or_default(),
        allowed_commands: f.list("allowed_commands"),
        allowed_ssh_connections: f.list("allowed_ssh_connections"),
        rules,
        default_next: f.str("default_next"),
        max_consecutive_revisits: match f.get("max_consecutive_revisits") {
            Some((Got::Int(n), _)) => Some(*n),
            _ => None,
        },
        line: f.line,
    }
}

fn build_piece(top: &Fields) -> Piece {
    let movements = match top.get("movements") {
        Some((Got::Objects(ms), _)) => ms.iter().map(build_movement).collect(),
        _ => Vec::new(),
    };
    let keywords = match top.get("triggers") {
        Some((Got::Object(t), _)) => t.list("keywords").unwrap_or_default(),
        _ => Vec::new(),
    };
    Piece {
        name: top.str("name").unwrap_or_default(),
        description: top.str("description").unwrap_or_default(),
        max_movements: match top.get("max_movements") {
            Some((Got::Int(n), _)) => *n,
            _ => 1,
        },
        initial_movement: top.str("initial_movement").unwrap_or_default(),
        keywords,
        required_mcp: top.list("required_mcp").unwrap_or_default(),
        shared_tools: top.list("shared_tools").unwrap_or_default(),
        model: top.str("model"),
        movements,
    }
}

// ---------------------------------------------------------------------------------------------
// Cross-field rules

fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn sentinel_help(s: &str) -> String {
    match s {
        "COMPLETE" => "COMPLETE is reached by the model's @@done (status success), not by a rule; remove this rule or point it at a movement".into(),
        "ABORT" => "ABORT is reached by the model's @@done status=aborted, not by a rule".into(),
        _ => "ASK is reached by the model's @@ask, not by a rule".into(),
    }
}

fn cross_rules(piece: &Piece, top: &Fields, c: &mut Checker) {
    let names: Vec<&str> = piece.movements.iter().map(|m| m.name.as_str()).collect();
    let movement_fields: &[Fields] = match top.get("movements") {
        Some((Got::Objects(ms), _)) => ms,
        _ => &[],
    };
    let no_fields = Fields::default();
    // Unique names, not sentinels.
    for (i, m) in piece.movements.iter().enumerate() {
        let path = format!("movements[{i}].name");
        let line = movement_fields.get(i).map_or(m.line, |f| f.line_of("name"));
        if m.name.is_empty() {
            continue;
        }
        if names[..i].contains(&m.name.as_str()) {
            c.error(
                Code::PieceDuplicate,
                &path,
                line,
                format!("movement name \"{}\" is used twice", m.name),
                Some("movement names must be unique within the piece".into()),
            );
        }
        if SENTINELS.contains(&m.name.as_str()) || m.name == WAIT_SUBTASKS {
            c.error(
                Code::PieceSentinel,
                &path,
                line,
                format!(
                    "\"{}\" is a reserved sentinel and cannot name a movement",
                    m.name
                ),
                None,
            );
        }
    }
    // initial_movement exists.
    if !piece.initial_movement.is_empty()
        && !piece.movements.is_empty()
        && !names.contains(&piece.initial_movement.as_str())
    {
        let help = closest(&piece.initial_movement, names.iter().copied())
            .map(|n| format!("did you mean \"{n}\"?"));
        c.error(
            Code::PieceReference,
            "initial_movement",
            top.line_of("initial_movement"),
            format!(
                "initial_movement \"{}\" is not a movement of this piece",
                piece.initial_movement
            ),
            help.or_else(|| Some(format!("movements: {}", names.join(", ")))),
        );
    }
    for (i, m) in piece.movements.iter().enumerate() {
        let mf = movement_fields.get(i).unwrap_or(&no_fields);
        for (j, r) in m.rules.iter().enumerate() {
            let path = format!("movements[{i}].rules[{j}].next");
            let line = r.line;
            if r.next.is_empty() {
                continue;
            }
            if SENTINELS.contains(&r.next.as_str()) {
                c.error(
                    Code::PieceSentinel,
                    &path,
                    line,
                    format!("rules[].next may not be the terminal sentinel {}", r.next),
                    Some(sentinel_help(&r.next)),
                );
            } else if r.next != WAIT_SUBTASKS && !names.contains(&r.next.as_str()) {
                let help = closest(&r.next, names.iter().copied())
                    .map(|n| format!("did you mean \"{n}\"?"));
                c.error(
                    Code::PieceReference,
                    &path,
                    line,
                    format!("\"{}\" is not a movement of this piece", r.next),
                    help.or_else(|| Some(format!("movements: {}", names.join(", ")))),
                );
            }
        }
        if let Some(d) = &m.default_next {
            let ok = SENTINELS.contains(&d.as_str())
                || d == WAIT_SUBTASKS
                || names.contains(&d.as_str());
            if !ok {
                let help = closest(d, names.iter().copied().chain(SENTINELS))
                    .map(|n| format!("did you mean \"{n}\"?"));
                c.error(
                    Code::PieceReference,
                    &format!("movements[{i}].default_next"),
                    mf.line_of("default_next"),
                    format!("default_next \"{d}\" is neither a movement nor COMPLETE/ABORT/ASK"),
                    help,
                );
            }
        }
        let own_ssh = m.allowed_tools.iter().any(|t| tools::is_ssh_tool(t));
        if own_ssh && m.allowed_ssh_connections.is_none() {
            c.error(
                Code::PieceSsh,
                &format!("movements[{i}].allowed_ssh_connections"),
                mf.line_of("allowed_tools"),
                format!("movement \"{}\" lists an SSH tool but has no allowed_ssh_connections", m.name),
                Some("add allowed_ssh_connections: a list of connection ids, ['*'], or [] to deny all".into()),
            );
        }
    }
    // Lints speak about a piece whose fields are sound; on a broken piece they would only echo
    // the errors.
    if c.errors.is_empty() {
        tools::lint(piece, movement_fields, top, c);
        reachability(piece, c, movement_fields);
    }
}

fn reachability(piece: &Piece, c: &mut Checker, fields: &[Fields]) {
    let Some(start) = piece.movement_index(&piece.initial_movement) else {
        return;
    };
    let mut seen = vec![false; piece.movements.len()];
    let mut stack = vec![start];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let m = &piece.movements[i];
        for next in m
            .rules
            .iter()
            .map(|r| r.next.as_str())
            .chain(m.default_next.as_deref())
        {
            if let Some(j) = piece.movement_index(next) {
                stack.push(j);
            }
        }
    }
    for (i, m) in piece.movements.iter().enumerate() {
        let duplicate = piece.movement_index(&m.name) != Some(i);
        if !seen[i] && !duplicate && !SENTINELS.contains(&m.name.as_str()) {
            let line = fields.get(i).map_or(m.line, |f| f.line);
            c.warn(
                Code::PieceUnreachable,
                &format!("movements[{i}]"),
                line,
                format!(
                    "movement \"{}\" cannot be reached from \"{}\"",
                    m.name, piece.initial_movement
                ),
                Some("add a rule whose next names it, or remove it".into()),
            );
        }
    }
}

/// Validates a piece file.
#[must_use]
pub fn validate(text: &str, mode: Strictness) -> Validation {
    let mut c = Checker {
        mode,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let root = match yaml::load(text) {
        Ok(root) => root,
        Err(e) => {
            c.error(
                Code::PieceYaml,
                "",
                e.line,
                format!("not valid YAML: {}", e.message),
                None,
            );
            return Validation {
                piece: None,
                errors: c.errors,
                warnings: c.warnings,
            };
        }
    };
    let Some(top) = c.object(&root, TOP, "") else {
        return Validation {
            piece: None,
            errors: c.errors,
            warnings: c.warnings,
        };
    };
    let piece = build_piece(&top);
    cross_rules(&piece, &top, &mut c);
    let sort = |v: &mut Vec<Finding>| v.sort_by(|a, b| (a.line, &a.path).cmp(&(b.line, &b.path)));
    sort(&mut c.errors);
    sort(&mut c.warnings);
    Validation {
        piece: c.errors.is_empty().then_some(piece),
        errors: c.errors,
        warnings: c.warnings,
    }
}
