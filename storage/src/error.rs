use thiserror::Error;

/// Everything that can go wrong in storage. `Conflict` and `NotFound` are the
/// expected outcomes of a write against the current state; the rest are faults.
#[derive(Debug, Error)]
pub enum Error {
    /// A write met an existing record (or a taken unique name); names the record kind.
    #[error("{0} already exists")]
    Conflict(&'static str),
    /// The record a write or an update needs is absent; names the record kind.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The disk is full, or below Herald's reserve: writes wait for space.
    #[error("no space left on the disk")]
    Full,
    /// The store cannot take writes for another reason (it failed one).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// sled failed for a reason other than a full disk.
    #[error("storage engine: {0}")]
    Engine(sled::Error),
    /// PostgreSQL refused a statement for a reason other than a conflict or a full disk.
    #[error("database: {0}")]
    Database(String),
    /// The database was migrated by a newer engine: running on it could
    /// misread what that engine wrote.
    #[error("the database's schema is version {database}, newer than this engine's {engine}: run a newer herald or point it at another database")]
    SchemaTooNew {
        /// The version recorded in the database.
        database: i32,
        /// The newest version this engine knows.
        engine: i32,
    },
    /// A write under a lease was refused: the lease (named) moved to another
    /// engine or epoch while this one was not looking (paused, partitioned).
    #[error("the lease {0} is no longer held by this engine")]
    Fenced(String),
    /// A stored value does not decode (unknown format byte, truncated or corrupt bytes).
    #[error("corrupt record: {0}")]
    Codec(String),
    /// A secret did not seal or open: wrong master key or context, or a bad key file.
    #[error("sealing: {0}")]
    Seal(&'static str),
    /// A grouped flush failed: writes since the last good flush may not be on disk.
    #[error("flush failed: {0}")]
    Flush(String),
    /// Reading or writing a file beside the database (master key, ballast) failed.
    #[error("i/o: {0}")]
    Io(std::io::Error),
}

impl From<sled::Error> for Error {
    fn from(e: sled::Error) -> Self {
        match e {
            sled::Error::Io(io) if crate::space::is_no_space(&io) => Error::Full,
            other => Error::Engine(other),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        if crate::space::is_no_space(&e) {
            Error::Full
        } else {
            Error::Io(e)
        }
    }
}

/// What every storage call returns.
pub type Result<T> = std::result::Result<T, Error>;

impl From<sled::transaction::TransactionError<Error>> for Error {
    fn from(e: sled::transaction::TransactionError<Error>) -> Self {
        match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => e.into(),
        }
    }
}
