//! Device clients: one installation of an app, identified by a ULID.

use crate::keys::key;
use crate::push_tokens::{listed, PushToken};
use crate::store::{get, Store};
use crate::{Error, Result, Tx};
use serde::{Deserialize, Serialize};

/// A registered client: one installation of an app on a device.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Client {
    /// ULID, assigned at registration; the key of its push token and links.
    pub id: String,
    /// The app it is an installation of.
    pub app_name: String,
    /// The device platform as registered (1 to 100 characters).
    pub platform: String,
    /// The app's version on the device, as last reported.
    pub app_version: Option<String>,
    /// The Herald SDK version, as last reported.
    pub sdk_version: Option<String>,
    /// User-facing device name.
    pub device_name: Option<String>,
    /// Device model.
    pub client_device: Option<String>,
    /// Operating-system version of the device.
    pub client_os_version: Option<String>,
    /// Preferred locales, most preferred first.
    pub locales: Vec<String>,
    /// SHA-256 of the client secret (the secret is 256 random bits, so a fast hash suffices).
    pub secret_hash: Vec<u8>,
    /// `NONE` or `LOCKED`.
    pub lock_state: String,
    /// Why it was locked, while `LOCKED`.
    pub lock_reason: Option<String>,
    /// Registration time, ms since the epoch.
    pub created_ms: u64,
    /// Free-text risk flags the client reported (at most 255 characters).
    pub risks: Option<String>,
    /// The client's risk analysis (spec 002 `riskAnalysis`), as JSON text.
    pub risk_analysis: Option<String>,
    /// Outcome of the client's last login attempt, as it reported it.
    pub login_outcome: Option<String>,
    /// Error of that last login attempt, if any.
    pub login_error: Option<String>,
    /// When that last login attempt was made (ms).
    pub last_login_attempt: Option<u64>,
    /// Outcome of the client's last activation attempt, as it reported it.
    pub activation_outcome: Option<String>,
    /// Error of that last activation attempt, if any.
    pub activation_error: Option<String>,
    /// When that last activation attempt was made (ms).
    pub last_activation_attempt: Option<u64>,
    /// When the client last passed a verification (ms).
    pub last_successful_verification: Option<u64>,
    /// When the client last failed a verification (ms).
    pub last_failed_verification: Option<u64>,
    /// Access tokens of this client issued before this time (ms) are refused:
    /// set by a forced disconnect.
    pub not_before_ms: u64,
}

impl Client {
    /// Whether the client is locked (any state but `NONE`): it gets no push and
    /// its token stays out of the broadcast index.
    pub fn is_locked(&self) -> bool {
        self.lock_state != "NONE"
    }
}

/// Reads and seeding of clients; writes go through [`Tx`].
pub struct Clients<'a>(&'a Store);

impl Store {
    /// The client store of this store.
    pub fn clients(&self) -> Clients<'_> {
        Clients(self)
    }
}

impl Clients<'_> {
    /// Stores a new client (`Conflict("client")` if its id is taken).
    pub fn create(&self, tenant: &str, client: &Client) -> Result<()> {
        self.0.transact(|tx| tx.insert_client(tenant, client))
    }

    /// One client; `None` when absent.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Client>> {
        get(&self.0.trees()?.clients, &key(&[tenant, id]))
    }
}

impl Tx<'_> {
    /// One client, read inside the transaction.
    pub fn client(&self, tenant: &str, id: &str) -> Result<Option<Client>> {
        self.get(&self.t.clients, &key(&[tenant, id]))
    }

    /// Whether a client is locked (a client not stored is not): a locked
    /// client's token stays out of the broadcast index.
    pub(crate) fn client_locked(&self, tenant: &str, id: &str) -> Result<bool> {
        Ok(self.client(tenant, id)?.is_some_and(|c| c.is_locked()))
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
        let was_locked = self.client_locked(tenant, &client.id)?;
        self.put(&self.t.clients, &k, client)?;
        if was_locked != client.is_locked() {
            let token = self.get::<PushToken>(&self.t.push_tokens, &k)?;
            let listed = |locked| listed(token.as_ref(), locked);
            self.reindex(tenant, &client.id, listed(was_locked), listed(client.is_locked()))?;
        }
        Ok(())
    }

    /// Deletes a client with its push token; false when there was none.
    pub fn delete_client(&self, tenant: &str, id: &str) -> Result<bool> {
        let Some(client) = self.take::<Client>(&self.t.clients, &key(&[tenant, id]))? else {
            return Ok(false);
        };
        self.remove_token(tenant, id, client.is_locked())?;
        Ok(true)
    }
}
