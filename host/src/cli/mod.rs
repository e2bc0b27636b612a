//! The command line: the flags of every subcommand and the dispatch to the file that runs it.
//! Each subcommand's file imports only its siblings' flag types (`args`), never this module.

mod args;
mod check;
mod clipboard;
mod form;
mod handover;
mod history;
mod lang;
mod mcp;
mod piece;
mod prompter;
mod run;
mod serve;
mod setup;
mod ssh;
mod terminal;

use args::WorkspaceDir;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

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
    Check(check::CheckArgs),
    /// Classify a command line and decide run/confirm/deny for a mode.
    Policy(check::PolicyArgs),
    /// Print the system prompt that teaches a chat model AgentScript v1.
    Prompt(check::PromptArgs),
    /// Serve the localhost API on 127.0.0.1.
    Serve(serve::ServeArgs),
    /// Execute reply files in order as one session in a workspace, printing each results message.
    Run(run::RunArgs),
    /// Restore the files one batch changed, by file commands and by commands alike (the newest
    /// batch that can be undone by default). A batch whose files a later commit recorded is not restored: --revert makes a new commit
    /// that takes that commit back (when it was not pushed).
    Undo {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// The batch: the id `log` and `--list` print, or `<session>/<turn>-<batch>`.
        #[arg(long)]
        batch: Option<String>,
        /// List the batches that changed files, newest first, and whether each can be undone.
        #[arg(long, conflicts_with_all = ["batch", "revert"])]
        list: bool,
        /// Revert the unpushed commits that recorded the batch's files (each as a new commit).
        #[arg(long, requires = "batch")]
        revert: bool,
        /// Put back the batch's versions even of files changed after it ran (by a later batch, a
        /// command or you); without it, undo names those files and changes nothing.
        #[arg(long, conflicts_with_all = ["list", "revert"])]
        force: bool,
    },
    /// "Always allow" rules: the commands you told keyless to stop asking about, per workspace
    /// (kept in your config folder, never in the workspace).
    #[command(subcommand)]
    Allow(setup::AllowCmd),
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
        #[arg(long = "pin")]
        pinned: Vec<PathBuf>,
        #[arg(long = "hide")]
        hidden: Vec<PathBuf>,
        #[arg(long)]
        private_shm: bool,
        #[arg(long)]
        network: bool,
        #[arg(long)]
        probe: bool,
        #[arg(long)]
        parent: Option<u32>,
        /// A control group's `cgroup.procs` (or `tasks`) to join first.
        #[arg(long = "join")]
        join: Vec<PathBuf>,
        /// RLIMIT_NPROC to take first (where no control group can be made).
        #[arg(long)]
        max_procs: Option<u64>,
        /// RLIMIT_DATA to take first.
        #[arg(long)]
        max_data: Option<u64>,
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
        #[command(flatten)]
        workspace: WorkspaceDir,
    },
    /// Print a fresh one-time pairing code for the running serve (valid 10 minutes); --reset
    /// revokes every paired extension instead.
    Pair {
        /// Revoke every paired extension (they pair again with a new code).
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
        /// Take it all back: the registrations, and what the release's install script put on
        /// this machine (the binary and its share folder); your settings and pairings stay.
        #[arg(long)]
        uninstall: bool,
        /// Record the binary the install script copied (for --uninstall).
        #[arg(long, hide = true, value_name = "FILE")]
        record_binary: Option<PathBuf>,
        /// Record the share folder the install script copied (for --uninstall).
        #[arg(long, hide = true, value_name = "DIR")]
        record_share: Option<PathBuf>,
    },
    /// Print the effective configuration and where each value comes from.
    Config {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Trust the workspace keyless.json as it is now: settings that widen what runs (mode,
        /// network, allow-list, protected branches, auto-init) then apply, until the file changes.
        #[arg(long)]
        approve: bool,
    },
    /// Show the audit trail of file changes and commands.
    Log {
        #[command(flatten)]
        workspace: WorkspaceDir,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
        /// At most this many entries (the newest).
        #[arg(long, default_value_t = 200)]
        limit: u32,
        /// Print JSON (one array) instead of a table; times are Unix seconds.
        #[arg(long)]
        json: bool,
        /// Show the diffs of what a batch changed (an id from the BATCH column; with no id, the
        /// newest batch), or, for a session's id, everything the session changed since the
        /// commit it started from.
        #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
        diff: Option<String>,
    },
    /// Validate pieces (YAML workflows), show their tools, draw their graph.
    #[command(subcommand)]
    Piece(piece::PieceCmd),
    /// `.as` programs: check and format them.
    #[command(subcommand, name = "as")]
    As(lang::AsCmd),
    /// The SSH connections pieces may use: add, list, remove, grant.
    #[command(subcommand)]
    Ssh(ssh::SshCmd),
    /// The MCP servers keyless.json declares: list them with their tools, call one tool.
    #[command(subcommand)]
    Mcp(mcp::McpCmd),
}

/// The sandbox wrapper's entry for a program that runs the executor in-process (a benchmark):
/// the wrapper is started as `/proc/self/exe __sandbox …`, so such a program must act as the
/// host for those arguments instead of running itself again.
#[must_use]
pub fn wrapper_entry() -> Option<ExitCode> {
    matches!(
        std::env::args().nth(1).as_deref(),
        Some("__sandbox" | "__sandbox-init")
    )
    .then(main)
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
        Cmd::Check(a) => check::check_cmd(&a),
        Cmd::Policy(a) => check::policy_cmd(&a),
        Cmd::Prompt(a) => check::prompt_cmd(&a),
        Cmd::Piece(p) => piece::piece_cmd(p),
        Cmd::As(c) => lang::as_cmd(c),
        Cmd::Ssh(c) => ssh::ssh_cmd(c),
        Cmd::Mcp(c) => mcp::mcp_cmd(c),
        Cmd::Run(a) => run::run_cmd(a),
        Cmd::Undo {
            workspace,
            batch,
            list,
            revert,
            force,
        } => history::undo_cmd(&workspace.dir, batch.as_deref(), list, revert, force),
        Cmd::Allow(c) => setup::allow_cmd(c),
        Cmd::Config { workspace, approve } => setup::show_config(&workspace.dir, approve),
        Cmd::Doctor { workspace } => crate::doctor::run(&workspace.dir),
        Cmd::Sandbox {
            workspace,
            tmp,
            write,
            readonly,
            pinned,
            hidden,
            private_shm,
            network,
            probe,
            parent,
            join,
            max_procs,
            max_data,
            command,
        } => {
            if let Err(e) = crate::exec::limits::enter(&join, max_procs, max_data) {
                eprintln!("keyless sandbox: {e}");
                return ExitCode::from(126);
            }
            return crate::exec::sandbox::wrapper_main(&crate::exec::sandbox::WrapperArgs {
                workspace,
                tmp,
                write,
                readonly,
                pinned,
                hidden,
                private_shm,
                network,
                parent,
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
            diff,
        } => match diff {
            Some(batch) => history::log_diff_cmd(&workspace.dir, &batch, json),
            None => history::log_cmd(&workspace.dir, session.as_deref(), limit, json),
        },
        Cmd::Serve(a) => serve::serve_cmd(a),
        Cmd::Pair { reset } => setup::pair_cmd(reset),
        Cmd::Install {
            profiles,
            only_profiles,
            extension_ids,
            uninstall,
            record_binary,
            record_share,
        } => setup::install_cmd(
            &profiles,
            only_profiles,
            extension_ids,
            uninstall,
            (record_binary, record_share),
        ),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`keyless-host policy … | head -1`): nothing to say.
        Err(crate::error::HostError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("keyless-host: {} {e}", e.code());
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn model_text_is_shown_with_its_control_characters_escaped() {
        assert_eq!(
            super::terminal::shown("touch x #\u{1b}[2K\rRun `ls`?\u{202e}"),
            "touch x #<U+001B>[2K<U+000D>Run `ls`?<U+202E>"
        );
    }

    /// Every option and argument a user can see says what it does (`--help` never shows a bare
    /// flag).
    #[test]
    fn every_option_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if a.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.is_hide_set() {
                    continue;
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "keyless-host", &mut missing);
        assert!(
            missing.is_empty(),
            "options without help:\n{}",
            missing.join("\n")
        );
    }
}
