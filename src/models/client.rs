//! Device clients: registration and user links.

use super::validate;
use crate::error::ApiResult;
use serde::{Deserialize, Serialize};

/// `POST /v1/tenants/{t}/clients`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegisterClient {
    pub app_name: String,
    pub platform: String,
    pub app_version: Option<String>,
    pub sdk_version: Option<String>,
    pub device_name: Option<String>,
    pub client_device: Option<String>,
    pub client_os_version: Option<String>,
    #[serde(default)]
    pub locales: Vec<String>,
}

impl RegisterClient {
    pub fn validate(&self) -> ApiResult<()> {
        validate::id("appName", &self.app_name, 1, 32)?;
        validate::length("platform", &self.platform, 1, 100)?;
        for (field, value) in [
            ("appVersion", &self.app_version),
            ("sdkVersion", &self.sdk_version),
            ("deviceName", &self.device_name),
            ("clientDevice", &self.client_device),
            ("clientOsVersion", &self.client_os_version),
        ] {
            validate::max_length(field, value, 255)?;
        }
        if self.locales.len() > 50 {
            return Err(crate::error::ApiError::field("locales", "at most 50 items"));
        }
        for (i, l) in self.locales.iter().enumerate() {
            validate::length(&format!("locales[{i}]"), l, 1, 35)?;
        }
        Ok(())
    }
}

/// The answer of a registration: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub ast_client_id: String,
    pub client_secret: String,
}

/// `PUT /v1/tenants/{t}/users/{userId}/clients/{astClientId}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    #[serde(rename = "mLoA")]
    pub mloa: Option<String>,
}

/// A client link as read by a user's client list (spec 002 "Client link").
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkView {
    pub user_id: String,
    pub ast_client_id: String,
    pub tenant_id: String,
    #[serde(rename = "mLoA")]
    pub mloa: String,
    pub linked_on: u64,
    #[serde(rename = "mLoAUpdatedOn")]
    pub mloa_updated_on: u64,
}
