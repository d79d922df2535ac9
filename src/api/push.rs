//! The send API and the delivery report.

use crate::error::ApiResult;
use crate::http::{json, Cx, Response};
use crate::models::push::{PushNotificationEvent, SendBatch};
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn send(cx: Cx) -> ApiResult<Response> {
    cx.engine.limits.send.check(cx.tenant())?;
    let event: PushNotificationEvent = cx.json()?;
    let responses = cx.engine.push().send(&cx.caller, cx.tenant(), event).await?;
    json(StatusCode::ACCEPTED, &responses)
}

/// Up to 500 events: each answered in its own entry (see `library::push`).
pub(crate) async fn send_batch(cx: Cx) -> ApiResult<Response> {
    let batch: SendBatch = cx.json()?;
    let answer = cx.engine.push().send_batch(&cx.caller, cx.tenant(), batch).await?;
    json(StatusCode::ACCEPTED, &answer)
}

pub(crate) async fn report(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 1, 1000)?;
    let id = cx.param("notificationId");
    let report = cx.engine.push().report(&cx.caller, cx.tenant(), id, paging.page, paging.size).await?;
    json(StatusCode::OK, &report)
}
