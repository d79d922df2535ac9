//! An app's push credentials, unsealed and decoded into what each provider needs.

use crate::providers::fcm::ServiceAccount;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine as _;
use herald_storage::apps::App;
use herald_storage::{Secret, Store};
use rustls::pki_types::CertificateDer;
use rustls::sign::{CertifiedKey, SigningKey};
use std::sync::Arc;

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

/// What is wrong with an APNs client identity (certificate auth): the
/// certificate, or the key (unreadable, or not the certificate's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityError {
    /// The chain is not PEM, holds no certificate, or one is not X.509.
    Certificate(String),
    /// The key is unreadable, of a type TLS cannot sign with, or not the certificate's.
    Key(String),
}

impl std::fmt::Display for IdentityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdentityError::Certificate(e) => write!(f, "client certificate: {e}"),
            IdentityError::Key(e) => write!(f, "client key: {e}"),
        }
    }
}

/// The certificate chain of APNs certificate auth: PEM `CERTIFICATE` blocks,
/// the first the client's own, each a well-formed X.509 certificate.
pub fn client_certificates(cert_pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM: {e}"))?;
    if certs.is_empty() {
        return Err("no PEM CERTIFICATE block".into());
    }
    for cert in &certs {
        x509_parser::parse_x509_certificate(cert).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    }
    Ok(certs)
}

/// The private key of APNs certificate auth: PEM PKCS#8, PKCS#1 (RSA) or SEC1
/// (EC), of a type TLS can sign with.
pub fn client_key(key_pem: &[u8]) -> Result<Arc<dyn SigningKey>, String> {
    let der = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| format!("not PEM: {e}"))?
        .ok_or("no PEM private key block")?;
    rustls::crypto::ring::sign::any_supported_type(&der).map_err(|e| format!("not a usable private key: {e}"))
}

/// The client identity of APNs certificate auth from PEM: the certificate, and
/// the key whose public half the certificate carries. The one reader of these,
/// at send time ([`crate::transport::tls_config`]) and when an app is saved.
pub fn client_identity(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, IdentityError> {
    let certs = client_certificates(cert_pem).map_err(IdentityError::Certificate)?;
    let key = client_key(key_pem).map_err(IdentityError::Key)?;
    let identity = CertifiedKey::new(certs, key);
    match identity.keys_match() {
        // As rustls's own `CertifiedKey::from_der`: a key that cannot tell its
        // public half (none of ring's) is not refused.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(identity),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(IdentityError::Key("is not the key of the certificate (their public keys differ)".into()))
        }
        Err(e) => Err(IdentityError::Certificate(e.to_string())),
    }
}

/// How APNs authenticates an app's requests: a JWT signed with its `.p8` key, or
/// the TLS client certificate of the connection.
pub enum ApnsAuth {
    /// Token auth: every request carries a JWT signed with the key.
    Token {
        /// The `.p8` ES256 key (`iosApnsPrivateKey`), decoded from base64.
        key: Vec<u8>,
        /// The key's id from Apple (`iosApnsKeyId`): the JWT's `kid`.
        key_id: String,
        /// The Apple developer team (`iosApnsTeamId`): the JWT's `iss`.
        team_id: String,
    },
    /// Certificate auth: the connection's TLS client identity authenticates.
    Certificate {
        /// The client certificate chain, PEM (DER is wrapped by [`to_pem`]).
        cert_pem: Vec<u8>,
        /// The certificate's private key, PEM.
        key_pem: Vec<u8>,
    },
}

/// An app's APNs setup; [`AppCredentials::apns`] is `None` unless the bundle id
/// and a complete token or certificate auth are configured.
pub struct ApnsCredentials {
    /// Token or certificate auth; decides the pool's TLS identity and the bearer.
    pub auth: ApnsAuth,
    /// The app's bundle id (`iosBundleId`), sent as `apns-topic`.
    pub topic: String,
    /// Send to APNs' sandbox (development builds, `iosIsDevelopment`), not production.
    pub sandbox: bool,
}

/// An app's Web Push setup: its VAPID key pair and subject.
pub struct WebPushCredentials {
    /// The VAPID private key, PKCS#8 DER (unsealed).
    pub private_key: Vec<u8>,
    /// The VAPID JWT's `sub`: a `mailto:` or `https:` contact.
    pub subject: String,
}

/// What an app can send through.
pub struct AppCredentials {
    /// Notification categories the app accepts; a send of another category is refused
    /// for its clients, and a broadcast skips the app.
    pub categories: Vec<String>,
    /// `None` when the app has no complete APNs configuration.
    pub apns: Option<ApnsCredentials>,
    /// The FCM service account; `None` when not configured (see `legacy_fcm_only`).
    pub fcm: Option<ServiceAccount>,
    /// Push Kit's OAuth client id and secret; `None` unless both are configured.
    pub hms: Option<(String, String)>,
    /// Only a legacy FCM server key: Google no longer accepts those.
    pub legacy_fcm_only: bool,
    /// The VAPID credentials; `None` when the app has no Web Push.
    pub web_push: Option<WebPushCredentials>,
}

/// The field the VAPID private key is sealed under (its sealing context).
pub const WEB_PUSH_KEY: &str = "webPushVapidPrivateKey";

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
    pub(crate) fn load(store: &Store, tenant: &str, app: &App) -> Result<AppCredentials, String> {
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
        let web_push = match store.apps().web_push(tenant, name).map_err(|e| e.to_string())? {
            Some(w) => Some(WebPushCredentials {
                private_key: store
                    .unseal(&w.private_key, &App::secret_context(tenant, name, WEB_PUSH_KEY))
                    .map_err(|e| format!("{WEB_PUSH_KEY}: {e}"))?,
                subject: w.subject,
            }),
            None => None,
        };
        Ok(AppCredentials {
            categories: app.categories.clone(),
            legacy_fcm_only: app.android_api_key.is_some() && fcm.is_none(),
            apns,
            fcm,
            hms,
            web_push,
        })
    }
}
