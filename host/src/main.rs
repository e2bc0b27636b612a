//! `keyless-host`: the keyless native host.

mod cli;
mod piece_cli;
mod serve;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
