use crate::flusher::Flusher;
use crate::seal::{MasterKey, Secret};
use crate::{codec, Result};
use serde::{de::DeserializeOwned, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to open the store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Directory of the sled database (created when missing).
    pub data_dir: PathBuf,
    /// File holding the hex master key; created in the data dir when `None`.
    pub master_key_file: Option<PathBuf>,
    /// sled's page cache in bytes.
    pub cache_bytes: u64,
    /// zstd level of the records database, 1 to 22, or 0 for none (fixed when
    /// the database is created). Compression cuts the bytes on disk per client
    /// by about 3× but is paid on every write: `cargo bench --bench storage`
    /// weighs it. Delivery records are never compressed (see [`Store::open`]).
    pub compression_level: i32,
    /// Free disk (bytes) below which writes are refused with [`Error::Full`](crate::Error::Full).
    pub disk_reserve_bytes: u64,
}

impl StoreOptions {
    pub fn new(data_dir: impl Into<PathBuf>) -> StoreOptions {
        StoreOptions {
            data_dir: data_dir.into(),
            master_key_file: None,
            cache_bytes: 64 << 20,
            compression_level: 5,
            disk_reserve_bytes: 64 << 20,
        }
    }
}

/// The handle every part of the engine shares. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Tenants' records: clients, tokens, users, apps... compressed.
    pub(crate) db: sled::Db,
    /// Delivery records (reports, outcomes, broadcast jobs): written by every
    /// send, rarely read, so stored without compression.
    delivery_db: sled::Db,
    pub(crate) trees: Trees,
    flusher: Flusher,
    master: MasterKey,
    /// Users' list fields, per tenant (see `user_directory`).
    pub(crate) directories: crate::user_directory::Directories,
    /// Free space and write health of the data directory's disk.
    space: std::sync::Arc<crate::space::Space>,
    /// Bumped after every app write (see [`Store::apps_generation`]).
    pub(crate) apps_generation: std::sync::atomic::AtomicU64,
}

/// One tree per record kind, and one per secondary index.
pub(crate) struct Trees {
    pub(crate) tenants: sled::Tree,
    pub(crate) users: sled::Tree,
    pub(crate) users_by_name: sled::Tree,
    pub(crate) users_by_email: sled::Tree,
    /// Secondary indexes of users: attributes, roles, client roles, groups.
    pub(crate) user_index: sled::Tree,
    pub(crate) user_addresses: sled::Tree,
    pub(crate) user_sessions: sled::Tree,
    /// Per user: tokens issued before this instant (ms) are refused.
    pub(crate) token_revocations: sled::Tree,
    pub(crate) login_failures: sled::Tree,
    pub(crate) realm_config: sled::Tree,
    pub(crate) apps: sled::Tree,
    pub(crate) clients: sled::Tree,
    pub(crate) links_by_user: sled::Tree,
    pub(crate) links_by_client: sled::Tree,
    pub(crate) push_tokens: sled::Tree,
    pub(crate) tokens_by_app: sled::Tree,
    pub(crate) jobs: sled::Tree,
    pub(crate) reports: sled::Tree,
    /// One-client and one-user sends: report and outcomes in one record.
    pub(crate) sends: sled::Tree,
    pub(crate) outcomes: sled::Tree,
    pub(crate) provider_tokens: sled::Tree,
    pub(crate) webhooks: sled::Tree,
    pub(crate) outbox: sled::Tree,
    pub(crate) failed_events: sled::Tree,
    pub(crate) attempts: sled::Tree,
    pub(crate) versions: sled::Tree,
    pub(crate) versions_by_app: sled::Tree,
    pub(crate) policies: sled::Tree,
    pub(crate) policies_by_name: sled::Tree,
    pub(crate) version_archs: sled::Tree,
    pub(crate) version_votes: sled::Tree,
    pub(crate) nonces: sled::Tree,
    pub(crate) nonce_expiry: sled::Tree,
    pub(crate) settings: sled::Tree,
    pub(crate) properties: sled::Tree,
    pub(crate) catalogue: sled::Tree,
    pub(crate) signers: sled::Tree,
    pub(crate) certificates: sled::Tree,
    pub(crate) certificates_by_signer: sled::Tree,
    pub(crate) pki: sled::Tree,
}

impl Store {
    /// Opens the two sled databases under the data directory: `db` for
    /// records, compressed, and `deliveries` for delivery records, not: sled
    /// compresses each write on its own with a new zstd context, which costs
    /// about 120 µs per send report for little gain on records that are written
    /// once and mostly never read (`cargo bench --bench storage`).
    pub fn open(opts: &StoreOptions) -> Result<Store> {
        std::fs::create_dir_all(&opts.data_dir)?;
        let space = crate::space::Space::watch(&opts.data_dir, opts.disk_reserve_bytes);
        let key_file = opts.master_key_file.clone().unwrap_or_else(|| opts.data_dir.join("master.key"));
        let master = MasterKey::load_or_create(&key_file)?;
        // A modest page cache: Herald's working set is its indexes, and the process
        // must stay small during million-token broadcasts.
        let db = open_db(&opts.data_dir.join("db"), opts.cache_bytes / 4 * 3, opts.compression_level)?;
        let delivery_db = open_db(&opts.data_dir.join("deliveries"), opts.cache_bytes / 4, 0)?;
        move_delivery_trees(&db, &delivery_db)?;
        let trees = Trees {
            tenants: db.open_tree("tenants")?,
            users: db.open_tree("users")?,
            users_by_name: db.open_tree("users_by_name")?,
            users_by_email: db.open_tree("users_by_email")?,
            user_index: db.open_tree("user_index")?,
            user_addresses: db.open_tree("user_addresses")?,
            user_sessions: db.open_tree("user_sessions")?,
            token_revocations: db.open_tree("token_revocations")?,
            login_failures: db.open_tree("login_failures")?,
            realm_config: db.open_tree("realm_config")?,
            apps: db.open_tree("apps")?,
            clients: db.open_tree("clients")?,
            links_by_user: db.open_tree("links_by_user")?,
            links_by_client: db.open_tree("links_by_client")?,
            push_tokens: db.open_tree("push_tokens")?,
            tokens_by_app: db.open_tree("tokens_by_app")?,
            jobs: delivery_db.open_tree("jobs")?,
            reports: delivery_db.open_tree("reports")?,
            sends: delivery_db.open_tree("sends")?,
            outcomes: delivery_db.open_tree("outcomes")?,
            provider_tokens: db.open_tree("provider_tokens")?,
            webhooks: db.open_tree("webhooks")?,
            outbox: db.open_tree("outbox")?,
            failed_events: db.open_tree("failed_events")?,
            attempts: db.open_tree("attempts")?,
            nonces: db.open_tree("nonces")?,
            nonce_expiry: db.open_tree("nonce_expiry")?,
            settings: db.open_tree("settings")?,
            properties: db.open_tree("properties")?,
            catalogue: db.open_tree("catalogue")?,
            signers: db.open_tree("signers")?,
            certificates: db.open_tree("certificates")?,
            certificates_by_signer: db.open_tree("certificates_by_signer")?,
            pki: db.open_tree("pki")?,
            versions: db.open_tree("versions")?,
            versions_by_app: db.open_tree("versions_by_app")?,
            policies: db.open_tree("policies")?,
            policies_by_name: db.open_tree("policies_by_name")?,
            version_archs: db.open_tree("version_archs")?,
            version_votes: db.open_tree("version_votes")?,
        };
        let flusher = Flusher::start(vec![db.clone(), delivery_db.clone()]);
        let inner = Inner {
            db,
            delivery_db,
            trees,
            flusher,
            master,
            directories: Default::default(),
            space,
            apps_generation: Default::default(),
        };
        Ok(Store { inner: Arc::new(inner) })
    }

    /// Returns once every write made before the call is on disk; flushes are
    /// shared between concurrent callers. Call it before acknowledging a write.
    pub async fn durable(&self) -> Result<()> {
        let flushed = self.inner.flusher.durable().await;
        if let Err(e) = &flushed {
            self.inner.space.write_failed(e);
        }
        flushed
    }

    /// `Ok` when writes may be made: [`Error::Full`](crate::Error::Full)
    /// while free disk is below the reserve (writes resume by themselves when
    /// space is freed), [`Error::Unavailable`](crate::Error::Unavailable)
    /// after the database failed a write. Callers check it before a write
    /// they cannot take back, so the database never meets a full disk.
    pub fn writable(&self) -> Result<()> {
        self.inner.space.writable()
    }

    /// Waits until [`Store::writable`] (background work pausing on a full disk).
    pub async fn wait_writable(&self) {
        while self.writable().is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }

    /// One flush for this caller alone: the baseline grouped flushing is measured against.
    pub fn flush_now(&self) -> Result<()> {
        self.inner.db.flush()?;
        self.inner.delivery_db.flush()?;
        Ok(())
    }

    /// A number that changes after every write of any app: what was built from
    /// apps' records (the push engine's provider channels) stays valid while
    /// it does not, without reading and decoding the record on every send.
    pub fn apps_generation(&self) -> u64 {
        self.inner.apps_generation.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.inner.db.size_on_disk()? + self.inner.delivery_db.size_on_disk()?)
    }

    pub fn data_dir_exists(path: &Path) -> bool {
        path.join("db").exists()
    }

    pub fn seal(&self, plain: &[u8], context: &str) -> Result<Secret> {
        self.inner.master.seal(plain, context)
    }

    pub fn unseal(&self, secret: &Secret, context: &str) -> Result<Vec<u8>> {
        self.inner.master.open(secret, context)
    }

    pub(crate) fn trees(&self) -> &Trees {
        &self.inner.trees
    }
}

fn open_db(path: &Path, cache_bytes: u64, compression_level: i32) -> Result<sled::Db> {
    Ok(sled::Config::new()
        .path(path)
        .cache_capacity(cache_bytes)
        .use_compression(compression_level > 0)
        .compression_factor(compression_level.clamp(1, 22))
        .open()?)
}

const DELIVERY_TREES: [&str; 3] = ["jobs", "reports", "outcomes"];

/// A data directory written before delivery records had their own database
/// holds them in the records one: they are copied over, made durable, then
/// dropped there. A crash part way copies again on the next start (nothing
/// writes to them before this returns).
fn move_delivery_trees(from: &sled::Db, to: &sled::Db) -> Result<()> {
    let names = from.tree_names();
    let present: Vec<&str> =
        DELIVERY_TREES.into_iter().filter(|n| names.iter().any(|t| t.as_ref() == n.as_bytes())).collect();
    if present.is_empty() {
        return Ok(());
    }
    for name in &present {
        let (old, new) = (from.open_tree(name)?, to.open_tree(name)?);
        for kv in old.iter() {
            let (k, v) = kv?;
            new.insert(k, v)?;
        }
    }
    to.flush()?;
    for name in present {
        from.drop_tree(name)?;
    }
    from.flush()?;
    tracing::info!("moved the delivery records to their own database");
    Ok(())
}

pub(crate) fn get<T: DeserializeOwned>(tree: &sled::Tree, key: &[u8]) -> Result<Option<T>> {
    tree.get(key)?.map(|v| codec::decode(&v)).transpose()
}

/// Every record of `tree`, each with the tenant its key starts with: restart
/// recovery, which runs across tenants.
pub(crate) fn all_with_tenant<T: DeserializeOwned>(tree: &sled::Tree) -> Result<Vec<(String, T)>> {
    tree.iter()
        .map(|kv| {
            let (k, v) = kv?;
            Ok((crate::keys::first_part(&k), codec::decode(&v)?))
        })
        .collect()
}

pub(crate) fn put<T: Serialize>(tree: &sled::Tree, key: &[u8], value: &T) -> Result<()> {
    tree.insert(key, codec::encode(value)?)?;
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
