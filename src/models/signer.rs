//! Signers, certificate requests and the SDK config request (spec 002 "Signer",
//! "Certificate info", "SDK config request"), and the rules of a signer's and
//! a certificate request's life (see "The signer state machine" below),
//! applied by `crate::ops::signers` inside its transactions.

use super::validate;
use super::webhook::rfc3339;
use crate::error::{ApiError, ApiResult};
use herald_storage::certificates::CertRecord;
use herald_storage::signers::Signer;
use serde::{Deserialize, Serialize};

fn signer_state_schema() -> utoipa::openapi::Object {
    use herald_storage::signers::{ACTIVE, RETIRED, REVOKED};
    crate::openapi::schema::strings(&[ACTIVE, RETIRED, REVOKED])
}

fn signer_status_schema() -> utoipa::openapi::Object {
    use herald_storage::signers::{FAILED, ISSUED, REQUESTED};
    crate::openapi::schema::strings(&[REQUESTED, ISSUED, FAILED])
}

fn cert_status_schema() -> utoipa::openapi::Object {
    use herald_storage::signers::{FAILED, ISSUED, REQUESTED};
    crate::openapi::schema::strings(&[REQUESTED, ISSUED, FAILED, herald_storage::certificates::REVOKED])
}

/// The one profile client certificates are issued with.
pub const CERT_PROFILE: &str = "AST_DEVICE";

fn cert_profile_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&[CERT_PROFILE])
}

/// `POST /v2/.../signers`: an optional name.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSigner {
    /// The signer's name (1 to 64 characters); absent: `<tenant>-signer-<generation>`.
    pub name: Option<String>,
}

impl CreateSigner {
    /// Checks the name's length; 400 naming `name`.
    pub fn validate(&self) -> ApiResult<()> {
        match &self.name {
            Some(n) => validate::id("name", n, 1, 64),
            None => Ok(()),
        }
    }
}

/// `POST /v1/.../signer`: the name is required.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSignerV1 {
    /// The signer's name (1 to 64 characters).
    pub name: String,
}

/// Renew and reissue: `ignoreNotIssued` (default false).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Renew {
    /// Renew even though the current certificate is not `ISSUED` (pending or `FAILED`); without it, 412.
    #[serde(default)]
    pub ignore_not_issued: bool,
}

/// The Signer resource; `status` and `failureReason` (ext) show the certificate's progress.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignerView {
    /// The signer's id (a ULID), which a `signerSpec` may name.
    pub id: String,
    /// The tenant the signer signs for.
    pub tenant: String,
    /// The signer's readable name.
    pub name: String,
    /// When the signer was created (RFC 3339).
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub created_at: String,
    /// When its state or certificate last changed (RFC 3339).
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub updated_at: String,
    /// 1 for the tenant's first signer, one more for each next; never given twice.
    pub generation: u64,
    /// `ACTIVE` (the one that signs), `RETIRED` (replaced, still validates) or `REVOKED`
    /// (key and certificate erased).
    #[schema(schema_with = signer_state_schema)]
    pub state: String,
    /// The signer certificate's progress: `REQUESTED`, then `ISSUED` or `FAILED`.
    #[schema(schema_with = signer_status_schema)]
    pub status: String,
    /// Why issuing the signer certificate failed; only while `status` is `FAILED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

impl SignerView {
    /// The read form of a stored signer of `tenant`.
    pub fn of(tenant: &str, s: &Signer) -> SignerView {
        SignerView {
            id: s.id.clone(),
            tenant: tenant.to_string(),
            name: s.name.clone(),
            created_at: rfc3339(s.created_ms),
            updated_at: rfc3339(s.updated_ms),
            generation: s.generation,
            state: s.state.clone(),
            status: s.status.clone(),
            failure_reason: s.failure.clone(),
        }
    }

    /// The fields the signer list can be filtered on (`filter=`).
    pub const FIELDS: [&'static str; 6] = ["id", "name", "state", "status", "generation", "createdAt"];

    /// The text of a list-filter field; `None` for a field not in [`Self::FIELDS`].
    pub fn field(&self, name: &str) -> Option<String> {
        Some(match name {
            "id" => self.id.clone(),
            "name" => self.name.clone(),
            "state" => self.state.clone(),
            "status" => self.status.clone(),
            "generation" => self.generation.to_string(),
            "createdAt" => self.created_at.clone(),
            _ => return None,
        })
    }
}

/// A signer with its certificate (PEM; `null` until issued or once revoked),
/// as `GET .../signers/{signerSpec}` answers it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignerDetail {
    /// The signer.
    pub info: SignerView,
    /// Its certificate (PEM); `null` until issued or once revoked.
    pub certificate: Option<String>,
}

/// A signer's certificate chain, leaf to root (PEM), to verify what it signed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignerChain {
    /// The signer's certificate, then the engine's root CA certificate (PEM each).
    pub chain: Vec<String>,
}

/// Certificate info; once issued it also carries the PEM and its chain (ext).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertView {
    /// The request's reference (a ULID), answered at submission; what checking the request takes.
    pub cert_ref: String,
    /// `REQUESTED` until the ACTIVE signer issues it, then `ISSUED` or `FAILED`; `REVOKED` after a revocation.
    #[schema(schema_with = cert_status_schema)]
    pub status: String,
    /// The id of the signer that issued it; empty until issued.
    pub signer: String,
    /// The first user linked to the client when it asked; empty when none was.
    pub user: String,
    /// The device client (a ULID) that submitted the CSR.
    pub client: String,
    /// When the CSR was submitted (RFC 3339).
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub requested_at: String,
    /// When the certificate was issued (RFC 3339); absent before.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub issued_at: Option<String>,
    /// The profile the certificate is issued with: always `AST_DEVICE`.
    #[schema(schema_with = cert_profile_schema)]
    pub cert_profile: String,
    /// The issued certificate's serial number, in hex; absent before issuance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    /// Why issuance failed; only when `status` is `FAILED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// When the certificate was revoked (RFC 3339); absent unless revoked.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub revoked_at: Option<String>,
    /// The issued certificate (PEM); only when one request is read, while it is `ISSUED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    /// The certificate, its signer's and the root CA's (PEM, leaf to root); only with `certificate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<Vec<String>>,
}

impl CertView {
    /// The read form of a stored request, without the certificate and chain.
    pub fn of(c: &CertRecord) -> CertView {
        CertView {
            cert_ref: c.cert_ref.clone(),
            status: c.status.clone(),
            signer: c.signer.clone(),
            user: c.user.clone(),
            client: c.client.clone(),
            requested_at: rfc3339(c.requested_ms),
            issued_at: c.issued_ms.map(rfc3339),
            cert_profile: c.profile.clone(),
            serial_number: c.serial.clone(),
            failure_reason: c.failure.clone(),
            revoked_at: c.revoked_ms.map(rfc3339),
            certificate: None,
            chain: None,
        }
    }

    /// The fields the certificate list can be filtered on (`filter=`).
    pub const FIELDS: [&'static str; 5] = ["status", "signer", "user", "client", "certProfile"];

    /// The text of a list-filter field; `None` for a field not in [`Self::FIELDS`].
    pub fn field(&self, name: &str) -> Option<String> {
        Some(match name {
            "status" => self.status.clone(),
            "signer" => self.signer.clone(),
            "user" => self.user.clone(),
            "client" => self.client.clone(),
            "certProfile" => self.cert_profile.clone(),
            _ => return None,
        })
    }
}

/// `POST /v1/.../certificates` (ext): a PKCS#10 request in PEM.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CsrBody {
    /// The CSR in PEM (at most 16384 characters), signed by the key to certify; the
    /// certificate's subject and extensions are the CA's choice, not the CSR's.
    pub csr: String,
}

impl CsrBody {
    /// Checks the length (400 naming `csr`); the CSR's signature is verified when it is recorded.
    pub fn validate(&self) -> ApiResult<()> {
        validate::length("csr", &self.csr, 1, 16_384)
    }
}

/// One entry of `services` in the SDK config.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceEntry {
    /// The service's name (1 to 255 characters).
    pub name: String,
    /// Where the SDK reaches the service: an http or https URL (at most 4000 characters).
    pub url: String,
}

/// `POST /v1/.../sdkconfig`: what the signed SDK config carries.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SdkConfigRequest {
    /// 1 to 50 X.509 TLS certificates for the SDK to trust, each DER in base64 or base64url.
    pub tls_bundle: Vec<String>,
    /// The URL the SDK calls the engine at: http or https, at most 256 characters.
    pub ast_url: Option<String>,
    /// At most 50 further services the SDK calls.
    #[serde(default)]
    pub services: Vec<ServiceEntry>,
}

/// The signed SDK config: a compact JWS (ES256) over an [`SdkConfigPayload`],
/// with the ACTIVE signer's chain in its `x5c` header.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SdkConfig {
    /// The compact JWS: its payload an `SdkConfigPayload`, its `x5c` header the signer's chain.
    pub sdk_config: String,
}

/// What the SDK config signs: the request's contents, its tenant, and when
/// it was signed (`iat`, Unix seconds), for the SDK to trust on decoding.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SdkConfigPayload {
    /// The tenant whose signer signed the config.
    pub tenant: String,
    /// The request's TLS certificates, as given.
    pub tls_bundle: Vec<String>,
    /// The request's engine URL, as given.
    pub ast_url: Option<String>,
    /// The request's services, as given.
    pub services: Vec<ServiceEntry>,
    /// When the config was signed, Unix seconds.
    pub iat: u64,
}

fn http_url(field: &str, value: &str, max: usize) -> ApiResult<()> {
    validate::length(field, value, 1, max)?;
    let url = url::Url::parse(value).map_err(|e| ApiError::field(field, format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(ApiError::field(field, "must be an http or https URL"));
    }
    Ok(())
}

/// Decodes a base64 or base64url certificate (padding optional).
pub fn decode_b64(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use base64::Engine as _;
    let t = text.trim().trim_end_matches('=');
    STANDARD_NO_PAD.decode(t).or_else(|_| URL_SAFE_NO_PAD.decode(t)).ok()
}

impl SdkConfigRequest {
    /// Checks the limits and parses every certificate; returns the DER certificates.
    pub fn validate(&self) -> ApiResult<Vec<Vec<u8>>> {
        if self.tls_bundle.is_empty() || self.tls_bundle.len() > 50 {
            return Err(ApiError::field("tlsBundle", "must hold 1 to 50 certificates"));
        }
        let mut ders = Vec::with_capacity(self.tls_bundle.len());
        for (i, c) in self.tls_bundle.iter().enumerate() {
            let field = format!("tlsBundle[{i}]");
            let der = decode_b64(c).ok_or_else(|| ApiError::field(&field, "is not base64 or base64url"))?;
            match x509_parser::parse_x509_certificate(&der) {
                Ok(([], _)) => ders.push(der),
                _ => return Err(ApiError::field(&field, "is not a DER X.509 certificate")),
            }
        }
        if let Some(u) = &self.ast_url {
            http_url("astUrl", u, 256)?;
        }
        if self.services.len() > 50 {
            return Err(ApiError::field("services", "must hold at most 50 entries"));
        }
        for (i, s) in self.services.iter().enumerate() {
            validate::length(&format!("services[{i}].name"), &s.name, 1, 255)?;
            http_url(&format!("services[{i}].url"), &s.url, 4000)?;
        }
        Ok(ders)
    }
}

// The signer state machine.
//
// A signer's `state` is ACTIVE, RETIRED or REVOKED; its certificate's `status`
// is REQUESTED, ISSUED or FAILED. A tenant has at most one ACTIVE signer: a
// new signer is ACTIVE and retires the one before it. Generations number a
// tenant's signers 1, 2, ... in creation order and are never given twice
// (a deleted signer's generation stays used). RETIRED signers still validate
// and keep their certificate; REVOKED is final: key and certificate erased.
// A client certificate request is REQUESTED, then ISSUED by the signer ACTIVE
// at issuance (or FAILED), then possibly REVOKED; a signer that has issued a
// certificate can no longer be deleted.

use herald_storage::signers::{ACTIVE, FAILED, ISSUED, REQUESTED, RETIRED, REVOKED};

/// Why a transition is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The v1 form creates a signer only when the tenant has no ACTIVE one.
    AlreadyHasSigner,
    /// A revoked signer cannot be renewed.
    RenewRevoked,
    /// Renewing a certificate that is not issued needs `ignoreNotIssued`.
    NotIssued(String),
    /// A signer that issued certificates (the count) is not deleted.
    HasIssued(String, u64),
    /// A certificate request that is not issued (its status) cannot be revoked.
    CertificateNotIssued(String, String),
    /// A signer without a certificate (revoked, or not issued yet) signs no CRL.
    NoCertificateForCrl(String),
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> ApiError {
        let precondition = |m: String| ApiError::new(http::StatusCode::PRECONDITION_FAILED, m);
        match r {
            Refused::AlreadyHasSigner => ApiError::conflict("the tenant already has a signer"),
            Refused::RenewRevoked => precondition("a revoked signer cannot be renewed".into()),
            Refused::NotIssued(status) => {
                precondition(format!("the signer certificate is {status} (ignoreNotIssued renews anyway)"))
            }
            Refused::HasIssued(id, n) => {
                ApiError::conflict(format!("signer {id} has issued {n} certificate(s): replace or revoke it instead"))
            }
            Refused::CertificateNotIssued(cert_ref, status) => {
                precondition(format!("certificate request {cert_ref} is {status}"))
            }
            Refused::NoCertificateForCrl(id) => {
                precondition(format!("signer {id} has no certificate to sign a CRL with"))
            }
        }
    }
}

/// The generation after the tenant's latest (`last`, 0 before the first signer).
pub fn next_generation(last: u64) -> u64 {
    last.saturating_add(1)
}

/// A new signer of `tenant`: ACTIVE, its certificate REQUESTED, of the
/// generation after `last_generation`, named `name` or after the tenant and
/// generation. Answers it with the signers of `active` (the tenant's ACTIVE
/// signers) RETIRED, so that it is the only ACTIVE one. With `only_if_none`
/// (the v1 form) an ACTIVE signer refuses it.
pub fn create(
    tenant: &str,
    id: String,
    name: Option<String>,
    last_generation: u64,
    active: Vec<Signer>,
    only_if_none: bool,
    now: u64,
) -> Result<(Signer, Vec<Signer>), Refused> {
    if only_if_none && active.iter().any(|s| s.state == ACTIVE) {
        return Err(Refused::AlreadyHasSigner);
    }
    let generation = next_generation(last_generation);
    let signer = Signer {
        id,
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
    let retired = active
        .into_iter()
        .filter(|s| s.state == ACTIVE)
        .map(|mut s| {
            s.state = RETIRED.into();
            s.updated_ms = now;
            s
        })
        .collect();
    Ok((signer, retired))
}

/// Asks for a new certificate for the signer's key: not for a revoked signer,
/// and only over an issued certificate unless `ignore_not_issued`.
pub fn renew(s: &mut Signer, ignore_not_issued: bool, now: u64) -> Result<(), Refused> {
    if s.state == REVOKED {
        return Err(Refused::RenewRevoked);
    }
    if s.status != ISSUED && !ignore_not_issued {
        return Err(Refused::NotIssued(s.status.clone()));
    }
    s.status = REQUESTED.into();
    s.failure = None;
    s.updated_ms = now;
    Ok(())
}

/// A signer may be deleted until it has issued a client certificate.
pub fn may_delete(s: &Signer) -> Result<(), Refused> {
    match s.issued {
        0 => Ok(()),
        n => Err(Refused::HasIssued(s.id.clone(), n)),
    }
}

/// Revokes a signer: its key, certificate and CRL are erased. False when it
/// was revoked already (nothing changes).
pub fn revoke(s: &mut Signer, now: u64) -> bool {
    if s.state == REVOKED {
        return false;
    }
    s.state = REVOKED.into();
    s.cert_pem = None;
    s.key = None;
    s.crl_der = None;
    s.updated_ms = now;
    true
}

/// Whether the signer's certificate waits for issuance (a revoked signer's never does).
pub fn awaits_issuance(s: &Signer) -> bool {
    s.status == REQUESTED && s.state != REVOKED
}

/// A signer certificate made for a signer awaiting issuance.
#[derive(Debug, Clone)]
pub struct SignerCertificate {
    /// The signer's sealed key when it was generated for this certificate.
    pub new_key: Option<herald_storage::Secret>,
    /// The signer certificate, PEM.
    pub cert_pem: String,
    /// Its serial number in hex: what the root's CRL lists once the signer is revoked.
    pub serial: String,
    /// Its CRL, signed with the new certificate (number: the signer's next).
    pub crl_der: Vec<u8>,
}

/// Records the outcome of issuing the signer's certificate: ISSUED with the
/// certificate, its serial and a new CRL, or FAILED with the reason.
pub fn issued(s: &mut Signer, outcome: Result<SignerCertificate, String>, now: u64) {
    match outcome {
        Ok(c) => {
            if let Some(key) = c.new_key {
                s.key = Some(key);
            }
            s.cert_pem = Some(c.cert_pem);
            s.serials.push(c.serial);
            new_crl(s, c.crl_der);
            s.status = ISSUED.into();
            s.failure = None;
        }
        Err(e) => {
            s.status = FAILED.into();
            s.failure = Some(e);
        }
    }
    s.updated_ms = now;
}

/// A signer signs its CRL with its certificate: not once revoked, nor before one is issued.
pub fn may_sign_crl(s: &Signer) -> Result<(), Refused> {
    if s.state == REVOKED || s.cert_pem.is_none() || s.key.is_none() {
        return Err(Refused::NoCertificateForCrl(s.id.clone()));
    }
    Ok(())
}

/// The number the signer's next CRL carries.
pub fn next_crl_number(s: &Signer) -> u64 {
    s.crl_number.saturating_add(1)
}

/// Stores a CRL signed as [`next_crl_number`].
pub fn new_crl(s: &mut Signer, der: Vec<u8>) {
    s.crl_number = next_crl_number(s);
    s.crl_der = Some(der);
}

/// Whether `s` issues client certificates now: the ACTIVE signer, with an
/// issued certificate; otherwise why not (the request's failure reason).
pub fn may_issue(s: &Signer) -> Result<(), String> {
    if s.state != ACTIVE {
        return Err(format!("signer {} is {}", s.id, s.state));
    }
    match (s.status.as_str(), &s.cert_pem, &s.key) {
        (ISSUED, Some(_), Some(_)) => Ok(()),
        (ISSUED, _, _) => Err(format!("signer {} has no certificate", s.id)),
        (status, _, _) => Err(format!("signer {} is {status}: {}", s.id, s.failure.clone().unwrap_or_default())),
    }
}

/// A client certificate issued by `s`: the request is ISSUED with it and
/// counted on the signer (which can no longer be deleted).
pub fn issue_certificate(c: &mut CertRecord, s: &mut Signer, cert_pem: String, serial: String, now: u64) {
    s.issued = s.issued.saturating_add(1);
    c.signer = s.id.clone();
    c.status = ISSUED.into();
    c.cert_pem = Some(cert_pem);
    c.serial = Some(serial);
    c.failure = None;
    c.issued_ms = Some(now);
}

/// A request that could not be issued: FAILED with the reason.
pub fn fail_certificate(c: &mut CertRecord, reason: String) {
    c.status = FAILED.into();
    c.failure = Some(reason);
}

/// Revokes an issued client certificate (erased, to be listed in its signer's
/// CRL). False when it was revoked already; refused unless issued.
pub fn revoke_certificate(c: &mut CertRecord, now: u64) -> Result<bool, Refused> {
    if c.status == herald_storage::certificates::REVOKED {
        return Ok(false);
    }
    if c.status != ISSUED {
        return Err(Refused::CertificateNotIssued(c.cert_ref.clone(), c.status.clone()));
    }
    c.status = herald_storage::certificates::REVOKED.into();
    c.cert_pem = None;
    c.revoked_ms = Some(now);
    Ok(true)
}

#[cfg(test)]
// Test code is exempt from the workspace lints (clippy.toml exempts its unwraps and panics).
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    fn signer(id: &str, generation: u64, state: &str, status: &str) -> Signer {
        let (signer, _) = create("acme", id.into(), None, generation - 1, vec![], false, 1).unwrap();
        Signer { state: state.into(), status: status.into(), ..signer }
    }

    fn request(status: &str) -> CertRecord {
        CertRecord {
            cert_ref: "r".into(),
            status: status.into(),
            signer: String::new(),
            user: "u".into(),
            client: "c".into(),
            profile: "AST_DEVICE".into(),
            csr_pem: String::new(),
            cert_pem: None,
            serial: None,
            failure: None,
            requested_ms: 1,
            issued_ms: None,
            revoked_ms: None,
        }
    }

    #[test]
    fn a_new_signer_is_the_only_active_one_of_the_next_generation() {
        let (first, retired) = create("acme", "a".into(), None, 0, vec![], false, 5).unwrap();
        assert_eq!((first.generation, first.name.as_str()), (1, "acme-signer-1"));
        assert_eq!((first.state.as_str(), first.status.as_str()), (ACTIVE, REQUESTED));
        assert!(retired.is_empty());
        let (second, retired) =
            create("acme", "b".into(), Some("rotated".into()), 1, vec![first.clone()], false, 9).unwrap();
        assert_eq!((second.generation, second.name.as_str()), (2, "rotated"));
        assert_eq!(retired.len(), 1);
        assert_eq!((retired[0].id.as_str(), retired[0].state.as_str(), retired[0].updated_ms), ("a", RETIRED, 9));
        // A generation is never given twice: deleted signers' numbers stay used.
        assert_eq!(create("acme", "c".into(), None, 7, vec![], false, 9).unwrap().0.generation, 8);
    }

    #[test]
    fn the_v1_form_creates_only_without_an_active_signer() {
        let active = signer("a", 1, ACTIVE, ISSUED);
        assert_eq!(create("acme", "b".into(), None, 1, vec![active], true, 2).unwrap_err(), Refused::AlreadyHasSigner);
        assert!(create("acme", "b".into(), None, 1, vec![], true, 2).is_ok(), "a RETIRED or deleted one allows it");
    }

    #[test]
    fn renewal_needs_an_issued_certificate_unless_told_and_never_revoked() {
        let mut s = signer("a", 1, ACTIVE, ISSUED);
        renew(&mut s, false, 3).unwrap();
        assert_eq!((s.status.as_str(), s.updated_ms), (REQUESTED, 3));
        assert_eq!(renew(&mut s, false, 4), Err(Refused::NotIssued(REQUESTED.into())));
        renew(&mut s, true, 4).unwrap();
        let mut failed = signer("a", 1, RETIRED, FAILED);
        failed.failure = Some("boom".into());
        renew(&mut failed, true, 5).unwrap();
        assert_eq!(failed.failure, None);
        let mut revoked = signer("a", 1, REVOKED, ISSUED);
        assert_eq!(renew(&mut revoked, true, 5), Err(Refused::RenewRevoked));
    }

    #[test]
    fn revocation_erases_and_is_final() {
        let mut s = signer("a", 1, ACTIVE, ISSUED);
        s.cert_pem = Some("pem".into());
        s.crl_der = Some(vec![1]);
        assert!(revoke(&mut s, 7));
        assert_eq!((s.state.as_str(), s.cert_pem.as_ref(), s.crl_der.as_ref()), (REVOKED, None, None));
        assert!(!revoke(&mut s, 8), "already revoked");
        assert_eq!(may_sign_crl(&s), Err(Refused::NoCertificateForCrl("a".into())));
        assert_eq!(s.updated_ms, 7);
        assert!(!awaits_issuance(&Signer { status: REQUESTED.into(), ..s }));
    }

    #[test]
    fn a_signer_that_issued_is_not_deleted() {
        let mut s = signer("a", 1, ACTIVE, ISSUED);
        assert_eq!(may_delete(&s), Ok(()));
        s.cert_pem = Some("pem".into());
        s.key = Some(herald_storage::MasterKey::from_bytes(&[7; 32]).unwrap().seal(b"k", "ctx").unwrap());
        let mut c = request(REQUESTED);
        issue_certificate(&mut c, &mut s, "leaf".into(), "01".into(), 9);
        assert_eq!((c.status.as_str(), c.signer.as_str(), c.serial.as_deref()), (ISSUED, "a", Some("01")));
        assert_eq!(may_delete(&s), Err(Refused::HasIssued("a".into(), 1)));
    }

    #[test]
    fn only_the_active_issued_signer_issues() {
        let mut s = signer("a", 1, ACTIVE, ISSUED);
        assert!(may_issue(&s).is_err(), "no certificate yet");
        s.cert_pem = Some("pem".into());
        s.key = Some(herald_storage::MasterKey::from_bytes(&[7; 32]).unwrap().seal(b"k", "ctx").unwrap());
        assert_eq!(may_issue(&s), Ok(()));
        assert!(may_issue(&Signer { state: RETIRED.into(), ..s.clone() }).is_err());
        assert!(may_issue(&Signer { status: REQUESTED.into(), ..s }).is_err(), "renewal pending");
    }

    #[test]
    fn issuance_records_the_certificate_or_the_failure() {
        let mut s = signer("a", 1, ACTIVE, REQUESTED);
        issued(&mut s, Err("no key".into()), 2);
        assert_eq!((s.status.as_str(), s.failure.as_deref()), (FAILED, Some("no key")));
        let done = SignerCertificate { new_key: None, cert_pem: "pem".into(), serial: "0a".into(), crl_der: vec![3] };
        issued(&mut s, Ok(done.clone()), 3);
        assert_eq!((s.status.as_str(), s.failure.as_deref(), s.crl_number), (ISSUED, None, 1));
        issued(&mut s, Ok(done), 4);
        assert_eq!((s.serials.len(), s.crl_number, next_crl_number(&s)), (2, 2, 3), "a renewal adds a serial");
    }

    #[test]
    fn only_an_issued_certificate_is_revoked_once() {
        let mut c = request(REQUESTED);
        assert_eq!(revoke_certificate(&mut c, 1), Err(Refused::CertificateNotIssued("r".into(), REQUESTED.into())));
        c.status = ISSUED.into();
        c.cert_pem = Some("leaf".into());
        assert_eq!(revoke_certificate(&mut c, 2), Ok(true));
        assert_eq!((c.cert_pem.as_ref(), c.revoked_ms), (None, Some(2)));
        assert_eq!(revoke_certificate(&mut c, 3), Ok(false));
        assert_eq!(c.revoked_ms, Some(2));
        let mut failed = request(REQUESTED);
        fail_certificate(&mut failed, "no signer".into());
        assert_eq!(failed.status, FAILED);
    }
}
