//! Signers, certificate requests and the SDK config request (spec 002 "Signer",
//! "Certificate info", "SDK config request").

use super::validate;
use super::webhook::rfc3339;
use crate::error::{ApiError, ApiResult};
use herald_storage::certificates::CertRecord;
use herald_storage::signers::Signer;
use serde::{Deserialize, Serialize};

/// `POST /v2/.../signers`: an optional name.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSigner {
    pub name: Option<String>,
}

impl CreateSigner {
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
    pub name: String,
}

/// Renew and reissue: `ignoreNotIssued` (default false).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Renew {
    #[serde(default)]
    pub ignore_not_issued: bool,
}

/// The Signer resource; `status` and `failureReason` (ext) show the certificate's progress.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignerView {
    pub id: String,
    pub tenant: String,
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
    pub generation: u64,
    pub state: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

impl SignerView {
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

    pub const FIELDS: [&'static str; 6] = ["id", "name", "state", "status", "generation", "createdAt"];

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

/// Certificate info; once issued it also carries the PEM and its chain (ext).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertView {
    pub cert_ref: String,
    pub status: String,
    pub signer: String,
    pub user: String,
    pub client: String,
    pub requested_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<String>,
    pub cert_profile: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<Vec<String>>,
}

impl CertView {
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

    pub const FIELDS: [&'static str; 5] = ["status", "signer", "user", "client", "certProfile"];

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
    pub csr: String,
}

impl CsrBody {
    pub fn validate(&self) -> ApiResult<()> {
        validate::length("csr", &self.csr, 1, 16_384)
    }
}

/// One entry of `services` in the SDK config.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceEntry {
    pub name: String,
    pub url: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SdkConfigRequest {
    pub tls_bundle: Vec<String>,
    pub ast_url: Option<String>,
    #[serde(default)]
    pub services: Vec<ServiceEntry>,
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
