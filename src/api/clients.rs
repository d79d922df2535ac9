//! Device clients: registration, links to users.

use crate::engine::random_token;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::client::{LinkBody, LinkView, RegisterClient, Registered, UpdateClient};
use crate::models::validate;
use herald_storage::clients::Client;
use herald_storage::now_ms;
use http::StatusCode;

pub async fn register(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: RegisterClient = cx.json()?;
    body.validate()?;
    let store = &cx.engine.store;
    if store.apps().get(tenant, &body.app_name)?.is_none() {
        return Err(ApiError::field("appName", format!("no app named {} in this tenant", body.app_name)));
    }
    let secret = random_token().map_err(ApiError::internal)?;
    let client = Client {
        id: ulid::Ulid::generate().to_string(),
        app_name: body.app_name,
        platform: body.platform,
        app_version: body.app_version,
        sdk_version: body.sdk_version,
        device_name: body.device_name,
        client_device: body.client_device,
        client_os_version: body.client_os_version,
        locales: body.locales,
        secret_hash: ring::digest::digest(&ring::digest::SHA256, secret.as_bytes()).as_ref().to_vec(),
        lock_state: "NONE".into(),
        created_ms: now_ms(),
        risks: body.risks,
        risk_analysis: body
            .risk_analysis
            .map(|r| serde_json::to_string(&r))
            .transpose()
            .map_err(|e| ApiError::internal(e.to_string()))?,
        ..Client::default()
    };
    store.clients().create(tenant, &client)?;
    cx.engine.push.events().emit(
        tenant,
        "client",
        "CLIENT_REGISTERED",
        serde_json::json!({ "astClientId": client.id, "appName": client.app_name, "platform": client.platform }),
    );
    store.durable().await?;
    json(StatusCode::CREATED, &Registered { ast_client_id: client.id, client_secret: secret })
}

pub async fn link(cx: Cx) -> ApiResult<Response> {
    let (tenant, user, client_id) = (cx.tenant(), cx.param("userId"), cx.param("astClientId"));
    validate::id("userId", user, 3, 255)?;
    validate::ulid("astClientId", client_id)?;
    let body: LinkBody = if cx.body.is_empty() { LinkBody::default() } else { cx.json()? };
    let mloa = body.mloa.unwrap_or_else(|| "none".into());
    validate::length("mLoA", &mloa, 1, 64)?;
    let store = &cx.engine.store;
    if store.clients().get(tenant, client_id)?.is_none() {
        return Err(ApiError::not_found(format!("client {client_id} not found")));
    }
    // The client must still exist when the link is made (checked in its transaction).
    let link = store.links().put(tenant, user, client_id, &mloa, now_ms()).map_err(|e| match e {
        herald_storage::Error::NotFound(_) => ApiError::not_found(format!("client {client_id} not found")),
        other => other.into(),
    })?;
    store.durable().await?;
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
    let risk_analysis = match &body.risk_analysis {
        Some(r) => Some(serde_json::to_string(r).map_err(|e| ApiError::internal(e.to_string()))?),
        None => None,
    };
    let store = &cx.engine.store;
    // Only the fields the body carries change, on the record as stored at
    // the write: a lock made meanwhile stays.
    let c = store
        .clients()
        .update(tenant, id, |c| {
            let b = body.clone();
            c.app_version = b.app_version.or(c.app_version.take());
            c.sdk_version = b.sdk_version.or(c.sdk_version.take());
            c.device_name = b.device_name.or(c.device_name.take());
            c.client_device = b.client_device.or(c.client_device.take());
            c.client_os_version = b.client_os_version.or(c.client_os_version.take());
            c.locales = b.locales.unwrap_or(std::mem::take(&mut c.locales));
            c.risks = b.risks.or(c.risks.take());
            if risk_analysis.is_some() {
                c.risk_analysis = risk_analysis.clone();
            }
            Ok::<(), std::convert::Infallible>(())
        })
        .map_err(|e| match e {
            herald_storage::Error::NotFound(_) => client_not_found(id),
            other => other.into(),
        })?
        .unwrap_or_else(|never| match never {});
    store.durable().await?;
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
    let store = &cx.engine.store;
    store.clients().get(tenant, id)?.ok_or_else(|| client_not_found(id))?;
    if !store.links().user_ids_of_client(tenant, id)?.is_empty() {
        return Err(ApiError::conflict(format!("client {id} is still linked to users: unlink them first")));
    }
    store.clients().delete(tenant, id)?;
    cx.engine.push.events().emit(tenant, "client", "CLIENT_DELETED", serde_json::json!({ "astClientId": id }));
    store.durable().await?;
    Ok(crate::http::empty(StatusCode::NO_CONTENT))
}
