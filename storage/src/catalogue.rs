//! Catalogue services of a tenant, and the tenant's catalogue resource version:
//! every write bumps it in the same transaction, so a reader can wait until
//! its own earlier write is visible.

use crate::keys::{key, prefix, Key};
use crate::store::{get, Store};
use crate::{codec, Result, Tx};
use serde::{Deserialize, Serialize};

/// A catalogue service of a tenant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// Chosen by the caller (from the path), unique in the tenant.
    pub id: String,
    /// The validated service document as JSON text.
    pub document: String,
    /// The document's `type`, kept apart for filtering without parsing it.
    pub kind: String,
    /// Whether the service appears in catalogue searches.
    pub searchable: bool,
}

/// Reads of the catalogue; writes go through [`Tx::put_service`].
pub struct Catalogue<'a>(&'a Store);

impl Store {
    /// The catalogue of this store.
    pub fn catalogue(&self) -> Catalogue<'_> {
        Catalogue(self)
    }
}

fn version_key(tenant: &str) -> Key {
    key(&[tenant, "catalogue-version"])
}

impl Catalogue<'_> {
    /// One service; `None` when absent.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Service>> {
        get(&self.0.trees()?.catalogue, &key(&[tenant, id]))
    }

    /// Every service of the tenant, in id order.
    pub fn list(&self, tenant: &str) -> Result<Vec<Service>> {
        self.0.trees()?.catalogue.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// The tenant's catalogue resource version (0 before its first write): a
    /// reader waits until it reaches the one its own write answered.
    pub fn version(&self, tenant: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.settings, &version_key(tenant))?.unwrap_or(0))
    }
}

impl Tx<'_> {
    /// Creates or replaces a service and moves the tenant's catalogue
    /// resource version on; answers the new resource version.
    pub fn put_service(&self, tenant: &str, s: &Service) -> Result<u64> {
        let vk = version_key(tenant);
        let next = self.get::<u64>(&self.t.settings, &vk)?.unwrap_or(0).saturating_add(1);
        self.put(&self.t.catalogue, &key(&[tenant, &s.id]), s)?;
        self.put(&self.t.settings, &vk, &next)?;
        Ok(next)
    }
}
