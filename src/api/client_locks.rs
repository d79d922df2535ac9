//! Locking a client: a locked client cannot log in and gets no push.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, Cx, Response};
use crate::models::client::LockBody;
use crate::models::validate;
use http::StatusCode;
use serde_json::json;

/// Locks the client (with `reason`) or unlocks it (`None`) in one
/// transaction, so the transition is checked against the stored state and
/// a concurrent write cannot undo it; 406 when it is in that state already.
fn set_lock(store: &herald_storage::Store, tenant: &str, id: &str, reason: Option<&str>) -> ApiResult<()> {
    let changed = store.clients().update(tenant, id, |c| crate::models::client::set_lock(c, reason));
    match changed {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(refused)) => Err(ApiError::new(StatusCode::NOT_ACCEPTABLE, refused)),
        Err(herald_storage::Error::NotFound(_)) => Err(ApiError::not_found(format!("client {id} not found"))),
        Err(other) => Err(other.into()),
    }
}

pub async fn lock(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: LockBody = cx.json()?;
    validate::ulid("astClientId", &body.ast_client_id)?;
    validate::length("lockReason", &body.lock_reason, 1, 255)?;
    let store = &cx.engine.store;
    let id = body.ast_client_id.as_str();
    set_lock(store, tenant, id, Some(&body.lock_reason))?;
    cx.engine.push.events().emit(
        tenant,
        "client",
        "CLIENT_LOCKED",
        json!({ "astClientId": id, "lockReason": body.lock_reason }),
    );
    store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub async fn unlock(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("astClientId"));
    validate::ulid("astClientId", id)?;
    let store = &cx.engine.store;
    set_lock(store, tenant, id, None)?;
    cx.engine.push.events().emit(tenant, "client", "CLIENT_UNLOCKED", json!({ "astClientId": id }));
    store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
