//! The PostgreSQL backend: each tree of the store is a table of `(k BYTEA
//! PRIMARY KEY, v BYTEA)` rows that several engines can share.
//!
//! The store's interface is synchronous (sled answers from memory); the
//! driver is asynchronous. The backend therefore runs the driver and its pool
//! on a small runtime of its own and the calling thread waits for each
//! statement: inside a multi-threaded tokio runtime the wait is announced with
//! `block_in_place`, so the runtime moves its other tasks off the thread.
//! That costs several thread switches per statement, so what every request
//! reads, and a send's record, are awaited instead (see `crate::request_reads`).
//!
//! The SQL is plain: `BYTEA`, `BIGINT`, `INT`, a sequence, `ON CONFLICT`, so
//! that a PostgreSQL-compatible distributed database can run it (the README
//! lists what it relies on). Every key starts with its tenant (see `keys`), so
//! every statement names one key or one key range inside a tenant's prefix,
//! except restart recovery's scans across tenants.

mod leases;
mod listen;
mod migrate;
mod txn;

pub(crate) use txn::{TxTable, Txn};

use crate::kv::Bound;
use crate::leases::{Fence, LeaseOp};
use crate::{Error, MasterKey, Result, Secret};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

/// What the master key check seals, and under which context.
const KEY_CHECK: &[u8] = b"herald master key check";
const KEY_CHECK_CONTEXT: &str = "master-key-check";

/// How long a statement waits for a free connection, or for a new one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A connected database: the pool and the runtime that drives it.
pub(crate) struct Pg {
    rt: Runtime,
    pool: Pool,
    /// Where the pool connects: the listener's connection goes there too.
    config: tokio_postgres::Config,
}

/// One write of [`Pg::write_all`]: table, key, and the value or `None` to delete.
pub(crate) type Row = (&'static str, Vec<u8>, Option<Vec<u8>>);

/// One tree as a table of the shared database. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Table {
    pg: Arc<Pg>,
    name: &'static str,
}

impl Pg {
    /// Connects to `url` with up to `connections` connections, and brings
    /// the schema to this engine's version (see `migrate`).
    pub(crate) fn connect(url: &str, connections: usize) -> Result<Arc<Pg>> {
        let config: tokio_postgres::Config =
            url.parse().map_err(|e| Error::Unavailable(format!("the store URL is not a PostgreSQL URL: {e}")))?;
        let rt = Runtime::new()?;
        let manager =
            Manager::from_config(config.clone(), NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = {
            let _guard = rt.0.as_ref().map(|r| r.enter());
            Pool::builder(manager)
                .max_size(connections.max(1))
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(CONNECT_TIMEOUT))
                .create_timeout(Some(CONNECT_TIMEOUT))
                .build()
                .map_err(|e| Error::Unavailable(format!("PostgreSQL pool: {e}")))?
        };
        let pg = Arc::new(Pg { rt, pool, config });
        let pool = pg.pool.clone();
        pg.run(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            migrate::migrate(&mut client).await
        })?;
        Ok(pg)
    }

    /// The table of the tree named `name`.
    pub(crate) fn table(self: &Arc<Self>, name: &'static str) -> Table {
        Table { pg: self.clone(), name }
    }

    /// Runs `work` on the backend's runtime and waits for its result on this thread.
    fn run<T, F>(&self, work: F) -> Result<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.wait(work)?
    }

    /// Runs `work` on the backend's runtime and waits for it on this thread;
    /// `Err` only when the runtime is gone.
    fn wait<T, F>(&self, work: F) -> Result<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let Some(rt) = self.rt.0.as_ref() else { return Err(Error::Unavailable("the store is closed".into())) };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(work.await);
        });
        blocking(move || rx.recv().map_err(|_| Error::Unavailable("PostgreSQL task ended".into())))
    }

    /// Runs `work` on the backend's runtime; the caller awaits it without
    /// blocking its thread (see [`Table::get_many`]). `work` is spawned here,
    /// not when first polled, so that the future the caller holds is a join
    /// handle: holding `work` (2 KiB for a `get_many`) made every future
    /// that may read the store, on sled too, that much larger, and each of
    /// a request's futures is moved whole several times on its way to its task.
    fn spawned<T, F>(&self, work: F) -> impl Future<Output = Result<T>> + Send + 'static
    where
        F: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let task = self.rt.0.as_ref().map(|rt| rt.spawn(work));
        async move {
            let Some(task) = task else { return Err(Error::Unavailable("the store is closed".into())) };
            task.await.map_err(|e| Error::Unavailable(format!("PostgreSQL task ended: {e}")))?
        }
    }

    /// A value of the engine-wide sequence: unique across every engine sharing the database.
    pub(crate) fn next_id(&self) -> Result<u64> {
        self.number("SELECT nextval('herald_ids')")
    }

    /// Bytes the database takes on disk.
    pub(crate) fn size_on_disk(&self) -> Result<u64> {
        self.number("SELECT pg_database_size(current_database())")
    }

    /// The `BIGINT` that `sql` selects, 0 when negative.
    fn number(&self, sql: &'static str) -> Result<u64> {
        let pool = self.pool.clone();
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let row = c.query_one(sql, &[]).await.map_err(fault)?;
            Ok(u64::try_from(row.try_get::<_, i64>(0).map_err(fault)?).unwrap_or(0))
        })
    }

    /// Applies `writes` and then the lease changes `ops` in one transaction,
    /// refused with [`Error::Fenced`] unless `fence` (a lease the writer
    /// holds) still holds: the lease row stays locked until the commit, so
    /// no engine takes it over in between.
    pub(crate) fn write_all(&self, fence: Option<Fence>, writes: Vec<Row>, ops: Vec<LeaseOp>) -> Result<()> {
        let pool = self.pool.clone();
        self.run(async move {
            let mut c = pool.get().await.map_err(pool_error)?;
            let tx = c.transaction().await.map_err(fault)?;
            if let Some(fence) = &fence {
                if !leases::check_fence(&*tx, fence).await.map_err(fault)? {
                    return Err(Error::Fenced(fence.name.clone()));
                }
            }
            for (table, k, v) in &writes {
                match v {
                    Some(v) => {
                        let st = tx.prepare_cached(&put_sql(table)).await.map_err(fault)?;
                        tx.execute(&st, &[k, v]).await.map_err(fault)?
                    }
                    None => {
                        let st = tx.prepare_cached(&delete_sql(table)).await.map_err(fault)?;
                        tx.execute(&st, &[k]).await.map_err(fault)?
                    }
                };
            }
            for op in &ops {
                leases::apply(&*tx, op).await.map_err(fault)?;
            }
            tx.commit().await.map_err(fault)
        })
    }

    /// Refuses a master key that cannot open what other engines sealed in
    /// this database: the first engine stores a value sealed with its key,
    /// every later one must open it.
    pub(crate) fn check_master_key(&self, master: &MasterKey) -> Result<()> {
        let sealed = crate::codec::encode(&master.seal(KEY_CHECK, KEY_CHECK_CONTEXT)?)?;
        let pool = self.pool.clone();
        let stored = self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            c.execute(
                "INSERT INTO herald_meta (name, v) VALUES ('master_key_check', $1) ON CONFLICT (name) DO NOTHING",
                &[&sealed],
            )
            .await
            .map_err(fault)?;
            let row =
                c.query_one("SELECT v FROM herald_meta WHERE name = 'master_key_check'", &[]).await.map_err(fault)?;
            row.try_get::<_, Vec<u8>>(0).map_err(fault)
        })?;
        let secret: Secret = crate::codec::decode(&stored)?;
        match master.open(&secret, KEY_CHECK_CONTEXT) {
            Ok(plain) if plain == KEY_CHECK => Ok(()),
            _ => Err(Error::Seal(
                "this engine's master key does not open the database's secrets: every engine sharing a database needs the same master key file",
            )),
        }
    }
}

impl Table {
    /// The table's name, which is its tree's.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// The value under `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (pool, sql, key) = (self.pg.pool.clone(), get_sql(self.name), key.to_vec());
        self.pg.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(fault)?;
            let row = c.query_opt(&st, &[&key]).await.map_err(fault)?;
            row.map(|r| r.try_get::<_, Vec<u8>>(0).map_err(fault)).transpose()
        })
    }

    /// The values under `reads` (a table of this database and a key each),
    /// in order: the statements go pipelined on one connection, so however
    /// many there are they take one round trip, and the caller's thread is
    /// not blocked meanwhile (see `crate::request_reads`).
    pub(crate) async fn get_many(&self, reads: Vec<(&'static str, Vec<u8>)>) -> Result<Vec<Option<Vec<u8>>>> {
        let pool = self.pg.pool.clone();
        self.pg
            .spawned(async move {
                let c = pool.get().await.map_err(pool_error)?;
                let mut statements = Vec::with_capacity(reads.len());
                for (table, _) in &reads {
                    statements.push(c.prepare_cached(&get_sql(table)).await.map_err(fault)?);
                }
                let keys: Vec<[&(dyn tokio_postgres::types::ToSql + Sync); 1]> =
                    reads.iter().map(|(_, k)| [k as _]).collect();
                let rows =
                    futures::future::join_all(statements.iter().zip(&keys).map(|(st, k)| c.query_opt(st, k))).await;
                rows.into_iter()
                    .map(|row| row.map_err(fault)?.map(|r| r.try_get::<_, Vec<u8>>(0).map_err(fault)).transpose())
                    .collect()
            })
            .await
    }

    /// Stores `value` under `key` in a transaction of its own.
    pub(crate) fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.pg.run(self.put_statement(key.to_vec(), value.to_vec()))
    }

    /// [`Table::put`], awaited without blocking the caller's thread.
    pub(crate) async fn put_async(&self, key: Vec<u8>, value: Vec<u8>) -> Result<()> {
        self.pg.spawned(self.put_statement(key, value)).await
    }

    /// The statement of [`Table::put`], to wait for either way.
    fn put_statement(&self, key: Vec<u8>, value: Vec<u8>) -> impl Future<Output = Result<()>> + Send + 'static {
        let (pool, sql) = (self.pg.pool.clone(), put_sql(self.name));
        async move {
            let c = pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(fault)?;
            c.execute(&st, &[&key, &value]).await.map(drop).map_err(fault)
        }
    }

    /// Deletes `key` in a transaction of its own; its value, if it was there.
    pub(crate) fn delete(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (pool, key) = (self.pg.pool.clone(), key.to_vec());
        let sql = format!("DELETE FROM {} WHERE k = $1 RETURNING v", self.name);
        self.pg.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(fault)?;
            let row = c.query_opt(&st, &[&key]).await.map_err(fault)?;
            row.map(|r| r.try_get::<_, Vec<u8>>(0).map_err(fault)).transpose()
        })
    }

    /// Up to `limit` rows from `from` and below `end`, in key order: one page
    /// of a keyset-paginated scan.
    pub(crate) fn scan(&self, from: &Bound, end: Option<&[u8]>, limit: i64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut conditions = Vec::new();
        let mut params: Vec<Vec<u8>> = Vec::new();
        match from {
            Bound::Start => {}
            Bound::From(k) => {
                params.push(k.clone());
                conditions.push(format!("k >= ${}", params.len()));
            }
            Bound::After(k) => {
                params.push(k.clone());
                conditions.push(format!("k > ${}", params.len()));
            }
        }
        if let Some(end) = end {
            params.push(end.to_vec());
            conditions.push(format!("k < ${}", params.len()));
        }
        let filter = if conditions.is_empty() { String::new() } else { format!("WHERE {}", conditions.join(" AND ")) };
        let sql =
            format!("SELECT k, v FROM {} {filter} ORDER BY k LIMIT ${}", self.name, params.len().saturating_add(1));
        let pool = self.pg.pool.clone();
        self.pg.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(fault)?;
            let mut args: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
            args.push(&limit);
            let rows = c.query(&st, &args).await.map_err(fault)?;
            rows.iter().map(|r| Ok((r.try_get(0).map_err(fault)?, r.try_get(1).map_err(fault)?))).collect()
        })
    }

    /// How many keys lie from `from` and below `end`.
    pub(crate) fn count(&self, from: &[u8], end: Option<&[u8]>) -> Result<u64> {
        let (pool, from, end) = (self.pg.pool.clone(), from.to_vec(), end.map(<[u8]>::to_vec));
        let sql = match end {
            Some(_) => format!("SELECT count(*) FROM {} WHERE k >= $1 AND k < $2", self.name),
            None => format!("SELECT count(*) FROM {} WHERE k >= $1", self.name),
        };
        self.pg.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(fault)?;
            let row = match &end {
                Some(end) => c.query_one(&st, &[&from, end]).await,
                None => c.query_one(&st, &[&from]).await,
            }
            .map_err(fault)?;
            Ok(u64::try_from(row.try_get::<_, i64>(0).map_err(fault)?).unwrap_or(0))
        })
    }
}

/// Runs `wait`, which blocks this thread, telling a multi-threaded tokio
/// runtime first (`block_in_place`) so that it moves its other tasks away.
pub(crate) fn blocking<T>(wait: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

fn get_sql(table: &str) -> String {
    format!("SELECT v FROM {table} WHERE k = $1")
}

fn put_sql(table: &str) -> String {
    format!("INSERT INTO {table} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
}

fn delete_sql(table: &str) -> String {
    format!("DELETE FROM {table} WHERE k = $1")
}

/// Whether a failed statement's transaction may succeed when run again: a
/// serialization failure or a deadlock, which the database resolves by
/// aborting one of the transactions involved.
pub(crate) fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
}

/// The store's error for a failed statement.
pub(crate) fn fault(e: tokio_postgres::Error) -> Error {
    match e.code() {
        Some(c) if *c == SqlState::DISK_FULL => Error::Full,
        // The driver's own text is only "db error": the server's message and code say what failed.
        Some(_) => Error::Database(match e.as_db_error() {
            Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
            None => e.to_string(),
        }),
        None => Error::Unavailable(format!("PostgreSQL: {e}")),
    }
}

fn pool_error(e: deadpool_postgres::PoolError) -> Error {
    Error::Unavailable(format!("no PostgreSQL connection: {e}"))
}

/// The backend's own runtime, shut down without waiting when the store is
/// dropped (a runtime cannot be dropped from inside another one).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    fn new() -> Result<Runtime> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("herald-pg")
            .enable_all()
            .build()
            .map_err(Error::Io)?;
        Ok(Runtime(Some(rt)))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}
