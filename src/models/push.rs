//! The send body (spec 000 "PushNotificationEvent") and its answer.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_actors::providers::{Notification, Priority};
use herald_actors::send::Recipient as Target;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Chat,
    Payment,
    Tms,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Chat => "chat",
            Category::Payment => "payment",
            Category::Tms => "tms",
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushNotificationEvent {
    pub category: Category,
    pub recipient: Recipient,
    pub payload: Payload,
    pub sender: Option<Sender>,
    #[serde(default)]
    pub silent: bool,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Recipient {
    pub tenant_id: Option<String>,
    pub user_id: Option<String>,
    pub ast_client_id: Option<String>,
    pub topic: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Payload {
    pub message: Message,
    pub custom_data: Option<Map<String, Value>>,
}

/// A string or an array of strings (spec: `*LocArgs`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum LocArgs {
    One(String),
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

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum MessagePriority {
    High,
    Normal,
    Low,
}

/// Additional properties are allowed by the spec and ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub title: Option<String>,
    pub title_loc_key: Option<String>,
    pub title_loc_args: Option<LocArgs>,
    pub body: Option<String>,
    pub body_loc_key: Option<String>,
    pub body_loc_args: Option<LocArgs>,
    pub sound: Option<String>,
    pub icon: Option<String>,
    pub collapse_key: Option<String>,
    pub time_to_live: Option<i64>,
    pub priority: Option<MessagePriority>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Sender {
    pub tenant_id: String,
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
        let target = match (&r.user_id, &r.ast_client_id, &r.topic) {
            (Some(u), None, None) => Target::User { user: u.clone() },
            (Some(u), Some(c), None) => Target::Client { user: u.clone(), client: c.clone() },
            (None, None, Some(t)) => Target::Topic { topic: t.clone() },
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
    pub message: String,
    pub code: u16,
    pub subsystem: u16,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ResultValue {
    Text(String),
    Error(ResultError),
}

#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationResult {
    pub result: ResultValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ast_client_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationResponse {
    pub tenant_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ast_client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub notification_id: String,
    pub is_successful: bool,
    pub results: Vec<NotificationResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ResponseMetadata>,
}

/// What a send answer says of its app: how many of its clients a broadcast
/// targets, or which provider a client's notification went through.
#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseMetadata {
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
    pub sent: u64,
    pub invalid: u64,
    pub failed: u64,
}

/// Counts of one app, with how many of its clients were targeted.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct AppCounts {
    pub targeted: u64,
    pub sent: u64,
    pub invalid: u64,
    pub failed: u64,
}

/// The totals of a report.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ReportCounts {
    pub targeted: u64,
    pub sent: u64,
    pub invalid: u64,
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

/// `RUNNING`, `COMPLETED` or `FAILED` (what `library::push` writes of a report).
fn report_state_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&["RUNNING", "COMPLETED", "FAILED"])
}

/// What became of one client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientDelivery {
    pub ast_client_id: String,
    pub app_name: String,
    pub provider: String,
    /// `SENT`, `INVALID` or `FAILED`.
    #[schema(schema_with = client_state_schema)]
    pub state: String,
    /// The provider's status (or Herald's, when it did not get that far).
    pub code: u16,
    pub message: Option<String>,
}

/// The page of a report's clients.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    pub page: usize,
    pub page_size: usize,
}

/// `GET /v1/tenants/{t}/push_notification/{notificationId}`: a notification's delivery report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryReport {
    pub notification_id: String,
    pub tenant_id: String,
    /// `client`, `user` or `topic`.
    #[schema(schema_with = report_kind_schema)]
    pub kind: String,
    pub recipient: String,
    /// `RUNNING`, `COMPLETED` or `FAILED`.
    #[schema(schema_with = report_state_schema)]
    pub state: String,
    /// Why a broadcast was given up.
    pub failure: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub completed_at: Option<u64>,
    pub counts: ReportCounts,
    pub by_provider: std::collections::BTreeMap<String, DeliveryCounts>,
    pub by_app: std::collections::BTreeMap<String, AppCounts>,
    pub clients: Vec<ClientDelivery>,
    pub page: PageInfo,
}
