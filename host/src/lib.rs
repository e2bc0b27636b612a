//! keyless-host: the native host. The binary's `main` calls [`cli::main`]; the modules are public
//! so benchmarks and the later server can drive the executor directly.

pub mod cli;
pub mod conn;
pub mod doctor;
pub mod exec;
pub mod native;
pub mod pairing;
pub mod piece_cli;
pub mod pieces;
pub mod run_cli;
pub mod serve;
pub mod store;
pub mod submit;
