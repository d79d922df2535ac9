//! Sending, and reading what became of a notification.

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::idempotency::IdempotencyKey;
use crate::models::push::{
    AppCounts, BatchAnswer, ClientDelivery, DeliveryCounts, DeliveryReport, NotificationResponse, PageInfo, Progress,
    PushNotificationEvent, ReportCounts, SendBatch, SendOptions,
};
use crate::models::validate;
use crate::ops::idempotency::{fingerprint, once, Answer};
use herald_storage::deliveries::{Counts, State};
use herald_storage::now_ms;
use http::StatusCode;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const SEND: Access = Access::Tenant(ADMIN);
    pub const REPORT: Access = Access::Tenant(ADMIN_OR_READ);
    pub const CANCEL: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::push`].
pub struct PushApi<'a>(pub(crate) &'a Engine);

/// The answer of an idempotent send: the first call's, or replayed.
#[derive(Debug)]
pub struct Idempotent<T> {
    /// What the send answered.
    pub answer: T,
    /// It is the first call's answer, given again: nothing was sent this time.
    pub replayed: bool,
}

impl Answer {
    /// The answer as `T`, or the error the first call was refused with.
    fn decode<T: serde::de::DeserializeOwned>(self) -> ApiResult<Idempotent<T>> {
        if !self.status.is_success() {
            let body: crate::error::AdminErrorBody = serde_json::from_slice(&self.body)
                .map_err(|e| ApiError::internal(format!("a stored answer does not decode: {e}")))?;
            return Err(ApiError::new(self.status, body.message));
        }
        let answer = serde_json::from_slice(&self.body)
            .map_err(|e| ApiError::internal(format!("a stored answer does not decode: {e}")))?;
        Ok(Idempotent { answer, replayed: self.replayed })
    }
}

impl PushApi<'_> {
    /// Sends one event (spec 000) to a client, a user's clients, or every
    /// client of the tenant (a broadcast, answered once durably accepted),
    /// validated and answered like the HTTP body. The send rate limit of the
    /// HTTP API does not apply; the tenant's quotas do (429 past them).
    /// [`Engine::shutdown`] waits for sends in flight.
    pub async fn send(
        &self,
        caller: &Caller,
        tenant: &str,
        event: PushNotificationEvent,
    ) -> ApiResult<Vec<NotificationResponse>> {
        self.send_with(caller, tenant, event, SendOptions::default()).await
    }

    /// [`Self::send`] with options: a broadcast's own rate (`maxPerSecond`).
    pub async fn send_with(
        &self,
        caller: &Caller,
        tenant: &str,
        event: PushNotificationEvent,
        options: SendOptions,
    ) -> ApiResult<Vec<NotificationResponse>> {
        caller.authorize(Some(tenant), access::SEND)?;
        // Counted with the HTTP requests in flight, which shutdown drains.
        self.0.in_flight.track_future(crate::ops::push::send(self.0, tenant, event, options)).await
    }

    /// Sends up to 500 events at once, concurrently, each as [`Self::send`]
    /// would: one entry per event, in order; an event that does not decode
    /// or is refused gets its error as its entry. Refused as a whole only
    /// when the batch itself is empty or too long.
    pub async fn send_batch(&self, caller: &Caller, tenant: &str, batch: SendBatch) -> ApiResult<BatchAnswer> {
        caller.authorize(Some(tenant), access::SEND)?;
        batch.validate()?;
        self.send_decoded(caller, tenant, batch.decode()).await
    }

    /// [`Self::send_batch`] of events already decoded (each or its error).
    pub(crate) async fn send_decoded(
        &self,
        caller: &Caller,
        tenant: &str,
        events: Vec<ApiResult<crate::models::push::PushNotificationEvent>>,
    ) -> ApiResult<BatchAnswer> {
        caller.authorize(Some(tenant), access::SEND)?;
        let results = self.0.in_flight.track_future(crate::ops::push::send_batch(self.0, tenant, events)).await;
        Ok(BatchAnswer { results })
    }

    /// [`Self::send`] once per idempotency key of the tenant: the first call
    /// with `key` sends and its answer is kept 24 hours; a call with the same
    /// key and the same event answers it again (`replayed`) and sends
    /// nothing, waiting for the first if it still runs (409 past the send
    /// deadline); the same key with another event is refused (422). A first
    /// call refused for its input (400, 404) is replayed as that error; one
    /// that failed for a passing reason (503, 507) frees the key.
    pub async fn send_idempotent(
        &self,
        caller: &Caller,
        tenant: &str,
        key: &IdempotencyKey,
        event: PushNotificationEvent,
        options: SendOptions,
    ) -> ApiResult<Idempotent<Vec<NotificationResponse>>> {
        self.send_once(caller, tenant, key, event, options).await?.decode()
    }

    /// [`Self::send_idempotent`], answered as the HTTP route sends it.
    pub(crate) async fn send_once(
        &self,
        caller: &Caller,
        tenant: &str,
        key: &IdempotencyKey,
        event: PushNotificationEvent,
        options: SendOptions,
    ) -> ApiResult<Answer> {
        caller.authorize(Some(tenant), access::SEND)?;
        // A retry with another `maxPerSecond` is another request.
        let route = match options.max_per_second {
            Some(rate) => format!("send?maxPerSecond={rate}"),
            None => "send".to_string(),
        };
        let print = fingerprint(&route, &event)?;
        let (caller, owned) = (caller.clone(), tenant.to_string());
        let send = move |engine: std::sync::Arc<Engine>| async move {
            engine.push().send_with(&caller, &owned, event, options).await
        };
        once(self.0.shared()?, tenant, key, print, StatusCode::ACCEPTED, send).await
    }

    /// [`Self::send_batch`] once per idempotency key, as [`Self::send_idempotent`].
    pub async fn send_batch_idempotent(
        &self,
        caller: &Caller,
        tenant: &str,
        key: &IdempotencyKey,
        batch: SendBatch,
    ) -> ApiResult<Idempotent<BatchAnswer>> {
        caller.authorize(Some(tenant), access::SEND)?;
        batch.validate()?;
        let print = fingerprint("send-batch", &batch)?;
        let (caller, owned) = (caller.clone(), tenant.to_string());
        let send =
            move |engine: std::sync::Arc<Engine>| async move { engine.push().send_batch(&caller, &owned, batch).await };
        once(self.0.shared()?, tenant, key, print, StatusCode::ACCEPTED, send).await?.decode()
    }

    /// Cancels a running broadcast: every engine running a part of it stops
    /// within a second, and its report ends `CANCELLED` with what was sent
    /// (`CANCELLING` until then). 404 for an unknown notification, 409 for
    /// one that is not a running broadcast. Answers the report (the first
    /// `page_size` clients' outcomes) as the cancel left it.
    pub async fn cancel(&self, caller: &Caller, tenant: &str, id: &str, page_size: usize) -> ApiResult<DeliveryReport> {
        caller.authorize(Some(tenant), access::CANCEL)?;
        validate::ulid("notificationId", id)?;
        crate::ops::push::cancel(self.0, tenant, id).await?;
        self.report(caller, tenant, id, 1, page_size).await
    }

    /// The delivery report of a notification, with page `page` (from 1) of
    /// `page_size` of its clients' outcomes.
    pub async fn report(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        page: usize,
        page_size: usize,
    ) -> ApiResult<DeliveryReport> {
        caller.authorize(Some(tenant), access::REPORT)?;
        validate::ulid("notificationId", id)?;
        if page == 0 {
            return Err(ApiError::field("page", "starts at 1"));
        }
        if !(1..=1000).contains(&page_size) {
            return Err(ApiError::field("page_size", "must be from 1 to 1000"));
        }
        let store = &self.0.store;
        let report = store
            .deliveries()
            .report(tenant, id)?
            .ok_or_else(|| ApiError::not_found(format!("notification {id} not found")))?;
        let offset = page.saturating_sub(1).saturating_mul(page_size);
        let clients = store
            .deliveries()
            .outcomes(tenant, id, offset, page_size)?
            .into_iter()
            .map(|(client, o)| ClientDelivery {
                ast_client_id: client,
                app_name: o.app,
                provider: o.provider,
                state: match o.state {
                    State::Sent => "SENT",
                    State::Invalid => "INVALID",
                    State::Failed => "FAILED",
                }
                .to_string(),
                code: o.code,
                message: o.message,
            })
            .collect();
        let targeted: u64 = report.targeted.values().sum();
        let total = report.total();
        let counts = |c: &Counts| DeliveryCounts { sent: c.sent, invalid: c.invalid, failed: c.failed };
        let by_app = report
            .targeted
            .keys()
            .chain(report.by_app.keys())
            .map(|app| {
                let c = report.by_app.get(app).copied().unwrap_or_default();
                let targeted = report.targeted.get(app).copied().unwrap_or(0);
                (app.clone(), AppCounts { targeted, sent: c.sent, invalid: c.invalid, failed: c.failed })
            })
            .collect();
        let progress = (report.kind == "topic").then(|| Progress::of(targeted, total.total(), &report, now_ms()));
        Ok(DeliveryReport {
            notification_id: report.id.clone(),
            tenant_id: tenant.to_string(),
            state: crate::models::push::report_state(
                report.failure.is_some(),
                report.cancelled_ms.is_some(),
                report.completed_ms.is_some(),
            )
            .to_string(),
            cancelled_at: report.cancelled_ms,
            progress,
            counts: ReportCounts {
                targeted,
                sent: total.sent,
                invalid: total.invalid,
                failed: total.failed,
                pending: targeted.saturating_sub(total.total()),
                resent: report.resent,
            },
            by_provider: report.by_provider.iter().map(|(p, c)| (p.clone(), counts(c))).collect(),
            by_app,
            clients,
            page: PageInfo { page, page_size },
            kind: report.kind,
            recipient: report.recipient,
            failure: report.failure,
            schedule_id: store.schedules().of_notification(tenant, id)?,
            created_at: report.created_ms,
            completed_at: report.completed_ms,
        })
    }
}
