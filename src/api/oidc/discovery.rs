//! What a client library reads before it calls a realm: the discovery
//! document (exactly the endpoints Herald serves), the JWKS, and Keycloak's
//! realm info with the public key.

use crate::auth::tokens::issuer;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use base64::Engine as _;
use http::StatusCode;
use serde::Serialize;

/// The OpenID Provider metadata of a realm (OpenID Connect Discovery 1.0 §3,
/// RFC 8414). It advertises only what is served: no authorization endpoint
/// (Herald's grants are password, refresh token and client credentials), no
/// dynamic registration, device, CIBA or PAR endpoints.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Discovery {
    issuer: String,
    token_endpoint: String,
    introspection_endpoint: String,
    userinfo_endpoint: String,
    end_session_endpoint: String,
    jwks_uri: String,
    revocation_endpoint: String,
    grant_types_supported: Vec<&'static str>,
    /// Required by the metadata specifications even without an authorization
    /// endpoint; `token` is the one response type the grants here produce.
    response_types_supported: Vec<&'static str>,
    subject_types_supported: Vec<&'static str>,
    /// `RS256` is listed because OpenID Connect Discovery requires it and
    /// client libraries (Authlib) reject a document without it; the ID tokens
    /// Herald issues are ES256, the algorithm of the realm's key (API.md).
    id_token_signing_alg_values_supported: Vec<&'static str>,
    token_endpoint_auth_methods_supported: Vec<&'static str>,
    introspection_endpoint_auth_methods_supported: Vec<&'static str>,
    revocation_endpoint_auth_methods_supported: Vec<&'static str>,
    claims_supported: Vec<&'static str>,
    claim_types_supported: Vec<&'static str>,
    scopes_supported: Vec<&'static str>,
    claims_parameter_supported: bool,
    request_parameter_supported: bool,
    request_uri_parameter_supported: bool,
    require_request_uri_registration: bool,
    backchannel_logout_supported: bool,
    frontchannel_logout_supported: bool,
}

const CLIENT_AUTH: [&str; 2] = ["client_secret_basic", "client_secret_post"];

pub(crate) async fn discovery(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    if cx.engine.store.tenants().get(tenant)?.is_none() {
        return Err(ApiError::not_found("Realm does not exist"));
    }
    let iss = issuer(&cx.engine.config.public_url, tenant);
    let p = format!("{iss}/protocol/openid-connect");
    let doc = Discovery {
        token_endpoint: format!("{p}/token"),
        introspection_endpoint: format!("{p}/token/introspect"),
        userinfo_endpoint: format!("{p}/userinfo"),
        end_session_endpoint: format!("{p}/logout"),
        jwks_uri: format!("{p}/certs"),
        revocation_endpoint: format!("{p}/revoke"),
        issuer: iss,
        grant_types_supported: super::token::GRANT_TYPES.to_vec(),
        response_types_supported: vec!["token"],
        subject_types_supported: vec!["public"],
        id_token_signing_alg_values_supported: vec!["ES256", "RS256"],
        token_endpoint_auth_methods_supported: CLIENT_AUTH.to_vec(),
        introspection_endpoint_auth_methods_supported: CLIENT_AUTH.to_vec(),
        revocation_endpoint_auth_methods_supported: CLIENT_AUTH.to_vec(),
        claims_supported: vec![
            "aud",
            "sub",
            "iss",
            "exp",
            "iat",
            "jti",
            "azp",
            "sid",
            "preferred_username",
            "email",
            "email_verified",
            "name",
            "given_name",
            "family_name",
            "realm_access",
            "resource_access",
            "scope",
            "session_state",
        ],
        claim_types_supported: vec!["normal"],
        scopes_supported: vec!["openid", "profile", "email"],
        claims_parameter_supported: false,
        request_parameter_supported: false,
        request_uri_parameter_supported: false,
        require_request_uri_registration: false,
        backchannel_logout_supported: false,
        frontchannel_logout_supported: false,
    };
    json(StatusCode::OK, &doc)
}

/// The realm's JSON Web Key Set.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Jwks {
    keys: Vec<crate::auth::Jwk>,
}

pub(crate) async fn certs(cx: Cx) -> ApiResult<Response> {
    let key = cx
        .engine
        .keys
        .get(&cx.engine.store, cx.tenant())?
        .ok_or_else(|| ApiError::not_found("Realm does not exist"))?;
    json(StatusCode::OK, &Jwks { keys: vec![key.public_jwk()] })
}

/// Keycloak's realm info (`GET /auth/realms/{realm}`), which client
/// libraries read the public key from.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RealmInfo {
    realm: String,
    /// Base64 DER SubjectPublicKeyInfo of the key that signs the realm's tokens.
    public_key: String,
    #[serde(rename = "token-service")]
    token_service: String,
    #[serde(rename = "account-service")]
    account_service: String,
    #[serde(rename = "tokens-not-before")]
    tokens_not_before: u64,
}

pub(crate) async fn realm_info(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let key =
        cx.engine.keys.get(&cx.engine.store, tenant)?.ok_or_else(|| ApiError::not_found("Realm does not exist"))?;
    let iss = issuer(&cx.engine.config.public_url, tenant);
    let info = RealmInfo {
        realm: tenant.to_string(),
        public_key: base64::engine::general_purpose::STANDARD.encode(&key.spki),
        token_service: format!("{iss}/protocol/openid-connect"),
        account_service: format!("{iss}/account"),
        tokens_not_before: 0,
    };
    json(StatusCode::OK, &info)
}
