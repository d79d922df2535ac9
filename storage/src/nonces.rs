//! Nonces for login and TMS actions: single use, expiring.
//!
//! A second tree indexes nonces by expiry time, so the sweeper deletes expired
//! ones with a range scan from the start, never a scan of every nonce.
//!
//! Nonces are keyed by the SHA-256 of their value, not the value: a lookup
//! compares the caller's guess byte by byte with stored keys, and timing that
//! comparison then reveals something about a digest, never about a live nonce.

use crate::keys::{key, Key};
use crate::store::{get, Store};
use crate::{Error, Result, Secret, Tx};
use serde::{Deserialize, Serialize};

/// A single-use nonce issued for a login or TMS action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nonce {
    /// The nonce itself, as handed to the caller; stored under its digest only.
    pub value: String,
    /// `LOGIN_NONCE` or `TMS_NONCE`.
    pub action: String,
    /// The portal session it was issued for, echoed in the login event.
    pub portal_session_id: Option<String>,
    /// When set, only this user may use it.
    pub expected_user_id: Option<String>,
    /// User of a credential the caller attached to the nonce.
    pub credential_user: Option<String>,
    /// Secret of that credential, sealed.
    pub credential_secret: Option<Secret>,
    /// Issue time, ms since the epoch.
    pub created_ms: u64,
    /// Expiry, ms since the epoch; the sweeper deletes it after.
    pub expires_ms: u64,
    /// Set once consumed: a used nonce is refused.
    pub used: bool,
}

/// Reads and the expiry sweep of nonces; writes go through [`Tx`].
pub struct Nonces<'a>(&'a Store);

impl Store {
    /// The nonces of this store.
    pub fn nonces(&self) -> Nonces<'_> {
        Nonces(self)
    }
}

fn expiry_key(expires_ms: u64, tenant: &str, value: &str) -> Key {
    key(&[&format!("{expires_ms:020}"), tenant, &digest(value)])
}

/// The storage key of a nonce value (hex SHA-256).
fn digest(value: &str) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, value.as_bytes()))
}

fn nonce_key(tenant: &str, value: &str) -> Key {
    key(&[tenant, &digest(value)])
}

impl Nonces<'_> {
    /// The nonce of that value (looked up by its digest); `None` when unknown or swept.
    pub fn get(&self, tenant: &str, value: &str) -> Result<Option<Nonce>> {
        get(&self.0.trees()?.nonces, &nonce_key(tenant, value))
    }

    /// Deletes every nonce expired by `now`; returns how many.
    pub fn sweep(&self, now: u64) -> Result<usize> {
        let t = self.0.trees()?;
        let end = format!("{now:020}");
        let mut n: usize = 0;
        for kv in t.nonce_expiry.range_below(end.as_bytes()) {
            let (k, _) = kv?;
            let parts: Vec<&[u8]> = k.split(|b| *b == 0).collect();
            // The expiry key holds the nonce's digest: its storage key.
            if let [_, tenant, digest] = parts.as_slice() {
                t.nonces.remove(key(&[&String::from_utf8_lossy(tenant), &String::from_utf8_lossy(digest)]))?;
            }
            t.nonce_expiry.remove(k)?;
            n = n.saturating_add(1);
        }
        Ok(n)
    }
}

impl Tx<'_> {
    /// The nonce of that value, read inside the transaction.
    pub fn nonce(&self, tenant: &str, value: &str) -> Result<Option<Nonce>> {
        self.get(&self.t.nonces, &nonce_key(tenant, value))
    }

    /// Stores a new nonce with its expiry entry (`Conflict("nonce")` if the value is taken).
    pub fn insert_nonce(&self, tenant: &str, n: &Nonce) -> Result<()> {
        let k = nonce_key(tenant, &n.value);
        if self.has(&self.t.nonces, &k)? {
            return Err(Error::Conflict("nonce"));
        }
        self.put(&self.t.nonces, &k, n)?;
        self.put(&self.t.nonce_expiry, &expiry_key(n.expires_ms, tenant, &n.value), &())
    }

    /// Stores a nonce over its previous record (its expiry does not change).
    pub fn put_nonce(&self, tenant: &str, n: &Nonce) -> Result<()> {
        self.put(&self.t.nonces, &nonce_key(tenant, &n.value), n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_keyed_by_digest_and_still_swept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let n = Nonce {
            value: "live-nonce-value".into(),
            action: "LOGIN_NONCE".into(),
            portal_session_id: None,
            expected_user_id: None,
            credential_user: None,
            credential_secret: None,
            created_ms: 1,
            expires_ms: 1000,
            used: false,
        };
        store.transact(|tx| tx.insert_nonce("acme", &n)).unwrap();
        let t = store.trees().unwrap();
        let keys: Vec<Vec<u8>> =
            t.nonces.iter().chain(t.nonce_expiry.iter()).map(|kv| kv.unwrap().0.to_vec()).collect();
        assert!(keys.iter().all(|k| !String::from_utf8_lossy(k).contains("live-nonce")), "no key holds the value");
        assert_eq!(store.nonces().get("acme", "live-nonce-value").unwrap(), Some(n));
        assert_eq!(store.nonces().get("acme", "live-nonce-valuX").unwrap(), None);
        assert_eq!(store.nonces().sweep(2000).unwrap(), 1);
        assert_eq!(t.nonces.iter().count(), 0, "the sweep found the nonce by its digest");
    }
}
