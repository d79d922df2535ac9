//! Client certificates issued from CSRs by a tenant's signer.
//!
//! Trees: `certificates` ([tenant, certRef] → [`CertRecord`]) and
//! `certificates_by_signer` ([tenant, signer, certRef] → ()), written together.
//! Issuing also counts the certificate on its signer in the same transaction.

use crate::keys::{key, last_part, prefix};
use crate::signers::Signer;
use crate::store::{all_with_tenant, get, Store};
use crate::{codec, Result};
use serde::{Deserialize, Serialize};
use sled::Transactional;

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
    /// Writes the record and its signer index entry (the old entry is moved when the signer changed).
    pub fn put(&self, tenant: &str, c: &CertRecord) -> Result<()> {
        self.put_with(tenant, c, None)
    }

    /// Writes the record and, when given, its signer (the issued counter) in one transaction.
    pub fn put_with(&self, tenant: &str, c: &CertRecord, signer: Option<&Signer>) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[tenant, &c.cert_ref]);
        let value = codec::encode(c)?;
        let index = (!c.signer.is_empty()).then(|| key(&[tenant, &c.signer, &c.cert_ref]));
        let signer = signer.map(|s| Ok::<_, crate::Error>((key(&[tenant, &s.id]), codec::encode(s)?))).transpose()?;
        (&t.certificates, &t.certificates_by_signer, &t.signers).transaction(|(certs, by_signer, signers)| {
            certs.insert(k.as_slice(), value.as_slice())?;
            if let Some(i) = &index {
                by_signer.insert(i.as_slice(), &[] as &[u8])?;
            }
            if let Some((sk, sv)) = &signer {
                signers.insert(sk.as_slice(), sv.as_slice())?;
            }
            Ok(())
        })?;
        Ok(())
    }

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
