//! Push tokens, one per client, and the index of valid tokens per app that a
//! broadcast streams in key order.

use crate::keys::{key, last_part, prefix, Key};
use crate::store::{get, Store};
use crate::{codec, Result, Tx};
use serde::{Deserialize, Serialize};

/// The provider values of spec 000. Several name the same backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PushProvider {
    /// APNs (the short spelling).
    Apn,
    /// APNs.
    Apns,
    /// Firebase Cloud Messaging.
    Fcm,
    /// FCM (another spelling clients send).
    Fcmf,
    /// Google Cloud Messaging: kept for stored tokens, but no backend delivers to it.
    Gcm,
    /// Huawei Push Kit.
    Hpk,
    /// Web Push: the token is the browser's subscription JSON.
    Web,
}

impl PushProvider {
    /// Every provider value, for parsing and listings.
    pub const ALL: [PushProvider; 7] = [Self::Apn, Self::Apns, Self::Fcm, Self::Fcmf, Self::Gcm, Self::Hpk, Self::Web];

    /// The spec 000 spelling (`APN`, `APNS`, `FCM`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apn => "APN",
            Self::Apns => "APNS",
            Self::Fcm => "FCM",
            Self::Fcmf => "FCMF",
            Self::Gcm => "GCM",
            Self::Hpk => "HPK",
            Self::Web => "WEB",
        }
    }

    /// The provider of a spec 000 spelling (exact, upper-case); `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A client's push token, one per client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushToken {
    /// The client's app: the broadcast index the token is listed under.
    pub app_name: String,
    /// Which provider delivers to it.
    pub provider: PushProvider,
    /// The provider's device token.
    pub token: String,
    /// False once a provider declared it dead: it stays stored but leaves the broadcast index.
    pub is_valid: bool,
    /// Last change, ms since the epoch.
    pub updated_ms: u64,
}

/// What a send needs of a valid token, as kept in the per-app index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRef {
    /// Which provider delivers to it.
    pub provider: PushProvider,
    /// The provider's device token.
    pub token: String,
}

impl TokenRef {
    /// What the index lists of `token`.
    pub(crate) fn of(token: &PushToken) -> TokenRef {
        TokenRef { provider: token.provider, token: token.token.clone() }
    }
}

/// Reads of push tokens and the writes sends make (set, invalidate).
pub struct PushTokens<'a>(&'a Store);

impl Store {
    /// The push tokens of this store.
    pub fn push_tokens(&self) -> PushTokens<'_> {
        PushTokens(self)
    }
}

pub(crate) fn index_key(tenant: &str, app: &str, client_id: &str) -> Key {
    key(&[tenant, app, client_id])
}

impl PushTokens<'_> {
    /// Stores or replaces a client's token (see [`Tx::put_push_token`]).
    pub fn set(&self, tenant: &str, client_id: &str, token: &PushToken) -> Result<()> {
        self.0.transact(|tx| tx.put_push_token(tenant, client_id, token))
    }

    /// Marks the token invalid if the client still holds exactly `token` (it may
    /// have registered a new one since the send); true when something changed.
    pub fn invalidate(&self, tenant: &str, client_id: &str, token: &str, now: u64) -> Result<bool> {
        self.0.transact(|tx| tx.invalidate_push_token(tenant, client_id, token, now))
    }

    /// A client's token; `None` when it has none.
    pub fn get(&self, tenant: &str, client_id: &str) -> Result<Option<PushToken>> {
        get(&self.0.trees()?.push_tokens, &key(&[tenant, client_id]))
    }

    /// Valid tokens of one app in client-id order, starting after `after`.
    pub fn valid_of_app(
        &self,
        tenant: &str,
        app: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, TokenRef)>> {
        let (iter, p) = self.index_after(tenant, app, after)?;
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

    /// Every `n`th client of an app's broadcast index after `after` (the
    /// `n`th, the `2n`th, ...): where a broadcast's partitions end. Reads the
    /// index in order once, holding nothing of it.
    pub fn every_nth_of_app(&self, tenant: &str, app: &str, after: Option<&str>, n: u64) -> Result<Vec<String>> {
        let (iter, p) = self.index_after(tenant, app, after)?;
        let (mut out, mut seen) = (Vec::new(), 0u64);
        for k in iter.keys() {
            let k = k?;
            if !k.starts_with(&p) {
                break;
            }
            seen = seen.saturating_add(1);
            if seen.checked_rem(n.max(1)) == Some(0) {
                out.push(last_part(&k));
            }
        }
        Ok(out)
    }

    /// The app's broadcast index from the client after `after` (from its
    /// first without one), and the app's prefix, where the scan must stop.
    fn index_after(&self, tenant: &str, app: &str, after: Option<&str>) -> Result<(crate::kv::Scan, Key)> {
        let t = &self.0.trees()?.tokens_by_app;
        let p = prefix(&[tenant, app]);
        let iter = match after {
            Some(c) => {
                let mut start = index_key(tenant, app, c);
                start.push(0); // strictly after
                t.range_from(start)
            }
            None => t.range_from(&p),
        };
        Ok((iter, p))
    }

    /// How many push tokens the tenant stores, valid or not: what its
    /// `pushTokens` quota counts (a few keys: see `token_counts`).
    pub fn count_of_tenant(&self, tenant: &str) -> Result<u64> {
        crate::token_counts::sum(&self.0.trees()?.tenant_token_counts, &prefix(&[tenant]))
    }

    /// How many tokens an app's broadcast index holds: what a broadcast
    /// targets (a few keys: see `token_counts`).
    pub fn count_valid_of_app(&self, tenant: &str, app: &str) -> Result<u64> {
        crate::token_counts::sum(&self.0.trees()?.app_token_counts, &prefix(&[tenant, app]))
    }
}

impl Tx<'_> {
    /// [`PushTokens::invalidate`] within a transaction (with its event, say).
    pub fn invalidate_push_token(&self, tenant: &str, client_id: &str, token: &str, now: u64) -> Result<bool> {
        let Some(mut rec) = self.push_token(tenant, client_id)? else { return Ok(false) };
        if rec.token != token || !rec.is_valid {
            return Ok(false);
        }
        rec.is_valid = false;
        rec.updated_ms = now;
        self.put_push_token(tenant, client_id, &rec)?;
        Ok(true)
    }

    /// A client's token, read inside the transaction.
    pub fn push_token(&self, tenant: &str, client_id: &str) -> Result<Option<PushToken>> {
        self.get(&self.t.push_tokens, &key(&[tenant, client_id]))
    }

    /// Stores or replaces a client's token, moving its index entry (a locked
    /// client's token stays out of the index until it is unlocked), and
    /// keeps the counts (see `token_counts`).
    pub fn put_push_token(&self, tenant: &str, client_id: &str, token: &PushToken) -> Result<()> {
        let k = key(&[tenant, client_id]);
        let old = self.get::<PushToken>(&self.t.push_tokens, &k)?;
        if old.is_none() {
            self.count_stored(tenant, client_id, true)?;
        }
        self.put(&self.t.push_tokens, &k, token)?;
        let locked = self.client_locked(tenant, client_id)?;
        self.reindex(tenant, client_id, listed(old.as_ref(), locked), listed(Some(token), locked))
    }

    /// Removes a client's token and its index entry; true when there was one.
    pub fn remove_push_token(&self, tenant: &str, client_id: &str) -> Result<bool> {
        let locked = self.client_locked(tenant, client_id)?;
        self.remove_token(tenant, client_id, locked)
    }

    /// [`Tx::remove_push_token`] of a client whose lock state is known
    /// (one being deleted, whose record is gone).
    pub(crate) fn remove_token(&self, tenant: &str, client_id: &str, locked: bool) -> Result<bool> {
        let Some(old) = self.take::<PushToken>(&self.t.push_tokens, &key(&[tenant, client_id]))? else {
            return Ok(false);
        };
        self.count_stored(tenant, client_id, false)?;
        self.reindex(tenant, client_id, listed(Some(&old), locked), None)?;
        Ok(true)
    }

    /// Moves a client's broadcast index entry from what `before` listed to
    /// what `after` lists (each the token listed, see [`listed`]), keeping
    /// the app counts. Both come from the records, never from the index,
    /// which on sled is written after the transaction (see `index_db`).
    pub(crate) fn reindex(
        &self,
        tenant: &str,
        client_id: &str,
        before: Option<&PushToken>,
        after: Option<&PushToken>,
    ) -> Result<()> {
        let from = before.map(|t| t.app_name.as_str());
        let to = after.map(|t| t.app_name.as_str());
        if let Some(app) = from.filter(|app| to != Some(*app)) {
            self.count_indexed(tenant, app, client_id, false)?;
            self.write_index(tenant, app, client_id, None)?;
        }
        let Some(token) = after else { return Ok(()) };
        match before {
            Some(b) if b.app_name == token.app_name && b.provider == token.provider && b.token == token.token => {
                return Ok(()); // listed as it is
            }
            Some(b) if b.app_name == token.app_name => {} // counted in this app already
            _ => self.count_indexed(tenant, &token.app_name, client_id, true)?,
        }
        self.write_index(tenant, &token.app_name, client_id, Some(&TokenRef::of(token)))
    }
}

/// The token a client's broadcast index entry lists: its token while valid
/// and the client unlocked.
pub(crate) fn listed(token: Option<&PushToken>, locked: bool) -> Option<&PushToken> {
    token.filter(|t| t.is_valid && !locked)
}
