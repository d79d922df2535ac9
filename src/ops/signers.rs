//! Signers (a tenant's certificate authorities) and the client certificates
//! they issue.
//!
//! Every transition is one transaction; the rules are
//! [`crate::models::signer`]'s. What is slow (a key generated, a certificate
//! or a CRL signed, by [`Authority`]) is made before the transaction, which
//! checks that what the work was based on is still current: the tenant's
//! signer generation (no signer added since the list was read, so the
//! ACTIVE one read is still the only one), the signer's key, certificate and
//! CRL number, the request's status, the root CRL's number. When it is not,
//! the operation looks again, at most `ATTEMPTS` times, then answers 409.
//!
//! Issuance runs after the answer (`Authority::spawn_signer`,
//! `Authority::spawn_client`) through `issue_signer` and
//! `issue_certificate`, which follow the same pattern.

use super::{commit, publish, Event};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::signer as rules;
use crate::pki::Authority;
use herald_storage::certificates::{self, CertRecord};
use herald_storage::signers::{RootCrl, Signer, ACTIVE, REQUESTED, REVOKED};
use herald_storage::{now_ms, Store, Tx};
use serde_json::json;

/// How many times an operation looks again when what it read changed before its transaction.
const ATTEMPTS: usize = 8;

/// Runs `attempt` until it answers: `None` means that what it read changed
/// before its transaction committed, so it reads and works again; after
/// [`ATTEMPTS`] a 409 naming `what`.
fn retrying<T>(what: &str, mut attempt: impl FnMut() -> ApiResult<Option<T>>) -> ApiResult<T> {
    for _ in 0..ATTEMPTS {
        if let Some(done) = attempt()? {
            return Ok(done);
        }
    }
    Err(ApiError::conflict(format!("{what} kept changing meanwhile: try again")))
}

fn signer_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("signer {id} not found"))
}

fn no_active_signer() -> ApiError {
    ApiError::new(http::StatusCode::PRECONDITION_FAILED, "the tenant has no ACTIVE signer")
}

/// A signer as a `signerSpec` named it before a transaction.
struct Named {
    id: String,
    /// For `current`: the tenant's signer generation when it was the ACTIVE one.
    current_at: Option<u64>,
}

/// Resolves `spec` (404 when it names no signer); answers the signer as read now.
fn name(engine: &Engine, tenant: &str, spec: &str) -> ApiResult<(Named, Signer)> {
    // Before the look: a signer created after it moves the generation on.
    let generation = engine.store.signers().generation(tenant)?;
    let s = engine.pki.resolve(tenant, spec)?;
    Ok((Named { id: s.id.clone(), current_at: (spec == "current").then_some(generation) }, s))
}

/// The signer `named` still names, as stored in `tx`: 404 when its ULID
/// names none any more; `None` when `current` now names another one (or
/// none), so the caller looks again.
fn named_in(tx: &Tx, tenant: &str, named: &Named) -> ApiResult<Option<Signer>> {
    let s = tx.signer(tenant, &named.id)?;
    match named.current_at {
        None => s.map(Some).ok_or_else(|| signer_not_found(&named.id)),
        Some(generation) => {
            let still = tx.signer_generation(tenant)? == generation;
            Ok(s.filter(|s| still && s.state == ACTIVE))
        }
    }
}

/// The revoked certificates of a signer, as its CRL lists them.
fn revoked_certificates(store: &Store, tenant: &str, signer: &str) -> ApiResult<Vec<(String, u64)>> {
    Ok(store
        .certificates()
        .of_signer(tenant, signer)?
        .into_iter()
        .filter(|c| c.status == certificates::REVOKED)
        .filter_map(|c| Some((c.serial?, c.revoked_ms?)))
        .collect())
}

/// The serials of the tenant's revoked signers, as the root's CRL lists them.
fn revoked_signers(store: &Store, tenant: &str) -> ApiResult<Vec<(String, u64)>> {
    Ok(store
        .signers()
        .list(tenant)?
        .into_iter()
        .filter(|s| s.state == REVOKED)
        .flat_map(|s| s.serials.into_iter().map(move |n| (n, s.updated_ms)))
        .collect())
}

/// Creates a new ACTIVE signer, the previous ACTIVE one RETIRED
/// ([`rules::create`]), and queues its certificate. With `only_if_none`
/// (the deprecated v1 form) an ACTIVE signer is a conflict.
///
/// The tenant's signers are listed before the transaction, which checks the
/// tenant's signer generation: a signer created meanwhile makes it list
/// again, so two creates never both stay ACTIVE nor share a generation.
pub async fn create(engine: &Engine, tenant: &str, name: Option<String>, only_if_none: bool) -> ApiResult<Signer> {
    let store = &engine.store;
    let signer = retrying("the tenant's signers", || {
        let generation = store.signers().generation(tenant)?;
        let listed = store.signers().list(tenant)?;
        let (id, now) = (ulid::Ulid::generate().to_string(), now_ms());
        store.transact(|tx| {
            if tx.signer_generation(tenant)? != generation {
                return Ok(None);
            }
            let mut signers = Vec::with_capacity(listed.len());
            for s in &listed {
                signers.extend(tx.signer(tenant, &s.id)?);
            }
            let (new, retired) =
                rules::create(tenant, id.clone(), name.clone(), generation, signers, only_if_none, now)?;
            for s in &retired {
                tx.put_signer(tenant, s)?;
            }
            tx.insert_signer(tenant, &new)?;
            let data = json!({ "signerId": new.id, "name": new.name, "generation": new.generation });
            publish(tx, tenant, Event::new("signer", "SIGNER_CREATED", data))?;
            Ok::<_, ApiError>(Some(new))
        })
    })?;
    commit(engine).await?;
    engine.pki.spawn_signer(tenant, &signer.id);
    Ok(signer)
}

/// Queues a new certificate for the signer's existing key ([`rules::renew`]).
pub async fn renew(engine: &Engine, tenant: &str, spec: &str, ignore_not_issued: bool) -> ApiResult<Signer> {
    let s = retrying("the tenant's signers", || {
        let (named, _) = name(engine, tenant, spec)?;
        let now = now_ms();
        engine.store.transact(|tx| {
            let Some(mut s) = named_in(tx, tenant, &named)? else { return Ok(None) };
            rules::renew(&mut s, ignore_not_issued, now)?;
            tx.put_signer(tenant, &s)?;
            Ok::<_, ApiError>(Some(s))
        })
    })?;
    commit(engine).await?;
    engine.pki.spawn_signer(tenant, &s.id);
    Ok(s)
}

/// Deletes a signer that has issued no client certificate ([`rules::may_delete`]):
/// the issuance of a certificate counts it on its signer in its own
/// transaction, so the two never both succeed.
pub async fn delete(engine: &Engine, tenant: &str, spec: &str) -> ApiResult<()> {
    retrying("the tenant's signers", || {
        let (named, _) = name(engine, tenant, spec)?;
        engine.store.transact(|tx| {
            let Some(s) = named_in(tx, tenant, &named)? else { return Ok(None) };
            rules::may_delete(&s)?;
            tx.delete_signer(tenant, &s.id)?;
            Ok::<_, ApiError>(Some(()))
        })
    })?;
    commit(engine).await
}

/// Revokes a signer ([`rules::revoke`]: certificate and key erased) and
/// lists its serials in the root's CRL of the tenant, in one transaction. The
/// CRL is signed before it, over the revoked signers then; the transaction
/// checks that the root CRL's number and the signer's serials did not move.
pub async fn revoke(engine: &Engine, tenant: &str, spec: &str) -> ApiResult<Signer> {
    let store = &engine.store;
    let s = retrying("the tenant's signers", || {
        let (named, seen) = name(engine, tenant, spec)?;
        if seen.state == REVOKED {
            return Ok(Some(seen));
        }
        let now = now_ms();
        let crl_number = store.signers().root_crl(tenant)?.map(|c| c.number);
        let mut listed = revoked_signers(store, tenant)?;
        listed.extend(seen.serials.iter().map(|n| (n.clone(), now)));
        let number = crl_number.unwrap_or(0).saturating_add(1);
        let der = engine.pki.root_crl(number, &listed)?;
        store.transact(|tx| {
            let Some(mut s) = named_in(tx, tenant, &named)? else { return Ok(None) };
            if s.state == REVOKED {
                return Ok(Some(s));
            }
            // Another signer revoked, or a serial added: the CRL misses it.
            if s.serials != seen.serials || tx.root_crl(tenant)?.map(|c| c.number) != crl_number {
                return Ok(None);
            }
            rules::revoke(&mut s, now);
            tx.put_signer(tenant, &s)?;
            tx.put_root_crl(tenant, &RootCrl { number, der: der.clone() })?;
            let data = json!({ "signerId": s.id, "name": s.name, "serials": s.serials });
            publish(tx, tenant, Event::new("signer", "SIGNER_REVOKED", data))?;
            Ok::<_, ApiError>(Some(s))
        })
    })?;
    commit(engine).await?;
    Ok(s)
}

/// The signer's CRL (DER), signed on first demand; `root` names the root's
/// CRL of the tenant's revoked signers.
pub async fn crl(engine: &Engine, tenant: &str, spec: &str) -> ApiResult<Vec<u8>> {
    if spec == "root" {
        return root_crl(engine, tenant).await;
    }
    let store = &engine.store;
    let (der, written) = retrying("the signer", || {
        let (named, seen) = name(engine, tenant, spec)?;
        if let Some(der) = &seen.crl_der {
            return Ok(Some((der.clone(), false)));
        }
        rules::may_sign_crl(&seen)?;
        let revoked = revoked_certificates(store, tenant, &seen.id)?;
        let der = engine.pki.signer_crl(tenant, &seen, rules::next_crl_number(&seen), &revoked)?;
        store.transact(|tx| {
            let Some(mut s) = named_in(tx, tenant, &named)? else { return Ok(None) };
            if let Some(der) = &s.crl_der {
                return Ok(Some((der.clone(), false)));
            }
            if s.crl_number != seen.crl_number || s.key != seen.key || s.cert_pem != seen.cert_pem {
                return Ok(None);
            }
            rules::may_sign_crl(&s)?;
            rules::new_crl(&mut s, der.clone());
            tx.put_signer(tenant, &s)?;
            Ok::<_, ApiError>(Some((der.clone(), true)))
        })
    })?;
    if written {
        commit(engine).await?;
    }
    Ok(der)
}

/// The root's CRL of the tenant's revoked signers, signed on first demand
/// (a revocation signs it again).
async fn root_crl(engine: &Engine, tenant: &str) -> ApiResult<Vec<u8>> {
    let store = &engine.store;
    if let Some(c) = store.signers().root_crl(tenant)? {
        return Ok(c.der);
    }
    let der = engine.pki.root_crl(1, &revoked_signers(store, tenant)?)?;
    let (der, written) = store.transact(|tx| match tx.root_crl(tenant)? {
        // A revocation signed one meanwhile.
        Some(c) => Ok::<_, ApiError>((c.der, false)),
        None => {
            tx.put_root_crl(tenant, &RootCrl { number: 1, der: der.clone() })?;
            Ok((der.clone(), true))
        }
    })?;
    if written {
        commit(engine).await?;
    }
    Ok(der)
}

/// Verifies the CSR and records a request for the ACTIVE signer to fulfil
/// (the one ACTIVE at issuance); 412 while the tenant has none.
pub async fn request_certificate(engine: &Engine, tenant: &str, client: &str, csr_pem: &str) -> ApiResult<CertRecord> {
    crate::pki::csr::verify(csr_pem).map_err(|e| ApiError::field("csr", e))?;
    let store = &engine.store;
    let user = store.links().user_ids_of_client(tenant, client)?.into_iter().next().unwrap_or_default();
    let c = retrying("the tenant's signers", || {
        let generation = store.signers().generation(tenant)?;
        let active = store.signers().active(tenant)?.ok_or_else(no_active_signer)?;
        let named = Named { id: active.id, current_at: Some(generation) };
        let c = CertRecord {
            cert_ref: ulid::Ulid::generate().to_string(),
            status: REQUESTED.into(),
            // Chosen at issuance: the signer ACTIVE then.
            signer: String::new(),
            user: user.clone(),
            client: client.to_string(),
            profile: crate::pki::issue::AST_DEVICE.into(),
            csr_pem: csr_pem.to_string(),
            cert_pem: None,
            serial: None,
            failure: None,
            requested_ms: now_ms(),
            issued_ms: None,
            revoked_ms: None,
        };
        store.transact(|tx| {
            if named_in(tx, tenant, &named)?.is_none() {
                return Ok(None);
            }
            tx.insert_certificate(tenant, &c)?;
            Ok::<_, ApiError>(Some(c.clone()))
        })
    })?;
    commit(engine).await?;
    engine.pki.spawn_client(tenant, &c.cert_ref);
    Ok(c)
}

/// Revokes an issued client certificate ([`rules::revoke_certificate`]):
/// erased, and listed in its signer's CRL, signed again before the
/// transaction, which checks that the signer's CRL number, key and
/// certificate did not move.
pub async fn revoke_certificate(engine: &Engine, tenant: &str, cert_ref: &str) -> ApiResult<CertRecord> {
    let store = &engine.store;
    let not_found = || ApiError::not_found(format!("certificate request {cert_ref} not found"));
    let c = retrying("the certificate's signer", || {
        let mut seen = store.certificates().get(tenant, cert_ref)?.ok_or_else(not_found)?;
        let now = now_ms();
        if !rules::revoke_certificate(&mut seen, now)? {
            return Ok(Some(seen));
        }
        // The signer's next CRL, with this certificate; none once the signer is revoked or gone.
        let signer = store.signers().get(tenant, &seen.signer)?.filter(|s| rules::may_sign_crl(s).is_ok());
        let crl = match &signer {
            Some(s) => {
                let mut revoked = revoked_certificates(store, tenant, &s.id)?;
                revoked.extend(seen.serial.clone().map(|n| (n, now)));
                Some(engine.pki.signer_crl(tenant, s, rules::next_crl_number(s), &revoked)?)
            }
            None => None,
        };
        store.transact(|tx| {
            let mut c = tx.certificate(tenant, cert_ref)?.ok_or_else(not_found)?;
            if !rules::revoke_certificate(&mut c, now)? {
                return Ok(Some(c));
            }
            let stored = tx.signer(tenant, &c.signer)?.filter(|s| rules::may_sign_crl(s).is_ok());
            match (stored, &signer, &crl) {
                (Some(mut s), Some(read), Some(der))
                    if s.crl_number == read.crl_number && s.key == read.key && s.cert_pem == read.cert_pem =>
                {
                    rules::new_crl(&mut s, der.clone());
                    tx.put_signer(tenant, &s)?;
                }
                // Revoked or deleted since: it signs no CRL any more.
                (None, _, _) => {}
                // Its CRL moved on, or it can sign one again: sign again.
                _ => return Ok(None),
            }
            tx.put_certificate(tenant, &c)?;
            Ok::<_, ApiError>(Some(c))
        })
    })?;
    commit(engine).await?;
    Ok(c)
}

/// Issues the certificate of a signer awaiting it ([`rules::awaits_issuance`]),
/// generating its key the first time; a failure leaves it `FAILED` with the
/// reason ([`rules::issued`]). The certificate and the signer's new CRL are
/// made before the transaction, which drops them when the signer was issued,
/// revoked or deleted meanwhile, and makes them again when its key or CRL
/// moved on. Answers the signer as stored after, `None` when it is gone.
/// Durable after the caller's [`Store::durable`].
pub(crate) fn issue_signer(pki: &Authority, tenant: &str, id: &str) -> ApiResult<Option<Signer>> {
    let store = pki.store();
    retrying("the signer", || {
        let Some(seen) = store.signers().get(tenant, id)? else { return Ok(Some(None)) };
        if !rules::awaits_issuance(&seen) {
            return Ok(Some(Some(seen)));
        }
        let outcome = pki.signer_certificate(tenant, &seen, &revoked_certificates(store, tenant, id)?);
        let now = now_ms();
        store.transact(|tx| {
            let Some(mut s) = tx.signer(tenant, id)? else { return Ok(Some(None)) };
            if !rules::awaits_issuance(&s) {
                return Ok(Some(Some(s)));
            }
            if s.key != seen.key || s.crl_number != seen.crl_number || s.serials != seen.serials {
                return Ok(None);
            }
            rules::issued(&mut s, outcome.clone(), now);
            tx.put_signer(tenant, &s)?;
            Ok::<_, ApiError>(Some(Some(s)))
        })
    })
}

/// What issuing a request came to before its transaction.
enum Outcome {
    /// Issued by this signer (as read).
    Issued(crate::pki::issue::Issued, Signer),
    /// Not issued: the reason, and the signer that could not (none: the tenant had no ACTIVE signer).
    Failed(String, Option<Signer>),
}

/// The same issuer: what a certificate it issued was based on did not move.
fn same_issuer(now: &Signer, seen: &Signer) -> bool {
    now.state == seen.state && now.status == seen.status && now.key == seen.key && now.cert_pem == seen.cert_pem
}

/// Issues a `REQUESTED` client certificate with the ACTIVE signer (issuing
/// the signer's own certificate first when it is still queued), or leaves it
/// `FAILED` with the reason. The certificate is signed before the
/// transaction, which stores it ISSUED and counted on its signer only while
/// that signer is still stored, ACTIVE and unchanged; otherwise it looks
/// again. So a certificate is never stored as issued by a signer deleted,
/// revoked or retired before it was stored.
pub(crate) async fn issue_certificate(pki: &Authority, tenant: &str, cert_ref: &str) -> ApiResult<()> {
    let store = pki.store();
    retrying("the tenant's signers", || {
        let Some(seen) = store.certificates().get(tenant, cert_ref)? else { return Ok(Some(None)) };
        if seen.status != REQUESTED {
            return Ok(Some(None));
        }
        let generation = store.signers().generation(tenant)?;
        let outcome = match store.signers().active(tenant)? {
            None => Outcome::Failed("the tenant has no ACTIVE signer".into(), None),
            Some(active) => {
                // Deleted meanwhile: look again.
                let Some(s) = issue_signer(pki, tenant, &active.id)? else { return Ok(None) };
                match rules::may_issue(&s).and_then(|()| pki.client_certificate(tenant, &seen, &s)) {
                    Ok(issued) => Outcome::Issued(issued, s),
                    Err(reason) => Outcome::Failed(reason, Some(s)),
                }
            }
        };
        let now = now_ms();
        store.transact(|tx| {
            let Some(mut c) = tx.certificate(tenant, cert_ref)? else { return Ok(Some(None)) };
            if c.status != REQUESTED {
                return Ok(Some(None));
            }
            match &outcome {
                Outcome::Issued(issued, used) => {
                    let Some(mut s) = tx.signer(tenant, &used.id)?.filter(|s| same_issuer(s, used)) else {
                        return Ok(None);
                    };
                    rules::issue_certificate(&mut c, &mut s, issued.pem.clone(), issued.serial.clone(), now);
                    tx.put_signer(tenant, &s)?;
                }
                Outcome::Failed(reason, used) => {
                    // Still no signer able to issue it: none created, the one read unchanged.
                    let still = tx.signer_generation(tenant)? == generation
                        && match used {
                            None => true,
                            Some(used) => tx.signer(tenant, &used.id)?.is_some_and(|s| same_issuer(&s, used)),
                        };
                    if !still {
                        return Ok(None);
                    }
                    rules::fail_certificate(&mut c, reason.clone());
                }
            }
            tx.put_certificate(tenant, &c)?;
            if c.status == herald_storage::signers::ISSUED {
                let data = json!({ "certRef": c.cert_ref, "signerId": c.signer, "astClientId": c.client, "userId": c.user,
                                   "certProfile": c.profile, "serialNumber": c.serial });
                publish(tx, tenant, Event::new("signer", "CERTIFICATE_ISSUED", data))?;
            }
            Ok::<_, ApiError>(Some(Some(c)))
        })
    })?;
    store.durable().await?;
    Ok(())
}
