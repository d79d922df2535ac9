//! Nonces for login and TMS actions: single use, expiring.
//!
//! A second tree indexes nonces by expiry time, so the sweeper deletes expired
//! ones with a range scan from the start, never a scan of every nonce.
//!
//! Nonces are keyed by the SHA-256 of their value, not the value: a lookup
//! compares the caller's guess byte by byte with stored keys, and timing that
//! comparison then reveals something about a digest, never about a live nonce.

use crate::error::abort;
use crate::keys::key;
use crate::store::{get, Store};
use crate::{codec, Error, Result, Secret};
use serde::{Deserialize, Serialize};
use sled::Transactional;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nonce {
    pub value: String,
    /// `LOGIN_NONCE` or `TMS_NONCE`.
    pub action: String,
    pub portal_session_id: Option<String>,
    pub expected_user_id: Option<String>,
    pub credential_user: Option<String>,
    pub credential_secret: Option<Secret>,
    pub created_ms: u64,
    pub expires_ms: u64,
    pub used: bool,
}

/// Why a nonce could not be used.
#[derive(Debug, PartialEq, Eq)]
pub enum UseError {
    Unknown,
    Used,
}

pub struct Nonces<'a>(&'a Store);

impl Store {
    pub fn nonces(&self) -> Nonces<'_> {
        Nonces(self)
    }
}

fn expiry_key(expires_ms: u64, tenant: &str, value: &str) -> Vec<u8> {
    key(&[&format!("{expires_ms:020}"), tenant, &digest(value)])
}

/// The storage key of a nonce value (hex SHA-256).
fn digest(value: &str) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, value.as_bytes()))
}

fn nonce_key(tenant: &str, value: &str) -> Vec<u8> {
    key(&[tenant, &digest(value)])
}

impl Nonces<'_> {
    pub fn create(&self, tenant: &str, n: &Nonce) -> Result<()> {
        let t = self.0.trees()?;
        let k = nonce_key(tenant, &n.value);
        let v = codec::encode(n)?;
        let e = expiry_key(n.expires_ms, tenant, &n.value);
        (&t.nonces, &t.nonce_expiry).transaction(|(nonces, expiry)| {
            if nonces.get(&k)?.is_some() {
                return abort(Error::Conflict("nonce"));
            }
            nonces.insert(k.as_slice(), v.as_slice())?;
            expiry.insert(e.as_slice(), &[][..])?;
            Ok(())
        })?;
        Ok(())
    }

    pub fn get(&self, tenant: &str, value: &str) -> Result<Option<Nonce>> {
        get(&self.0.trees()?.nonces, &nonce_key(tenant, value))
    }

    /// Marks the nonce used, atomically: of two concurrent uses one wins.
    /// An expired nonce counts as unknown.
    pub fn use_once(&self, tenant: &str, value: &str, now: u64) -> Result<std::result::Result<Nonce, UseError>> {
        let t = self.0.trees()?;
        let k = nonce_key(tenant, value);
        let r = t.nonces.transaction(|nonces| {
            let Some(raw) = nonces.get(&k)? else { return Ok(Err(UseError::Unknown)) };
            let mut n: Nonce = codec::decode(&raw).map_err(sled::transaction::ConflictableTransactionError::Abort)?;
            if n.expires_ms <= now {
                return Ok(Err(UseError::Unknown));
            }
            if n.used {
                return Ok(Err(UseError::Used));
            }
            n.used = true;
            nonces.insert(
                k.as_slice(),
                codec::encode(&n).map_err(sled::transaction::ConflictableTransactionError::Abort)?,
            )?;
            Ok(Ok(n))
        })?;
        Ok(r)
    }

    /// Deletes every nonce expired by `now`; returns how many.
    pub fn sweep(&self, now: u64) -> Result<usize> {
        let t = self.0.trees()?;
        let end = format!("{now:020}");
        let mut n = 0;
        for kv in t.nonce_expiry.range(..end.as_bytes()) {
            let (k, _) = kv?;
            let parts: Vec<&[u8]> = k.split(|b| *b == 0).collect();
            // The expiry key holds the nonce's digest: its storage key.
            if let [_, tenant, digest] = parts.as_slice() {
                t.nonces.remove(key(&[&String::from_utf8_lossy(tenant), &String::from_utf8_lossy(digest)]))?;
            }
            t.nonce_expiry.remove(k)?;
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    #[test]
    fn nonces_are_keyed_by_digest_and_still_swept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&StoreOptions::new(dir.path())).unwrap();
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
        store.nonces().create("acme", &n).unwrap();
        let t = store.trees().unwrap();
        let keys: Vec<Vec<u8>> =
            t.nonces.iter().chain(t.nonce_expiry.iter()).map(|kv| kv.unwrap().0.to_vec()).collect();
        assert!(keys.iter().all(|k| !String::from_utf8_lossy(k).contains("live-nonce")), "no key holds the value");
        assert_eq!(store.nonces().get("acme", "live-nonce-value").unwrap(), Some(n));
        assert_eq!(store.nonces().use_once("acme", "live-nonce-valuX", 5).unwrap(), Err(UseError::Unknown));
        assert!(store.nonces().use_once("acme", "live-nonce-value", 5).unwrap().is_ok());
        assert_eq!(store.nonces().sweep(2000).unwrap(), 1);
        assert_eq!(t.nonces.len(), 0, "the sweep found the nonce by its digest");
    }
}
