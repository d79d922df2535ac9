//! Nonces and the login events that spend them.

use super::{commit, publish, Event};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use herald_storage::nonces::Nonce;
use serde_json::json;

/// Stores a new nonce made by `make` (called again on the rare collision of
/// a short value, at most five times).
pub async fn create(engine: &Engine, tenant: &str, make: impl Fn() -> ApiResult<Nonce>) -> ApiResult<Nonce> {
    let mut attempt: u32 = 0;
    let nonce = loop {
        let n = make()?;
        match engine.store.transact(|tx| tx.insert_nonce(tenant, &n)) {
            Ok(()) => break n,
            Err(herald_storage::Error::Conflict(_)) if attempt < 5 => attempt = attempt.saturating_add(1),
            Err(e) => return Err(e.into()),
        }
    };
    commit(engine).await?;
    Ok(nonce)
}

/// A client reports a login by `user` with a nonce: the nonce is spent
/// ([`crate::models::nonce::use_once`]) and the login recorded on the
/// client as stored now (a lock made meanwhile stays), in one transaction.
pub async fn login_event(engine: &Engine, tenant: &str, client_id: &str, user: &str, value: &str) -> ApiResult<Nonce> {
    let now = engine.config.clock.now_ms();
    let nonce = engine.store.transact(|tx| {
        let mut client = tx
            .client(tenant, client_id)?
            .ok_or_else(|| ApiError::not_found(format!("client {client_id} not found")))?;
        let nonce = crate::models::nonce::use_once(tx.nonce(tenant, value)?, user, now)?;
        tx.put_nonce(tenant, &nonce)?;
        client.login_outcome = Some("SUCCESS".into());
        client.login_error = None;
        client.last_login_attempt = Some(now);
        client.last_successful_verification = Some(now);
        tx.put_client(tenant, &client)?;
        let login = json!({ "astClientId": client_id, "userId": user });
        if nonce.action == "LOGIN_NONCE" {
            let data = json!({ "timestampMillis": nonce.created_ms, "nonce": nonce.value, "portalSessionId": nonce.portal_session_id, "loginEvent": login });
            publish(tx, tenant, Event::new("login", "LOGIN_NONCE_COMPLETED", data))?;
        }
        publish(tx, tenant, Event::new("client", "CLIENT_LOGIN", login))?;
        Ok::<_, ApiError>(nonce)
    })?;
    commit(engine).await?;
    Ok(nonce)
}
