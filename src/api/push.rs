//! The send API and the delivery report.

use crate::engine::Engine;
use crate::error::{subsystem, ApiError, ApiResult};
use crate::http::{json, with_body, Cx, Response};
use crate::models::idempotency::{IdempotencyKey, REPLAYED};
use crate::models::push::{BatchEntry, PushNotificationEvent, RawSendBatch, SendOptions};
use crate::ops::idempotency::{fingerprint, once, Answer};
use crate::paging::Paging;
use http::{HeaderValue, StatusCode};
use std::sync::Arc;

/// One send; with an `Idempotency-Key`, once per key (see `ops::idempotency`).
pub(crate) async fn send(cx: Cx) -> ApiResult<Response> {
    cx.engine.limits.send.check(cx.tenant())?;
    let key = IdempotencyKey::from_headers(&cx.headers)?;
    let options = SendOptions::parse_max_per_second(cx.query_param("maxPerSecond").as_deref())?;
    let event: PushNotificationEvent = cx.json()?;
    let Some(key) = key else {
        let responses = cx.engine.push().send_with(&cx.caller, cx.tenant(), event, options).await?;
        return json(StatusCode::ACCEPTED, &responses);
    };
    Ok(answered(cx.engine.push().send_once(&cx.caller, cx.tenant(), &key, event, options).await?))
}

/// Up to 500 events: each answered in its own entry (see `library::push`).
/// Each event takes one of the tenant's send-rate tokens: the events past
/// the limit are refused alone (429 entries), a batch of which none fits
/// as a whole. With an `Idempotency-Key`, the answer (429 entries
/// included) is kept and replayed as for a single send.
pub(crate) async fn send_batch(cx: Cx) -> ApiResult<Response> {
    let key = IdempotencyKey::from_headers(&cx.headers)?;
    let batch: RawSendBatch = cx.json()?;
    batch.validate()?;
    let print = key.as_ref().map(|_| fingerprint("send-batch", &batch.to_values()?)).transpose()?;
    let mut events = batch.decode();
    let count = events.len();
    let mut over = None;
    let admitted =
        (0..count).take_while(|_| cx.engine.limits.send.check(cx.tenant()).map_err(|e| over = Some(e)).is_ok()).count();
    if admitted == 0 {
        return Err(over.unwrap_or_else(|| ApiError::too_many_requests("rate limit of send exceeded", 1)));
    }
    events.truncate(admitted);
    let refused: Vec<BatchEntry> = match over {
        Some(e) => (admitted..count).map(|_| BatchEntry::Refused(e.admin_body(subsystem::PUSH))).collect(),
        None => Vec::new(),
    };
    let (caller, tenant) = (cx.caller.clone(), cx.tenant().to_string());
    let run = move |engine: Arc<Engine>| async move {
        let mut answer = engine.push().send_decoded(&caller, &tenant, events).await?;
        answer.results.extend(refused);
        Ok::<_, ApiError>(answer)
    };
    match (key, print) {
        (Some(key), Some(print)) => {
            Ok(answered(once(cx.engine.clone(), cx.tenant(), &key, print, StatusCode::ACCEPTED, run).await?))
        }
        _ => json(StatusCode::ACCEPTED, &run(cx.engine.clone()).await?),
    }
}

/// An idempotent send's answer as is, marked when replayed.
fn answered(answer: Answer) -> Response {
    let mut r = with_body(answer.status, "application/json", answer.body.into());
    if answer.replayed {
        r.headers_mut().insert(REPLAYED, HeaderValue::from_static("true"));
    }
    r
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
