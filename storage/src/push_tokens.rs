//! Push tokens, one per client, and the index of valid tokens per app that a
//! broadcast streams in key order.

use crate::keys::{key, last_part, prefix};
use crate::store::{get, Store};
use crate::{codec, Result};
use serde::{Deserialize, Serialize};
use sled::transaction::ConflictableTransactionError as TxError;
use sled::Transactional;

/// The provider values of spec 000. Several name the same backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PushProvider {
    Apn,
    Apns,
    Fcm,
    Fcmf,
    Gcm,
    Hpk,
}

impl PushProvider {
    pub const ALL: [PushProvider; 6] = [Self::Apn, Self::Apns, Self::Fcm, Self::Fcmf, Self::Gcm, Self::Hpk];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apn => "APN",
            Self::Apns => "APNS",
            Self::Fcm => "FCM",
            Self::Fcmf => "FCMF",
            Self::Gcm => "GCM",
            Self::Hpk => "HPK",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushToken {
    pub app_name: String,
    pub provider: PushProvider,
    pub token: String,
    pub is_valid: bool,
    pub updated_ms: u64,
}

/// What a send needs of a valid token, as kept in the per-app index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRef {
    pub provider: PushProvider,
    pub token: String,
}

pub struct PushTokens<'a>(&'a Store);

impl Store {
    pub fn push_tokens(&self) -> PushTokens<'_> {
        PushTokens(self)
    }
}

pub(crate) fn index_key(tenant: &str, app: &str, client_id: &str) -> Vec<u8> {
    key(&[tenant, app, client_id])
}

impl PushTokens<'_> {
    /// Stores or replaces a client's token, moving its index entry (a locked
    /// client's token stays out of the index until it is unlocked).
    pub fn set(&self, tenant: &str, client_id: &str, token: &PushToken) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[tenant, client_id]);
        let value = codec::encode(token)?;
        let index_value = codec::encode(&TokenRef { provider: token.provider, token: token.token.clone() })?;
        let new_index = index_key(tenant, &token.app_name, client_id);
        (&t.push_tokens, &t.tokens_by_app, &t.clients).transaction(|(tokens, index, clients)| {
            if let Some(old) = tokens.get(&k)? {
                let old: PushToken = codec::decode(&old).map_err(TxError::Abort)?;
                index.remove(index_key(tenant, &old.app_name, client_id))?;
            }
            tokens.insert(k.as_slice(), value.as_slice())?;
            let locked = match clients.get(&k)? {
                Some(raw) => codec::decode::<crate::clients::Client>(&raw).map_err(TxError::Abort)?.is_locked(),
                None => false,
            };
            if token.is_valid && !locked {
                index.insert(new_index.as_slice(), index_value.as_slice())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Removes a client's token; true when there was one.
    pub fn remove(&self, tenant: &str, client_id: &str) -> Result<bool> {
        let t = self.0.trees()?;
        let k = key(&[tenant, client_id]);
        let removed = (&t.push_tokens, &t.tokens_by_app).transaction(|(tokens, index)| {
            let Some(old) = tokens.remove(k.as_slice())? else {
                return Ok(false);
            };
            let old: PushToken = codec::decode(&old).map_err(TxError::Abort)?;
            index.remove(index_key(tenant, &old.app_name, client_id))?;
            Ok(true)
        })?;
        Ok(removed)
    }

    pub fn get(&self, tenant: &str, client_id: &str) -> Result<Option<PushToken>> {
        get(&self.0.trees()?.push_tokens, &key(&[tenant, client_id]))
    }

    /// Marks the token invalid if the client still holds exactly `token` (it may
    /// have registered a new one since the send); true when something changed.
    pub fn invalidate(&self, tenant: &str, client_id: &str, token: &str, now: u64) -> Result<bool> {
        let t = self.0.trees()?;
        let k = key(&[tenant, client_id]);
        let changed = (&t.push_tokens, &t.tokens_by_app).transaction(|(tokens, index)| {
            let Some(old) = tokens.get(&k)? else { return Ok(false) };
            let mut rec: PushToken = codec::decode(&old).map_err(TxError::Abort)?;
            if rec.token != token || !rec.is_valid {
                return Ok(false);
            }
            rec.is_valid = false;
            rec.updated_ms = now;
            tokens.insert(k.as_slice(), codec::encode(&rec).map_err(TxError::Abort)?)?;
            index.remove(index_key(tenant, &rec.app_name, client_id))?;
            Ok(true)
        })?;
        Ok(changed)
    }

    /// Valid tokens of one app in client-id order, starting after `after`.
    pub fn valid_of_app(
        &self,
        tenant: &str,
        app: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, TokenRef)>> {
        let t = &self.0.trees()?.tokens_by_app;
        let p = prefix(&[tenant, app]);
        let iter = match after {
            Some(c) => {
                let mut start = index_key(tenant, app, c);
                start.push(0); // strictly after
                t.range(start..)
            }
            None => t.range(p.clone()..),
        };
        let mut out = Vec::with_capacity(limit.min(4096));
        for kv in iter {
            let (k, v) = kv?;
            if !k.starts_with(&p) || out.len() == limit {
                break;
            }
            out.push((last_part(&k), codec::decode(&v)?));
        }
        Ok(out)
    }

    pub fn count_valid_of_app(&self, tenant: &str, app: &str) -> usize {
        // A count for metrics and reports: 0 while the database is being reopened.
        self.0.trees().map_or(0, |t| t.tokens_by_app.scan_prefix(prefix(&[tenant, app])).count())
    }
}
