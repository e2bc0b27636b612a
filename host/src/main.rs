//! `keyless-host`: the keyless native host.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
