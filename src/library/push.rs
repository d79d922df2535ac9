//! Sending, and reading what became of a notification.

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::push::{
    AppCounts, BatchAnswer, ClientDelivery, DeliveryCounts, DeliveryReport, NotificationResponse, PageInfo, Progress,
    PushNotificationEvent, ReportCounts, SendBatch, SendOptions,
};
use crate::models::validate;
use herald_storage::deliveries::{Counts, State};
use herald_storage::now_ms;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const SEND: Access = Access::Tenant(ADMIN);
    pub const REPORT: Access = Access::Tenant(ADMIN_OR_READ);
    pub const CANCEL: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::push`].
pub struct PushApi<'a>(pub(crate) &'a Engine);

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
        let results = self.0.in_flight.track_future(crate::ops::push::send_batch(self.0, tenant, batch.events)).await;
        Ok(BatchAnswer { results })
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
            state: match (&report.failure, report.cancelled_ms, report.completed_ms) {
                (Some(_), _, _) => "FAILED",
                (None, Some(_), Some(_)) => "CANCELLED",
                (None, Some(_), None) => "CANCELLING",
                (None, None, Some(_)) => "COMPLETED",
                (None, None, None) => "RUNNING",
            }
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
            created_at: report.created_ms,
            completed_at: report.completed_ms,
        })
    }
}
