//! `keyless-host as repl`: reads `.as` input line by line (with history and multi-line input),
//! and runs it with core's REPL session (`keyless_core::lang::repl`) and the host's effects.
//! Commands: `:load FILE` (resolved from the current folder), `:trace` (show each input's trace),
//! `:vars`, `:help`, `:quit`.

use crate::lang::effects::HostEffects;
use keyless_core::lang::interp;
use keyless_core::lang::repl::{open_depth, Prepared, Session, REPL_FILE};
use rustyline::error::ReadlineError;
use std::io::Write;
use std::path::Path;

const HELP: &str = "Type statements (x = 1, generate(…) { … }), imports or agents. An input that ends with an expression shows its value (kept as `it`).
  :load FILE   add a file's imports and agents (the path is from the current folder)
  :trace       show the trace of each input (again to hide it)
  :vars        the variables and their values
  :uses        the `use`s that reach every generate from now on (a `use` typed at an input's top level lasts for the session)
  :unuse       forget them
  :quit        leave (or Ctrl-D)";

/// Saves the history in the user's config folder, readable by the user only (inputs may hold
/// anything the user typed).
fn save_history(rl: &mut rustyline::DefaultEditor, path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if rl.save_history(path).is_ok() {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
}

/// Runs the REPL until `:quit` or end of input. Returns the number of inputs that failed.
///
/// # Errors
/// The terminal cannot be read.
pub fn repl(effects: &mut HostEffects<'_>, history: Option<&Path>) -> Result<u32, ReadlineError> {
    let mut rl = rustyline::DefaultEditor::new()?;
    if let Some(h) = history {
        let _ = rl.load_history(h);
    }
    let mut session = Session::default();
    let mut show_trace = false;
    let mut failures = 0;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "keyless .as REPL — :help for help, :quit to leave");
    loop {
        let mut input = match rl.readline("as> ") {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e),
        };
        while open_depth(&input) > 0 {
            match rl.readline("... ") {
                Ok(more) => {
                    input.push('\n');
                    input.push_str(&more);
                }
                Err(ReadlineError::Interrupted) => {
                    input.clear();
                    break;
                }
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e),
            }
        }
        let trimmed = input.trim();
        if trimmed.is_empty() {
            continue;
        }
        let _ = rl.add_history_entry(trimmed);
        if let Some(h) = history {
            save_history(&mut rl, h);
        }
        let source = match trimmed.split_once(' ').unwrap_or((trimmed, "")) {
            (":quit" | ":q" | ":exit", _) => break,
            (":help", _) => {
                let _ = writeln!(out, "{HELP}");
                continue;
            }
            (":trace", _) => {
                show_trace = !show_trace;
                let _ = writeln!(out, "trace {}", if show_trace { "on" } else { "off" });
                continue;
            }
            (":vars", _) => {
                for (k, v) in &session.vars {
                    let _ = writeln!(out, "{k} = {v}");
                }
                continue;
            }
            (":uses", _) => {
                for u in &session.uses {
                    let _ = writeln!(out, "{u}");
                }
                if session.uses.is_empty() {
                    let _ = writeln!(out, "no use lasts for the session");
                }
                continue;
            }
            (":unuse", _) => {
                let n = session.uses.len();
                session.uses.clear();
                let _ = writeln!(out, "forgot {n} use(s)");
                continue;
            }
            (":load", file) => match std::fs::read_to_string(file.trim()) {
                Ok(text) => text,
                Err(e) => {
                    failures += 1;
                    let _ = writeln!(out, "KA_FILE_IO {}: {e}", file.trim());
                    continue;
                }
            },
            (cmd, _) if cmd.starts_with(':') => {
                let _ = writeln!(out, "unknown command {cmd}; :help lists them");
                continue;
            }
            _ => trimmed.to_string(),
        };
        match session.prepare(&source) {
            Err(d) => {
                failures += 1;
                let _ = writeln!(out, "{} line {}: {}", d.code, d.line_or_zero(), d.message);
                if let Some(h) = &d.help {
                    let _ = writeln!(out, "    = help: {h}");
                }
            }
            Ok(Prepared::Declare(module)) => {
                session.module = module;
                let _ = writeln!(out, "ok");
            }
            Ok(Prepared::Run {
                program,
                entry,
                shows,
                offset,
            }) => {
                let (result, trace) = interp::run_program(REPL_FILE, *program, &entry, effects);
                let result = result.map_err(|e| Prepared::localize(offset, e));
                if show_trace {
                    let _ = writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&trace).unwrap_or_default()
                    );
                }
                match result {
                    Ok(v) => {
                        if let Some(shown) =
                            session.absorb(&source, &v, shows).filter(|v| !v.is_null())
                        {
                            let _ = writeln!(
                                out,
                                "{}",
                                serde_json::to_string_pretty(&shown).unwrap_or_default()
                            );
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        let _ = writeln!(out, "{e}");
                    }
                }
            }
        }
    }
    Ok(failures)
}
