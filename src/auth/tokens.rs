//! Access, refresh and ID tokens of a tenant realm (Keycloak-shaped claims, ES256).

use super::keys::{KeyCache, TenantKey};
use crate::error::{ApiError, ApiResult};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use herald_storage::Store;
use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const TYP_ACCESS: &str = "Bearer";
pub const TYP_REFRESH: &str = "Refresh";
pub const TYP_ID: &str = "ID";

/// Clock skew tolerated on `exp` (seconds).
pub const LEEWAY_S: u64 = 5;

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RoleSet {
    pub roles: Vec<String>,
}

/// The claims of an access (or refresh) token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccessClaims {
    pub exp: u64,
    pub iat: u64,
    /// `iat` to the millisecond: revocation compares it with the user's
    /// revocation instant (tokens issued before Herald 0.2 lack it).
    #[serde(default)]
    pub iat_ms: u64,
    pub jti: String,
    pub iss: String,
    pub aud: String,
    pub sub: String,
    pub typ: String,
    pub azp: String,
    pub session_state: String,
    pub scope: String,
    pub realm_access: RoleSet,
    #[serde(default)]
    pub resource_access: BTreeMap<String, RoleSet>,
    pub preferred_username: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(rename = "astClientId", default, skip_serializing_if = "Option::is_none")]
    pub ast_client_id: Option<String>,
}

/// The claims of an ID token (OpenID Connect Core §2), issued beside the
/// access token when the scope holds `openid`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdClaims {
    pub iss: String,
    pub sub: String,
    /// The client the token was issued to.
    pub aud: String,
    pub exp: u64,
    pub iat: u64,
    pub jti: String,
    pub typ: String,
    pub azp: String,
    /// The login session (what a logout with this token as hint ends).
    pub sid: String,
    pub session_state: String,
    pub preferred_username: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default)]
    pub email_verified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_name: Option<String>,
}

/// The token endpoint's answer (spec 001 "Token response").
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TokenPair {
    pub access_token: String,
    pub expires_in: u64,
    pub refresh_expires_in: u64,
    pub refresh_token: String,
    pub token_type: String,
    #[serde(rename = "not-before-policy")]
    pub not_before_policy: u64,
    pub session_state: String,
    pub scope: String,
    /// Present when the scope holds `openid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}

impl AccessClaims {
    /// When the token was issued, in milliseconds (from `iat` where `iat_ms` is absent).
    pub fn issued_ms(&self) -> u64 {
        if self.iat_ms > 0 {
            self.iat_ms
        } else {
            self.iat.saturating_mul(1000)
        }
    }
}

/// The issuer URL of a tenant realm.
pub fn issuer(public_url: &str, tenant: &str) -> String {
    format!("{}/auth/realms/{tenant}", public_url.trim_end_matches('/'))
}

/// Signs `claims` (an access or refresh token's, whose `typ` says which, or an
/// ID token's) with the tenant's key.
pub fn sign<C: Serialize>(key: &TenantKey, claims: &C) -> ApiResult<String> {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding)
        .map_err(|e| ApiError::internal(format!("signing a token: {e}")))
}

/// The tenant named by a token's `iss`, read before verification so the right
/// key can be chosen; nothing read here is trusted until `verify` succeeds.
fn claimed_tenant(token: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Iss {
        iss: String,
    }
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let iss: Iss = serde_json::from_slice(&bytes).ok()?;
    iss.iss.rsplit_once("/auth/realms/").map(|(_, t)| t.to_string())
}

/// Verifies a token of any tenant: ES256 only, signature by the tenant's key,
/// expiry, issuer, and the expected `typ`. Returns the tenant and the claims.
pub fn verify(
    store: &Store,
    keys: &KeyCache,
    public_url: &str,
    token: &str,
    typ: &str,
) -> ApiResult<(String, AccessClaims)> {
    let invalid = || ApiError::unauthorized("invalid or expired token");
    // A token seen before skips the signature check: ES256 verification is the
    // dominant cost of a request otherwise, and backends reuse their token.
    let now = herald_storage::now_ms() / 1000;
    if let Some(v) = keys.verified(token, now) {
        return if v.claims.typ == typ { Ok((v.tenant, v.claims)) } else { Err(invalid()) };
    }
    let tenant = claimed_tenant(token).ok_or_else(invalid)?;
    let key = keys.get(store, &tenant)?.ok_or_else(invalid)?;
    let data = decode::<AccessClaims>(token, &key, public_url, &tenant, true).map_err(|_| invalid())?;
    keys.remember(token, super::keys::Verified { tenant: tenant.clone(), claims: data.claims.clone() });
    if data.claims.typ != typ {
        return Err(invalid());
    }
    Ok((tenant, data.claims))
}

/// An ID token presented as a logout hint: signed by the tenant's key and
/// issued by its realm, but possibly expired (OpenID Connect RP-Initiated
/// Logout §2 asks the provider to accept those).
pub fn verify_id_hint(
    store: &Store,
    keys: &KeyCache,
    public_url: &str,
    tenant: &str,
    token: &str,
) -> ApiResult<IdClaims> {
    let invalid = || ApiError::oauth(http::StatusCode::BAD_REQUEST, "invalid_request", "invalid id_token_hint");
    let key = keys.get(store, tenant)?.ok_or_else(invalid)?;
    let data = decode::<IdClaims>(token, &key, public_url, tenant, false).map_err(|_| invalid())?;
    if data.claims.typ != TYP_ID {
        return Err(invalid());
    }
    Ok(data.claims)
}

/// Checks the signature (ES256, by `key`, whose `kid` the header must name)
/// and the issuer, and `exp` when `check_expiry`.
fn decode<C: serde::de::DeserializeOwned>(
    token: &str,
    key: &TenantKey,
    public_url: &str,
    tenant: &str,
    check_expiry: bool,
) -> jsonwebtoken::errors::Result<jsonwebtoken::TokenData<C>> {
    let header = jsonwebtoken::decode_header(token)?;
    if header.alg != Algorithm::ES256 || header.kid.as_deref() != Some(key.kid.as_str()) {
        return Err(jsonwebtoken::errors::ErrorKind::InvalidAlgorithm.into());
    }
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_issuer(&[issuer(public_url, tenant)]);
    validation.validate_aud = false;
    validation.validate_exp = check_expiry;
    if !check_expiry {
        validation.required_spec_claims.remove("exp");
    }
    validation.leeway = LEEWAY_S;
    jsonwebtoken::decode::<C>(token, &key.decoding, &validation)
}
