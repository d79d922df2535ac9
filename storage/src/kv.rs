//! Ordered key-value trees over either backend: what the record modules read
//! and write through, so that they never name sled or PostgreSQL.
//!
//! A [`Tree`] is a sled tree or a PostgreSQL table of `(k BYTEA, v BYTEA)`
//! rows; both order keys bytewise, so a prefix scan means the same on both.
//! Inside a transaction the same trees are [`TxTree`]s (see `crate::tx`).

use crate::keys::Key;
use crate::pg;
use crate::space::Space;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// A stored value or key: sled's buffer, which PostgreSQL rows convert into.
pub(crate) type Bytes = sled::IVec;

/// One record kind or index of the store (see `databases.rs`).
#[derive(Clone)]
pub(crate) enum Tree {
    /// A tree of the embedded database, and where the errors of writes to
    /// it go (`Space::write_error`: a failed write marks the store failed).
    Sled(sled::Tree, Arc<Space>),
    /// A table of the shared database.
    Pg(pg::Table),
}

/// One write of [`crate::databases::Dbs::write_all`]: a value to store, or `None` to remove the key.
pub(crate) type Write<'a> = (&'a Tree, crate::keys::Key, Option<Vec<u8>>);

impl Tree {
    /// The value under `key`.
    pub(crate) fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        match self {
            Tree::Sled(t, _) => Ok(t.get(key)?),
            Tree::Pg(t) => Ok(t.get(key)?.map(Bytes::from)),
        }
    }

    /// Whether `key` is present.
    pub(crate) fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Stores `value` under `key`, outside any transaction.
    pub(crate) fn insert(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        match self {
            Tree::Sled(t, space) => t.insert(key, value).map(drop).map_err(|e| space.write_error(e.into())),
            Tree::Pg(t) => t.put(key, value),
        }
    }

    /// [`Tree::insert`], awaited: on PostgreSQL without blocking the caller's thread.
    pub(crate) async fn insert_async(&self, key: &[u8], value: Vec<u8>) -> Result<()> {
        match self {
            Tree::Sled(t, space) => t.insert(key, value).map(drop).map_err(|e| space.write_error(e.into())),
            Tree::Pg(t) => t.put_async(key.to_vec(), value).await,
        }
    }

    /// Removes `key`, outside any transaction; its value, if it was there.
    pub(crate) fn remove(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        match self {
            Tree::Sled(t, space) => t.remove(key).map_err(|e| space.write_error(e.into())),
            Tree::Pg(t) => Ok(t.delete(key)?.map(Bytes::from)),
        }
    }

    /// Every entry whose key starts with `prefix`, in key order.
    pub(crate) fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> Scan {
        let prefix = prefix.as_ref();
        match self {
            Tree::Sled(t, _) => Scan::Sled(t.scan_prefix(prefix)),
            Tree::Pg(t) => Scan::pg(t, Bound::From(prefix.to_vec()), successor(prefix)),
        }
    }

    /// Every entry from `start` (included) on, in key order.
    pub(crate) fn range_from(&self, start: impl AsRef<[u8]>) -> Scan {
        let start = start.as_ref();
        match self {
            Tree::Sled(t, _) => Scan::Sled(t.range(start..)),
            Tree::Pg(t) => Scan::pg(t, Bound::From(start.to_vec()), None),
        }
    }

    /// Every entry below `end` (excluded), in key order.
    pub(crate) fn range_below(&self, end: impl AsRef<[u8]>) -> Scan {
        let end = end.as_ref();
        match self {
            Tree::Sled(t, _) => Scan::Sled(t.range(..end)),
            Tree::Pg(t) => Scan::pg(t, Bound::Start, Some(end.to_vec())),
        }
    }

    /// Every entry, in key order: restart recovery across tenants.
    pub(crate) fn iter(&self) -> Scan {
        match self {
            Tree::Sled(t, _) => Scan::Sled(t.iter()),
            Tree::Pg(t) => Scan::pg(t, Bound::Start, None),
        }
    }

    /// How many keys start with `prefix`, counted where the data is.
    pub(crate) fn count_prefix(&self, prefix: impl AsRef<[u8]>) -> Result<u64> {
        let prefix = prefix.as_ref();
        match self {
            Tree::Sled(t, _) => Ok(t.scan_prefix(prefix).count() as u64),
            Tree::Pg(t) => t.count(prefix, successor(prefix).as_deref()),
        }
    }
}

/// The values under `reads` (a tree and a key each), in order: on
/// PostgreSQL in one round trip that does not block the caller's thread,
/// on sled from memory (see `crate::request_reads`).
pub(crate) async fn get_many(reads: &[(&Tree, Key)]) -> Result<Vec<Option<Bytes>>> {
    let mut rows = Vec::with_capacity(reads.len());
    let mut database = None;
    for (tree, key) in reads {
        match tree {
            Tree::Sled(..) => return reads.iter().map(|(t, k)| t.get(k)).collect(),
            Tree::Pg(t) => {
                rows.push((t.name(), key.to_vec()));
                database = Some(t);
            }
        }
    }
    let Some(table) = database else { return Ok(Vec::new()) };
    Ok(table.get_many(rows).await?.into_iter().map(|v| v.map(Bytes::from)).collect())
}

/// The first key after every key that starts with `prefix`; `None` when no
/// such key exists (the prefix is empty or all `0xFF`).
pub(crate) fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last.saturating_add(1));
            return Some(end);
        }
    }
    None
}

/// Where a scan of a PostgreSQL table resumes.
#[derive(Clone, Debug)]
pub(crate) enum Bound {
    /// From the first key.
    Start,
    /// From this key, included.
    From(Vec<u8>),
    /// After this key: the last one already returned.
    After(Vec<u8>),
}

/// An iterator over a key range, in key order. On PostgreSQL it reads the
/// range in keyset-paginated batches, so a scan of a million entries never
/// holds more than one batch (a broadcast streams a tenant's tokens this way).
pub(crate) enum Scan {
    /// sled's own iterator.
    Sled(sled::Iter),
    /// Batches read from a table.
    Pg(PgScan),
}

/// The state of a scan over a PostgreSQL table.
pub(crate) struct PgScan {
    table: pg::Table,
    from: Bound,
    end: Option<Vec<u8>>,
    batch: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// Rows per read: small first (most scans stop early), larger after.
    size: i64,
    done: bool,
}

/// Rows read by the first batch of a scan, and at most by any batch.
const FIRST_BATCH: i64 = 64;
const MAX_BATCH: i64 = 2048;

impl Scan {
    fn pg(table: &pg::Table, from: Bound, end: Option<Vec<u8>>) -> Scan {
        Scan::Pg(PgScan { table: table.clone(), from, end, batch: VecDeque::new(), size: FIRST_BATCH, done: false })
    }

    /// The keys alone.
    pub(crate) fn keys(self) -> impl Iterator<Item = Result<Bytes>> {
        self.map(|kv| kv.map(|(k, _)| k))
    }
}

impl Iterator for Scan {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Scan::Sled(i) => i.next().map(|kv| kv.map_err(Error::from)),
            Scan::Pg(s) => s.next_row().map(|kv| kv.map(|(k, v)| (Bytes::from(k), Bytes::from(v)))),
        }
    }
}

impl PgScan {
    fn next_row(&mut self) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if self.batch.is_empty() && !self.done {
            match self.table.scan(&self.from, self.end.as_deref(), self.size) {
                Ok(rows) => {
                    self.done = (rows.len() as i64) < self.size;
                    self.size = self.size.saturating_mul(4).min(MAX_BATCH);
                    if let Some((last, _)) = rows.last() {
                        self.from = Bound::After(last.clone());
                    }
                    self.batch = rows.into();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        self.batch.pop_front().map(Ok)
    }
}

/// A tree as one transaction sees it.
pub(crate) enum TxTree {
    /// sled's view of the tree inside its transaction.
    Sled(sled::transaction::TransactionalTree),
    /// The table, read and written through the transaction's connection.
    Pg(pg::TxTable),
}

#[cfg(test)]
mod tests {
    use super::successor;

    #[test]
    fn the_successor_of_a_prefix_bounds_exactly_its_keys() {
        assert_eq!(successor(b"ab\0"), Some(b"ab\x01".to_vec()));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
        assert_eq!(successor(b""), None);
    }
}
