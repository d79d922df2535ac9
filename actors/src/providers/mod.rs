//! Provider-neutral notifications and the per-provider wire formats.
//!
//! A send builds one [`Notification`]; each provider is one [`Provider`]
//! implementation ([`apns`], [`fcm`], [`hms`], [`webpush`]): it turns the notification into
//! its payload once per app, authorizes requests, builds the request for one
//! or many tokens, and reads the answer into one [`Outcome`] per token. The one
//! channel and attempt loop all providers share (pool, retries, `Retry-After`,
//! auth renewal, dead tokens) is [`crate::delivery`]'s; the transport
//! (connections, streams) lives in `pool`.

use bytes::Bytes;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

mod android;
pub mod apns;
pub mod auth_http;
pub mod ece;
pub mod fcm;
pub mod hms;
pub mod subscription;
pub mod vapid;
pub mod webpush;

/// Which backend a token is delivered through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Apple Push Notification service: iOS tokens (stored `APN`, `APNS`).
    Apns,
    /// Firebase Cloud Messaging, HTTP v1 API (stored `FCM`, `FCMF`).
    Fcm,
    /// Huawei Push Kit: devices without Google services (stored `HPK`).
    Hms,
    /// Web Push (RFC 8030): browsers' push services, a subscription per token (stored `WEB`).
    WebPush,
}

impl Backend {
    /// The metrics label and the `provider` of per-client results.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Apns => "apns",
            Backend::Fcm => "fcm",
            Backend::Hms => "hms",
            Backend::WebPush => "webpush",
        }
    }

    /// The provider's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Apns => "APNs",
            Backend::Fcm => "FCM",
            Backend::Hms => "HMS",
            Backend::WebPush => "Web Push",
        }
    }
}

/// What a provider's channel is built with besides the app's credentials.
pub struct BuildEnv<'a> {
    /// Endpoints, TLS trust, pool limits and the endpoint policy of the engine.
    pub settings: &'a crate::settings::PushSettings,
    /// TLS of provider connections (the web PKI and the configured extra CAs).
    pub tls: &'a Arc<rustls::ClientConfig>,
    /// The OAuth client, behind the endpoint guard.
    pub auth_http: &'a auth_http::AuthHttp,
    /// Where the APNs JWT is saved, so a restart reuses it instead of minting new ones.
    pub store: &'a herald_storage::Store,
    /// The tenant whose app the channel is built for: keys what is saved of it.
    pub tenant: &'a str,
    /// The app the channel is built for: with `tenant`, the key of its saved JWT.
    pub app: &'a str,
}

/// A refused or failed authorization, as the send result reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthError {
    /// The HTTP status the client's result reports (412 refused credentials, 503 no answer).
    pub status: u16,
    /// Why, for the client's result message.
    pub reason: String,
    /// Worth another attempt (no answer, 429, 5xx), or not (the endpoint
    /// refused the credentials, or the guard refused the endpoint).
    pub transient: bool,
}

impl AuthError {
    /// The outcome of a request that could not be authorized.
    pub fn outcome(self, provider: Backend) -> Outcome {
        let reason = format!("{} auth: {}", provider.name(), self.reason);
        match self.transient {
            true => Outcome::Retry { status: self.status, reason, after: None },
            false => Outcome::Failed { status: self.status, reason },
        }
    }
}

/// What [`Provider::build`] makes of an app's credentials.
pub type Built<P> = (P, <P as Provider>::Auth, crate::transport::Route);

/// The credentials of a provider's requests.
pub trait Authorizer: Send + Sync {
    /// The credential of the next request: an access token or JWT, or `None`
    /// when the connection itself authenticates (APNs certificates).
    fn authorize(&self) -> impl Future<Output = Result<Option<Bearer>, AuthError>> + Send;

    /// The provider refused `bearer` ([`Outcome::AuthRefused`]): let the next
    /// [`Authorizer::authorize`] renew it, unless another send already did.
    fn refused(&self, bearer: Option<&Bearer>);
}

/// A credential in force (an APNs provider token, an OAuth access token) with
/// its `Authorization` header, built once when the credential is issued: every
/// request of its life clones the header (a reference count) instead of
/// formatting and checking it again. The header is marked sensitive, so it never
/// shows in logs or HPACK's dynamic table.
#[derive(Clone)]
pub struct Bearer {
    token: Arc<str>,
    header: http::HeaderValue,
}

impl Bearer {
    /// `Authorization: <scheme> <token>`; an error when the token holds
    /// characters a header cannot carry.
    pub fn new(scheme: &str, token: &str) -> Result<Bearer, FormatError> {
        let mut header = header_value("the provider auth token", &format!("{scheme} {token}"))?;
        header.set_sensitive(true);
        Ok(Bearer { token: token.into(), header })
    }

    /// The credential itself (the JWT or access token).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The `Authorization` header value carrying it.
    pub fn header(&self) -> &http::HeaderValue {
        &self.header
    }
}

/// Never the credential itself.
impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(..)")
    }
}

/// One outcome of a provider taking one token per request, for `tokens`.
pub(crate) fn for_each(outcome: Outcome, tokens: &[&str]) -> Vec<Outcome> {
    vec![outcome; tokens.len()]
}

/// One push provider. Its channel (this, its [`Authorizer`] and a connection
/// pool, in [`crate::delivery`]) sends each notification's payload, prepared
/// once per app, in requests of up to [`Provider::MAX_TOKENS`] tokens; every
/// attempt of the one attempt loop authorizes, builds the request and reads
/// the answer through these methods. A new provider is one file implementing
/// this trait, plus its [`Backend`] and its slot in `delivery::AppChannels`.
pub trait Provider: Sized + Send + Sync + 'static {
    /// Which backend this is: the tokens it takes and its metrics label.
    const BACKEND: Backend;
    /// The most tokens one request carries (1: a request per token).
    const MAX_TOKENS: usize = 1;
    /// A notification formatted for this provider, shared by all its tokens.
    type Payload: Send + Sync + 'static;
    /// Its request credentials.
    type Auth: Authorizer;

    /// The provider, what authorizes its requests, and where its pool connects,
    /// from the app's credentials; `None` when it has none for this provider.
    fn build(creds: &crate::credentials::AppCredentials, env: &BuildEnv<'_>) -> Option<Result<Built<Self>, String>>;

    /// Formats `n` once for every token of the app (size and field checks included).
    fn prepare(&self, n: &Notification) -> Result<Self::Payload, FormatError>;

    /// The request carrying `payload` to `tokens` (1 to [`Provider::MAX_TOKENS`]).
    fn request(
        &self,
        payload: &Self::Payload,
        tokens: &[&str],
        bearer: Option<&Bearer>,
    ) -> Result<WireRequest, FormatError>;

    /// What an answer means for each of `tokens`, in order (one outcome each).
    fn read(status: u16, headers: &http::HeaderMap, body: &[u8], tokens: &[&str]) -> Vec<Outcome>;
}

/// How urgently the provider should deliver; silent pushes go at APNs priority 5
/// whatever this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Priority {
    /// Deliver now, waking the device: APNs 10, Android `HIGH`.
    High,
    /// The default: APNs 5 (power-considerate), Android `NORMAL`.
    #[default]
    Normal,
    /// APNs 1 (may be held back to save power); Android `NORMAL`, it has no lower.
    Low,
}

/// One notification as the providers need it, independent of any of them.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Notification {
    /// The ULID the send API answered with.
    pub id: String,
    /// `chat`, `payment` or `tms`.
    pub category: String,
    /// Alert title shown as is; `None` when there is none or it is localised.
    pub title: Option<String>,
    /// Key of a localised title in the app's strings (APNs `title-loc-key`).
    pub title_loc_key: Option<String>,
    /// Arguments substituted into the localised title.
    pub title_loc_args: Vec<String>,
    /// Alert text shown as is; `None` when there is none or it is localised.
    pub body: Option<String>,
    /// Key of a localised body in the app's strings (APNs `loc-key`).
    pub body_loc_key: Option<String>,
    /// Arguments substituted into the localised body.
    pub body_loc_args: Vec<String>,
    /// Sound to play (a file of the app, or `default`); `None` leaves it to the platform.
    pub sound: Option<String>,
    /// Android notification icon (a drawable of the app); APNs has none.
    pub icon: Option<String>,
    /// A newer notification with the same key replaces one not yet shown (APNs
    /// `apns-collapse-id`, at most 64 bytes; a cache group on Push Kit).
    pub collapse_key: Option<String>,
    /// Seconds the provider may keep an undelivered notification (capped per provider).
    pub time_to_live: Option<i64>,
    /// How urgently to deliver (see [`Priority`]).
    pub priority: Priority,
    /// A background push: no alert on APNs, a data-only message on Android.
    pub silent: bool,
    /// `payload.customData`: travels as data (string values on FCM).
    pub custom_data: serde_json::Map<String, serde_json::Value>,
    /// `sender` as (tenantId, userId): travels as data.
    pub sender: Option<(String, String)>,
}

/// A request ready for the wire: method POST, path (with query), headers, body.
#[derive(Clone, Debug)]
pub struct WireRequest {
    /// Where the request goes when the provider's requests go to many origins
    /// (Web Push: each subscription names its push service); `None`: the pool's target.
    pub authority: Option<http::uri::Authority>,
    /// Path and query (`/3/device/<token>`); the authority is the pool's target.
    pub path: String,
    /// The provider's headers, `authorization` included when there is a
    /// bearer; `content-length` is added when missing. A map, so that a
    /// payload's headers, built once, are cloned per request as they are.
    pub headers: http::HeaderMap,
    /// The JSON body, built from the prepared payload and the tokens.
    pub body: Bytes,
}

/// What a provider's answer means for one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted.
    Sent {
        /// The provider's message id, when it gave one.
        id: Option<String>,
    },
    /// The token is dead (unregistered, invalid): mark it invalid, never retry.
    Dead {
        /// The HTTP status the client's result reports.
        status: u16,
        /// The provider's reason, for the client's result message.
        reason: String,
    },
    /// Transient (429, 5xx): retry after the delay when given, else with backoff.
    Retry {
        /// The HTTP status reported if no retry succeeds.
        status: u16,
        /// The provider's reason, for the client's result message.
        reason: String,
        /// The provider's `Retry-After`, when it gave one.
        after: Option<Duration>,
    },
    /// Our auth token was refused as expired or revoked: refresh it, then retry.
    AuthRefused {
        /// The HTTP status reported if the renewed token is refused too.
        status: u16,
        /// The provider's reason, for the client's result message.
        reason: String,
    },
    /// A permanent error for this notification (bad payload, topic, credentials).
    Failed {
        /// The HTTP status the client's result reports.
        status: u16,
        /// The provider's reason, for the client's result message.
        reason: String,
    },
}

/// A problem building a request, reported per client (e.g. the 4 KB limit).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FormatError {
    /// The HTTP status the error is reported with (413 for size, 400 otherwise).
    pub status: u16,
    /// Why, shown as the client's result message.
    pub message: String,
}

/// The largest payload APNs, FCM and HMS accept.
pub const MAX_PAYLOAD: usize = 4096;

/// The 413 of a payload over [`MAX_PAYLOAD`] as `provider` (`"APNs'"`) weighs it.
pub(crate) fn check_size(size: usize, provider: &str) -> Result<(), FormatError> {
    if size > MAX_PAYLOAD {
        return Err(FormatError {
            status: 413,
            message: format!("payload of {size} bytes exceeds {provider} {MAX_PAYLOAD}-byte limit"),
        });
    }
    Ok(())
}

/// Seconds since the Unix epoch, for JWT `iat` and APNs' absolute expirations.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The delay a `retry-after` header asks for: delta-seconds (fractions
/// allowed) or an HTTP date (IMF-fixdate, what RFC 9110 has senders write).
/// Bounded whatever the peer writes: a negative number or a past date is no
/// delay, and a number too large for a `Duration` (`1e20`) saturates; the
/// channel then caps it at `--max-retry-after-s`. `None` when absent or
/// unreadable (the caller backs off on its own).
pub fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let value = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?;
    retry_after_value(value, unix_now())
}

/// [`retry_after`] of a header value at `now` (Unix seconds).
pub fn retry_after_value(value: &str, now: u64) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        return match secs {
            s if s.is_nan() => None,
            s if s <= 0.0 => Some(Duration::ZERO),
            s => Some(Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)),
        };
    }
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let at = time::PrimitiveDateTime::parse(value, format).ok()?.assume_utc().unix_timestamp();
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    Some(Duration::from_secs(u64::try_from(at.saturating_sub(now)).unwrap_or(0)))
}

/// What a path segment keeps as is: RFC 3986's unreserved characters, `:` and `@`.
const PATH_SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b':').remove(b'@');

/// Appends `segment` to a URL path, percent-encoding everything else. Device
/// tokens and app ids come from clients and configuration; a `/`, `?` or
/// space in one must not change which route the provider sees (it then
/// answers "bad token", which is the truth). A token (hex, base64url) is one
/// plain run: checked by table and copied once, on every send of a broadcast.
pub(crate) fn push_path_segment(path: &mut String, segment: &str) {
    path.extend(percent_encoding::utf8_percent_encode(segment, PATH_SEGMENT));
}

/// A header value from text we were given, or a 400 naming the header.
pub(crate) fn header_value(name: &str, value: &str) -> Result<http::HeaderValue, FormatError> {
    http::HeaderValue::from_str(value).map_err(|_| FormatError {
        status: 400,
        message: format!("{name} contains characters not allowed in an HTTP header"),
    })
}

/// The headers of an OAuth-authenticated JSON POST (FCM, HMS).
pub(crate) fn json_bearer_headers(bearer: Option<&Bearer>) -> http::HeaderMap {
    let mut headers = http::HeaderMap::with_capacity(3);
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json; charset=UTF-8"));
    if let Some(b) = bearer {
        headers.insert(http::header::AUTHORIZATION, b.header().clone());
    }
    headers
}

/// The one token of a provider that takes one per request.
pub(crate) fn only<'a>(tokens: &[&'a str]) -> Result<&'a str, FormatError> {
    match tokens {
        [token] => Ok(token),
        _ => Err(FormatError { status: 500, message: format!("one token per request, not {}", tokens.len()) }),
    }
}

/// The reason of an error answer: the provider's code and message as far as
/// it gave them; without either, the status's reason phrase for an empty
/// body, else an excerpt of the body.
pub(crate) fn reason(status: u16, body: &[u8], code: Option<&str>, message: Option<&str>) -> String {
    match (code, message) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c.to_owned(),
        (None, Some(m)) => m.to_owned(),
        (None, None) if body.is_empty() => http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("no reason given")
            .to_owned(),
        (None, None) => excerpt(body),
    }
}

/// A short, printable excerpt of a provider's answer body for error reasons.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A notification for the providers' tests.
#[cfg(test)]
pub(crate) fn sample() -> Notification {
    Notification {
        id: "01HZX5J3K9Q8W7E6R5T4Y3U2I1".into(),
        category: "chat".into(),
        title: Some("Hello".into()),
        body: Some("World".into()),
        priority: Priority::High,
        ..Default::default()
    }
}

/// [`sample`] with every field the Android providers map.
#[cfg(test)]
pub(crate) fn sample_full() -> Notification {
    use serde_json::{json, Value};
    let mut n = sample();
    n.title_loc_key = Some("T".into());
    n.title_loc_args = vec!["x".into()];
    n.body_loc_key = Some("B".into());
    n.body_loc_args = vec!["y".into(), "z".into()];
    n.sound = Some("default".into());
    n.icon = Some("ic".into());
    n.collapse_key = Some("7".into());
    n.time_to_live = Some(600);
    n.sender = Some(("acme".into(), "u\"1".into()));
    for (k, v) in
        [("s", json!("text")), ("n", json!(42)), ("b", json!(true)), ("o", json!({"a": [1, "2"]})), ("z", Value::Null)]
    {
        n.custom_data.insert(k.into(), v);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates_and_stays_bounded() {
        let mut h = http::HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        let at = |v: &str| retry_after_value(v, 1_445_412_400); // 2015-10-21 07:26:40 UTC
        assert_eq!(at("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(at(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(at("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::from_secs(80)));
        assert_eq!(at("Tue, 20 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO), "a past date");
        assert_eq!(at("Fri, 31 Dec 9999 23:59:59 GMT"), Some(Duration::from_secs(253_402_300_799 - 1_445_412_400)));
        // What a hostile peer may write: never a panic, never negative.
        assert_eq!(at("1e20"), Some(Duration::MAX));
        assert_eq!(at("1e15"), Some(Duration::from_secs(1_000_000_000_000_000)));
        assert_eq!(at("18446744073709551616"), Some(Duration::MAX));
        assert_eq!(at("1e400"), Some(Duration::MAX));
        assert_eq!(at("inf"), Some(Duration::MAX));
        assert_eq!(at("-5"), Some(Duration::ZERO));
        assert_eq!(at("-inf"), Some(Duration::ZERO));
        assert_eq!(at("NaN"), None);
        assert_eq!(at("soon"), None);
        assert_eq!(at(""), None);
        assert_eq!(retry_after_value("Wed, 21 Oct 2015 07:28:00 GMT", u64::MAX), Some(Duration::ZERO));
    }

    use proptest::prelude::*;

    fn body() -> impl Strategy<Value = Vec<u8>> {
        let field = "(code|msg|reason|error|sub_error|access_token|expires_in|requestId|name)";
        let value = r#"(-?[0-9]{0,22}(\.[0-9]{1,3})?(e[0-9]{1,3})?|"[a-z0-9_ ]{0,12}"|null|\[\]|\{\})"#;
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            proptest::string::string_regex(&format!(r#"\{{("{field}":{value},?){{0,4}}\}}"#))
                .unwrap()
                .prop_map(String::into_bytes),
        ]
    }

    proptest! {
        /// What the fuzz target `provider_answer` does, briefly, in every test run:
        /// no answer makes a reader panic, and what they read is bounded.
        #[test]
        fn answers_are_read_without_panics(
            status in 0u16..1000,
            retry in r"(-?[0-9]{0,25}(\.[0-9]{0,5})?(e-?[0-9]{1,4})?|inf|NaN|[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4,5} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT)",
            body in body(),
            n in 0usize..4,
        ) {
            let mut headers = http::HeaderMap::new();
            if let Ok(v) = http::HeaderValue::from_str(&retry) {
                headers.insert(http::header::RETRY_AFTER, v);
            }
            let tokens = ["a", "dead-b", "c"];
            let mut outcomes = vec![apns::parse_response(status, &headers, &body), fcm::parse_response(status, &headers, &body)];
            let hms = hms::parse_response(status, &headers, &body, &tokens[..n.min(3)]);
            prop_assert_eq!(hms.len(), n.min(3));
            outcomes.extend(hms);
            for o in outcomes {
                if let Outcome::Retry { after: Some(after), .. } = o {
                    prop_assert!(std::time::Instant::now().checked_add(after.min(Duration::from_secs(86_400))).is_some());
                }
            }
            match auth_http::read_token_answer(status, &body) {
                Ok((_, expires_in)) => prop_assert!((60..=86_400).contains(&expires_in)),
                Err(e) => prop_assert!(e.reason.len() <= 140, "{}", e.reason),
            }
        }
    }

    #[test]
    fn path_segments_are_escaped() {
        let mut p = String::from("/3/device/");
        push_path_segment(&mut p, "ab12/../x y?z");
        assert_eq!(p, "/3/device/ab12%2F..%2Fx%20y%3Fz");
        push_path_segment(&mut p, "-_.~:@é");
        assert_eq!(p, "/3/device/ab12%2F..%2Fx%20y%3Fz-_.~:@%C3%A9");
    }
}
