//! `keyless-host`: the keyless native host.

mod cli;
mod exec;
mod piece_cli;
mod run_cli;
mod serve;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
