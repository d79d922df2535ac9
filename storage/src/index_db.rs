//! The broadcast index (`tokens_by_app`) on sled: a database of its own,
//! brought up to the records after each transaction, rebuilt from them
//! after a crash.
//!
//! Why a database of its own: a broadcast walks its app's index end to end.
//! In the records database that walk held several hundred MiB of pages
//! whatever the cache size (sled counts accesses in blocks and frees an
//! evicted page only once every reader has moved past it), so a broadcast
//! to a million tokens peaked at ~370 MiB. With a small cache of its own
//! the walk evicts index pages only (README, "Peak RSS at 1M tokens").
//!
//! Why after the transaction: sled commits a transaction atomically within
//! one database only. So a transaction notes the index keys it changes, and
//! once it has committed each key is set from the records as they are then
//! (the client's token and lock), one writer per key at a time: of two
//! writes of one client, the state that stays is the later one's. A read
//! sees a write once its call returns.
//!
//! After a crash the two databases may disagree (each made its writes
//! durable on its own), so a store that was not closed cleanly rebuilds
//! the index from the records as it opens; a clean close marks the index
//! as matching them. On PostgreSQL the index is a table the transaction
//! writes.

use crate::clients::Client;
use crate::databases::{move_trees, open_db, Trees};
use crate::keys::key;
use crate::kv::TxTree;
use crate::push_tokens::{index_key, listed, PushToken, TokenRef};
use crate::store::get;
use crate::{codec, Result, Tx};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The index's tree, in the index database (and a table on PostgreSQL).
const INDEX_TREE: &str = "tokens_by_app";

/// Under this key of the `state` tree while the index matches the records
/// of a cleanly closed store.
const CLEAN: &[u8] = b"clean";

/// Writers of one key take the same of these locks (by a hash of the client).
const STRIPES: usize = 64;
const STRIPE_SHIFT: u32 = 26;

/// Where a transaction writes the broadcast index.
pub(crate) enum IndexWrites {
    /// Into the index table (PostgreSQL).
    Direct(TxTree),
    /// Nowhere yet: the keys to set once the transaction commits (sled).
    After(RefCell<Vec<Change>>),
}

/// An index key a transaction changed: `app`'s entry of one client.
pub(crate) struct Change {
    tenant: String,
    app: String,
    client: String,
}

/// The index database.
pub(crate) struct IndexDb {
    db: sled::Db,
    index: sled::Tree,
    /// Holds [`CLEAN`] while the store is closed cleanly.
    state: sled::Tree,
    stripes: Vec<Mutex<()>>,
    /// An update failed: the index may not match the records until the
    /// next open rebuilds it, so no close marks it clean.
    stale: AtomicBool,
}

impl IndexDb {
    /// Opens the index database at `path`, rebuilt from the `records`
    /// database unless the store was closed cleanly. A data directory from
    /// before the index had its own database holds it in `records`: it is
    /// moved here as it was, matching the records (it was written in their
    /// transactions). From here on the index counts as unclean until a
    /// clean close.
    pub(crate) fn open(path: &Path, cache_bytes: u64, compression_level: i32, records: &sled::Db) -> Result<IndexDb> {
        let db = open_db(path, cache_bytes, compression_level)?;
        let state = db.open_tree("state")?;
        let moved = move_trees(records, &db, &[INDEX_TREE])?;
        let clean = state.remove(CLEAN)?.is_some() || moved;
        db.flush()?; // unclean on disk before this run writes
        let rebuilt = if clean { Ok(()) } else { reconcile(&db, records) };
        if let Err(e) = &rebuilt {
            // Served anyway (reads, and writes on a full disk); the next open rebuilds.
            tracing::error!(error = %e, "rebuilding the broadcast index: broadcasts may miss tokens until the next start");
        }
        Ok(IndexDb {
            index: db.open_tree(INDEX_TREE)?,
            state,
            db,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            stale: AtomicBool::new(rebuilt.is_err()),
        })
    }

    /// The index, which reads walk.
    pub(crate) fn tree(&self) -> &sled::Tree {
        &self.index
    }

    pub(crate) fn size_on_disk(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }

    pub(crate) fn flush(&self) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }

    /// Sets each changed key from the records as they are now (see the
    /// module documentation). On an error the transaction stays committed
    /// and the index may lag it until the next open checks it.
    pub(crate) fn apply(&self, trees: &Trees, changes: Vec<Change>) -> Result<()> {
        let done = changes.iter().try_for_each(|c| self.set(trees, c));
        if done.is_err() {
            self.stale.store(true, Ordering::Release);
        }
        done
    }

    fn set(&self, trees: &Trees, c: &Change) -> Result<()> {
        let stripe = usize::try_from(crate::token_counts::client_hash(&c.client) >> STRIPE_SHIFT).unwrap_or(0);
        let _one = self.stripes.get(stripe).map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
        let rk = key(&[&c.tenant, &c.client]);
        let token = get::<PushToken>(&trees.push_tokens, &rk)?;
        let locked = get::<Client>(&trees.clients, &rk)?.is_some_and(|c| c.is_locked());
        let ik = index_key(&c.tenant, &c.app, &c.client);
        match listed(token.as_ref(), locked).filter(|t| t.app_name == c.app) {
            Some(t) => self.index.insert(ik, codec::encode(&TokenRef::of(t))?).map(drop)?,
            None => self.index.remove(ik).map(drop)?,
        }
        Ok(())
    }

    /// Marks the index as matching the records, once both are durable: as
    /// the store closes, when nothing writes any more.
    pub(crate) fn close(&self, records: &sled::Db) -> Result<()> {
        if self.stale.load(Ordering::Acquire) {
            return Ok(());
        }
        records.flush()?;
        self.db.flush()?;
        self.state.insert(CLEAN, &[])?;
        self.db.flush()?;
        Ok(())
    }
}

/// Brings the index to what the records' push tokens and clients say (the
/// trees `push_tokens` and `clients` of `databases.rs`), writing only what
/// differs: after a crash little does, and a write costs far more than a
/// read (sled compresses each one with a new zstd context). First every
/// token, walked in step with the clients (both in key order: tenant,
/// client), is listed as it should be, counting the entries each app's
/// index should hold; then an app's index holding more than that has each
/// of its entries checked against its token and client, and those no
/// listed token accounts for are removed.
fn reconcile(db: &sled::Db, records: &sled::Db) -> Result<()> {
    let started = Instant::now();
    let index = db.open_tree(INDEX_TREE)?;
    let (tokens, clients) = (records.open_tree("push_tokens")?, records.open_tree("clients")?);
    let (mut set, mut removed) = (0u64, 0u64);
    // Per app (tenant \0 app \0), the entries its index should hold.
    let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut walk = clients.iter();
    let mut client = walk.next().transpose()?;
    for kv in tokens.iter() {
        let (k, v) = kv?;
        while client.as_ref().is_some_and(|(ck, _)| ck < &k) {
            client = walk.next().transpose()?;
        }
        let locked = match &client {
            Some((ck, cv)) if ck == &k => codec::decode::<Client>(cv)?.is_locked(),
            _ => false,
        };
        let token: PushToken = codec::decode(&v)?;
        let (Some(token), Some(at)) = (listed(Some(&token), locked), k.iter().position(|b| *b == 0)) else {
            continue;
        };
        // tenant \0 client  ->  tenant \0 app \0 client
        let (tenant, client_part) = k.split_at(at);
        let app = [tenant, &[0], token.app_name.as_bytes(), &[0]].concat();
        let ik = [tenant, &[0], token.app_name.as_bytes(), client_part].concat();
        let n = expected.entry(app).or_default();
        *n = n.saturating_add(1);
        let entry = codec::encode(&TokenRef::of(token))?;
        if index.get(&ik)?.is_none_or(|v| *v != *entry) {
            index.insert(ik, entry)?;
            set = set.saturating_add(1);
        }
    }
    for (app, held) in app_counts(&index)? {
        if expected.get(&app).copied().unwrap_or(0) == held {
            continue; // it holds every listed token, hence nothing else
        }
        for k in index.scan_prefix(&app).keys() {
            let k = k?;
            let client_part = k.get(app.len()..).unwrap_or_default();
            let rk = [app.split(|b| *b == 0).next().unwrap_or_default(), &[0], client_part].concat();
            let token = tokens.get(&rk)?.map(|v| codec::decode::<PushToken>(&v)).transpose()?;
            let locked =
                clients.get(&rk)?.map(|v| codec::decode::<Client>(&v)).transpose()?.is_some_and(|c| c.is_locked());
            let listed_here =
                listed(token.as_ref(), locked).is_some_and(|t| app.ends_with(&[t.app_name.as_bytes(), &[0]].concat()));
            if !listed_here {
                index.remove(&k)?;
                removed = removed.saturating_add(1);
            }
        }
    }
    db.flush()?;
    let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::info!(
        set,
        removed,
        took_ms,
        "broadcast index checked against the records (the store was not closed cleanly)"
    );
    Ok(())
}

/// How many entries each app's index holds, by its prefix (tenant \0 app \0).
fn app_counts(index: &sled::Tree) -> Result<HashMap<Vec<u8>, u64>> {
    let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
    for k in index.iter().keys() {
        let k = k?;
        let Some(end) = k.iter().enumerate().filter(|(_, b)| **b == 0).nth(1).map(|(i, _)| i) else { continue };
        let app = k.get(..=end).unwrap_or_default();
        match counts.get_mut(app) {
            Some(n) => *n = n.saturating_add(1),
            None => drop(counts.insert(app.to_vec(), 1)),
        }
    }
    Ok(counts)
}

impl Tx<'_> {
    /// Sets (`Some`) or removes a client's entry in `app`'s broadcast index:
    /// in the transaction on PostgreSQL, once it commits on sled (module
    /// documentation).
    pub(crate) fn write_index(&self, tenant: &str, app: &str, client: &str, entry: Option<&TokenRef>) -> Result<()> {
        match (&self.t.index, entry) {
            (IndexWrites::Direct(t), Some(e)) => self.put(t, &index_key(tenant, app, client), e),
            (IndexWrites::Direct(t), None) => self.remove(t, &index_key(tenant, app, client)).map(drop),
            (IndexWrites::After(changes), _) => {
                let change = Change { tenant: tenant.into(), app: app.into(), client: client.into() };
                changes.borrow_mut().push(change);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::clients::Client;
    use crate::databases::{open_db, Engine};
    use crate::push_tokens::{index_key, PushProvider, PushToken, TokenRef};
    use crate::{codec, Store};
    use std::path::Path;

    /// The index database is sled's: these tests run on sled whatever the backend under test.
    fn sled_options(dir: &Path) -> crate::StoreOptions {
        crate::StoreOptions::new(dir)
    }

    fn token(app: &str, value: &str) -> PushToken {
        PushToken {
            app_name: app.into(),
            provider: PushProvider::Apns,
            token: value.into(),
            is_valid: true,
            updated_ms: 1,
        }
    }

    /// App `a`'s index of tenant `t`: client and token.
    fn listed(store: &Store) -> Vec<(String, String)> {
        let page = store.push_tokens().valid_of_app("t", "a", None, 100).unwrap();
        page.into_iter().map(|(client, entry)| (client, entry.token)).collect()
    }

    fn pairs(of: &[(&str, &str)]) -> Vec<(String, String)> {
        of.iter().map(|(c, t)| (c.to_string(), t.to_string())).collect()
    }

    /// Writes straight into the index, as no operation does: what a crash
    /// between the records and the index could leave.
    fn tamper(store: &Store, client: &str, entry: Option<&str>) {
        let dbs = store.trees().unwrap();
        let Engine::Sled { index, .. } = &dbs.engine else { panic!("a sled store") };
        let k = index_key("t", "a", client);
        match entry {
            Some(t) => index.tree().insert(k, codec::encode(&TokenRef::of(&token("a", t))).unwrap()).map(drop),
            None => index.tree().remove(k).map(drop),
        }
        .unwrap();
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    /// The data directory of a running store (a crash's) has an index that
    /// may disagree with the records: the next open rebuilds it from them,
    /// valid tokens of unlocked clients only.
    #[test]
    fn a_store_not_closed_cleanly_rebuilds_its_index_from_the_records() {
        let (dir, crashed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = Store::open(&sled_options(dir.path())).unwrap();
        let locked = Client { id: "c3".into(), lock_state: "LOCKED".into(), ..Client::default() };
        store.clients().create("t", &locked).unwrap();
        for (client, value) in [("c1", "aa"), ("c2", "bb"), ("c3", "cc"), ("c4", "dd")] {
            store.push_tokens().set("t", client, &token("a", value)).unwrap();
        }
        assert!(store.push_tokens().invalidate("t", "c4", "dd", 2).unwrap());
        assert_eq!(listed(&store), pairs(&[("c1", "aa"), ("c2", "bb")]));
        tamper(&store, "c1", None);
        tamper(&store, "c9", Some("ghost"));
        store.flush_now().unwrap();
        copy_dir(dir.path(), crashed.path()); // what a crash now leaves
        store.close().unwrap();
        let reopened = Store::open(&sled_options(crashed.path())).unwrap();
        assert_eq!(listed(&reopened), pairs(&[("c1", "aa"), ("c2", "bb")]));
        assert_eq!(reopened.push_tokens().count_valid_of_app("t", "a").unwrap(), 2, "the counts agree");
    }

    /// A clean close marks the index as matching the records: the next
    /// open takes it as it is, with no walk of the records.
    #[test]
    fn a_store_closed_cleanly_keeps_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&sled_options(dir.path())).unwrap();
        store.push_tokens().set("t", "c1", &token("a", "aa")).unwrap();
        tamper(&store, "c9", Some("ghost")); // a rebuild would drop it
        store.close().unwrap();
        drop(store);
        let reopened = Store::open(&sled_options(dir.path())).unwrap();
        assert_eq!(listed(&reopened), pairs(&[("c1", "aa"), ("c9", "ghost")]));
    }

    /// Writers of the same clients at once, moving tokens between apps and
    /// locking clients: each index entry ends as the records say (on either
    /// backend).
    #[test]
    fn concurrent_writes_leave_the_index_as_the_records_say() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let clients: Vec<String> = (0..6).map(|i| format!("c{i}")).collect();
        for c in &clients {
            store
                .clients()
                .create("t", &Client { id: c.clone(), lock_state: "NONE".into(), ..Client::default() })
                .unwrap();
        }
        std::thread::scope(|scope| {
            for w in 0..4u32 {
                let (store, clients) = (&store, &clients);
                scope.spawn(move || {
                    for i in 0..150u32 {
                        let c = &clients[((w + i) % 6) as usize];
                        let app = if (w + i) % 3 == 0 { "a" } else { "b" };
                        store.push_tokens().set("t", c, &token(app, &format!("{w}-{i}"))).unwrap();
                        if i % 7 == 0 {
                            let mut client = store.clients().get("t", c).unwrap().unwrap();
                            client.lock_state = if client.is_locked() { "NONE" } else { "LOCKED" }.into();
                            store.transact(|tx| tx.put_client("t", &client)).unwrap();
                        }
                    }
                });
            }
        });
        for app in ["a", "b"] {
            let expected: Vec<(String, String)> = clients
                .iter()
                .filter_map(|c| {
                    let t = store.push_tokens().get("t", c).unwrap().unwrap();
                    let locked = store.clients().get("t", c).unwrap().unwrap().is_locked();
                    (t.app_name == app && !locked).then(|| (c.clone(), t.token))
                })
                .collect();
            let page = store.push_tokens().valid_of_app("t", app, None, 100).unwrap();
            let found: Vec<(String, String)> = page.into_iter().map(|(c, e)| (c, e.token)).collect();
            assert_eq!(found, expected, "app {app}");
            assert_eq!(store.push_tokens().count_valid_of_app("t", app).unwrap(), expected.len() as u64);
        }
    }

    /// A data directory from before the index had its own database keeps
    /// its index: moved out of the records database as it opens.
    #[test]
    fn an_index_in_the_records_database_moves_to_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let opts = sled_options(dir.path());
        let records_at = dir.path().join("db");
        {
            let records = open_db(&records_at, 1 << 20, opts.compression_level).unwrap();
            let old = records.open_tree("tokens_by_app").unwrap();
            let entry = TokenRef::of(&token("a", "aa"));
            old.insert(index_key("t", "a", "c1"), codec::encode(&entry).unwrap()).unwrap();
            records.flush().unwrap();
        }
        let store = Store::open(&opts).unwrap();
        assert_eq!(listed(&store), pairs(&[("c1", "aa")]), "moved as it was, not rebuilt (it has no token record)");
        store.close().unwrap();
        drop(store);
        let records = open_db(&records_at, 1 << 20, opts.compression_level).unwrap();
        assert!(!records.tree_names().iter().any(|n| n.as_ref() == b"tokens_by_app"));
    }
}
