//! A user's hold on clients: unlinking, forced disconnects, deleting a user's data.

use crate::error::ApiResult;
use crate::http::{empty, Cx, Response};
use crate::models::client::{SelectClients, UnlinkOne};
use crate::models::validate;
use http::StatusCode;

fn selection(cx: &Cx) -> ApiResult<SelectClients> {
    if cx.body.is_empty() {
        Ok(SelectClients::default())
    } else {
        cx.json()
    }
}

/// `POST /v1/tenants/{t}/unlink` (deprecated): one link.
pub async fn unlink_one(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: UnlinkOne = cx.json()?;
    validate::id("userId", &body.user_id, 3, 255)?;
    validate::ulid("astClientId", &body.ast_client_id)?;
    crate::ops::clients::unlink(&cx.engine, tenant, &body.user_id, &body.ast_client_id).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /v1/tenants/{t}/users/{userId}/unlink`: the selected links of a user.
pub async fn unlink(cx: Cx) -> ApiResult<Response> {
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    validate::id("userId", user, 3, 255)?;
    let body = selection(&cx)?;
    let selected = body.selects("unlinkType")?;
    crate::ops::clients::unlink_selected(&cx.engine, tenant, user, selected).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /v1/tenants/{t}/users/{userId}/disconnect`: the selected clients must
/// log in again (their current access tokens stop working).
pub async fn disconnect(cx: Cx) -> ApiResult<Response> {
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    validate::id("userId", user, 3, 255)?;
    let body = selection(&cx)?;
    let selected = body.selects("disconnectType")?;
    crate::ops::clients::disconnect(&cx.engine, tenant, user, selected).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `DELETE /v1/tenants/{t}/users/{userId}`: the user's properties and links, and
/// the clients no other user is linked to (with their tokens and locales).
/// Nothing of other users.
pub async fn delete_user_data(cx: Cx) -> ApiResult<Response> {
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    validate::id("userId", user, 3, 255)?;
    crate::ops::clients::delete_user_data(&cx.engine, tenant, user).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
