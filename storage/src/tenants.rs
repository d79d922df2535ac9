//! Tenants: the realm of every other record, with its token-signing key.

use crate::error::abort;
use crate::keys::key;
use crate::store::{get, Store};
use crate::users::User;
use crate::{codec, Error, Result, Secret};
use serde::{Deserialize, Serialize};
use sled::Transactional;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tenant {
    pub id: String,
    pub created_ms: u64,
    /// PKCS#8 of the ES256 key that signs the tenant's access tokens, sealed.
    pub signing_key: Secret,
    /// `kid` of that key in the tenant's JWKS.
    pub key_id: String,
}

pub struct Tenants<'a>(&'a Store);

impl Store {
    pub fn tenants(&self) -> Tenants<'_> {
        Tenants(self)
    }
}

impl Tenants<'_> {
    /// Creates the tenant and its first admin user in one transaction.
    pub fn create(&self, tenant: &Tenant, admin: &User) -> Result<()> {
        let t = self.0.trees()?;
        let tenant_key = key(&[&tenant.id]);
        let tenant_value = codec::encode(tenant)?;
        let user_key = key(&[&tenant.id, &admin.id]);
        let user_value = codec::encode(admin)?;
        let name_key = key(&[&tenant.id, &admin.username]);
        let index_keys = crate::users::index_keys(&tenant.id, admin);
        (&t.tenants, &t.users, &t.users_by_name, &t.user_index).transaction(|(tenants, users, names, index)| {
            if tenants.get(&tenant_key)?.is_some() {
                return abort(Error::Conflict("tenant"));
            }
            tenants.insert(tenant_key.as_slice(), tenant_value.as_slice())?;
            users.insert(user_key.as_slice(), user_value.as_slice())?;
            names.insert(name_key.as_slice(), admin.id.as_bytes())?;
            for k in &index_keys {
                index.insert(k.as_slice(), admin.id.as_bytes())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    pub fn get(&self, id: &str) -> Result<Option<Tenant>> {
        get(&self.0.trees()?.tenants, &key(&[id]))
    }

    pub fn list(&self) -> Result<Vec<Tenant>> {
        self.0.trees()?.tenants.iter().map(|kv| codec::decode(&kv?.1)).collect()
    }
}
