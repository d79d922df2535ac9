//! Catalogue services of a tenant, and the tenant's catalogue resource version:
//! every write bumps it in the same transaction, so a reader can wait until
//! its own earlier write is visible.

use crate::keys::{key, prefix};
use crate::store::{get, Store};
use crate::{codec, Result, Tx};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    pub id: String,
    /// The validated service document as JSON text.
    pub document: String,
    pub kind: String,
    pub searchable: bool,
}

pub struct Catalogue<'a>(&'a Store);

impl Store {
    pub fn catalogue(&self) -> Catalogue<'_> {
        Catalogue(self)
    }
}

fn version_key(tenant: &str) -> Vec<u8> {
    key(&[tenant, "catalogue-version"])
}

impl Catalogue<'_> {
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Service>> {
        get(&self.0.trees()?.catalogue, &key(&[tenant, id]))
    }

    pub fn list(&self, tenant: &str) -> Result<Vec<Service>> {
        self.0.trees()?.catalogue.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

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
