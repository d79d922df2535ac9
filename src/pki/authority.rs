//! Signers (certificate authorities per tenant) and the certificates they issue:
//! the engine root, the cryptography of signer and client certificates and
//! CRLs, and the issuance queue.
//!
//! Nothing here writes storage. Each transition of a tenant's signers and
//! certificate requests is an operation of [`crate::ops::signers`], one
//! transaction each; what is slow (a key generated, a certificate or a CRL
//! signed) is made here before that transaction, which then checks that what
//! the work was based on is still current. Issuance runs in a task after the
//! 202 answer and acts only on a record still `REQUESTED`, so queued work,
//! restarts and races converge.

use super::root::Root;
use super::{crl, csr, issue, jws, keys};
use crate::error::{ApiError, ApiResult};
use crate::models::signer::SignerCertificate;
use herald_storage::certificates::CertRecord;
use herald_storage::signers::{Signer, ISSUED, REQUESTED, REVOKED};
use herald_storage::{now_ms, Store};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How long an issuance waits for another holding its lease.
const LEASE_WAIT: Duration = Duration::from_secs(10);

/// How often it looks meanwhile.
const LEASE_POLL: Duration = Duration::from_millis(50);

/// Lifetime of a signer certificate (capped by the root's).
const SIGNER_VALIDITY: Duration = Duration::from_secs(5 * 365 * 86_400);

/// The engine's certificate authority: the root, and through the store the
/// tenants' signers, client certificates and CRLs.
pub struct Authority {
    store: Store,
    root: Root,
    client_validity: Duration,
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "pki failure");
    ApiError::internal("certificate authority failure")
}

pub fn precondition(message: impl Into<String>) -> ApiError {
    ApiError::new(http::StatusCode::PRECONDITION_FAILED, message)
}

impl Authority {
    /// An authority over `root`, issuing client certificates valid for `client_validity`.
    pub fn new(store: Store, root: Root, client_validity: Duration) -> Arc<Authority> {
        Arc::new(Authority { store, root, client_validity })
    }

    /// The root CA every signer chains to.
    pub fn root(&self) -> &Root {
        &self.root
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Queues the issuance of everything left `REQUESTED` by a previous run.
    pub fn recover(self: &Arc<Self>) -> Result<(), String> {
        for (tenant, s) in self.store.signers().all().map_err(|e| e.to_string())? {
            if s.status == REQUESTED && s.state != REVOKED {
                self.spawn_signer(&tenant, &s.id);
            }
        }
        for (tenant, c) in self.store.certificates().pending().map_err(|e| e.to_string())? {
            self.spawn_client(&tenant, &c.cert_ref);
        }
        Ok(())
    }

    /// A signer by `signerSpec`: a ULID of the tenant or `current` (the latest ACTIVE one).
    pub fn resolve(&self, tenant: &str, spec: &str) -> ApiResult<Signer> {
        if spec == "current" {
            return self
                .store
                .signers()
                .active(tenant)?
                .ok_or_else(|| ApiError::not_found("the tenant has no ACTIVE signer"));
        }
        crate::models::validate::ulid("signerSpec", spec)?;
        self.store.signers().get(tenant, spec)?.ok_or_else(|| ApiError::not_found(format!("signer {spec} not found")))
    }

    /// The leaf-to-root chain of a signer certificate (PEM).
    pub fn chain(&self, s: &Signer) -> ApiResult<Vec<String>> {
        match &s.cert_pem {
            Some(pem) if s.state != REVOKED => Ok(vec![pem.clone(), self.root.cert_pem.clone()]),
            _ => Err(precondition(format!("the certificate of signer {} is not issued ({})", s.id, s.status))),
        }
    }

    /// A compact JWS over `payload`, signed by the ACTIVE signer with its chain in `x5c`.
    pub fn sign_json(&self, tenant: &str, payload: &Value) -> ApiResult<String> {
        let s = self.store.signers().active(tenant)?.ok_or_else(|| precondition("the tenant has no ACTIVE signer"))?;
        let (Some(pem), Some(sealed), ISSUED) = (&s.cert_pem, &s.key, s.status.as_str()) else {
            return Err(precondition(format!("the certificate of signer {} is not issued ({})", s.id, s.status)));
        };
        let pkcs8 = self.store.unseal(sealed, &Signer::key_context(tenant, &s.id))?;
        let leaf = super::pem_der(pem, "CERTIFICATE").map_err(internal)?;
        jws::sign(&pkcs8, &[leaf, self.root.cert_der.clone()], payload).map_err(internal)
    }

    /// Issues the signer's certificate in a task ([`crate::ops::signers::issue_signer`]).
    pub(crate) fn spawn_signer(self: &Arc<Self>, tenant: &str, id: &str) {
        let (me, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
        tokio::spawn(async move {
            let Some(lease) = me.lease(&format!("signer/{tenant}/{id}")).await else { return };
            if let Err(e) = crate::ops::signers::issue_signer(&me, &tenant, &id) {
                tracing::error!(tenant, signer = id, error = %e, "signer issuance failed");
            }
            let _ = me.store.durable().await;
            let _ = me.store.leases().release(&lease);
        });
    }

    /// Issues a requested client certificate in a task ([`crate::ops::signers::issue_certificate`]).
    pub(crate) fn spawn_client(self: &Arc<Self>, tenant: &str, cert_ref: &str) {
        let (me, tenant, cert_ref) = (self.clone(), tenant.to_string(), cert_ref.to_string());
        tokio::spawn(async move {
            let Some(lease) = me.lease(&format!("certificate/{tenant}/{cert_ref}")).await else { return };
            if let Err(e) = crate::ops::signers::issue_certificate(&me, &tenant, &cert_ref).await {
                tracing::error!(tenant, cert_ref, error = %e, "certificate issuance failed");
            }
            let _ = me.store.leases().release(&lease);
        });
    }

    /// The lease of one issuance: among engines sharing a database one
    /// issues at a time. A lease held is waited for, up to
    /// [`LEASE_WAIT`]: its holder is usually finishing the issuance before
    /// (a reissue right after an issue), and this one then issues again if
    /// the record still asks for it. Past that (`None`), or when its holder
    /// dies mid-way, [`Authority::recover`] takes it up.
    async fn lease(&self, name: &str) -> Option<herald_storage::leases::Lease> {
        let deadline = tokio::time::Instant::now().checked_add(LEASE_WAIT)?;
        loop {
            match self.store.leases().acquire(name) {
                Ok(Some(lease)) => return Some(lease),
                Ok(None) if tokio::time::Instant::now() < deadline => tokio::time::sleep(LEASE_POLL).await,
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!(lease = name, error = %e, "could not take an issuance's lease; recovery retries it");
                    return None;
                }
            }
        }
    }

    /// A certificate for the signer's key (generated and sealed the first
    /// time), issued by the root, with the signer's next CRL over `revoked`
    /// (serial, revocation ms) signed with it. Writes nothing.
    pub(crate) fn signer_certificate(
        &self,
        tenant: &str,
        s: &Signer,
        revoked: &[(String, u64)],
    ) -> Result<SignerCertificate, String> {
        let context = Signer::key_context(tenant, &s.id);
        let (pkcs8, new_key) = match &s.key {
            Some(sealed) => (self.store.unseal(sealed, &context).map_err(|e| e.to_string())?, None),
            None => {
                let pkcs8 = keys::generate_p256()?;
                let sealed = self.store.seal(&pkcs8, &context).map_err(|e| e.to_string())?;
                (pkcs8, Some(sealed))
            }
        };
        let key = keys::signing_key(&pkcs8)?;
        let now = now_ms();
        let until = now.saturating_add(SIGNER_VALIDITY.as_millis() as u64).min(self.root.not_after_ms());
        let issued = issue::signer(&self.root.issuer()?, &key, tenant, &s.name, now, until)?;
        let issuer = rcgen::Issuer::from_ca_cert_pem(&issued.pem, &key).map_err(|e| e.to_string())?;
        let number = crate::models::signer::next_crl_number(s);
        let crl_der = crl::build(&issuer, number, revoked, now)?;
        Ok(SignerCertificate { new_key, cert_pem: issued.pem, serial: issued.serial, crl_der })
    }

    /// A client certificate for the request's key, issued by `s`. Writes nothing.
    pub(crate) fn client_certificate(&self, tenant: &str, c: &CertRecord, s: &Signer) -> Result<issue::Issued, String> {
        let csr = csr::verify(&c.csr_pem)?;
        let (Some(pem), Some(sealed)) = (&s.cert_pem, &s.key) else {
            return Err(format!("signer {} has no certificate", s.id));
        };
        let pkcs8 = self.store.unseal(sealed, &Signer::key_context(tenant, &s.id)).map_err(|e| e.to_string())?;
        let key = keys::signing_key(&pkcs8)?;
        let issuer = rcgen::Issuer::from_ca_cert_pem(pem, &key).map_err(|e| e.to_string())?;
        let now = now_ms();
        issue::client(
            &issuer,
            &csr.spki_der,
            tenant,
            &c.client,
            now,
            now.saturating_add(self.client_validity.as_millis() as u64),
        )
    }

    /// The signer's CRL number `number` over `revoked` (serial, revocation ms). Writes nothing.
    pub(crate) fn signer_crl(
        &self,
        tenant: &str,
        s: &Signer,
        number: u64,
        revoked: &[(String, u64)],
    ) -> ApiResult<Vec<u8>> {
        let (Some(pem), Some(sealed)) = (&s.cert_pem, &s.key) else {
            return Err(precondition(format!("signer {} has no certificate", s.id)));
        };
        let pkcs8 = self.store.unseal(sealed, &Signer::key_context(tenant, &s.id))?;
        let key = keys::signing_key(&pkcs8).map_err(internal)?;
        let issuer = rcgen::Issuer::from_ca_cert_pem(pem, &key).map_err(internal)?;
        crl::build(&issuer, number, revoked, now_ms()).map_err(internal)
    }

    /// The root's CRL number `number` of a tenant's revoked signers' serials. Writes nothing.
    pub(crate) fn root_crl(&self, number: u64, revoked: &[(String, u64)]) -> ApiResult<Vec<u8>> {
        crl::build(&self.root.issuer().map_err(internal)?, number, revoked, now_ms()).map_err(internal)
    }
}
