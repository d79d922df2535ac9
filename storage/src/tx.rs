//! One transaction over every record kind: the interface the operations layer
//! writes through, and what a second backend implements again.
//!
//! [`Store::transact`] runs a closure against a [`Tx`]; everything the closure
//! reads and writes through it commits together or not at all, and no other
//! write is interleaved. The closure may run more than once (a backend retries
//! on conflict), so it must only compute: no network call, no password hash,
//! no side effect outside the `Tx`.
//!
//! A `Tx` offers point reads and writes of typed records and keeps their
//! indexes; each record module adds its own methods (`impl Tx<'_>` there).
//! It has no range scans (sled cannot scan inside a transaction): an
//! operation that must know "all the X of Y" reads them before its
//! transaction and checks a record that every change of that set moves on
//! (a generation, such as a client's link generation) inside it.

use crate::databases::TxTrees;
use crate::{codec, Error, Result, Store};
use serde::{de::DeserializeOwned, Serialize};
use sled::transaction::{
    ConflictableTransactionError, TransactionError, TransactionalTree, UnabortableTransactionError,
};
use sled::Transactional;
use std::cell::Cell;

/// A transaction in progress (see the module documentation).
pub struct Tx<'a> {
    pub(crate) t: &'a TxTrees,
    /// Set when the backend reported a conflict: the closure's error is then
    /// replaced by a retry.
    conflict: Cell<bool>,
}

impl Store {
    /// Runs `f` as one transaction over the records (see [`Tx`]). Its error
    /// type is the caller's, so a refusal decided inside (`Err(NotFound)`,
    /// a domain rule's error) aborts the transaction and comes back as is.
    /// Refused with [`Error::Full`] or [`Error::Unavailable`] while the store
    /// takes no writes. The write is durable after [`Store::durable`].
    pub fn transact<T, E>(&self, f: impl Fn(&Tx) -> std::result::Result<T, E>) -> std::result::Result<T, E>
    where
        E: From<Error>,
    {
        self.writable()?;
        let dbs = self.trees()?;
        let done = dbs.records.as_slice().transaction(|view: &Vec<TransactionalTree>| {
            let trees = TxTrees::new(view)
                .ok_or_else(|| ConflictableTransactionError::Abort(Error::Unavailable("tree set".into()).into()))?;
            let tx = Tx { t: &trees, conflict: Cell::new(false) };
            match f(&tx) {
                Ok(value) => Ok(value),
                Err(_) if tx.conflict.get() => Err(ConflictableTransactionError::Conflict),
                Err(e) => Err(ConflictableTransactionError::Abort(e)),
            }
        });
        match done {
            Ok(value) => Ok(value),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(Error::from(e).into()),
        }
    }
}

impl Tx<'_> {
    /// The record under `key` in `tree`.
    pub(crate) fn get<T: DeserializeOwned>(&self, tree: &TransactionalTree, key: &[u8]) -> Result<Option<T>> {
        match tree.get(key) {
            Ok(raw) => raw.map(|v| codec::decode(&v)).transpose(),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Whether `tree` holds `key`.
    pub(crate) fn has(&self, tree: &TransactionalTree, key: &[u8]) -> Result<bool> {
        tree.get(key).map(|v| v.is_some()).map_err(|e| self.failed(e))
    }

    pub(crate) fn put<T: Serialize>(&self, tree: &TransactionalTree, key: &[u8], value: &T) -> Result<()> {
        let encoded = codec::encode(value)?;
        tree.insert(key, encoded).map(drop).map_err(|e| self.failed(e))
    }

    /// The bytes under `key`, undecoded: index trees whose values are ids.
    pub(crate) fn get_raw(&self, tree: &TransactionalTree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        tree.get(key).map(|v| v.map(|v| v.to_vec())).map_err(|e| self.failed(e))
    }

    /// Stores `value` as is under `key` (see [`Tx::get_raw`]).
    pub(crate) fn put_raw(&self, tree: &TransactionalTree, key: &[u8], value: &[u8]) -> Result<()> {
        tree.insert(key, value).map(drop).map_err(|e| self.failed(e))
    }

    /// Removes `key`; its record, if there was one.
    pub(crate) fn take<T: DeserializeOwned>(&self, tree: &TransactionalTree, key: &[u8]) -> Result<Option<T>> {
        match tree.remove(key) {
            Ok(raw) => raw.map(|v| codec::decode(&v)).transpose(),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Removes `key`; whether it was there.
    pub(crate) fn remove(&self, tree: &TransactionalTree, key: &[u8]) -> Result<bool> {
        tree.remove(key).map(|v| v.is_some()).map_err(|e| self.failed(e))
    }

    fn failed(&self, e: UnabortableTransactionError) -> Error {
        match e {
            UnabortableTransactionError::Conflict => {
                self.conflict.set(true);
                Error::Unavailable("transaction conflict".into())
            }
            UnabortableTransactionError::Storage(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Error, Store, StoreOptions};

    #[test]
    fn a_refused_transaction_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&StoreOptions::new(dir.path())).unwrap();
        let t = store.trees().unwrap();
        let refused: Result<(), Error> = store.transact(|tx| {
            tx.put(&tx.t.settings, b"a", &1u64)?;
            Err(Error::Conflict("b"))
        });
        assert!(matches!(refused, Err(Error::Conflict("b"))));
        assert!(t.settings.get(b"a").unwrap().is_none());
        store.transact(|tx| tx.put(&tx.t.settings, b"a", &2u64)).unwrap();
        let read: Option<u64> = store.transact(|tx| tx.get(&tx.t.settings, b"a")).unwrap();
        assert_eq!(read, Some(2));
    }
}
