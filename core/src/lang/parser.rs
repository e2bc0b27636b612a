//! The recursive-descent parser of `.as` programs. It stops at the first error, which names the
//! line, the column and what was expected; it never panics, and nesting is bounded
//! ([`super::MAX_DEPTH`]).

use super::ast::*;
use super::lexer::{tokenize, Tok, Token};
use super::{Diagnostic, Pos, MAX_DEPTH, MAX_SOURCE_BYTES};
use crate::diag::Code;

/// The seed's reserved words: not names.
pub const RESERVED: &[&str] = &[
    "import", "from", "main", "agent", "func", "use", "loop", "until", "repeat", "for", "in",
    "return", "if", "else", "and", "or", "not", "generate", "true", "false", "none", "string",
    "number", "boolean", "json", "list",
];

type Res<T> = Result<T, Diagnostic>;

/// Parses a whole file.
///
/// # Errors
/// The first syntax error, or a file or nesting over the limits.
pub fn parse(src: &str) -> Res<Program> {
    if src.len() > MAX_SOURCE_BYTES {
        return Err(Diagnostic::at(
            Code::AsLimit,
            Pos { line: 1, column: 1 },
            format!(
                "the file has {} bytes; .as files are at most {MAX_SOURCE_BYTES}",
                src.len()
            ),
        ));
    }
    let tokens = tokenize(src)?;
    let mut p = Parser {
        tokens,
        i: 0,
        depth: 0,
        recovered: None,
        skipped: Vec::new(),
    };
    p.program()
}

/// How many syntax problems [`parse_all`] reports at most.
pub const MAX_SYNTAX_PROBLEMS: usize = 100;

/// Parses a whole file and, past a syntax error, goes on: the statement, member or item that
/// failed is skipped to the end of its line (or to the `}` that closes its block), and parsing
/// resumes, so every problem in the file is reported (at most [`MAX_SYNTAX_PROBLEMS`]). The tree
/// comes back only when there was none.
#[must_use]
pub fn parse_all(src: &str) -> (Option<Program>, Vec<Diagnostic>) {
    let p = parse_partial(src);
    if p.problems.is_empty() {
        (p.program, p.problems)
    } else {
        (None, p.problems)
    }
}

/// What [`parse_all`] read of a file with syntax problems, so the later stages can look at the
/// rest in the same run.
#[derive(Debug, Default)]
pub struct Partial {
    /// The program with every statement, member or item that failed left out; `None` when even
    /// that could not be read (a bad character stopped the tokenizer, a limit).
    pub program: Option<Program>,
    /// The syntax problems, at most [`MAX_SYNTAX_PROBLEMS`], in file order.
    pub problems: Vec<Diagnostic>,
    /// The names the left-out tokens mention: what they declared is unknown to the rest.
    pub skipped_names: Vec<String>,
    /// The lines the left-out tokens are on.
    pub skipped_lines: Vec<u32>,
}

/// [`parse_all`], keeping what was read past its problems.
#[must_use]
pub fn parse_partial(src: &str) -> Partial {
    if src.len() > MAX_SOURCE_BYTES {
        return Partial {
            problems: parse(src).err().into_iter().collect(),
            ..Partial::default()
        };
    }
    let mut bad = Vec::new();
    let tokens = match super::lexer::tokenize_lenient(src, &mut bad) {
        Ok(t) => t,
        Err(d) => {
            bad.push(d);
            super::by_position(&mut bad);
            return Partial {
                problems: bad,
                ..Partial::default()
            };
        }
    };
    let mut p = Parser {
        tokens,
        i: 0,
        depth: 0,
        recovered: Some(Vec::new()),
        skipped: Vec::new(),
    };
    let result = p.program();
    let mut found = p.recovered.take().unwrap_or_default();
    let program = match result {
        Ok(program) => Some(program),
        Err(d) => {
            found.push(d);
            None
        }
    };
    // A line with a bad character has that problem; what the parser then stumbled on there is
    // the same slip.
    found.retain(|d| !bad.iter().any(|b| b.line == d.line));
    found.extend(bad);
    super::by_position(&mut found);
    found.truncate(MAX_SYNTAX_PROBLEMS);
    let mut skipped_names = Vec::new();
    let mut skipped_lines: Vec<u32> = Vec::new();
    for &(from, to) in &p.skipped {
        for t in &p.tokens[from..to.min(p.tokens.len())] {
            skipped_lines.push(t.pos.line);
            if let Tok::Ident(s) = &t.tok {
                skipped_names.push(s.clone());
            }
        }
    }
    skipped_lines.extend(found.iter().filter_map(|d| d.line));
    skipped_lines.sort_unstable();
    skipped_lines.dedup();
    skipped_names.sort();
    skipped_names.dedup();
    Partial {
        program,
        problems: found,
        skipped_names,
        skipped_lines,
    }
}

struct Parser {
    tokens: Vec<Token>,
    i: usize,
    depth: u32,
    /// When recovering ([`parse_all`]): the problems met so far.
    recovered: Option<Vec<Diagnostic>>,
    /// When recovering: the token ranges left out.
    skipped: Vec<(usize, usize)>,
}

fn is_name(w: &str) -> bool {
    !RESERVED.contains(&w)
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.tokens[self.i.min(self.tokens.len() - 1)].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.tokens[(self.i + n).min(self.tokens.len() - 1)].tok
    }

    fn pos(&self) -> Pos {
        self.tokens[self.i.min(self.tokens.len() - 1)].pos
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.i.min(self.tokens.len() - 1)].clone();
        if self.i < self.tokens.len() - 1 {
            self.i += 1;
        }
        t
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == w)
    }

    fn error(&self, expected: &str) -> Diagnostic {
        let found = self.peek().describe();
        let mut d = Diagnostic::at(
            Code::AsSyntax,
            self.pos(),
            format!("expected {expected}, found {found}"),
        );
        if *self.peek() == Tok::Less {
            d = d.with_help(
                "< is not a comparison: it only sets a budget (use x < 2k) or a cap (loop until c < 6, for x in xs < 10)",
            );
        }
        d
    }

    fn expect(&mut self, tok: &Tok, what: &str) -> Res<Pos> {
        if self.peek() == tok {
            Ok(self.bump().pos)
        } else {
            Err(self.error(what))
        }
    }

    fn expect_word(&mut self, w: &str) -> Res<Pos> {
        if self.is_word(w) {
            Ok(self.bump().pos)
        } else {
            Err(self.error(&format!("\"{w}\"")))
        }
    }

    fn name(&mut self, what: &str) -> Res<String> {
        match self.peek().clone() {
            Tok::Ident(w) if is_name(&w) => {
                self.bump();
                Ok(w)
            }
            Tok::Ident(w) => Err(Diagnostic::at(
                Code::AsSyntax,
                self.pos(),
                format!("expected {what}, found the reserved word \"{w}\""),
            )
            .with_help("reserved words cannot name anything; pick another name")),
            _ => Err(self.error(what)),
        }
    }

    /// After a syntax error: keeps it and skips to where parsing can resume (the next line at
    /// this nesting, or the `}` that closes the current block, left for the block to read).
    /// Without recovery, or past [`MAX_SYNTAX_PROBLEMS`], the error ends the parse.
    ///
    /// `start` is the token where the failed statement, member or item began: brackets it opened
    /// before the error are still open, so a multi-line object does not end the block early.
    fn recover(&mut self, d: Diagnostic, depth: u32, start: usize) -> Res<()> {
        let Some(found) = self.recovered.as_mut() else {
            return Err(d);
        };
        // A limit (nesting too deep) is not a slip that the next line can survive.
        if d.code != Code::AsSyntax || found.len() + 1 >= MAX_SYNTAX_PROBLEMS {
            return Err(d);
        }
        // One place, one problem (an unclosed block and its agent both end at the file's end).
        if found
            .last()
            .is_none_or(|l| (l.line, l.column) != (d.line, d.column))
        {
            found.push(d);
        }
        self.depth = depth;
        // Braces opened since the start (a `}` past them closes the block around), and the
        // brackets and parentheses (a line break inside them does not end the statement).
        let (mut braces, mut others) = (0i64, 0i64);
        let count = |t: &Tok, braces: &mut i64, others: &mut i64| match t {
            Tok::LBrace => *braces += 1,
            Tok::RBrace => *braces = (*braces - 1).max(0),
            Tok::LBracket | Tok::LParen => *others += 1,
            Tok::RBracket | Tok::RParen => *others = (*others - 1).max(0),
            _ => {}
        };
        for t in &self.tokens[start.min(self.i)..self.i] {
            count(&t.tok, &mut braces, &mut others);
        }
        let from = start.min(self.i);
        loop {
            match self.peek() {
                Tok::Eof | Tok::RBrace if braces == 0 || *self.peek() == Tok::Eof => {
                    self.skipped.push((from, self.i));
                    return Ok(());
                }
                Tok::Newline if braces == 0 && others == 0 => {
                    self.skipped.push((from, self.i));
                    self.bump();
                    return Ok(());
                }
                t => {
                    let t = t.clone();
                    count(&t, &mut braces, &mut others);
                }
            }
            self.bump();
        }
    }

    fn deeper(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::at(
                Code::AsLimit,
                self.pos(),
                format!("nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(())
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
    }

    /// Newlines, and whether they held an empty line.
    fn newlines(&mut self) -> u32 {
        let mut n = 0;
        while matches!(self.peek(), Tok::Newline) {
            self.bump();
            n += 1;
        }
        n
    }

    /// The end of a statement or item: an optional end-of-line comment, then a newline, `}` or
    /// the end of the file.
    fn end_of_line(&mut self) -> Res<Option<String>> {
        let comment = match self.peek().clone() {
            Tok::Comment(c) => {
                self.bump();
                Some(c)
            }
            _ => None,
        };
        match self.peek() {
            Tok::Newline | Tok::RBrace | Tok::Eof => Ok(comment),
            _ => Err(self.error("the end of the line")),
        }
    }

    fn program(&mut self) -> Res<Program> {
        let mut items = Vec::new();
        loop {
            let blank = self.newlines() > 1;
            if blank && !items.is_empty() && !matches!(items.last(), Some(Item::Blank)) {
                items.push(Item::Blank);
            }
            let pos = self.pos();
            let start = self.i;
            match self.peek().clone() {
                Tok::Eof => break,
                Tok::Comment(text) => {
                    self.bump();
                    items.push(Item::Comment { text, pos });
                }
                Tok::Ident(w) if w == "import" => match self.import() {
                    Ok(i) => items.push(Item::Import(i)),
                    Err(d) => self.recover(d, 0, start)?,
                },
                Tok::Ident(w) if w == "agent" || w == "main" => match self.agent() {
                    Ok(a) => items.push(Item::Agent(a)),
                    Err(d) => {
                        self.recover(d, 0, start)?;
                        // The rest of a broken agent's body is read as its own, not as items.
                        if self.peek() == &Tok::RBrace {
                            self.bump();
                        }
                    }
                },
                _ => {
                    let d = self.error("\"import\" or an agent");
                    self.recover(d, 0, start)?;
                    if self.peek() == &Tok::RBrace {
                        self.bump();
                    }
                }
            }
        }
        while matches!(items.last(), Some(Item::Blank)) {
            items.pop();
        }
        Ok(Program { items })
    }

    fn import(&mut self) -> Res<Import> {
        let pos = self.expect_word("import")?;
        let kind = match self.peek().clone() {
            Tok::Ident(w) => ImportKind::from_word(&w),
            _ => None,
        }
        .ok_or_else(|| self.error("an import kind (llm, tool, memory, file or agent)"))?;
        self.bump();
        let name = self.name("the imported name")?;
        self.expect_word("from")?;
        let uri = match self.peek().clone() {
            Tok::Str(s) => {
                self.bump();
                s
            }
            _ => return Err(self.error("a quoted URI")),
        };
        let comment = self.end_of_line()?;
        Ok(Import {
            kind,
            name,
            uri,
            pos,
            comment,
        })
    }

    /// `[main] KEYWORD [NAME]` before `open`: whether it is main, and its name if it has one.
    fn header(&mut self, keyword: &str, open: &Tok, what: &str) -> Res<(bool, Option<String>)> {
        let main = self.is_word("main");
        if main {
            self.bump();
        }
        self.expect_word(keyword)?;
        let name = if self.peek() == open {
            None
        } else {
            Some(self.name(what)?)
        };
        Ok((main, name))
    }

    fn agent(&mut self) -> Res<Agent> {
        let pos = self.pos();
        let (main, name) = self.header("agent", &Tok::LBrace, "the agent's name")?;
        self.expect(&Tok::LBrace, "\"{\"")?;
        self.deeper()?;
        let mut body = Vec::new();
        loop {
            let blank = self.newlines() > 1;
            if blank && !body.is_empty() && !matches!(body.last(), Some(Member::Blank)) {
                body.push(Member::Blank);
            }
            let at = self.pos();
            let start = self.i;
            match self.peek().clone() {
                Tok::RBrace => {
                    self.bump();
                    break;
                }
                Tok::Comment(text) => {
                    self.bump();
                    body.push(Member::Comment { text, pos: at });
                }
                Tok::Ident(w)
                    if w == "func"
                        || (w == "main" && self.peek_at(1) == &Tok::Ident("func".into())) =>
                {
                    let depth = self.depth;
                    match self.func() {
                        Ok(f) => body.push(Member::Func(f)),
                        Err(d) => self.recover(d, depth, start)?,
                    }
                }
                Tok::Ident(w) if ConfigKey::from_word(&w).is_some() => {
                    self.bump();
                    let key = ConfigKey::from_word(&w).unwrap_or(ConfigKey::Model);
                    let depth = self.depth;
                    let value = match self.expr().and_then(|v| Ok((v, self.end_of_line()?))) {
                        Ok(v) => v,
                        Err(d) => {
                            self.recover(d, depth, start)?;
                            continue;
                        }
                    };
                    body.push(Member::Config(Config {
                        key,
                        value: value.0,
                        pos: at,
                        comment: value.1,
                    }));
                }
                Tok::Eof => return Err(self.error("\"}\" to close the agent")),
                _ => {
                    let d = self.error("model, role, description, a func or \"}\"");
                    let depth = self.depth;
                    self.recover(d, depth, start)?;
                }
            }
        }
        while matches!(body.last(), Some(Member::Blank)) {
            body.pop();
        }
        self.depth -= 1;
        Ok(Agent {
            main,
            name,
            body,
            pos,
        })
    }

    fn func(&mut self) -> Res<Func> {
        let pos = self.pos();
        let (main, name) = self.header("func", &Tok::LParen, "the function's name")?;
        self.expect(&Tok::LParen, "\"(\"")?;
        self.skip_newlines();
        let param = if matches!(self.peek(), Tok::RParen) {
            None
        } else {
            let name = self.name("the parameter's name")?;
            self.skip_newlines();
            let shape = if matches!(self.peek(), Tok::LBrace) {
                Some(self.shape_fields()?)
            } else {
                None
            };
            self.skip_newlines();
            Some(Param { name, shape })
        };
        self.expect(&Tok::RParen, "\")\" (a function takes one parameter)")?;
        let body = self.block()?;
        Ok(Func {
            main,
            name,
            param,
            body,
            pos,
        })
    }

    fn block(&mut self) -> Res<Vec<Stmt>> {
        self.expect(&Tok::LBrace, "\"{\"")?;
        self.deeper()?;
        let mut out: Vec<Stmt> = Vec::new();
        loop {
            let blank = self.newlines() > 1;
            if blank
                && !out.is_empty()
                && !matches!(out.last().map(|s| &s.kind), Some(StmtKind::Blank))
            {
                out.push(Stmt {
                    kind: StmtKind::Blank,
                    pos: self.pos(),
                    comment: None,
                });
            }
            match self.peek() {
                Tok::RBrace => {
                    self.bump();
                    break;
                }
                Tok::Eof => return Err(self.error("\"}\" to close the block")),
                _ => {
                    let (depth, start) = (self.depth, self.i);
                    match self.stmt() {
                        Ok(st) => out.push(st),
                        Err(d) => self.recover(d, depth, start)?,
                    }
                }
            }
        }
        while matches!(out.last().map(|s| &s.kind), Some(StmtKind::Blank)) {
            out.pop();
        }
        self.depth -= 1;
        Ok(out)
    }

    fn stmt(&mut self) -> Res<Stmt> {
        let pos = self.pos();
        let tok = self.peek().clone();
        let kind = match &tok {
            Tok::Comment(text) => {
                self.bump();
                return Ok(Stmt {
                    kind: StmtKind::Comment { text: text.clone() },
                    pos,
                    comment: None,
                });
            }
            Tok::Ident(w) => match w.as_str() {
                "use" => {
                    self.bump();
                    let expr = self.expr()?;
                    let budget = self.cap()?;
                    StmtKind::Use { expr, budget }
                }
                "return" => {
                    self.bump();
                    let value = if matches!(
                        self.peek(),
                        Tok::Newline | Tok::RBrace | Tok::Eof | Tok::Comment(_)
                    ) {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    StmtKind::Return { value }
                }
                "if" => return self.if_stmt(pos),
                "loop" => {
                    self.bump();
                    self.expect_word("until")?;
                    let cond = self.expr()?;
                    let Some(cap) = self.cap()? else {
                        return Err(self.error("\"<\" and the loop's cap (loop until C < N)"));
                    };
                    let body = self.block()?;
                    StmtKind::LoopUntil { cond, cap, body }
                }
                "repeat" => {
                    self.bump();
                    self.expect(&Tok::Star, "\"*\" (repeat * N)")?;
                    let count = self.expr()?;
                    let body = self.block()?;
                    StmtKind::Repeat { count, body }
                }
                "for" => {
                    self.bump();
                    let var = self.name("the loop variable")?;
                    self.expect_word("in")?;
                    let iter = self.expr()?;
                    let cap = self.cap()?;
                    let body = self.block()?;
                    StmtKind::For {
                        var,
                        iter,
                        cap,
                        body,
                    }
                }
                w if ConfigKey::from_word(w).is_some()
                    && !matches!(
                        self.peek_at(1),
                        Tok::Assign
                            | Tok::Dot
                            | Tok::LParen
                            | Tok::LBracket
                            | Tok::Newline
                            | Tok::RBrace
                            | Tok::Eof
                    ) =>
                {
                    let key = ConfigKey::from_word(w).unwrap_or(ConfigKey::Model);
                    self.bump();
                    let value = self.expr()?;
                    StmtKind::Config { key, value }
                }
                w if self.peek_at(1) == &Tok::Assign => {
                    if !is_name(w) {
                        return Err(Diagnostic::at(
                            Code::AsSyntax,
                            pos,
                            format!("\"{w}\" is a reserved word and cannot be assigned"),
                        ));
                    }
                    let name = w.to_string();
                    self.bump();
                    self.bump();
                    let value = self.expr()?;
                    StmtKind::Assign { name, value }
                }
                _ => StmtKind::Expr { expr: self.expr()? },
            },
            _ => StmtKind::Expr { expr: self.expr()? },
        };
        let comment = self.end_of_line()?;
        Ok(Stmt { kind, pos, comment })
    }

    /// `< N` after a use, a loop condition or a for list.
    fn cap(&mut self) -> Res<Option<Expr>> {
        if matches!(self.peek(), Tok::Less) {
            self.bump();
            Ok(Some(self.primary()?))
        } else {
            Ok(None)
        }
    }

    fn if_stmt(&mut self, pos: Pos) -> Res<Stmt> {
        self.expect_word("if")?;
        let cond = self.expr()?;
        let then = self.block()?;
        let otherwise = if self.is_word("else") {
            self.bump();
            if self.is_word("if") {
                let inner_pos = self.pos();
                self.deeper()?;
                let inner = self.if_stmt(inner_pos)?;
                self.depth -= 1;
                Some(vec![inner])
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        let comment = self.end_of_line()?;
        Ok(Stmt {
            kind: StmtKind::If {
                cond,
                then,
                otherwise,
            },
            pos,
            comment,
        })
    }

    // ---- expressions: or < and < not < == != < postfix < primary ----

    fn expr(&mut self) -> Res<Expr> {
        self.deeper()?;
        let e = self.or();
        self.depth -= 1;
        e
    }

    fn binary(&mut self, word: &str, op: BinOp, next: fn(&mut Self) -> Res<Expr>) -> Res<Expr> {
        let mut left = next(self)?;
        while self.is_word(word) {
            self.bump();
            let right = next(self)?;
            left = Expr {
                pos: left.pos,
                kind: ExprKind::Binary {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                },
            };
        }
        Ok(left)
    }

    fn or(&mut self) -> Res<Expr> {
        self.binary("or", BinOp::Or, Self::and)
    }

    fn and(&mut self) -> Res<Expr> {
        self.binary("and", BinOp::And, Self::not)
    }

    fn not(&mut self) -> Res<Expr> {
        if self.is_word("not") {
            let pos = self.bump().pos;
            self.deeper()?;
            let operand = self.not()?;
            self.depth -= 1;
            return Ok(Expr {
                kind: ExprKind::Not {
                    operand: Box::new(operand),
                },
                pos,
            });
        }
        self.equality()
    }

    fn equality(&mut self) -> Res<Expr> {
        let mut left = self.postfix()?;
        loop {
            let op = match self.peek() {
                Tok::EqEq => BinOp::Eq,
                Tok::NotEq => BinOp::Ne,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.postfix()?;
            left = Expr {
                pos: left.pos,
                kind: ExprKind::Binary {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                },
            };
        }
    }

    fn postfix(&mut self) -> Res<Expr> {
        let mut e = self.primary()?;
        let mut links = 0u32;
        loop {
            links += 1;
            if links > MAX_DEPTH * 4 {
                return Err(Diagnostic::at(
                    Code::AsLimit,
                    self.pos(),
                    "too many calls, fields or indexes in a row",
                ));
            }
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    let at = self.pos();
                    let name = match self.peek().clone() {
                        // Field names may be any word (`.length`, `.add`, `plan.steps`).
                        Tok::Ident(w) => {
                            self.bump();
                            w
                        }
                        _ => return Err(self.error("a field name after \".\"")),
                    };
                    e = Expr {
                        pos: e.pos,
                        kind: ExprKind::Field {
                            target: Box::new(e),
                            name,
                            at,
                        },
                    };
                }
                Tok::LBracket => {
                    let at = self.pos();
                    self.bump();
                    self.skip_newlines();
                    let index = self.expr()?;
                    self.skip_newlines();
                    self.expect(&Tok::RBracket, "\"]\"")?;
                    e = Expr {
                        pos: e.pos,
                        kind: ExprKind::Index {
                            target: Box::new(e),
                            index: Box::new(index),
                            at,
                        },
                    };
                }
                Tok::LParen => {
                    self.bump();
                    let args = self.list_of(&Tok::RParen, "\")\"")?;
                    e = Expr {
                        pos: e.pos,
                        kind: ExprKind::Call {
                            callee: Box::new(e),
                            args,
                        },
                    };
                }
                _ => return Ok(e),
            }
        }
    }

    /// Comma-separated expressions up to `close` (newlines allowed anywhere).
    fn list_of(&mut self, close: &Tok, what: &str) -> Res<Vec<Expr>> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines();
            if self.peek() == close {
                self.bump();
                return Ok(items);
            }
            items.push(self.expr()?);
            self.skip_newlines();
            match self.peek() {
                Tok::Comma => {
                    self.bump();
                }
                t if t == close => {}
                _ => return Err(self.error(&format!("\",\" or {what}"))),
            }
        }
    }

    fn primary(&mut self) -> Res<Expr> {
        let pos = self.pos();
        let kind = match self.peek().clone() {
            Tok::Str(value) => {
                self.bump();
                ExprKind::Str { value }
            }
            Tok::Num(text) => {
                self.bump();
                ExprKind::Num { text }
            }
            Tok::LBracket => {
                self.bump();
                self.deeper()?;
                let items = self.list_of(&Tok::RBracket, "\"]\"")?;
                self.depth -= 1;
                ExprKind::List { items }
            }
            Tok::LBrace => {
                self.deeper()?;
                let entries = self.object()?;
                self.depth -= 1;
                ExprKind::Object { entries }
            }
            Tok::LParen => {
                self.bump();
                self.skip_newlines();
                let inner = self.expr()?;
                self.skip_newlines();
                self.expect(&Tok::RParen, "\")\"")?;
                return Ok(inner);
            }
            Tok::Ident(w) => match w.as_str() {
                "true" | "false" => {
                    self.bump();
                    ExprKind::Bool { value: w == "true" }
                }
                "none" => {
                    self.bump();
                    ExprKind::None
                }
                "generate" => {
                    self.bump();
                    return self.generate(pos);
                }
                w if is_name(w) => {
                    self.bump();
                    ExprKind::Name {
                        name: w.to_string(),
                    }
                }
                _ => return Err(self.error("a value")),
            },
            _ => return Err(self.error("a value")),
        };
        Ok(Expr { kind, pos })
    }

    /// `{ key: value, … }`: entries separated by commas or newlines.
    fn object(&mut self) -> Res<Vec<(String, Expr)>> {
        self.expect(&Tok::LBrace, "\"{\"")?;
        let mut entries: Vec<(String, Expr)> = Vec::new();
        loop {
            self.skip_newlines();
            let key = match self.peek().clone() {
                Tok::RBrace => {
                    self.bump();
                    return Ok(entries);
                }
                Tok::Ident(k) | Tok::Str(k) => {
                    self.bump();
                    k
                }
                _ => return Err(self.error("a key or \"}\"")),
            };
            self.expect(&Tok::Colon, "\":\" after the key")?;
            self.skip_newlines();
            let value = self.expr()?;
            entries.push((key, value));
            match self.peek() {
                Tok::Comma | Tok::Newline => {
                    self.bump();
                }
                Tok::RBrace => {}
                _ => return Err(self.error("\",\", a new line or \"}\"")),
            }
        }
    }

    fn generate(&mut self, pos: Pos) -> Res<Expr> {
        self.expect(&Tok::LParen, "\"(\" after generate")?;
        self.skip_newlines();
        let options = self.object()?;
        self.skip_newlines();
        self.expect(&Tok::RParen, "\")\"")?;
        self.expect(
            &Tok::LBrace,
            "\"{\" and the return shape (generate(…) { return { … } })",
        )?;
        self.skip_newlines();
        self.expect_word("return")?;
        let shape = self.shape_fields()?;
        self.skip_newlines();
        self.expect(&Tok::RBrace, "\"}\" after the return shape")?;
        Ok(Expr {
            kind: ExprKind::Generate { options, shape },
            pos,
        })
    }

    /// `{ name type … }`: fields separated by newlines or commas.
    fn shape_fields(&mut self) -> Res<Vec<Field>> {
        self.expect(&Tok::LBrace, "\"{\" and the fields of a shape")?;
        self.deeper()?;
        let mut fields = Vec::new();
        loop {
            self.skip_newlines();
            let pos = self.pos();
            let name = match self.peek().clone() {
                Tok::RBrace => {
                    self.bump();
                    self.depth -= 1;
                    return Ok(fields);
                }
                Tok::Ident(n) => {
                    self.bump();
                    n
                }
                _ => return Err(self.error("a field name or \"}\"")),
            };
            let shape = self.shape()?;
            fields.push(Field { name, shape, pos });
            match self.peek() {
                Tok::Comma | Tok::Newline => {
                    self.bump();
                }
                Tok::RBrace => {}
                Tok::Comment(_) => {
                    // A comment inside a shape is not kept: refuse it rather than lose it.
                    return Err(Diagnostic::at(
                        Code::AsSyntax,
                        self.pos(),
                        "comments are not allowed inside a shape",
                    )
                    .with_help("put the comment above the generate or the function"));
                }
                _ => return Err(self.error("a new line, \",\" or \"}\"")),
            }
        }
    }

    fn shape(&mut self) -> Res<Shape> {
        match self.peek().clone() {
            Tok::Ident(w) => {
                self.bump();
                Ok(match w.as_str() {
                    "string" => Shape::String,
                    "number" => Shape::Number,
                    "boolean" => Shape::Boolean,
                    "json" => Shape::Json,
                    "list" => {
                        if matches!(self.peek(), Tok::LBracket) {
                            self.bump();
                            self.deeper()?;
                            let inner = self.shape()?;
                            self.depth -= 1;
                            self.expect(&Tok::RBracket, "\"]\"")?;
                            Shape::List(Some(Box::new(inner)))
                        } else {
                            Shape::List(None)
                        }
                    }
                    other => {
                        let d = Diagnostic::at(
                            Code::AsGenerate,
                            self.tokens[self.i - 1].pos,
                            format!("\"{other}\" is not a shape type"),
                        )
                        .with_help(
                            "the types are string, number, boolean, json, list, list[T] and { … }",
                        );
                        // Recovering, the field reads as `json` and the rest of the file is
                        // still checked: a misspelt type hides nothing else.
                        match self.recovered.as_mut() {
                            Some(found) if found.len() + 1 < MAX_SYNTAX_PROBLEMS => {
                                found.push(d);
                                Shape::Json
                            }
                            _ => return Err(d),
                        }
                    }
                })
            }
            Tok::LBrace => Ok(Shape::Object(self.shape_fields()?)),
            _ => {
                Err(self
                    .error("a shape type (string, number, boolean, json, list, list[T], { … })"))
            }
        }
    }
}
