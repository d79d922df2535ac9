//! Typed properties of a user, or of a user's client; unique by name per owner.

use crate::keys::{key, prefix};
use crate::store::Store;
use crate::{codec, Error, Result, Secret};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropertyValue {
    Plain(String),
    /// `SERVER_SIDE_DB`: sealed at rest.
    Sealed(Secret),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    pub user_id: String,
    pub client_id: Option<String>,
    pub name: String,
    pub kind: String,
    pub value: PropertyValue,
    pub read_only: bool,
    pub notify: bool,
    pub in_keystorage: bool,
    pub cp_flags: u32,
    pub visibility: Option<Vec<String>>,
    pub created_ms: u64,
}

/// The owner part of a key: a client id, or `-` for the user's own properties.
fn owner(client: Option<&str>) -> &str {
    client.unwrap_or("-")
}

impl Property {
    pub fn seal_context(tenant: &str, user: &str, client: Option<&str>, name: &str) -> String {
        format!("property/{tenant}/{user}/{}/{name}", owner(client))
    }
}

pub struct Properties<'a>(&'a Store);

impl Store {
    pub fn properties(&self) -> Properties<'_> {
        Properties(self)
    }
}

impl Properties<'_> {
    pub fn create(&self, tenant: &str, p: &Property) -> Result<()> {
        let k = key(&[tenant, &p.user_id, owner(p.client_id.as_deref()), &p.name]);
        self.0
            .trees()?
            .properties
            .compare_and_swap(k, None as Option<&[u8]>, Some(codec::encode(p)?))?
            .map_err(|_| Error::Conflict("property"))
    }

    /// The properties of one owner, in name order.
    pub fn list(&self, tenant: &str, user: &str, client: Option<&str>) -> Result<Vec<Property>> {
        self.0
            .trees()?
            .properties
            .scan_prefix(prefix(&[tenant, user, owner(client)]))
            .map(|kv| codec::decode(&kv?.1))
            .collect()
    }

    /// Deletes every property of a user, with or without a client.
    pub fn delete_user(&self, tenant: &str, user: &str) -> Result<usize> {
        let t = &self.0.trees()?.properties;
        let mut n = 0;
        for k in t.scan_prefix(prefix(&[tenant, user])).keys() {
            t.remove(k?)?;
            n += 1;
        }
        Ok(n)
    }
}
