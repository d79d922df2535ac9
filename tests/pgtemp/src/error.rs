use std::io;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

/// Why a cluster did not start or a command against it failed. Each message says
/// what to install or which command failed, with its standard error.
#[derive(Debug, Error)]
pub enum Error {
    /// No directory holding `initdb` and `postgres` was found.
    #[error(
        "PostgreSQL server binaries not found ({0}): install them with `apt-get install postgresql`, \
         or set HERALD_PG_BIN to the directory holding initdb and postgres"
    )]
    NotInstalled(String),
    /// Running as root, but there is no `postgres` OS user to run the server as.
    #[error(
        "running as root and the `postgres` OS user is missing ({0}): initdb refuses root; \
         `apt-get install postgresql` creates that user"
    )]
    NoPostgresUser(String),
    /// A file-system or process operation failed; says which.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path or command.
        what: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// A PostgreSQL client or tool exited unsuccessfully.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line, as run.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// The server exited while starting.
    #[error("PostgreSQL exited while starting ({status}); the tail of its log {log_path:?}:\n{log}")]
    Exited {
        /// Its exit status.
        status: String,
        /// Where its log was.
        log_path: PathBuf,
        /// The last lines of its log.
        log: String,
    },
    /// The server did not accept connections in time.
    #[error(
        "PostgreSQL did not accept connections on 127.0.0.1:{port} within {waited:?}; the tail of its log:\n{log}"
    )]
    NotReady {
        /// The port it was started on.
        port: u16,
        /// How long it was given.
        waited: Duration,
        /// The last lines of its log.
        log: String,
    },
    /// The process-wide cluster of [`shared`](crate::shared) failed to start (now or earlier).
    #[error("the shared PostgreSQL cluster failed to start: {0}")]
    Shared(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Error::Io { what: what.into(), source }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
