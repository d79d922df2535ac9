//! Device clients: one installation of an app, identified by a ULID.

use crate::keys::key;
use crate::store::{get, Store};
use crate::{codec, Error, Result};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Client {
    pub id: String,
    pub app_name: String,
    pub platform: String,
    pub app_version: Option<String>,
    pub sdk_version: Option<String>,
    pub device_name: Option<String>,
    pub client_device: Option<String>,
    pub client_os_version: Option<String>,
    pub locales: Vec<String>,
    /// SHA-256 of the client secret (the secret is 256 random bits, so a fast hash suffices).
    pub secret_hash: Vec<u8>,
    /// `NONE` or `LOCKED`.
    pub lock_state: String,
    pub lock_reason: Option<String>,
    pub created_ms: u64,
}

impl Client {
    pub fn is_locked(&self) -> bool {
        self.lock_state != "NONE"
    }
}

pub struct Clients<'a>(&'a Store);

impl Store {
    pub fn clients(&self) -> Clients<'_> {
        Clients(self)
    }
}

impl Clients<'_> {
    pub fn create(&self, tenant: &str, client: &Client) -> Result<()> {
        let k = key(&[tenant, &client.id]);
        self.0
            .trees()
            .clients
            .compare_and_swap(k, None as Option<&[u8]>, Some(codec::encode(client)?))?
            .map_err(|_| Error::Conflict("client"))
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Client>> {
        get(&self.0.trees().clients, &key(&[tenant, id]))
    }
}
