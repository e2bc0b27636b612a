//! The host's CLI-layer error: one enum, each variant with its KA_ code.

use keyless_core::{Code, ConfigError};
use std::io;

/// Errors of the host's CLI layer. Each carries a KA_ code where one applies.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path}: the reply is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { path: String, offset: usize },
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    ConfigFile(#[from] keyless_core::keyless_json::ConfigFileError),
    #[error("{0}")]
    Usage(String),
    /// An error of a lower layer (the store, pieces, the submit path), under its own code.
    #[error("{message}")]
    Coded { code: Code, message: String },
    #[error(
        "cannot serve on 127.0.0.1:{port}: {source} (is another keyless-host running? try --port)"
    )]
    Bind { port: u16, source: io::Error },
    #[error("{0}: the piece is not valid UTF-8")]
    PieceNotUtf8(String),
    #[error("cannot write the output: {0}")]
    Write(io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl HostError {
    /// The KA_ code of this error.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            HostError::Read { .. } | HostError::NotUtf8 { .. } | HostError::PieceNotUtf8(_) => {
                Code::FileIo
            }
            HostError::Config(e) => e.code(),
            HostError::ConfigFile(e) => e.code(),
            HostError::Usage(_) | HostError::Bind { .. } => Code::ConfigValidation,
            HostError::Coded { code, .. } => *code,
            HostError::Write(_) | HostError::Json(_) => Code::Internal,
        }
    }
}
