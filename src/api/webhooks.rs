//! Webhooks: CRUD, the attempt log, replay of failed events, and publishing
//! domain events.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::list_filter;
use crate::models::webhook::{DomainEvent, WebhookBody, WebhookView};
use crate::paging::Paging;
use herald_actors::webhooks::{generate_secret, Event};
use herald_storage::webhooks::Webhook;
use herald_storage::{now_ms, Store};
use http::StatusCode;
use serde_json::json;

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("webhook {id} not found"))
}

fn seal_password(
    store: &Store,
    tenant: &str,
    id: &str,
    body: &WebhookBody,
) -> ApiResult<(Option<String>, Option<herald_storage::Secret>)> {
    match (&body.auth_credentials, body.auth_type()) {
        (Some(c), "BASIC") => Ok((
            Some(c.username.clone()),
            Some(store.seal(c.password.as_bytes(), &Webhook::secret_context(tenant, id, "password"))?),
        )),
        _ => Ok((None, None)),
    }
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: WebhookBody = cx.json()?;
    body.validate()?;
    let who = cx.principal()?.username.clone();
    let store = &cx.engine.store;
    let id = ulid::Ulid::generate().to_string();
    let secret = generate_secret().map_err(ApiError::internal)?;
    let (auth_username, auth_password) = seal_password(store, tenant, &id, &body)?;
    let now = now_ms();
    let w = Webhook {
        id: id.clone(),
        filter: body.filter.clone(),
        callback_url: body.callback_url.clone(),
        auth_type: body.auth_type().to_string(),
        auth_username,
        auth_password,
        active: body.active.unwrap_or(true),
        secret: store.seal(secret.as_bytes(), &Webhook::secret_context(tenant, &id, "secret"))?,
        created_ms: now,
        modified_ms: now,
        created_by: who.clone(),
        modified_by: who,
        disabled_reason: None,
    };
    store.webhooks().put(tenant, &w)?;
    store.durable().await?;
    let mut view = WebhookView::of(tenant, &w);
    view.secret = Some(secret);
    json(StatusCode::CREATED, &view)
}

pub async fn list(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(&cx, &WebhookView::FIELDS)?;
    let views: Vec<WebhookView> = cx
        .engine
        .store
        .webhooks()
        .list(tenant)?
        .iter()
        .map(|w| WebhookView::of(tenant, w))
        .filter(|v| list_filter::matches(&conditions, |f| v.field(f)))
        .skip(paging.offset())
        .take(paging.size)
        .collect();
    json(StatusCode::OK, &views)
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("webhookId"));
    let w = cx.engine.store.webhooks().get(tenant, id)?.ok_or_else(|| not_found(id))?;
    json(StatusCode::OK, &WebhookView::of(tenant, &w))
}

pub async fn update(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("webhookId"));
    let body: WebhookBody = cx.json()?;
    body.validate()?;
    let store = &cx.engine.store;
    store.webhooks().get(tenant, id)?.ok_or_else(|| not_found(id))?;
    let (auth_username, auth_password) = seal_password(store, tenant, id, &body)?;
    let active = body.active.unwrap_or(true);
    let (now, by) = (now_ms(), cx.principal()?.username.clone());
    // On the record as stored at the write: a 410 that disabled it meanwhile
    // keeps its reason when this update does not re-activate it.
    let w = store
        .webhooks()
        .change(tenant, id, |w| {
            w.filter = body.filter.clone();
            w.callback_url = body.callback_url.clone();
            w.auth_type = body.auth_type().to_string();
            w.auth_username = auth_username.clone();
            w.auth_password = auth_password.clone();
            if active {
                w.disabled_reason = None;
            }
            w.active = active;
            w.modified_ms = now;
            w.modified_by = by.clone();
            true
        })?
        .ok_or_else(|| not_found(id))?;
    store.durable().await?;
    // A re-activated webhook delivers what waited in its outbox.
    cx.engine.push.events().wake(tenant, id);
    json(StatusCode::OK, &WebhookView::of(tenant, &w))
}

pub async fn delete(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("webhookId"));
    cx.engine.store.webhooks().delete(tenant, id).map_err(|e| match e {
        herald_storage::Error::NotFound(_) => not_found(id),
        other => other.into(),
    })?;
    cx.engine.store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub async fn attempts(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("webhookId"));
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let store = &cx.engine.store;
    store.webhooks().get(tenant, id)?.ok_or_else(|| not_found(id))?;
    let page: Vec<_> = store
        .webhooks()
        .attempts(tenant, id, paging.offset(), paging.size)?
        .into_iter()
        .map(|a| {
            json!({ "eventId": a.event_id, "attempt": a.attempt, "at": crate::models::webhook::rfc3339(a.at_ms),
                    "statusCode": a.status, "durationMs": a.duration_ms, "response": a.response })
        })
        .collect();
    json(StatusCode::OK, &page)
}

pub async fn replay(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("webhookId"));
    let since = cx.query_param("since").ok_or_else(|| ApiError::field("since", "is required (RFC 3339)"))?;
    let since = time::OffsetDateTime::parse(&since, &time::format_description::well_known::Rfc3339)
        .map_err(|_| ApiError::field("since", "must be an RFC 3339 date-time"))?;
    let since_ms = (since.unix_timestamp_nanos() / 1_000_000).max(0) as u64;
    let store = &cx.engine.store;
    store.webhooks().get(tenant, id)?.ok_or_else(|| not_found(id))?;
    let n = store.webhooks().replay(tenant, id, since_ms, now_ms())?;
    store.durable().await?;
    cx.engine.push.events().wake(tenant, id);
    json(StatusCode::ACCEPTED, &json!({ "requeued": n }))
}

pub async fn publish(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: DomainEvent = cx.json()?;
    body.validate()?;
    let data = if body.data.is_null() { json!({}) } else { body.data };
    let event = Event::new(tenant, "domain", &body.event, data);
    let matched = cx.engine.push.events().publish(&event)?;
    cx.engine.store.durable().await?;
    json(StatusCode::ACCEPTED, &json!({ "id": event.id, "webhooks": matched }))
}
