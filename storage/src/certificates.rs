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

/// Status of a certificate revoked after issue (the others are in [`crate::signers`]).
pub const REVOKED: &str = "REVOKED";

/// A client certificate request and, once issued, its certificate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertRecord {
    /// Reference the caller gets at request time; the key of the record.
    pub cert_ref: String,
    /// `REQUESTED`, `ISSUED`, `FAILED` or `REVOKED`.
    pub status: String,
    /// The signer that issued (or will issue) it; empty until chosen.
    pub signer: String,
    /// The user the certificate is for.
    pub user: String,
    /// The client (device) the certificate is for.
    pub client: String,
    /// The certificate profile it is issued with (the engine's one device profile).
    pub profile: String,
    /// The certificate signing request as received (PEM).
    pub csr_pem: String,
    /// The issued certificate (PEM); `None` until issued.
    pub cert_pem: Option<String>,
    /// Hex serial of the issued certificate.
    pub serial: Option<String>,
    /// Why issuance failed, when the status is `FAILED`.
    pub failure: Option<String>,
    /// When the request was stored, ms since the epoch.
    pub requested_ms: u64,
    /// When it was issued (ms); `None` before.
    pub issued_ms: Option<u64>,
    /// When it was revoked (ms); `None` unless revoked.
    pub revoked_ms: Option<u64>,
}

/// Reads of client certificates; writes go through [`Tx`].
pub struct Certificates<'a>(&'a Store);

impl Store {
    /// The certificate store of this store.
    pub fn certificates(&self) -> Certificates<'_> {
        Certificates(self)
    }
}

impl Certificates<'_> {
    /// One request by reference; `None` when absent.
    pub fn get(&self, tenant: &str, cert_ref: &str) -> Result<Option<CertRecord>> {
        get(&self.0.trees()?.certificates, &key(&[tenant, cert_ref]))
    }

    /// Every request of the tenant, in reference order.
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
    /// One request by reference, read inside the transaction.
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
