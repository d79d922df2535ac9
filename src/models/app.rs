//! Apps and their push configuration (spec 002 "App and push configuration").

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_actors::credentials::{self, IdentityError};
use herald_actors::guard::EndpointPolicy;
use herald_actors::providers::apns;
use herald_actors::providers::fcm::ServiceAccount;
use herald_actors::providers::vapid;
use herald_storage::apps::App;
use herald_storage::web_push::WebPushKeys;
use herald_storage::Secret;
use serde::{Deserialize, Serialize};

/// The notification categories (a send's `category`): an app lists those its clients receive.
pub const CATEGORIES: [&str; 3] = ["chat", "payment", "tms"];

/// `categories` as [`AppBody::validate`] accepts them: one or more of [`CATEGORIES`], no repeats.
fn categories_schema() -> utoipa::openapi::schema::Array {
    crate::openapi::schema::string_array(&CATEGORIES).min_items(Some(1)).unique_items(true).build()
}

/// `categories` as stored (validated on write).
fn stored_categories_schema() -> utoipa::openapi::schema::Array {
    crate::openapi::schema::string_array(&CATEGORIES).unique_items(true).build()
}

/// What a read shows in place of a stored secret; sent back on update it keeps
/// the stored value.
pub const MASK: &str = "***";

/// Body of save and update.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppBody {
    /// Optional; when given it must equal the path's app name.
    pub app_name: Option<String>,
    /// The categories the app's clients receive; a send of another category gets an Error result.
    #[schema(schema_with = categories_schema)]
    pub categories: Vec<String>,
    /// Legacy FCM server key (at most 255 characters): Google no longer accepts it, so a send
    /// through it alone gets an Error result. `***` keeps the stored value.
    pub android_api_key: Option<String>,
    /// Base64 of the complete Google service-account JSON file, for FCM (at most 15360
    /// characters); its key must sign. `***` keeps the stored value.
    #[serde(rename = "fcmServiceAccountJSON")]
    pub fcm_service_account_json: Option<String>,
    /// Base64 of the APNs client certificate, for certificate-based authentication (at most
    /// 46080 characters; a data-URL prefix is allowed). `***` keeps the stored value.
    pub ios_apns_certificate: Option<String>,
    /// Base64 of the APNs private key: the certificate's key, or the `.p8` P-256 key of
    /// token-based authentication (at most 10240 characters). `***` keeps the stored value.
    pub ios_apns_private_key: Option<String>,
    /// Apple team id (at most 32 characters); required for token-based authentication.
    pub ios_apns_team_id: Option<String>,
    /// Id of the `.p8` key (at most 32 characters); required for token-based authentication.
    pub ios_apns_key_id: Option<String>,
    /// The app's bundle id, sent as the APNs topic (at most 128 characters); required with any APNs field.
    pub ios_bundle_id: Option<String>,
    /// True pushes through the APNs sandbox, false through production; required with any APNs field.
    pub ios_is_development: Option<bool>,
    /// Huawei Push Kit client id (at most 64 characters); given together with `hpkClientSecret`.
    pub hpk_client_id: Option<String>,
    /// Huawei Push Kit client secret (at most 256 characters); given together with
    /// `hpkClientId`. `***` keeps the stored value.
    pub hpk_client_secret: Option<String>,
    /// The contact sent with every Web Push request (the VAPID JWT's `sub`): a
    /// `mailto:` address or an `https:` URL, at most 256 characters. Gives the
    /// app Web Push; absent, the app has none (its VAPID key is dropped).
    pub web_push_subject: Option<String>,
    /// Base64 of the VAPID private key, a PKCS#8 P-256 PEM (at most 10240
    /// characters); requires `webPushSubject`. Write only. Omitted, the stored
    /// key stays, or Herald generates one when there is none. `***` keeps the stored key.
    pub web_push_vapid_private_key: Option<String>,
    /// Read only (what a read shows); sent back, it must be the app's VAPID public key.
    pub web_push_vapid_public_key: Option<String>,
}

/// Decodes base64 (standard or URL-safe) with an optional `data:...;base64,` prefix.
pub fn decode_base64_field(field: &str, value: &str) -> ApiResult<Vec<u8>> {
    credentials::decode_base64(value)
        .ok_or_else(|| ApiError::field(field, "must be base64 (an optional data-URL prefix is allowed)"))
}

/// `fcmServiceAccountJSON`: base64 of a Google service-account JSON file with a
/// `client_email`, a `project_id` and a `private_key` FCM's OAuth can sign with,
/// read by the same code as at send time.
pub fn service_account(value: &str) -> ApiResult<ServiceAccount> {
    const F: &str = "fcmServiceAccountJSON";
    let json = decode_base64_field(F, value)?;
    let sa = ServiceAccount::from_json(&json).map_err(|e| ApiError::field(F, e))?;
    sa.signing_key().map_err(|e| ApiError::field(F, e))?;
    Ok(sa)
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
            ("webPushVapidPrivateKey", &self.web_push_vapid_private_key, 10240),
            ("webPushVapidPublicKey", &self.web_push_vapid_public_key, 128),
        ] {
            validate::max_length(field, value, max)?;
        }
        match (&self.hpk_client_id, &self.hpk_client_secret) {
            (Some(_), None) => return Err(ApiError::field("hpkClientSecret", "is required with hpkClientId")),
            (None, Some(_)) => return Err(ApiError::field("hpkClientId", "is required with hpkClientSecret")),
            _ => {}
        }
        if let Some(sa) = self.fcm_service_account_json.as_deref().filter(|v| *v != MASK) {
            service_account(sa)?;
        }
        self.validate_web_push()?;
        self.validate_apns()
    }

    /// The subject is a contact; a VAPID key needs one, and parses as the send path reads it.
    fn validate_web_push(&self) -> ApiResult<()> {
        const KEY: &str = "webPushVapidPrivateKey";
        let Some(subject) = &self.web_push_subject else {
            return match (&self.web_push_vapid_private_key, &self.web_push_vapid_public_key) {
                (Some(_), _) => Err(ApiError::field("webPushSubject", format!("is required with {KEY}"))),
                (None, Some(_)) => Err(ApiError::field("webPushSubject", "is required with webPushVapidPublicKey")),
                (None, None) => Ok(()),
            };
        };
        vapid::check_subject(subject).map_err(|e| ApiError::field("webPushSubject", e))?;
        if let Some(key) = self.web_push_vapid_private_key.as_deref().filter(|v| *v != MASK) {
            vapid::material(Some(&decode_base64_field(KEY, key)?)).map_err(|e| ApiError::field(KEY, e))?;
        }
        Ok(())
    }

    /// The provider endpoint the body names, a service account's `token_uri`,
    /// is one `policy` allows: https at a public address (a name is resolved
    /// now, within a few seconds, and every address must be public), or the
    /// origin of a provider endpoint the operator configured (400 naming
    /// `fcmServiceAccountJSON` otherwise). A name is checked again, on the
    /// addresses it resolves to, whenever a send connects to it. Call after
    /// [`AppBody::validate`].
    pub async fn check_endpoints(&self, policy: &EndpointPolicy) -> ApiResult<()> {
        const F: &str = "fcmServiceAccountJSON";
        if let Some(sa) = self.fcm_service_account_json.as_deref().filter(|v| *v != MASK) {
            let sa = ServiceAccount::from_json(&decode_base64_field(F, sa)?).map_err(|e| ApiError::field(F, e))?;
            policy.check_resolved(&sa.token_uri).await.map_err(|e| ApiError::field(F, format!("token_uri: {e}")))?;
        }
        Ok(())
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
        self.validate_apns_credentials()
    }

    /// The APNs key (and certificate) parse as the send path reads them: in
    /// token mode a P-256 `.p8` key; in certificate mode an X.509 certificate
    /// and its own key. A masked value keeps the stored one and is not read, so
    /// with one half masked the other is checked alone.
    fn validate_apns_credentials(&self) -> ApiResult<()> {
        const CERT: &str = "iosApnsCertificate";
        const KEY: &str = "iosApnsPrivateKey";
        let given = |field: &str, value: &Option<String>| {
            value.as_deref().filter(|v| *v != MASK).map(|v| decode_base64_field(field, v)).transpose()
        };
        let cert = given(CERT, &self.ios_apns_certificate)?.map(|c| credentials::to_pem(c, "CERTIFICATE"));
        let key = given(KEY, &self.ios_apns_private_key)?;
        if self.ios_apns_certificate.is_none() {
            return match key {
                Some(key) => apns::signing_key(&key).map(drop).map_err(|e| ApiError::field(KEY, e)),
                None => Ok(()),
            };
        }
        let key = key.map(|k| credentials::to_pem(k, "PRIVATE KEY"));
        match (cert, key) {
            (Some(cert), Some(key)) => credentials::client_identity(&cert, &key).map(drop).map_err(|e| match e {
                IdentityError::Certificate(e) => ApiError::field(CERT, e),
                IdentityError::Key(e) => ApiError::field(KEY, e),
            }),
            (Some(cert), None) => {
                credentials::client_certificates(&cert).map(drop).map_err(|e| ApiError::field(CERT, e))
            }
            (None, Some(key)) => credentials::client_key(&key).map(drop).map_err(|e| ApiError::field(KEY, e)),
            (None, None) => Ok(()),
        }
    }
}

/// The stored app as read: `{ tenantId, appName, pushNotificationConfig }`.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppView {
    /// The tenant of the app.
    pub tenant_id: String,
    /// The app's name, unique in the tenant.
    pub app_name: String,
    /// The app's categories and provider credentials, secrets masked.
    pub push_notification_config: PushConfigView,
}

/// An app's push configuration as read: each stored secret shows as `***`, which an
/// update may send back to keep it.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigView {
    /// The categories the app's clients receive.
    #[schema(schema_with = stored_categories_schema)]
    pub categories: Vec<String>,
    /// `***` when a legacy FCM server key is stored.
    pub android_api_key: Option<String>,
    /// `***` when an FCM service account is stored.
    #[serde(rename = "fcmServiceAccountJSON")]
    pub fcm_service_account_json: Option<String>,
    /// `***` when an APNs certificate is stored (certificate-based authentication).
    pub ios_apns_certificate: Option<String>,
    /// `***` when an APNs private key is stored.
    pub ios_apns_private_key: Option<String>,
    /// Apple team id of token-based authentication.
    pub ios_apns_team_id: Option<String>,
    /// Id of the `.p8` key of token-based authentication.
    pub ios_apns_key_id: Option<String>,
    /// The bundle id sent as the APNs topic.
    pub ios_bundle_id: Option<String>,
    /// True when pushes go through the APNs sandbox.
    pub ios_is_development: Option<bool>,
    /// Huawei Push Kit client id.
    pub hpk_client_id: Option<String>,
    /// `***` when a Huawei Push Kit client secret is stored.
    pub hpk_client_secret: Option<String>,
    /// The contact of the app's Web Push requests, when it has Web Push.
    pub web_push_subject: Option<String>,
    /// `***` when the app has Web Push: its VAPID private key is never shown.
    pub web_push_vapid_private_key: Option<String>,
    /// The VAPID public key, base64url (the uncompressed point): the
    /// `applicationServerKey` browsers subscribe with.
    pub web_push_vapid_public_key: Option<String>,
}

impl AppView {
    /// The read form of a stored app of `tenant` and its Web Push keys, its secrets masked.
    pub fn of(tenant: &str, app: &App, web_push: Option<&WebPushKeys>) -> AppView {
        use base64::Engine as _;
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
                web_push_subject: web_push.map(|w| w.subject.clone()),
                web_push_vapid_private_key: web_push.map(|_| MASK.to_string()),
                web_push_vapid_public_key: web_push
                    .map(|w| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&w.public_key)),
            },
        }
    }
}

/// A body's VAPID key, sealed before the transaction: the key it gives, or
/// one generated in case the app has none yet.
#[derive(Clone, Debug)]
pub struct SealedVapid {
    /// The PKCS#8 DER, sealed.
    pub sealed: Secret,
    /// Its public point.
    pub public_key: Vec<u8>,
    /// Whether the body gave it (else it is used only when none is stored).
    pub given: bool,
}

impl SealedVapid {
    /// The key of a body with a subject, sealed with `seal`; `None` without
    /// a subject or when the body sends `***`.
    pub fn of(body: &AppBody, seal: impl Fn(&[u8]) -> ApiResult<Secret>) -> ApiResult<Option<SealedVapid>> {
        const KEY: &str = "webPushVapidPrivateKey";
        if body.web_push_subject.is_none() {
            return Ok(None);
        }
        let given = match body.web_push_vapid_private_key.as_deref() {
            Some(MASK) => return Ok(None),
            Some(key) => Some(decode_base64_field(KEY, key)?),
            None => None,
        };
        let material = vapid::material(given.as_deref()).map_err(|e| ApiError::field(KEY, e))?;
        Ok(Some(SealedVapid { sealed: seal(&material.der)?, public_key: material.public, given: given.is_some() }))
    }
}

/// The Web Push record a validated body makes over `old`: none without a
/// subject; else the key given, the stored one, or the generated one.
/// `***` with none stored names the field (400); a public key sent back must
/// be the resulting one.
pub fn web_push_record(
    b: &AppBody,
    sealed: Option<&SealedVapid>,
    old: Option<&WebPushKeys>,
) -> ApiResult<Option<WebPushKeys>> {
    use base64::Engine as _;
    let Some(subject) = &b.web_push_subject else { return Ok(None) };
    let (private_key, public_key) = match (sealed, old) {
        (Some(s), _) if s.given => (s.sealed.clone(), s.public_key.clone()),
        (_, Some(old)) => (old.private_key.clone(), old.public_key.clone()),
        (Some(s), None) => (s.sealed.clone(), s.public_key.clone()),
        (None, None) => {
            return Err(ApiError::field("webPushVapidPrivateKey", "*** stands for a stored value, and none is stored"))
        }
    };
    if let Some(shown) = &b.web_push_vapid_public_key {
        if *shown != base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&public_key) {
            return Err(ApiError::field(
                "webPushVapidPublicKey",
                "is read only and is not the app's key (give webPushVapidPrivateKey to change it)",
            ));
        }
    }
    Ok(Some(WebPushKeys { subject: subject.clone(), private_key, public_key }))
}

/// One secret field of a body, ready to be stored: absent, the stored value
/// kept (the body sent [`MASK`]), or a new value, sealed before the
/// transaction that stores it.
#[derive(Clone, Debug)]
pub enum SecretField {
    /// The body does not give the field: the app has none.
    Absent,
    /// The body sent [`MASK`]: the stored value stays (400 when there is none).
    Keep,
    /// A new value, sealed.
    New(Secret),
}

/// The secret fields of a body, sealed.
#[derive(Clone, Debug)]
pub struct SealedSecrets {
    /// The body's `androidApiKey`.
    pub android_api_key: SecretField,
    /// The body's `fcmServiceAccountJSON`.
    pub fcm_service_account: SecretField,
    /// The body's `iosApnsCertificate`.
    pub ios_apns_certificate: SecretField,
    /// The body's `iosApnsPrivateKey`.
    pub ios_apns_private_key: SecretField,
    /// The body's `hpkClientSecret`.
    pub hpk_client_secret: SecretField,
}

impl SealedSecrets {
    /// Seals each new value with `seal(field, value)`; `***` keeps the stored one.
    pub fn of(body: &AppBody, seal: impl Fn(&str, &str) -> ApiResult<Secret>) -> ApiResult<SealedSecrets> {
        let field = |name: &str, value: &Option<String>| -> ApiResult<SecretField> {
            Ok(match value.as_deref() {
                None => SecretField::Absent,
                Some(MASK) => SecretField::Keep,
                Some(v) => SecretField::New(seal(name, v)?),
            })
        };
        Ok(SealedSecrets {
            android_api_key: field("androidApiKey", &body.android_api_key)?,
            fcm_service_account: field("fcmServiceAccountJSON", &body.fcm_service_account_json)?,
            ios_apns_certificate: field("iosApnsCertificate", &body.ios_apns_certificate)?,
            ios_apns_private_key: field("iosApnsPrivateKey", &body.ios_apns_private_key)?,
            hpk_client_secret: field("hpkClientSecret", &body.hpk_client_secret)?,
        })
    }
}

/// The app record a validated body makes: created (`old` None) or replacing
/// `old`, whose creation time it keeps. A masked secret keeps the stored one;
/// with none stored, it names the field (400).
pub fn record(name: &str, b: &AppBody, s: &SealedSecrets, old: Option<&App>, now: u64) -> ApiResult<App> {
    let secret = |field: &str, value: &SecretField, kept: Option<&Option<Secret>>| -> ApiResult<Option<Secret>> {
        match value {
            SecretField::Absent => Ok(None),
            SecretField::New(sealed) => Ok(Some(sealed.clone())),
            SecretField::Keep => kept
                .cloned()
                .flatten()
                .map(Some)
                .ok_or_else(|| ApiError::field(field, "*** stands for a stored value, and none is stored")),
        }
    };
    Ok(App {
        name: name.to_string(),
        categories: b.categories.clone(),
        android_api_key: secret("androidApiKey", &s.android_api_key, old.map(|o| &o.android_api_key))?,
        fcm_service_account: secret(
            "fcmServiceAccountJSON",
            &s.fcm_service_account,
            old.map(|o| &o.fcm_service_account),
        )?,
        ios_apns_certificate: secret(
            "iosApnsCertificate",
            &s.ios_apns_certificate,
            old.map(|o| &o.ios_apns_certificate),
        )?,
        ios_apns_private_key: secret(
            "iosApnsPrivateKey",
            &s.ios_apns_private_key,
            old.map(|o| &o.ios_apns_private_key),
        )?,
        ios_apns_team_id: b.ios_apns_team_id.clone(),
        ios_apns_key_id: b.ios_apns_key_id.clone(),
        ios_bundle_id: b.ios_bundle_id.clone(),
        ios_is_development: b.ios_is_development,
        hpk_client_id: b.hpk_client_id.clone(),
        hpk_client_secret: secret("hpkClientSecret", &s.hpk_client_secret, old.map(|o| &o.hpk_client_secret))?,
        created_ms: old.map_or(now, |o| o.created_ms),
        modified_ms: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use rcgen::{CertificateParams, KeyPair, SignatureAlgorithm};

    /// A throwaway RSA-2048 PKCS#8 key (ring cannot generate RSA keys).
    const RSA_PEM: &str = include_str!("../../actors/src/providers/testdata/rsa2048.pem");

    fn key_pem(alg: &'static SignatureAlgorithm) -> String {
        KeyPair::generate_for(alg).unwrap().serialize_pem()
    }

    fn p256_pem() -> String {
        key_pem(&rcgen::PKCS_ECDSA_P256_SHA256)
    }

    /// A self-signed certificate and its key, both PEM.
    fn cert_and_key() -> (String, String) {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = CertificateParams::new(vec!["com.x".to_string()]).unwrap().self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn token_app() -> AppBody {
        AppBody {
            categories: vec!["chat".into()],
            ios_apns_private_key: Some(STANDARD.encode(p256_pem())),
            ios_apns_team_id: Some("TEAM".into()),
            ios_apns_key_id: Some("KEY".into()),
            ios_bundle_id: Some("com.x".into()),
            ios_is_development: Some(true),
            ..Default::default()
        }
    }

    fn cert_app(cert: &str, key: &str) -> AppBody {
        AppBody {
            ios_apns_certificate: Some(STANDARD.encode(cert)),
            ios_apns_private_key: Some(STANDARD.encode(key)),
            ios_apns_team_id: None,
            ios_apns_key_id: None,
            ..token_app()
        }
    }

    fn service_account_json(fields: serde_json::Value) -> String {
        let mut sa = serde_json::json!({
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "k1",
            "private_key": RSA_PEM,
            "client_email": "svc@p.iam.gserviceaccount.com",
        });
        for (k, v) in fields.as_object().unwrap() {
            if v.is_null() {
                sa.as_object_mut().unwrap().remove(k);
            } else {
                sa[k] = v.clone();
            }
        }
        STANDARD.encode(sa.to_string())
    }

    fn fcm_app(sa: String) -> AppBody {
        AppBody { categories: vec!["chat".into()], fcm_service_account_json: Some(sa), ..Default::default() }
    }

    fn field_of(r: ApiResult<()>) -> String {
        r.unwrap_err().message.split(':').next().unwrap().to_string()
    }

    #[test]
    fn apns_modes_need_their_fields() {
        assert!(token_app().validate("a").is_ok());
        let no_team = AppBody { ios_apns_team_id: None, ..token_app() };
        assert_eq!(field_of(no_team.validate("a")), "iosApnsTeamId");
        let (c, k) = cert_and_key();
        let cert = cert_app(&c, &k);
        assert!(cert.validate("a").is_ok());
        let cert_no_bundle = AppBody { ios_bundle_id: None, ..cert };
        assert_eq!(field_of(cert_no_bundle.validate("a")), "iosBundleId");
        let no_env = AppBody { ios_is_development: None, ..token_app() };
        assert_eq!(field_of(no_env.validate("a")), "iosIsDevelopment");
    }

    #[test]
    fn the_apns_token_key_must_be_a_p256_pkcs8_key() {
        let with_key = |key: String| AppBody { ios_apns_private_key: Some(key), ..token_app() };
        // PEM, DER and a data URL, as the send path reads them.
        let der = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap().serialize_der();
        assert!(with_key(STANDARD.encode(&der)).validate("a").is_ok());
        let data_url = format!("data:application/octet-stream;base64,{}", STANDARD.encode(p256_pem()));
        assert!(with_key(data_url).validate("a").is_ok());
        for bad in [
            "key".to_string(),
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_string(),
            key_pem(&rcgen::PKCS_ECDSA_P384_SHA384),
            key_pem(&rcgen::PKCS_ED25519),
            RSA_PEM.to_string(),
        ] {
            let r = with_key(STANDARD.encode(&bad)).validate("a");
            assert_eq!(field_of(r.clone()), "iosApnsPrivateKey", "{bad}");
            assert!(r.unwrap_err().message.contains("P-256"));
        }
        assert_eq!(field_of(with_key("!!".into()).validate("a")), "iosApnsPrivateKey");
        // The mask keeps the stored key: it is not parsed.
        assert!(with_key(MASK.into()).validate("a").is_ok());
    }

    #[test]
    fn the_apns_certificate_must_parse_and_match_its_key() {
        let (cert, key) = cert_and_key();
        let (_, other_key) = cert_and_key();
        assert!(cert_app(&cert, &key).validate("a").is_ok());
        let mismatch = cert_app(&cert, &other_key).validate("a").unwrap_err().message;
        assert!(mismatch.starts_with("iosApnsPrivateKey:") && mismatch.contains("not the key of the certificate"));
        // A usable RSA key, but not the certificate's.
        assert_eq!(field_of(cert_app(&cert, RSA_PEM).validate("a")), "iosApnsPrivateKey");
        assert_eq!(field_of(cert_app(&cert, "key").validate("a")), "iosApnsPrivateKey");
        assert_eq!(field_of(cert_app("cert", &key).validate("a")), "iosApnsCertificate");
        let not_x509 = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert_eq!(field_of(cert_app(not_x509, &key).validate("a")), "iosApnsCertificate");
        // The certificate as DER works too (wrapped into PEM as at send time).
        let der = AppBody {
            ios_apns_certificate: Some(
                STANDARD.encode(x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap().1.contents),
            ),
            ..cert_app(&cert, &key)
        };
        assert!(der.validate("a").is_ok());
        // A masked half is the stored one: the other half is checked alone.
        let masked_key = AppBody { ios_apns_private_key: Some(MASK.into()), ..cert_app(&cert, &key) };
        assert!(masked_key.validate("a").is_ok());
        assert_eq!(
            field_of(AppBody { ios_apns_certificate: Some(STANDARD.encode("cert")), ..masked_key }.validate("a")),
            "iosApnsCertificate"
        );
        let masked_cert = AppBody { ios_apns_certificate: Some(MASK.into()), ..cert_app(&cert, &other_key) };
        assert!(masked_cert.validate("a").is_ok());
        assert_eq!(
            field_of(AppBody { ios_apns_private_key: Some(STANDARD.encode("key")), ..masked_cert }.validate("a")),
            "iosApnsPrivateKey"
        );
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

    /// (Only `localhost` is resolved: tests resolve no external name.)
    #[tokio::test]
    async fn the_token_uri_must_be_an_allowed_endpoint() {
        let policy = EndpointPolicy::new(["https://127.0.0.1:8443"], false);
        let with = |uri: &str| fcm_app(service_account_json(serde_json::json!({ "token_uri": uri })));
        assert!(with("https://93.184.216.34/token").check_endpoints(&policy).await.is_ok(), "a public address");
        assert!(with("https://127.0.0.1:8443/token").check_endpoints(&policy).await.is_ok(), "a configured origin");
        for bad in [
            "http://127.0.0.1:9/token",
            "https://10.0.0.1/token",
            "http://oauth2.googleapis.com/token",
            "https://localhost:9/token",
        ] {
            let e = with(bad).check_endpoints(&policy).await.unwrap_err().message;
            assert!(e.starts_with("fcmServiceAccountJSON: token_uri: "), "{bad}: {e}");
            assert!(with(bad).check_endpoints(&EndpointPolicy::new([], true)).await.is_ok(), "{bad} when allowed");
        }
        assert!(fcm_app(MASK.into()).check_endpoints(&policy).await.is_ok(), "the stored one was checked when saved");
    }

    #[test]
    fn service_account_must_decode() {
        let good = service_account_json(serde_json::json!({}));
        assert!(fcm_app(good.clone()).validate("a").is_ok());
        let missing = service_account_json(serde_json::json!({"private_key": null}));
        assert_eq!(field_of(fcm_app(missing).validate("a")), "fcmServiceAccountJSON");
        assert_eq!(field_of(fcm_app("!!".into()).validate("a")), "fcmServiceAccountJSON");
        let data_url = format!("data:application/json;base64,{good}");
        assert!(fcm_app(data_url).validate("a").is_ok());
        assert!(fcm_app(MASK.into()).validate("a").is_ok());
    }

    #[test]
    fn the_service_account_needs_its_fields_and_an_rsa_key() {
        let message = |fields: serde_json::Value| {
            let e = fcm_app(service_account_json(fields)).validate("a").unwrap_err().message;
            assert!(e.starts_with("fcmServiceAccountJSON: "), "{e}");
            e
        };
        for (fields, names) in [
            (serde_json::json!({"private_key": "k"}), "private_key"),
            (
                serde_json::json!({"private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}),
                "private_key",
            ),
            // A P-256 key is PKCS#8 but not RSA: it cannot sign the RS256 assertion.
            (serde_json::json!({"private_key": p256_pem()}), "private_key"),
            (serde_json::json!({"client_email": null}), "client_email"),
            (serde_json::json!({"client_email": ""}), "client_email"),
            (serde_json::json!({"project_id": null}), "project_id"),
            (serde_json::json!({"project_id": " "}), "project_id"),
        ] {
            let e = message(fields.clone());
            assert!(e.contains(names), "{fields} -> {e}");
        }
    }

    #[test]
    fn a_masked_secret_keeps_the_stored_one_and_needs_one() {
        let master = herald_storage::MasterKey::from_bytes(&[7; 32]).unwrap();
        let sealed = |v: &str| master.seal(v.as_bytes(), "test").unwrap();
        let body = AppBody { android_api_key: Some(MASK.into()), hpk_client_secret: Some("new".into()), ..token_app() };
        let secrets = SealedSecrets::of(&body, |_, v| Ok(sealed(v))).unwrap();
        assert!(matches!(secrets.android_api_key, SecretField::Keep));
        let err = record("shop", &body, &secrets, None, 1).unwrap_err();
        assert!(err.message.contains("androidApiKey"), "{}", err.message);
        let old = App { android_api_key: Some(sealed("old")), created_ms: 1, ..App::default() };
        let app = record("shop", &body, &secrets, Some(&old), 2).unwrap();
        assert_eq!(app.android_api_key, old.android_api_key);
        let SecretField::New(new) = &secrets.hpk_client_secret else { panic!("a new value") };
        assert_eq!(app.hpk_client_secret.as_ref(), Some(new));
        assert_eq!(app.fcm_service_account, None);
        assert_eq!((app.created_ms, app.modified_ms), (1, 2));
    }
}
