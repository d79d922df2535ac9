//! Firebase Cloud Messaging HTTP v1: the request
//! (`POST /v1/projects/{project}/messages:send`, one token per request), the
//! meaning of Google's answers, and the OAuth2 access token of a service account.
//!
//! A notification is formatted once ([`prepare`]) into the JSON after the
//! token, so a request per token is two copies and the token's escaping.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use serde_json::{json, Value};

use super::auth_http::{Grant, OAuth};
use super::{android, retry_after, unix_now, Backend, Bearer, BuildEnv, Built, FormatError, Notification};
use super::{Outcome, Provider, WireRequest};
use crate::credentials::AppCredentials;
use crate::transport::Target;

/// FCM keeps undelivered messages at most 28 days; a longer ttl is refused.
pub const MAX_TTL_SECS: i64 = 2_419_200;

/// Google's OAuth token endpoint, when the service account names none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The OAuth scope that allows sending FCM messages.
pub const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";

/// `data` keys FCM refuses ("Invalid data payload key"): these words, and any
/// key starting with `google` or `gcm`.
const RESERVED_DATA_KEYS: [&str; 3] = ["from", "notification", "message_type"];

const PREFIX: &[u8] = br#"{"message":{"token":"#;

/// A notification formatted for FCM: the message JSON around the token.
#[derive(Clone, Debug)]
pub struct FcmPayload {
    /// `,"android":{..},"data":{..}}}`: everything after the token.
    suffix: Bytes,
}

impl FcmPayload {
    /// The request for one registration token, authorised with an OAuth access token.
    pub fn request(&self, project_id: &str, token: &str, bearer: Option<&Bearer>) -> Result<WireRequest, FormatError> {
        android::request(["/v1/projects/", project_id, "/messages:send"], PREFIX, &token, &self.suffix, bearer)
    }
}

/// Formats `n` as an FCM v1 message:
/// `{"message": {"token", "data": {..}, "android": {"priority", "ttl",
/// "collapse_key", "notification": {..}}}}`.
///
/// FCM `data` values must be strings: customData strings go as they are, other
/// values JSON-encoded (`42`, `true`, `{"a":1}`); `sender` is the JSON string of
/// `{"tenantId","userId"}`; `notificationId` and `category` are added. Priority
/// HIGH is Android `high`, NORMAL and LOW `normal` (Android has no lower one).
/// The ttl is capped at 28 days. A silent notification has no `notification`
/// object: a data-only message the app handles itself.
///
/// The size limit is FCM's: the `data` keys and values plus the notification
/// must fit in 4096 bytes (413 otherwise). The token and the rest of the
/// envelope do not count, as on FCM, so the check is made here, once.
pub fn prepare(n: &Notification) -> Result<FcmPayload, FormatError> {
    if let Some(k) = n
        .custom_data
        .keys()
        .find(|k| RESERVED_DATA_KEYS.contains(&k.as_str()) || k.starts_with("google") || k.starts_with("gcm"))
    {
        return Err(FormatError { status: 400, message: format!("customData key {k:?} is reserved by FCM") });
    }
    let data = android::data(n, |v| match v {
        Value::String(s) => Value::String(s),
        other => Value::String(other.to_string()),
    });
    let dialect = android::Dialect { priority: ("priority", "high", "normal"), max_ttl: MAX_TTL_SECS };
    let mut block = android::android(n, &dialect, n.collapse_key.as_ref().map(|k| json!(k)));
    let mut size: usize =
        data.iter().fold(0, |n, (k, v)| n.saturating_add(k.len()).saturating_add(v.as_str().map_or(0, str::len)));
    if !n.silent {
        let notification = Value::Object(android::notification(n, n.title.as_ref(), n.body.as_ref()));
        size = size.saturating_add(notification.to_string().len());
        block.insert("notification".into(), notification);
    }
    super::check_size(size, "FCM's")?;
    let (suffix, _) = android::suffix(block, Value::Object(data), "FCM")?;
    Ok(FcmPayload { suffix })
}

/// What an FCM answer means for the token.
///
/// 200 `{"name"}`: sent. `UNREGISTERED` (404): dead; so is `INVALID_ARGUMENT`
/// when Google names `message.token` as the bad field (a malformed token never
/// becomes valid). 401 (`UNAUTHENTICATED`): our access token was refused,
/// refresh it, except `THIRD_PARTY_AUTH_ERROR`, which is about the APNs or web
/// push credentials in the Firebase project and needs a person. 429
/// (`QUOTA_EXCEEDED`) and 5xx (`UNAVAILABLE`, `INTERNAL`): retry, after
/// `retry-after` when given. Anything else (`INVALID_ARGUMENT`,
/// `SENDER_ID_MISMATCH`, `PERMISSION_DENIED`): a permanent failure.
pub fn parse_response(status: u16, headers: &http::HeaderMap, body: &[u8]) -> Outcome {
    if status == 200 {
        #[derive(serde::Deserialize)]
        struct Sent {
            name: Option<String>,
        }
        let id = serde_json::from_slice::<Sent>(body).ok().and_then(|s| s.name);
        return Outcome::Sent { id };
    }
    let error = GoogleError::parse(body);
    let code = error.error_code.as_deref().or(error.status.as_deref());
    let reason = super::reason(status, body, code, error.message.as_deref());
    let error_code = error.error_code.as_deref();
    if error_code == Some("UNREGISTERED") {
        return Outcome::Dead { status, reason: "UNREGISTERED".into() };
    }
    if status == 400 && error.bad_fields.iter().any(|f| f == "message.token") {
        return Outcome::Dead { status, reason };
    }
    match status {
        401 if error_code == Some("THIRD_PARTY_AUTH_ERROR") => Outcome::Failed { status, reason },
        401 => Outcome::AuthRefused { status, reason },
        429 | 500..=599 => Outcome::Retry { status, reason, after: retry_after(headers) },
        _ if error.status.as_deref() == Some("UNAUTHENTICATED") => Outcome::AuthRefused { status, reason },
        _ => Outcome::Failed { status, reason },
    }
}

/// The parts of Google's error body we read:
/// `{"error": {"code", "message", "status", "details": [{"@type": "...FcmError",
/// "errorCode"}, {"@type": "...BadRequest", "fieldViolations": [{"field"}]}]}}`.
#[derive(Default)]
struct GoogleError {
    status: Option<String>,
    message: Option<String>,
    error_code: Option<String>,
    bad_fields: Vec<String>,
}

impl GoogleError {
    fn parse(body: &[u8]) -> GoogleError {
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return GoogleError::default();
        };
        let Some(e) = v.get("error") else {
            return GoogleError::default();
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let mut out =
            GoogleError { status: text(e.get("status")), message: text(e.get("message")), ..Default::default() };
        for d in e.get("details").and_then(Value::as_array).into_iter().flatten() {
            if let Some(code) = text(d.get("errorCode")) {
                out.error_code.get_or_insert(code);
            }
            for f in d.get("fieldViolations").and_then(Value::as_array).into_iter().flatten() {
                if let Some(field) = text(f.get("field")) {
                    out.bad_fields.push(field);
                }
            }
        }
        out
    }
}

/// A Google service account: what FCM's OAuth needs from its JSON file.
#[derive(Clone, serde::Deserialize)]
pub struct ServiceAccount {
    /// The service account's identity: the JWT assertion's issuer and subject.
    pub client_email: String,
    /// PEM PKCS#8 RSA key (`-----BEGIN PRIVATE KEY-----`).
    pub private_key: String,
    /// The key's id, sent as the assertion's `kid` when given.
    #[serde(default)]
    pub private_key_id: Option<String>,
    /// The Firebase project messages are sent through (`/v1/projects/<id>/messages:send`).
    pub project_id: String,
    /// Google's token endpoint; configurable for the simulators.
    #[serde(default = "default_token_uri")]
    pub token_uri: String,
}

fn default_token_uri() -> String {
    DEFAULT_TOKEN_URI.to_owned()
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .field("private_key_id", &self.private_key_id)
            .field("project_id", &self.project_id)
            .field("token_uri", &self.token_uri)
            .finish_non_exhaustive()
    }
}

impl ServiceAccount {
    /// Reads Google's service-account JSON file (the app config stores it in
    /// base64; decode first). Unknown fields are ignored: Google adds them.
    pub fn from_json(json: &[u8]) -> Result<ServiceAccount, String> {
        let sa: ServiceAccount =
            serde_json::from_slice(json).map_err(|e| format!("not a Google service-account JSON file: {e}"))?;
        for (name, value) in [("client_email", &sa.client_email), ("project_id", &sa.project_id)] {
            if value.trim().is_empty() {
                return Err(format!("the service account's {name} is empty"));
            }
        }
        Ok(sa)
    }

    /// The account's RSA key, which signs the OAuth assertion: a PKCS#8 PEM
    /// (`-----BEGIN PRIVATE KEY-----`) that ring accepts. The one reader of that
    /// key, at send time ([`FcmAuth::new`]) and when an app is saved.
    pub fn signing_key(&self) -> Result<RsaKeyPair, String> {
        use rustls::pki_types::pem::PemObject;
        let der = rustls::pki_types::PrivatePkcs8KeyDer::from_pem_slice(self.private_key.as_bytes())
            .map_err(|e| format!("the service account's private_key is not a PEM PKCS#8 key: {e:?}"))?;
        RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
            .map_err(|e| format!("the service account's private_key is not a usable RSA key: {e}"))
    }
}

/// Google's OAuth for a service account (the "two-legged" flow): an RS256
/// JWT assertion signed with the account's key is exchanged at `token_uri`
/// for an access token. Signed with ring, never the `rsa` crate
/// (RUSTSEC-2023-0071).
pub struct Assertion {
    sa: ServiceAccount,
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assertion").field("account", &self.sa).finish_non_exhaustive()
    }
}

impl Assertion {
    /// Checks the key at once, so a bad service account is reported when the
    /// app is configured.
    pub fn new(sa: ServiceAccount) -> Result<Assertion, String> {
        let key = sa.signing_key()?;
        Ok(Assertion { sa, key, rng: SystemRandom::new() })
    }

    /// The signed JWT assertion of the account, valid for an hour from `iat`.
    fn assertion(&self, iat: u64) -> Result<String, String> {
        let mut header = json!({ "alg": "RS256", "typ": "JWT" });
        if let Some(kid) = &self.sa.private_key_id {
            header["kid"] = json!(kid);
        }
        let claims = json!({
            "iss": self.sa.client_email,
            "scope": SCOPE,
            "aud": self.sa.token_uri,
            "iat": iat,
            "exp": iat.saturating_add(3600),
        });
        let mut jwt = String::new();
        URL_SAFE_NO_PAD.encode_string(header.to_string(), &mut jwt);
        jwt.push('.');
        URL_SAFE_NO_PAD.encode_string(claims.to_string(), &mut jwt);
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &self.rng, jwt.as_bytes(), &mut signature)
            .map_err(|_| "RSA signing of the FCM assertion failed".to_owned())?;
        jwt.push('.');
        URL_SAFE_NO_PAD.encode_string(&signature, &mut jwt);
        Ok(jwt)
    }
}

impl Grant for Assertion {
    const PROVIDER: Backend = Backend::Fcm;

    fn url(&self) -> &str {
        &self.sa.token_uri
    }

    fn form(&self) -> Result<Vec<(&'static str, String)>, String> {
        Ok(vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer".into()),
            ("assertion", self.assertion(unix_now())?),
        ])
    }
}

/// The OAuth2 access token of a service account for FCM.
pub type FcmAuth = OAuth<Assertion>;

/// FCM for one app: the project it sends for (the service account's).
pub struct Fcm {
    project_id: String,
}

impl Provider for Fcm {
    const BACKEND: Backend = Backend::Fcm;
    type Payload = FcmPayload;
    type Auth = FcmAuth;

    fn build(creds: &AppCredentials, env: &BuildEnv<'_>) -> Option<Result<Built<Fcm>, String>> {
        let sa = creds.fcm.clone()?;
        let target = Target::from_url(&env.settings.endpoints.fcm, env.tls.clone()).map_err(|e| e.to_string());
        let fcm = Fcm { project_id: sa.project_id.clone() };
        Some(Assertion::new(sa).and_then(|a| Ok((fcm, OAuth::new(a, env.auth_http.clone()), target?.into()))))
    }

    fn prepare(&self, n: &Notification) -> Result<FcmPayload, FormatError> {
        prepare(n)
    }

    fn request(&self, p: &FcmPayload, tokens: &[&str], bearer: Option<&Bearer>) -> Result<WireRequest, FormatError> {
        p.request(&self.project_id, super::only(tokens)?, bearer)
    }

    fn read(status: u16, headers: &http::HeaderMap, body: &[u8], tokens: &[&str]) -> Vec<Outcome> {
        super::for_each(parse_response(status, headers, body), tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::sample as notification;
    use crate::providers::Priority;
    use std::time::Duration;

    fn message(n: &Notification) -> Value {
        let r =
            prepare(n).unwrap().request("proj-1", "tok:EN", Some(&Bearer::new("Bearer", "ya29.x").unwrap())).unwrap();
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["message"]["token"], "tok:EN");
        v["message"].clone()
    }

    #[test]
    fn a_notification_message() {
        let n = crate::providers::sample_full();
        assert_eq!(
            message(&n),
            json!({
                "token": "tok:EN",
                "data": {
                    "s": "text", "n": "42", "b": "true", "o": r#"{"a":[1,"2"]}"#, "z": "null",
                    "sender": r#"{"tenantId":"acme","userId":"u\"1"}"#,
                    "notificationId": "01HZX5J3K9Q8W7E6R5T4Y3U2I1",
                    "category": "chat",
                },
                "android": {
                    "priority": "high",
                    "ttl": "600s",
                    "collapse_key": "7",
                    "notification": {
                        "title": "Hello", "body": "World",
                        "title_loc_key": "T", "title_loc_args": ["x"],
                        "body_loc_key": "B", "body_loc_args": ["y", "z"],
                        "sound": "default", "icon": "ic",
                    },
                },
            })
        );
    }

    #[test]
    fn priorities_and_ttl() {
        let mut n = notification();
        for (p, want) in [(Priority::High, "high"), (Priority::Normal, "normal"), (Priority::Low, "normal")] {
            n.priority = p;
            assert_eq!(message(&n)["android"]["priority"], want);
        }
        assert!(message(&n)["android"].get("ttl").is_none());
        n.time_to_live = Some(100 * 24 * 3600);
        assert_eq!(message(&n)["android"]["ttl"], "2419200s");
        n.time_to_live = Some(-1);
        assert_eq!(message(&n)["android"]["ttl"], "0s");
        assert!(message(&n)["android"].get("collapse_key").is_none());
    }

    #[test]
    fn a_silent_message_is_data_only() {
        let mut n = notification();
        n.silent = true;
        let m = message(&n);
        assert!(m["android"].get("notification").is_none());
        assert!(m.get("notification").is_none());
        assert_eq!(m["data"]["category"], "chat");
    }

    #[test]
    fn reserved_data_keys_are_refused() {
        for k in ["from", "notification", "message_type", "google.x", "gcm.n.e"] {
            let mut n = notification();
            n.custom_data.insert(k.into(), json!("v"));
            let e = prepare(&n).unwrap_err();
            assert_eq!(e.status, 400, "{k}");
        }
    }

    #[test]
    fn the_4k_limit_counts_data_and_notification() {
        let mut n = notification();
        n.silent = true;
        // data: notificationId (14 + 26) + category (8 + 4) + "pad" (3) + value
        let fixed = 14 + 26 + 8 + 4 + 3;
        n.custom_data.insert("pad".into(), json!("x".repeat(4096 - fixed)));
        assert!(prepare(&n).is_ok());
        n.custom_data.insert("pad".into(), json!("x".repeat(4097 - fixed)));
        let e = prepare(&n).unwrap_err();
        assert_eq!(e.status, 413);
        assert_eq!(e.message, "payload of 4097 bytes exceeds FCM's 4096-byte limit");
        // With a notification, it counts too.
        n.silent = false;
        n.custom_data.insert("pad".into(), json!("x".repeat(4096 - fixed)));
        assert_eq!(prepare(&n).unwrap_err().status, 413);
        // The token does not.
        n.silent = true;
        let p = prepare(&n).unwrap();
        assert!(p.request("p", &"t".repeat(5000), None).is_ok());
    }

    #[test]
    fn the_request() {
        let p = prepare(&notification()).unwrap();
        let bearer = Bearer::new("Bearer", "ya29.tok").unwrap();
        let r = p.request("my-proj", "a\"b\\c", Some(&bearer)).unwrap();
        assert_eq!(r.path, "/v1/projects/my-proj/messages:send");
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["message"]["token"], "a\"b\\c");
        let get = |name: http::HeaderName| r.headers.get(name).cloned();
        assert_eq!(get(http::header::AUTHORIZATION).unwrap(), "Bearer ya29.tok");
        assert!(get(http::header::AUTHORIZATION).unwrap().is_sensitive());
        assert!(get(http::header::CONTENT_TYPE).unwrap().to_str().unwrap().starts_with("application/json"));
        assert_eq!(Bearer::new("Bearer", "bad\nbearer").unwrap_err().status, 400);
    }

    fn google(status: u16, google_status: &str, code: Option<&str>, message: &str) -> Vec<u8> {
        let mut details = vec![];
        if let Some(c) = code {
            details.push(json!({"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": c}));
        }
        json!({"error": {"code": status, "message": message, "status": google_status, "details": details}})
            .to_string()
            .into_bytes()
    }

    fn answer(status: u16, retry: Option<&str>, body: &[u8]) -> Outcome {
        let mut h = http::HeaderMap::new();
        if let Some(r) = retry {
            h.insert(http::header::RETRY_AFTER, r.parse().unwrap());
        }
        parse_response(status, &h, body)
    }

    #[test]
    fn answers() {
        assert_eq!(
            answer(200, None, br#"{"name":"projects/p/messages/0:123"}"#),
            Outcome::Sent { id: Some("projects/p/messages/0:123".into()) }
        );
        assert_eq!(answer(200, None, b""), Outcome::Sent { id: None });
        assert_eq!(
            answer(404, None, &google(404, "NOT_FOUND", Some("UNREGISTERED"), "Requested entity was not found.")),
            Outcome::Dead { status: 404, reason: "UNREGISTERED".into() }
        );
        let bad_token = json!({"error": {"code": 400, "message": "The registration token is not a valid FCM registration token", "status": "INVALID_ARGUMENT", "details": [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"},
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "message.token", "description": "Invalid registration token"}]}
        ]}});
        assert!(matches!(answer(400, None, bad_token.to_string().as_bytes()), Outcome::Dead { status: 400, .. }));
        assert!(matches!(
            answer(401, None, &google(401, "UNAUTHENTICATED", None, "Request had invalid authentication credentials.")),
            Outcome::AuthRefused { status: 401, .. }
        ));
        assert!(matches!(answer(401, None, b""), Outcome::AuthRefused { status: 401, .. }));
        assert_eq!(
            answer(401, None, &google(401, "UNAUTHENTICATED", Some("THIRD_PARTY_AUTH_ERROR"), "APNs")),
            Outcome::Failed { status: 401, reason: "THIRD_PARTY_AUTH_ERROR: APNs".into() }
        );
        assert_eq!(
            answer(429, Some("30"), &google(429, "RESOURCE_EXHAUSTED", Some("QUOTA_EXCEEDED"), "Quota")),
            Outcome::Retry {
                status: 429,
                reason: "QUOTA_EXCEEDED: Quota".into(),
                after: Some(Duration::from_secs(30))
            }
        );
        for (status, s) in [(503, "UNAVAILABLE"), (500, "INTERNAL")] {
            assert_eq!(
                answer(status, Some("2"), &google(status, s, Some(s), "x")),
                Outcome::Retry { status, reason: format!("{s}: x"), after: Some(Duration::from_secs(2)) }
            );
        }
        assert_eq!(
            answer(400, None, &google(400, "INVALID_ARGUMENT", Some("INVALID_ARGUMENT"), "Message is too big")),
            Outcome::Failed { status: 400, reason: "INVALID_ARGUMENT: Message is too big".into() }
        );
        assert!(matches!(
            answer(403, None, &google(403, "PERMISSION_DENIED", Some("SENDER_ID_MISMATCH"), "SenderId mismatch")),
            Outcome::Failed { status: 403, .. }
        ));
        assert_eq!(
            answer(502, None, b"<html>Bad Gateway</html>"),
            Outcome::Retry { status: 502, reason: "<html>Bad Gateway</html>".into(), after: None }
        );
        assert_eq!(answer(404, None, b""), Outcome::Failed { status: 404, reason: "Not Found".into() });
    }

    // A 2048-bit RSA key in PKCS#8 PEM, made once for these tests (ring cannot
    // generate RSA keys; this one exists only here).
    const TEST_RSA_PEM: &str = include_str!("testdata/rsa2048.pem");

    fn account(token_uri: &str) -> ServiceAccount {
        ServiceAccount::from_json(
            json!({
                "type": "service_account",
                "project_id": "proj-1",
                "private_key_id": "abc123",
                "private_key": TEST_RSA_PEM,
                "client_email": "sa@proj-1.iam.gserviceaccount.com",
                "token_uri": token_uri,
                "universe_domain": "googleapis.com",
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn service_accounts_are_read() {
        let sa = ServiceAccount::from_json(
            json!({"project_id": "p", "private_key": "k", "client_email": "e"}).to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(sa.token_uri, DEFAULT_TOKEN_URI);
        assert_eq!(sa.private_key_id, None);
        assert!(!format!("{sa:?}").contains("private_key:"));
        assert!(ServiceAccount::from_json(b"{}").is_err());
        assert!(ServiceAccount::from_json(b"nope").is_err());
        let empty = json!({"project_id": " ", "private_key": "k", "client_email": "e"}).to_string();
        assert!(ServiceAccount::from_json(empty.as_bytes()).unwrap_err().contains("project_id"));
        // The key is read on its own: at save time and when FcmAuth is made.
        assert!(sa.signing_key().is_err());
        assert!(account("https://oauth2.example/token").signing_key().is_ok());
    }

    #[tokio::test]
    async fn bad_keys_are_refused() {
        let mut sa = account("http://127.0.0.1:1/token");
        sa.private_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".into();
        assert!(Assertion::new(sa).is_err());
    }

    #[tokio::test]
    async fn the_assertion_is_an_rs256_jwt() {
        let auth = Assertion::new(account("https://oauth2.example/token")).unwrap();
        let jwt = auth.assertion(1_700_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let h: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        let c: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(h, json!({"alg": "RS256", "typ": "JWT", "kid": "abc123"}));
        assert_eq!(
            c,
            json!({
                "iss": "sa@proj-1.iam.gserviceaccount.com",
                "scope": "https://www.googleapis.com/auth/firebase.messaging",
                "aud": "https://oauth2.example/token",
                "iat": 1_700_000_000u64,
                "exp": 1_700_003_600u64,
            })
        );
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            ring::signature::KeyPair::public_key(&auth.key).as_ref().to_vec(),
        );
        public.verify(&jwt.as_bytes()[..jwt.rfind('.').unwrap()], &sig).unwrap();
    }

    #[tokio::test]
    async fn a_token_is_asked_for_with_a_signed_assertion() {
        use super::super::auth_http::test_server;
        let answer = r#"{"access_token":"ya29.one","expires_in":3599,"token_type":"Bearer"}"#;
        let server = test_server::start(vec![(200, answer.into())], Duration::ZERO).await;
        let auth = OAuth::new(Assertion::new(account(&server.url)).unwrap(), test_server::client());
        assert_eq!(auth.token().await.unwrap().token(), "ya29.one");
        let form = server.bodies.lock().unwrap()[0].clone();
        let form: std::collections::HashMap<String, String> =
            form_urlencoded::parse(form.as_bytes()).into_owned().collect();
        assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
        assert_eq!(form["assertion"].split('.').count(), 3);
    }

    #[tokio::test]
    async fn token_endpoint_errors_are_reported() {
        use super::super::auth_http::test_server;
        let server = test_server::start(
            vec![(400, r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.into())],
            Duration::ZERO,
        )
        .await;
        let auth = OAuth::new(Assertion::new(account(&server.url)).unwrap(), test_server::client());
        let e = auth.token().await.unwrap_err();
        assert_eq!(e.reason, "the token endpoint answered 400 (invalid_grant)");
        assert!(!e.transient && e.status == 400, "{e:?}");
    }
}
