//! Whether a token whose signature and expiry check out is still in force:
//! what happened since it was issued (a logout, a revocation, a user
//! disabled, a client locked) can take it back before it expires. Every
//! route, the userinfo endpoint and token introspection ask the same way.

use super::tokens::{self, AccessClaims, TYP_ACCESS, TYP_REFRESH};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use herald_storage::clients::ClientState;

/// The claims of `token` if it is an access or a refresh token of realm
/// `tenant` (signature, issuer and expiry checked; not whether it is still
/// in force); the refresh kind is tried first when `refresh_first`.
pub(crate) fn realm_token(engine: &Engine, tenant: &str, token: &str, refresh_first: bool) -> Option<AccessClaims> {
    let kinds = if refresh_first { [TYP_REFRESH, TYP_ACCESS] } else { [TYP_ACCESS, TYP_REFRESH] };
    kinds.iter().find_map(|typ| {
        let (token_tenant, claims) =
            tokens::verify(&engine.store, &engine.keys, &engine.config.public_url, token, typ).ok()?;
        (token_tenant == tenant).then_some(claims)
    })
}

/// Whether a token of the realm (its claims) is still in force: an access
/// token by [`check_access`], a refresh token by [`check_refresh`].
pub(crate) async fn check(engine: &Engine, tenant: &str, claims: &AccessClaims) -> ApiResult<()> {
    match claims.typ.as_str() {
        TYP_REFRESH => check_refresh(engine, tenant, claims),
        _ => check_access(engine, tenant, claims).await,
    }
}

/// Refuses an access token taken back since it was issued: its session
/// ended (logout, revocation, a refresh token reused), or, for a user's
/// token, something taken from the user; for a client's, the client
/// deleted, locked or disconnected. Every authenticated request asks, so
/// what it reads is read together (see `herald_storage::request_reads`).
pub(crate) async fn check_access(engine: &Engine, tenant: &str, claims: &AccessClaims) -> ApiResult<()> {
    let (store, session) = (&engine.store, &claims.session_state);
    let (ended, standing) = match &claims.ast_client_id {
        Some(client) => {
            let (ended, state) = store.client_token_standing(tenant, session, client).await?;
            (ended, check_client(state, claims.iat))
        }
        None => {
            let (ended, revoked_before) = store.user_token_standing(tenant, session, &claims.sub).await?;
            (ended, check_user(claims, revoked_before))
        }
    };
    if ended {
        return Err(ApiError::unauthorized("the session ended: log in again"));
    }
    standing
}

/// A user's token stops working the moment something is taken from the user
/// (disabled, a role revoked, the password changed, its data deleted): every
/// such change records a revocation instant (`revoked_before`, ms), and
/// tokens issued before it are refused.
fn check_user(claims: &AccessClaims, revoked_before: u64) -> ApiResult<()> {
    if claims.issued_ms() < revoked_before {
        return Err(ApiError::unauthorized("the token was revoked: log in again"));
    }
    Ok(())
}

/// A client's token (issued at `issued_at`, s) stops working when the
/// client (`state`) is deleted, locked, or disconnected after it was issued.
fn check_client(state: Option<ClientState>, issued_at: u64) -> ApiResult<()> {
    match state {
        None => Err(ApiError::unauthorized("the client no longer exists")),
        Some(c) if c.locked => Err(ApiError::forbidden("the client is locked")),
        // `iat` has one-second resolution: a token from the disconnect's own second stays valid.
        Some(c) if issued_at < c.not_before_ms / 1000 => {
            Err(ApiError::unauthorized("the client was disconnected: log in again"))
        }
        Some(_) => Ok(()),
    }
}

/// Refuses a refresh token that can no longer be used: its user gone, not
/// allowed to log in or revoked since, or its session ended or moved on to
/// a newer refresh token. (The refresh grant makes the same checks in the
/// transaction that rotates the session.)
pub(crate) fn check_refresh(engine: &Engine, tenant: &str, claims: &AccessClaims) -> ApiResult<()> {
    let inactive = || ApiError::unauthorized("the refresh token is not active");
    let session = engine.store.identity().session(tenant, &claims.session_state)?.ok_or_else(inactive)?;
    if session.refresh_jti != claims.jti || session.user_id != claims.sub {
        return Err(inactive());
    }
    let user = engine.store.users().get(tenant, &claims.sub)?.ok_or_else(inactive)?;
    crate::models::user::may_log_in(&user).map_err(|_| inactive())?;
    check_user(claims, engine.store.users().tokens_revoked_before(tenant, &claims.sub)?)
}

/// Until when an ended session must be remembered (ms): until every token
/// it issued has expired.
pub(crate) fn remembered_until(engine: &Engine, now_ms: u64) -> u64 {
    let longest = engine.config.access_token_ttl.max(engine.config.refresh_token_ttl);
    now_ms.saturating_add(longest.saturating_add(super::tokens::LEEWAY_S).saturating_mul(1000))
}
