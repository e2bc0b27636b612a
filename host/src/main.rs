//! `keyless-host`: the keyless native host.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Chrome starts a native-messaging host with the caller's origin as its only argument.
    if let Some(origin) = std::env::args()
        .nth(1)
        .filter(|a| a.starts_with("chrome-extension://"))
    {
        return keyless_host::native::run_host(&origin);
    }
    keyless_host::cli::main()
}
