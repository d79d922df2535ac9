//! Scheduled sends (ext): `POST /v1/tenants/{t}/push_notification/schedule`
//! and what the schedule routes answer.

use super::push::PushNotificationEvent;
use super::webhook::rfc3339;
use crate::error::{ApiError, ApiResult};
use herald_storage::schedules::{Schedule, State};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// How far in the past `sendAt` may be and still fire at once: clocks of
/// callers drift, and a request may wait in queues. Further back is a 422.
pub const PAST_GRACE_MS: u64 = 60_000;

/// How far ahead a send may be scheduled: a year and a day.
pub const MAX_AHEAD_MS: u64 = 366 * 86_400_000;

/// Schedules still to fire a tenant may have at once.
pub const MAX_PENDING: u64 = 10_000;

/// Body of `POST /v1/tenants/{tenantId}/push_notification/schedule` (ext); unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScheduleBody {
    /// When to send, RFC 3339 with an offset (`2027-03-01T09:00:00+01:00`): from a minute ago (sent
    /// at once) to 366 days ahead; 422 otherwise.
    #[schema(value_type = String, format = DateTime)]
    pub send_at: String,
    /// The spec-000 event to send then, checked now exactly as the send route checks it (whether the
    /// recipient exists is checked when it fires).
    #[schema(value_type = PushNotificationEvent)]
    pub event: Value,
}

/// A schedule's body, checked: its instant (ms since the epoch) and its event.
#[derive(Debug)]
pub struct Checked {
    /// When to send, ms since the epoch (not before `now`).
    pub send_at_ms: u64,
    /// The event, validated.
    pub event: PushNotificationEvent,
}

impl ScheduleBody {
    /// Checks `sendAt` against `now_ms` and the event against the send
    /// route's rules for `tenant`; errors name the field (`event.recipient.userId`).
    pub fn check(self, tenant: &str, now_ms: u64) -> ApiResult<Checked> {
        let at = OffsetDateTime::parse(&self.send_at, &Rfc3339).map_err(|e| {
            ApiError::field("sendAt", format!("not an RFC 3339 time such as 2027-03-01T09:00:00Z ({e})"))
        })?;
        let at_ms = u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        if at_ms.saturating_add(PAST_GRACE_MS) < now_ms {
            return Err(unprocessable("sendAt", "is more than a minute in the past"));
        }
        if at_ms > now_ms.saturating_add(MAX_AHEAD_MS) {
            return Err(unprocessable("sendAt", "is more than 366 days ahead"));
        }
        let event: PushNotificationEvent = serde_path_to_error::deserialize(self.event).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { "event".to_string() } else { format!("event.{path}") };
            ApiError::field(&path, e.into_inner())
        })?;
        // The send's own checks, on a copy (its parts are not kept).
        let copy: PushNotificationEvent =
            serde_json::to_value(&event).and_then(serde_json::from_value).map_err(|e| ApiError::field("event", e))?;
        copy.into_parts(tenant, String::new()).map_err(|e| match &e.field {
            Some(f) => ApiError::field(&format!("event.{f}"), e.message.trim_start_matches(&format!("{f}: "))),
            None => e,
        })?;
        Ok(Checked { send_at_ms: at_ms.max(now_ms), event })
    }
}

fn unprocessable(path: &str, problem: &str) -> ApiError {
    ApiError { status: StatusCode::UNPROCESSABLE_ENTITY, ..ApiError::field(path, problem) }
}

/// `SCHEDULED`, `SENDING`, `SENT`, `CANCELLED` or `FAILED`.
fn state_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&STATES)
}

/// Every state, as the API spells them.
pub const STATES: [&str; 5] = ["SCHEDULED", "SENDING", "SENT", "CANCELLED", "FAILED"];

/// The API's name of a state.
pub fn state_name(s: State) -> &'static str {
    match s {
        State::Scheduled => "SCHEDULED",
        State::Sending => "SENDING",
        State::Sent => "SENT",
        State::Cancelled => "CANCELLED",
        State::Failed => "FAILED",
    }
}

/// The state the API names `name` (the list's `state` filter); 400 naming `field` otherwise.
pub fn parse_state(field: &str, name: &str) -> ApiResult<State> {
    match name {
        "SCHEDULED" => Ok(State::Scheduled),
        "SENDING" => Ok(State::Sending),
        "SENT" => Ok(State::Sent),
        "CANCELLED" => Ok(State::Cancelled),
        "FAILED" => Ok(State::Failed),
        _ => Err(ApiError::field(field, format!("must be one of {}", STATES.join(", ")))),
    }
}

/// A scheduled send, as the schedule routes answer it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    /// The schedule's id (a ULID).
    pub id: String,
    /// Tenant of the schedule.
    pub tenant_id: String,
    /// When it is to be sent (RFC 3339, UTC); a `sendAt` in the past is now.
    pub send_at: String,
    /// `SCHEDULED` (waiting), `SENDING` (its time came), `SENT` (its delivery report tells the
    /// rest), `CANCELLED` (deleted before it fired) or `FAILED` (`failure` says why).
    #[schema(schema_with = state_schema)]
    pub state: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// The notification sent for it (the key of its delivery report), from `SENDING` on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_id: Option<String>,
    /// When it started sending (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired_at: Option<String>,
    /// When it was sent, failed or was cancelled (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Why it could not be sent (the recipient no longer exists...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The event it sends.
    #[schema(value_type = PushNotificationEvent)]
    pub event: Value,
}

impl ScheduleView {
    /// The view of a stored schedule of `tenant`.
    pub fn of(tenant: &str, s: &Schedule) -> ScheduleView {
        ScheduleView {
            id: s.id.clone(),
            tenant_id: tenant.to_string(),
            send_at: rfc3339(s.send_at_ms),
            state: state_name(s.state).to_string(),
            created_at: rfc3339(s.created_ms),
            notification_id: s.notification_id.clone(),
            fired_at: s.fired_ms.map(rfc3339),
            finished_at: s.finished_ms.map(rfc3339),
            failure: s.failure.clone(),
            event: serde_json::from_str(&s.event_json).unwrap_or(Value::Null),
        }
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)] // small instants around a fixed now
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_800_000_000_000;

    fn body(send_at: &str, event: Value) -> ScheduleBody {
        ScheduleBody { send_at: send_at.into(), event }
    }

    fn event() -> Value {
        json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "hi"}}})
    }

    fn at(ms: i128) -> String {
        let t = OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000).unwrap();
        t.format(&Rfc3339).unwrap()
    }

    #[test]
    fn send_at_is_rfc3339_from_a_minute_ago_to_a_year_ahead() {
        let ok = body(&at(NOW as i128 + 5000), event()).check("acme", NOW).unwrap();
        assert_eq!(ok.send_at_ms, NOW + 5000);
        let late = body(&at(NOW as i128 - 30_000), event()).check("acme", NOW).unwrap();
        assert_eq!(late.send_at_ms, NOW, "a little in the past: now");
        let e = body(&at(NOW as i128 - 61_000), event()).check("acme", NOW).unwrap_err();
        assert_eq!((e.status.as_u16(), e.field.as_deref()), (422, Some("sendAt")));
        let e = body(&at(NOW as i128 + MAX_AHEAD_MS as i128 + 1), event()).check("acme", NOW).unwrap_err();
        assert_eq!((e.status.as_u16(), e.field.as_deref()), (422, Some("sendAt")));
        for bad in ["tomorrow", "2027-03-01", "2027-03-01T09:00:00"] {
            let e = body(bad, event()).check("acme", NOW).unwrap_err();
            assert_eq!((e.status.as_u16(), e.field.as_deref()), (400, Some("sendAt")), "{bad}");
        }
    }

    #[test]
    fn the_event_is_checked_as_a_send_and_errors_name_its_fields() {
        let mut e = event();
        e["recipient"]["tenantId"] = json!("globex");
        let err = body(&at(NOW as i128), e).check("acme", NOW).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("event.recipient.tenantId"), "{}", err.message);
        assert!(err.message.starts_with("event.recipient.tenantId: must equal"), "{}", err.message);
        let mut e = event();
        e["payload"]["colour"] = json!("red");
        let err = body(&at(NOW as i128), e).check("acme", NOW).unwrap_err();
        assert!(err.message.starts_with("event.payload"), "{}", err.message);
        assert_eq!(parse_state("state", "SENT").unwrap(), State::Sent);
        assert_eq!(parse_state("state", "sent").unwrap_err().field.as_deref(), Some("state"));
    }
}
