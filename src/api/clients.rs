//! Device clients: registration, links to users.

use crate::engine::random_token;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::client::{LinkBody, LinkView, RegisterClient, Registered};
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
        lock_reason: None,
        created_ms: now_ms(),
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
    let link = store.links().put(tenant, user, client_id, &mloa, now_ms())?;
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
