//! An app's push credentials, unsealed and decoded into what each provider needs.

use crate::providers::fcm::ServiceAccount;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine as _;
use herald_storage::apps::App;
use herald_storage::{Secret, Store};

/// Decodes base64 (standard or URL-safe, whitespace ignored) with an optional
/// `data:...;base64,` prefix, as the app configuration carries credentials.
pub fn decode_base64(value: &str) -> Option<Vec<u8>> {
    let payload = match value.split_once(";base64,") {
        Some((prefix, rest)) if prefix.starts_with("data:") => rest,
        _ => value,
    };
    let compact: String = payload.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(&compact).or_else(|_| URL_SAFE.decode(&compact)).ok()
}

/// PEM as given, or DER wrapped into PEM with `label`.
pub fn to_pem(bytes: Vec<u8>, label: &str) -> Vec<u8> {
    if bytes.starts_with(b"-----BEGIN") {
        return bytes;
    }
    let b64 = STANDARD.encode(&bytes);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem.into_bytes()
}

pub enum ApnsAuth {
    Token { key: Vec<u8>, key_id: String, team_id: String },
    Certificate { cert_pem: Vec<u8>, key_pem: Vec<u8> },
}

pub struct ApnsCredentials {
    pub auth: ApnsAuth,
    pub topic: String,
    pub sandbox: bool,
}

/// What an app can send through.
pub struct AppCredentials {
    pub categories: Vec<String>,
    pub apns: Option<ApnsCredentials>,
    pub fcm: Option<ServiceAccount>,
    pub hms: Option<(String, String)>,
    /// Only a legacy FCM server key: Google no longer accepts those.
    pub legacy_fcm_only: bool,
}

fn open_text(
    store: &Store,
    tenant: &str,
    app: &str,
    field: &str,
    s: &Option<Secret>,
) -> Result<Option<String>, String> {
    match s {
        None => Ok(None),
        Some(secret) => {
            let bytes =
                store.unseal(secret, &App::secret_context(tenant, app, field)).map_err(|e| format!("{field}: {e}"))?;
            String::from_utf8(bytes).map(Some).map_err(|_| format!("{field}: not text"))
        }
    }
}

fn decoded(field: &str, value: Option<String>) -> Result<Option<Vec<u8>>, String> {
    value.map(|v| decode_base64(&v).ok_or_else(|| format!("{field}: not base64"))).transpose()
}

impl AppCredentials {
    pub fn load(store: &Store, tenant: &str, app: &App) -> Result<AppCredentials, String> {
        let name = app.name.as_str();
        let key = decoded(
            "iosApnsPrivateKey",
            open_text(store, tenant, name, "iosApnsPrivateKey", &app.ios_apns_private_key)?,
        )?;
        let cert = decoded(
            "iosApnsCertificate",
            open_text(store, tenant, name, "iosApnsCertificate", &app.ios_apns_certificate)?,
        )?;
        let apns = match (key, cert, &app.ios_bundle_id) {
            (Some(key), Some(cert), Some(topic)) => Some(ApnsCredentials {
                auth: ApnsAuth::Certificate {
                    cert_pem: to_pem(cert, "CERTIFICATE"),
                    key_pem: to_pem(key, "PRIVATE KEY"),
                },
                topic: topic.clone(),
                sandbox: app.ios_is_development.unwrap_or(false),
            }),
            (Some(key), None, Some(topic)) => match (&app.ios_apns_key_id, &app.ios_apns_team_id) {
                (Some(key_id), Some(team_id)) => Some(ApnsCredentials {
                    auth: ApnsAuth::Token { key, key_id: key_id.clone(), team_id: team_id.clone() },
                    topic: topic.clone(),
                    sandbox: app.ios_is_development.unwrap_or(false),
                }),
                _ => None,
            },
            _ => None,
        };
        let fcm = match open_text(store, tenant, name, "fcmServiceAccountJSON", &app.fcm_service_account)? {
            Some(b64) => {
                let json = decode_base64(&b64).ok_or("fcmServiceAccountJSON: not base64")?;
                Some(ServiceAccount::from_json(&json)?)
            }
            None => None,
        };
        let hms = match (&app.hpk_client_id, open_text(store, tenant, name, "hpkClientSecret", &app.hpk_client_secret)?)
        {
            (Some(id), Some(secret)) => Some((id.clone(), secret)),
            _ => None,
        };
        Ok(AppCredentials {
            categories: app.categories.clone(),
            legacy_fcm_only: app.android_api_key.is_some() && fcm.is_none(),
            apns,
            fcm,
            hms,
        })
    }
}
