//! Client certificates issued from CSRs by a tenant's signer.
//!
//! Trees: `certificates` ([tenant, certRef] → [`CertRecord`]) and
//! `certificates_by_signer` ([tenant, signer, certRef] → ()), written together
//! in a [`Tx`]. What a request may become (issued by the ACTIVE signer,
//! revoked once issued) is decided by the engine (`models::signer`).

use crate::keys::{key, last_part, prefix};
use crate::store::{all_with_tenant, get, Store};
use crate::{codec, Error, Result, Tx};
use serde::{Deserialize, Serialize};

pub const REVOKED: &str = "REVOKED";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertRecord {
    pub cert_ref: String,
    /// `REQUESTED`, `ISSUED`, `FAILED` or `REVOKED`.
    pub status: String,
    /// The signer that issued (or will issue) it; empty until chosen.
    pub signer: String,
    pub user: String,
    pub client: String,
    pub profile: String,
    pub csr_pem: String,
    pub cert_pem: Option<String>,
    /// Hex serial of the issued certificate.
    pub serial: Option<String>,
    pub failure: Option<String>,
    pub requested_ms: u64,
    pub issued_ms: Option<u64>,
    pub revoked_ms: Option<u64>,
}

pub struct Certificates<'a>(&'a Store);

impl Store {
    pub fn certificates(&self) -> Certificates<'_> {
        Certificates(self)
    }
}

impl Certificates<'_> {
    pub fn get(&self, tenant: &str, cert_ref: &str) -> Result<Option<CertRecord>> {
        get(&self.0.trees()?.certificates, &key(&[tenant, cert_ref]))
    }

    pub fn list(&self, tenant: &str) -> Result<Vec<CertRecord>> {
        self.0.trees()?.certificates.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// The certificates of one signer, in request order.
    pub fn of_signer(&self, tenant: &str, signer: &str) -> Result<Vec<CertRecord>> {
        let t = self.0.trees()?;
        let mut out = Vec::new();
        for k in t.certificates_by_signer.scan_prefix(prefix(&[tenant, signer])).keys() {
            if let Some(c) = self.get(tenant, &last_part(&k?))? {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Every request still waiting for issuance, as (tenant, record): restart recovery.
    pub fn pending(&self) -> Result<Vec<(String, CertRecord)>> {
        let all = all_with_tenant::<CertRecord>(&self.0.trees()?.certificates)?;
        Ok(all.into_iter().filter(|(_, c)| c.status == crate::signers::REQUESTED).collect())
    }
}

impl Tx<'_> {
    pub fn certificate(&self, tenant: &str, cert_ref: &str) -> Result<Option<CertRecord>> {
        self.get(&self.t.certificates, &key(&[tenant, cert_ref]))
    }

    /// Stores a new request (`Conflict("certificate request")` if its reference is taken).
    pub fn insert_certificate(&self, tenant: &str, c: &CertRecord) -> Result<()> {
        if self.has(&self.t.certificates, &key(&[tenant, &c.cert_ref]))? {
            return Err(Error::Conflict("certificate request"));
        }
        self.put_certificate(tenant, c)
    }

    /// Stores a request over its previous record; its entry in the signer
    /// index follows its signer (none while no signer is chosen).
    pub fn put_certificate(&self, tenant: &str, c: &CertRecord) -> Result<()> {
        let k = key(&[tenant, &c.cert_ref]);
        if let Some(old) = self.get::<CertRecord>(&self.t.certificates, &k)? {
            if !old.signer.is_empty() && old.signer != c.signer {
                self.remove(&self.t.certificates_by_signer, &key(&[tenant, &old.signer, &c.cert_ref]))?;
            }
        }
        if !c.signer.is_empty() {
            self.put(&self.t.certificates_by_signer, &key(&[tenant, &c.signer, &c.cert_ref]), &())?;
        }
        self.put(&self.t.certificates, &k, c)
    }
}
