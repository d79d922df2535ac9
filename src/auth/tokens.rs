//! Access, refresh and ID tokens of a tenant realm (Keycloak-shaped claims, ES256).

use super::keys::{KeyCache, TenantKey, Verified};
use crate::error::{ApiError, ApiResult};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use herald_storage::Store;
use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `typ` of an access token: the only kind a bearer may present to the API.
pub const TYP_ACCESS: &str = "Bearer";
/// `typ` of a refresh token: accepted only by the token, logout, introspection and revocation endpoints.
pub const TYP_REFRESH: &str = "Refresh";
/// `typ` of an ID token: never a credential, only a logout hint.
pub const TYP_ID: &str = "ID";

/// Clock skew tolerated on `exp` (seconds).
pub const LEEWAY_S: u64 = 5;

/// A list of role names, in Keycloak's `{"roles": [...]}` claim shape.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RoleSet {
    /// Role names, as stored on the user (or `client` for a device client).
    pub roles: Vec<String>,
}

/// The claims of an access (or refresh) token.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccessClaims {
    /// Expiry, seconds since the epoch; verification allows [`LEEWAY_S`] of skew.
    pub exp: u64,
    /// Issue time, seconds since the epoch.
    pub iat: u64,
    /// `iat` to the millisecond: revocation compares it with the user's
    /// revocation instant (tokens issued before Herald 0.2 lack it).
    #[serde(default)]
    pub iat_ms: u64,
    /// Unique token id (a ULID); a refresh token's is the one its stored session expects.
    pub jti: String,
    /// The realm's issuer URL ([`issuer`]); a token of another realm fails verification.
    pub iss: String,
    /// `account` for a user's access token, the issuer for a refresh token, the client id for a device client.
    pub aud: String,
    /// The user's id, or the device client's id for a client-credentials token.
    pub sub: String,
    /// Which kind of token: [`TYP_ACCESS`] or [`TYP_REFRESH`].
    pub typ: String,
    /// The client the token was issued to.
    pub azp: String,
    /// The login session (a ULID) that logout and revocation end.
    pub session_state: String,
    /// Space-separated scopes granted.
    pub scope: String,
    /// The user's realm roles; what the route grants check.
    pub realm_access: RoleSet,
    /// The user's client roles, by client id.
    #[serde(default)]
    pub resource_access: BTreeMap<String, RoleSet>,
    /// The username (`service-account-<client>` for a device client).
    pub preferred_username: String,
    /// The user's email, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The device client, on a client-credentials token only.
    #[serde(rename = "astClientId", default, skip_serializing_if = "Option::is_none")]
    pub ast_client_id: Option<String>,
}

/// The claims of an ID token (OpenID Connect Core §2), issued beside the
/// access token when the scope holds `openid`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdClaims {
    /// The realm's issuer URL, as in the access token.
    pub iss: String,
    /// The user's id.
    pub sub: String,
    /// The client the token was issued to.
    pub aud: String,
    /// Expiry, seconds since the epoch (that of the access token).
    pub exp: u64,
    /// Issue time, seconds since the epoch.
    pub iat: u64,
    /// Unique token id (a ULID).
    pub jti: String,
    /// Always [`TYP_ID`].
    pub typ: String,
    /// The client the token was issued to (same as `aud`).
    pub azp: String,
    /// The login session (what a logout with this token as hint ends).
    pub sid: String,
    /// The same session as `sid`, under Keycloak's name.
    pub session_state: String,
    /// The username.
    pub preferred_username: String,
    /// The user's email, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Whether the user's email is marked verified.
    #[serde(default)]
    pub email_verified: bool,
    /// First and last name joined; absent when the user has neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The user's first name, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_name: Option<String>,
    /// The user's last name, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_name: Option<String>,
}

/// The token endpoint's answer (spec 001 "Token response").
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TokenPair {
    /// The access token (an ES256 JWT) to send as `Authorization: Bearer`.
    pub access_token: String,
    /// Lifetime of the access token, in seconds.
    pub expires_in: u64,
    /// Lifetime of the refresh token, in seconds; 0 when none is issued.
    pub refresh_expires_in: u64,
    /// Token for the `refresh_token` grant; empty for client credentials or when the session could not be stored.
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// Always 0 (Keycloak's field; Herald has no not-before policy).
    #[serde(rename = "not-before-policy")]
    pub not_before_policy: u64,
    /// The login session the tokens belong to; logout ends it.
    pub session_state: String,
    /// Space-separated scopes granted (`openid profile email` by default for a user).
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
    let v = verify_shared(store, keys, public_url, token, typ)?;
    Ok((v.tenant().to_string(), v.claims.clone()))
}

/// [`verify`], answering the verification cache's entry itself: a request
/// that needs a few claims does not copy them all.
pub(crate) fn verify_shared(
    store: &Store,
    keys: &KeyCache,
    public_url: &str,
    token: &str,
    typ: &str,
) -> ApiResult<Arc<Verified>> {
    let invalid = || ApiError::unauthorized("invalid or expired token");
    // A token seen before skips the signature check: ES256 verification is the
    // dominant cost of a request otherwise, and backends reuse their token.
    let now = herald_storage::now_ms() / 1000;
    let verified = match keys.verified(token, now) {
        Some(v) => v,
        None => {
            let tenant = claimed_tenant(token).ok_or_else(invalid)?;
            let key = keys.get(store, &tenant)?.ok_or_else(invalid)?;
            let data = decode::<AccessClaims>(token, &key, public_url, &tenant, true).map_err(|_| invalid())?;
            let v = Arc::new(Verified::new(tenant, data.claims));
            keys.remember(token, Arc::clone(&v));
            v
        }
    };
    if verified.claims.typ != typ {
        return Err(invalid());
    }
    Ok(verified)
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
