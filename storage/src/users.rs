//! Users of a tenant's realm, with the username index.

use crate::error::abort;
use crate::keys::key;
use crate::store::{get, Store};
use crate::{codec, Error, Result};
use serde::{Deserialize, Serialize};
use sled::Transactional;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct User {
    /// UUID.
    pub id: String,
    /// Lower-case, unique in the tenant.
    pub username: String,
    pub email: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub enabled: bool,
    pub email_verified: bool,
    pub realm_roles: Vec<String>,
    pub client_roles: BTreeMap<String, Vec<String>>,
    pub groups: Vec<String>,
    pub attributes: BTreeMap<String, Vec<String>>,
    pub required_actions: Vec<String>,
    pub credentials: Vec<Credential>,
    pub created_ms: u64,
    pub not_before: u64,
}

/// A stored credential; for passwords `hash` is an argon2id PHC string.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Credential {
    pub id: String,
    pub kind: String,
    pub hash: String,
    pub created_ms: u64,
}

impl User {
    pub fn password(&self) -> Option<&Credential> {
        self.credentials.iter().find(|c| c.kind == "password")
    }
}

pub struct Users<'a>(&'a Store);

impl Store {
    pub fn users(&self) -> Users<'_> {
        Users(self)
    }
}

impl Users<'_> {
    pub fn create(&self, tenant: &str, user: &User) -> Result<()> {
        let t = self.0.trees();
        let user_key = key(&[tenant, &user.id]);
        let value = codec::encode(user)?;
        let name_key = key(&[tenant, &user.username]);
        (&t.users, &t.users_by_name).transaction(|(users, names)| {
            if names.get(&name_key)?.is_some() {
                return abort(Error::Conflict("user"));
            }
            users.insert(user_key.as_slice(), value.as_slice())?;
            names.insert(name_key.as_slice(), user.id.as_bytes())?;
            Ok(())
        })?;
        Ok(())
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<User>> {
        get(&self.0.trees().users, &key(&[tenant, id]))
    }

    pub fn get_by_name(&self, tenant: &str, username: &str) -> Result<Option<User>> {
        let t = self.0.trees();
        match t.users_by_name.get(key(&[tenant, username]))? {
            Some(id) => get(&t.users, &key(&[tenant, &String::from_utf8_lossy(&id)])),
            None => Ok(None),
        }
    }
}
