//! Device clients: one installation of an app, identified by a ULID.

use crate::keys::key;
use crate::push_tokens::PushToken;
use crate::store::{get, Store};
use crate::{Error, Result, Tx};
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
    pub risks: Option<String>,
    /// The client's risk analysis (spec 002 `riskAnalysis`), as JSON text.
    pub risk_analysis: Option<String>,
    pub login_outcome: Option<String>,
    pub login_error: Option<String>,
    pub last_login_attempt: Option<u64>,
    pub activation_outcome: Option<String>,
    pub activation_error: Option<String>,
    pub last_activation_attempt: Option<u64>,
    pub last_successful_verification: Option<u64>,
    pub last_failed_verification: Option<u64>,
    /// Access tokens of this client issued before this time (ms) are refused:
    /// set by a forced disconnect.
    pub not_before_ms: u64,
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
    /// Stores a new client (`Conflict("client")` if its id is taken).
    pub fn create(&self, tenant: &str, client: &Client) -> Result<()> {
        self.0.transact(|tx| tx.insert_client(tenant, client))
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Client>> {
        get(&self.0.trees()?.clients, &key(&[tenant, id]))
    }
}

impl Tx<'_> {
    pub fn client(&self, tenant: &str, id: &str) -> Result<Option<Client>> {
        self.get(&self.t.clients, &key(&[tenant, id]))
    }

    /// Stores a new client (`Conflict("client")` if its id is taken).
    pub fn insert_client(&self, tenant: &str, client: &Client) -> Result<()> {
        let k = key(&[tenant, &client.id]);
        if self.has(&self.t.clients, &k)? {
            return Err(Error::Conflict("client"));
        }
        self.put(&self.t.clients, &k, client)
    }

    /// Stores a client over its previous record. Its lock state decides
    /// whether its push token is in the broadcast index (a locked client
    /// gets no push), so the index entry moves with it.
    pub fn put_client(&self, tenant: &str, client: &Client) -> Result<()> {
        let k = key(&[tenant, &client.id]);
        self.put(&self.t.clients, &k, client)?;
        if let Some(token) = self.get::<PushToken>(&self.t.push_tokens, &k)? {
            self.index_token(tenant, &client.id, &token, client.is_locked())?;
        }
        Ok(())
    }

    /// Deletes a client with its push token; false when there was none.
    pub fn delete_client(&self, tenant: &str, id: &str) -> Result<bool> {
        if !self.remove(&self.t.clients, &key(&[tenant, id]))? {
            return Ok(false);
        }
        self.remove_push_token(tenant, id)?;
        Ok(true)
    }
}
