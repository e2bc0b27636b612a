//! `keyless-host ssh add | list | remove | grant`: the SSH connection registry.

use crate::error::HostError;
use crate::ssh_registry as reg;
use clap::Subcommand;
use keyless_core::Code;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum SshCmd {
    /// Register a connection (yours, granted to no piece yet); prints its id.
    Add {
        /// A name for it (unique).
        name: String,
        /// The machine's host name or address.
        #[arg(long)]
        host: String,
        /// The user to log in as.
        #[arg(long)]
        user: String,
        /// The SSH port.
        #[arg(long, default_value_t = 22)]
        port: u16,
    },
    /// The registered connections.
    List {
        /// Print the connections as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a connection (by id or name).
    Remove {
        /// The connection's id or name.
        connection: String,
    },
    /// Let a piece use a connection (`--piece '*'`: any piece), or stop it with --revoke.
    Grant {
        /// The connection's id or name.
        connection: String,
        /// The piece's name (`*`: any piece).
        #[arg(long)]
        piece: String,
        /// Take the grant back instead.
        #[arg(long)]
        revoke: bool,
    },
}

fn coded(code: Code, message: String) -> HostError {
    HostError::Coded { code, message }
}

pub fn ssh_cmd(cmd: SshCmd) -> Result<ExitCode, HostError> {
    let mut list = reg::load().map_err(|m| coded(Code::ConfigInvalid, m))?;
    let mut out = std::io::stdout().lock();
    let unknown = |key: &str| {
        coded(
            Code::SshUnknown,
            format!("no connection \"{key}\" is registered (keyless-host ssh list)"),
        )
    };
    match cmd {
        SshCmd::Add {
            name,
            host,
            user,
            port,
        } => {
            let c = reg::add(&mut list, &name, &host, &user, port)
                .map_err(|m| coded(Code::ConfigValidation, m))?;
            reg::save(&list).map_err(|m| coded(Code::FileIo, m))?;
            writeln!(out, "{}", c.id).map_err(HostError::Write)?;
        }
        SshCmd::List { json } => {
            if json {
                serde_json::to_writer_pretty(&mut out, &list)?;
                writeln!(out).map_err(HostError::Write)?;
            } else if list.is_empty() {
                writeln!(
                    out,
                    "no SSH connections (keyless-host ssh add NAME --host H --user U)"
                )
                .map_err(HostError::Write)?;
            } else {
                for c in &list {
                    let grants = if c.grants.is_empty() {
                        "no piece".to_string()
                    } else {
                        c.grants.join(", ")
                    };
                    writeln!(
                        out,
                        "{}  {}  {}@{}:{}  owner {}  granted to {grants}",
                        c.id, c.name, c.user, c.host, c.port, c.owner
                    )
                    .map_err(HostError::Write)?;
                }
            }
        }
        SshCmd::Remove { connection } => {
            let c = keyless_core::ssh::find(&list, &connection)
                .cloned()
                .ok_or_else(|| unknown(&connection))?;
            list.retain(|x| x.id != c.id);
            reg::save(&list).map_err(|m| coded(Code::FileIo, m))?;
            writeln!(out, "removed {} ({})", c.name, c.id).map_err(HostError::Write)?;
        }
        SshCmd::Grant {
            connection,
            piece,
            revoke,
        } => {
            if piece != "*" && !keyless_core::piece::valid_file_name(&piece) {
                return Err(coded(
                    Code::ConfigValidation,
                    format!("\"{piece}\" is not a piece name (or '*')"),
                ));
            }
            let me = reg::current_user();
            let c = list
                .iter_mut()
                .find(|c| c.id == connection || c.name == connection)
                .ok_or_else(|| unknown(&connection))?;
            if c.owner != me {
                return Err(coded(
                    Code::SshNotOwner,
                    format!("connection {} belongs to {}, not to {me}", c.name, c.owner),
                ));
            }
            if revoke {
                c.grants.retain(|g| *g != piece);
            } else if !c.grants.contains(&piece) {
                c.grants.push(piece.clone());
            }
            let line = format!(
                "{} {} {piece}",
                c.name,
                if revoke {
                    "no longer granted to"
                } else {
                    "granted to"
                }
            );
            reg::save(&list).map_err(|m| coded(Code::FileIo, m))?;
            writeln!(out, "{line}").map_err(HostError::Write)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
