//! Command-line interface: `check`, `policy` and `prompt`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use keyless_core::check::{check, CheckReport};
use keyless_core::keyless_json::KeylessConfig;
use keyless_core::message::{system_prompt, PromptContext};
use keyless_core::policy::decide;
use keyless_core::{parse, Code, ConfigError, Diagnostic, Limits, Mode, Pace, Settings};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Errors of the host's CLI layer. Each carries a KA_ code where one applies.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path}: the reply is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { path: String, offset: usize },
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    ConfigFile(#[from] keyless_core::keyless_json::ConfigFileError),
    #[error("{0}")]
    Usage(String),
    #[error(
        "cannot serve on 127.0.0.1:{port}: {source} (is another keyless-host running? try --port)"
    )]
    Bind { port: u16, source: io::Error },
    #[error("{0}: the piece is not valid UTF-8")]
    PieceNotUtf8(String),
    #[error("cannot write the output: {0}")]
    Write(io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl HostError {
    /// The KA_ code of this error.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            HostError::Read { .. } | HostError::NotUtf8 { .. } | HostError::PieceNotUtf8(_) => {
                Code::FileIo
            }
            HostError::Config(e) => e.code(),
            HostError::ConfigFile(e) => e.code(),
            HostError::Usage(_) | HostError::Bind { .. } => Code::ConfigValidation,
            HostError::Write(_) | HostError::Json(_) => Code::Internal,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "keyless-host",
    version,
    about = "The keyless native host: validate AgentScript v1 replies, classify commands, print the system prompt."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Validate an AgentScript v1 reply and show what would run.
    Check(CheckArgs),
    /// Classify a command line and decide run/confirm/deny for a mode.
    Policy(PolicyArgs),
    /// Print the system prompt that teaches a chat model AgentScript v1.
    Prompt(PromptArgs),
    /// Serve the localhost API on 127.0.0.1.
    Serve(ServeArgs),
    /// Execute reply files in order as one session in a workspace, printing each results message.
    Run(RunArgs),
    /// Restore the files one batch changed (the newest batch by default).
    Undo {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// The batch as `<session>/<turn>-<batch>` (see `.agent/backups`).
        #[arg(long)]
        batch: Option<String>,
    },
    /// Internal: the sandbox wrapper that runs one command (`runcommand` starts it).
    #[command(name = "__sandbox", hide = true)]
    Sandbox {
        #[arg(long)]
        workspace: PathBuf,
        #[arg(long)]
        tmp: PathBuf,
        #[arg(long = "write")]
        write: Vec<PathBuf>,
        #[arg(long = "readonly")]
        readonly: Vec<PathBuf>,
        #[arg(long)]
        network: bool,
        #[arg(long)]
        probe: bool,
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Internal: PID 1 of a sandboxed command's namespace.
    #[command(name = "__sandbox-init", hide = true)]
    SandboxInit {
        #[arg(long)]
        parent: u32,
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Check the configuration, workspace, git, sandbox and tools.
    Doctor {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
    /// Manage pairing with the extension: --reset revokes every token.
    Pair {
        #[arg(long)]
        reset: bool,
    },
    /// Register keyless-host with Chrome/Chromium so the extension pairs without a code.
    Install {
        /// Also (or only, with --only-profiles) register in this browser profile folder (its
        /// NativeMessagingHosts subfolder). Repeatable.
        #[arg(long = "profile", value_name = "DIR")]
        profiles: Vec<PathBuf>,
        /// Register only in the --profile folders, not in the browsers' user folders.
        #[arg(long)]
        only_profiles: bool,
        /// Allow this extension id too (for example a development copy). Repeatable.
        #[arg(long = "extension-id", value_name = "ID")]
        extension_ids: Vec<String>,
        /// Remove the registration instead.
        #[arg(long)]
        uninstall: bool,
    },
    /// Print the effective configuration and where each value comes from.
    Config {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Trust the workspace keyless.json as it is now: settings that widen what runs (mode,
        /// network, allow-list, protected branches, auto-init) then apply, until the file changes.
        #[arg(long)]
        approve: bool,
    },
    /// Show the audit trail of file changes and commands.
    Log {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
        /// At most this many entries (the newest).
        #[arg(long, default_value_t = 200)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// Validate pieces (YAML workflows), show their tools, draw their graph.
    #[command(subcommand)]
    Piece(PieceCmd),
}

#[derive(Debug, Subcommand)]
pub enum PieceCmd {
    /// Validate a piece file: every problem with its path and line.
    Validate {
        file: String,
        /// Load leniently (as a file-backed piece): bad shared_tools/required_mcp entries are dropped.
        #[arg(long)]
        lenient: bool,
        #[arg(long)]
        json: bool,
    },
    /// Show each movement's effective tools and the AgentScript commands they allow.
    Tools {
        file: String,
        #[arg(long)]
        json: bool,
    },
    /// Draw the movements and rules.
    Graph {
        file: String,
        #[arg(long, value_enum, default_value = "mermaid")]
        format: GraphFormat,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FailureModeArg {
    StopOnMutationFailure,
    StopOnAnyFailure,
    Continue,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The workspace folder.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Commands.Mode (default: keyless.json, else ask).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Commands.AllowList pattern (repeatable; adds to keyless.json's).
    #[arg(long = "allow", value_name = "PATTERN")]
    allow: Vec<String>,
    /// Resume a saved session instead of starting a new one.
    #[arg(long)]
    session: Option<String>,
    /// Follow a piece in the new session: a name (built-in, or in `.agent/pieces/`) or a YAML file. Its
    /// movements gate the commands exactly as in a `serve` session.
    #[arg(long, value_name = "NAME|FILE")]
    piece: Option<String>,
    /// Approve every confirmation (scripts and tests).
    #[arg(long)]
    yes: bool,
    /// Answer the next @@ask with TEXT (repeatable, in order).
    #[arg(long = "answer", value_name = "TEXT")]
    answers: Vec<String>,
    /// Commands.TimeoutSeconds: the default runcommand timeout (default 600).
    #[arg(long)]
    timeout: Option<u32>,
    /// Commands.BatchFailureMode (default stop-on-mutation-failure).
    #[arg(long, value_enum)]
    failure_mode: Option<FailureModeArg>,
    /// Git.ProtectedBranches pattern (repeatable; replaces the default main, master, release/*).
    #[arg(long = "protect", value_name = "PATTERN")]
    protect: Vec<String>,
    /// Git.AutoInit: create the repository when the workspace is not one.
    #[arg(long)]
    auto_init: bool,
    /// Commit without pushing.
    #[arg(long)]
    no_push: bool,
    #[command(flatten)]
    limits: LimitArgs,
    /// Reply files, in order.
    #[arg(required = true)]
    replies: Vec<String>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = crate::serve::DEFAULT_PORT)]
    port: u16,
    /// The workspace the extension's sessions run in.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Commands.Mode (default: keyless.json, else ask).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// The built dashboard folder (default: `www` beside the binary's target folder).
    #[arg(long)]
    www: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum PaceArg {
    Step,
    Balanced,
    Batch,
}

impl From<PaceArg> for Pace {
    fn from(p: PaceArg) -> Self {
        match p {
            PaceArg::Step => Pace::Step,
            PaceArg::Balanced => Pace::Balanced,
            PaceArg::Batch => Pace::Batch,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Ask,
    Autosafe,
    Auto,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Ask => Mode::Ask,
            ModeArg::Autosafe => Mode::AutoSafe,
            ModeArg::Auto => Mode::Auto,
        }
    }
}

#[derive(Debug, Args)]
struct LimitArgs {
    /// Agent.Pace: how many non-say commands one reply may carry (default balanced).
    #[arg(long, value_enum)]
    pace: Option<PaceArg>,
    /// Limits.MaxCommandsPerResponse.
    #[arg(long, value_name = "N")]
    max_commands: Option<u32>,
    /// Limits.MaxResponseChars.
    #[arg(long, value_name = "N")]
    max_response_chars: Option<u32>,
    /// Limits.MaxFileContentChars.
    #[arg(long, value_name = "N")]
    max_file_content_chars: Option<u32>,
}

impl LimitArgs {
    fn settings(&self) -> Result<Settings, HostError> {
        let d = Limits::default();
        let limits = Limits {
            max_commands_per_response: self.max_commands.unwrap_or(d.max_commands_per_response),
            max_response_chars: self.max_response_chars.unwrap_or(d.max_response_chars),
            // Only the default follows a smaller --max-response-chars; a value the user gave is
            // checked by core, which refuses one larger than the whole reply.
            max_file_content_chars: self.max_file_content_chars.unwrap_or(
                d.max_file_content_chars
                    .min(self.max_response_chars.unwrap_or(u32::MAX)),
            ),
            ..d
        };
        let settings = Settings {
            limits,
            pace: self.pace.map_or_else(Pace::default, Into::into),
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Applies the flags that were given on top of a loaded configuration.
    fn apply(&self, cfg: &mut KeylessConfig) -> Result<(), HostError> {
        let src = "command line";
        let pairs = [
            ("Limits.MaxCommandsPerResponse", self.max_commands),
            ("Limits.MaxResponseChars", self.max_response_chars),
            ("Limits.MaxFileContentChars", self.max_file_content_chars),
        ];
        for (key, value) in pairs {
            if let Some(v) = value {
                cfg.set(key, &serde_json::json!(v), src)?;
            }
        }
        if let Some(p) = self.pace {
            cfg.set(
                "Agent.Pace",
                &serde_json::json!(Pace::from(p).as_str()),
                src,
            )?;
        }
        cfg.check(src)?;
        Ok(())
    }
}

/// The user's keyless.json: `$XDG_CONFIG_HOME/keyless`, else `~/.config/keyless` (`%APPDATA%\keyless`
/// on Windows).
#[must_use]
pub fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("APPDATA").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("keyless").join("keyless.json"))
}

/// A loaded configuration: the settings, the files they came from, and the workspace settings
/// left out because the user has not approved the workspace file.
#[derive(Debug)]
pub struct Loaded {
    pub cfg: KeylessConfig,
    pub files: Vec<PathBuf>,
    pub ignored: Vec<keyless_core::keyless_json::Ignored>,
}

/// `<config>/keyless/approved.json`: the workspace files the user approved, by path, with the
/// SHA-256 of the approved text.
fn approvals_path() -> Option<PathBuf> {
    user_config_path().map(|p| p.with_file_name("approved.json"))
}

fn approvals() -> std::collections::BTreeMap<String, String> {
    approvals_path()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn workspace_config_file(workspace: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(workspace)
        .unwrap_or_else(|_| workspace.to_path_buf())
        .join("keyless.json")
}

/// Loads defaults → user keyless.json → workspace keyless.json. Settings of the workspace file
/// that widen what runs apply only when the user approved that exact file.
///
/// # Errors
/// KA_CONFIG_INVALID / KA_CONFIG_VALIDATION from a file, KA_FILE_IO when one cannot be read.
pub fn load_config(workspace: &std::path::Path) -> Result<Loaded, HostError> {
    let mut cfg = KeylessConfig::default();
    let mut files = Vec::new();
    let mut ignored = Vec::new();
    let read = |path: &PathBuf| match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HostError::Read {
            path: path.display().to_string(),
            source,
        }),
    };
    if let Some(user) = user_config_path() {
        if let Some(text) = read(&user)? {
            cfg.apply_file(&user.display().to_string(), &text)?;
            files.push(user);
        }
    }
    let ws_file = workspace_config_file(workspace);
    if let Some(text) = read(&ws_file)? {
        let approved = approvals()
            .get(&ws_file.display().to_string())
            .is_some_and(|h| *h == keyless_core::keyless_json::approval_hash(&text));
        ignored = cfg.apply_workspace_file(&ws_file.display().to_string(), &text, approved)?;
        files.push(ws_file);
    }
    Ok(Loaded {
        cfg,
        files,
        ignored,
    })
}

/// `keyless-host config --approve`: trusts the workspace keyless.json as it is now.
fn approve_workspace_file(workspace: &std::path::Path) -> Result<String, HostError> {
    let ws_file = workspace_config_file(workspace);
    let text = std::fs::read_to_string(&ws_file).map_err(|source| HostError::Read {
        path: ws_file.display().to_string(),
        source,
    })?;
    // Validate it first: an approval of a broken file would be useless.
    let mut probe = KeylessConfig::default();
    probe.apply_file(&ws_file.display().to_string(), &text)?;
    let path = approvals_path().ok_or_else(|| {
        HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into())
    })?;
    let mut all = approvals();
    all.insert(
        ws_file.display().to_string(),
        keyless_core::keyless_json::approval_hash(&text),
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| HostError::Read {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let json = serde_json::to_vec_pretty(&all)?;
    crate::exec::workspace::write_atomic(&path, &json)
        .and_then(|()| crate::pairing::set_private(&path))
        .map_err(|source| HostError::Read {
            path: path.display().to_string(),
            source,
        })?;
    Ok(ws_file.display().to_string())
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The reply file, or - for standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, Args)]
struct PolicyArgs {
    /// Commands.Mode.
    #[arg(long, value_enum, default_value = "ask")]
    mode: ModeArg,
    /// Commands.AllowList pattern (repeatable), e.g. 'npm run test *'.
    #[arg(long = "allow", value_name = "PATTERN")]
    allow: Vec<String>,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
    /// The command line (after --).
    #[arg(last = true, required = true, value_name = "COMMAND_LINE")]
    command_line: Vec<String>,
}

#[derive(Debug, Args)]
struct PromptArgs {
    /// Include this workspace's environment snapshot (OS, shell, tools, .agent/snapshot scripts).
    #[arg(long)]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
    /// Commands.Mode the prompt describes.
    #[arg(long, value_enum, default_value = "ask")]
    mode: ModeArg,
}

/// Exit status: 0 valid, 1 rejected, 2 usage or I/O error.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Cmd::Check(a) => run_check(&a),
        Cmd::Policy(a) => run_policy(&a),
        Cmd::Prompt(a) => run_prompt(&a),
        Cmd::Piece(p) => crate::piece_cli::run(p),
        Cmd::Run(a) => run_replies(a),
        Cmd::Undo { workspace, batch } => crate::run_cli::undo_cmd(&workspace, batch.as_deref()),
        Cmd::Config { workspace, approve } => show_config(&workspace, approve),
        Cmd::Doctor { workspace } => crate::doctor::run(&workspace),
        Cmd::Sandbox {
            workspace,
            tmp,
            write,
            readonly,
            network,
            probe,
            command,
        } => {
            return crate::exec::sandbox::wrapper_main(&crate::exec::sandbox::WrapperArgs {
                workspace,
                tmp,
                write,
                readonly,
                network,
                probe,
                command: command.join(" "),
            });
        }
        Cmd::SandboxInit { parent, command } => {
            return crate::exec::sandbox::init_main(parent, &command.join(" "));
        }
        Cmd::Log {
            workspace,
            session,
            limit,
            json,
        } => crate::run_cli::log_cmd(&workspace, session.as_deref(), limit, json),
        Cmd::Serve(a) => serve_cmd(a),
        Cmd::Pair { reset } => pair_cmd(reset),
        Cmd::Install {
            profiles,
            only_profiles,
            extension_ids,
            uninstall,
        } => install_cmd(&profiles, only_profiles, extension_ids, uninstall),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("keyless-host: {} {e}", e.code());
            ExitCode::from(2)
        }
    }
}

/// Reads at most enough bytes to know whether the reply is over the limit.
fn read_reply(file: &str, limits: &Limits) -> Result<(String, Option<usize>), HostError> {
    // Four bytes per character at most: anything longer is over the limit for sure.
    let cap = u64::from(limits.max_response_chars) * 4 + 1;
    let mut buf = Vec::new();
    let name = if file == "-" {
        "<stdin>".to_string()
    } else {
        file.to_string()
    };
    let read = |r: &mut dyn Read, buf: &mut Vec<u8>| r.take(cap).read_to_end(buf);
    let res = if file == "-" {
        read(&mut io::stdin().lock(), &mut buf)
    } else {
        std::fs::File::open(PathBuf::from(file)).and_then(|mut f| read(&mut f, &mut buf))
    };
    res.map_err(|source| HostError::Read {
        path: name.clone(),
        source,
    })?;
    if buf.len() as u64 == cap {
        // Over the limit whatever the rest holds; report without reading it.
        return Ok((String::new(), Some(buf.len())));
    }
    match String::from_utf8(buf) {
        Ok(s) => Ok((s, None)),
        Err(e) => Err(HostError::NotUtf8 {
            path: name,
            offset: e.utf8_error().valid_up_to(),
        }),
    }
}

fn over_limit_report(bytes: usize, limits: &Limits) -> CheckReport {
    let d = Diagnostic::new(
        Code::LimitResponseChars,
        None,
        format!(
            "The response has more than {} characters (over {bytes} bytes); the limit is {}.",
            limits.max_response_chars, limits.max_response_chars
        ),
    )
    .with_help("Split the work across several smaller responses.");
    CheckReport {
        ok: false,
        diagnostics: vec![keyless_core::check::CheckDiagnostic {
            code: d.code.as_str().into(),
            line: None,
            message: d.message.clone(),
        }],
        commands: vec![],
        control: None,
        correction: Some(keyless_core::message::correction(&[d], 0, false)),
    }
}

fn run_check(a: &CheckArgs) -> Result<ExitCode, HostError> {
    let settings = a.limits.settings()?;
    let (text, over) = read_reply(&a.file, &settings.limits)?;
    let name = if a.file == "-" {
        "<stdin>"
    } else {
        a.file.as_str()
    };
    let report = match over {
        Some(bytes) => over_limit_report(bytes, &settings.limits),
        None => check(&text, &settings),
    };
    let mut out = io::stdout().lock();
    if a.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out).map_err(HostError::Write)?;
    } else {
        // The text form shows help too, so parse once more for the full diagnostics.
        let full = parse(&text, &settings.limits);
        let diags: Vec<Diagnostic> = if over.is_some() {
            vec![Diagnostic::new(
                Code::LimitResponseChars,
                None,
                report
                    .diagnostics
                    .first()
                    .map(|d| d.message.clone())
                    .unwrap_or_default(),
            )]
        } else {
            full.diagnostics
        };
        let targets: Vec<String> = full
            .reply
            .commands
            .iter()
            .map(keyless_core::Command::target)
            .collect();
        write_text_report(&mut out, name, &text, &diags, &report, &targets)
            .map_err(HostError::Write)?;
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn write_text_report(
    out: &mut impl Write,
    name: &str,
    text: &str,
    diags: &[Diagnostic],
    report: &CheckReport,
    targets: &[String],
) -> io::Result<()> {
    let lines: Vec<&str> = text.split('\n').collect();
    for d in diags {
        match d.line {
            Some(line) => {
                writeln!(out, "{name}:{line}: {} {}", d.code, d.message)?;
                if let Some(src) = lines.get(line as usize - 1) {
                    let src = src.trim_end_matches('\r');
                    let shown: String = src.chars().take(120).collect();
                    writeln!(out, "{line:>6} | {shown}")?;
                }
            }
            None => writeln!(out, "{name}: {} {}", d.code, d.message)?,
        }
        if let Some(help) = &d.help {
            writeln!(out, "       = help: {help}")?;
        }
    }
    if report.ok {
        let control = report.control.map_or("next", |c| match c {
            keyless_core::Control::Next => "next",
            keyless_core::Control::Done => "done",
        });
        writeln!(
            out,
            "{name}: ok: {} block(s), control: {control}",
            report.commands.len()
        )?;
        for (c, target) in report.commands.iter().zip(targets) {
            let status = if c.run {
                "run".to_string()
            } else {
                format!("skip: {}", c.skip_reason.as_deref().unwrap_or(""))
            };
            let arg = target.as_str();
            writeln!(
                out,
                "  #{:<3} {:<11} {:<40} line {:<5} {status}",
                c.number, c.command, arg, c.line
            )?;
        }
    } else {
        writeln!(
            out,
            "{name}: rejected: {} problem(s); nothing would run",
            diags.len()
        )?;
    }
    Ok(())
}

fn run_policy(a: &PolicyArgs) -> Result<ExitCode, HostError> {
    let line = a.command_line.join(" ");
    if line.trim().is_empty() {
        return Err(HostError::Usage("the command line is empty".into()));
    }
    let verdict = decide(&line, a.mode.into(), &a.allow);
    let mut out = io::stdout().lock();
    if a.json {
        serde_json::to_writer(&mut out, &verdict)?;
        writeln!(out).map_err(HostError::Write)?;
    } else {
        let w = |out: &mut io::StdoutLock<'_>| -> io::Result<()> {
            writeln!(
                out,
                "tier: {}  decision: {}  ({})",
                verdict.tier, verdict.decision, verdict.reason
            )?;
            for (i, s) in verdict.segments.iter().enumerate() {
                writeln!(
                    out,
                    "  segment {}: {:<9} {}  — {}",
                    i + 1,
                    s.tier.as_str(),
                    s.text,
                    s.reason
                )?;
            }
            Ok(())
        };
        w(&mut out).map_err(HostError::Write)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_replies(a: RunArgs) -> Result<ExitCode, HostError> {
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&a.workspace)?;
    warn_ignored(&ignored);
    a.limits.apply(&mut cfg)?;
    let src = "command line";
    if let Some(m) = a.mode {
        cfg.set(
            "Commands.Mode",
            &serde_json::json!(Mode::from(m).as_str()),
            src,
        )?;
    }
    if let Some(t) = a.timeout {
        cfg.set("Commands.TimeoutSeconds", &serde_json::json!(t), src)?;
    }
    if let Some(f) = a.failure_mode {
        let name = match f {
            FailureModeArg::StopOnMutationFailure => "StopOnMutationFailure",
            FailureModeArg::StopOnAnyFailure => "StopOnAnyFailure",
            FailureModeArg::Continue => "Continue",
        };
        cfg.set("Commands.BatchFailureMode", &serde_json::json!(name), src)?;
    }
    if !a.protect.is_empty() {
        cfg.set("Git.ProtectedBranches", &serde_json::json!(a.protect), src)?;
    }
    if a.auto_init {
        cfg.set("Git.AutoInit", &serde_json::json!(true), src)?;
    }
    cfg.allow_list.extend(a.allow);
    let exec = exec_settings(&cfg, !a.no_push);
    let prompter = crate::run_cli::TerminalPrompter {
        yes: a.yes,
        answers: a.answers.into(),
        interactive: crate::run_cli::stdin_is_terminal(),
    };
    crate::run_cli::run(crate::run_cli::RunOptions {
        workspace: a.workspace,
        exec,
        replies: a.replies,
        prompter,
        session: a.session,
        piece: a.piece,
    })
}

/// The executor's settings from a loaded configuration.
fn exec_settings(cfg: &KeylessConfig, push: bool) -> crate::exec::batch::ExecSettings {
    crate::exec::batch::ExecSettings {
        settings: cfg.settings,
        mode: cfg.mode,
        allow: cfg.allow_list.clone(),
        failure_mode: cfg.batch_failure_mode,
        timeout_seconds: cfg.timeout_seconds,
        git: crate::exec::git::GitSettings {
            protected_branches: cfg.protected_branches.clone(),
            auto_init: cfg.auto_init,
            push,
            ..crate::exec::git::GitSettings::default()
        },
        sandbox: true,
        network: cfg.network,
        missing_tools: Vec::new(),
    }
}

fn serve_cmd(a: ServeArgs) -> Result<ExitCode, HostError> {
    let Loaded {
        mut cfg, ignored, ..
    } = load_config(&a.workspace)?;
    warn_ignored(&ignored);
    if let Some(m) = a.mode {
        cfg.set(
            "Commands.Mode",
            &serde_json::json!(Mode::from(m).as_str()),
            "command line",
        )?;
    }
    let pairings =
        crate::pairing::Pairings::new(crate::pairing::Pairings::default_path().ok_or_else(
            || HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into()),
        )?);
    let port = a.port;
    // target/release/keyless-host → target/www, where cargo xtask build puts the dashboard.
    let www = a.www.or_else(|| {
        std::env::current_exe().ok().and_then(|e| {
            e.parent()
                .and_then(std::path::Path::parent)
                .map(|t| t.join("www"))
        })
    });
    crate::serve::serve(crate::serve::ServeOptions {
        port,
        workspace: a.workspace,
        exec: exec_settings(&cfg, true),
        pairings,
        www,
    })
    .map(|()| ExitCode::SUCCESS)
    .map_err(|source| HostError::Bind { port, source })
}

fn pair_cmd(reset: bool) -> Result<ExitCode, HostError> {
    let path = crate::pairing::Pairings::default_path().ok_or_else(|| {
        HostError::Usage("no user config dir (set HOME or XDG_CONFIG_HOME)".into())
    })?;
    let p = crate::pairing::Pairings::new(path);
    if !reset {
        return Err(HostError::Usage("keyless-host pair --reset revokes every paired extension; pairing itself happens through the code `serve` prints".into()));
    }
    let n = p.reset().map_err(|source| HostError::Read {
        path: p.path().display().to_string(),
        source,
    })?;
    println!("revoked {n} paired extension(s) ({})", p.path().display());
    Ok(ExitCode::SUCCESS)
}

/// Tells the user which workspace settings are left out, on stderr.
fn warn_ignored(ignored: &[keyless_core::keyless_json::Ignored]) {
    for i in ignored {
        eprintln!("keyless-host: {} {i}", Code::ConfigValidation);
    }
}

fn install_cmd(
    profiles: &[PathBuf],
    only_profiles: bool,
    extra_ids: Vec<String>,
    uninstall: bool,
) -> Result<ExitCode, HostError> {
    let mut ids = vec![crate::native::EXTENSION_ID.to_string()];
    for id in extra_ids {
        if !crate::pairing::valid_extension_id(&id) {
            return Err(HostError::Usage(format!(
                "{id} is not a Chrome extension id (32 letters a-p)"
            )));
        }
        ids.push(id);
    }
    let mut dirs: Vec<PathBuf> = profiles
        .iter()
        .map(|p| p.join("NativeMessagingHosts"))
        .collect();
    if !only_profiles {
        dirs.extend(crate::native::browser_dirs().into_iter().map(|(_, d)| d));
    }
    let mut out = io::stdout().lock();
    if uninstall {
        for f in crate::native::uninstall(&dirs) {
            writeln!(out, "removed {}", f.display()).map_err(HostError::Write)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let written = crate::native::install(&dirs, &ids).map_err(|source| HostError::Read {
        path: "NativeMessagingHosts".into(),
        source,
    })?;
    for f in written {
        writeln!(
            out,
            "registered {} in {}",
            crate::native::HOST_NAME,
            f.display()
        )
        .map_err(HostError::Write)?;
    }
    writeln!(
        out,
        "The keyless extension ({}) now pairs with a running keyless-host serve when you open its popup; no code to type.",
        ids.join(", ")
    )
    .map_err(HostError::Write)?;
    Ok(ExitCode::SUCCESS)
}

fn show_config(workspace: &std::path::Path, approve: bool) -> Result<ExitCode, HostError> {
    if approve {
        let file = approve_workspace_file(workspace)?;
        println!("approved {file}: its settings apply until the file changes");
    }
    let Loaded {
        cfg,
        files: used,
        ignored,
    } = load_config(workspace)?;
    let mut out = io::stdout().lock();
    let files: Vec<String> = used.iter().map(|p| p.display().to_string()).collect();
    let w = |out: &mut io::StdoutLock<'_>| -> io::Result<()> {
        writeln!(
            out,
            "configuration files: {}",
            if files.is_empty() {
                "none (defaults)".to_string()
            } else {
                files.join(", ")
            }
        )?;
        write!(out, "{}", cfg.render())?;
        for i in &ignored {
            writeln!(out, "not applied: {i}")?;
        }
        Ok(())
    };
    w(&mut out).map_err(HostError::Write)?;
    Ok(ExitCode::SUCCESS)
}

fn run_prompt(a: &PromptArgs) -> Result<ExitCode, HostError> {
    let settings = a.limits.settings()?;
    let environment = a.workspace.as_ref().map(|w| {
        let sandbox = crate::exec::sandbox::probe(w, false).describe();
        crate::exec::snapshot::gather(w, sandbox).text()
    });
    let ctx = PromptContext {
        mode: a.mode.into(),
        environment,
    };
    let mut out = io::stdout().lock();
    writeln!(out, "{}", system_prompt(&settings, &ctx)).map_err(HostError::Write)?;
    Ok(ExitCode::SUCCESS)
}
