//! Webhooks: CRUD, the attempt log, replay of failed events, and publishing
//! domain events (see [`crate::library::webhooks`]).

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::list_filter;
use crate::models::webhook::{DomainEvent, WebhookBody, WebhookView};
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: WebhookBody = cx.json()?;
    let view = cx.engine.webhooks().create(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::CREATED, &view)
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(&cx, &WebhookView::FIELDS)?;
    let views = cx.engine.webhooks().list(&cx.caller, cx.tenant(), &conditions, paging).await?;
    json(StatusCode::OK, &views)
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.webhooks().get(&cx.caller, cx.tenant(), cx.param("webhookId")).await?;
    json(StatusCode::OK, &view)
}

pub(crate) async fn update(cx: Cx) -> ApiResult<Response> {
    let body: WebhookBody = cx.json()?;
    let view = cx.engine.webhooks().update(&cx.caller, cx.tenant(), cx.param("webhookId"), body).await?;
    json(StatusCode::OK, &view)
}

pub(crate) async fn delete(cx: Cx) -> ApiResult<Response> {
    cx.engine.webhooks().delete(&cx.caller, cx.tenant(), cx.param("webhookId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(crate) async fn attempts(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let page = cx.engine.webhooks().attempts(&cx.caller, cx.tenant(), cx.param("webhookId"), paging).await?;
    json(StatusCode::OK, &page)
}

pub(crate) async fn replay(cx: Cx) -> ApiResult<Response> {
    let since = cx.query_param("since").ok_or_else(|| ApiError::field("since", "is required (RFC 3339)"))?;
    let since = time::OffsetDateTime::parse(&since, &time::format_description::well_known::Rfc3339)
        .map_err(|_| ApiError::field("since", "must be an RFC 3339 date-time"))?;
    let replayed = cx.engine.webhooks().replay(&cx.caller, cx.tenant(), cx.param("webhookId"), since).await?;
    json(StatusCode::ACCEPTED, &replayed)
}

pub(crate) async fn publish(cx: Cx) -> ApiResult<Response> {
    let body: DomainEvent = cx.json()?;
    let published = cx.engine.webhooks().publish(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::ACCEPTED, &published)
}
