//! keyless-host: the native host. The binary's `main` calls [`cli::main`]; the modules are public
//! so benchmarks and the later server can drive the executor directly.

pub mod always;
pub mod cli;
pub mod config;
pub mod conn;
pub mod diagnostics;
pub mod dirs;
pub mod doctor;
pub mod error;
pub mod exec;
pub mod handover;
pub mod install_record;
pub mod lang;
pub mod launch;
pub mod mcp;
pub mod mcp_auth;
pub mod native;
pub mod pairing;
pub mod pieces;
pub mod server;
pub mod ssh_registry;
pub mod store;
pub mod submit;
pub mod workspace_choice;
