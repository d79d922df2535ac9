//! The send API and the delivery report.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::push::PushNotificationEvent;
use crate::models::validate;
use crate::paging::Paging;
use herald_storage::deliveries::{Counts, State};
use http::StatusCode;
use serde_json::{json, Value};

pub async fn send(cx: Cx) -> ApiResult<Response> {
    cx.engine.limits.send.check(cx.tenant())?;
    let event: PushNotificationEvent = cx.json()?;
    let responses = crate::ops::push::send(&cx.engine, cx.tenant(), event).await?;
    json(StatusCode::ACCEPTED, &responses)
}

fn counts(c: &Counts) -> Value {
    json!({ "sent": c.sent, "invalid": c.invalid, "failed": c.failed })
}

pub async fn report(cx: Cx) -> ApiResult<Response> {
    let (tenant, id) = (cx.tenant(), cx.param("notificationId"));
    validate::ulid("notificationId", id)?;
    let paging = Paging::from_query(&cx, "page_size", 1, 1000)?;
    let store = &cx.engine.store;
    let report = store
        .deliveries()
        .report(tenant, id)?
        .ok_or_else(|| ApiError::not_found(format!("notification {id} not found")))?;
    let targeted: u64 = report.targeted.values().sum();
    let mut total = Counts::default();
    for c in report.by_app.values() {
        total.sent += c.sent;
        total.invalid += c.invalid;
        total.failed += c.failed;
    }
    let by_app: serde_json::Map<String, Value> = report
        .targeted
        .keys()
        .chain(report.by_app.keys())
        .map(|app| {
            let c = report.by_app.get(app).copied().unwrap_or_default();
            let mut v = counts(&c);
            v["targeted"] = json!(report.targeted.get(app).copied().unwrap_or(0));
            (app.clone(), v)
        })
        .collect();
    let by_provider: serde_json::Map<String, Value> =
        report.by_provider.iter().map(|(p, c)| (p.clone(), counts(c))).collect();
    let clients: Vec<Value> = store
        .deliveries()
        .outcomes(tenant, id, paging.offset(), paging.size)?
        .into_iter()
        .map(|(client, o)| {
            json!({
                "astClientId": client,
                "appName": o.app,
                "provider": o.provider,
                "state": match o.state { State::Sent => "SENT", State::Invalid => "INVALID", State::Failed => "FAILED" },
                "code": o.code,
                "message": o.message,
            })
        })
        .collect();
    json(
        StatusCode::OK,
        &json!({
            "notificationId": report.id,
            "tenantId": tenant,
            "kind": report.kind,
            "recipient": report.recipient,
            "state": match (&report.failure, report.completed_ms) {
                (Some(_), _) => "FAILED",
                (None, Some(_)) => "COMPLETED",
                (None, None) => "RUNNING",
            },
            "failure": report.failure,
            "createdAt": report.created_ms,
            "completedAt": report.completed_ms,
            "counts": {
                "targeted": targeted,
                "sent": total.sent,
                "invalid": total.invalid,
                "failed": total.failed,
                "pending": targeted.saturating_sub(total.total()),
                // Broadcast clients sent again after a crash: at least the duplicates.
                "resent": report.resent,
            },
            "byProvider": by_provider,
            "byApp": by_app,
            "clients": clients,
            "page": { "page": paging.page, "pageSize": paging.size },
        }),
    )
}
