use thiserror::Error;

/// Everything that can go wrong in storage. `Conflict` and `NotFound` are the
/// expected outcomes of a write against the current state; the rest are faults.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{0} already exists")]
    Conflict(&'static str),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("storage engine: {0}")]
    Engine(#[from] sled::Error),
    #[error("corrupt record: {0}")]
    Codec(String),
    #[error("sealing: {0}")]
    Seal(&'static str),
    #[error("flush failed: {0}")]
    Flush(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

impl From<sled::transaction::TransactionError<Error>> for Error {
    fn from(e: sled::transaction::TransactionError<Error>) -> Self {
        match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => Error::Engine(e),
        }
    }
}

/// Aborts a sled transaction with one of our errors.
pub(crate) fn abort<T>(e: Error) -> std::result::Result<T, sled::transaction::ConflictableTransactionError<Error>> {
    Err(sled::transaction::ConflictableTransactionError::Abort(e))
}
