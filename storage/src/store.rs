use crate::databases::{Dbs, Engine, Slot};
use crate::flusher::Flusher;
use crate::kv::Tree;
use crate::seal::{MasterKey, Secret};
use crate::send_groups::SendGroups;
use crate::space::{Space, SAMPLE_EVERY, SAMPLE_FAILED_EVERY};
use crate::{codec, Error, Result};
use serde::{de::DeserializeOwned, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to open the store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Directory of the sled database (created when missing), and of the
    /// master key file when none is named.
    pub data_dir: PathBuf,
    /// Where the records live instead of the data directory: a
    /// `postgres://user@host:port/db` URL, which several engines may share.
    pub store_url: Option<String>,
    /// Connections to the database at most (PostgreSQL only).
    pub connections: usize,
    /// File holding the hex master key; created in the data dir when `None`.
    pub master_key_file: Option<PathBuf>,
    /// sled's page cache in bytes, shared out among its databases (see `databases.rs`).
    pub cache_bytes: u64,
    /// zstd level of the records database and the broadcast index, 1 to 22, or 0 for none (fixed when
    /// the database is created). Compression cuts the bytes on disk per client
    /// by about 3× but is paid on every write: `cargo bench -p herald-storage --bench storage`
    /// weighs it. Delivery records are never compressed (see [`Store::open`]).
    pub compression_level: i32,
    /// Free disk (bytes) below which writes are refused with [`Error::Full`](crate::Error::Full).
    pub disk_reserve_bytes: u64,
    /// This engine's name among those sharing a database: the holder of its
    /// leases (see `leases`).
    pub node_id: String,
    /// How long a lease lasts without a heartbeat: how soon another engine
    /// takes over the work of one that died or hangs.
    pub lease_ttl: std::time::Duration,
}

impl StoreOptions {
    /// Defaults for `data_dir`: generated master key file, 64 MiB cache and reserve, zstd level 5.
    pub fn new(data_dir: impl Into<PathBuf>) -> StoreOptions {
        StoreOptions {
            data_dir: data_dir.into(),
            store_url: None,
            connections: 16,
            master_key_file: None,
            cache_bytes: 64 << 20,
            compression_level: 5,
            disk_reserve_bytes: 64 << 20,
            node_id: format!("node-{}", ulid::Ulid::generate().to_string().to_lowercase()),
            lease_ttl: std::time::Duration::from_secs(10),
        }
    }
}

/// The handle every part of the engine shares. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The two sled databases (see [`Dbs`]), reopened after a write failure.
    dbs: Slot,
    /// How they were opened, to open them again.
    pub(crate) opts: StoreOptions,
    /// The writer of one-client send records, grouped; `None` on PostgreSQL
    /// (see `send_groups`). Stopped, its records written, before the last
    /// flush of [`Store::close`] or as the store drops.
    pub(crate) send_groups: Option<SendGroups>,
    /// Grouped flushes of the sled databases; `None` on PostgreSQL, where a
    /// commit is durable when it returns.
    flusher: Option<Flusher>,
    master: MasterKey,
    /// Users' list fields, per tenant (see `user_directory`).
    pub(crate) directories: crate::user_directory::Directories,
    /// Tenants' quotas, read by every send (see `limits`).
    pub(crate) limits: crate::limits::LimitsCache,
    /// Free space and write health of the data directory's disk, shared
    /// with the databases, whose write errors mark it (see `space`).
    space: Arc<Space>,
    /// Bumped after every app write (see [`Store::apps_generation`]).
    pub(crate) apps_generation: std::sync::atomic::AtomicU64,
    /// The leases of this engine when on sled (see `leases`).
    pub(crate) local_leases: crate::leases::LocalLeases,
    /// The leases this engine renews: alive while a `Lease` of each is.
    pub(crate) renewals: std::sync::Mutex<std::collections::HashMap<String, std::sync::Weak<()>>>,
    /// Set by [`Store::close`]: the databases stay closed (no reopening).
    closed: std::sync::atomic::AtomicBool,
    /// Told of each webhook whose outbox a committed transaction wrote to
    /// (see [`Store::on_outbox_write`]).
    outbox_waker: std::sync::OnceLock<OutboxWaker>,
    /// Tenants' webhooks as last listed (see `Tx::webhooks_of`).
    pub(crate) webhook_sets: crate::webhooks::WebhookSets,
}

/// What [`Store::on_outbox_write`] calls: with the tenant and the webhook's id.
type OutboxWaker = Box<dyn Fn(&str, &str) + Send + Sync>;

impl Store {
    /// Opens the store: the PostgreSQL database of `opts.store_url`
    /// (migrated to this engine's schema), or else the sled databases under
    /// the data directory (records, the broadcast index, delivery records:
    /// see `databases.rs`). On a full disk the ballast is given up so sled
    /// can open (it writes when it opens); the store then serves reads and
    /// refuses writes until space is freed.
    pub fn open(opts: &StoreOptions) -> Result<Store> {
        std::fs::create_dir_all(&opts.data_dir)?;
        let key_file = opts.master_key_file.clone().unwrap_or_else(|| opts.data_dir.join("master.key"));
        let master = MasterKey::load_or_create(&key_file)?;
        if opts.store_url.is_some() {
            return Self::open_shared(opts, master);
        }
        crate::space::reserve_fits(&opts.data_dir, opts.disk_reserve_bytes)?;
        let space = Arc::new(Space::new(&opts.data_dir, opts.disk_reserve_bytes));
        let dbs = Slot::new(open_or_give_up_ballast(opts, &space)?);
        let inner = Arc::new(Inner {
            flusher: Some(Flusher::start(dbs.clone())?),
            send_groups: Some(SendGroups::start(dbs.clone())?),
            dbs,
            opts: opts.clone(),
            master,
            directories: Default::default(),
            limits: Default::default(),
            space,
            apps_generation: Default::default(),
            local_leases: Default::default(),
            renewals: Default::default(),
            closed: Default::default(),
            outbox_waker: Default::default(),
            webhook_sets: Default::default(),
        });
        watch_disk(Arc::downgrade(&inner));
        let store = Store { inner };
        store.build_token_counts()?;
        store.broadcasts().offer_unfinished()?;
        Ok(store)
    }

    /// Opens a database that other engines may share, and checks that this
    /// engine's master key opens the secrets already in it.
    fn open_shared(opts: &StoreOptions, master: MasterKey) -> Result<Store> {
        let space = Arc::new(Space::unmetered());
        let dbs = Dbs::open(opts, &space)?;
        if let Engine::Pg(pg) = &dbs.engine {
            pg.check_master_key(&master)?;
        }
        let inner = Arc::new(Inner {
            flusher: None,
            send_groups: None,
            dbs: Slot::new(dbs),
            opts: opts.clone(),
            master,
            directories: Default::default(),
            limits: Default::default(),
            space,
            apps_generation: Default::default(),
            local_leases: Default::default(),
            renewals: Default::default(),
            closed: Default::default(),
            outbox_waker: Default::default(),
            webhook_sets: Default::default(),
        });
        let store = Store { inner };
        store.build_token_counts()?;
        store.listen();
        Ok(store)
    }

    /// Returns once every write made before the call is on disk; flushes are
    /// shared between concurrent callers. Call it before acknowledging a write.
    pub async fn durable(&self) -> Result<()> {
        if let Some(groups) = &self.inner.send_groups {
            groups.written().await?;
        }
        let Some(flusher) = &self.inner.flusher else { return Ok(()) };
        // A failed flush marked the store failed where it failed (`Dbs::flush`).
        flusher.durable().await
    }

    /// `Ok` when writes may be made: [`Error::Full`](crate::Error::Full)
    /// while free disk is below the reserve (writes resume by themselves when
    /// space is freed), [`Error::Unavailable`](crate::Error::Unavailable)
    /// after the database failed a write (any write's storage error marks it:
    /// see `space`), until it is reopened. Callers check it before a write
    /// they cannot take back, so the database rarely meets a full disk.
    pub fn writable(&self) -> Result<()> {
        self.inner.space.writable()
    }

    /// Waits until [`Store::writable`] (background work pausing on a full disk).
    pub async fn wait_writable(&self) {
        while self.writable().is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }

    /// Sets what is told, after each commit, of every webhook whose outbox the
    /// transaction wrote to (once; later calls are ignored): the webhook
    /// dispatcher, which wakes its target. A wake-up lost (none set yet, or
    /// the engine stopping) costs latency, never the event: targets also
    /// poll their outboxes.
    pub fn on_outbox_write(&self, wake: impl Fn(&str, &str) + Send + Sync + 'static) {
        let _ = self.inner.outbox_waker.set(Box::new(wake));
    }

    /// Tells the outbox waker of the webhooks a committed transaction wrote to.
    pub(crate) fn woke_outboxes(&self, written: Vec<(String, String)>) {
        if let Some(wake) = self.inner.outbox_waker.get() {
            for (tenant, webhook) in &written {
                wake(tenant, webhook);
            }
        }
    }

    /// On sled, flushes and closes the databases for good, as an engine
    /// stops: every later call answers `Unavailable`. On PostgreSQL there is
    /// nothing to do (every commit is durable, a start reads no log): the
    /// store stays usable until dropped.
    ///
    /// The sled databases are opened once more before they close: sled
    /// 0.34 writes its snapshot of the page table only when it opens, so
    /// without this the next start replays (and decompresses) every log
    /// entry written since the previous start, 3.8 s after a million clients
    /// were written. The replay is paid here, by the stop, and the next start
    /// reads the snapshot. A process killed instead still replays at its
    /// next start. Blocks for as long as the replay takes, and up to 5 s for
    /// operations still using the databases; past that it answers an error
    /// and the store stays open, without a snapshot.
    pub fn close(&self) -> Result<()> {
        use std::sync::atomic::Ordering;
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if self.inner.opts.store_url.is_some() {
            return Ok(()); // PostgreSQL
        }
        if let Some(groups) = &self.inner.send_groups {
            groups.stop();
        }
        self.flush_now()?;
        if !self.inner.dbs.close(std::time::Duration::from_secs(5)) {
            return Err(Error::Unavailable("the database is still in use: closed without a snapshot".into()));
        }
        let started = std::time::Instant::now();
        // sled's lock on the files is released once its own threads let go of them.
        let deadline = started.checked_add(std::time::Duration::from_secs(5));
        let snapshot = loop {
            match Dbs::open(&self.inner.opts, &self.inner.space) {
                Err(Error::Engine(e)) if e.to_string().contains("could not acquire lock") => {
                    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                        return Err(Error::Engine(e));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                opened => break opened?,
            }
        };
        // Closed again at once: nothing writes after the snapshot.
        drop(snapshot);
        tracing::info!(took = ?started.elapsed(), "databases closed with a snapshot of their page tables");
        Ok(())
    }

    /// One flush for this caller alone: the baseline grouped flushing is measured against.
    pub fn flush_now(&self) -> Result<()> {
        self.trees()?.flush()
    }

    /// A number that changes after every write of any app: what was built from
    /// apps' records (the push engine's provider channels) stays valid while
    /// it does not, without reading and decoding the record on every send.
    pub fn apps_generation(&self) -> u64 {
        self.inner.apps_generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Drops what the store caches of a tenant in memory (its user
    /// directory), rebuilt from its records on next use.
    pub fn forget_caches(&self, tenant: &str) {
        self.inner.directories.forget(tenant);
        self.inner.webhook_sets.forget(tenant);
    }

    /// Bytes the databases take on disk, for the operations endpoint.
    pub fn size_on_disk(&self) -> Result<u64> {
        self.trees()?.size_on_disk()
    }

    /// Whether `path` already holds a database (its `db` directory).
    pub fn data_dir_exists(path: &Path) -> bool {
        path.join("db").exists()
    }

    /// Seals a secret under the store's master key (see [`MasterKey::seal`]); `context` must be given again to unseal.
    pub fn seal(&self, plain: &[u8], context: &str) -> Result<Secret> {
        self.inner.master.seal(plain, context)
    }

    /// Opens a secret sealed by [`Store::seal`] with the same `context`.
    pub fn unseal(&self, secret: &Secret, context: &str) -> Result<Vec<u8>> {
        self.inner.master.open(secret, context)
    }

    /// The databases and their trees, for the length of one operation.
    pub(crate) fn trees(&self) -> Result<Arc<Dbs>> {
        self.inner.dbs.get()
    }
}

/// Opens the databases; on a full disk, gives up the ballast and tries once more.
fn open_or_give_up_ballast(opts: &StoreOptions, space: &Arc<Space>) -> Result<Dbs> {
    match Dbs::open(opts, space) {
        Err(Error::Full) if space.give_up_ballast() => {
            tracing::warn!("disk full at start: the ballast was given up to open the database; writes wait for space");
            Dbs::open(opts, space)
        }
        other => other,
    }
}

impl Inner {
    /// Closes and reopens the databases after a write failure, which sled
    /// keeps refusing every write for until then.
    fn reopen(&self) -> Result<()> {
        if !self.dbs.close(std::time::Duration::from_secs(5)) {
            return Err(Error::Unavailable("the database is still in use".into()));
        }
        self.dbs.put(open_or_give_up_ballast(&self.opts, &self.space)?);
        self.space.recovered();
        tracing::warn!("the database was reopened after a write failure; writes accepted again");
        Ok(())
    }
}

/// Measures free disk every [`SAMPLE_EVERY`] while the store lives, keeps the
/// ballast, and reopens the databases after a write failure once there is
/// room: woken by the failed write itself (`Space::write_error`), then
/// sampling every [`SAMPLE_FAILED_EVERY`] until reopened, so that recovery
/// does not depend on a sample having seen the disk full.
fn watch_disk(inner: std::sync::Weak<Inner>) {
    let spawned = std::thread::Builder::new().name("herald-disk-watch".into()).spawn(move || {
        if let Some(inner) = inner.upgrade() {
            inner.space.watched_by(std::thread::current());
        }
        while let Some(inner) = inner.upgrade() {
            if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            inner.space.sample();
            let mut reopen_failed = false;
            if inner.space.needs_reopen() {
                if let Err(e) = inner.reopen() {
                    tracing::warn!(error = %e, "reopening the database failed; trying again");
                    reopen_failed = true;
                }
            }
            // Waiting for room: looked at often. A failed reopen is tried again at the usual pace.
            let pause = if inner.space.failed() && !reopen_failed { SAMPLE_FAILED_EVERY } else { SAMPLE_EVERY };
            drop(inner);
            std::thread::park_timeout(pause);
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "could not start the disk watch: free space is measured at start only");
    }
}

pub(crate) fn get<T: DeserializeOwned>(tree: &Tree, key: &[u8]) -> Result<Option<T>> {
    tree.get(key)?.map(|v| codec::decode(&v)).transpose()
}

/// Every record of `tree`, each with the tenant its key starts with: restart
/// recovery, which runs across tenants.
pub(crate) fn all_with_tenant<T: DeserializeOwned>(tree: &Tree) -> Result<Vec<(String, T)>> {
    tree.iter()
        .map(|kv| {
            let (k, v) = kv?;
            Ok((crate::keys::first_part(&k), codec::decode(&v)?))
        })
        .collect()
}

pub(crate) fn put<T: Serialize>(tree: &Tree, key: &[u8], value: &T) -> Result<()> {
    tree.insert(key, &codec::encode(value)?)
}

/// The name of the newest sled snapshot of the records database under
/// `data_dir` (`snap.<LSN in hex>`, so names order as snapshots do), or ""
/// when there is none: tests of [`Store::close`]. Panics when the directory
/// cannot be read: tests only.
#[cfg(feature = "test-support")]
#[allow(clippy::expect_used)]
pub fn test_newest_snapshot(data_dir: &Path) -> String {
    std::fs::read_dir(data_dir.join("db"))
        .expect("the records database's directory")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("snap.") && !n.ends_with(".generating"))
        .max()
        .unwrap_or_default()
}

impl Store {
    /// How many records the one-client sends' tree and the batches' tree
    /// hold: tests of how sends are grouped into records.
    #[cfg(feature = "test-support")]
    pub fn test_send_records(&self) -> Result<(u64, u64)> {
        let t = self.trees()?;
        Ok((t.sends.count_prefix([])?, t.batches.count_prefix([])?))
    }

    /// Holds back the writer of one-client send records until something
    /// waits for them ([`Store::durable`]): tests of how the records handed
    /// in are grouped, which otherwise depend on the test handing them all
    /// in within the writer's millisecond. Nothing to hold on PostgreSQL.
    #[cfg(feature = "test-support")]
    pub fn test_hold_send_records(&self, held: bool) -> Result<()> {
        match &self.inner.send_groups {
            Some(groups) => groups.hold(held),
            None => Ok(()),
        }
    }
}

/// Whether tests run on PostgreSQL (`HERALD_TEST_STORE=postgres`) rather than sled.
#[cfg(feature = "test-support")]
pub fn test_on_postgres() -> bool {
    std::env::var("HERALD_TEST_STORE").is_ok_and(|s| s == "postgres")
}

/// Options of a store for tests in `dir`, on the backend under test: sled in
/// `dir`, or with `HERALD_TEST_STORE=postgres` a database of the test
/// PostgreSQL server (started once per test process), created the first time
/// `dir` is opened and the same one after. Panics when it cannot: tests only.
#[cfg(feature = "test-support")]
#[allow(clippy::expect_used)]
pub fn test_options(dir: &Path) -> StoreOptions {
    let mut opts = StoreOptions::new(dir);
    if test_on_postgres() {
        let marker = dir.join("store-url");
        let url = match std::fs::read_to_string(&marker) {
            Ok(url) => url,
            Err(_) => {
                let cluster = herald_pgtemp::shared().expect("a PostgreSQL server for the tests");
                let url = cluster.create_database().expect("a database for the test");
                std::fs::create_dir_all(dir).expect("the test directory");
                std::fs::write(&marker, &url).expect("the marker written");
                url
            }
        };
        opts.store_url = Some(url);
    }
    opts
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
