//! `keyless-host`: the keyless native host.

use std::process::ExitCode;

fn main() -> ExitCode {
    keyless_host::cli::main()
}
