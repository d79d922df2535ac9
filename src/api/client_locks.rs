//! Locking a client: a locked client cannot log in and gets no push.

use crate::error::ApiResult;
use crate::http::{empty, Cx, Response};
use crate::models::client::LockBody;
use http::StatusCode;

pub(crate) async fn lock(cx: Cx) -> ApiResult<Response> {
    let body: LockBody = cx.json()?;
    cx.engine.clients().lock(&cx.caller, cx.tenant(), &body.ast_client_id, &body.lock_reason).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(crate) async fn unlock(cx: Cx) -> ApiResult<Response> {
    cx.engine.clients().unlock(&cx.caller, cx.tenant(), cx.param("astClientId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
