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
//! (a generation, such as a client's link generation) inside it. Nor may
//! the closure read the store outside its `Tx`: a sled transaction holds
//! sled's global lock while it runs, and such a read waits for it for ever.
//!
//! Events are queued through the `Tx` too ([`Tx::enqueue_event`]), so they
//! commit with the change they report; the webhook targets are told after
//! the commit (see [`Store::on_outbox_write`]).

use crate::databases::{Dbs, Engine, TxTrees};
use crate::index_db::IndexWrites;
use crate::kv::TxTree;
use crate::pg::Txn;
use crate::space::Space;
use crate::{codec, Error, Result, Store};
use serde::{de::DeserializeOwned, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionError, UnabortableTransactionError};
use sled::Transactional;
use std::cell::{Cell, RefCell};

/// How many times a PostgreSQL transaction runs before a conflict is given up as unavailability.
const PG_ATTEMPTS: u32 = 32;

/// The longest pause between two runs of a conflicting transaction, ms.
const PG_MAX_BACKOFF_MS: u64 = 250;

/// A transaction in progress (see the module documentation).
pub struct Tx<'a> {
    pub(crate) t: &'a TxTrees,
    /// Where a write under a lease checks it: the PostgreSQL transaction, or
    /// the engine's own leases on sled.
    leases: Leases<'a>,
    /// Set when the backend reported a conflict: the closure's error is then
    /// replaced by a retry.
    conflict: Cell<bool>,
    /// Where a sled storage error met inside the transaction goes (see `space`).
    space: &'a Space,
    /// Tenants' webhooks as last listed (see [`Tx::webhooks_of`]).
    pub(crate) webhook_sets: &'a crate::webhooks::WebhookSets,
    /// The tenant whose webhooks must be listed again before the
    /// transaction runs again (see [`Tx::webhooks_of`]).
    pub(crate) stale_set: &'a RefCell<Option<String>>,
    /// The webhooks whose outbox this run wrote to, as (tenant, webhook):
    /// woken once it commits.
    pub(crate) outbox_writes: RefCell<Vec<(String, String)>>,
}

/// How many times a transaction lists a tenant's webhooks again before it
/// gives up as unavailable: only concurrent webhook writes make it list again.
const SET_LISTINGS: u32 = 8;

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
        let stale = RefCell::new(None);
        for _ in 0..SET_LISTINGS {
            let done = self.transact_once(&f, &stale);
            match stale.take() {
                Some(tenant) if done.is_err() => self.list_webhook_set(&tenant)?,
                _ => return done,
            }
        }
        Err(Error::Unavailable("a tenant's webhooks kept changing; try again".into()).into())
    }

    /// One [`Store::transact`], which answers with `stale` set when it must
    /// list a tenant's webhooks and run again.
    fn transact_once<T, E>(
        &self,
        f: &impl Fn(&Tx) -> std::result::Result<T, E>,
        stale: &RefCell<Option<String>>,
    ) -> std::result::Result<T, E>
    where
        E: From<Error>,
    {
        self.writable()?;
        let dbs = self.trees()?;
        let records = match &dbs.engine {
            Engine::Sled { records, .. } => records,
            Engine::Pg(pg) => return transact_pg(self, pg, &dbs, stale, f),
        };
        // The lease table before sled's transaction lock (see `LocalLeases`).
        let table = self.inner.local_leases.map();
        // The broadcast index keys the run that commits changed (see `index_db`).
        let changed = RefCell::new(Vec::new());
        let outbox_writes = RefCell::new(Vec::new());
        let done = records.as_slice().transaction(|view| {
            let trees = TxTrees::sled(view)
                .ok_or_else(|| ConflictableTransactionError::Abort(Error::Unavailable("tree set".into()).into()))?;
            let tx = Tx::new(&trees, Leases::Local(&table), &dbs, self, stale);
            match f(&tx) {
                Ok(value) => {
                    if let IndexWrites::After(keys) = &trees.index {
                        changed.replace(keys.take());
                    }
                    outbox_writes.replace(tx.outbox_writes.take());
                    Ok(value)
                }
                Err(_) if tx.conflict.get() => Err(ConflictableTransactionError::Conflict),
                Err(e) => Err(ConflictableTransactionError::Abort(e)),
            }
        });
        drop(table); // held for the transaction only
        match done {
            Ok(value) => {
                dbs.apply_index(changed.into_inner())?;
                self.woke_outboxes(outbox_writes.into_inner());
                Ok(value)
            }
            Err(TransactionError::Abort(e)) => Err(e),
            // The commit's write failed: the store is marked failed (see `space`).
            Err(TransactionError::Storage(e)) => Err(dbs.write_error(e).into()),
        }
    }
}

/// [`Store::transact`] on PostgreSQL: SERIALIZABLE, run again (a bounded
/// number of times) when the database reports a serialization failure or a
/// deadlock, after a random pause below a bound that doubles with each
/// attempt ("full jitter"): transactions that keep meeting each other (many
/// creations in one tenant insert at the end of the same index pages, which
/// serializable reads of absent keys lock) spread out instead of colliding
/// again in step.
fn transact_pg<T, E>(
    store: &Store,
    pg: &std::sync::Arc<crate::pg::Pg>,
    dbs: &Dbs,
    stale: &RefCell<Option<String>>,
    f: &impl Fn(&Tx) -> std::result::Result<T, E>,
) -> std::result::Result<T, E>
where
    E: From<Error>,
{
    for attempt in 0..PG_ATTEMPTS {
        if attempt > 0 {
            let bound = 1u64.checked_shl(attempt.min(16)).unwrap_or(u64::MAX).min(PG_MAX_BACKOFF_MS);
            let pause = std::time::Duration::from_millis(rand::random_range(0..=bound));
            crate::pg::blocking(|| std::thread::sleep(pause));
        }
        let txn = Txn::begin(pg)?;
        let trees = TxTrees::pg(&txn);
        let tx = Tx::new(&trees, Leases::Pg(&txn), dbs, store, stale);
        match f(&tx) {
            Ok(value) => match txn.commit() {
                Ok(()) => {
                    store.woke_outboxes(tx.outbox_writes.take());
                    return Ok(value);
                }
                Err(_) if txn.must_retry() => continue,
                Err(e) => return Err(e.into()),
            },
            Err(_) if txn.must_retry() => continue,
            Err(e) => {
                txn.rollback();
                return Err(e);
            }
        }
    }
    Err(Error::Unavailable("a transaction kept conflicting with others; try again".into()).into())
}

/// Where a transaction checks a lease.
enum Leases<'a> {
    /// The engine's lease table, held for the whole transaction.
    Local(&'a crate::leases::LocalTable<'a>),
    Pg(&'a Txn),
}

impl<'a> Tx<'a> {
    fn new(
        t: &'a TxTrees,
        leases: Leases<'a>,
        dbs: &'a Dbs,
        store: &'a Store,
        stale_set: &'a RefCell<Option<String>>,
    ) -> Tx<'a> {
        Tx {
            t,
            leases,
            conflict: Cell::new(false),
            space: &dbs.space,
            webhook_sets: &store.inner.webhook_sets,
            stale_set,
            outbox_writes: RefCell::default(),
        }
    }

    /// A number above every one handed out before: the order of outbox entries.
    pub(crate) fn generate_id(&self) -> Result<u64> {
        match &self.t.outbox {
            TxTree::Sled(t) => t.generate_id().map_err(|e| self.space.write_error(e.into())),
            TxTree::Pg(_) => match self.leases {
                Leases::Pg(txn) => txn.next_id(),
                Leases::Local(_) => Err(Error::Unavailable("a tree of another backend".into())),
            },
        }
    }
}

impl Tx<'_> {
    /// Refuses with [`Error::Fenced`] unless this engine still holds `lease`
    /// at its epoch; on PostgreSQL nobody can take it over until the
    /// transaction ends.
    pub(crate) fn fence(&self, store: &Store, lease: &crate::leases::Lease) -> Result<()> {
        let fence = store.fence(lease);
        match self.leases {
            Leases::Local(table) => crate::leases::check(table, &fence),
            Leases::Pg(txn) => txn.fence(&fence),
        }
    }

    /// The record under `key` in `tree`.
    pub(crate) fn get<T: DeserializeOwned>(&self, tree: &TxTree, key: &[u8]) -> Result<Option<T>> {
        self.get_raw(tree, key)?.map(|v| codec::decode(&v)).transpose()
    }

    /// Whether `tree` holds `key`.
    pub(crate) fn has(&self, tree: &TxTree, key: &[u8]) -> Result<bool> {
        Ok(self.get_raw(tree, key)?.is_some())
    }

    pub(crate) fn put<T: Serialize>(&self, tree: &TxTree, key: &[u8], value: &T) -> Result<()> {
        self.put_raw(tree, key, &codec::encode(value)?)
    }

    /// The bytes under `key`, undecoded: index trees whose values are ids.
    pub(crate) fn get_raw(&self, tree: &TxTree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match tree {
            TxTree::Sled(t) => t.get(key).map(|v| v.map(|v| v.to_vec())).map_err(|e| self.failed(e)),
            TxTree::Pg(t) => t.get(key),
        }
    }

    /// Stores `value` as is under `key` (see [`Tx::get_raw`]).
    pub(crate) fn put_raw(&self, tree: &TxTree, key: &[u8], value: &[u8]) -> Result<()> {
        match tree {
            TxTree::Sled(t) => t.insert(key, value).map(drop).map_err(|e| self.failed(e)),
            TxTree::Pg(t) => {
                t.put(key, value);
                Ok(())
            }
        }
    }

    /// Removes `key`; its record, if there was one.
    pub(crate) fn take<T: DeserializeOwned>(&self, tree: &TxTree, key: &[u8]) -> Result<Option<T>> {
        self.take_raw(tree, key)?.map(|v| codec::decode(&v)).transpose()
    }

    /// Removes `key`; whether it was there.
    pub(crate) fn remove(&self, tree: &TxTree, key: &[u8]) -> Result<bool> {
        Ok(self.take_raw(tree, key)?.is_some())
    }

    fn take_raw(&self, tree: &TxTree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match tree {
            TxTree::Sled(t) => t.remove(key).map(|v| v.map(|v| v.to_vec())).map_err(|e| self.failed(e)),
            TxTree::Pg(t) => t.remove(key),
        }
    }

    fn failed(&self, e: UnabortableTransactionError) -> Error {
        match e {
            UnabortableTransactionError::Conflict => {
                self.conflict.set(true);
                Error::Unavailable("transaction conflict".into())
            }
            UnabortableTransactionError::Storage(e) => self.space.write_error(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Error, Store};

    #[test]
    fn a_refused_transaction_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
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
