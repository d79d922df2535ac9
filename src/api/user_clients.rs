//! A user's hold on clients: unlinking, forced disconnects, deleting a user's data.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, Cx, Response};
use crate::models::client::{SelectClients, UnlinkOne};
use crate::models::validate;
use herald_storage::now_ms;
use http::StatusCode;
use serde_json::json;

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
    if !cx.engine.store.links().remove(tenant, &body.user_id, &body.ast_client_id)? {
        return Err(ApiError::not_found(format!(
            "user {} is not linked to client {}",
            body.user_id, body.ast_client_id
        )));
    }
    cx.engine.store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /v1/tenants/{t}/users/{userId}/unlink`: the selected links of a user.
pub async fn unlink(cx: Cx) -> ApiResult<Response> {
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    validate::id("userId", user, 3, 255)?;
    let body = selection(&cx)?;
    let selected = body.selects("unlinkType")?;
    let store = &cx.engine.store;
    let links = store.links().of_user(tenant, user)?;
    if links.is_empty() {
        return Err(ApiError::not_found(format!("user {user} has no clients")));
    }
    for l in links.iter().filter(|l| selected(&l.client_id)) {
        store.links().remove(tenant, user, &l.client_id)?;
    }
    store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /v1/tenants/{t}/users/{userId}/disconnect`: the selected clients must
/// log in again (their current access tokens stop working).
pub async fn disconnect(cx: Cx) -> ApiResult<Response> {
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    validate::id("userId", user, 3, 255)?;
    let body = selection(&cx)?;
    let selected = body.selects("disconnectType")?;
    let store = &cx.engine.store;
    let links = store.links().of_user(tenant, user)?;
    if links.is_empty() {
        return Err(ApiError::not_found(format!("user {user} has no clients")));
    }
    let now = now_ms();
    for l in links.iter().filter(|l| selected(&l.client_id)) {
        let disconnected = store.clients().update(tenant, &l.client_id, |c| {
            c.not_before_ms = now;
            Ok::<(), std::convert::Infallible>(())
        });
        match disconnected {
            Ok(_) | Err(herald_storage::Error::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `DELETE /v1/tenants/{t}/users/{userId}`: the user's properties and links, and
/// the clients no other user is linked to (with their tokens and locales).
/// Nothing of other users.
pub async fn delete_user_data(cx: Cx) -> ApiResult<Response> {
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    validate::id("userId", user, 3, 255)?;
    let store = &cx.engine.store;
    let events = cx.engine.push.events();
    store.properties().delete_user(tenant, user)?;
    // The realm user of that name (or id), if any, must log in again.
    let realm_user = match store.users().get_by_name(tenant, &user.to_lowercase())? {
        Some(u) => Some(u),
        None => store.users().get(tenant, user)?,
    };
    if let Some(u) = realm_user {
        store.users().revoke_tokens(tenant, &u.id)?;
    }
    for l in store.links().of_user(tenant, user)? {
        store.links().remove(tenant, user, &l.client_id)?;
        if delete_if_orphan(store, tenant, &l.client_id)? {
            events.emit(
                tenant,
                "client",
                "CLIENT_DELETED",
                json!({ "astClientId": l.client_id, "reason": "user data deleted" }),
            );
        }
    }
    store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Deletes a client no user is linked to any more, with its push token;
/// a link made to it meanwhile keeps it (its generation moved on between the
/// look and the delete, so the look is made again). Answers whether it was deleted.
fn delete_if_orphan(store: &herald_storage::Store, tenant: &str, client: &str) -> ApiResult<bool> {
    for _ in 0..5 {
        let generation = store.links().generation(tenant, client)?;
        if !store.links().user_ids_of_client(tenant, client)?.is_empty() {
            return Ok(false);
        }
        match store.clients().delete_if_unlinked_since(tenant, client, generation) {
            Ok(true) => return Ok(true),
            Ok(false) => continue,
            Err(herald_storage::Error::NotFound(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    // Linked again and again meanwhile: it has users, so it stays.
    Ok(false)
}
