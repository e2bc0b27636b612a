//! The `.as` tokenizer: source text to tokens with 1-based lines and columns (in characters).
//!
//! Decisions where the seed is silent (see docs/language.md):
//! - comments run from `//` or `#` to the end of the line;
//! - strings are `"…"` with the escapes `\"`, `\\`, `\n`, `\t`, `\r`, `\u{HEX}`; a raw newline
//!   inside a string is an error;
//! - numbers are decimal (`42`, `0.5`); `2k` is 2000 (a budget or a generate limit); they keep
//!   their spelling, and are read as values only when a program runs;
//! - newlines are tokens: they end statements and separate object and shape entries.

use super::{Diagnostic, Pos};
use crate::diag::Code;

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    Str(String),
    /// A number as written (see [`super::number_value`]).
    Num(String),
    /// The text of a comment, without its `//` or `#`, one space after it, and trailing spaces.
    Comment(String),
    Newline,
    LBrace,
    RBrace,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Colon,
    Dot,
    Assign,
    EqEq,
    NotEq,
    Less,
    Star,
    Eof,
}

impl Tok {
    /// How a diagnostic names it.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("\"{s}\""),
            Tok::Str(_) => "a string".into(),
            Tok::Num(_) => "a number".into(),
            Tok::Comment(_) => "a comment".into(),
            Tok::Newline => "the end of the line".into(),
            Tok::LBrace => "\"{\"".into(),
            Tok::RBrace => "\"}\"".into(),
            Tok::LParen => "\"(\"".into(),
            Tok::RParen => "\")\"".into(),
            Tok::LBracket => "\"[\"".into(),
            Tok::RBracket => "\"]\"".into(),
            Tok::Comma => "\",\"".into(),
            Tok::Colon => "\":\"".into(),
            Tok::Dot => "\".\"".into(),
            Tok::Assign => "\"=\"".into(),
            Tok::EqEq => "\"==\"".into(),
            Tok::NotEq => "\"!=\"".into(),
            Tok::Less => "\"<\"".into(),
            Tok::Star => "\"*\"".into(),
            Tok::Eof => "the end of the file".into(),
        }
    }
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

/// Splits `src` into tokens, ending with [`Tok::Eof`].
///
/// # Errors
/// The first bad character, unterminated string or bad escape.
pub fn tokenize(src: &str) -> Result<Vec<Token>, Diagnostic> {
    lex(src, None)
}

/// Tokenizes like [`tokenize`], but steps over a character no token starts with, keeping its
/// problem in `bad`, so that the parser can go on and report the rest of the file.
///
/// # Errors
/// An unterminated string or a bad escape or number.
pub fn tokenize_lenient(src: &str, bad: &mut Vec<Diagnostic>) -> Result<Vec<Token>, Diagnostic> {
    lex(src, Some(bad))
}

fn lex(src: &str, mut bad: Option<&mut Vec<Diagnostic>>) -> Result<Vec<Token>, Diagnostic> {
    let mut out = Vec::new();
    let chars: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let at = |line, column| Pos { line, column };
    while i < chars.len() {
        let c = chars[i];
        let start = at(line, col);
        let mut push = |tok: Tok, n: usize, i: &mut usize, col: &mut u32| {
            out.push(Token { tok, pos: start });
            *i += n;
            *col += u32::try_from(n).unwrap_or(1);
        };
        match c {
            '\n' => {
                out.push(Token {
                    tok: Tok::Newline,
                    pos: start,
                });
                i += 1;
                line += 1;
                col = 1;
            }
            ' ' | '\t' | '\r' | '\u{feff}' => {
                i += 1;
                col += 1;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                let (text, n) = comment(&chars[i + 2..]);
                push(Tok::Comment(text), n + 2, &mut i, &mut col);
            }
            '#' => {
                let (text, n) = comment(&chars[i + 1..]);
                push(Tok::Comment(text), n + 1, &mut i, &mut col);
            }
            '{' => push(Tok::LBrace, 1, &mut i, &mut col),
            '}' => push(Tok::RBrace, 1, &mut i, &mut col),
            '(' => push(Tok::LParen, 1, &mut i, &mut col),
            ')' => push(Tok::RParen, 1, &mut i, &mut col),
            '[' => push(Tok::LBracket, 1, &mut i, &mut col),
            ']' => push(Tok::RBracket, 1, &mut i, &mut col),
            ',' => push(Tok::Comma, 1, &mut i, &mut col),
            ':' => push(Tok::Colon, 1, &mut i, &mut col),
            '.' if !chars.get(i + 1).is_some_and(char::is_ascii_digit) => {
                push(Tok::Dot, 1, &mut i, &mut col);
            }
            '*' => push(Tok::Star, 1, &mut i, &mut col),
            '<' => push(Tok::Less, 1, &mut i, &mut col),
            '=' if chars.get(i + 1) == Some(&'=') => push(Tok::EqEq, 2, &mut i, &mut col),
            '=' => push(Tok::Assign, 1, &mut i, &mut col),
            '!' if chars.get(i + 1) == Some(&'=') => push(Tok::NotEq, 2, &mut i, &mut col),
            '"' => {
                let (text, n, lines) = string(&chars[i..], start)?;
                out.push(Token {
                    tok: Tok::Str(text),
                    pos: start,
                });
                i += n;
                let _ = lines;
                col += u32::try_from(n).unwrap_or(1);
            }
            c if c.is_ascii_digit() || c == '.' => {
                let (value, n) = number(&chars[i..], start)?;
                push(Tok::Num(value), n, &mut i, &mut col);
            }
            c if c.is_alphabetic() || c == '_' => {
                let n = chars[i..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .count();
                let word: String = chars[i..i + n].iter().collect();
                push(Tok::Ident(word), n, &mut i, &mut col);
            }
            other => {
                let mut d = Diagnostic::at(
                    Code::AsSyntax,
                    start,
                    format!("unexpected character {other:?}"),
                );
                if other == '>' || other == '!' {
                    d = d.with_help(
                        "the only comparisons are == and != (< is for budgets and caps only)",
                    );
                }
                match bad.as_mut() {
                    Some(found) => {
                        found.push(d);
                        i += 1;
                        col += 1;
                    }
                    None => return Err(d),
                }
            }
        }
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: at(line, col),
    });
    Ok(out)
}

fn comment(rest: &[char]) -> (String, usize) {
    let n = rest.iter().take_while(|c| **c != '\n').count();
    let text: String = rest[..n].iter().collect();
    // One space after the marker is the marker's; the rest is the author's layout.
    let text = text.strip_prefix(' ').unwrap_or(&text).trim_end();
    (text.to_string(), n)
}

fn string(chars: &[char], start: Pos) -> Result<(String, usize, u32), Diagnostic> {
    let mut out = String::new();
    let mut i = 1;
    loop {
        match chars.get(i) {
            None | Some('\n') => {
                return Err(Diagnostic::at(Code::AsSyntax, start, "unterminated string")
                    .with_help("close it with \" on the same line; write \\n for a newline"))
            }
            Some('"') => return Ok((out, i + 1, 0)),
            Some('\\') => {
                let esc = chars.get(i + 1).copied();
                match esc {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('u') if chars.get(i + 2) == Some(&'{') => {
                        let hex: String = chars[i + 3..]
                            .iter()
                            .take_while(|c| c.is_ascii_hexdigit())
                            .collect();
                        let close = i + 3 + hex.chars().count();
                        let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                        match (ch, chars.get(close)) {
                            (Some(ch), Some('}')) if !hex.is_empty() && hex.len() <= 6 => {
                                out.push(ch);
                                i = close + 1;
                                continue;
                            }
                            _ => return Err(bad_escape(start)),
                        }
                    }
                    _ => return Err(bad_escape(start)),
                }
                i += 2;
            }
            Some(c) => {
                out.push(*c);
                i += 1;
            }
        }
    }
}

fn bad_escape(start: Pos) -> Diagnostic {
    Diagnostic::at(Code::AsSyntax, start, "bad escape in a string")
        .with_help("the escapes are \\\" \\\\ \\n \\t \\r and \\u{HEX}")
}

fn number(chars: &[char], start: Pos) -> Result<(String, usize), Diagnostic> {
    let int = chars.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut n = int;
    if chars.get(n) == Some(&'.') && chars.get(n + 1).is_some_and(char::is_ascii_digit) {
        n += 1 + chars[n + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
    }
    if matches!(chars.get(n), Some('k' | 'K')) {
        n += 1;
    }
    let text: String = chars[..n].iter().collect();
    let bad = int == 0
        || chars
            .get(n)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == '.');
    if bad {
        let shown: String = chars
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_' || **c == '.')
            .take(40)
            .collect();
        return Err(Diagnostic::at(
            Code::AsSyntax,
            start,
            format!("\"{shown}\" is not a number"),
        )
        .with_help("a number is digits with an optional fraction and an optional k (thousands)"));
    }
    Ok((text.to_ascii_lowercase(), n))
}
