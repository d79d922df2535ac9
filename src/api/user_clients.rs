//! A user's hold on clients: unlinking, forced disconnects, deleting a user's data.

use crate::error::ApiResult;
use crate::http::{empty, Cx, Response};
use crate::models::client::{SelectClients, UnlinkOne};
use http::StatusCode;

fn selection(cx: &Cx) -> ApiResult<SelectClients> {
    if cx.body.is_empty() {
        Ok(SelectClients::default())
    } else {
        cx.json()
    }
}

/// `POST /v1/tenants/{t}/unlink` (deprecated): one link.
pub(crate) async fn unlink_one(cx: Cx) -> ApiResult<Response> {
    let body: UnlinkOne = cx.json()?;
    cx.engine.clients().unlink(&cx.caller, cx.tenant(), &body.user_id, &body.ast_client_id).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /v1/tenants/{t}/users/{userId}/unlink`: the selected links of a user.
pub(crate) async fn unlink(cx: Cx) -> ApiResult<Response> {
    let body = selection(&cx)?;
    cx.engine.clients().unlink_selected(&cx.caller, cx.tenant(), cx.param("userId"), &body).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /v1/tenants/{t}/users/{userId}/disconnect`: the selected clients must
/// log in again (their current access tokens stop working).
pub(crate) async fn disconnect(cx: Cx) -> ApiResult<Response> {
    let body = selection(&cx)?;
    cx.engine.clients().disconnect(&cx.caller, cx.tenant(), cx.param("userId"), &body).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `DELETE /v1/tenants/{t}/users/{userId}`: the user's properties and links, and
/// the clients no other user is linked to (with their tokens and locales).
/// Nothing of other users.
pub(crate) async fn delete_user_data(cx: Cx) -> ApiResult<Response> {
    cx.engine.clients().delete_user_data(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
