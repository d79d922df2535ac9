//! Webhooks: CRUD, the attempt log, replay of failed events, and publishing
//! domain events.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::list_filter;
use crate::models::webhook::{DomainEvent, WebhookBody, WebhookView};
use crate::ops;
use crate::paging::Paging;
use herald_actors::webhooks::Event;
use http::StatusCode;
use serde_json::json;

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("webhook {id} not found"))
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: WebhookBody = cx.json()?;
    body.validate()?;
    let who = cx.principal()?.username.clone();
    let created = ops::webhooks::create(&cx.engine, tenant, &who, &body).await?;
    let mut view = WebhookView::of(tenant, &created.webhook);
    view.secret = Some(created.secret);
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
    let who = cx.principal()?.username.clone();
    let w = ops::webhooks::update(&cx.engine, tenant, id, &who, &body).await?;
    json(StatusCode::OK, &WebhookView::of(tenant, &w))
}

pub async fn delete(cx: Cx) -> ApiResult<Response> {
    ops::webhooks::delete(&cx.engine, cx.tenant(), cx.param("webhookId")).await?;
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
    let n = ops::webhooks::replay(&cx.engine, tenant, id, since_ms).await?;
    json(StatusCode::ACCEPTED, &json!({ "requeued": n }))
}

pub async fn publish(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: DomainEvent = cx.json()?;
    body.validate()?;
    let data = if body.data.is_null() { json!({}) } else { body.data };
    let event = Event::new(tenant, "domain", &body.event, data);
    let matched = ops::webhooks::publish(&cx.engine, &event).await?;
    json(StatusCode::ACCEPTED, &json!({ "id": event.id, "webhooks": matched }))
}
