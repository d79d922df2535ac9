//! The two sled databases and their trees, held in a [`Slot`] that can be
//! emptied and filled again: after a failed write (a full disk) sled refuses
//! every further write until it is reopened, and reopening needs the old
//! handles closed first (sled locks its files).

use crate::store::StoreOptions;
use crate::{Error, Result};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The open databases: `db` for records, compressed, and `deliveries` for
/// delivery records, not (sled compresses each write on its own with a new
/// zstd context, which costs about 120 µs per send report for little gain on
/// records written once and mostly never read: `cargo bench --bench storage`).
pub(crate) struct Dbs {
    /// Tenants' records: clients, tokens, users, apps... compressed.
    pub(crate) db: sled::Db,
    /// Delivery records (reports, outcomes, broadcast jobs): written by every
    /// send, rarely read, so stored without compression.
    pub(crate) delivery_db: sled::Db,
    pub(crate) trees: Trees,
}

impl std::ops::Deref for Dbs {
    type Target = Trees;
    fn deref(&self) -> &Trees {
        &self.trees
    }
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
    /// Per client: bumped by every link made to it (see `Links::generation`).
    pub(crate) link_generations: sled::Tree,
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

impl Dbs {
    pub(crate) fn open(opts: &StoreOptions) -> Result<Dbs> {
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
            link_generations: db.open_tree("link_generations")?,
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
        Ok(Dbs { db, delivery_db, trees })
    }

    /// Writes both databases' buffers to disk.
    pub(crate) fn flush(&self) -> Result<()> {
        self.db.flush()?;
        self.delivery_db.flush()?;
        Ok(())
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
        let deadline = Instant::now() + within;
        loop {
            match Arc::try_unwrap(old) {
                Ok(dbs) => {
                    drop(dbs);
                    return true;
                }
                Err(still) if Instant::now() < deadline => {
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
