//! Scheduled sends: storing one, cancelling one. Firing them is the
//! scheduler's (`crate::scheduler`).

use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::schedule::{Checked, MAX_PENDING};
use herald_storage::now_ms;
use herald_storage::schedules::{Schedule, State};

/// Stores a checked schedule of `tenant`, durably; 429 when the tenant has
/// [`MAX_PENDING`] schedules still to fire.
pub async fn create(engine: &Engine, tenant: &str, checked: Checked) -> ApiResult<Schedule> {
    let event_json =
        serde_json::to_string(&checked.event).map_err(|e| ApiError::internal(format!("encoding the event: {e}")))?;
    let schedule = Schedule {
        id: ulid::Ulid::generate().to_string(),
        send_at_ms: checked.send_at_ms,
        event_json,
        state: State::Scheduled,
        created_ms: now_ms(),
        notification_id: None,
        fired_ms: None,
        finished_ms: None,
        failure: None,
    };
    if !engine.store.schedules().create(tenant, &schedule, MAX_PENDING)? {
        return Err(ApiError::too_many_requests(
            format!("the tenant has {MAX_PENDING} scheduled sends still to fire: cancel one or wait for one to fire"),
            60,
        ));
    }
    engine.store.durable().await?;
    Ok(schedule)
}

/// Cancels a schedule that has not fired yet (again: answered as it is);
/// 404 when unknown, 409 once it fired.
pub async fn cancel(engine: &Engine, tenant: &str, id: &str) -> ApiResult<Schedule> {
    let s = engine.store.schedules().cancel(tenant, id, now_ms())?;
    let s = s.ok_or_else(|| ApiError::not_found(format!("schedule {id} not found")))?;
    match s.state {
        State::Cancelled => {
            engine.store.durable().await?;
            Ok(s)
        }
        State::Sending | State::Sent | State::Failed => {
            let sent = s.notification_id.as_deref().unwrap_or("-");
            Err(ApiError::conflict(format!("schedule {id} already fired (notification {sent})")))
        }
        State::Scheduled => Err(ApiError::internal("a cancelled schedule is still scheduled")),
    }
}
