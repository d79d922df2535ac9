//! The single serialized owner of each tenant's signers and certificate
//! requests. Every transition of a tenant (create, renew, revoke, delete,
//! issuance) runs under that tenant's async mutex, so two concurrent creates
//! can never leave two ACTIVE signers. Issuance runs in a task after the 202
//! answer; the issuing functions are idempotent (they act only on a record
//! still `REQUESTED`), so queued work, restarts and races converge.

use super::root::Root;
use super::{crl, csr, issue, jws, keys};
use crate::error::{ApiError, ApiResult};
use dashmap::DashMap;
use herald_actors::webhooks::EventBus;
use herald_storage::certificates::{self, CertRecord};
use herald_storage::signers::{RootCrl, Signer, ACTIVE, FAILED, ISSUED, REQUESTED, REVOKED};
use herald_storage::{now_ms, Store};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// Lifetime of a signer certificate (capped by the root's).
const SIGNER_VALIDITY: Duration = Duration::from_secs(5 * 365 * 86_400);

pub struct Authority {
    store: Store,
    root: Root,
    events: Arc<EventBus>,
    client_validity: Duration,
    locks: DashMap<String, Arc<Mutex<()>>>,
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "pki failure");
    ApiError::internal("certificate authority failure")
}

pub fn precondition(message: impl Into<String>) -> ApiError {
    ApiError::new(http::StatusCode::PRECONDITION_FAILED, message)
}

impl Authority {
    pub fn new(store: Store, root: Root, events: Arc<EventBus>, client_validity: Duration) -> Arc<Authority> {
        Arc::new(Authority { store, root, events, client_validity, locks: DashMap::new() })
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    async fn lock(&self, tenant: &str) -> OwnedMutexGuard<()> {
        let m = self.locks.entry(tenant.to_string()).or_default().clone();
        m.lock_owned().await
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

    /// Creates a new ACTIVE signer (the previous ACTIVE one is RETIRED) and queues its certificate.
    /// With `only_if_none` (the deprecated v1 form) an existing ACTIVE signer is a conflict.
    pub async fn create(self: &Arc<Self>, tenant: &str, name: Option<String>, only_if_none: bool) -> ApiResult<Signer> {
        let guard = self.lock(tenant).await;
        if only_if_none && self.store.signers().active(tenant)?.is_some() {
            return Err(ApiError::conflict("the tenant already has a signer"));
        }
        let generation = self.store.signers().next_generation(tenant)?;
        let now = now_ms();
        let signer = Signer {
            id: ulid::Ulid::generate().to_string(),
            name: name.unwrap_or_else(|| format!("{tenant}-signer-{generation}")),
            generation,
            state: ACTIVE.into(),
            status: REQUESTED.into(),
            failure: None,
            key: None,
            cert_pem: None,
            serials: Vec::new(),
            issued: 0,
            crl_der: None,
            crl_number: 0,
            created_ms: now,
            updated_ms: now,
        };
        self.store.signers().activate(tenant, &signer, now)?;
        self.events.emit(
            tenant,
            "signer",
            "SIGNER_CREATED",
            json!({ "signerId": signer.id, "name": signer.name, "generation": generation }),
        );
        drop(guard);
        self.store.durable().await?;
        self.spawn_signer(tenant, &signer.id);
        Ok(signer)
    }

    /// Queues a new certificate for the signer's existing key.
    pub async fn renew(self: &Arc<Self>, tenant: &str, spec: &str, ignore_not_issued: bool) -> ApiResult<Signer> {
        let guard = self.lock(tenant).await;
        let mut s = self.resolve(tenant, spec)?;
        if s.state == REVOKED {
            return Err(precondition("a revoked signer cannot be renewed"));
        }
        if s.status != ISSUED && !ignore_not_issued {
            return Err(precondition(format!(
                "the signer certificate is {} (ignoreNotIssued renews anyway)",
                s.status
            )));
        }
        s.status = REQUESTED.into();
        s.failure = None;
        s.updated_ms = now_ms();
        self.store.signers().put(tenant, &s)?;
        drop(guard);
        self.store.durable().await?;
        self.spawn_signer(tenant, &s.id);
        Ok(s)
    }

    /// Deletes a signer that has issued no client certificate.
    pub async fn delete(&self, tenant: &str, spec: &str) -> ApiResult<()> {
        let _guard = self.lock(tenant).await;
        let s = self.resolve(tenant, spec)?;
        if s.issued > 0 {
            return Err(ApiError::conflict(format!(
                "signer {} has issued {} certificate(s): replace or revoke it instead",
                s.id, s.issued
            )));
        }
        self.store.signers().delete(tenant, &s.id)?;
        self.store.durable().await?;
        Ok(())
    }

    /// Erases the signer's certificate and key and lists its serials in the root's CRL.
    pub async fn revoke(&self, tenant: &str, spec: &str) -> ApiResult<Signer> {
        let _guard = self.lock(tenant).await;
        let mut s = self.resolve(tenant, spec)?;
        if s.state != REVOKED {
            s.state = REVOKED.into();
            s.cert_pem = None;
            s.key = None;
            s.crl_der = None;
            s.updated_ms = now_ms();
            self.store.signers().put(tenant, &s)?;
            self.rebuild_root_crl(tenant)?;
            self.events.emit(
                tenant,
                "signer",
                "SIGNER_REVOKED",
                json!({ "signerId": s.id, "name": s.name, "serials": s.serials }),
            );
        }
        self.store.durable().await?;
        Ok(s)
    }

    /// The leaf-to-root chain of a signer certificate (PEM).
    pub fn chain(&self, s: &Signer) -> ApiResult<Vec<String>> {
        match &s.cert_pem {
            Some(pem) if s.state != REVOKED => Ok(vec![pem.clone(), self.root.cert_pem.clone()]),
            _ => Err(precondition(format!("the certificate of signer {} is not issued ({})", s.id, s.status))),
        }
    }

    /// The signer's CRL (DER); `root` names the root's CRL of the tenant's revoked signers.
    pub async fn crl(&self, tenant: &str, spec: &str) -> ApiResult<Vec<u8>> {
        let _guard = self.lock(tenant).await;
        if spec == "root" {
            return match self.store.signers().root_crl(tenant)? {
                Some(c) => Ok(c.der),
                None => self.rebuild_root_crl(tenant),
            };
        }
        let mut s = self.resolve(tenant, spec)?;
        if let Some(der) = &s.crl_der {
            return Ok(der.clone());
        }
        if s.state == REVOKED || s.cert_pem.is_none() {
            return Err(precondition(format!("signer {} has no certificate to sign a CRL with", s.id)));
        }
        self.rebuild_signer_crl(tenant, &mut s)?;
        self.store.signers().put(tenant, &s)?;
        self.store.durable().await?;
        Ok(s.crl_der.unwrap_or_default())
    }

    /// Verifies the CSR and records a request for the ACTIVE signer to fulfil.
    pub async fn request_certificate(
        self: &Arc<Self>,
        tenant: &str,
        client: &str,
        csr_pem: &str,
    ) -> ApiResult<CertRecord> {
        csr::verify(csr_pem).map_err(|e| ApiError::field("csr", e))?;
        let user = self.store.links().user_ids_of_client(tenant, client)?.into_iter().next().unwrap_or_default();
        let guard = self.lock(tenant).await;
        if self.store.signers().active(tenant)?.is_none() {
            return Err(precondition("the tenant has no ACTIVE signer"));
        }
        let c = CertRecord {
            cert_ref: ulid::Ulid::generate().to_string(),
            status: REQUESTED.into(),
            // Chosen at issuance: the signer ACTIVE then.
            signer: String::new(),
            user,
            client: client.to_string(),
            profile: issue::AST_DEVICE.into(),
            csr_pem: csr_pem.to_string(),
            cert_pem: None,
            serial: None,
            failure: None,
            requested_ms: now_ms(),
            issued_ms: None,
            revoked_ms: None,
        };
        self.store.certificates().put(tenant, &c)?;
        drop(guard);
        self.store.durable().await?;
        self.spawn_client(tenant, &c.cert_ref);
        Ok(c)
    }

    /// Revokes an issued client certificate: erased, and listed in its signer's CRL.
    pub async fn revoke_certificate(&self, tenant: &str, cert_ref: &str) -> ApiResult<CertRecord> {
        let _guard = self.lock(tenant).await;
        let mut c = self
            .store
            .certificates()
            .get(tenant, cert_ref)?
            .ok_or_else(|| ApiError::not_found(format!("certificate request {cert_ref} not found")))?;
        if c.status == certificates::REVOKED {
            return Ok(c);
        }
        if c.status != ISSUED {
            return Err(precondition(format!("certificate request {cert_ref} is {}", c.status)));
        }
        c.status = certificates::REVOKED.into();
        c.cert_pem = None;
        c.revoked_ms = Some(now_ms());
        let signer = match self.store.signers().get(tenant, &c.signer)? {
            Some(mut s) if s.state != REVOKED && s.key.is_some() => {
                self.store.certificates().put(tenant, &c)?;
                self.rebuild_signer_crl(tenant, &mut s)?;
                Some(s)
            }
            _ => None,
        };
        self.store.certificates().put_with(tenant, &c, signer.as_ref())?;
        self.store.durable().await?;
        Ok(c)
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

    fn spawn_signer(self: &Arc<Self>, tenant: &str, id: &str) {
        let (me, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
        tokio::spawn(async move {
            let guard = me.lock(&tenant).await;
            if let Err(e) = me.issue_signer(&tenant, &id) {
                tracing::error!(tenant, signer = id, error = %e, "signer issuance failed");
            }
            drop(guard);
            let _ = me.store.durable().await;
        });
    }

    fn spawn_client(self: &Arc<Self>, tenant: &str, cert_ref: &str) {
        let (me, tenant, cert_ref) = (self.clone(), tenant.to_string(), cert_ref.to_string());
        tokio::spawn(async move {
            let guard = me.lock(&tenant).await;
            if let Err(e) = me.issue_client(&tenant, &cert_ref) {
                tracing::error!(tenant, cert_ref, error = %e, "certificate issuance failed");
            }
            drop(guard);
            let _ = me.store.durable().await;
        });
    }

    /// Issues the certificate of a `REQUESTED` signer (generating its key the first
    /// time); a failure leaves it `FAILED` with the reason. Caller holds the lock.
    fn issue_signer(&self, tenant: &str, id: &str) -> Result<Option<Signer>, String> {
        let Some(mut s) = self.store.signers().get(tenant, id).map_err(|e| e.to_string())? else {
            return Ok(None); // deleted meanwhile
        };
        if s.status != REQUESTED || s.state == REVOKED {
            return Ok(Some(s));
        }
        match self.sign_signer(tenant, &mut s) {
            Ok(()) => {
                s.status = ISSUED.into();
                s.failure = None;
            }
            Err(e) => {
                s.status = FAILED.into();
                s.failure = Some(e);
            }
        }
        s.updated_ms = now_ms();
        self.store.signers().put(tenant, &s).map_err(|e| e.to_string())?;
        Ok(Some(s))
    }

    fn sign_signer(&self, tenant: &str, s: &mut Signer) -> Result<(), String> {
        let context = Signer::key_context(tenant, &s.id);
        let pkcs8 = match &s.key {
            Some(sealed) => self.store.unseal(sealed, &context).map_err(|e| e.to_string())?,
            None => {
                let pkcs8 = keys::generate_p256()?;
                s.key = Some(self.store.seal(&pkcs8, &context).map_err(|e| e.to_string())?);
                pkcs8
            }
        };
        let key = keys::signing_key(&pkcs8)?;
        let now = now_ms();
        let until = (now + SIGNER_VALIDITY.as_millis() as u64).min(self.root.not_after_ms());
        let issued = issue::signer(&self.root.issuer()?, &key, tenant, &s.name, now, until)?;
        s.cert_pem = Some(issued.pem);
        s.serials.push(issued.serial);
        self.rebuild_signer_crl(tenant, s).map_err(|e| e.message)
    }

    /// Issues a `REQUESTED` client certificate with the ACTIVE signer. Caller holds the lock.
    fn issue_client(&self, tenant: &str, cert_ref: &str) -> Result<(), String> {
        let store = &self.store;
        let Some(mut c) = store.certificates().get(tenant, cert_ref).map_err(|e| e.to_string())? else {
            return Ok(());
        };
        if c.status != REQUESTED {
            return Ok(());
        }
        let outcome = match store.signers().active(tenant).map_err(|e| e.to_string())? {
            None => Err("the tenant has no ACTIVE signer".to_string()),
            // The signer's own issuance may still be queued behind this request.
            Some(s) => match self.issue_signer(tenant, &s.id)? {
                Some(s) if s.status == ISSUED => self.sign_client(tenant, &c, &s).map(|i| (i, s)),
                Some(s) => Err(format!("signer {} is {}: {}", s.id, s.status, s.failure.unwrap_or_default())),
                None => Err("the ACTIVE signer disappeared".to_string()),
            },
        };
        match outcome {
            Ok((issued, mut s)) => {
                s.issued += 1;
                c.signer = s.id.clone();
                c.status = ISSUED.into();
                c.cert_pem = Some(issued.pem);
                c.serial = Some(issued.serial.clone());
                c.issued_ms = Some(now_ms());
                store.certificates().put_with(tenant, &c, Some(&s)).map_err(|e| e.to_string())?;
                self.events.emit(
                    tenant,
                    "signer",
                    "CERTIFICATE_ISSUED",
                    json!({ "certRef": c.cert_ref, "signerId": s.id, "astClientId": c.client, "userId": c.user,
                            "certProfile": c.profile, "serialNumber": issued.serial }),
                );
            }
            Err(e) => {
                c.status = FAILED.into();
                c.failure = Some(e);
                store.certificates().put(tenant, &c).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    fn sign_client(&self, tenant: &str, c: &CertRecord, s: &Signer) -> Result<issue::Issued, String> {
        let csr = csr::verify(&c.csr_pem)?;
        let (Some(pem), Some(sealed)) = (&s.cert_pem, &s.key) else {
            return Err(format!("signer {} has no certificate", s.id));
        };
        let pkcs8 = self.store.unseal(sealed, &Signer::key_context(tenant, &s.id)).map_err(|e| e.to_string())?;
        let key = keys::signing_key(&pkcs8)?;
        let issuer = rcgen::Issuer::from_ca_cert_pem(pem, &key).map_err(|e| e.to_string())?;
        let now = now_ms();
        issue::client(&issuer, &csr.spki_der, tenant, &c.client, now, now + self.client_validity.as_millis() as u64)
    }

    /// Re-signs the signer's CRL over its revoked client certificates (the caller stores the signer).
    fn rebuild_signer_crl(&self, tenant: &str, s: &mut Signer) -> ApiResult<()> {
        let (Some(pem), Some(sealed)) = (&s.cert_pem, &s.key) else {
            return Err(precondition(format!("signer {} has no certificate", s.id)));
        };
        let revoked: Vec<(String, u64)> = self
            .store
            .certificates()
            .of_signer(tenant, &s.id)?
            .into_iter()
            .filter(|c| c.status == certificates::REVOKED)
            .filter_map(|c| Some((c.serial?, c.revoked_ms?)))
            .collect();
        let pkcs8 = self.store.unseal(sealed, &Signer::key_context(tenant, &s.id))?;
        let key = keys::signing_key(&pkcs8).map_err(internal)?;
        let issuer = rcgen::Issuer::from_ca_cert_pem(pem, &key).map_err(internal)?;
        s.crl_number += 1;
        s.crl_der = Some(crl::build(&issuer, s.crl_number, &revoked, now_ms()).map_err(internal)?);
        Ok(())
    }

    /// Re-signs the root's CRL of this tenant's revoked signers (every serial they ever had).
    fn rebuild_root_crl(&self, tenant: &str) -> ApiResult<Vec<u8>> {
        let revoked: Vec<(String, u64)> = self
            .store
            .signers()
            .list(tenant)?
            .into_iter()
            .filter(|s| s.state == REVOKED)
            .flat_map(|s| s.serials.into_iter().map(move |n| (n, s.updated_ms)))
            .collect();
        let number = self.store.signers().root_crl(tenant)?.map_or(0, |c| c.number) + 1;
        let der = crl::build(&self.root.issuer().map_err(internal)?, number, &revoked, now_ms()).map_err(internal)?;
        self.store.signers().put_root_crl(tenant, &RootCrl { number, der: der.clone() })?;
        Ok(der)
    }
}
