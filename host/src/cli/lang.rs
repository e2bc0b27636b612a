//! `keyless-host as check | fmt`: `.as` programs, checked and formatted by core's
//! `lang` module. `check` follows `import agent` files to find import cycles and their errors.

use super::args::{UnsafeWorkspace, WorkspaceDir};
use crate::error::HostError;
use clap::Subcommand;
use keyless_core::lang::{self, analyze, ast, format, Diagnostic, Pos};
use serde::Serialize;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum AsCmd {
    /// Check a program: syntax, the seed's static rules, and agent imports (cycles, their
    /// errors). Exit 0 valid, 1 invalid, 2 usage or I/O.
    Check {
        /// The `.as` program.
        file: PathBuf,
        /// `{"ok","diagnostics":[{"code","line","column","message","help"}]}`
        #[arg(long)]
        json: bool,
    },
    /// Run a program: print the value it returns as JSON (exit 0); a runtime error prints its
    /// code, message and agent/function stack on stderr (exit 1).
    Run {
        /// The `.as` program.
        file: PathBuf,
        /// The agent to start (default: the main agent).
        #[arg(long)]
        agent: Option<String>,
        /// The function to start (default: the agent's main func).
        #[arg(long)]
        func: Option<String>,
        /// The input: JSON, or @FILE holding JSON (default: none).
        #[arg(long)]
        input: Option<String>,
        /// The workspace every file, import and memory stays inside.
        #[command(flatten)]
        workspace: WorkspaceDir,
        #[command(flatten)]
        unsafe_ok: UnsafeWorkspace,
        /// A scripted model: a JSON array of answer strings, one per model call, in order
        /// (without it, the program's own providers are called); `-` reads it from stdin.
        #[arg(long)]
        mock: Option<PathBuf>,
        /// Write the trace (every call, prompt, answer, tool and memory operation) as JSON.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// How long one model answer may take, in seconds (for keyless://chat: from the
        /// request until the chat's reply is complete).
        #[arg(long, default_value_t = 120)]
        model_timeout: u64,
        /// The keyless-host serve whose chat tab answers keyless://chat (default: the one
        /// running, as serve.json records it), e.g. http://127.0.0.1:7331.
        #[arg(long, value_name = "URL")]
        host: Option<String>,
        /// Internal (runs started through the API): each trace event, then the value or the
        /// error, as JSON lines on stdout.
        #[arg(long, hide = true)]
        events: bool,
        /// Internal: the run's id, named before it starts.
        #[arg(long, hide = true)]
        run_id: Option<String>,
        /// Internal: the most memory the process may take, in MiB.
        #[arg(long, hide = true)]
        memory_limit: Option<u64>,
    },
    /// A language server on standard input and output, for editors: live diagnostics,
    /// formatting, hover and go to definition (see editors/vscode for a VS Code extension).
    Lsp,
    /// An interactive session: statements, imports and agents, with history (in the user's
    /// config folder), multi-line input, `:load FILE` and `:trace`.
    Repl {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// A scripted model: a JSON array of answer strings, one per model call, in order.
        #[arg(long)]
        mock: Option<PathBuf>,
        /// How long one model answer may take, in seconds.
        #[arg(long, default_value_t = 120)]
        model_timeout: u64,
        /// The keyless-host serve whose chat tab answers keyless://chat (default: the one
        /// running, as serve.json records it).
        #[arg(long, value_name = "URL")]
        host: Option<String>,
    },
    /// Rewrite programs in the canonical form (or, with --check, list the ones that differ).
    Fmt {
        /// The `.as` programs to format.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Change nothing; exit 1 when a file is not formatted.
        #[arg(long)]
        check: bool,
    },
}

/// At most this many files are followed through `import agent`.
const MAX_FILES: usize = 64;

fn read(path: &Path) -> Result<String, HostError> {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            f.take(lang::MAX_SOURCE_BYTES as u64 + 1)
                .read_to_end(&mut buf)
        })
        .map_err(|source| HostError::Read {
            path: path.display().to_string(),
            source,
        })?;
    String::from_utf8(buf).map_err(|e| HostError::NotUtf8 {
        path: path.display().to_string(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// `as check --json`: the carriers, each with `file` set when the problem is in an imported file.
#[derive(Serialize)]
struct JsonReport {
    ok: bool,
    diagnostics: Vec<Diagnostic>,
}

/// The diagnostics of `root` and of the `.as` files it imports as agents, by file.
fn check_tree(root: &Path) -> Result<Vec<(PathBuf, Diagnostic)>, HostError> {
    let mut out = Vec::new();
    let mut graph: Vec<(String, Vec<(String, Pos)>)> = Vec::new();
    let mut queue = vec![root.to_path_buf()];
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(file) = queue.pop() {
        let key = file.canonicalize().unwrap_or_else(|_| file.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let text = if file == root {
            read(&file)?
        } else {
            match read(&file) {
                Ok(t) => t,
                Err(e) => {
                    out.push((
                        root.to_path_buf(),
                        Diagnostic::at(
                            keyless_core::Code::AsImport,
                            Pos { line: 1, column: 1 },
                            format!("cannot read the imported agent file: {e}"),
                        ),
                    ));
                    continue;
                }
            }
        };
        // Every problem of the file in one run: syntax, and what the analyzer finds in the rest.
        let (program, found) = lang::diagnose(&text);
        out.extend(found.into_iter().map(|d| (file.clone(), d)));
        let Some(program) = program else {
            graph.push((key.display().to_string(), Vec::new()));
            continue;
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut edges = Vec::new();
        for item in &program.items {
            if let ast::Item::Import(i) = item {
                if i.kind == ast::ImportKind::Agent
                    && analyze::uri_problem(i.kind, &i.uri).is_none()
                {
                    let target = dir.join(&i.uri);
                    let tkey = target.canonicalize().unwrap_or_else(|_| target.clone());
                    edges.push((tkey.display().to_string(), i.pos));
                    if seen.len() + queue.len() < MAX_FILES {
                        queue.push(target);
                    }
                }
            }
        }
        graph.push((key.display().to_string(), edges));
    }
    // The root first: the cycle search starts there.
    for (file, d) in analyze::import_cycles(&graph) {
        out.push((PathBuf::from(file), d));
    }
    Ok(out)
}

fn usage(msg: String) -> HostError {
    HostError::Usage(msg)
}

/// How `as run` runs a program.
#[derive(Debug, Default)]
struct RunOptions<'a> {
    mock: Option<&'a Path>,
    trace: Option<&'a Path>,
    model_timeout: std::time::Duration,
    /// JSON lines on stdout: `{"trace": event}` as each completes, then `{"value": …}` or
    /// `{"error": "KA_… message"}`.
    events: bool,
    run_id: Option<String>,
    memory_limit_mib: Option<u64>,
    host: Option<String>,
}

/// `as run`.
fn run_cmd(
    file: &Path,
    entry: lang::interp::Entry,
    workspace: &Path,
    o: &RunOptions<'_>,
) -> Result<ExitCode, HostError> {
    if let Some(mib) = o.memory_limit_mib {
        // The process's heap and private mappings: a program that gets past the interpreter's
        // own value limit ends here, not the machine (or the server that started it).
        let bytes = mib.saturating_mul(1 << 20);
        let _ =
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_DATA, bytes, bytes);
    }
    let (mock, trace, model_timeout) = (o.mock, o.trace, o.model_timeout);
    let ws =
        crate::exec::workspace::Workspace::open(workspace).map_err(|source| HostError::Read {
            path: workspace.display().to_string(),
            source,
        })?;
    let root = ws.root().to_path_buf();
    let abs = file.canonicalize().map_err(|source| HostError::Read {
        path: file.display().to_string(),
        source,
    })?;
    let key = abs
        .strip_prefix(&root)
        .map_err(|_| {
            usage(format!(
                "{} is outside the workspace {}; pass --workspace",
                file.display(),
                root.display()
            ))
        })?
        .to_string_lossy()
        .replace('\\', "/");
    let mock = read_mock(mock)?;
    let source = read(&abs)?;
    let mut effects = crate::lang::effects::HostEffects::new(&ws, mock, model_timeout);
    effects.chat_host.clone_from(&o.host);
    effects.file.clone_from(&key);
    if let Some(id) = &o.run_id {
        effects.run.clone_from(id);
    }
    if o.events {
        effects.observer = Some(Box::new(|e| {
            crate::lang::runs::print_line(&crate::lang::runs::RunLine::Trace(e.clone()));
        }));
    }
    let started_at = crate::lang::runs::unix_now();
    let (result, tr) = lang::interp::run(&key, &source, &entry, &mut effects);
    let run = effects.run.clone();
    crate::lang::runs::record(&ws, &run, &key, started_at, &result, &tr);
    if let Some(t) = trace {
        let text = serde_json::to_string_pretty(&tr)?;
        std::fs::write(t, text).map_err(|source| HostError::Read {
            path: t.display().to_string(),
            source,
        })?;
    }
    if o.events {
        return Ok(match result {
            Ok(v) => {
                crate::lang::runs::print_line(&crate::lang::runs::RunLine::Value(v));
                ExitCode::SUCCESS
            }
            Err(e) => {
                crate::lang::runs::print_line(&crate::lang::runs::RunLine::Error(e.headline()));
                ExitCode::from(1)
            }
        });
    }
    match result {
        Ok(v) => {
            let mut out = io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out).map_err(HostError::Write)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // The place is in the file that failed: the one run, or one it imports as an agent.
            let (shown, text) = match &e.file {
                Some(k) if *k == key => (file.display().to_string(), Some(source.clone())),
                // Read beneath the workspace handle, as the run read it (never through a link
                // swapped in since).
                Some(k) => (
                    k.clone(),
                    ws.resolve(k)
                        .and_then(|t| ws.read(&t))
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok()),
                ),
                None => (file.display().to_string(), None),
            };
            let d = e.diagnostic().in_file(shown);
            eprint!("{}", crate::diagnostics::render(&d, text.as_deref()));
            eprintln!();
            Ok(ExitCode::from(1))
        }
    }
}

pub(crate) fn read_mock(
    mock: Option<&Path>,
) -> Result<Option<std::collections::VecDeque<String>>, HostError> {
    Ok(match mock {
        Some(p) => {
            // A scripted model's answers: at most MAX_MOCK_BYTES, said so when past it (never a
            // JSON error about a cut-off file).
            let max = lang::MAX_SOURCE_BYTES as u64 * 16;
            let mut bytes = Vec::new();
            let got = if p == Path::new("-") {
                io::stdin().take(max + 1).read_to_end(&mut bytes)
            } else {
                std::fs::File::open(p).and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
            };
            got.map_err(|source| HostError::Read {
                path: p.display().to_string(),
                source,
            })?;
            if bytes.len() as u64 > max {
                return Err(HostError::Coded {
                    code: keyless_core::Code::AsLimit,
                    message: format!(
                        "{}: --mock holds more than {} MiB of answers; a scripted model takes at most that",
                        p.display(),
                        max >> 20
                    ),
                });
            }
            let text = String::from_utf8(bytes).map_err(|e| HostError::NotUtf8 {
                path: p.display().to_string(),
                offset: e.utf8_error().valid_up_to(),
            })?;
            let answers: Vec<String> =
                serde_json::from_str(&text).map_err(|e| HostError::Coded {
                    code: keyless_core::Code::ConfigInvalid,
                    message: format!("{}: --mock takes a JSON array of strings: {e}", p.display()),
                })?;
            Some(answers.into())
        }
        None => None,
    })
}

fn input_value(input: Option<&str>) -> Result<serde_json::Value, HostError> {
    let Some(text) = input else {
        return Ok(serde_json::Value::Null);
    };
    let text = match text.strip_prefix('@') {
        Some(path) => read(Path::new(path))?,
        None => text.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| HostError::Coded {
        code: keyless_core::Code::ConfigInvalid,
        message: format!("--input is not JSON: {e}"),
    })
}

pub fn as_cmd(cmd: AsCmd) -> Result<ExitCode, HostError> {
    let mut out = io::stdout().lock();
    match cmd {
        AsCmd::Run {
            file,
            agent,
            func,
            input,
            workspace,
            unsafe_ok,
            mock,
            trace,
            model_timeout,
            events,
            run_id,
            memory_limit,
            host,
        } => {
            drop(out);
            let workspace =
                crate::workspace_choice::choose(Some(&workspace.dir), unsafe_ok.unsafe_workspace)?;
            let entry = lang::interp::Entry {
                agent,
                func,
                input: input_value(input.as_deref())?,
            };
            run_cmd(
                &file,
                entry,
                &workspace,
                &RunOptions {
                    mock: mock.as_deref(),
                    trace: trace.as_deref(),
                    model_timeout: std::time::Duration::from_secs(model_timeout.max(1)),
                    events,
                    run_id,
                    memory_limit_mib: memory_limit,
                    host,
                },
            )
        }
        AsCmd::Check { file, json } => {
            let found = check_tree(&file)?;
            let root_key = file.canonicalize().unwrap_or_else(|_| file.clone());
            let elsewhere = |f: &Path| {
                let k = f.canonicalize().unwrap_or_else(|_| f.to_path_buf());
                (k != root_key).then(|| f.display().to_string())
            };
            if json {
                let report = JsonReport {
                    ok: found.is_empty(),
                    diagnostics: found
                        .iter()
                        .map(|(f, d)| {
                            let mut d = d.clone();
                            d.file = elsewhere(f);
                            d
                        })
                        .collect(),
                };
                serde_json::to_writer(&mut out, &report)?;
                writeln!(out).map_err(HostError::Write)?;
            } else {
                let mut sources: Vec<(PathBuf, Option<String>)> = Vec::new();
                for (f, d) in &found {
                    if !sources.iter().any(|(p, _)| p == f) {
                        sources.push((f.clone(), std::fs::read_to_string(f).ok()));
                    }
                    let text = sources
                        .iter()
                        .find(|(p, _)| p == f)
                        .and_then(|(_, t)| t.as_deref());
                    let shown = d.clone().in_file(f.display().to_string());
                    writeln!(out, "{}\n", crate::diagnostics::render_out(&shown, text))
                        .map_err(HostError::Write)?;
                }
                let verdict = if found.is_empty() {
                    "ok".to_string()
                } else {
                    format!("{} problem(s)", found.len())
                };
                writeln!(out, "{}: {verdict}", file.display()).map_err(HostError::Write)?;
            }
            Ok(if found.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        AsCmd::Lsp => {
            drop(out);
            crate::lang::lsp::serve()
                .map_err(|e| usage(format!("the language server stopped: {e}")))?;
            Ok(ExitCode::SUCCESS)
        }
        AsCmd::Repl {
            workspace,
            mock,
            model_timeout,
            host,
        } => {
            drop(out);
            let workspace = crate::workspace_choice::choose(Some(&workspace.dir), false)?;
            let ws = crate::exec::workspace::Workspace::open(&workspace).map_err(|source| {
                HostError::Read {
                    path: workspace.display().to_string(),
                    source,
                }
            })?;
            let mock = read_mock(mock.as_deref())?;
            let mut effects = crate::lang::effects::HostEffects::new(
                &ws,
                mock,
                std::time::Duration::from_secs(model_timeout.max(1)),
            );
            effects.chat_host = host;
            effects.file = "repl".into();
            let history = crate::dirs::user_config_path().map(|p| p.with_file_name("as_history"));
            let failures =
                crate::lang::repl::repl(&mut effects, history.as_deref()).map_err(|e| {
                    HostError::Coded {
                        code: keyless_core::Code::FileIo,
                        message: format!("cannot read the terminal: {e}"),
                    }
                })?;
            Ok(if failures == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        AsCmd::Fmt { files, check } => {
            let mut failed = false;
            for file in &files {
                let text = read(file)?;
                match format::format_source(&text) {
                    Err(d) => {
                        failed = true;
                        writeln!(
                            out,
                            "{}:{}:{}: {} {}",
                            file.display(),
                            d.line_or_zero(),
                            d.column.unwrap_or(0),
                            d.code,
                            d.message
                        )
                        .map_err(HostError::Write)?;
                    }
                    Ok(formatted) if formatted == text => {}
                    Ok(_) if check => {
                        failed = true;
                        writeln!(out, "{}: not formatted", file.display())
                            .map_err(HostError::Write)?;
                    }
                    Ok(formatted) => {
                        crate::exec::workspace::write_atomic(file, formatted.as_bytes()).map_err(
                            |source| HostError::Read {
                                path: file.display().to_string(),
                                source,
                            },
                        )?;
                        writeln!(out, "{}: formatted", file.display()).map_err(HostError::Write)?;
                    }
                }
            }
            Ok(if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}
