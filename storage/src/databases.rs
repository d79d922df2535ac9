//! The backend (three sled databases, or a PostgreSQL database) and its trees,
//! held in a [`Slot`] that can be emptied and filled again: after a failed
//! write (a full disk) sled refuses every further write until it is reopened,
//! and reopening needs the old handles closed first (sled locks its files).
//! Every error of a write to the sled databases, here and through their
//! trees (`kv`), comes back through `Space::write_error`, which marks the
//! store failed so that the database is reopened.

use crate::index_db::{Change, IndexDb, IndexWrites};
use crate::kv::{Tree, TxTree, Write};
use crate::leases::{Fence, LeaseOp};
use crate::pg::{Pg, Txn};
use crate::space::Space;
use crate::store::StoreOptions;
use crate::{Error, Result};
use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The open backend and its trees.
pub(crate) struct Dbs {
    /// Where the trees live.
    pub(crate) engine: Engine,
    pub(crate) trees: Trees,
    /// Where the errors of writes to the sled databases go (see `space`).
    pub(crate) space: Arc<Space>,
}

/// The backend behind the trees.
pub(crate) enum Engine {
    /// Three sled databases: `db` for records, compressed, `index` for the
    /// broadcast index (see `index_db`), and `delivery_db`
    /// for delivery records, not (sled compresses each write on its own with
    /// a new zstd context, which costs about 120 µs per send report for
    /// little gain on records written once and mostly never read: `cargo
    /// bench --bench storage`).
    Sled {
        /// Tenants' records: clients, tokens, users, apps... compressed.
        db: sled::Db,
        /// Delivery records (reports, outcomes, broadcast jobs): written by
        /// every send, rarely read, so stored without compression.
        delivery_db: sled::Db,
        /// The broadcast index, written after each transaction (boxed: the
        /// variant would be large).
        index: Box<IndexDb>,
        /// The records trees, which every [`crate::Tx`] spans.
        records: Vec<sled::Tree>,
    },
    /// A PostgreSQL database, one table per tree.
    Pg(Arc<Pg>),
}

impl std::ops::Deref for Dbs {
    type Target = Trees;
    fn deref(&self) -> &Trees {
        &self.trees
    }
}

/// One tree per record kind, and one per secondary index: `records` take
/// part in transactions ([`crate::Tx`]); `deliveries` are written outside
/// them (on sled, in the delivery database). A tree is named as its field,
/// and on PostgreSQL its table too.
macro_rules! trees {
    (
        records: { $($(#[$ra:meta])* $r:ident,)* }
        index: { $(#[$ia:meta])* $i:ident, }
        deliveries: { $($(#[$da:meta])* $d:ident,)* }
    ) => {
        pub(crate) struct Trees {
            $($(#[$ra])* pub(crate) $r: Tree,)*
            $(#[$ia])* pub(crate) $i: Tree,
            $($(#[$da])* pub(crate) $d: Tree,)*
        }

        /// The records trees as one transaction sees them: all of them, so
        /// that any operation can touch any record kind, and where it writes
        /// the broadcast index.
        #[allow(dead_code)] // kinds written only outside transactions (the outbox...)
        pub(crate) struct TxTrees {
            $(pub(crate) $r: TxTree,)*
            pub(crate) index: IndexWrites,
        }

        /// Every tree's name: the tables of the PostgreSQL schema.
        #[cfg(test)]
        pub(crate) const TREE_NAMES: &[&str] = &[$(stringify!($r),)* stringify!($i), $(stringify!($d),)*];

        impl Trees {
            fn open_sled(db: &sled::Db, index: &IndexDb, delivery_db: &sled::Db, space: &Arc<Space>) -> Result<Trees> {
                Ok(Trees {
                    $($r: Tree::Sled(db.open_tree(stringify!($r))?, space.clone()),)*
                    $i: Tree::Sled(index.tree().clone(), space.clone()),
                    $($d: Tree::Sled(delivery_db.open_tree(stringify!($d))?, space.clone()),)*
                })
            }

            fn open_pg(pg: &Arc<Pg>) -> Trees {
                Trees {
                    $($r: Tree::Pg(pg.table(stringify!($r))),)*
                    $i: Tree::Pg(pg.table(stringify!($i))),
                    $($d: Tree::Pg(pg.table(stringify!($d))),)*
                }
            }

            /// The records trees of the sled database, in the order [`TxTrees::sled`] reads them.
            fn sled_records(&self) -> Vec<sled::Tree> {
                let mut all = Vec::new();
                $(if let Tree::Sled(t, _) = &self.$r { all.push(t.clone()); })*
                all
            }
        }

        impl TxTrees {
            /// Names the views of a sled transaction over the records trees; `None` if they do not match.
            pub(crate) fn sled(view: &[sled::transaction::TransactionalTree]) -> Option<TxTrees> {
                let mut views = view.iter().cloned();
                Some(TxTrees {
                    $($r: TxTree::Sled(views.next()?),)*
                    index: IndexWrites::After(Default::default()),
                })
            }

            /// The tables of a PostgreSQL transaction.
            pub(crate) fn pg(txn: &Rc<Txn>) -> TxTrees {
                TxTrees {
                    $($r: TxTree::Pg(txn.table(stringify!($r))),)*
                    index: IndexWrites::Direct(TxTree::Pg(txn.table(stringify!($i)))),
                }
            }
        }
    };
}

trees! {
    records: {
        tenants,
        users,
        users_by_name,
        users_by_email,
        /// Secondary indexes of users: attributes, roles, client roles, groups.
        user_index,
        user_addresses,
        user_sessions,
        /// Sessions ended (logout, revocation, a refresh token reused) while
        /// tokens of theirs may still be unexpired: those tokens are refused.
        /// Each entry holds the instant (ms) after which it can be swept.
        ended_sessions,
        /// Per user: tokens issued before this instant (ms) are refused.
        token_revocations,
        login_failures,
        realm_config,
        apps,
        clients,
        links_by_user,
        links_by_client,
        /// Per client: bumped by every link made to it (see `Links::generation`).
        link_generations,
        /// Per tenant and set of records (a user's properties...): bumped by
        /// every insert into the set, so a delete that listed the set outside
        /// its transaction can tell that it grew meanwhile.
        generations,
        push_tokens,
        /// Counts of tokens per app's index and per tenant (see `token_counts`).
        app_token_counts,
        tenant_token_counts,
        provider_tokens,
        webhooks,
        outbox,
        failed_events,
        attempts,
        versions,
        versions_by_app,
        policies,
        policies_by_name,
        version_archs,
        version_votes,
        nonces,
        nonce_expiry,
        settings,
        properties,
        catalogue,
        signers,
        certificates,
        certificates_by_signer,
        pki,
        /// Idempotency keys of the send routes (see `idempotency`), and
        /// their index by expiry.
        idempotency,
        idempotency_expiry,
        /// Scheduled sends (see `schedules`); those still to fire by time;
        /// per tenant, how many are still to fire; per notification sent
        /// for one, its schedule.
        schedules,
        schedules_due,
        schedule_counts,
        schedule_links,
        /// Per tenant: the quotas the operator set and the day's broadcast count (see `limits`).
        limits,
        /// Apps' Web Push credentials (see `web_push`).
        app_web_push,
    }
    index: {
        /// Per app, its clients' valid tokens: what a broadcast walks (on
        /// sled in a database of its own: see `index_db`).
        tokens_by_app,
    }
    deliveries: {
        jobs,
        /// Partitions of running broadcasts (see `broadcasts`).
        parts,
        reports,
        /// One-client and one-user sends: report and outcomes in one record.
        sends,
        /// The one-client and one-user sends of a send-batch request, in one
        /// record keyed by its last notification id (see `deliveries`).
        batches,
        outcomes,
        /// Broadcasts cancelled while running: each partition stops at its next checkpoint.
        cancels,
    }
}

impl Dbs {
    /// Opens the backend `opts` names: its PostgreSQL database, or the sled
    /// databases of its data directory, whose write errors mark `space`.
    pub(crate) fn open(opts: &StoreOptions, space: &Arc<Space>) -> Result<Dbs> {
        if let Some(url) = &opts.store_url {
            let pg = Pg::connect(url, opts.connections)?;
            let trees = Trees::open_pg(&pg);
            return Ok(Dbs { engine: Engine::Pg(pg), trees, space: space.clone() });
        }
        // A modest page cache: Herald's working set is its indexes, and the
        // process must stay small during million-token broadcasts. A 16th
        // for the broadcast index: a broadcast walks it once, end to end,
        // so a larger cache pays only once it holds the whole index (at
        // 200 000 tokens 32 MiB cut the fan-out's CPU by about 6%,
        // README "Peak RSS at 1M tokens"), and it would come out of the
        // records' share, which one-client sends among many clients read.
        let cache = |sixteenths: u64| (opts.cache_bytes / 16).saturating_mul(sixteenths);
        let db = open_db(&opts.data_dir.join("db"), cache(11), opts.compression_level, RECORD_LEAF_FANOUT)?;
        let delivery_db = open_db(&opts.data_dir.join("deliveries"), cache(4), 0, RECORD_LEAF_FANOUT)?;
        move_trees(&db, &delivery_db, &MOVED_DELIVERY_TREES)?;
        let index = Box::new(IndexDb::open(&opts.data_dir.join("index"), cache(1), opts.compression_level, &db)?);
        let trees = Trees::open_sled(&db, &index, &delivery_db, space)?;
        let records = trees.sled_records();
        Ok(Dbs { engine: Engine::Sled { db, index, delivery_db, records }, trees, space: space.clone() })
    }

    /// Hands the error of a write to the sled databases to `Space::write_error`.
    pub(crate) fn write_error(&self, e: impl Into<Error>) -> Error {
        self.space.write_error(e.into())
    }

    /// Writes the sled databases' buffers to disk; nothing to do on
    /// PostgreSQL, where a commit is durable when it returns.
    pub(crate) fn flush(&self) -> Result<()> {
        if let Engine::Sled { db, index, delivery_db, .. } = &self.engine {
            let flush = || -> Result<()> {
                db.flush()?;
                index.flush()?;
                delivery_db.flush()?;
                Ok(())
            };
            return flush().map_err(|e| self.write_error(e));
        }
        Ok(())
    }

    /// Brings the broadcast index up to what a committed transaction changed (see `index_db`).
    pub(crate) fn apply_index(&self, changes: Vec<Change>) -> Result<()> {
        match &self.engine {
            Engine::Sled { index, .. } if !changes.is_empty() => index.apply(changes).map_err(|e| self.write_error(e)),
            _ => Ok(()),
        }
    }

    /// Bytes the backend takes on disk.
    pub(crate) fn size_on_disk(&self) -> Result<u64> {
        match &self.engine {
            Engine::Sled { db, index, delivery_db, .. } => {
                Ok(db.size_on_disk()?.saturating_add(index.size_on_disk()?).saturating_add(delivery_db.size_on_disk()?))
            }
            Engine::Pg(pg) => pg.size_on_disk(),
        }
    }

    /// A number never handed out before, increasing: orders webhook events.
    pub(crate) fn generate_id(&self) -> Result<u64> {
        match &self.engine {
            Engine::Sled { db, .. } => db.generate_id().map_err(|e| self.write_error(e)),
            Engine::Pg(pg) => pg.next_id(),
        }
    }

    /// Applies every write (a value, or `None` to remove the key) or none.
    pub(crate) fn write_all(&self, writes: Vec<Write<'_>>) -> Result<()> {
        self.write_leased(None, writes, Vec::new())
    }

    /// [`Dbs::write_all`], and on PostgreSQL the lease changes `ops` in the
    /// same transaction, refused unless `fence` holds (on sled the caller
    /// checks the fence and applies `ops`: see `Store::write_fenced`).
    pub(crate) fn write_leased(&self, fence: Option<Fence>, writes: Vec<Write<'_>>, ops: Vec<LeaseOp>) -> Result<()> {
        match &self.engine {
            Engine::Sled { .. } => {
                let mut trees: Vec<sled::Tree> = Vec::new();
                let mut ops = Vec::with_capacity(writes.len());
                for (tree, k, v) in &writes {
                    let Tree::Sled(t, _) = tree else {
                        return Err(Error::Unavailable("a tree of another backend".into()));
                    };
                    let at = match trees.iter().position(|x| x.name() == t.name()) {
                        Some(i) => i,
                        None => {
                            trees.push(t.clone());
                            trees.len().saturating_sub(1)
                        }
                    };
                    ops.push((at, k, v));
                }
                use sled::transaction::{ConflictableTransactionError, TransactionError};
                use sled::Transactional;
                let done = trees.as_slice().transaction(|views| {
                    for (at, k, v) in &ops {
                        let Some(view) = views.get(*at) else { continue };
                        match v {
                            Some(v) => view.insert(k.as_slice(), v.as_slice()).map(drop)?,
                            None => view.remove(k.as_slice()).map(drop)?,
                        }
                    }
                    Ok::<(), ConflictableTransactionError<Error>>(())
                });
                match done {
                    Ok(()) => Ok(()),
                    Err(TransactionError::Abort(e)) => Err(e),
                    Err(TransactionError::Storage(e)) => Err(self.write_error(e)),
                }
            }
            Engine::Pg(pg) => {
                let mut rows = Vec::with_capacity(writes.len());
                for (tree, k, v) in writes {
                    let Tree::Pg(t) = tree else { return Err(Error::Unavailable("a tree of another backend".into())) };
                    rows.push((t.name(), k.into_vec(), v));
                }
                pg.write_all(fence, rows, ops)
            }
        }
    }
}

impl Drop for Dbs {
    /// A clean close: the broadcast index is marked as matching the records.
    fn drop(&mut self) {
        if let Engine::Sled { db, index, .. } = &self.engine {
            if let Err(e) = index.close(db) {
                tracing::warn!(error = %e, "closing the broadcast index: the next start rebuilds it");
            }
        }
    }
}

/// The databases in use; empty while they are being reopened.
#[derive(Clone, Default)]
pub(crate) struct Slot(Arc<RwLock<Option<Arc<Dbs>>>>);

impl Slot {
    pub(crate) fn new(dbs: Dbs) -> Slot {
        Slot(Arc::new(RwLock::new(Some(Arc::new(dbs)))))
    }

    /// The databases, or `Unavailable` while they are being reopened.
    pub(crate) fn get(&self) -> Result<Arc<Dbs>> {
        let slot = self.0.read().unwrap_or_else(|e| e.into_inner());
        slot.clone().ok_or_else(|| Error::Unavailable("the database is being reopened".into()))
    }

    pub(crate) fn put(&self, dbs: Dbs) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(dbs));
    }

    /// Empties the slot and closes the databases once nobody uses them (an
    /// operation holds them for its own duration only): true when closed
    /// within `within`; false, with the slot filled again, when not.
    pub(crate) fn close(&self, within: Duration) -> bool {
        let Some(mut old) = self.0.write().unwrap_or_else(|e| e.into_inner()).take() else { return true };
        // `None`: a wait too long for the clock, i.e. no deadline.
        let deadline = Instant::now().checked_add(within);
        loop {
            match Arc::try_unwrap(old) {
                Ok(dbs) => {
                    drop(dbs);
                    return true;
                }
                Err(still) if deadline.is_none_or(|d| Instant::now() < d) => {
                    old = still;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(still) => {
                    *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(still);
                    return false;
                }
            }
        }
    }
}

/// sled's leaf size, kept for the databases that are read and written a
/// record at a time: a write rewrites its leaf whole every few writes.
pub(crate) const RECORD_LEAF_FANOUT: usize = 16;

/// `leaf_fanout`: the entries above which a leaf splits (see
/// `index_db::INDEX_LEAF_FANOUT` for why the broadcast index has larger ones).
pub(crate) fn open_db(path: &Path, cache_bytes: u64, compression_level: i32, leaf_fanout: usize) -> Result<sled::Db> {
    Ok(sled::Config::new()
        .path(path)
        .cache_capacity(cache_bytes)
        .use_compression(compression_level > 0)
        .compression_factor(compression_level.clamp(1, 22))
        .leaf_fanout(leaf_fanout)
        .open()?)
}

/// The delivery trees that once lived in the records database.
const MOVED_DELIVERY_TREES: [&str; 3] = ["jobs", "reports", "outcomes"];

/// A data directory written before some trees had a database of their own
/// holds them in the records one: they are copied over, made durable, then
/// dropped there. A crash part way copies again on the next start (nothing
/// writes to them before this returns). True when there were trees to move.
pub(crate) fn move_trees(from: &sled::Db, to: &sled::Db, names: &[&str]) -> Result<bool> {
    let existing = from.tree_names();
    let present: Vec<&str> =
        names.iter().copied().filter(|n| existing.iter().any(|t| t.as_ref() == n.as_bytes())).collect();
    if present.is_empty() {
        return Ok(false);
    }
    for name in &present {
        let (old, new) = (from.open_tree(name)?, to.open_tree(name)?);
        for kv in old.iter() {
            let (k, v) = kv?;
            new.insert(k, v)?;
        }
    }
    to.flush()?;
    for name in &present {
        from.drop_tree(name)?;
    }
    from.flush()?;
    tracing::info!(trees = ?present, "moved trees out of the records database");
    Ok(true)
}
