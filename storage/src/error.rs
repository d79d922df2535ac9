use thiserror::Error;

/// Everything that can go wrong in storage. `Conflict` and `NotFound` are the
/// expected outcomes of a write against the current state; the rest are faults.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{0} already exists")]
    Conflict(&'static str),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The disk is full, or below Herald's reserve: writes wait for space.
    #[error("no space left on the disk")]
    Full,
    /// The store cannot take writes for another reason (it failed one).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error("storage engine: {0}")]
    Engine(sled::Error),
    #[error("corrupt record: {0}")]
    Codec(String),
    #[error("sealing: {0}")]
    Seal(&'static str),
    #[error("flush failed: {0}")]
    Flush(String),
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

pub type Result<T> = std::result::Result<T, Error>;

impl From<sled::transaction::TransactionError<Error>> for Error {
    fn from(e: sled::transaction::TransactionError<Error>) -> Self {
        match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => e.into(),
        }
    }
}
