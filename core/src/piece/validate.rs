//! The validators: the table-driven extraction, then the cross-field rules (references,
//! uniqueness, sentinels, reachability), strict or lenient.

use super::*;
use crate::diag::Code;
use crate::text::edit_distance;
use yaml::{Node, Value};

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
pub(super) struct Fields {
    pub(super) line: u32,
    values: Vec<(&'static str, Got, u32)>,
}

impl Fields {
    fn get(&self, key: &str) -> Option<(&Got, u32)> {
        self.values
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, g, l)| (g, *l))
    }
    pub(super) fn str(&self, key: &str) -> Option<String> {
        match self.get(key) {
            Some((Got::Str(s), _)) => Some(s.clone()),
            _ => None,
        }
    }
    pub(super) fn line_of(&self, key: &str) -> u32 {
        self.get(key).map_or(self.line, |(_, l)| l)
    }
    /// The line of entry `idx` of list `key`.
    pub(super) fn entry_line(&self, key: &str, idx: usize) -> u32 {
        match self.get(key) {
            Some((Got::List(v), line)) => v.get(idx).map_or(line, |(_, l)| *l),
            _ => self.line,
        }
    }

    pub(super) fn list(&self, key: &str) -> Option<Vec<String>> {
        match self.get(key) {
            Some((Got::List(v), _)) => Some(v.iter().map(|(s, _)| s.clone()).collect()),
            _ => None,
        }
    }
}

pub(super) struct Checker {
    mode: Strictness,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl Checker {
    pub(super) fn report(
        &mut self,
        severity: Severity,
        code: Code,
        path: &str,
        line: u32,
        message: String,
        help: Option<String>,
    ) {
        let mut f = Diagnostic::new(code, Some(line), message)
            .with_severity(severity)
            .with_key(path);
        f.help = help;
        match severity {
            Severity::Error => self.errors.push(f),
            Severity::Warning => self.warnings.push(f),
        }
    }

    pub(super) fn error(
        &mut self,
        code: Code,
        path: &str,
        line: u32,
        message: String,
        help: Option<String>,
    ) {
        self.report(Severity::Error, code, path, line, message, help);
    }

    pub(super) fn warn(
        &mut self,
        code: Code,
        path: &str,
        line: u32,
        message: String,
        help: Option<String>,
    ) {
        self.report(Severity::Warning, code, path, line, message, help);
    }

    /// A mistake the piece still loads with (a tool name that is dropped): an error in strict
    /// mode (the editor, `piece validate`), a warning when a file-backed piece is loaded.
    pub(super) fn refuse_or_warn(
        &mut self,
        code: Code,
        path: &str,
        line: u32,
        message: String,
        help: Option<String>,
    ) {
        match self.mode {
            Strictness::Strict => self.error(code, path, line, message, help),
            Strictness::Lenient => self.warn(code, path, line, message, help),
        }
    }

    /// A key the schema does not take: an error in strict mode; in lenient mode the entry is
    /// ignored with a warning under the same code.
    fn refuse_or_ignore(
        &mut self,
        code: Code,
        path: &str,
        line: u32,
        message: String,
        help: Option<String>,
    ) {
        let message = match self.mode {
            Strictness::Strict => message,
            Strictness::Lenient => format!("{message} (ignored)"),
        };
        self.refuse_or_warn(code, path, line, message, help);
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
                self.refuse_or_ignore(
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
                    self.refuse_or_ignore(Code::PieceUnknownKey, &key_path, k.line, msg, help);
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
        _ => "ASK is reached by the model's @@done status=needs_user_input, not by a rule".into(),
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
    let sort = |v: &mut Vec<Diagnostic>| v.sort_by(|a, b| (a.line, &a.key).cmp(&(b.line, &b.key)));
    sort(&mut c.errors);
    sort(&mut c.warnings);
    Validation {
        piece: c.errors.is_empty().then_some(piece),
        errors: c.errors,
        warnings: c.warnings,
    }
}

/// Whether `name` can name a stored piece: 1 to 64 letters, digits, `-` and `_` (the file is
/// `NAME.yaml`, and a session asks for it by that name).
#[must_use]
pub fn valid_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Validates a piece about to be stored as `name` (`PUT /v1/pieces/{name}`, the piece editor):
/// strictly, and its `name` must be `name`, a valid file name.
#[must_use]
pub fn validate_as(text: &str, name: &str) -> Validation {
    let mut v = validate(text, Strictness::Strict);
    let problem = if valid_file_name(name) {
        v.piece.as_ref().filter(|p| p.name != name).map(|p| {
            (
                format!(
                    "the piece is named \"{}\" but is saved as \"{name}\"",
                    p.name
                ),
                format!("set name: {name}, or save it under its own name"),
            )
        })
    } else {
        Some((
            format!(
                "\"{}\" cannot name a stored piece",
                crate::text::truncate_chars(name, 64)
            ),
            "use 1 to 64 letters, digits, - and _".to_string(),
        ))
    };
    if let Some((message, help)) = problem {
        let line = text
            .lines()
            .position(|l| l.starts_with("name:"))
            .and_then(|i| u32::try_from(i + 1).ok());
        v.errors.insert(
            0,
            Diagnostic::new(Code::PieceFormat, line, message)
                .with_key("name")
                .with_help(help),
        );
        v.piece = None;
    }
    v
}
