//! Device clients: registration, links to users (see [`crate::library::clients`]).

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::client::{ClientUser, LinkBody, RegisterClient, UpdateClient};
use http::StatusCode;

pub(crate) async fn register(cx: Cx) -> ApiResult<Response> {
    let body: RegisterClient = cx.json()?;
    let registered = cx.engine.clients().register(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::CREATED, &registered)
}

pub(crate) async fn link(cx: Cx) -> ApiResult<Response> {
    let body: LinkBody = if cx.body.is_empty() { LinkBody::default() } else { cx.json()? };
    let (user, id) = (cx.param("userId"), cx.param("astClientId"));
    let link = cx.engine.clients().link(&cx.caller, cx.tenant(), user, id, body.mloa.as_deref()).await?;
    json(StatusCode::OK, &link)
}

/// `GET /v1/tenants/{t}/users/{userId}/clients?filter=`.
pub(crate) async fn of_user(cx: Cx) -> ApiResult<Response> {
    let conditions = crate::list_filter::parse(&cx, &crate::models::client::LINK_FIELDS)?;
    let mut out = Vec::new();
    for link in cx.engine.clients().links_of_user(&cx.caller, cx.tenant(), cx.param("userId")).await? {
        let v = serde_json::to_value(&link).map_err(|e| ApiError::internal(e.to_string()))?;
        if crate::list_filter::matches(&conditions, |f| crate::models::client::field_text(&v, f)) {
            out.push(link);
        }
    }
    json(StatusCode::OK, &out)
}

/// `GET /v1/tenants/{t}/clients/{astClientId}`: admins, readers, or the client itself.
pub(crate) async fn detail(cx: Cx) -> ApiResult<Response> {
    let detail = cx.engine.clients().get(&cx.caller, cx.tenant(), cx.param("astClientId")).await?;
    json(StatusCode::OK, &detail)
}

/// `PUT /v1/tenants/{t}/clients/{astClientId}` (ext): a client updates what it reports of itself.
pub(crate) async fn update(cx: Cx) -> ApiResult<Response> {
    let body: UpdateClient = cx.json()?;
    let detail = cx.engine.clients().update(&cx.caller, cx.tenant(), cx.param("astClientId"), body).await?;
    json(StatusCode::OK, &detail)
}

/// `GET /v1/tenants/{t}/clients/overview?userId=&filter=`.
pub(crate) async fn overview(cx: Cx) -> ApiResult<Response> {
    let user = cx.query_param("userId").ok_or_else(|| ApiError::field("userId", "is required"))?;
    let conditions = crate::list_filter::parse(&cx, &crate::models::client::OVERVIEW_FIELDS)?;
    let mut out = Vec::new();
    for c in cx.engine.clients().overview(&cx.caller, cx.tenant(), &user).await? {
        let v = serde_json::to_value(&c).map_err(|e| ApiError::internal(e.to_string()))?;
        if crate::list_filter::matches(&conditions, |f| crate::models::client::field_text(&v, f)) {
            out.push(c);
        }
    }
    json(StatusCode::OK, &out)
}

/// `GET /v1/tenants/{t}/users?astClientId=`: `[{ userId, mLoA }]`.
pub(crate) async fn users_of_client(cx: Cx) -> ApiResult<Response> {
    let id = cx.query_param("astClientId").ok_or_else(|| ApiError::field("astClientId", "is required"))?;
    let links = cx.engine.clients().links_of_client(&cx.caller, cx.tenant(), &id).await?;
    let users: Vec<ClientUser> = links.into_iter().map(ClientUser::of).collect();
    json(StatusCode::OK, &users)
}

/// `DELETE /v1/tenants/{t}/clients/{astClientId}`: only once no user is linked.
pub(crate) async fn delete(cx: Cx) -> ApiResult<Response> {
    cx.engine.clients().delete(&cx.caller, cx.tenant(), cx.param("astClientId")).await?;
    Ok(crate::http::empty(StatusCode::NO_CONTENT))
}
