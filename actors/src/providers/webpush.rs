//! Web Push (RFC 8030) to browsers: each token is a subscription naming its
//! push service, each message is encrypted for the subscription (RFC 8291,
//! [`super::ece`]) and authorized with the app's VAPID key ([`super::vapid`]).
//!
//! A notification is formatted once ([`prepare`]) into the JSON plaintext a
//! service worker reads and the `TTL`, `Urgency` and `Topic` headers; each
//! request encrypts it anew (a fresh key and salt per message, as RFC 8291
//! requires) and goes to its subscription's origin, through a pool per
//! push-service origin ([`crate::transport::Route::PerOrigin`]).

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::ece::{self, EceError};
use super::subscription::Subscription;
use super::vapid::Vapid;
use super::{retry_after, AuthError, Authorizer, Backend, Bearer, BuildEnv, Built, FormatError, Notification, Outcome};
use super::{Priority, Provider, WireRequest};
use crate::credentials::AppCredentials;
use crate::transport::Route;

/// The longest push services keep a message: 28 days (FCM's limit), also the default.
pub const MAX_TTL_SECS: i64 = 2_419_200;

/// The most characters of a `Topic` (RFC 8030 §5.4), all of the base64url alphabet.
pub const MAX_TOPIC: usize = 32;

/// A notification formatted for Web Push: the plaintext and its headers.
#[derive(Clone, Debug)]
pub struct WebPushPayload {
    /// The JSON the service worker's `push` event reads (`event.data.json()`).
    pub plaintext: Bytes,
    /// `TTL`, `Urgency` and, with a collapse key, `Topic`: cloned per
    /// subscription, as an APNs payload's are per token.
    headers: http::HeaderMap,
}

/// Formats `n` for browsers: the plaintext `{"notificationId", "category",
/// "title", "body", "titleLocKey", "titleLocArgs", "bodyLocKey",
/// "bodyLocArgs", "icon", "sound", "silent", "data", "sender"}` (absent
/// members left out; a silent notification has no title nor body, and
/// `"silent": true`), and the headers: `TTL` (the time to live, at most and by
/// default 28 days), `Urgency` (`high`, `normal`, `low` from the priority) and
/// `Topic` (from the collapse key: as it is when it is at most 32 base64url
/// characters, else the first 32 characters of its SHA-256 in base64url, so
/// the same key always replaces the same message).
///
/// The plaintext must fit one 4096-byte `aes128gcm` record with its header
/// ([`ece::MAX_PLAINTEXT`] bytes): 413 otherwise, before anything is sent.
pub fn prepare(n: &Notification) -> Result<WebPushPayload, FormatError> {
    let mut m = Map::new();
    m.insert("notificationId".into(), json!(n.id));
    m.insert("category".into(), json!(n.category));
    if n.silent {
        m.insert("silent".into(), json!(true));
    } else {
        let texts = [
            ("title", &n.title),
            ("titleLocKey", &n.title_loc_key),
            ("body", &n.body),
            ("bodyLocKey", &n.body_loc_key),
        ];
        for (k, v) in texts {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        for (k, v) in [("titleLocArgs", &n.title_loc_args), ("bodyLocArgs", &n.body_loc_args)] {
            if !v.is_empty() {
                m.insert(k.into(), json!(v));
            }
        }
        for (k, v) in [("icon", &n.icon), ("sound", &n.sound)] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
    }
    if !n.custom_data.is_empty() {
        m.insert("data".into(), Value::Object(n.custom_data.clone()));
    }
    if let Some((tenant, user)) = &n.sender {
        m.insert("sender".into(), json!({ "tenantId": tenant, "userId": user }));
    }
    let plaintext = Value::Object(m).to_string();
    if plaintext.len() > ece::MAX_PLAINTEXT {
        return Err(too_large(EceError::TooLarge(plaintext.len())));
    }
    let ttl = n.time_to_live.unwrap_or(MAX_TTL_SECS).clamp(0, MAX_TTL_SECS);
    let urgency = match n.priority {
        Priority::High => "high",
        Priority::Normal => "normal",
        Priority::Low => "low",
    };
    let mut headers = http::HeaderMap::with_capacity(7);
    headers.insert(http::HeaderName::from_static("ttl"), http::HeaderValue::from(ttl));
    headers.insert(http::HeaderName::from_static("urgency"), http::HeaderValue::from_static(urgency));
    if let Some(key) = &n.collapse_key {
        headers.insert(http::HeaderName::from_static("topic"), super::header_value("collapseKey", &topic(key))?);
    }
    Ok(WebPushPayload { plaintext: Bytes::from(plaintext), headers })
}

fn too_large(e: EceError) -> FormatError {
    FormatError { status: 413, message: e.to_string() }
}

/// The `Topic` of a collapse key (see [`prepare`]).
pub fn topic(key: &str) -> String {
    let fits = |k: &str| {
        !k.is_empty() && k.len() <= MAX_TOPIC && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if fits(key) {
        return key.to_owned();
    }
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    let mut t = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
    t.truncate(MAX_TOPIC);
    t
}

/// What a push service's answer means (RFC 8030 §5, §8.2): 2xx (201 Created)
/// sent, its `Location` the message id; 404 and 410 the subscription is gone
/// (dead, marked invalid); 429 and 5xx retried, after `Retry-After` when
/// given; 413 the message was too large; anything else (400, 401 and 403:
/// the VAPID authorization refused) a failure with the service's reason.
pub fn parse_response(status: u16, headers: &http::HeaderMap, body: &[u8]) -> Outcome {
    let reason = || super::reason(status, body, None, None);
    match status {
        200..=299 => Outcome::Sent {
            id: headers.get(http::header::LOCATION).and_then(|v| v.to_str().ok()).map(|l| super::excerpt(l.as_bytes())),
        },
        404 | 410 => Outcome::Dead { status, reason: reason() },
        429 | 500..=599 => Outcome::Retry { status, reason: reason(), after: retry_after(headers) },
        _ => Outcome::Failed { status, reason: reason() },
    }
}

/// Web Push requests carry their own authorization ([`Vapid`], per origin):
/// there is no shared bearer to fetch or renew.
pub struct PerRequest;

impl Authorizer for PerRequest {
    async fn authorize(&self) -> Result<Option<Bearer>, AuthError> {
        Ok(None)
    }

    fn refused(&self, _: Option<&Bearer>) {}
}

/// The Web Push provider of one app: its VAPID credentials.
pub struct WebPush {
    vapid: Vapid,
}

impl Provider for WebPush {
    const BACKEND: Backend = Backend::WebPush;
    type Payload = WebPushPayload;
    type Auth = PerRequest;

    fn build(creds: &AppCredentials, env: &BuildEnv<'_>) -> Option<Result<Built<WebPush>, String>> {
        let c = creds.web_push.as_ref()?;
        let route = Route::PerOrigin { tls: env.tls.clone(), public_only: !env.settings.allow_private_endpoints };
        Some(Vapid::new(&c.private_key, &c.subject).map(|vapid| (WebPush { vapid }, PerRequest, route)))
    }

    fn prepare(&self, n: &Notification) -> Result<WebPushPayload, FormatError> {
        prepare(n)
    }

    fn request(&self, p: &WebPushPayload, tokens: &[&str], _: Option<&Bearer>) -> Result<WireRequest, FormatError> {
        let bad = |message: String| FormatError { status: 400, message };
        let sub = Subscription::parse(super::only(tokens)?)
            .map_err(|e| bad(format!("the subscription's {}: {}", e.field, e.message)))?;
        let body = ece::encrypt(&sub.p256dh, &sub.auth, &p.plaintext).map_err(|e| match e {
            EceError::TooLarge(_) => too_large(e),
            EceError::Keys(_) => bad(e.to_string()),
            EceError::Crypto => FormatError { status: 500, message: e.to_string() },
        })?;
        let vapid = self
            .vapid
            .authorization(&sub.origin(), super::unix_now())
            .map_err(|e| FormatError { status: 500, message: format!("VAPID: {e}") })?;
        let mut headers = p.headers.clone();
        headers.insert(http::header::CONTENT_ENCODING, http::HeaderValue::from_static("aes128gcm"));
        headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/octet-stream"));
        let mut authorization = super::header_value("the VAPID authorization", &vapid)?;
        authorization.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, authorization);
        Ok(WireRequest { authority: sub.authority().cloned(), path: sub.path(), headers, body: Bytes::from(body) })
    }

    fn read(status: u16, headers: &http::HeaderMap, body: &[u8], tokens: &[&str]) -> Vec<Outcome> {
        super::for_each(parse_response(status, headers, body), tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{sample, sample_full};

    fn plaintext(n: &Notification) -> Value {
        serde_json::from_slice(&prepare(n).unwrap().plaintext).unwrap()
    }

    fn header(p: &WebPushPayload, name: &str) -> Option<String> {
        p.headers.get(name).map(|v| v.to_str().unwrap().to_owned())
    }

    #[test]
    fn the_plaintext_and_headers() {
        let n = sample_full();
        assert_eq!(
            plaintext(&n),
            json!({"notificationId": n.id, "category": "chat", "title": "Hello", "titleLocKey": "T", "titleLocArgs": ["x"],
                   "body": "World", "bodyLocKey": "B", "bodyLocArgs": ["y", "z"], "icon": "ic", "sound": "default",
                   "data": {"s": "text", "n": 42, "b": true, "o": {"a": [1, "2"]}, "z": null},
                   "sender": {"tenantId": "acme", "userId": "u\"1"}})
        );
        let p = prepare(&n).unwrap();
        assert_eq!(header(&p, "ttl").as_deref(), Some("600"));
        assert_eq!(header(&p, "urgency").as_deref(), Some("high"));
        assert_eq!(header(&p, "topic").as_deref(), Some("7"));
        let silent = Notification { silent: true, priority: Priority::Low, time_to_live: Some(-5), ..sample() };
        assert_eq!(plaintext(&silent), json!({"notificationId": silent.id, "category": "chat", "silent": true}));
        let p = prepare(&silent).unwrap();
        assert_eq!((header(&p, "ttl").as_deref(), header(&p, "urgency").as_deref()), (Some("0"), Some("low")));
        assert_eq!(header(&p, "topic"), None);
        let p = prepare(&Notification { priority: Priority::Normal, time_to_live: Some(1 << 40), ..sample() }).unwrap();
        assert_eq!(header(&p, "ttl").as_deref(), Some("2419200"));
        assert_eq!(header(&p, "urgency").as_deref(), Some("normal"));
    }

    #[test]
    fn topics_fit_rfc8030() {
        assert_eq!(topic("order-42_x"), "order-42_x");
        for key in ["a key with spaces", &"x".repeat(33), "é"] {
            let t = topic(key);
            assert_eq!(t.len(), 32, "{key}");
            assert_eq!(t, topic(key), "stable");
            assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        }
        assert_ne!(topic("a key"), topic("another key"));
    }

    #[test]
    fn too_large_is_refused_before_sending() {
        let mut n = sample();
        n.body = Some("x".repeat(ece::MAX_PLAINTEXT));
        let e = prepare(&n).unwrap_err();
        assert_eq!(e.status, 413);
        assert!(e.message.contains("3993-byte limit"), "{}", e.message);
    }

    #[test]
    fn answers() {
        let h = http::HeaderMap::new();
        let mut loc = http::HeaderMap::new();
        loc.insert(http::header::LOCATION, http::HeaderValue::from_static("https://push.example/m/1"));
        assert_eq!(parse_response(201, &loc, b""), Outcome::Sent { id: Some("https://push.example/m/1".into()) });
        assert!(matches!(parse_response(410, &h, b""), Outcome::Dead { status: 410, .. }));
        assert!(matches!(parse_response(404, &h, b"gone"), Outcome::Dead { status: 404, .. }));
        assert!(matches!(parse_response(429, &h, b""), Outcome::Retry { status: 429, .. }));
        assert!(matches!(parse_response(503, &h, b""), Outcome::Retry { status: 503, .. }));
        assert_eq!(parse_response(413, &h, b""), Outcome::Failed { status: 413, reason: "Payload Too Large".into() });
        assert!(matches!(parse_response(403, &h, b"bad jwt"), Outcome::Failed { status: 403, .. }));
    }
}
