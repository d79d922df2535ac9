//! Webhooks (spec 002 "Webhook") and domain events.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_actors::filter::Expr;
use herald_storage::webhooks::{OutboxEntry, Webhook};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The basic-auth credentials deliveries carry when `authType` is `BASIC`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// 1 to 255 characters, without `:`.
    pub username: String,
    /// 1 to 1024 characters; stored sealed and read back as `***`.
    pub password: String,
}

/// Values of `authType` (absent: `NONE`).
pub const AUTH_TYPES: [&str; 2] = ["NONE", "BASIC"];

fn auth_type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::nullable_strings(&AUTH_TYPES)
}

fn stored_auth_type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&AUTH_TYPES)
}

fn domain_type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&["domain"])
}

/// Body of create and update.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookBody {
    /// The events to deliver (3 to 4000 characters): conditions such as `event^=CLIENT_`
    /// joined with `and`, `or`, `not` and brackets; 400 when it does not parse.
    pub filter: String,
    /// Where events are POSTed: an http or https URL with a host (at most 4000 characters).
    pub callback_url: String,
    /// `NONE` (when absent) or `BASIC`: deliveries then carry `authCredentials` as basic auth.
    #[schema(schema_with = auth_type_schema)]
    pub auth_type: Option<String>,
    /// Required when `authType` is `BASIC`, ignored otherwise.
    pub auth_credentials: Option<Credentials>,
    /// Whether events are delivered; absent means true, on create and on update alike.
    pub active: Option<bool>,
}

impl WebhookBody {
    /// Checks the filter (it must parse), the URL and the credentials; 400 naming the field.
    pub fn validate(&self) -> ApiResult<()> {
        validate::length("filter", &self.filter, 3, 4000)?;
        Expr::parse(&self.filter).map_err(|e| ApiError::field("filter", e))?;
        validate::length("callbackUrl", &self.callback_url, 1, 4000)?;
        let url = url::Url::parse(&self.callback_url)
            .map_err(|e| ApiError::field("callbackUrl", format!("is not a URI ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(ApiError::field("callbackUrl", "must be an http or https URL with a host"));
        }
        match (self.auth_type(), &self.auth_credentials) {
            ("NONE", _) => Ok(()),
            ("BASIC", Some(c)) => {
                validate::length("authCredentials.username", &c.username, 1, 255)?;
                if c.username.contains(':') {
                    return Err(ApiError::field("authCredentials.username", "must not contain ':'"));
                }
                validate::length("authCredentials.password", &c.password, 1, 1024)
            }
            ("BASIC", None) => Err(ApiError::field("authCredentials", "is required when authType is BASIC")),
            _ => Err(ApiError::field("authType", "must be NONE or BASIC")),
        }
    }

    /// `authType`, `NONE` when absent.
    pub fn auth_type(&self) -> &str {
        self.auth_type.as_deref().unwrap_or("NONE")
    }
}

/// A webhook's basic-auth credentials as read.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsView {
    /// The username deliveries send.
    pub username: String,
    /// Always `***`: the password is never read back.
    pub password: String,
}

/// The read form; the signing secret appears only in the create answer.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    /// The webhook's id (a ULID).
    pub id: String,
    /// The tenant whose events it receives.
    pub tenant_id: String,
    /// The filter events are matched against.
    pub filter: String,
    /// Where events are POSTed.
    pub callback_url: String,
    /// `BASIC` when deliveries carry basic auth, else `NONE`.
    #[schema(schema_with = stored_auth_type_schema)]
    pub auth_type: String,
    /// The basic-auth username, the password masked; absent without basic auth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_credentials: Option<CredentialsView>,
    /// Whether events are delivered: false when switched off, or disabled after a 410 (`disabledReason`).
    pub active: bool,
    /// When the webhook was created (RFC 3339).
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub created_at: String,
    /// When it was last changed (RFC 3339).
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub modified_at: String,
    /// The username of the administrator that created it.
    pub created_by: String,
    /// The username of the administrator that last changed it.
    pub modified_by: String,
    /// Why Herald switched it off (the receiver answered 410 Gone); cleared when an update re-activates it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// The Standard Webhooks signing secret (`whsec_...`) of `webhook-signature`; only in the create answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// Milliseconds since the Unix epoch as an RFC 3339 UTC timestamp (empty when out of range).
pub fn rfc3339(ms: u64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms).saturating_mul(1_000_000))
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

impl WebhookView {
    /// The read form of a stored webhook of `tenant`, without its secret.
    pub fn of(tenant: &str, w: &Webhook) -> WebhookView {
        WebhookView {
            id: w.id.clone(),
            tenant_id: tenant.to_string(),
            filter: w.filter.clone(),
            callback_url: w.callback_url.clone(),
            auth_type: w.auth_type.clone(),
            auth_credentials: w
                .auth_username
                .as_ref()
                .map(|u| CredentialsView { username: u.clone(), password: "***".into() }),
            active: w.active,
            created_at: rfc3339(w.created_ms),
            modified_at: rfc3339(w.modified_ms),
            created_by: w.created_by.clone(),
            modified_by: w.modified_by.clone(),
            disabled_reason: w.disabled_reason.clone(),
            secret: None,
        }
    }

    /// The value of a list-filter field.
    pub fn field(&self, name: &str) -> Option<String> {
        Some(match name {
            "id" => self.id.clone(),
            "filter" => self.filter.clone(),
            "callbackUrl" => self.callback_url.clone(),
            "authType" => self.auth_type.clone(),
            "active" => self.active.to_string(),
            "createdAt" => self.created_at.clone(),
            "modifiedAt" => self.modified_at.clone(),
            "createdBy" => self.created_by.clone(),
            "modifiedBy" => self.modified_by.clone(),
            _ => return None,
        })
    }

    /// The fields the webhook list can be filtered on (`filter=`).
    pub const FIELDS: [&'static str; 9] =
        ["id", "filter", "callbackUrl", "authType", "active", "createdAt", "modifiedAt", "createdBy", "modifiedBy"];
}

/// One delivery attempt of an event to a webhook.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    /// The event delivered: the `webhook-id` header of the attempt.
    pub event_id: String,
    /// 1 for the first try.
    pub attempt: u32,
    /// RFC 3339.
    #[schema(schema_with = crate::openapi::schema::date_time)]
    pub at: String,
    /// The receiver's HTTP status, 0 when none answered.
    pub status_code: u16,
    /// How long the receiver took to answer, in milliseconds.
    pub duration_ms: u64,
    /// The start of the answer, or the error.
    pub response: String,
}

impl AttemptView {
    /// The read form of a logged attempt.
    pub fn of(a: herald_storage::webhooks::Attempt) -> AttemptView {
        AttemptView {
            event_id: a.event_id,
            attempt: a.attempt,
            at: rfc3339(a.at_ms),
            status_code: a.status,
            duration_ms: a.duration_ms,
            response: a.response,
        }
    }
}

/// How many failed events a replay put back into the outbox.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Replayed {
    /// Failed events put back into the outbox, due at once.
    pub requeued: usize,
}

/// A published event: its id, and how many webhooks will receive it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Published {
    /// The event's id (a ULID): the `webhook-id` its deliveries carry.
    pub id: String,
    /// How many active webhooks matched it and queued it for delivery.
    pub webhooks: usize,
}

/// An update of a webhook's configuration, its secrets sealed beforehand.
#[derive(Clone, Debug)]
pub struct WebhookUpdate {
    /// The new filter, already parsed once.
    pub filter: String,
    /// The new callback URL.
    pub callback_url: String,
    /// `NONE` or `BASIC`.
    pub auth_type: String,
    /// The basic-auth username; `None` unless `auth_type` is `BASIC`.
    pub auth_username: Option<String>,
    /// The basic-auth password, sealed; `None` unless `auth_type` is `BASIC`.
    pub auth_password: Option<herald_storage::Secret>,
    /// Whether the webhook delivers; true re-activates one a 410 disabled.
    pub active: bool,
    /// When the update is made, ms since the epoch.
    pub modified_ms: u64,
    /// The username of the administrator making it.
    pub modified_by: String,
}

/// Applies an update to the webhook as stored: an update that does not
/// re-activate the webhook keeps the reason a 410 disabled it with.
pub fn update(w: &mut Webhook, u: &WebhookUpdate) {
    w.filter = u.filter.clone();
    w.callback_url = u.callback_url.clone();
    w.auth_type = u.auth_type.clone();
    w.auth_username = u.auth_username.clone();
    w.auth_password = u.auth_password.clone();
    if u.active {
        w.disabled_reason = None;
    }
    w.active = u.active;
    w.modified_ms = u.modified_ms;
    w.modified_by = u.modified_by.clone();
}

/// A failed event replayed: only one created at or after `since_ms` goes
/// back to the outbox, with its attempts reset and due at `now`.
pub fn requeue(entry: &OutboxEntry, since_ms: u64, now: u64) -> Option<OutboxEntry> {
    if entry.created_ms < since_ms {
        return None;
    }
    Some(OutboxEntry { attempts: 0, next_attempt_ms: now, ..entry.clone() })
}

/// `POST /v1/tenants/{t}/events`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainEvent {
    /// Only `domain` events can be published.
    #[serde(rename = "type")]
    #[schema(schema_with = domain_type_schema)]
    pub kind: String,
    /// UPPER_SNAKE_CASE.
    #[schema(min_length = 1, max_length = 128, pattern = "^[A-Z0-9_]+$")]
    pub event: String,
    /// The event's payload: any JSON object, or `null`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub data: Value,
}

impl DomainEvent {
    /// Checks the type, the event name and that `data` is an object or `null`; 400 naming the field.
    pub fn validate(&self) -> ApiResult<()> {
        if self.kind != "domain" {
            return Err(ApiError::field("type", "only domain events can be published"));
        }
        validate::length("event", &self.event, 1, 128)?;
        if !self.event.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            return Err(ApiError::field("event", "must be UPPER_SNAKE_CASE"));
        }
        if !(self.data.is_object() || self.data.is_null()) {
            return Err(ApiError::field("data", "must be an object"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook(active: bool, reason: Option<&str>) -> Webhook {
        let master = herald_storage::MasterKey::from_bytes(&[3; 32]).unwrap();
        Webhook {
            id: "w".into(),
            filter: "event == 'A'".into(),
            callback_url: "http://a.example/hook".into(),
            auth_type: "NONE".into(),
            auth_username: None,
            auth_password: None,
            active,
            secret: master.seal(b"whsec_x", "test").unwrap(),
            created_ms: 1,
            modified_ms: 1,
            created_by: "admin".into(),
            modified_by: "admin".into(),
            disabled_reason: reason.map(str::to_string),
        }
    }

    fn change(active: bool) -> WebhookUpdate {
        WebhookUpdate {
            filter: "event == 'B'".into(),
            callback_url: "http://b.example/hook".into(),
            auth_type: "NONE".into(),
            auth_username: None,
            auth_password: None,
            active,
            modified_ms: 5,
            modified_by: "ops".into(),
        }
    }

    #[test]
    fn an_update_keeps_a_410s_reason_unless_it_reactivates() {
        let mut w = webhook(false, Some("410 Gone"));
        update(&mut w, &change(false));
        assert_eq!((w.active, w.disabled_reason.as_deref()), (false, Some("410 Gone")));
        assert_eq!((w.callback_url.as_str(), w.modified_ms, w.created_ms), ("http://b.example/hook", 5, 1));
        update(&mut w, &change(true));
        assert_eq!((w.active, w.disabled_reason), (true, None));
    }

    #[test]
    fn a_replay_requeues_events_since_its_date_due_now() {
        let e =
            OutboxEntry { event_id: "e".into(), body: "{}".into(), created_ms: 100, attempts: 7, next_attempt_ms: 0 };
        assert_eq!(requeue(&e, 101, 500), None);
        let again = requeue(&e, 100, 500).unwrap();
        assert_eq!((again.attempts, again.next_attempt_ms, again.created_ms), (0, 500, 100));
    }
}
