//! The send body (spec 000 "PushNotificationEvent") and its answer.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_actors::providers::{Notification, Priority};
use herald_actors::send::Recipient as Target;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a notification is about: it goes only to clients whose app lists this category in its push
/// configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// `chat`: a message of a conversation.
    Chat,
    /// `payment`: a payment or transaction notice.
    Payment,
    /// `tms`: a TMS action (its nonces are `TMS_NONCE`).
    Tms,
}

impl Category {
    /// The wire spelling (`chat`, `payment`, `tms`), as apps list it in their push configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Chat => "chat",
            Category::Payment => "payment",
            Category::Tms => "tms",
        }
    }
}

/// Body of `POST /v1/tenants/{tenantId}/push_notification/send` (spec 000 "PushNotificationEvent");
/// unknown fields are refused (400).
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushNotificationEvent {
    /// What the notification is about; a client whose app does not list it gets an error result
    /// instead.
    pub category: Category,
    /// Who receives it: one client, every client of a user, or every client of the tenant (topic).
    pub recipient: Recipient,
    /// What the device shows and the data the app receives.
    pub payload: Payload,
    /// Who sent it, when someone did; it travels to the app as data.
    pub sender: Option<Sender>,
    /// `true`: a background push (no alert; a data-only Android message). Default `false`.
    #[serde(default)]
    pub silent: bool,
}

/// Target of a send: exactly one of {tenantId, userId}, {tenantId, userId, astClientId} or
/// {tenantId, topic}; anything else is refused (400).
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Recipient {
    /// Required; must equal the tenant of the path.
    pub tenant_id: Option<String>,
    /// The user (1 to 255 characters) whose clients receive it; 404 when there is no such user.
    pub user_id: Option<String>,
    /// With `userId`: only this client of the user (a ULID); 404 when it does not exist.
    pub ast_client_id: Option<String>,
    /// A broadcast (1 to 255 characters) to every client of the tenant with a valid token: answered
    /// at once, followed in the delivery report.
    pub topic: Option<String>,
}

/// The content of a notification (spec 000 "Payload"); unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Payload {
    /// The visible content.
    pub message: Message,
    /// Any JSON object, passed to the app unchanged (FCM receives its values as strings).
    pub custom_data: Option<Map<String, Value>>,
}

/// A string or an array of strings (spec: `*LocArgs`).
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum LocArgs {
    /// One argument, taken as a one-element array.
    One(String),
    /// The arguments, in order.
    Many(Vec<String>),
}

impl LocArgs {
    fn into_vec(self) -> Vec<String> {
        match self {
            LocArgs::One(s) => vec![s],
            LocArgs::Many(v) => v,
        }
    }
}

/// How urgently the provider delivers; absent means `NORMAL`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum MessagePriority {
    /// `HIGH`: at once (apns-priority 10, Android high).
    High,
    /// `NORMAL`: apns-priority 5, Android normal.
    Normal,
    /// `LOW`: apns-priority 1, Android normal.
    Low,
}

/// Additional properties are allowed by the spec and ignored.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Title shown on the device.
    pub title: Option<String>,
    /// Key of the title in the app's localized strings.
    pub title_loc_key: Option<String>,
    /// Arguments of the localized title: one string or an array of strings.
    pub title_loc_args: Option<LocArgs>,
    /// Text shown on the device.
    pub body: Option<String>,
    /// Key of the body in the app's localized strings.
    pub body_loc_key: Option<String>,
    /// Arguments of the localized body: one string or an array of strings.
    pub body_loc_args: Option<LocArgs>,
    /// Sound the device plays; passed to the provider as given.
    pub sound: Option<String>,
    /// Icon of the notification; passed to the provider as given.
    pub icon: Option<String>,
    /// Notifications with the same key replace one another on a device that has not received them
    /// yet (apns-collapse-id, Android collapse_key).
    pub collapse_key: Option<String>,
    /// Seconds the provider keeps an undelivered notification, not negative; capped at the
    /// provider's maximum (30 days or less).
    pub time_to_live: Option<i64>,
    /// Delivery urgency; absent: `NORMAL`.
    pub priority: Option<MessagePriority>,
}

/// Who sent a notification (spec 000 "Sender"); unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Sender {
    /// Tenant of the sender, 1 to 255 characters (not checked against the path).
    pub tenant_id: String,
    /// User who sent it, 1 to 255 characters.
    pub user_id: String,
}

impl PushNotificationEvent {
    /// Checks the recipient rules of API.md and the field limits; answers the
    /// target and the provider-neutral notification.
    pub fn into_parts(self, path_tenant: &str, id: String) -> ApiResult<(Target, Notification)> {
        let r = &self.recipient;
        match &r.tenant_id {
            None => return Err(ApiError::field("recipient.tenantId", "is required")),
            Some(t) if t != path_tenant => {
                return Err(ApiError::field("recipient.tenantId", "must equal the tenant of the path"))
            }
            _ => {}
        }
        let nonempty = |field: &str, v: &Option<String>| -> ApiResult<()> {
            match v {
                Some(s) => validate::id(field, s, 1, 255),
                None => Ok(()),
            }
        };
        nonempty("recipient.userId", &r.user_id)?;
        nonempty("recipient.topic", &r.topic)?;
        if let Some(c) = &r.ast_client_id {
            validate::ulid("recipient.astClientId", c)?;
        }
        let Recipient { user_id, ast_client_id, topic, .. } = self.recipient;
        let target = match (user_id, ast_client_id, topic) {
            (Some(user), None, None) => Target::User { user },
            (Some(user), Some(client), None) => Target::Client { user, client },
            (None, None, Some(topic)) => Target::Topic { topic },
            _ => {
                return Err(ApiError::field(
                    "recipient",
                    "must be exactly one of {tenantId, userId}, {tenantId, userId, astClientId}, {tenantId, topic}",
                ))
            }
        };
        if let Some(s) = &self.sender {
            validate::length("sender.tenantId", &s.tenant_id, 1, 255)?;
            validate::length("sender.userId", &s.user_id, 1, 255)?;
        }
        let m = self.payload.message;
        if let Some(ttl) = m.time_to_live {
            if ttl < 0 {
                return Err(ApiError::field("payload.message.timeToLive", "must not be negative"));
            }
        }
        let notification = Notification {
            id,
            category: self.category.as_str().to_string(),
            title: m.title,
            title_loc_key: m.title_loc_key,
            title_loc_args: m.title_loc_args.map(LocArgs::into_vec).unwrap_or_default(),
            body: m.body,
            body_loc_key: m.body_loc_key,
            body_loc_args: m.body_loc_args.map(LocArgs::into_vec).unwrap_or_default(),
            sound: m.sound,
            icon: m.icon,
            collapse_key: m.collapse_key,
            time_to_live: m.time_to_live,
            priority: match m.priority {
                Some(MessagePriority::High) => Priority::High,
                Some(MessagePriority::Low) => Priority::Low,
                Some(MessagePriority::Normal) | None => Priority::Normal,
            },
            silent: self.silent,
            custom_data: self.payload.custom_data.unwrap_or_default(),
            sender: self.sender.map(|s| (s.tenant_id, s.user_id)),
        };
        Ok((target, notification))
    }
}

/// Spec 000 "Error" inside a result.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ResultError {
    /// What went wrong, in words.
    pub message: String,
    /// The HTTP status (the provider's, or Herald's when it did not get that far); outside 100 to
    /// 599 a custom error code.
    pub code: u16,
    /// Part of Herald that answers: 516 for push.
    pub subsystem: u16,
}

/// The outcome of one delivery: the text `SENT`, or an Error saying why not.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ResultValue {
    /// `SENT`: the provider accepted the notification.
    Text(String),
    /// Why the notification was not delivered.
    Error(ResultError),
}

/// One outcome inside an entry of the send answer.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationResult {
    /// `SENT`, or an Error saying why not.
    pub result: ResultValue,
    /// The client it concerns (a ULID); absent in a broadcast's entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ast_client_id: Option<String>,
}

/// One entry of the send answer (spec 000 "NotificationResponse"): one per client for a client or
/// user recipient, one per app of the tenant for a topic.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationResponse {
    /// Tenant the notification was sent in.
    pub tenant_id: String,
    /// The recipient user; absent for a topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The client of this entry; absent for a topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ast_client_id: Option<String>,
    /// The broadcast's topic; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// ULID of the notification, the same in every entry; the key of its delivery report.
    pub notification_id: String,
    /// Client: the provider accepted it. Topic: the app's clients were queued (`false`: refused,
    /// reason in `results`).
    pub is_successful: bool,
    /// Client: its one outcome. Topic: empty, or why the app was refused.
    pub results: Vec<NotificationResult>,
    /// The app of this entry, with its provider (client) or the clients queued (topic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ResponseMetadata>,
}

/// What a send answer says of its app: how many of its clients a broadcast
/// targets, or which provider a client's notification went through.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseMetadata {
    /// Name of the app this entry concerns.
    pub app_name: String,
    /// A broadcast's: the app's clients it targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targeted: Option<u64>,
    /// A client's: the push provider of its app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// Counts of one app, one provider or the whole notification.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct DeliveryCounts {
    /// Clients whose provider accepted the notification.
    pub sent: u64,
    /// Clients whose token the provider declared dead; the token is marked invalid and skipped from
    /// then on.
    pub invalid: u64,
    /// Clients not reached for another reason (provider error, timeout, missing credentials).
    pub failed: u64,
}

/// Counts of one app, with how many of its clients were targeted.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct AppCounts {
    /// Clients of the app the notification was queued for.
    pub targeted: u64,
    /// Clients whose provider accepted the notification.
    pub sent: u64,
    /// Clients whose token the provider declared dead (now marked invalid).
    pub invalid: u64,
    /// Clients not reached for another reason.
    pub failed: u64,
}

/// The totals of a report.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ReportCounts {
    /// Clients the notification was queued for, over every app.
    pub targeted: u64,
    /// Clients whose provider accepted the notification.
    pub sent: u64,
    /// Clients whose token the provider declared dead (now marked invalid).
    pub invalid: u64,
    /// Clients not reached for another reason (provider error, timeout, missing credentials).
    pub failed: u64,
    /// Targeted and not settled yet.
    pub pending: u64,
    /// Broadcast clients sent again after a crash: at least the duplicates.
    pub resent: u64,
}

/// `SENT`, `INVALID` or `FAILED` (what `library::push` writes of a client's outcome).
fn client_state_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&["SENT", "INVALID", "FAILED"])
}

/// `client`, `user` or `topic` (the recipient kinds of `ops::push::send`).
fn report_kind_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&["client", "user", "topic"])
}

/// What `library::push` writes of a report's state.
fn report_state_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&["RUNNING", "COMPLETED", "FAILED", "CANCELLING", "CANCELLED"])
}

/// A report's state from its stored failure, cancel and completion. Only a
/// completed notification is in a final state: a broadcast with a given-up
/// partition stays `RUNNING` (its `failure` already set) while its other
/// partitions still send, so a caller polling for the end sees their counts.
pub fn report_state(failed: bool, cancelled: bool, completed: bool) -> &'static str {
    match (completed, cancelled, failed) {
        (false, true, _) => "CANCELLING",
        (false, false, _) => "RUNNING",
        (true, _, true) => "FAILED",
        (true, true, false) => "CANCELLED",
        (true, false, false) => "COMPLETED",
    }
}

/// How far a broadcast got.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Clients targeted when it was queued.
    pub targeted: u64,
    /// Clients whose provider accepted the notification.
    pub sent: u64,
    /// Clients settled, whatever their outcome.
    pub done: u64,
    /// `done` over `targeted`, 0 to 100 (100 when nothing is targeted).
    pub percent: f64,
    /// Notifications a second since it was queued.
    pub rate_per_second: f64,
    /// Seconds left at that rate, while it runs and once it has a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<u64>,
}

impl Progress {
    /// The progress of a broadcast's `report`, `done` of `targeted` settled, at `now` (ms).
    pub fn of(targeted: u64, done: u64, report: &herald_storage::deliveries::Report, now: u64) -> Progress {
        let end = report.completed_ms.unwrap_or(now);
        let secs = end.saturating_sub(report.created_ms) as f64 / 1000.0;
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let left = targeted.saturating_sub(done);
        let running = report.completed_ms.is_none() && report.cancelled_ms.is_none();
        let eta = (running && rate > 0.0).then(|| (left as f64 / rate).ceil() as u64);
        let percent = if targeted == 0 { 100.0 } else { (done as f64 * 100.0 / targeted as f64).min(100.0) };
        Progress { targeted, sent: report.total().sent, done, percent, rate_per_second: rate, eta_seconds: eta }
    }
}

/// What became of one client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientDelivery {
    /// The client (a ULID).
    pub ast_client_id: String,
    /// App of the client, whose push credentials were used.
    pub app_name: String,
    /// Push provider that carried it: `apns`, `fcm` or `hms`; empty when none was reached.
    pub provider: String,
    /// `SENT`, `INVALID` or `FAILED`.
    #[schema(schema_with = client_state_schema)]
    pub state: String,
    /// The provider's status (or Herald's, when it did not get that far).
    pub code: u16,
    /// The provider's (or Herald's) reason when not sent; absent when sent.
    pub message: Option<String>,
}

/// The page of a report's clients.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    /// The page shown, from 1 (query `page`).
    pub page: usize,
    /// Clients per page, 1 to 1000, default 20 (query `page_size`).
    pub page_size: usize,
}

/// `GET /v1/tenants/{t}/push_notification/{notificationId}`: a notification's delivery report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryReport {
    /// The ULID the send answered.
    pub notification_id: String,
    /// Tenant of the notification.
    pub tenant_id: String,
    /// `client`, `user` or `topic`.
    #[schema(schema_with = report_kind_schema)]
    pub kind: String,
    /// The client id, user id or topic it was sent to.
    pub recipient: String,
    /// `RUNNING`, `COMPLETED` or `FAILED` (a broadcast with a given-up
    /// partition is `RUNNING` until its other partitions end); a cancelled
    /// broadcast `CANCELLING` until its sends in flight are counted, then `CANCELLED`.
    #[schema(schema_with = report_state_schema)]
    pub state: String,
    /// When a broadcast was cancelled (ms since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<u64>,
    /// A broadcast's progress: what is done of what it targets, and while it runs, when it should end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// Why a broadcast was given up.
    pub failure: Option<String>,
    /// The scheduled send this notification was sent for (ext; see the schedule routes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When the last client's outcome was counted (ms since the Unix epoch); absent while a
    /// broadcast runs.
    pub completed_at: Option<u64>,
    /// Totals over every targeted client.
    pub counts: ReportCounts,
    /// Counts per push provider (`apns`, `fcm`, `hms`).
    pub by_provider: std::collections::BTreeMap<String, DeliveryCounts>,
    /// Counts per app name, with the clients targeted in each.
    pub by_app: std::collections::BTreeMap<String, AppCounts>,
    /// The outcomes of the clients on this page.
    pub clients: Vec<ClientDelivery>,
    /// Which page of the clients' outcomes `clients` holds.
    pub page: PageInfo,
}

/// Options of a send besides its event (ext query parameters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// `?maxPerSecond=`: of a topic send, the broadcast's notifications per
    /// second at most, besides its tenant's bulk quota.
    pub max_per_second: Option<u32>,
}

/// The highest `maxPerSecond` a broadcast may be given.
pub const MAX_PER_SECOND: u32 = 1_000_000;

impl SendOptions {
    /// Reads `maxPerSecond` (1 to [`MAX_PER_SECOND`]); 400 naming it otherwise.
    pub fn parse_max_per_second(value: Option<&str>) -> ApiResult<SendOptions> {
        let Some(v) = value else { return Ok(SendOptions::default()) };
        match v.parse::<u32>() {
            Ok(n) if (1..=MAX_PER_SECOND).contains(&n) => Ok(SendOptions { max_per_second: Some(n) }),
            _ => Err(ApiError::field("maxPerSecond", format!("must be an integer from 1 to {MAX_PER_SECOND}"))),
        }
    }
}

/// Events in one batch at most.
pub const BATCH_MAX: usize = 500;

/// Body of `POST /v1/tenants/{tenantId}/push_notification/send-batch` (ext):
/// up to [`BATCH_MAX`] spec-000 events. Each is read on its own, so one bad
/// event gets its own error entry rather than refusing the batch.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendBatch {
    /// The events, 1 to 500, each a `PushNotificationEvent`.
    #[schema(value_type = Vec<PushNotificationEvent>)]
    pub events: Vec<Value>,
}

impl SendBatch {
    /// Refuses an empty batch and one over [`BATCH_MAX`] events.
    pub fn validate(&self) -> ApiResult<()> {
        validate_len(self.events.len())
    }

    /// Each event decoded on its own (see [`batch_event`]).
    pub(crate) fn decode(self) -> Vec<ApiResult<PushNotificationEvent>> {
        self.events.into_iter().enumerate().map(|(i, e)| batch_event(i, e)).collect()
    }
}

fn validate_len(n: usize) -> ApiResult<()> {
    match n {
        0 => Err(ApiError::field("events", "at least one event is required")),
        n if n > BATCH_MAX => Err(ApiError::field("events", format!("at most {BATCH_MAX} events, not {n}"))),
        _ => Ok(()),
    }
}

/// [`SendBatch`] as the HTTP route reads it: each event kept as its JSON
/// text and decoded straight into a [`PushNotificationEvent`], without the
/// intermediate `Value` tree (most of a batch's decoding time).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSendBatch {
    events: Vec<Box<serde_json::value::RawValue>>,
}

impl RawSendBatch {
    /// Refuses an empty batch and one over [`BATCH_MAX`] events.
    pub(crate) fn validate(&self) -> ApiResult<()> {
        validate_len(self.events.len())
    }

    /// The batch with its events as values: what an idempotency key's
    /// fingerprint is taken of, as for [`SendBatch`].
    pub(crate) fn to_values(&self) -> ApiResult<SendBatch> {
        let events = self.events.iter().map(|e| serde_json::from_str(e.get()));
        Ok(SendBatch { events: events.collect::<Result<_, _>>().map_err(|e| ApiError::bad_request(e.to_string()))? })
    }

    /// Each event decoded on its own (see [`batch_event`]).
    pub(crate) fn decode(&self) -> Vec<ApiResult<PushNotificationEvent>> {
        let decode = |i: usize, e: &serde_json::value::RawValue| {
            crate::http::decode_tracked(e.get().as_bytes()).map_err(|e| event_error(i, e))
        };
        self.events.iter().enumerate().map(|(i, e)| decode(i, e)).collect()
    }
}

/// What one event of a batch came to: what a single send of it answers
/// (its 202 body), or the error body it would have got.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BatchEntry {
    /// Accepted: the entries a single send answers.
    Sent(Vec<NotificationResponse>),
    /// Refused: `{ message, code, subsystem }` as a single send's error.
    Refused(crate::error::AdminErrorBody),
}

/// The answer of a batch: one entry per event, in the order of the events.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BatchAnswer {
    /// One entry per event, in order.
    pub results: Vec<BatchEntry>,
}

/// One event of a batch as its own body: a decoding error names the field
/// within `events[i]`.
pub fn batch_event(i: usize, event: Value) -> ApiResult<PushNotificationEvent> {
    serde_path_to_error::deserialize(event).map_err(|e| event_error(i, e))
}

fn event_error<E: std::fmt::Display>(i: usize, e: serde_path_to_error::Error<E>) -> ApiError {
    let path = e.path().to_string();
    let path = if path == "." { format!("events[{i}]") } else { format!("events[{i}].{path}") };
    ApiError::field(&path, e.into_inner())
}
