//! Tenant signers (intermediate CAs under the engine root) and the engine root CA.
//!
//! Trees: `signers` ([tenant, id] → [`Signer`]) and `pki` (the root CA record
//! under `ROOT_KEY`, and per tenant its generation counter and the root's CRL
//! of the tenant's revoked signers). Signer transitions are decided by one
//! serialized owner per tenant (the engine's PKI authority), so the scans here
//! never race with another transition of the same tenant; the records a
//! transition touches are still written in one transaction.

use crate::keys::{key, prefix};
use crate::store::{all_with_tenant, get, put, Store};
use crate::{codec, Error, Result, Secret};
use serde::{Deserialize, Serialize};

pub const ACTIVE: &str = "ACTIVE";
pub const RETIRED: &str = "RETIRED";
pub const REVOKED: &str = "REVOKED";

/// Certificate status of a signer or a client certificate request.
pub const REQUESTED: &str = "REQUESTED";
pub const ISSUED: &str = "ISSUED";
pub const FAILED: &str = "FAILED";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signer {
    pub id: String,
    pub name: String,
    pub generation: u64,
    /// `ACTIVE`, `RETIRED` or `REVOKED`.
    pub state: String,
    /// Certificate status: `REQUESTED`, `ISSUED` or `FAILED`.
    pub status: String,
    pub failure: Option<String>,
    /// PKCS#8 DER of the P-256 key, sealed; erased on revocation.
    pub key: Option<Secret>,
    /// The current certificate; erased on revocation.
    pub cert_pem: Option<String>,
    /// Hex serials of every certificate issued for this signer (renewals add one).
    pub serials: Vec<String>,
    /// Client certificates issued by it: deletion is refused once non-zero.
    pub issued: u64,
    /// The signer's current CRL (DER) and its number.
    pub crl_der: Option<Vec<u8>>,
    pub crl_number: u64,
    pub created_ms: u64,
    pub updated_ms: u64,
}

impl Signer {
    pub fn key_context(tenant: &str, id: &str) -> String {
        format!("signer/{tenant}/{id}/key")
    }
}

/// The engine's root CA: its certificate and sealed PKCS#8 key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCa {
    pub cert_pem: String,
    pub key: Secret,
}

impl RootCa {
    pub const KEY_CONTEXT: &'static str = "pki/root/key";
}

/// The root's CRL for one tenant's revoked signers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCrl {
    pub number: u64,
    pub der: Vec<u8>,
}

/// Key of the root CA record in the `pki` tree (no tenant is empty).
const ROOT_KEY: &[u8] = b"\0root-ca";

pub struct Signers<'a>(&'a Store);

impl Store {
    pub fn signers(&self) -> Signers<'_> {
        Signers(self)
    }
}

impl Signers<'_> {
    pub fn root(&self) -> Result<Option<RootCa>> {
        get(&self.0.trees()?.pki, ROOT_KEY)
    }

    pub fn put_root(&self, root: &RootCa) -> Result<()> {
        put(&self.0.trees()?.pki, ROOT_KEY, root)
    }

    /// The next generation number of the tenant's signers (1, 2, ...).
    pub fn next_generation(&self, tenant: &str) -> Result<u64> {
        let k = key(&[tenant, "generation"]);
        let n = get::<u64>(&self.0.trees()?.pki, &k)?.unwrap_or(0) + 1;
        put(&self.0.trees()?.pki, &k, &n)?;
        Ok(n)
    }

    pub fn root_crl(&self, tenant: &str) -> Result<Option<RootCrl>> {
        get(&self.0.trees()?.pki, &key(&[tenant, "root-crl"]))
    }

    pub fn put_root_crl(&self, tenant: &str, crl: &RootCrl) -> Result<()> {
        put(&self.0.trees()?.pki, &key(&[tenant, "root-crl"]), crl)
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Signer>> {
        get(&self.0.trees()?.signers, &key(&[tenant, id]))
    }

    pub fn put(&self, tenant: &str, s: &Signer) -> Result<()> {
        put(&self.0.trees()?.signers, &key(&[tenant, &s.id]), s)
    }

    /// The tenant's signers by generation (ULIDs of one millisecond do not sort by creation).
    pub fn list(&self, tenant: &str) -> Result<Vec<Signer>> {
        let mut all: Vec<Signer> = self
            .0
            .trees()?
            .signers
            .scan_prefix(prefix(&[tenant]))
            .map(|kv| codec::decode(&kv?.1))
            .collect::<Result<_>>()?;
        all.sort_by_key(|s| s.generation);
        Ok(all)
    }

    /// Every signer of every tenant, as (tenant, signer): restart recovery.
    pub fn all(&self) -> Result<Vec<(String, Signer)>> {
        all_with_tenant(&self.0.trees()?.signers)
    }

    /// The latest ACTIVE signer.
    pub fn active(&self, tenant: &str) -> Result<Option<Signer>> {
        Ok(self.list(tenant)?.into_iter().rev().find(|s| s.state == ACTIVE))
    }

    /// Inserts a new ACTIVE signer and retires every other ACTIVE one, atomically.
    pub fn activate(&self, tenant: &str, new: &Signer, now: u64) -> Result<()> {
        let mut writes = vec![(key(&[tenant, &new.id]), codec::encode(new)?)];
        for mut old in self.list(tenant)?.into_iter().filter(|s| s.state == ACTIVE && s.id != new.id) {
            old.state = RETIRED.into();
            old.updated_ms = now;
            writes.push((key(&[tenant, &old.id]), codec::encode(&old)?));
        }
        self.0.trees()?.signers.transaction(|tree| {
            for (k, v) in &writes {
                tree.insert(k.as_slice(), v.as_slice())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    pub fn delete(&self, tenant: &str, id: &str) -> Result<()> {
        match self.0.trees()?.signers.remove(key(&[tenant, id]))? {
            Some(_) => Ok(()),
            None => Err(Error::NotFound("signer")),
        }
    }
}
