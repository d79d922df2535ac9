//! Typed properties of a user, or of a user's client; unique by name per owner.

use crate::keys::{key, prefix, Key};
use crate::store::Store;
use crate::{codec, Error, Result, Secret, Tx};
use serde::{Deserialize, Serialize};

/// A property's value, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropertyValue {
    /// Stored in clear (encryption `NONE`).
    Plain(String),
    /// `SERVER_SIDE_DB`: sealed at rest.
    Sealed(Secret),
}

/// A typed property of a user, or of one of the user's clients.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    /// The owning user.
    pub user_id: String,
    /// The owning client; `None` for the user's own properties.
    pub client_id: Option<String>,
    /// Unique per owner; the last part of the key.
    pub name: String,
    /// The value's type: `OCTETSTRING`, `INTEGER`, `BOOLEAN`, `UTF8STRING` or `DATE`.
    pub kind: String,
    /// The value, in clear or sealed.
    pub value: PropertyValue,
    /// Whether clients may not change it.
    pub read_only: bool,
    /// Whether a change notifies the owner.
    pub notify: bool,
    /// Whether the client keeps it in its key storage.
    pub in_keystorage: bool,
    /// Client-platform flags (`cpFlags`), one of the values the API accepts.
    pub cp_flags: u32,
    /// Who may see it (`CLIENT`, `INTERNAL`, `EXTERNAL`); `None` for the default.
    pub visibility: Option<Vec<String>>,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
}

/// The owner part of a key: a client id, or `-` for the user's own properties.
fn owner(client: Option<&str>) -> &str {
    client.unwrap_or("-")
}

impl Property {
    /// The sealing context of a sealed property's value.
    pub fn seal_context(tenant: &str, user: &str, client: Option<&str>, name: &str) -> String {
        format!("property/{tenant}/{user}/{}/{name}", owner(client))
    }
}

/// Reads of properties; writes go through [`Tx`].
pub struct Properties<'a>(&'a Store);

impl Store {
    /// The properties of this store.
    pub fn properties(&self) -> Properties<'_> {
        Properties(self)
    }
}

impl Properties<'_> {
    /// The properties of one owner, in name order.
    pub fn list(&self, tenant: &str, user: &str, client: Option<&str>) -> Result<Vec<Property>> {
        self.0
            .trees()?
            .properties
            .scan_prefix(prefix(&[tenant, user, owner(client)]))
            .map(|kv| codec::decode(&kv?.1))
            .collect()
    }

    /// Every property of a user, with or without a client.
    pub fn of_user(&self, tenant: &str, user: &str) -> Result<Vec<Property>> {
        self.0.trees()?.properties.scan_prefix(prefix(&[tenant, user])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// A number that moves on whenever a property of the user is created:
    /// read it before [`Properties::of_user`], and check in the transaction
    /// that deletes them ([`Tx::property_generation`]) that none was created since.
    pub fn generation(&self, tenant: &str, user: &str) -> Result<u64> {
        Ok(crate::store::get(&self.0.trees()?.generations, &generation_key(tenant, user))?.unwrap_or(0))
    }
}

fn property_key(tenant: &str, p: &Property) -> Key {
    key(&[tenant, &p.user_id, owner(p.client_id.as_deref()), &p.name])
}

fn generation_key(tenant: &str, user: &str) -> Key {
    key(&[tenant, "properties", user])
}

impl Tx<'_> {
    /// Stores a new property (`Conflict("property")` when its owner has one
    /// of that name) and moves the user's [`property generation`](Tx::property_generation) on.
    pub fn insert_property(&self, tenant: &str, p: &Property) -> Result<()> {
        let k = property_key(tenant, p);
        if self.has(&self.t.properties, &k)? {
            return Err(Error::Conflict("property"));
        }
        let g = generation_key(tenant, &p.user_id);
        let next = self.get::<u64>(&self.t.generations, &g)?.unwrap_or(0).wrapping_add(1);
        self.put(&self.t.generations, &g, &next)?;
        self.put(&self.t.properties, &k, p)
    }

    /// Removes a property; whether it was there.
    pub fn remove_property(&self, tenant: &str, p: &Property) -> Result<bool> {
        self.remove(&self.t.properties, &property_key(tenant, p))
    }

    /// See [`Properties::generation`].
    pub fn property_generation(&self, tenant: &str, user: &str) -> Result<u64> {
        Ok(self.get(&self.t.generations, &generation_key(tenant, user))?.unwrap_or(0))
    }
}
