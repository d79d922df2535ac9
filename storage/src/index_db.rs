//! The broadcast index (`tokens_by_app`) on sled: a database of its own,
//! brought up to the records after each transaction, checked against them
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
//! durable on its own), so a store that was not closed cleanly has its
//! index checked against the records, in the background while it serves
//! ([`reconcile`]); a clean close marks the index as matching them. On
//! PostgreSQL the index is a table the transaction writes.

use crate::clients::Client;
use crate::databases::{move_trees, open_db};
use crate::keys;
use crate::kv::TxTree;
use crate::push_tokens::{index_key, listed, PushToken, TokenRef};
use crate::{codec, Error, Result, Tx};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// The index's tree, in the index database (and a table on PostgreSQL).
const INDEX_TREE: &str = "tokens_by_app";

/// Entries above which a leaf of the index splits: 128, not sled's 16.
///
/// A broadcast reads its app's index leaf by leaf from disk (the cache is
/// small on purpose), and each leaf costs a read, a zstd frame to
/// decompress and a node to decode whatever its size: with leaves of 16
/// that was ~7.5% of Herald's CPU per notification, for a dozen entries a
/// leaf. Larger frames also compress better. The price is on token writes:
/// sled rewrites a leaf whole every ten writes to it, so each write to the
/// index costs more bytes written (README, "Peak RSS at 1M tokens").
pub(crate) const INDEX_LEAF_FANOUT: usize = 128;

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
    /// Holds [`CLEAN`] while the store is closed cleanly.
    state: sled::Tree,
    keeper: Arc<Keeper>,
    /// The check after a crash, while it may still run (see [`reconcile`]).
    check: Mutex<Option<JoinHandle<()>>>,
}

/// What sets index entries from the records: the transactions' updates and
/// the check after a crash alike.
struct Keeper {
    /// The records' `push_tokens` and `clients` trees (see `databases.rs`).
    tokens: sled::Tree,
    clients: sled::Tree,
    index: sled::Tree,
    /// One writer per key: the writers of a client take the same lock.
    stripes: Vec<Mutex<()>>,
    /// The index may not match the records (an update failed, or the check
    /// after a crash has not finished): no close marks it clean.
    unchecked: AtomicBool,
    /// Set to stop the check early (the store closes).
    stop: AtomicBool,
    /// While the check runs: the apps (`tenant \0 app \0`) whose entries
    /// transactions changed meanwhile, which it checks whole (a count of
    /// theirs may have moved under it, see [`check`]).
    touched: Mutex<Option<HashSet<Vec<u8>>>>,
    /// Runs once in the next [`Keeper::set`], between its read of the
    /// records and its write: a test's way to interleave two writers.
    #[cfg(test)]
    between: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl IndexDb {
    /// Opens the index database at `path`. A data directory from before the
    /// index had its own database holds it in `records`: it is moved here
    /// as it was, matching the records (it was written in their
    /// transactions). Unless the store was closed cleanly, the index is
    /// checked against the records in the background (see [`reconcile`]).
    /// From here on the index counts as unclean until a clean close.
    pub(crate) fn open(path: &Path, cache_bytes: u64, compression_level: i32, records: &sled::Db) -> Result<IndexDb> {
        let db = open_db(path, cache_bytes, compression_level, INDEX_LEAF_FANOUT)?;
        let state = db.open_tree("state")?;
        let moved = move_trees(records, &db, &[INDEX_TREE])?;
        let clean = state.remove(CLEAN)?.is_some() || moved;
        db.flush()?; // unclean on disk before this run writes
        let keeper = Arc::new(Keeper {
            tokens: records.open_tree("push_tokens")?,
            clients: records.open_tree("clients")?,
            index: db.open_tree(INDEX_TREE)?,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            unchecked: AtomicBool::new(!clean),
            stop: AtomicBool::new(false),
            touched: Mutex::new((!clean).then(HashSet::new)),
            #[cfg(test)]
            between: Mutex::new(None),
        });
        let check = match clean {
            true => None,
            false => {
                let keeper = keeper.clone();
                let thread = std::thread::Builder::new().name("herald-index-check".into());
                Some(
                    thread
                        .spawn(move || reconcile(&keeper))
                        .map_err(|e| Error::Unavailable(format!("the index check: {e}")))?,
                )
            }
        };
        Ok(IndexDb { db, state, keeper, check: Mutex::new(check) })
    }

    /// The index, which reads walk.
    pub(crate) fn tree(&self) -> &sled::Tree {
        &self.keeper.index
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
    pub(crate) fn apply(&self, changes: Vec<Change>) -> Result<()> {
        let k = &self.keeper;
        let done = changes.iter().try_for_each(|c| {
            let (tenant, app) = (c.tenant.as_bytes(), c.app.as_bytes());
            if let Some(apps) = k.touched.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                apps.insert(keys::prefix_bytes(&[tenant, app]).into_vec()); // before the write the check may count
            }
            k.set(tenant, app, c.client.as_bytes())
        });
        if done.is_err() {
            k.unchecked.store(true, Ordering::Release);
        }
        done
    }

    /// Waits for the check after a crash, if one runs.
    fn join_check(&self) {
        let running = self.check.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = running {
            let _ = thread.join(); // a panic in it leaves the index unchecked
        }
    }

    /// Marks the index as matching the records, once both are durable: as
    /// the store closes, when nothing writes any more. A check still
    /// running is stopped, and the next open checks again.
    pub(crate) fn close(&self, records: &sled::Db) -> Result<()> {
        self.keeper.stop.store(true, Ordering::Release);
        self.join_check();
        if self.keeper.unchecked.load(Ordering::Acquire) {
            return Ok(());
        }
        records.flush()?;
        self.db.flush()?;
        self.state.insert(CLEAN, &[])?;
        self.db.flush()?;
        Ok(())
    }
}

impl Drop for IndexDb {
    /// Stops a check still running, also when the databases did not open
    /// whole (its thread holds the records' trees, and sled their files).
    fn drop(&mut self) {
        self.keeper.stop.store(true, Ordering::Release);
        self.join_check();
    }
}

impl Keeper {
    /// Sets `app`'s entry of `client` from the records as they are now,
    /// holding the client's lock (see the module documentation).
    fn set(&self, tenant: &[u8], app: &[u8], client: &[u8]) -> Result<()> {
        let stripe = usize::try_from(crate::token_counts::client_hash(client) >> STRIPE_SHIFT).unwrap_or(0);
        let _one = self.stripes.get(stripe).map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
        let ik = keys::key_bytes(&[tenant, app, client]);
        let listed = self.listed(tenant, client)?.filter(|t| t.app_name.as_bytes() == app);
        #[cfg(test)]
        if let Some(between) = self.between.lock().unwrap_or_else(|e| e.into_inner()).take() {
            between();
        }
        match listed {
            Some(t) => self.index.insert(ik, codec::encode(&TokenRef::of(&t))?).map(drop)?,
            None => self.index.remove(ik).map(drop)?,
        }
        Ok(())
    }

    /// The token a client's index entry should list (see [`listed`]).
    fn listed(&self, tenant: &[u8], client: &[u8]) -> Result<Option<PushToken>> {
        let rk = keys::key_bytes(&[tenant, client]);
        let Some(token) = self.tokens.get(&rk)? else { return Ok(None) };
        let token: PushToken = codec::decode(&token)?;
        let locked = match self.clients.get(&rk)? {
            Some(c) => codec::decode::<Client>(&c)?.is_locked(),
            None => false,
        };
        Ok(listed(Some(&token), locked).is_some().then_some(token))
    }
}

/// Checks the index against the records after a crash, in the background
/// while the engine serves (at 1M clients it takes seconds: sled reads
/// every token, client and entry). Whatever differs is set again through
/// [`Keeper::set`], which reads the records afresh under the client's
/// lock, so a write the engine makes meanwhile is never undone. First
/// every token, walked in step with the clients (both in key order:
/// tenant, client), is checked to be listed as it should, counting the
/// entries each app's index should hold; then an app's index holding
/// another number, or changed by a transaction meanwhile, has each of its
/// entries checked against its token and client.
/// Writes only what differs: after a crash little does, and a write costs
/// far more than a read (sled compresses each one with a new zstd context).
fn reconcile(keeper: &Keeper) {
    let started = Instant::now();
    let checked = check(keeper);
    *keeper.touched.lock().unwrap_or_else(|e| e.into_inner()) = None;
    match checked {
        Ok(Some((set, removed))) => {
            keeper.unchecked.store(false, Ordering::Release);
            let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::info!(
                set,
                removed,
                took_ms,
                "broadcast index checked against the records (the store was not closed cleanly)"
            );
        }
        Ok(None) => {
            tracing::info!("broadcast index check stopped: the store closed first; the next start checks again")
        }
        Err(e) => {
            tracing::error!(error = %e, "checking the broadcast index: broadcasts may miss tokens until a start checks it")
        }
    }
}

/// Entries per app's index, by the app's prefix (`tenant \0 app \0`).
type PerApp = HashMap<Vec<u8>, u64>;

/// [`reconcile`]'s work: the entries it set and removed, or `None` when stopped.
fn check(k: &Keeper) -> Result<Option<(u64, u64)>> {
    let Some((set, expected)) = list_tokens(k)? else { return Ok(None) };
    Ok(remove_unlisted(k, &expected)?.map(|removed| (set, removed)))
}

/// The first part of [`check`]: every listed token is in the index as it
/// should be. Returns the entries it set, and per app (`tenant \0 app \0`)
/// how many its index should hold; `None` when stopped.
fn list_tokens(k: &Keeper) -> Result<Option<(u64, PerApp)>> {
    let mut set = 0u64;
    let mut expected = PerApp::new();
    let mut walk = k.clients.iter();
    let mut client = walk.next().transpose()?;
    for (i, kv) in k.tokens.iter().enumerate() {
        if i % 1024 == 0 && k.stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        let (rk, v) = kv?;
        while client.as_ref().is_some_and(|(ck, _)| ck < &rk) {
            client = walk.next().transpose()?;
        }
        let locked = match &client {
            Some((ck, cv)) if ck == &rk => codec::decode::<Client>(cv)?.is_locked(),
            _ => false,
        };
        let token: PushToken = codec::decode(&v)?;
        let (Some(token), Some(at)) = (listed(Some(&token), locked), rk.iter().position(|b| *b == 0)) else {
            continue;
        };
        let (tenant, client_id) =
            (rk.get(..at).unwrap_or_default(), rk.get(at.saturating_add(1)..).unwrap_or_default());
        let app = token.app_name.as_bytes();
        let n = expected.entry(keys::prefix_bytes(&[tenant, app]).into_vec()).or_default();
        *n = n.saturating_add(1);
        let ik = keys::key_bytes(&[tenant, app, client_id]);
        let entry = codec::encode(&TokenRef::of(token))?;
        if k.index.get(&ik)?.is_none_or(|v| *v != *entry) {
            k.set(tenant, app, client_id)?;
            set = set.saturating_add(1);
        }
    }
    Ok(Some((set, expected)))
}

/// The second part of [`check`]: an app's index that holds another number
/// of entries than `expected`, or that a transaction changed meanwhile,
/// loses each entry its token and client do not account for. Returns how
/// many; `None` when stopped.
fn remove_unlisted(k: &Keeper, expected: &PerApp) -> Result<Option<u64>> {
    let mut removed = 0u64;
    let held = app_counts(&k.index)?;
    let touched = k.touched.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_default();
    for (prefix, held) in held {
        if expected.get(&prefix).copied().unwrap_or(0) == held && !touched.contains(&prefix) {
            continue; // it holds every listed token, hence nothing else
        }
        for ik in k.index.scan_prefix(&prefix).keys() {
            if k.stop.load(Ordering::Acquire) {
                return Ok(None);
            }
            let ik = ik?;
            let parts: Vec<&[u8]> = ik.splitn(3, |b| *b == 0).collect();
            let [tenant, app, client_id] = parts.as_slice() else { continue };
            if k.listed(tenant, client_id)?.is_none_or(|t| t.app_name.as_bytes() != *app) {
                k.set(tenant, app, client_id)?;
                removed = removed.saturating_add(1);
            }
        }
    }
    Ok(Some(removed))
}

/// How many entries each app's index holds, by its prefix (tenant \0 app \0).
fn app_counts(index: &sled::Tree) -> Result<PerApp> {
    let mut counts = PerApp::new();
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
    use crate::databases::{open_db, Engine, RECORD_LEAF_FANOUT};
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

    /// Waits for the check after a crash, if one runs.
    fn checked(store: &Store) {
        let dbs = store.trees().unwrap();
        let Engine::Sled { index, .. } = &dbs.engine else { panic!("a sled store") };
        index.join_check();
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
    /// may disagree with the records: the next open checks it against them
    /// (valid tokens of unlocked clients only), once.
    #[test]
    fn a_store_not_closed_cleanly_has_its_index_checked_against_the_records() {
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
        checked(&reopened);
        assert_eq!(listed(&reopened), pairs(&[("c1", "aa"), ("c2", "bb")]));
        assert_eq!(reopened.push_tokens().count_valid_of_app("t", "a").unwrap(), 2, "the counts agree");
        reopened.close().unwrap();
        drop(reopened);
        let again = Store::open(&sled_options(crashed.path())).unwrap();
        tamper(&again, "c9", Some("ghost"));
        checked(&again);
        assert_eq!(
            listed(&again),
            pairs(&[("c1", "aa"), ("c2", "bb"), ("c9", "ghost")]),
            "checked once: closed cleanly"
        );
    }

    /// A transaction that removes an entry while the check runs, between
    /// its count of what an app's index should hold and its count of what
    /// it holds, leaves the two equal although the index holds a ghost: the
    /// app is checked whole all the same.
    #[test]
    fn a_ghost_is_found_although_a_removal_meanwhile_evens_the_counts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&sled_options(dir.path())).unwrap();
        checked(&store); // the new store's own check would race this one
        store.push_tokens().set("t", "c1", &token("a", "aa")).unwrap();
        store.push_tokens().set("t", "c2", &token("a", "bb")).unwrap();
        tamper(&store, "c9", Some("ghost"));
        let dbs = store.trees().unwrap();
        let Engine::Sled { index, .. } = &dbs.engine else { panic!("a sled store") };
        let keeper = &index.keeper;
        *keeper.touched.lock().unwrap() = Some(Default::default()); // as while a check runs
        let (_, expected) = super::list_tokens(keeper).unwrap().unwrap();
        assert!(store.transact(|tx| tx.remove_push_token("t", "c2")).unwrap());
        assert_eq!(super::remove_unlisted(keeper, &expected).unwrap(), Some(1));
        assert_eq!(listed(&store), pairs(&[("c1", "aa")]));
    }

    /// A clean close marks the index as matching the records: the next
    /// open takes it as it is, with no check.
    #[test]
    fn a_store_closed_cleanly_keeps_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&sled_options(dir.path())).unwrap();
        // A new store is checked too; a close that stops its check before
        // the end leaves the index unclean, as after a crash.
        checked(&store);
        store.push_tokens().set("t", "c1", &token("a", "aa")).unwrap();
        tamper(&store, "c9", Some("ghost")); // a check would drop it
        store.close().unwrap();
        drop(store);
        let reopened = Store::open(&sled_options(dir.path())).unwrap();
        checked(&reopened);
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

    /// Two writers of one client's entry: the first has read the records
    /// (its token) but not yet written the entry when the second removes
    /// the token. The second waits for the first's write and then removes
    /// the entry, as the records say; without the client's lock the first
    /// would write its entry after the removal, a ghost a broadcast sends to.
    #[test]
    fn a_writer_of_a_client_waits_for_the_one_that_read_before_it() {
        use std::sync::mpsc::channel;
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&sled_options(dir.path())).unwrap();
        checked(&store); // the new store's own check sets entries too
        store.push_tokens().set("t", "c1", &token("a", "aa")).unwrap();
        let dbs = store.trees().unwrap();
        let Engine::Sled { index, .. } = &dbs.engine else { panic!("a sled store") };
        let (reached, on_reached) = channel();
        let (release, on_release) = channel::<()>();
        *index.keeper.between.lock().unwrap() = Some(Box::new(move || {
            reached.send(()).unwrap();
            let _ = on_release.recv_timeout(Duration::from_secs(10));
        }));
        let store = &store;
        std::thread::scope(|scope| {
            let first = scope.spawn(|| store.push_tokens().set("t", "c1", &token("a", "bb")).unwrap());
            on_reached.recv_timeout(Duration::from_secs(10)).unwrap();
            let (done, on_done) = channel();
            let second = scope.spawn(move || {
                assert!(store.transact(|tx| tx.remove_push_token("t", "c1")).unwrap());
                done.send(()).unwrap();
            });
            // Time for an unlocked second writer to finish before the first writes.
            let _ = on_done.recv_timeout(Duration::from_millis(500));
            release.send(()).unwrap();
            first.join().unwrap();
            second.join().unwrap();
        });
        assert_eq!(listed(store), pairs(&[]));
        assert_eq!(store.push_tokens().count_valid_of_app("t", "a").unwrap(), 0);
    }

    /// A data directory from before the index had its own database keeps
    /// its index: moved out of the records database as it opens.
    #[test]
    fn an_index_in_the_records_database_moves_to_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let opts = sled_options(dir.path());
        let records_at = dir.path().join("db");
        {
            let records = open_db(&records_at, 1 << 20, opts.compression_level, RECORD_LEAF_FANOUT).unwrap();
            let old = records.open_tree("tokens_by_app").unwrap();
            let entry = TokenRef::of(&token("a", "aa"));
            old.insert(index_key("t", "a", "c1"), codec::encode(&entry).unwrap()).unwrap();
            records.flush().unwrap();
        }
        let store = Store::open(&opts).unwrap();
        checked(&store);
        assert_eq!(listed(&store), pairs(&[("c1", "aa")]), "moved as it was, not checked (it has no token record)");
        store.close().unwrap();
        drop(store);
        let records = open_db(&records_at, 1 << 20, opts.compression_level, RECORD_LEAF_FANOUT).unwrap();
        assert!(!records.tree_names().iter().any(|n| n.as_ref() == b"tokens_by_app"));
    }
}
