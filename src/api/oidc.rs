//! The realm's OpenID Connect endpoints: token, discovery, JWKS.

use crate::auth::tokens::{self, issuer, AccessClaims, RoleSet, TokenPair, TYP_ACCESS, TYP_REFRESH};
use crate::auth::{brute_force, password, roles, TenantKey};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::user::may_log_in;
use crate::ops::realm::{self, invalid_grant};
use herald_storage::identity::Session;
use herald_storage::users::User;
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Token request parameters, form-encoded or JSON. Unknown parameters are
/// ignored, as OAuth 2.0 requires of the token endpoint.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct TokenRequest {
    grant_type: Option<String>,
    username: Option<String>,
    password: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    scope: Option<String>,
}

fn invalid_request(description: &str) -> ApiError {
    ApiError::oauth(StatusCode::BAD_REQUEST, "invalid_request", description)
}

fn parse_request(cx: &Cx) -> ApiResult<TokenRequest> {
    let is_json = cx.header("content-type").is_some_and(|c| c.starts_with("application/json"));
    if is_json {
        serde_json::from_slice(&cx.body).map_err(|e| invalid_request(&format!("malformed JSON body: {e}")))
    } else {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(&cx.body).into_owned().collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        Ok(TokenRequest {
            grant_type: get("grant_type"),
            username: get("username"),
            password: get("password"),
            client_id: get("client_id"),
            client_secret: get("client_secret"),
            refresh_token: get("refresh_token"),
            scope: get("scope"),
        })
    }
}

pub async fn token(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant().to_string();
    let key = realm_key(&cx.engine, &tenant)?;
    if let Some(ip) = cx.peer {
        cx.engine.limits.token_ip.check(&ip.to_string())?;
    }
    let req = parse_request(&cx)?;
    // Per user (password grant) or client (client credentials); a refresh grant
    // names neither before its token is verified, and falls under the address limit only.
    if let Some(who) = req.username.as_deref().or(req.client_id.as_deref()) {
        cx.engine.limits.token_user.check(&format!("{tenant}\0{}", who.to_lowercase()))?;
    }
    let pair = match req.grant_type.as_deref() {
        Some("password") => password_grant(&cx.engine, &tenant, &key, req).await?,
        Some("refresh_token") => refresh_grant(&cx.engine, &tenant, &key, req).await?,
        Some("client_credentials") => client_grant(&cx.engine, &tenant, &key, req)?,
        Some(other) => {
            return Err(ApiError::oauth(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                format!("unsupported grant type {other}"),
            ))
        }
        None => return Err(invalid_request("Missing form parameter: grant_type")),
    };
    let mut resp = json(StatusCode::OK, &pair)?;
    resp.headers_mut().insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// The token-signing key of the realm, or 404 as OAuth answers it.
fn realm_key(engine: &Engine, tenant: &str) -> ApiResult<Arc<TenantKey>> {
    engine
        .keys
        .get(&engine.store, tenant)?
        .ok_or_else(|| ApiError::oauth(StatusCode::NOT_FOUND, "invalid_request", "Realm does not exist"))
}

/// The password grant as the token endpoint answers it, without the
/// endpoint's rate limits (the library's `engine.realm().password_grant`).
pub(crate) async fn password_login(
    engine: &Engine,
    tenant: &str,
    username: &str,
    password: &str,
) -> ApiResult<TokenPair> {
    let key = realm_key(engine, tenant)?;
    let req = TokenRequest {
        grant_type: Some("password".into()),
        username: Some(username.to_string()),
        password: Some(password.to_string()),
        ..TokenRequest::default()
    };
    password_grant(engine, tenant, &key, req).await
}

async fn password_grant(engine: &Engine, tenant: &str, key: &TenantKey, req: TokenRequest) -> ApiResult<TokenPair> {
    let (Some(username), Some(password)) = (req.username, req.password) else {
        return Err(invalid_request("username and password are required"));
    };
    let user = engine.store.users().get_by_name(tenant, &username.to_lowercase())?;
    let hash = user.as_ref().and_then(|u| u.password()).map(|c| c.hash.clone());
    // Brute-force protection (Keycloak's temporary lockout). The password is
    // verified on every path, so a refusal takes as long as an answer.
    let now = engine.config.clock.now_ms();
    let failure = match &user {
        Some(u) => engine.store.identity().login_failure(tenant, &u.id)?,
        None => None,
    };
    let locked = failure.as_ref().is_some_and(|f| brute_force::Policy::is_locked(f, now));
    let verified = hash.clone();
    let ok = tokio::task::spawn_blocking(move || password::verify(&password, verified.as_deref()))
        .await
        .map_err(|_| ApiError::internal("password check failed"))?;
    if locked {
        return Err(invalid_grant("Account temporarily disabled"));
    }
    // On a full disk, tokens are still issued, but nothing is recorded: no
    // failure count and no session, so no refresh token either.
    let writable = engine.store.writable().is_ok();
    let user = match (ok, user) {
        (true, Some(u)) => u,
        (false, Some(u)) => {
            if writable {
                realm::record_login_failure(engine, tenant, &u.id, now).await?;
            }
            return Err(realm::invalid_credentials());
        }
        _ => return Err(realm::invalid_credentials()),
    };
    may_log_in(&user).map_err(invalid_grant)?;
    let client_id = req.client_id.unwrap_or_else(|| "herald".to_string());
    let session_id = ulid::Ulid::generate().to_string();
    // Taken before the session is opened: a change that takes something from
    // the user once the session is open refuses these tokens.
    let issued_ms = herald_storage::now_ms();
    if !writable {
        tracing::warn!(tenant, "disk full: access token issued without a refresh session");
        return issue_user_tokens(engine, tenant, key, &user, &client_id, req.scope, &session_id, None, issued_ms);
    }
    // A session holds the one refresh token that may still be used.
    let session =
        Session { user_id: user.id.clone(), refresh_jti: ulid::Ulid::generate().to_string(), created_ms: now };
    let jti = session.refresh_jti.clone();
    let login = realm::Login { user_id: &user.id, verified: hash.as_deref(), now, session_id: &session_id, session };
    let user = realm::open_session(engine, tenant, login).await?;
    issue_user_tokens(engine, tenant, key, &user, &client_id, req.scope, &session_id, Some(&jti), issued_ms)
}

async fn refresh_grant(engine: &Arc<Engine>, tenant: &str, key: &TenantKey, req: TokenRequest) -> ApiResult<TokenPair> {
    // A refresh rotates its session (a write): refused up front on a full disk.
    engine.store.writable()?;
    let token = req.refresh_token.ok_or_else(|| invalid_request("refresh_token is required"))?;
    let (token_tenant, claims) =
        tokens::verify(&engine.store, &engine.keys, &engine.config.public_url, &token, TYP_REFRESH)
            .map_err(|_| invalid_grant("Invalid refresh token"))?;
    if token_tenant != tenant {
        return Err(invalid_grant("Invalid refresh token"));
    }
    // Refresh tokens are single-use: the session moves to a new one; the reuse
    // of an old one ends the session (a stolen token is worth one use at most).
    let issued_ms = herald_storage::now_ms();
    let next_jti = ulid::Ulid::generate().to_string();
    let refresh = realm::Refresh {
        user_id: &claims.sub,
        session_id: &claims.session_state,
        jti: &claims.jti,
        issued_ms: claims.issued_ms(),
        next_jti: next_jti.clone(),
    };
    let user = realm::refresh_session(engine, tenant, refresh).await?;
    let (sid, scope) = (&claims.session_state, Some(claims.scope.clone()));
    issue_user_tokens(engine, tenant, key, &user, &claims.azp, scope, sid, Some(&next_jti), issued_ms)
}

fn client_grant(engine: &Arc<Engine>, tenant: &str, key: &TenantKey, req: TokenRequest) -> ApiResult<TokenPair> {
    let unauthorized =
        || ApiError::oauth(StatusCode::UNAUTHORIZED, "unauthorized_client", "Invalid client or client credentials");
    let (Some(id), Some(secret)) = (req.client_id, req.client_secret) else {
        return Err(invalid_request("client_id and client_secret are required"));
    };
    let client = engine.store.clients().get(tenant, &id)?.ok_or_else(unauthorized)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
    if !crate::auth::secrets_equal(digest.as_ref(), &client.secret_hash) {
        return Err(unauthorized());
    }
    if client.is_locked() {
        return Err(invalid_grant("Client is locked"));
    }
    let now_ms = herald_storage::now_ms();
    let now = now_ms / 1000;
    let ttl = engine.config.access_token_ttl;
    let claims = AccessClaims {
        exp: now + ttl,
        iat: now,
        iat_ms: now_ms,
        jti: ulid::Ulid::generate().to_string(),
        iss: issuer(&engine.config.public_url, tenant),
        aud: id.clone(),
        sub: id.clone(),
        typ: TYP_ACCESS.into(),
        azp: id.clone(),
        session_state: ulid::Ulid::generate().to_string(),
        scope: "profile".into(),
        realm_access: RoleSet { roles: vec![roles::CLIENT.to_string()] },
        resource_access: Default::default(),
        preferred_username: format!("service-account-{}", id.to_lowercase()),
        email: None,
        ast_client_id: Some(id),
    };
    Ok(TokenPair {
        access_token: tokens::sign(key, &claims)?,
        expires_in: ttl,
        refresh_expires_in: 0,
        refresh_token: String::new(),
        token_type: "Bearer".into(),
        not_before_policy: 0,
        session_state: claims.session_state,
        scope: claims.scope,
    })
}

#[allow(clippy::too_many_arguments)]
fn issue_user_tokens(
    engine: &Engine,
    tenant: &str,
    key: &TenantKey,
    user: &User,
    client_id: &str,
    scope: Option<String>,
    session: &str,
    refresh_jti: Option<&str>,
    now_ms: u64,
) -> ApiResult<TokenPair> {
    let now = now_ms / 1000;
    let cfg = &engine.config;
    let access = AccessClaims {
        exp: now + cfg.access_token_ttl,
        iat: now,
        iat_ms: now_ms,
        jti: ulid::Ulid::generate().to_string(),
        iss: issuer(&cfg.public_url, tenant),
        aud: "account".into(),
        sub: user.id.clone(),
        typ: TYP_ACCESS.into(),
        azp: client_id.to_string(),
        session_state: session.to_string(),
        scope: scope.unwrap_or_else(|| "openid profile email".into()),
        realm_access: RoleSet { roles: user.realm_roles.clone() },
        resource_access: user.client_roles.iter().map(|(c, r)| (c.clone(), RoleSet { roles: r.clone() })).collect(),
        preferred_username: user.username.clone(),
        email: user.email.clone(),
        ast_client_id: None,
    };
    // Without a session (a full disk), no refresh token: it could not be used.
    let (refresh_token, refresh_expires_in) = match refresh_jti {
        Some(jti) => {
            let refresh = AccessClaims {
                exp: now + cfg.refresh_token_ttl,
                jti: jti.to_string(),
                typ: TYP_REFRESH.into(),
                aud: access.iss.clone(),
                ..access.clone()
            };
            (tokens::sign(key, &refresh)?, cfg.refresh_token_ttl)
        }
        None => (String::new(), 0),
    };
    Ok(TokenPair {
        access_token: tokens::sign(key, &access)?,
        expires_in: cfg.access_token_ttl,
        refresh_expires_in,
        refresh_token,
        token_type: "Bearer".into(),
        not_before_policy: 0,
        session_state: access.session_state,
        scope: access.scope,
    })
}

pub async fn discovery(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    if cx.engine.store.tenants().get(tenant)?.is_none() {
        return Err(ApiError::not_found("Realm does not exist"));
    }
    let iss = issuer(&cx.engine.config.public_url, tenant);
    let p = format!("{iss}/protocol/openid-connect");
    let algs = json!(["ES256"]);
    json(
        StatusCode::OK,
        &json!({
            "issuer": iss,
            "authorization_endpoint": format!("{p}/auth"),
            "token_endpoint": format!("{p}/token"),
            "introspection_endpoint": format!("{p}/token/introspect"),
            "userinfo_endpoint": format!("{p}/userinfo"),
            "end_session_endpoint": format!("{p}/logout"),
            "jwks_uri": format!("{p}/certs"),
            "check_session_iframe": format!("{p}/login-status-iframe.html"),
            "registration_endpoint": format!("{iss}/clients-registrations/openid-connect"),
            "revocation_endpoint": format!("{p}/revoke"),
            "device_authorization_endpoint": format!("{p}/auth/device"),
            "backchannel_authentication_endpoint": format!("{p}/ext/ciba/auth"),
            "pushed_authorization_request_endpoint": format!("{p}/ext/par/request"),
            "mtls_endpoint_aliases": {
                "token_endpoint": format!("{p}/token"),
                "revocation_endpoint": format!("{p}/revoke"),
                "introspection_endpoint": format!("{p}/token/introspect"),
                "device_authorization_endpoint": format!("{p}/auth/device"),
                "registration_endpoint": format!("{iss}/clients-registrations/openid-connect"),
                "userinfo_endpoint": format!("{p}/userinfo"),
                "pushed_authorization_request_endpoint": format!("{p}/ext/par/request"),
                "backchannel_authentication_endpoint": format!("{p}/ext/ciba/auth"),
            },
            "grant_types_supported": ["password", "refresh_token", "client_credentials"],
            "response_types_supported": ["token"],
            "response_modes_supported": ["query", "fragment", "form_post"],
            "subject_types_supported": ["public", "pairwise"],
            "id_token_signing_alg_values_supported": algs,
            "id_token_encryption_alg_values_supported": [],
            "id_token_encryption_enc_values_supported": [],
            "userinfo_signing_alg_values_supported": algs,
            "userinfo_encryption_alg_values_supported": [],
            "userinfo_encryption_enc_values_supported": [],
            "request_object_signing_alg_values_supported": algs,
            "request_object_encryption_alg_values_supported": [],
            "request_object_encryption_enc_values_supported": [],
            "authorization_signing_alg_values_supported": algs,
            "authorization_encryption_alg_values_supported": [],
            "authorization_encryption_enc_values_supported": [],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "token_endpoint_auth_signing_alg_values_supported": algs,
            "introspection_endpoint_auth_methods_supported": ["client_secret_post"],
            "introspection_endpoint_auth_signing_alg_values_supported": algs,
            "revocation_endpoint_auth_methods_supported": ["client_secret_post"],
            "revocation_endpoint_auth_signing_alg_values_supported": algs,
            "backchannel_token_delivery_modes_supported": ["poll", "ping"],
            "backchannel_authentication_request_signing_alg_values_supported": algs,
            "claims_supported": ["aud", "sub", "iss", "exp", "iat", "jti", "azp", "preferred_username", "email", "realm_access", "resource_access", "scope", "session_state"],
            "claim_types_supported": ["normal"],
            "scopes_supported": ["openid", "profile", "email"],
            "code_challenge_methods_supported": ["plain", "S256"],
            "acr_values_supported": ["0", "1"],
            "claims_parameter_supported": false,
            "request_parameter_supported": false,
            "request_uri_parameter_supported": false,
            "require_request_uri_registration": false,
            "require_pushed_authorization_requests": false,
            "tls_client_certificate_bound_access_tokens": false,
            "backchannel_logout_supported": false,
            "backchannel_logout_session_supported": false,
            "frontchannel_logout_supported": false,
            "frontchannel_logout_session_supported": false,
        }),
    )
}

pub async fn certs(cx: Cx) -> ApiResult<Response> {
    let key = cx
        .engine
        .keys
        .get(&cx.engine.store, cx.tenant())?
        .ok_or_else(|| ApiError::not_found("Realm does not exist"))?;
    json(StatusCode::OK, &json!({ "keys": [key.jwk()] }))
}
