//! The token endpoint: password, refresh-token and client-credentials grants.

use super::client_auth::OAuthClient;
use super::params::{invalid_request, Params};
use crate::auth::tokens::{self, issuer, AccessClaims, IdClaims, RoleSet, TokenPair, TYP_ACCESS, TYP_ID, TYP_REFRESH};
use crate::auth::{brute_force, password, roles, TenantKey};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::user::{full_name, may_log_in};
use crate::ops::realm::{self, invalid_grant};
use herald_storage::identity::Session;
use herald_storage::users::User;
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use std::sync::Arc;

/// The grants served, as discovery lists them.
pub const GRANT_TYPES: [&str; 3] = ["password", "refresh_token", "client_credentials"];

fn grant_type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&GRANT_TYPES)
}

/// The token request (RFC 6749 §4), form-encoded as OAuth clients send it;
/// a JSON object of strings is accepted too, but not documented (a body
/// declared under two encodings breaks generated clients). Unknown
/// parameters are ignored, as OAuth 2.0 requires. The client may
/// authenticate with HTTP Basic instead of `client_id` and `client_secret`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct TokenRequest {
    /// Which grant: `password`, `refresh_token` or `client_credentials`; anything else is `unsupported_grant_type`.
    #[schema(schema_with = grant_type_schema, required = true)]
    pub grant_type: Option<String>,
    /// Password grant.
    pub username: Option<String>,
    /// Password grant.
    pub password: Option<String>,
    /// The client (`client_secret_post`); optional for a public client.
    pub client_id: Option<String>,
    /// The client's secret (`client_secret_post`).
    pub client_secret: Option<String>,
    /// Refresh token grant.
    pub refresh_token: Option<String>,
    /// Space-separated scopes; `openid` adds an ID token.
    pub scope: Option<String>,
}

pub(crate) async fn token(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant().to_string();
    let key = realm_key(&cx.engine, &tenant)?;
    // A refresh grant names neither user nor client before its token is
    // verified, and falls under the address limit only.
    let params = Params::limited(&cx)?;
    let client = OAuthClient::identify(&cx.engine, &tenant, &cx.headers, &params)?;
    let req: TokenRequest = params.decode()?;
    let pair = match req.grant_type.as_deref() {
        Some("password") => {
            let (Some(username), Some(password)) = (req.username, req.password) else {
                return Err(invalid_request("username and password are required"));
            };
            password_grant(&cx.engine, &tenant, &key, &client, &username, &password, req.scope).await?
        }
        Some("refresh_token") => {
            let token = req.refresh_token.ok_or_else(|| invalid_request("refresh_token is required"))?;
            refresh_grant(&cx.engine, &tenant, &key, &client, &token).await?
        }
        Some("client_credentials") => client_grant(&cx.engine, &tenant, &key, client)?,
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
pub(super) fn realm_key(engine: &Engine, tenant: &str) -> ApiResult<Arc<TenantKey>> {
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
    password_grant(engine, tenant, &key, &OAuthClient::Unnamed, username, password, None).await
}

/// The client a password grant's tokens are issued to (`azp`) when it names none.
const DEFAULT_CLIENT: &str = "herald";

async fn password_grant(
    engine: &Engine,
    tenant: &str,
    key: &TenantKey,
    client: &OAuthClient,
    username: &str,
    password: &str,
    scope: Option<String>,
) -> ApiResult<TokenPair> {
    if let OAuthClient::Confidential(c) = client {
        if c.is_locked() {
            return Err(invalid_grant("Client is locked"));
        }
    }
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
    let password = password.to_string();
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
    let grant = Grant {
        client_id: client.id().unwrap_or(DEFAULT_CLIENT),
        scope,
        session: &ulid::Ulid::generate().to_string(),
        // Taken before the session is opened: a change that takes something from
        // the user once the session is open refuses these tokens.
        issued_ms: herald_storage::now_ms(),
        refresh_jti: None,
    };
    if !writable {
        tracing::warn!(tenant, "disk full: access token issued without a refresh session");
        return issue_user_tokens(engine, tenant, key, &user, grant);
    }
    // A session holds the one refresh token that may still be used.
    let session =
        Session { user_id: user.id.clone(), refresh_jti: ulid::Ulid::generate().to_string(), created_ms: now };
    let jti = session.refresh_jti.clone();
    let login = realm::Login { user_id: &user.id, verified: hash.as_deref(), now, session_id: grant.session, session };
    let user = realm::open_session(engine, tenant, login).await?;
    issue_user_tokens(engine, tenant, key, &user, Grant { refresh_jti: Some(&jti), ..grant })
}

async fn refresh_grant(
    engine: &Arc<Engine>,
    tenant: &str,
    key: &TenantKey,
    client: &OAuthClient,
    token: &str,
) -> ApiResult<TokenPair> {
    // A refresh rotates its session (a write): refused up front on a full disk.
    engine.store.writable()?;
    let (token_tenant, claims) =
        tokens::verify(&engine.store, &engine.keys, &engine.config.public_url, token, TYP_REFRESH)
            .map_err(|_| invalid_grant("Invalid refresh token"))?;
    if token_tenant != tenant {
        return Err(invalid_grant("Invalid refresh token"));
    }
    client.may_present(engine, tenant, &claims.azp)?;
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
        remember_until: crate::auth::session::remembered_until(engine, issued_ms),
    };
    let user = realm::refresh_session(engine, tenant, refresh).await?;
    let grant = Grant {
        client_id: &claims.azp,
        scope: Some(claims.scope.clone()),
        session: &claims.session_state,
        issued_ms,
        refresh_jti: Some(&next_jti),
    };
    issue_user_tokens(engine, tenant, key, &user, grant)
}

fn client_grant(engine: &Arc<Engine>, tenant: &str, key: &TenantKey, client: OAuthClient) -> ApiResult<TokenPair> {
    let OAuthClient::Confidential(client) = client else {
        return Err(invalid_request("client_id and client_secret are required"));
    };
    if client.is_locked() {
        return Err(invalid_grant("Client is locked"));
    }
    let id = client.id;
    let now_ms = herald_storage::now_ms();
    let now = now_ms / 1000;
    let ttl = engine.config.access_token_ttl;
    let claims = AccessClaims {
        exp: now.saturating_add(ttl),
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
        id_token: None,
    })
}

/// What a user's tokens are issued for.
struct Grant<'a> {
    /// The client they are issued to (`azp`).
    client_id: &'a str,
    scope: Option<String>,
    /// The login session (`session_state`, `sid`).
    session: &'a str,
    issued_ms: u64,
    /// The session's refresh token; none without a stored session (a full disk).
    refresh_jti: Option<&'a str>,
}

/// Whether `scope` asks for OpenID Connect (an ID token).
fn wants_id_token(scope: &str) -> bool {
    scope.split(' ').any(|s| s == "openid")
}

fn issue_user_tokens(
    engine: &Engine,
    tenant: &str,
    key: &TenantKey,
    user: &User,
    grant: Grant<'_>,
) -> ApiResult<TokenPair> {
    let now = grant.issued_ms / 1000;
    let cfg = &engine.config;
    let access = AccessClaims {
        exp: now.saturating_add(cfg.access_token_ttl),
        iat: now,
        iat_ms: grant.issued_ms,
        jti: ulid::Ulid::generate().to_string(),
        iss: issuer(&cfg.public_url, tenant),
        aud: "account".into(),
        sub: user.id.clone(),
        typ: TYP_ACCESS.into(),
        azp: grant.client_id.to_string(),
        session_state: grant.session.to_string(),
        scope: grant.scope.unwrap_or_else(|| "openid profile email".into()),
        realm_access: RoleSet { roles: user.realm_roles.clone() },
        resource_access: user.client_roles.iter().map(|(c, r)| (c.clone(), RoleSet { roles: r.clone() })).collect(),
        preferred_username: user.username.clone(),
        email: user.email.clone(),
        ast_client_id: None,
    };
    // Without a session (a full disk), no refresh token: it could not be used.
    let (refresh_token, refresh_expires_in) = match grant.refresh_jti {
        Some(jti) => {
            let refresh = AccessClaims {
                exp: now.saturating_add(cfg.refresh_token_ttl),
                jti: jti.to_string(),
                typ: TYP_REFRESH.into(),
                aud: access.iss.clone(),
                ..access.clone()
            };
            (tokens::sign(key, &refresh)?, cfg.refresh_token_ttl)
        }
        None => (String::new(), 0),
    };
    let id_token = match wants_id_token(&access.scope) {
        true => Some(tokens::sign(key, &id_claims(user, &access))?),
        false => None,
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
        id_token,
    })
}

/// The ID token issued with `access` (same session, lifetime and client).
fn id_claims(user: &User, access: &AccessClaims) -> IdClaims {
    IdClaims {
        iss: access.iss.clone(),
        sub: user.id.clone(),
        aud: access.azp.clone(),
        exp: access.exp,
        iat: access.iat,
        jti: ulid::Ulid::generate().to_string(),
        typ: TYP_ID.into(),
        azp: access.azp.clone(),
        sid: access.session_state.clone(),
        session_state: access.session_state.clone(),
        preferred_username: user.username.clone(),
        email: user.email.clone(),
        email_verified: user.email_verified,
        name: full_name(user),
        given_name: user.first_name.clone(),
        family_name: user.last_name.clone(),
    }
}
