//! Catalogue services of a tenant, and the tenant's catalogue resource version:
//! every write bumps it in the same transaction, so a reader can wait until
//! its own earlier write is visible.

use crate::keys::{key, prefix};
use crate::store::{get, Store};
use crate::{codec, Result};
use serde::{Deserialize, Serialize};
use sled::Transactional;

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
    /// Creates or replaces a service; answers the new resource version.
    pub fn put(&self, tenant: &str, s: &Service) -> Result<u64> {
        let t = self.0.trees()?;
        let k = key(&[tenant, &s.id]);
        let v = codec::encode(s)?;
        let vk = version_key(tenant);
        let version = (&t.catalogue, &t.settings).transaction(|(cat, settings)| {
            let current: u64 = match settings.get(&vk)? {
                Some(raw) => codec::decode(&raw).map_err(sled::transaction::ConflictableTransactionError::Abort)?,
                None => 0,
            };
            cat.insert(k.as_slice(), v.as_slice())?;
            let next = current + 1;
            settings.insert(
                vk.as_slice(),
                codec::encode(&next).map_err(sled::transaction::ConflictableTransactionError::Abort)?,
            )?;
            Ok(next)
        })?;
        Ok(version)
    }

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
