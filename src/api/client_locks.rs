//! Locking a client: a locked client cannot log in and gets no push.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, Cx, Response};
use crate::models::client::LockBody;
use crate::models::validate;
use http::StatusCode;
use serde_json::json;

pub async fn lock(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: LockBody = cx.json()?;
    validate::ulid("astClientId", &body.ast_client_id)?;
    validate::length("lockReason", &body.lock_reason, 1, 255)?;
    let store = &cx.engine.store;
    let id = body.ast_client_id.as_str();
    let mut c =
        store.clients().get(tenant, id)?.ok_or_else(|| ApiError::not_found(format!("client {id} not found")))?;
    if c.is_locked() {
        return Err(ApiError::new(StatusCode::NOT_ACCEPTABLE, format!("client {id} is already locked")));
    }
    c.lock_state = "LOCKED".into();
    c.lock_reason = Some(body.lock_reason.clone());
    store.clients().put(tenant, &c)?;
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
    let mut c =
        store.clients().get(tenant, id)?.ok_or_else(|| ApiError::not_found(format!("client {id} not found")))?;
    if !c.is_locked() {
        return Err(ApiError::new(StatusCode::NOT_ACCEPTABLE, format!("client {id} is not locked")));
    }
    c.lock_state = "NONE".into();
    c.lock_reason = None;
    store.clients().put(tenant, &c)?;
    cx.engine.push.events().emit(tenant, "client", "CLIENT_UNLOCKED", json!({ "astClientId": id }));
    store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
