//! Sending: one event to a client, to a user's clients, or to every client
//! of a tenant's app. The push engine writes the delivery records (see
//! `herald_actors::push`); this is the one entry to it.

use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::push::{
    BatchEntry, NotificationResponse, NotificationResult, PushNotificationEvent, ResponseMetadata, ResultError,
    ResultValue, SendOptions,
};
use herald_actors::send::{ClientResult, Recipient, SendAnswer, SendError, SendRequest};
use herald_storage::deliveries::State;

const SUBSYSTEM: u16 = crate::error::subsystem::PUSH;

/// Validates and sends one event of `tenant`: to a client, a user's
/// clients, or as a broadcast (answered once it is durably accepted), within
/// the tenant's quotas (see `quotas`).
pub async fn send(
    engine: &Engine,
    tenant: &str,
    event: PushNotificationEvent,
    options: SendOptions,
) -> ApiResult<Vec<NotificationResponse>> {
    send_as(engine, tenant, notification_id().to_string(), event, options).await
}

/// The next notification id: monotonic across the process, so the ids of
/// one millisecond's sends are consecutive and their records are written
/// together (see `herald_storage::deliveries::Deliveries::record_send`).
fn notification_id() -> ulid::Ulid {
    static IDS: std::sync::Mutex<ulid::Generator> = std::sync::Mutex::new(ulid::Generator::new());
    match IDS.lock() {
        // Past the last random value of its millisecond: a fresh random one.
        Ok(mut ids) => ids.generate().unwrap_or_else(|overflow| overflow.commit_overflow_random()),
        Err(_) => ulid::Ulid::generate(),
    }
}

/// [`send`] as notification `id`, chosen beforehand (a scheduled send's,
/// recorded before it fires).
pub async fn send_as(
    engine: &Engine,
    tenant: &str,
    id: String,
    event: PushNotificationEvent,
    options: SendOptions,
) -> ApiResult<Vec<NotificationResponse>> {
    let req = request(engine, tenant, id, event, options)?;
    let (name, id, series) =
        (named(&req.recipient), req.notification.id.clone(), engine.send_series.of(&req.recipient));
    let started = std::time::Instant::now();
    let answer = engine.push.send(req, engine.config.send_deadline).await;
    series.record(started.elapsed().as_secs_f64());
    responses(tenant, &id, &name, answer)
}

/// Sends every event of a batch concurrently (one message to the tenant's
/// actor), each exactly as [`send`] would (its own notification, report
/// and events); one entry per event, in order. The events' notification ids
/// are consecutive ULIDs, so that their reports go in one record (see
/// `herald_storage::deliveries::BatchRecord`).
pub async fn send_batch(
    engine: &Engine,
    tenant: &str,
    events: Vec<ApiResult<PushNotificationEvent>>,
) -> Vec<BatchEntry> {
    let refused = |e: ApiError| BatchEntry::Refused(e.admin_body(SUBSYSTEM));
    let mut entries: Vec<Option<BatchEntry>> = Vec::with_capacity(events.len());
    // The events sent: their entry, duration histogram, recipient name and notification id.
    let mut sent = Vec::with_capacity(events.len());
    let mut reqs = Vec::with_capacity(events.len());
    let mut next = ulid::Ulid::generate();
    for (i, event) in events.into_iter().enumerate() {
        let id = next.to_string();
        // Past the last random value of its millisecond, the next number is the next millisecond's first.
        next = next.increment().unwrap_or_else(|carried| carried);
        match event.and_then(|event| request(engine, tenant, id, event, SendOptions::default())) {
            Ok(req) => {
                sent.push((
                    i,
                    engine.send_series.of(&req.recipient),
                    named(&req.recipient),
                    req.notification.id.clone(),
                ));
                reqs.push(req);
                entries.push(None);
            }
            Err(e) => entries.push(Some(refused(e))),
        }
    }
    if !reqs.is_empty() {
        let started = std::time::Instant::now();
        let answers = match engine.push.send_many(tenant, reqs, engine.config.send_deadline).await {
            Ok(answers) => answers,
            Err(e) => vec![Err(e); sent.len()],
        };
        // The events are answered together: each took what its caller waited.
        let elapsed = started.elapsed();
        for ((i, series, name, id), answer) in sent.into_iter().zip(answers) {
            series.record(elapsed.as_secs_f64());
            if let Some(entry) = entries.get_mut(i) {
                *entry = Some(match responses(tenant, &id, &name, answer) {
                    Ok(r) => BatchEntry::Sent(r),
                    Err(e) => refused(e),
                });
            }
        }
    }
    entries.into_iter().map(|e| e.unwrap_or_else(|| refused(ApiError::internal("the event got no answer")))).collect()
}

/// Validates one event and takes its quota: the request the push engine sends.
fn request(
    engine: &Engine,
    tenant: &str,
    id: String,
    event: PushNotificationEvent,
    options: SendOptions,
) -> ApiResult<SendRequest> {
    let (recipient, notification) = event.into_parts(tenant, id)?;
    match &recipient {
        Recipient::Topic { .. } => engine.quotas.broadcast(tenant)?,
        _ if options.max_per_second.is_some() => {
            return Err(ApiError::field("maxPerSecond", "applies to topic recipients only"));
        }
        _ => engine.quotas.interactive(tenant)?,
    }
    Ok(SendRequest { tenant: tenant.to_string(), recipient, notification, max_per_second: options.max_per_second })
}

/// What a send's answer names: the user it went to, or its topic.
fn named(recipient: &Recipient) -> String {
    match recipient {
        Recipient::Client { user, .. } | Recipient::User { user } => user.clone(),
        Recipient::Topic { topic } => topic.clone(),
    }
}

/// What a send to `name` (see [`named`]) answers, from the push engine's answer.
fn responses(
    tenant: &str,
    id: &str,
    name: &str,
    answer: Result<SendAnswer, SendError>,
) -> ApiResult<Vec<NotificationResponse>> {
    let answer = answer.map_err(|e| match e {
        SendError::NotFound(m) => ApiError::not_found(m),
        SendError::Internal(m) => ApiError::internal(m),
    })?;
    Ok(match answer {
        SendAnswer::Clients(results) => client_responses(tenant, id, name, results),
        SendAnswer::Broadcast { apps, .. } => apps
            .into_iter()
            .map(|a| NotificationResponse {
                tenant_id: tenant.to_string(),
                user_id: None,
                ast_client_id: None,
                topic: Some(name.to_string()),
                notification_id: id.to_string(),
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
                metadata: Some(ResponseMetadata { app_name: a.app, targeted: Some(a.targeted), provider: None }),
            })
            .collect(),
    })
}

/// Cancels the running broadcast `id` of `tenant`, durably (see
/// `herald_storage::broadcasts::cancel`): 404 when unknown, 409 when it is
/// not a running broadcast (a one-client send, or a completed broadcast).
pub async fn cancel(engine: &Engine, tenant: &str, id: &str) -> ApiResult<()> {
    let store = &engine.store;
    if store.broadcasts().cancel(tenant, id, herald_storage::now_ms())?.is_none() {
        return Err(match store.deliveries().report(tenant, id)? {
            Some(_) => ApiError::conflict(format!("notification {id} is not a running broadcast")),
            None => ApiError::not_found(format!("notification {id} not found")),
        });
    }
    store.durable().await?;
    tracing::info!(tenant, notification = id, "broadcast cancelled");
    Ok(())
}

/// One entry per client of a send to `user` (one client, or all of theirs).
fn client_responses(tenant: &str, id: &str, user: &str, results: Vec<ClientResult>) -> Vec<NotificationResponse> {
    results
        .into_iter()
        .map(|ClientResult { client_id, outcome }| {
            // Moved, not copied: the push engine's result is this answer's only use.
            let ok = outcome.state == State::Sent;
            let result = if ok {
                ResultValue::Text("SENT".into())
            } else {
                ResultValue::Error(ResultError {
                    message: outcome.message.unwrap_or_else(|| "not delivered".into()),
                    code: outcome.code,
                    subsystem: SUBSYSTEM,
                })
            };
            NotificationResponse {
                tenant_id: tenant.to_string(),
                user_id: Some(user.to_string()),
                ast_client_id: Some(client_id.clone()),
                topic: None,
                notification_id: id.to_string(),
                is_successful: ok,
                results: vec![NotificationResult { result, ast_client_id: Some(client_id) }],
                metadata: Some(ResponseMetadata {
                    app_name: outcome.app,
                    targeted: None,
                    provider: Some(outcome.provider),
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// The ids of one millisecond are consecutive, so their sends' records
    /// are written together; later ids are greater, from any thread.
    #[test]
    fn notification_ids_are_consecutive_within_a_millisecond() {
        let ids: Vec<ulid::Ulid> = (0..1000).map(|_| super::notification_id()).collect();
        for pair in ids.windows(2) {
            assert!(pair[1] > pair[0], "increasing: {} then {}", pair[0], pair[1]);
        }
        let same_ms: Vec<_> = ids.windows(2).filter(|p| p[1].timestamp_ms() == p[0].timestamp_ms()).collect();
        assert!(!same_ms.is_empty(), "a thousand ids span more than a thousand milliseconds");
        for pair in same_ms {
            assert_eq!(Some(pair[1].0), pair[0].0.checked_add(1), "consecutive within a millisecond");
        }
        let other = std::thread::spawn(super::notification_id).join().unwrap();
        assert!(other > ids[999]);
    }
}
