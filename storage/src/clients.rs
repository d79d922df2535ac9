//! Device clients: one installation of an app, identified by a ULID.

use crate::codec::{self, Skipped};
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
        self.lock_state != Self::UNLOCKED
    }

    /// The lock state of a client that is not locked.
    const UNLOCKED: &'static str = "NONE";
}

/// What a send and a client's token check need of a client: read from its
/// record without decoding the rest of it (a send reads it every time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientState {
    /// The app it is an installation of.
    pub app_name: String,
    /// Whether it is locked (see [`Client::is_locked`]).
    pub locked: bool,
    /// See [`Client::not_before_ms`].
    pub not_before_ms: u64,
}

/// A stored [`Client`], its strings borrowed from the record and the fields
/// no reader of [`ClientState`] needs read past. postcard reads fields in
/// order, so this lists every field of `Client` in its order, with the same
/// encoding (test `the_state_is_read_from_the_whole_record`).
#[derive(Deserialize)]
struct ClientView<'a> {
    _id: &'a str,
    app_name: &'a str,
    _platform: &'a str,
    #[serde(borrow)]
    _app_version: Option<&'a str>,
    #[serde(borrow)]
    _sdk_version: Option<&'a str>,
    #[serde(borrow)]
    _device_name: Option<&'a str>,
    #[serde(borrow)]
    _client_device: Option<&'a str>,
    #[serde(borrow)]
    _client_os_version: Option<&'a str>,
    #[serde(borrow)]
    _locales: Skipped<&'a str>,
    _secret_hash: Skipped<u8>,
    lock_state: &'a str,
    #[serde(borrow)]
    _lock_reason: Option<&'a str>,
    _created_ms: u64,
    #[serde(borrow)]
    _risks: Option<&'a str>,
    #[serde(borrow)]
    _risk_analysis: Option<&'a str>,
    #[serde(borrow)]
    _login_outcome: Option<&'a str>,
    #[serde(borrow)]
    _login_error: Option<&'a str>,
    _last_login_attempt: Option<u64>,
    #[serde(borrow)]
    _activation_outcome: Option<&'a str>,
    #[serde(borrow)]
    _activation_error: Option<&'a str>,
    _last_activation_attempt: Option<u64>,
    _last_successful_verification: Option<u64>,
    _last_failed_verification: Option<u64>,
    not_before_ms: u64,
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

impl ClientState {
    /// The state of the client stored as `record` (the bytes of a [`Client`]).
    pub(crate) fn of(record: &[u8]) -> Result<ClientState> {
        let view: ClientView = codec::decode(record)?;
        Ok(ClientState {
            app_name: view.app_name.to_owned(),
            locked: view.lock_state != Client::UNLOCKED,
            not_before_ms: view.not_before_ms,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A view that skipped a field wrongly would read `lock_state` or
    /// `not_before_ms` from the wrong bytes, or fail: every field is set here,
    /// with values of more than one byte, then every optional one left out.
    #[test]
    fn the_state_is_read_from_the_whole_record() {
        let some = |s: &str| Some(s.repeat(3));
        let full = Client {
            id: "01HZX".into(),
            app_name: "shop".into(),
            platform: "ios".into(),
            app_version: some("1.2"),
            sdk_version: some("3.4"),
            device_name: some("phone"),
            client_device: some("model"),
            client_os_version: some("17"),
            locales: vec!["de-CH".into(), "fr".into(), "en".into()],
            secret_hash: vec![0xAB; 32],
            lock_state: "LOCKED".into(),
            lock_reason: some("stolen"),
            created_ms: 1_700_000_000_000,
            risks: some("root"),
            risk_analysis: some("{}"),
            login_outcome: some("ok"),
            login_error: some("none"),
            last_login_attempt: Some(u64::MAX),
            activation_outcome: some("ok"),
            activation_error: some("none"),
            last_activation_attempt: Some(1 << 40),
            last_successful_verification: Some(300),
            last_failed_verification: Some(1 << 50),
            not_before_ms: 1_700_000_123_456,
        };
        let bare = Client { id: "c".into(), app_name: "news".into(), lock_state: "NONE".into(), ..Client::default() };
        for (client, locked) in [(&full, true), (&bare, false)] {
            let state = ClientState::of(&codec::encode(client).unwrap()).unwrap();
            assert_eq!(
                state,
                ClientState { app_name: client.app_name.clone(), locked, not_before_ms: client.not_before_ms }
            );
            assert_eq!(client.is_locked(), locked);
        }
    }
}
