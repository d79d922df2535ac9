//! Device clients: one installation of an app, identified by a ULID.

use crate::error::abort;
use crate::keys::key;
use crate::push_tokens::{index_key, PushToken, TokenRef};
use crate::store::{get, Store};
use crate::{codec, Error, Result};
use serde::{Deserialize, Serialize};
use sled::transaction::ConflictableTransactionError as TxError;
use sled::Transactional;

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
    pub fn create(&self, tenant: &str, client: &Client) -> Result<()> {
        let k = key(&[tenant, &client.id]);
        self.0
            .trees()?
            .clients
            .compare_and_swap(k, None as Option<&[u8]>, Some(codec::encode(client)?))?
            .map_err(|_| Error::Conflict("client"))
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Client>> {
        get(&self.0.trees()?.clients, &key(&[tenant, id]))
    }

    /// Changes a client in one transaction: `change` is applied to the record
    /// as stored at that moment (it may run again if the transaction retries,
    /// so it must only compute), and may refuse with its own error, which is
    /// answered inside `Ok`. Concurrent changes of other fields are kept: no
    /// read-then-write window. `NotFound("client")` when absent.
    pub fn update<E>(
        &self,
        tenant: &str,
        id: &str,
        change: impl Fn(&mut Client) -> std::result::Result<(), E>,
    ) -> Result<std::result::Result<Client, E>> {
        let t = self.0.trees()?;
        let k = key(&[tenant, id]);
        let done = (&t.clients, &t.push_tokens, &t.tokens_by_app).transaction(|(clients, tokens, index)| {
            let Some(raw) = clients.get(&k)? else { return abort(Error::NotFound("client")) };
            let mut client: Client = codec::decode(&raw).map_err(TxError::Abort)?;
            if let Err(refused) = change(&mut client) {
                return Ok(Err(refused));
            }
            client.id = id.to_string();
            // Its lock state decides whether its push token is in the
            // broadcast index (a locked client gets no push).
            clients.insert(k.as_slice(), codec::encode(&client).map_err(TxError::Abort)?)?;
            if let Some(raw) = tokens.get(&k)? {
                let token: PushToken = codec::decode(&raw).map_err(TxError::Abort)?;
                let ik = index_key(tenant, &token.app_name, id);
                if token.is_valid && !client.is_locked() {
                    let r = TokenRef { provider: token.provider, token: token.token };
                    index.insert(ik, codec::encode(&r).map_err(TxError::Abort)?)?;
                } else {
                    index.remove(ik)?;
                }
            }
            Ok(Ok(client))
        })?;
        Ok(done)
    }

    /// Deletes a client with its push token, only if no link was made to it
    /// since its [`Links::generation`](crate::links::Links::generation) was
    /// `generation`: false (nothing deleted) when one was. `NotFound("client")`
    /// when absent.
    pub fn delete_if_unlinked_since(&self, tenant: &str, id: &str, generation: u64) -> Result<bool> {
        let t = self.0.trees()?;
        let k = key(&[tenant, id]);
        let deleted = (&t.clients, &t.push_tokens, &t.tokens_by_app, &t.link_generations).transaction(
            |(clients, tokens, index, generations)| {
                if crate::links::tx_generation(generations, &k)? != generation {
                    return Ok(false);
                }
                if clients.remove(k.as_slice())?.is_none() {
                    return abort(Error::NotFound("client"));
                }
                if let Some(raw) = tokens.remove(k.as_slice())? {
                    let token: PushToken = codec::decode(&raw).map_err(TxError::Abort)?;
                    index.remove(index_key(tenant, &token.app_name, id))?;
                }
                Ok(true)
            },
        )?;
        Ok(deleted)
    }

    /// Deletes a client with its push token.
    pub fn delete(&self, tenant: &str, id: &str) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[tenant, id]);
        (&t.clients, &t.push_tokens, &t.tokens_by_app).transaction(|(clients, tokens, index)| {
            if clients.remove(k.as_slice())?.is_none() {
                return abort(Error::NotFound("client"));
            }
            if let Some(raw) = tokens.remove(k.as_slice())? {
                let token: PushToken = codec::decode(&raw).map_err(TxError::Abort)?;
                index.remove(index_key(tenant, &token.app_name, id))?;
            }
            Ok(())
        })?;
        Ok(())
    }
}
