//! Configuration of a tenant's realm: the LDAP federation component, the
//! app settings, the login configuration, the resend-OTP locks of its
//! users; logging a user in with its password; whether a token is active,
//! and taking one back.

use crate::auth::session;
use crate::auth::{Access, Caller, TokenPair, ADMIN, ADMIN_OR_CLIENT, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::ldap::{app_setting_keys, validate_app_settings, LdapBody, LdapView, LoginConfigBody};
use crate::models::user::{otp_current, OtpLockStatus, OtpResent, OtpUnlocked};
use crate::models::validate;
use crate::ops::realm::{self as ops, component_not_found, Resend};
use herald_storage::identity::{LdapComponent, OtpPolicy};
use std::collections::BTreeMap;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const CONFIGURE: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
    /// The app settings are read by apps before anyone logs in.
    pub const READ_APP_SETTINGS: Access = Access::Public;
    pub const OTP_RESEND: Access = Access::Tenant(ADMIN);
    pub const OTP_UNLOCK: Access = Access::Tenant(ADMIN);
    /// Resource servers introspect with a device client's credentials or an admin token.
    pub const INTROSPECT: Access = Access::Tenant(ADMIN_OR_CLIENT);
    pub const REVOKE: Access = Access::Tenant(ADMIN);
}

pub use crate::models::introspection::Introspection;

/// See [`Engine::realm`].
pub struct Realm<'a>(pub(crate) &'a Engine);

/// The answer to a resend while the user is locked: 429.
fn otp_locked() -> ApiError {
    ApiError::new(http::StatusCode::TOO_MANY_REQUESTS, "Resend OTP is locked for this user")
        .with_word("TOO_MANY_REQUESTS")
}

/// Every app setting, empty when unset.
fn all_app_settings(stored: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    app_setting_keys()
        .into_iter()
        .map(|k| {
            let v = stored.get(&k).cloned().unwrap_or_default();
            (k, v)
        })
        .collect()
}

impl Realm<'_> {
    /// Creates the LDAP component of the body (its `id`, or a new one); 409
    /// when it exists. Its `bindCredential` is stored sealed and read masked.
    pub async fn create_ldap(&self, caller: &Caller, tenant: &str, body: LdapBody) -> ApiResult<LdapView> {
        caller.authorize(Some(tenant), access::CONFIGURE)?;
        body.validate(false)?;
        let id = body.id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        validate::id("id", &id, 1, 255)?;
        Ok(LdapView::of(&ops::create_ldap(self.0, tenant, &id, body).await?))
    }

    /// LDAP component `id` (400 `Component Not found` when absent, as the
    /// realm API answers).
    pub async fn ldap(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<LdapView> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("componentId", id, 1, 255)?;
        let c: LdapComponent =
            self.0.store.identity().config(tenant, &["ldap", id])?.ok_or_else(component_not_found)?;
        Ok(LdapView::of(&c))
    }

    /// Replaces LDAP component `id`; a masked `bindCredential` keeps the
    /// stored one.
    pub async fn update_ldap(&self, caller: &Caller, tenant: &str, id: &str, body: LdapBody) -> ApiResult<LdapView> {
        caller.authorize(Some(tenant), access::CONFIGURE)?;
        validate::id("componentId", id, 1, 255)?;
        let old: LdapComponent =
            self.0.store.identity().config(tenant, &["ldap", id])?.ok_or_else(component_not_found)?;
        // Checked here for an early answer, and again against the component
        // as stored when it is written.
        body.validate(old.bind_credential.is_some())?;
        if body.id.as_deref().is_some_and(|b| b != id) {
            return Err(ApiError::field("id", "must match the path"));
        }
        Ok(LdapView::of(&ops::update_ldap(self.0, tenant, id, body).await?))
    }

    /// The app settings (every key: `<platform>_version`, `_link`,
    /// `_update_by`, `_build_number`; empty when unset). Anyone may read
    /// them; 404 for a tenant that does not exist.
    pub async fn app_settings(&self, caller: &Caller, tenant: &str) -> ApiResult<BTreeMap<String, String>> {
        caller.authorize(Some(tenant), access::READ_APP_SETTINGS)?;
        if self.0.store.tenants().get(tenant)?.is_none() {
            return Err(ApiError::not_found("Realm does not exist"));
        }
        let stored: BTreeMap<String, String> =
            self.0.store.identity().config(tenant, &["appsettings"])?.unwrap_or_default();
        Ok(all_app_settings(&stored))
    }

    /// Sets some app settings (known keys only); a changed version or link
    /// stamps `<platform>_update_by` unless `body` sets it. Answers them all.
    pub async fn set_app_settings(
        &self,
        caller: &Caller,
        tenant: &str,
        body: BTreeMap<String, String>,
    ) -> ApiResult<BTreeMap<String, String>> {
        caller.authorize(Some(tenant), access::CONFIGURE)?;
        validate_app_settings(&body)?;
        let stored = ops::put_app_settings(self.0, tenant, &body).await?;
        Ok(all_app_settings(&stored))
    }

    /// Migrates affiliations: Herald keeps no address book of affiliations
    /// yet, so there is nothing to do.
    pub async fn migrate_affiliations(&self, caller: &Caller, tenant: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::CONFIGURE)?;
        Ok(())
    }

    /// The login configuration (spec 002).
    pub async fn login_config(&self, caller: &Caller, tenant: &str) -> ApiResult<LoginConfigBody> {
        caller.authorize(Some(tenant), access::READ)?;
        Ok(self.0.store.settings().login(tenant)?.into())
    }

    /// Replaces the login configuration; answers it.
    pub async fn set_login_config(
        &self,
        caller: &Caller,
        tenant: &str,
        body: LoginConfigBody,
    ) -> ApiResult<LoginConfigBody> {
        caller.authorize(Some(tenant), access::CONFIGURE)?;
        ops::set_login_config(self.0, tenant, body.into()).await?;
        Ok(body)
    }

    /// Counts one OTP resend for user `name`: refused (429) while the user
    /// is locked, or when this resend goes past the tenant's limit.
    pub async fn otp_resend(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<OtpResent> {
        caller.authorize(Some(tenant), access::OTP_RESEND)?;
        validate::id("userId", name, 1, 255)?;
        match ops::otp_resend(self.0, tenant, name).await? {
            Resend::Disabled => Ok(OtpResent { locked: false, remaining_resends: None }),
            Resend::Locked { .. } => Err(otp_locked()),
            Resend::Accepted { remaining } => Ok(OtpResent { locked: false, remaining_resends: Some(remaining) }),
        }
    }

    /// User `name`'s resend-OTP lock; `None` when the tenant does not count
    /// resends.
    pub async fn otp_lock(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<Option<OtpLockStatus>> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("userId", name, 1, 255)?;
        let user = super::users::load(self.0, tenant, name)?;
        let identity = self.0.store.identity();
        let policy: OtpPolicy = identity.config(tenant, &["otp-policy"])?.unwrap_or_default();
        if !policy.enabled {
            return Ok(None);
        }
        let now = self.0.config.clock.now_ms();
        let stored = identity.otp_counter(tenant, &user.id)?.unwrap_or_default();
        let c = otp_current(stored, &policy, now);
        let locked = c.locked_until_ms > now;
        Ok(Some(OtpLockStatus {
            locked,
            resend_count: c.count,
            locked_until: if locked { c.locked_until_ms } else { 0 },
        }))
    }

    /// Unlocks user `name`'s OTP resends; false (nothing done) when the
    /// tenant does not count resends.
    pub async fn otp_unlock(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<bool> {
        caller.authorize(Some(tenant), access::OTP_UNLOCK)?;
        validate::id("userId", name, 1, 255)?;
        ops::otp_unlock(self.0, tenant, name).await
    }

    /// Unlocks every user's OTP resends; `None` when the tenant does not
    /// count resends.
    pub async fn otp_unlock_all(&self, caller: &Caller, tenant: &str) -> ApiResult<Option<OtpUnlocked>> {
        caller.authorize(Some(tenant), access::OTP_UNLOCK)?;
        Ok(ops::otp_unlock_all(self.0, tenant).await?.map(|unlocked| OtpUnlocked { unlocked }))
    }

    /// Logs user `username` in with its password (the OAuth password grant
    /// of the token endpoint, without the endpoint's rate limits): the
    /// access token, and a refresh token while storage has room for the
    /// session. Failures count towards the user's brute-force lockout.
    pub async fn password_grant(&self, tenant: &str, username: &str, password: &str) -> ApiResult<TokenPair> {
        crate::api::oidc::password_login(self.0, tenant, username, password).await
    }

    /// Whether `token` (an access or refresh token of the tenant) is active:
    /// well signed, unexpired, and not taken back since it was issued (its
    /// session ended, its user disabled or revoked, its client locked; a
    /// refresh token also stops being active once used).
    pub async fn introspect(&self, caller: &Caller, tenant: &str, token: &str) -> ApiResult<Introspection> {
        caller.authorize(Some(tenant), access::INTROSPECT)?;
        let Some(claims) = session::realm_token(self.0, tenant, token, false) else {
            return Ok(Introspection::default());
        };
        match session::check(self.0, tenant, &claims).await {
            Ok(()) => Ok(Introspection::active(claims)),
            // Storage failing is not an answer about the token.
            Err(e) if e.status.is_server_error() => Err(e),
            Err(_) => Ok(Introspection::default()),
        }
    }

    /// Takes back `token` (an access or refresh token of the tenant) by
    /// ending its login session: every token of the session stops working.
    /// Answers whether there was such a token to take back.
    pub async fn revoke(&self, caller: &Caller, tenant: &str, token: &str) -> ApiResult<bool> {
        caller.authorize(Some(tenant), access::REVOKE)?;
        let Some(claims) = session::realm_token(self.0, tenant, token, false) else {
            return Ok(false);
        };
        ops::end_session(self.0, tenant, &claims.session_state).await?;
        Ok(true)
    }
}
