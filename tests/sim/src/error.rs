//! The simulators' error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the simulators could not start, or credentials could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Generating or loading a certificate or key failed.
    #[error("certificate error: {0}")]
    Cert(String),
    /// Building the TLS configuration failed.
    #[error("TLS configuration error: {0}")]
    Tls(String),
    /// A credential file in the cert dir is malformed.
    #[error("invalid credential file {path}: {message}")]
    Credentials {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Serialising JSON failed.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
}

impl SimError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SimError::Io { path: path.into(), source }
    }
}

impl From<rcgen::Error> for SimError {
    fn from(e: rcgen::Error) -> Self {
        SimError::Cert(e.to_string())
    }
}
