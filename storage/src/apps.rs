//! Apps of a tenant with their push configuration; credentials are sealed.

use crate::keys::{key, prefix};
use crate::store::{get, Store};
use crate::{codec, Error, Result, Secret, Tx};
use serde::{Deserialize, Serialize};

/// An app of a tenant: its push credentials per provider, keyed by name.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct App {
    /// Unique in the tenant: the key of the record, and what clients and versions name.
    pub name: String,
    /// Notification categories the app takes: a send of another category is not delivered to it.
    pub categories: Vec<String>,
    /// Legacy FCM server key, sealed: no longer sent with; an app with only this has no FCM channel.
    pub android_api_key: Option<Secret>,
    /// FCM v1 service-account JSON (base64), sealed: what FCM sends are authorised with.
    pub fcm_service_account: Option<Secret>,
    /// APNs client certificate, sealed: when set, the private key is its key (certificate auth).
    pub ios_apns_certificate: Option<Secret>,
    /// APNs private key, sealed: the certificate's key, or alone the token-auth key (with team and key ids).
    pub ios_apns_private_key: Option<Secret>,
    /// APNs team id, the `iss` of provider tokens.
    pub ios_apns_team_id: Option<String>,
    /// APNs key id, the `kid` of provider tokens.
    pub ios_apns_key_id: Option<String>,
    /// iOS bundle id, sent as the APNs topic.
    pub ios_bundle_id: Option<String>,
    /// Whether sends go to the APNs sandbox rather than production.
    pub ios_is_development: Option<bool>,
    /// Huawei Push Kit OAuth client id.
    pub hpk_client_id: Option<String>,
    /// Huawei Push Kit OAuth client secret, sealed.
    pub hpk_client_secret: Option<Secret>,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Last change, ms since the epoch.
    pub modified_ms: u64,
}

impl App {
    /// The sealing context of one credential field of this app.
    pub fn secret_context(tenant: &str, app: &str, field: &str) -> String {
        format!("app/{tenant}/{app}/{field}")
    }
}

/// Reads and seeding of apps; writes go through [`Tx`].
pub struct Apps<'a>(&'a Store);

impl Apps<'_> {
    pub(crate) fn store(&self) -> &Store {
        self.0
    }
}

impl Store {
    /// The app store of this store.
    pub fn apps(&self) -> Apps<'_> {
        Apps(self)
    }
}

impl Apps<'_> {
    /// Stores a new app (`Conflict("app")` when the name is taken): seeding
    /// and tests; the engine creates apps through its operations layer.
    pub fn create(&self, tenant: &str, app: &App) -> Result<()> {
        let created = self.0.transact(|tx| tx.insert_app(tenant, app));
        self.changed();
        created
    }

    /// The app of that name; `None` when the tenant has none.
    pub fn get(&self, tenant: &str, name: &str) -> Result<Option<App>> {
        get(&self.0.trees()?.apps, &key(&[tenant, name]))
    }

    /// Apps in name order, skipping `offset`, at most `limit`, and the total count.
    pub fn list(&self, tenant: &str, offset: usize, limit: usize) -> Result<(Vec<App>, usize)> {
        let t = &self.0.trees()?.apps;
        let p = prefix(&[tenant]);
        let total = t.scan_prefix(&p).count();
        let page =
            t.scan_prefix(&p).skip(offset).take(limit).map(|kv| codec::decode(&kv?.1)).collect::<Result<Vec<App>>>()?;
        Ok((page, total))
    }

    /// Moves [`Store::apps_generation`] on: call it after every transaction
    /// that wrote an app, once it has committed (or failed), never before,
    /// so that what was built from the old record is built again.
    /// Other engines sharing the database are told too (see `coherence`).
    pub fn changed(&self) {
        self.0.inner.apps_generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        self.0.publish(crate::coherence::Change::Apps);
    }
}

impl Tx<'_> {
    /// The app of that name, read inside the transaction.
    pub fn app(&self, tenant: &str, name: &str) -> Result<Option<App>> {
        self.get(&self.t.apps, &key(&[tenant, name]))
    }

    /// Stores a new app; `Conflict("app")` when the name is taken.
    pub fn insert_app(&self, tenant: &str, app: &App) -> Result<()> {
        let k = key(&[tenant, &app.name]);
        if self.has(&self.t.apps, &k)? {
            return Err(Error::Conflict("app"));
        }
        self.put(&self.t.apps, &k, app)
    }

    /// Stores an app over its previous record.
    pub fn put_app(&self, tenant: &str, app: &App) -> Result<()> {
        self.put(&self.t.apps, &key(&[tenant, &app.name]), app)
    }

    /// Removes an app (not its versions) with its Web Push credentials; whether it was there.
    pub fn delete_app(&self, tenant: &str, name: &str) -> Result<bool> {
        self.put_web_push(tenant, name, None)?;
        self.remove(&self.t.apps, &key(&[tenant, name]))
    }
}
