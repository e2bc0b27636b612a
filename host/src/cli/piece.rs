//! `keyless-host piece validate | tools | graph`.

use crate::error::HostError;
use clap::{Subcommand, ValueEnum};
use keyless_core::diag::Diagnostic;
use keyless_core::piece::tools::effective;
use keyless_core::piece::{graph, validate, Strictness, Validation};
use serde::Serialize;
use std::io::{self, Read, Write};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum PieceCmd {
    /// Validate a piece file: every problem with its path and line.
    Validate {
        /// The piece: a YAML file, or `-` for stdin.
        file: String,
        /// Load leniently (as a file-backed piece): bad shared_tools/required_mcp entries are dropped.
        #[arg(long)]
        lenient: bool,
        /// Print the report as JSON (`{"ok","errors":[…],"warnings":[…]}`).
        #[arg(long)]
        json: bool,
    },
    /// Show each movement's effective tools and the AgentScript commands they allow.
    Tools {
        /// The piece: a YAML file, or `-` for stdin.
        file: String,
        /// Print the tools as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Draw the movements and rules.
    Graph {
        /// The piece: a YAML file, or `-` for stdin.
        file: String,
        /// mermaid (for Markdown) or dot (Graphviz).
        #[arg(long, value_enum, default_value = "mermaid")]
        format: GraphFormat,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

/// The piece file size read at most; larger files are refused by the loader anyway.
const MAX_READ: u64 = keyless_core::piece::yaml::MAX_INPUT_BYTES as u64 + 1;

fn read(file: &str) -> Result<String, HostError> {
    let mut buf = Vec::new();
    let res = if file == "-" {
        io::stdin().lock().take(MAX_READ).read_to_end(&mut buf)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(MAX_READ).read_to_end(&mut buf))
    };
    res.map_err(|source| HostError::Read {
        path: file.to_string(),
        source,
    })?;
    String::from_utf8(buf).map_err(|_| HostError::PieceNotUtf8(file.to_string()))
}

#[derive(Serialize)]
struct ValidateJson<'a> {
    ok: bool,
    errors: &'a [Diagnostic],
    warnings: &'a [Diagnostic],
}

/// The `piece validate --json` report: `{"ok","errors":[diagnostic…],"warnings":[…]}`, each
/// diagnostic with its `code`, `severity`, `line`, `key` (the place by the piece's keys),
/// `message` and `help`.
#[must_use]
pub fn report_json(v: &Validation) -> serde_json::Value {
    serde_json::to_value(ValidateJson {
        ok: v.ok(),
        errors: &v.errors,
        warnings: &v.warnings,
    })
    .unwrap_or(serde_json::Value::Null)
}

fn write_findings(out: &mut impl Write, file: &str, text: &str, v: &Validation) -> io::Result<()> {
    for f in v.errors.iter().chain(&v.warnings) {
        let shown = crate::diagnostics::render_out(&f.clone().in_file(file), Some(text));
        writeln!(out, "{shown}\n")?;
    }
    match &v.piece {
        Some(p) => writeln!(
            out,
            "{file}: ok: piece \"{}\", {} movement(s), {} warning(s)",
            p.name,
            p.movements.len(),
            v.warnings.len()
        ),
        None => writeln!(
            out,
            "{file}: invalid: {} error(s), {} warning(s)",
            v.errors.len(),
            v.warnings.len()
        ),
    }
}

pub fn piece_cmd(cmd: PieceCmd) -> Result<ExitCode, HostError> {
    let mut out = io::stdout().lock();
    match cmd {
        PieceCmd::Validate {
            file,
            lenient,
            json,
        } => {
            let text = read(&file)?;
            let mode = if lenient {
                Strictness::Lenient
            } else {
                Strictness::Strict
            };
            let v = validate(&text, mode);
            if json {
                serde_json::to_writer(&mut out, &report_json(&v))?;
                writeln!(out).map_err(HostError::Write)?;
            } else {
                write_findings(&mut out, &file, &text, &v).map_err(HostError::Write)?;
            }
            Ok(if v.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        PieceCmd::Tools { file, json } => {
            let text = read(&file)?;
            let v = validate(&text, Strictness::Lenient);
            let Some(piece) = &v.piece else {
                write_findings(&mut out, &file, &text, &v).map_err(HostError::Write)?;
                return Ok(ExitCode::from(1));
            };
            let all: Vec<_> = piece
                .movements
                .iter()
                .map(|m| effective(piece, m))
                .collect();
            if json {
                serde_json::to_writer(&mut out, &all)?;
                writeln!(out).map_err(HostError::Write)?;
                return Ok(ExitCode::SUCCESS);
            }
            let w = |out: &mut io::StdoutLock<'_>| -> io::Result<()> {
                for (m, e) in piece.movements.iter().zip(&all) {
                    writeln!(
                        out,
                        "{} ({})",
                        m.name,
                        if m.edit { "edit: true" } else { "edit: false" }
                    )?;
                    let tools: Vec<String> = e
                        .tools
                        .iter()
                        .map(|t| {
                            if t.usable {
                                t.name.clone()
                            } else {
                                format!("{} (unusable)", t.name)
                            }
                        })
                        .collect();
                    writeln!(out, "  tools:    {}", tools.join(", "))?;
                    let cmds: Vec<&str> = e.commands.iter().map(|k| k.name()).collect();
                    writeln!(out, "  commands: {}", cmds.join(", "))?;
                    if let Some(p) = &e.command_patterns {
                        writeln!(out, "  runcommand only: {}", p.join(" | "))?;
                    }
                    for t in e.tools.iter().filter(|t| t.note.is_some()) {
                        writeln!(
                            out,
                            "  note:     {}: {}",
                            t.name,
                            t.note.as_deref().unwrap_or("")
                        )?;
                    }
                    for d in &e.dropped {
                        writeln!(out, "  dropped:  {} ({})", d.name, d.reason)?;
                    }
                }
                Ok(())
            };
            w(&mut out).map_err(HostError::Write)?;
            Ok(ExitCode::SUCCESS)
        }
        PieceCmd::Graph { file, format } => {
            let text = read(&file)?;
            let v = validate(&text, Strictness::Lenient);
            let Some(piece) = &v.piece else {
                write_findings(&mut out, &file, &text, &v).map_err(HostError::Write)?;
                return Ok(ExitCode::from(1));
            };
            let g = match format {
                GraphFormat::Mermaid => graph::mermaid(piece),
                GraphFormat::Dot => graph::dot(piece),
            };
            out.write_all(g.as_bytes()).map_err(HostError::Write)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
