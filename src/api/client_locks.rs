//! Locking a client: a locked client cannot log in and gets no push.

use crate::error::ApiResult;
use crate::http::{empty, Cx, Response};
use crate::models::client::LockBody;
use crate::models::validate;
use http::StatusCode;

pub async fn lock(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: LockBody = cx.json()?;
    validate::ulid("astClientId", &body.ast_client_id)?;
    validate::length("lockReason", &body.lock_reason, 1, 255)?;
    crate::ops::clients::set_lock(&cx.engine, tenant, &body.ast_client_id, Some(&body.lock_reason)).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub async fn unlock(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("astClientId"));
    validate::ulid("astClientId", id)?;
    crate::ops::clients::set_lock(&cx.engine, tenant, id, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
