//! `keyless-host`: the keyless native host.

use std::process::ExitCode;

fn main() -> ExitCode {
    // A browser starts a native-messaging host with who calls: Chrome the extension's origin,
    // Firefox the host's manifest and the add-on's id.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(caller) = keyless_host::native::Caller::from_args(&args) {
        return keyless_host::native::run_host(&caller);
    }
    keyless_host::cli::main()
}
