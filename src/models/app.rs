//! Apps and their push configuration (spec 002 "App and push configuration").

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_storage::apps::App;
use serde::{Deserialize, Serialize};

pub const CATEGORIES: [&str; 3] = ["chat", "payment", "tms"];

/// What a read shows in place of a stored secret; sent back on update it keeps
/// the stored value.
pub const MASK: &str = "***";

/// Body of save and update.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppBody {
    /// Optional; when given it must equal the path's app name.
    pub app_name: Option<String>,
    pub categories: Vec<String>,
    pub android_api_key: Option<String>,
    #[serde(rename = "fcmServiceAccountJSON")]
    pub fcm_service_account_json: Option<String>,
    pub ios_apns_certificate: Option<String>,
    pub ios_apns_private_key: Option<String>,
    pub ios_apns_team_id: Option<String>,
    pub ios_apns_key_id: Option<String>,
    pub ios_bundle_id: Option<String>,
    pub ios_is_development: Option<bool>,
    pub hpk_client_id: Option<String>,
    pub hpk_client_secret: Option<String>,
}

/// The fields of a Google service-account file Herald needs.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct ServiceAccount {
    pub client_email: String,
    pub private_key: String,
    pub project_id: String,
    #[serde(default)]
    pub private_key_id: Option<String>,
    #[serde(default)]
    pub token_uri: Option<String>,
}

/// Decodes base64 (standard or URL-safe) with an optional `data:...;base64,` prefix.
pub fn decode_base64_field(field: &str, value: &str) -> ApiResult<Vec<u8>> {
    herald_actors::credentials::decode_base64(value)
        .ok_or_else(|| ApiError::field(field, "must be base64 (an optional data-URL prefix is allowed)"))
}

impl ServiceAccount {
    pub fn from_base64(value: &str) -> ApiResult<ServiceAccount> {
        const F: &str = "fcmServiceAccountJSON";
        let bytes = decode_base64_field(F, value)?;
        let sa: ServiceAccount = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::field(
                F,
                format!("is not a service-account JSON with client_email, private_key and project_id ({e})"),
            )
        })?;
        for (name, v) in
            [("client_email", &sa.client_email), ("private_key", &sa.private_key), ("project_id", &sa.project_id)]
        {
            if v.trim().is_empty() {
                return Err(ApiError::field(F, format!("service account has an empty {name}")));
            }
        }
        Ok(sa)
    }
}

impl AppBody {
    /// Every rule of the spec; the error names the first offending field.
    pub fn validate(&self, app_name: &str) -> ApiResult<()> {
        validate::id("appName", app_name, 1, 32)?;
        if let Some(n) = &self.app_name {
            if n != app_name {
                return Err(ApiError::field("appName", "must equal the app name of the path"));
            }
        }
        self.validate_categories()?;
        for (field, value, max) in [
            ("androidApiKey", &self.android_api_key, 255),
            ("fcmServiceAccountJSON", &self.fcm_service_account_json, 15360),
            ("iosApnsCertificate", &self.ios_apns_certificate, 46080),
            ("iosApnsPrivateKey", &self.ios_apns_private_key, 10240),
            ("iosApnsTeamId", &self.ios_apns_team_id, 32),
            ("iosApnsKeyId", &self.ios_apns_key_id, 32),
            ("iosBundleId", &self.ios_bundle_id, 128),
            ("hpkClientId", &self.hpk_client_id, 64),
            ("hpkClientSecret", &self.hpk_client_secret, 256),
        ] {
            validate::max_length(field, value, max)?;
        }
        match (&self.hpk_client_id, &self.hpk_client_secret) {
            (Some(_), None) => return Err(ApiError::field("hpkClientSecret", "is required with hpkClientId")),
            (None, Some(_)) => return Err(ApiError::field("hpkClientId", "is required with hpkClientSecret")),
            _ => {}
        }
        if let Some(sa) = self.fcm_service_account_json.as_deref().filter(|v| *v != MASK) {
            ServiceAccount::from_base64(sa)?;
        }
        self.validate_apns()
    }

    fn validate_categories(&self) -> ApiResult<()> {
        if self.categories.is_empty() {
            return Err(ApiError::field("categories", "must not be empty"));
        }
        for (i, c) in self.categories.iter().enumerate() {
            if !CATEGORIES.contains(&c.as_str()) {
                return Err(ApiError::field(&format!("categories[{i}]"), "must be one of chat, payment, tms"));
            }
            if self.categories[..i].contains(c) {
                return Err(ApiError::field(&format!("categories[{i}]"), format!("duplicate category {c}")));
            }
        }
        Ok(())
    }

    fn any_apns(&self) -> bool {
        [
            &self.ios_apns_certificate,
            &self.ios_apns_private_key,
            &self.ios_apns_team_id,
            &self.ios_apns_key_id,
            &self.ios_bundle_id,
        ]
        .iter()
        .any(|f| f.is_some())
    }

    fn validate_apns(&self) -> ApiResult<()> {
        if !self.any_apns() {
            return match self.ios_is_development {
                Some(_) => Err(ApiError::field("iosIsDevelopment", "is given without any APNs credential")),
                None => Ok(()),
            };
        }
        if self.ios_is_development.is_none() {
            return Err(ApiError::field("iosIsDevelopment", "is required when any APNs field is set"));
        }
        let required: &[(&str, &Option<String>)] = if self.ios_apns_certificate.is_some() {
            &[("iosApnsPrivateKey", &self.ios_apns_private_key), ("iosBundleId", &self.ios_bundle_id)]
        } else {
            &[
                ("iosApnsTeamId", &self.ios_apns_team_id),
                ("iosApnsKeyId", &self.ios_apns_key_id),
                ("iosApnsPrivateKey", &self.ios_apns_private_key),
                ("iosBundleId", &self.ios_bundle_id),
            ]
        };
        let mode = if self.ios_apns_certificate.is_some() { "certificate-based" } else { "token-based" };
        for (field, value) in required {
            if value.as_deref().is_none_or(str::is_empty) {
                return Err(ApiError::field(field, format!("is required for {mode} APNs authentication")));
            }
        }
        for (field, value) in
            [("iosApnsCertificate", &self.ios_apns_certificate), ("iosApnsPrivateKey", &self.ios_apns_private_key)]
        {
            if let Some(v) = value.as_deref().filter(|v| *v != MASK) {
                decode_base64_field(field, v)?;
            }
        }
        Ok(())
    }
}

/// The stored app as read: `{ tenantId, appName, pushNotificationConfig }`.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppView {
    pub tenant_id: String,
    pub app_name: String,
    pub push_notification_config: PushConfigView,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigView {
    pub categories: Vec<String>,
    pub android_api_key: Option<String>,
    #[serde(rename = "fcmServiceAccountJSON")]
    pub fcm_service_account_json: Option<String>,
    pub ios_apns_certificate: Option<String>,
    pub ios_apns_private_key: Option<String>,
    pub ios_apns_team_id: Option<String>,
    pub ios_apns_key_id: Option<String>,
    pub ios_bundle_id: Option<String>,
    pub ios_is_development: Option<bool>,
    pub hpk_client_id: Option<String>,
    pub hpk_client_secret: Option<String>,
}

impl AppView {
    pub fn of(tenant: &str, app: &App) -> AppView {
        let mask = |s: &Option<herald_storage::Secret>| s.as_ref().map(|_| MASK.to_string());
        AppView {
            tenant_id: tenant.to_string(),
            app_name: app.name.clone(),
            push_notification_config: PushConfigView {
                categories: app.categories.clone(),
                android_api_key: mask(&app.android_api_key),
                fcm_service_account_json: mask(&app.fcm_service_account),
                ios_apns_certificate: mask(&app.ios_apns_certificate),
                ios_apns_private_key: mask(&app.ios_apns_private_key),
                ios_apns_team_id: app.ios_apns_team_id.clone(),
                ios_apns_key_id: app.ios_apns_key_id.clone(),
                ios_bundle_id: app.ios_bundle_id.clone(),
                ios_is_development: app.ios_is_development,
                hpk_client_id: app.hpk_client_id.clone(),
                hpk_client_secret: mask(&app.hpk_client_secret),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;

    fn token_app() -> AppBody {
        AppBody {
            categories: vec!["chat".into()],
            ios_apns_private_key: Some(STANDARD.encode("key")),
            ios_apns_team_id: Some("TEAM".into()),
            ios_apns_key_id: Some("KEY".into()),
            ios_bundle_id: Some("com.x".into()),
            ios_is_development: Some(true),
            ..Default::default()
        }
    }

    fn field_of(r: ApiResult<()>) -> String {
        r.unwrap_err().message.split(':').next().unwrap().to_string()
    }

    #[test]
    fn apns_modes_need_their_fields() {
        assert!(token_app().validate("a").is_ok());
        let no_team = AppBody { ios_apns_team_id: None, ..token_app() };
        assert_eq!(field_of(no_team.validate("a")), "iosApnsTeamId");
        let cert = AppBody {
            ios_apns_certificate: Some(STANDARD.encode("c")),
            ios_apns_team_id: None,
            ios_apns_key_id: None,
            ..token_app()
        };
        assert!(cert.validate("a").is_ok());
        let cert_no_bundle = AppBody { ios_bundle_id: None, ..cert };
        assert_eq!(field_of(cert_no_bundle.validate("a")), "iosBundleId");
        let no_env = AppBody { ios_is_development: None, ..token_app() };
        assert_eq!(field_of(no_env.validate("a")), "iosIsDevelopment");
    }

    #[test]
    fn categories_lengths_and_pairs() {
        let base = AppBody { categories: vec!["chat".into()], ..Default::default() };
        assert_eq!(field_of(AppBody { categories: vec![], ..base.clone() }.validate("a")), "categories");
        assert_eq!(
            field_of(AppBody { categories: vec!["chat".into(), "chat".into()], ..base.clone() }.validate("a")),
            "categories[1]"
        );
        assert_eq!(
            field_of(AppBody { categories: vec!["news".into()], ..base.clone() }.validate("a")),
            "categories[0]"
        );
        assert_eq!(field_of(base.validate(&"x".repeat(33))), "appName");
        assert_eq!(field_of(base.validate("")), "appName");
        assert_eq!(
            field_of(AppBody { hpk_client_id: Some("id".into()), ..base.clone() }.validate("a")),
            "hpkClientSecret"
        );
        assert_eq!(
            field_of(AppBody { android_api_key: Some("k".repeat(256)), ..base.clone() }.validate("a")),
            "androidApiKey"
        );
    }

    #[test]
    fn service_account_must_decode() {
        let base = AppBody { categories: vec!["chat".into()], ..Default::default() };
        let good = STANDARD.encode(r#"{"client_email":"a@b","private_key":"k","project_id":"p"}"#);
        assert!(AppBody { fcm_service_account_json: Some(good), ..base.clone() }.validate("a").is_ok());
        let missing = STANDARD.encode(r#"{"client_email":"a@b","project_id":"p"}"#);
        assert_eq!(
            field_of(AppBody { fcm_service_account_json: Some(missing), ..base.clone() }.validate("a")),
            "fcmServiceAccountJSON"
        );
        assert_eq!(
            field_of(AppBody { fcm_service_account_json: Some("!!".into()), ..base.clone() }.validate("a")),
            "fcmServiceAccountJSON"
        );
        let data_url = format!(
            "data:application/json;base64,{}",
            STANDARD.encode(r#"{"client_email":"a","private_key":"k","project_id":"p"}"#)
        );
        assert!(AppBody { fcm_service_account_json: Some(data_url), ..base }.validate("a").is_ok());
    }
}
