//! Device clients: registration, links to users.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::client::{LinkBody, LinkView, RegisterClient, UpdateClient};
use crate::models::validate;
use http::StatusCode;

pub async fn register(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: RegisterClient = cx.json()?;
    body.validate()?;
    let registered = crate::ops::clients::register(&cx.engine, tenant, body).await?;
    json(StatusCode::CREATED, &registered)
}

pub async fn link(cx: Cx) -> ApiResult<Response> {
    let (tenant, user, client_id) = (cx.tenant(), cx.param("userId"), cx.param("astClientId"));
    validate::id("userId", user, 3, 255)?;
    validate::ulid("astClientId", client_id)?;
    let body: LinkBody = if cx.body.is_empty() { LinkBody::default() } else { cx.json()? };
    let mloa = body.mloa.unwrap_or_else(|| "none".into());
    validate::length("mLoA", &mloa, 1, 64)?;
    let link = crate::ops::clients::link(&cx.engine, tenant, user, client_id, &mloa).await?;
    json(StatusCode::OK, &view(tenant, link))
}

pub async fn of_user(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let links = cx.engine.store.links().of_user(tenant, cx.param("userId"))?;
    let views: Vec<LinkView> = links.into_iter().map(|l| view(tenant, l)).collect();
    json(StatusCode::OK, &views)
}

fn view(tenant: &str, l: herald_storage::links::Link) -> LinkView {
    LinkView {
        user_id: l.user_id,
        ast_client_id: l.client_id,
        tenant_id: tenant.to_string(),
        mloa: l.mloa,
        linked_on: l.linked_on,
        mloa_updated_on: l.mloa_updated_on,
    }
}

fn client_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("client {id} not found"))
}

/// `GET /v1/tenants/{t}/clients/{astClientId}`: admins, readers, or the client itself.
pub async fn detail(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("astClientId"));
    cx.principal()?.may_read_client(id)?;
    let store = &cx.engine.store;
    let client = store.clients().get(tenant, id)?.ok_or_else(|| client_not_found(id))?;
    let linked = store.links().of_client(tenant, id)?.iter().map(|l| l.mloa_updated_on.max(l.linked_on)).max();
    json(StatusCode::OK, &crate::models::client::detail(&client, linked))
}

/// `PUT /v1/tenants/{t}/clients/{astClientId}` (ext): a client updates what it reports of itself.
pub async fn update(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("astClientId"));
    cx.principal()?.may_act_on_client(id)?;
    let body: UpdateClient = cx.json()?;
    body.validate()?;
    let c = crate::ops::clients::update(&cx.engine, tenant, id, body).await?;
    json(StatusCode::OK, &crate::models::client::detail(&c, None))
}

/// `GET /v1/tenants/{t}/clients/overview?userId=&filter=`.
pub async fn overview(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let user = cx.query_param("userId").ok_or_else(|| ApiError::field("userId", "is required"))?;
    validate::id("userId", &user, 3, 255)?;
    let conditions = crate::list_filter::parse(&cx, &crate::models::client::OVERVIEW_FIELDS)?;
    let store = &cx.engine.store;
    let links = store.links().of_user(tenant, &user)?;
    if links.is_empty() {
        return Err(ApiError::not_found(format!("user {user} has no clients")));
    }
    let mut out = Vec::new();
    for l in links {
        if let Some(c) = store.clients().get(tenant, &l.client_id)? {
            let v = crate::models::client::overview(&c);
            if crate::list_filter::matches(&conditions, |f| crate::models::client::field_text(&v, f)) {
                out.push(v);
            }
        }
    }
    json(StatusCode::OK, &out)
}

/// `GET /v1/tenants/{t}/users?astClientId=`: `[{ userId, mLoA }]`.
pub async fn users_of_client(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let id = cx.query_param("astClientId").ok_or_else(|| ApiError::field("astClientId", "is required"))?;
    validate::ulid("astClientId", &id)?;
    let store = &cx.engine.store;
    store.clients().get(tenant, &id)?.ok_or_else(|| client_not_found(&id))?;
    let users: Vec<_> = store
        .links()
        .of_client(tenant, &id)?
        .into_iter()
        .map(|l| serde_json::json!({ "userId": l.user_id, "mLoA": l.mloa }))
        .collect();
    json(StatusCode::OK, &users)
}

/// `DELETE /v1/tenants/{t}/clients/{astClientId}`: only once no user is linked.
pub async fn delete(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("astClientId"));
    crate::ops::clients::delete(&cx.engine, tenant, id).await?;
    Ok(crate::http::empty(StatusCode::NO_CONTENT))
}
