//! An app's Web Push credentials: its VAPID key pair (the private key sealed)
//! and subject. A record of its own beside the app's, so the app record keeps
//! its stored shape; written and removed in the app's transactions.

use crate::keys::key;
use crate::store::get;
use crate::{Result, Secret, Tx};
use serde::{Deserialize, Serialize};

/// The VAPID credentials of one app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebPushKeys {
    /// The VAPID JWT's `sub`: a `mailto:` or `https:` contact of the app's operator.
    pub subject: String,
    /// The P-256 private key, PKCS#8 DER, sealed.
    pub private_key: Secret,
    /// Its public key, the uncompressed point: what browsers subscribe with.
    pub public_key: Vec<u8>,
}

impl crate::apps::Apps<'_> {
    /// The Web Push credentials of an app; `None` when it has none.
    pub fn web_push(&self, tenant: &str, app: &str) -> Result<Option<WebPushKeys>> {
        get(&self.store().trees()?.app_web_push, &key(&[tenant, app]))
    }
}

impl Tx<'_> {
    /// The Web Push credentials of an app, read inside the transaction.
    pub fn web_push(&self, tenant: &str, app: &str) -> Result<Option<WebPushKeys>> {
        self.get(&self.t.app_web_push, &key(&[tenant, app]))
    }

    /// Stores an app's Web Push credentials, or removes them (`None`).
    pub fn put_web_push(&self, tenant: &str, app: &str, keys: Option<&WebPushKeys>) -> Result<()> {
        let k = key(&[tenant, app]);
        match keys {
            Some(keys) => self.put(&self.t.app_web_push, &k, keys),
            None => self.remove(&self.t.app_web_push, &k).map(drop),
        }
    }
}
