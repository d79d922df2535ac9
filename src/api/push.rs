//! The send API and the delivery report.

use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::push::{NotificationResponse, NotificationResult, PushNotificationEvent, ResultError, ResultValue};
use crate::models::validate;
use crate::paging::Paging;
use herald_actors::send::{ClientResult, Recipient, SendAnswer, SendError, SendRequest};
use herald_storage::deliveries::{Counts, State};
use http::StatusCode;
use serde_json::{json, Value};

const SUBSYSTEM: u16 = crate::error::subsystem::PUSH;

pub async fn send(cx: Cx) -> ApiResult<Response> {
    cx.engine.limits.send.check(cx.tenant())?;
    let event: PushNotificationEvent = cx.json()?;
    let responses = send_event(&cx.engine, cx.tenant(), event).await?;
    json(StatusCode::ACCEPTED, &responses)
}

/// Validates and sends one event of `tenant` (HTTP and the embedding API).
pub async fn send_event(
    engine: &Engine,
    tenant: &str,
    event: PushNotificationEvent,
) -> ApiResult<Vec<NotificationResponse>> {
    let tenant = tenant.to_string();
    let id = ulid::Ulid::generate().to_string();
    let (recipient, notification) = event.into_parts(&tenant, id.clone())?;
    let kind = match &recipient {
        Recipient::Client { .. } => "client",
        Recipient::User { .. } => "user",
        Recipient::Topic { .. } => "topic",
    };
    let req = SendRequest { tenant: tenant.clone(), recipient: recipient.clone(), notification };
    let started = std::time::Instant::now();
    let answer = engine.push.send(req, engine.config.send_deadline).await;
    metrics::histogram!("herald_send_duration_seconds", "recipient" => kind).record(started.elapsed().as_secs_f64());
    let answer = answer.map_err(|e| match e {
        SendError::NotFound(m) => ApiError::not_found(m),
        SendError::Internal(m) => ApiError::internal(m),
    })?;
    let responses = match answer {
        SendAnswer::Clients(results) => client_responses(&tenant, &id, &recipient, results),
        SendAnswer::Broadcast { apps, .. } => apps
            .into_iter()
            .map(|a| NotificationResponse {
                tenant_id: tenant.clone(),
                user_id: None,
                ast_client_id: None,
                topic: match &recipient {
                    Recipient::Topic { topic } => Some(topic.clone()),
                    _ => None,
                },
                notification_id: id.clone(),
                is_successful: a.refused.is_none(),
                results: a
                    .refused
                    .map(|m| {
                        vec![NotificationResult {
                            result: ResultValue::Error(ResultError { message: m, code: 400, subsystem: SUBSYSTEM }),
                            ast_client_id: None,
                        }]
                    })
                    .unwrap_or_default(),
                metadata: Some(json!({ "appName": a.app, "targeted": a.targeted })),
            })
            .collect(),
    };
    Ok(responses)
}

fn client_responses(
    tenant: &str,
    id: &str,
    recipient: &Recipient,
    results: Vec<ClientResult>,
) -> Vec<NotificationResponse> {
    let user = match recipient {
        Recipient::Client { user, .. } | Recipient::User { user } => Some(user.clone()),
        Recipient::Topic { .. } => None,
    };
    results
        .into_iter()
        .map(|r| {
            let ok = r.outcome.state == State::Sent;
            let result = if ok {
                ResultValue::Text("SENT".into())
            } else {
                ResultValue::Error(ResultError {
                    message: r.outcome.message.clone().unwrap_or_else(|| "not delivered".into()),
                    code: r.outcome.code,
                    subsystem: SUBSYSTEM,
                })
            };
            NotificationResponse {
                tenant_id: tenant.to_string(),
                user_id: user.clone(),
                ast_client_id: Some(r.client_id.clone()),
                topic: None,
                notification_id: id.to_string(),
                is_successful: ok,
                results: vec![NotificationResult { result, ast_client_id: Some(r.client_id) }],
                metadata: Some(json!({ "appName": r.outcome.app, "provider": r.outcome.provider })),
            }
        })
        .collect()
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
