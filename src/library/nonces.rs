//! Nonces, and the login events of clients that spend them.

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_CLIENT};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::nonce::{CreateNonce, LoginEvent, LoginRecorded, NonceFormat, NonceView};
use crate::ops;
use base64::Engine as _;
use herald_storage::nonces::Nonce;
use ring::rand::{SecureRandom, SystemRandom};

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const CREATE: Access = Access::Tenant(ADMIN);
    pub const LOGIN_EVENT: Access = Access::Tenant(ADMIN_OR_CLIENT);
}

/// See [`Engine::nonces`].
pub struct Nonces<'a>(pub(crate) &'a Engine);

fn random_nonce(format: NonceFormat) -> ApiResult<String> {
    let rng = SystemRandom::new();
    match format {
        NonceFormat::Short => {
            let mut b = [0u8; 8];
            rng.fill(&mut b).map_err(|_| ApiError::internal("no randomness"))?;
            Ok(format!("{:08}", u64::from_le_bytes(b) % 100_000_000))
        }
        NonceFormat::Long => {
            let mut b = [0u8; 32];
            rng.fill(&mut b).map_err(|_| ApiError::internal("no randomness"))?;
            Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
        }
    }
}

impl Nonces<'_> {
    /// Issues a single-use nonce for an action (a login, say) that expires
    /// after the payload's timeout (300 s by default).
    pub async fn create(
        &self,
        caller: &Caller,
        tenant: &str,
        format: NonceFormat,
        body: CreateNonce,
    ) -> ApiResult<NonceView> {
        caller.authorize(Some(tenant), access::CREATE)?;
        let ttl = body.validate()?;
        let store = &self.0.store;
        let now = self.0.config.clock.now_ms();
        let credential_secret = match &body.payload.credential {
            Some(c) => Some(store.seal(c.secret.as_bytes(), &format!("nonce/{tenant}/credential"))?),
            None => None,
        };
        // A short nonce has 10^8 values: a collision makes another.
        let make = || {
            Ok(Nonce {
                value: random_nonce(format)?,
                action: body.action.as_str().to_string(),
                portal_session_id: body.payload.portal_session_id.clone(),
                expected_user_id: body.payload.expected_user_id.clone(),
                credential_user: body.payload.credential.as_ref().map(|c| c.user.clone()),
                credential_secret: credential_secret.clone(),
                created_ms: now,
                expires_ms: now.saturating_add(ttl.saturating_mul(1000)),
                used: false,
            })
        };
        let nonce = ops::nonces::create(self.0, tenant, make).await?;
        Ok(NonceView { nonce: nonce.value, kind: nonce.action, expires_at: nonce.expires_ms })
    }

    /// A client reports a login of a user with a nonce: the nonce is spent
    /// (single use, by its expected user only) and the login recorded on the
    /// client. A client reports only its own logins.
    pub async fn login_event(&self, caller: &Caller, tenant: &str, body: LoginEvent) -> ApiResult<LoginRecorded> {
        let principal = caller.authorize(Some(tenant), access::LOGIN_EVENT)?;
        body.validate()?;
        if let Some(p) = principal {
            p.may_act_on_client(&body.ast_client_id)?;
        }
        ops::nonces::login_event(self.0, tenant, &body.ast_client_id, &body.user_id, &body.nonce).await?;
        Ok(LoginRecorded { ast_client_id: body.ast_client_id, user_id: body.user_id, login_outcome: "SUCCESS".into() })
    }
}
