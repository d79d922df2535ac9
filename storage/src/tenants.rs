//! Tenants: the realm of every other record, with its token-signing key.

use crate::keys::key;
use crate::store::{get, Store};
use crate::users::User;
use crate::{codec, Error, Result, Secret, Tx};
use serde::{Deserialize, Serialize};

/// A tenant: the realm every other record is keyed under.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tenant {
    /// Chosen at creation; the first part of every key of the tenant's records.
    pub id: String,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// PKCS#8 of the ES256 key that signs the tenant's access tokens, sealed.
    pub signing_key: Secret,
    /// `kid` of that key in the tenant's JWKS.
    pub key_id: String,
}

/// Reads of tenants; creation goes through [`Tx::insert_tenant`].
pub struct Tenants<'a>(&'a Store);

impl Store {
    /// The tenants of this store.
    pub fn tenants(&self) -> Tenants<'_> {
        Tenants(self)
    }
}

impl Tenants<'_> {
    /// One tenant; `None` when absent.
    pub fn get(&self, id: &str) -> Result<Option<Tenant>> {
        get(&self.0.trees()?.tenants, &key(&[id]))
    }

    /// Every tenant, in id order.
    pub fn list(&self) -> Result<Vec<Tenant>> {
        self.0.trees()?.tenants.iter().map(|kv| codec::decode(&kv?.1)).collect()
    }
}

impl Tx<'_> {
    /// One tenant, read inside the transaction.
    pub fn tenant(&self, id: &str) -> Result<Option<Tenant>> {
        self.get(&self.t.tenants, &key(&[id]))
    }

    /// Stores a new tenant with its first admin user (the user's record,
    /// username and index entries); `Conflict("tenant")` when the id is taken.
    pub fn insert_tenant(&self, tenant: &Tenant, admin: &User) -> Result<()> {
        let tenant_key = key(&[&tenant.id]);
        if self.has(&self.t.tenants, &tenant_key)? {
            return Err(Error::Conflict("tenant"));
        }
        self.put(&self.t.tenants, &tenant_key, tenant)?;
        self.put(&self.t.users, &key(&[&tenant.id, &admin.id]), admin)?;
        self.put_raw(&self.t.users_by_name, &key(&[&tenant.id, &admin.username]), admin.id.as_bytes())?;
        for k in crate::users::index_keys(&tenant.id, admin) {
            self.put_raw(&self.t.user_index, &k, admin.id.as_bytes())?;
        }
        Ok(())
    }
}
