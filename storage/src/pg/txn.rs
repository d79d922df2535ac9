//! One transaction on PostgreSQL, at the SERIALIZABLE level: what sled's
//! optimistic transactions give, so the operations layer's rules (read,
//! check, write) hold the same on both backends.
//!
//! Reads go to the database at once (through the transaction's connection);
//! writes are kept in order in memory, visible to the transaction's own reads,
//! and sent together, pipelined, just before `COMMIT`. A serialization failure
//! or deadlock marks the transaction for a retry (see `crate::tx`).

use super::{delete_sql, fault, get_sql, pool_error, put_sql, retryable, Pg};
use crate::leases::Fence;
use crate::{Error, Result};
use deadpool_postgres::Object;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use tokio_postgres::types::ToSql;

/// Writes not yet sent, by table and key: a value, or `None` for a delete.
type Pending = BTreeMap<(&'static str, Vec<u8>), Option<Vec<u8>>>;

/// A transaction in progress. Rolled back when dropped unfinished.
pub(crate) struct Txn {
    pg: Arc<Pg>,
    client: Arc<Object>,
    writes: RefCell<Pending>,
    /// `BEGIN` was sent and neither `COMMIT` nor `ROLLBACK` since.
    open: Cell<bool>,
    /// A statement failed in a way that running the transaction again may cure.
    retry: Cell<bool>,
    /// A statement failed: the database aborted the transaction, and nothing
    /// more may run in it (a new `BEGIN` would split the closure's view).
    broken: Cell<bool>,
}

/// A table as one transaction sees it.
pub(crate) struct TxTable {
    txn: Rc<Txn>,
    name: &'static str,
}

impl Txn {
    /// Takes a connection for a new transaction.
    pub(crate) fn begin(pg: &Arc<Pg>) -> Result<Rc<Txn>> {
        let pool = pg.pool.clone();
        let client = pg.run(async move { pool.get().await.map_err(pool_error) })?;
        Ok(Rc::new(Txn {
            pg: pg.clone(),
            client: Arc::new(client),
            writes: RefCell::default(),
            open: Cell::new(false),
            retry: Cell::new(false),
            broken: Cell::new(false),
        }))
    }

    /// The transaction's view of the table `name`.
    pub(crate) fn table(self: &Rc<Self>, name: &'static str) -> TxTable {
        TxTable { txn: self.clone(), name }
    }

    /// Whether a statement failed with a serialization failure or a deadlock.
    pub(crate) fn must_retry(&self) -> bool {
        self.retry.get()
    }

    /// Sends the writes and commits. `Err` with [`Txn::must_retry`] set when
    /// the database refused the commit for a conflict.
    pub(crate) fn commit(&self) -> Result<()> {
        self.usable()?;
        let writes = std::mem::take(&mut *self.writes.borrow_mut());
        if writes.is_empty() && !self.open.get() {
            return Ok(());
        }
        let (client, begin) = (self.client.clone(), !self.open.get());
        self.open.set(true);
        let done = self.pg.wait(async move {
            if begin {
                client.batch_execute(BEGIN).await?;
            }
            let mut statements = Vec::with_capacity(writes.len());
            for ((table, _), value) in &writes {
                let sql = if value.is_some() { put_sql(table) } else { delete_sql(table) };
                statements.push(client.prepare_cached(&sql).await?);
            }
            let params: Vec<Vec<&(dyn ToSql + Sync)>> = writes
                .iter()
                .map(|((_, key), value)| match value {
                    Some(v) => vec![key as &(dyn ToSql + Sync), v],
                    None => vec![key as &(dyn ToSql + Sync)],
                })
                .collect();
            let sends = statements.iter().zip(&params).map(|(st, p)| client.execute(st, p));
            first_failure(futures::future::join_all(sends).await)?;
            client.batch_execute("COMMIT").await
        });
        self.finish(done)
    }

    /// Rolls back now rather than when dropped.
    pub(crate) fn rollback(&self) {
        if self.open.replace(false) {
            let client = self.client.clone();
            let _ = self.pg.run(async move { client.batch_execute("ROLLBACK").await.map_err(fault) });
        }
    }

    /// The value of `key` in `table` as this transaction sees it.
    fn get(&self, table: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(pending) = self.writes.borrow().get(&(table, key.to_vec())) {
            return Ok(pending.clone());
        }
        self.usable()?;
        let (client, begin, key) = (self.client.clone(), !self.open.get(), key.to_vec());
        self.open.set(true);
        let read = self.pg.wait(async move {
            if begin {
                client.batch_execute(BEGIN).await?;
            }
            let st = client.prepare_cached(&get_sql(table)).await?;
            client.query_opt(&st, &[&key]).await?.map(|r| r.try_get::<_, Vec<u8>>(0)).transpose()
        });
        self.finish(read)
    }

    /// The next number of the store's id sequence, taken on the
    /// transaction's own connection: a second one from the pool, taken by
    /// every transaction at once, could wait for ever on a pool they hold.
    /// (A sequence is not rolled back: a transaction run again leaves gaps.)
    pub(crate) fn next_id(&self) -> Result<u64> {
        self.usable()?;
        let (client, begin) = (self.client.clone(), !self.open.get());
        self.open.set(true);
        let id = self.pg.wait(async move {
            if begin {
                client.batch_execute(BEGIN).await?;
            }
            client.query_one("SELECT nextval('herald_ids')", &[]).await?.try_get::<_, i64>(0)
        });
        Ok(u64::try_from(self.finish(id)?).unwrap_or(0))
    }

    /// Refuses with [`Error::Fenced`] unless the lease `fence` still holds;
    /// the lease row stays locked until the transaction ends.
    pub(crate) fn fence(&self, fence: &Fence) -> Result<()> {
        self.usable()?;
        let (client, begin, f) = (self.client.clone(), !self.open.get(), fence.clone());
        self.open.set(true);
        let held = self.pg.wait(async move {
            if begin {
                client.batch_execute(BEGIN).await?;
            }
            super::leases::check_fence(&***client, &f).await
        });
        match self.finish(held)? {
            true => Ok(()),
            false => Err(Error::Fenced(fence.name.clone())),
        }
    }

    fn usable(&self) -> Result<()> {
        match self.broken.get() {
            true => Err(Error::Unavailable("the transaction was aborted by an earlier failure".into())),
            false => Ok(()),
        }
    }

    fn write(&self, table: &'static str, key: &[u8], value: Option<Vec<u8>>) {
        self.writes.borrow_mut().insert((table, key.to_vec()), value);
    }

    /// The store's error for a driver's, marking the transaction for a retry
    /// when the database asks for one; the transaction is over after a failure.
    fn finish<T>(&self, done: Result<std::result::Result<T, tokio_postgres::Error>>) -> Result<T> {
        if !matches!(done, Ok(Ok(_))) {
            self.broken.set(true);
        }
        match done {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                if retryable(&e) {
                    self.retry.set(true);
                }
                self.rollback();
                Err(fault(e))
            }
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }
}

/// How every transaction starts.
const BEGIN: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE";

/// The error of the first statement that failed, in the order they were sent.
///
/// After a statement fails, the database refuses every later one of the
/// transaction with "current transaction is aborted" (25P02), which says
/// nothing of why. Such an answer can be seen first: the connection runs on
/// another thread, and `try_join_all` over a few statements returns the
/// first error it polls, which may be a later statement's, answered between
/// the polls of the failed one and its own. The first failure in sending
/// order is the cause, and it says whether the transaction may be run again
/// (a serialization failure). Taking the other one failed CI's sixteen
/// writers test 1 run in 10 with a non-retryable 25P02.
fn first_failure<T, E>(answers: Vec<std::result::Result<T, E>>) -> std::result::Result<(), E> {
    answers.into_iter().try_for_each(|a| a.map(drop))
}

impl Drop for Txn {
    fn drop(&mut self) {
        self.rollback();
    }
}

impl TxTable {
    /// The value under `key`, as the transaction sees it.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.txn.get(self.name, key)
    }

    /// Stores `value` under `key` at commit.
    pub(crate) fn put(&self, key: &[u8], value: &[u8]) {
        self.txn.write(self.name, key, Some(value.to_vec()));
    }

    /// Removes `key` at commit; its value as the transaction saw it.
    pub(crate) fn remove(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let old = self.get(key)?;
        self.txn.write(self.name, key, None);
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::first_failure;

    /// Every answer is awaited, and the earliest failure is the one kept,
    /// whatever failed after it.
    #[test]
    fn the_first_failed_statement_names_the_failure() {
        let answers = vec![Ok(1), Err("40001: serialization failure"), Err("25P02: transaction aborted")];
        assert_eq!(first_failure(answers), Err("40001: serialization failure"));
        assert_eq!(first_failure::<u64, &str>(vec![Ok(1), Ok(2)]), Ok(()));
    }
}
