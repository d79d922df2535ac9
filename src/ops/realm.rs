//! Realm settings: login configuration, LDAP federation, app settings, OTP locks, and the token endpoint's sessions and login failures.

use super::commit;
use crate::auth::{brute_force, session};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::ldap::{self, BindCredential, LdapBody, MASK};
use crate::models::user::{self, OtpResend};
use herald_storage::identity::{LdapComponent, LoginFailure, OtpPolicy, Session};
use herald_storage::settings::LoginConfig;
use herald_storage::users::User;
use http::StatusCode;
use std::collections::BTreeMap;

/// Spec 002 login configuration of the tenant.
pub async fn set_login_config(engine: &Engine, tenant: &str, c: LoginConfig) -> ApiResult<()> {
    engine.store.transact(|tx| tx.set_login_config(tenant, &c))?;
    commit(engine).await
}

/// 400 `BAD_REQUEST` "Component Not found": Keycloak's answer for an unknown LDAP component.
pub fn component_not_found() -> ApiError {
    ApiError::bad_request("Component Not found").with_word("BAD_REQUEST")
}

/// What the body's `bindCredential` does, sealed before the transaction.
fn bind_credential(engine: &Engine, tenant: &str, id: &str, body: &LdapBody) -> ApiResult<BindCredential> {
    Ok(match body.value("bindCredential") {
        Some(MASK) => BindCredential::Keep,
        Some(v) if !v.is_empty() => {
            BindCredential::Set(engine.store.seal(v.as_bytes(), &LdapComponent::secret_context(tenant, id))?)
        }
        _ => BindCredential::Clear,
    })
}

/// Creates LDAP component `id` from a validated body; 409 when it exists.
pub async fn create_ldap(engine: &Engine, tenant: &str, id: &str, body: LdapBody) -> ApiResult<LdapComponent> {
    let exists = || ApiError::conflict("Component already exists").with_word("CONFLICT");
    if engine.store.identity().config::<LdapComponent>(tenant, &["ldap", id])?.is_some() {
        return Err(exists());
    }
    let credential = bind_credential(engine, tenant, id, &body)?;
    let mut body = body;
    ldap::take_bind_credential(&mut body);
    let c = ldap::component(tenant, id, body, &credential, None);
    engine.store.transact(|tx| tx.insert_config(tenant, &["ldap", id], &c, "component")).map_err(|e| match e {
        herald_storage::Error::Conflict(_) => exists(),
        other => other.into(),
    })?;
    commit(engine).await?;
    Ok(c)
}

/// Replaces LDAP component `id` (the body validated against the stored
/// component in the transaction: a masked credential keeps the stored one).
pub async fn update_ldap(engine: &Engine, tenant: &str, id: &str, body: LdapBody) -> ApiResult<LdapComponent> {
    let credential = bind_credential(engine, tenant, id, &body)?;
    let c = engine.store.transact(|tx| {
        let old: LdapComponent = tx.config(tenant, &["ldap", id])?.ok_or_else(component_not_found)?;
        let mut body = body.clone();
        body.validate(old.bind_credential.is_some())?;
        if body.id.as_deref().is_some_and(|b| b != id) {
            return Err(ApiError::field("id", "must match the path"));
        }
        ldap::take_bind_credential(&mut body);
        let c = ldap::component(tenant, id, body, &credential, Some(&old));
        tx.put_config(tenant, &["ldap", id], &c)?;
        Ok(c)
    })?;
    commit(engine).await?;
    Ok(c)
}

/// Sets some app settings (validated: [`ldap::app_settings_body`]) on the
/// stored ones ([`ldap::merge_app_settings`]); answers them all.
pub async fn put_app_settings(
    engine: &Engine,
    tenant: &str,
    body: &BTreeMap<String, String>,
) -> ApiResult<BTreeMap<String, String>> {
    let now = herald_storage::now_ms();
    let stored = engine.store.transact(|tx| {
        let mut stored: BTreeMap<String, String> = tx.config(tenant, &["appsettings"])?.unwrap_or_default();
        ldap::merge_app_settings(&mut stored, body, now);
        tx.put_config(tenant, &["appsettings"], &stored)?;
        Ok::<_, ApiError>(stored)
    })?;
    commit(engine).await?;
    Ok(stored)
}

/// The tenant's resend-OTP policy, as a transaction sees it.
fn otp_policy(tx: &herald_storage::Tx, tenant: &str) -> herald_storage::Result<OtpPolicy> {
    Ok(tx.config(tenant, &["otp-policy"])?.unwrap_or_default())
}

/// What one resend-OTP request came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resend {
    /// The tenant does not count resends.
    Disabled,
    /// Refused: the user is locked (`counted`: by this very resend).
    Locked {
        /// True when this resend reached the limit (and was counted).
        counted: bool,
    },
    /// Counted; the user may resend `remaining` more times before the lock.
    Accepted {
        /// Resends left in the current window.
        remaining: u32,
    },
}

/// Counts one OTP resend of the user of `username` ([`user::otp_resend`]).
pub async fn otp_resend(engine: &Engine, tenant: &str, username: &str) -> ApiResult<Resend> {
    let now = engine.config.clock.now_ms();
    let answer = engine.store.transact(|tx| {
        let u = tx.user_by_name(tenant, &username.to_lowercase())?.ok_or_else(super::users::user_not_found)?;
        let p = otp_policy(tx, tenant)?;
        if !p.enabled {
            return Ok(Resend::Disabled);
        }
        let stored = tx.otp_counter(tenant, &u.id)?.unwrap_or_default();
        match user::otp_resend(stored, &p, now) {
            OtpResend::Locked => Ok(Resend::Locked { counted: false }),
            OtpResend::Counted { counter, locked } => {
                tx.put_otp_counter(tenant, &u.id, &counter)?;
                Ok::<_, ApiError>(match locked {
                    true => Resend::Locked { counted: true },
                    false => Resend::Accepted { remaining: p.max_resends.saturating_sub(counter.count) },
                })
            }
        }
    })?;
    if matches!(answer, Resend::Locked { counted: true } | Resend::Accepted { .. }) {
        commit(engine).await?;
    }
    Ok(answer)
}

/// Unlocks the OTP resends of the user of `username`; false (nothing done)
/// when the tenant does not count resends.
pub async fn otp_unlock(engine: &Engine, tenant: &str, username: &str) -> ApiResult<bool> {
    let enabled = engine.store.transact(|tx| {
        let u = tx.user_by_name(tenant, &username.to_lowercase())?.ok_or_else(super::users::user_not_found)?;
        if !otp_policy(tx, tenant)?.enabled {
            return Ok(false);
        }
        tx.delete_otp_counter(tenant, &u.id)?;
        Ok::<_, ApiError>(true)
    })?;
    if enabled {
        commit(engine).await?;
    }
    Ok(enabled)
}

/// Unlocks every user's OTP resends: how many counters went; `None` when
/// the tenant does not count resends. The counters are listed before the
/// transaction, which checks that none was created since (their
/// generation), or lists them again.
pub async fn otp_unlock_all(engine: &Engine, tenant: &str) -> ApiResult<Option<usize>> {
    let identity = engine.store.identity();
    for _ in 0..5 {
        let generation = identity.otp_counters_generation(tenant)?;
        let users = identity.otp_counter_users(tenant)?;
        let done = engine.store.transact(|tx| {
            if !otp_policy(tx, tenant)?.enabled {
                return Ok(Some(None));
            }
            if tx.otp_counters_generation(tenant)? != generation {
                return Ok(None);
            }
            let mut n: usize = 0;
            for u in &users {
                n = n.saturating_add(usize::from(tx.delete_otp_counter(tenant, u)?));
            }
            Ok::<_, ApiError>(Some(Some(n)))
        })?;
        match done {
            Some(None) => return Ok(None),
            Some(n) => {
                commit(engine).await?;
                return Ok(n);
            }
            None => {}
        }
    }
    Err(ApiError::conflict("OTP counters kept changing: try again"))
}

/// 400 `invalid_grant` with this description (RFC 6749 §5.2).
pub fn invalid_grant(description: &str) -> ApiError {
    ApiError::oauth(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

/// 401 `invalid_grant` "Invalid user credentials": the one answer to a wrong
/// username or password, so neither reveals which.
pub fn invalid_credentials() -> ApiError {
    ApiError::oauth(StatusCode::UNAUTHORIZED, "invalid_grant", "Invalid user credentials")
}

/// Records one failed login of user `user_id` at `now` (Keycloak's
/// brute-force count: [`brute_force::Policy::record_failure`]) on the
/// record as stored, so concurrent failures all count.
pub async fn record_login_failure(engine: &Engine, tenant: &str, user_id: &str, now: u64) -> ApiResult<()> {
    let policy = brute_force::Policy::default();
    engine.store.transact(|tx| {
        let mut f = tx.login_failure(tenant, user_id)?.unwrap_or_default();
        policy.record_failure(&mut f, now);
        tx.put_login_failure(tenant, user_id, &f)
    })?;
    commit(engine).await
}

/// A password login to open a session for.
#[derive(Debug, Clone)]
pub struct Login<'a> {
    /// The id of the user whose password was verified.
    pub user_id: &'a str,
    /// The password hash the password was verified against.
    pub verified: Option<&'a str>,
    /// The brute-force clock's reading.
    pub now: u64,
    /// Id of the new session: the tokens' `session_state`.
    pub session_id: &'a str,
    /// The session record to store.
    pub session: Session,
}

/// Opens the session of a verified password login, checked in its
/// transaction against the user as stored: still there, with the password
/// verified, allowed to log in ([`user::may_log_in`]) and not locked out;
/// the user's login failures are cleared. Answers the user as stored, whose
/// tokens the caller issues with an issue instant taken before this call
/// (so a change that takes something from the user after it refuses them).
pub async fn open_session(engine: &Engine, tenant: &str, login: Login<'_>) -> ApiResult<User> {
    let user = engine.store.transact(|tx| {
        let u = tx.user(tenant, login.user_id)?.ok_or_else(invalid_credentials)?;
        if !user::password_unchanged(&u, login.verified) {
            return Err(invalid_credentials());
        }
        let failure: Option<LoginFailure> = tx.login_failure(tenant, &u.id)?;
        if failure.as_ref().is_some_and(|f| brute_force::Policy::is_locked(f, login.now)) {
            return Err(invalid_grant("Account temporarily disabled"));
        }
        user::may_log_in(&u).map_err(invalid_grant)?;
        tx.hold_revocation(tenant, &u.id)?;
        if failure.is_some() {
            tx.clear_login_failure(tenant, &u.id)?;
        }
        tx.put_session(tenant, login.session_id, &login.session)?;
        Ok::<_, ApiError>(u)
    })?;
    commit(engine).await?;
    Ok(user)
}

/// A refresh token presented at the token endpoint (verified and of this tenant).
#[derive(Debug, Clone)]
pub struct Refresh<'a> {
    /// The token's subject (the user's id).
    pub user_id: &'a str,
    /// The token's session (`session_state`).
    pub session_id: &'a str,
    /// The token's `jti`.
    pub jti: &'a str,
    /// When it was issued (ms).
    pub issued_ms: u64,
    /// The `jti` of the refresh token that replaces it.
    pub next_jti: String,
    /// Until when the session is remembered as ended if this is a reuse
    /// (`auth::session::remembered_until`).
    pub remember_until: u64,
}

/// Rotates a session: a refresh token is used once. In one transaction the
/// user must still be there and allowed to log in, the token issued after
/// the user's revocation instant, and the session hold this token; the
/// session then moves to `next_jti`. The reuse of an earlier token ends the
/// session. Answers the user as stored.
pub async fn refresh_session(engine: &Engine, tenant: &str, r: Refresh<'_>) -> ApiResult<User> {
    let rotated = engine.store.transact(|tx| {
        let u = tx.user(tenant, r.user_id)?.ok_or_else(|| invalid_grant("Invalid refresh token"))?;
        user::may_log_in(&u).map_err(invalid_grant)?;
        if r.issued_ms < tx.hold_revocation(tenant, &u.id)? {
            return Err(invalid_grant("Token is not active"));
        }
        let current = tx.session(tenant, r.session_id)?.ok_or_else(|| invalid_grant("Session not active"))?;
        if current.refresh_jti != r.jti || current.user_id != u.id {
            // A stolen token is worth one use at most: the session ends, and
            // with it the access tokens it issued.
            tx.end_session(tenant, r.session_id, r.remember_until)?;
            return Ok(None);
        }
        tx.put_session(tenant, r.session_id, &Session { refresh_jti: r.next_jti.clone(), ..current })?;
        Ok::<_, ApiError>(Some(u))
    })?;
    commit(engine).await?;
    rotated.ok_or_else(|| invalid_grant("Maximum allowed refresh token reuse exceeded"))
}

/// Ends login session `session_id` (a logout or a revocation): its refresh
/// token stops working and the access tokens it issued are refused from now
/// on. A session already ended, or never stored (a client's token), is
/// ended all the same.
pub async fn end_session(engine: &Engine, tenant: &str, session_id: &str) -> ApiResult<()> {
    let until = session::remembered_until(engine, herald_storage::now_ms());
    engine.store.transact(|tx| tx.end_session(tenant, session_id, until))?;
    commit(engine).await
}
