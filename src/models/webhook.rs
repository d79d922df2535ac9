//! Webhooks (spec 002 "Webhook") and domain events.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_actors::filter::Expr;
use herald_storage::webhooks::Webhook;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// Body of create and update.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookBody {
    pub filter: String,
    pub callback_url: String,
    pub auth_type: Option<String>,
    pub auth_credentials: Option<Credentials>,
    pub active: Option<bool>,
}

impl WebhookBody {
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

    pub fn auth_type(&self) -> &str {
        self.auth_type.as_deref().unwrap_or("NONE")
    }
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsView {
    pub username: String,
    pub password: String,
}

/// The read form; the signing secret appears only in the create answer.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    pub id: String,
    pub tenant_id: String,
    pub filter: String,
    pub callback_url: String,
    pub auth_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_credentials: Option<CredentialsView>,
    pub active: bool,
    pub created_at: String,
    pub modified_at: String,
    pub created_by: String,
    pub modified_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

pub fn rfc3339(ms: u64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

impl WebhookView {
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

    pub const FIELDS: [&'static str; 9] =
        ["id", "filter", "callbackUrl", "authType", "active", "createdAt", "modifiedAt", "createdBy", "modifiedBy"];
}

/// `POST /v1/tenants/{t}/events`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub event: String,
    #[serde(default)]
    pub data: Value,
}

impl DomainEvent {
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
