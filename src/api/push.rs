//! The send API and the delivery report.

use crate::error::{subsystem, ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::push::{BatchEntry, PushNotificationEvent, SendBatch, SendOptions};
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn send(cx: Cx) -> ApiResult<Response> {
    cx.engine.limits.send.check(cx.tenant())?;
    let options = SendOptions::parse_max_per_second(cx.query_param("maxPerSecond").as_deref())?;
    let event: PushNotificationEvent = cx.json()?;
    let responses = cx.engine.push().send_with(&cx.caller, cx.tenant(), event, options).await?;
    json(StatusCode::ACCEPTED, &responses)
}

/// Up to 500 events: each answered in its own entry (see `library::push`).
/// Each event takes one of the tenant's send-rate tokens: the events past
/// the limit are refused alone (429 entries), a batch of which none fits
/// as a whole.
pub(crate) async fn send_batch(cx: Cx) -> ApiResult<Response> {
    let mut batch: SendBatch = cx.json()?;
    batch.validate()?;
    let events = batch.events.len();
    let mut over = None;
    let admitted = (0..events)
        .take_while(|_| cx.engine.limits.send.check(cx.tenant()).map_err(|e| over = Some(e)).is_ok())
        .count();
    if admitted == 0 {
        return Err(over.unwrap_or_else(|| ApiError::too_many_requests("rate limit of send exceeded", 1)));
    }
    batch.events.truncate(admitted);
    let mut answer = cx.engine.push().send_batch(&cx.caller, cx.tenant(), batch).await?;
    if let Some(e) = over {
        let refused = (admitted..events).map(|_| BatchEntry::Refused(e.admin_body(subsystem::PUSH)));
        answer.results.extend(refused);
    }
    json(StatusCode::ACCEPTED, &answer)
}

/// `POST .../push_notification/{notificationId}/cancel` (ext): 202 with the report as the cancel left it.
pub(crate) async fn cancel(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 1, 1000)?;
    let id = cx.param("notificationId");
    let report = cx.engine.push().cancel(&cx.caller, cx.tenant(), id, paging.size).await?;
    json(StatusCode::ACCEPTED, &report)
}

pub(crate) async fn report(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 1, 1000)?;
    let id = cx.param("notificationId");
    let report = cx.engine.push().report(&cx.caller, cx.tenant(), id, paging.page, paging.size).await?;
    json(StatusCode::OK, &report)
}
