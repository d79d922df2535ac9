//! The APNs simulator: `POST /3/device/{token}`, as described in Apple's "Sending notification
//! requests to APNs" and "Handling notification responses from APNs".
//!
//! This is the hot path of the load benchmark, so the common case avoids work: the provider
//! token (JWT) is verified once per connection and distinct bearer string and then found in a
//! small per-connection cache; the payload is checked by a streaming JSON visitor that
//! allocates nothing; counting is atomic.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderName, HeaderValue, Method, Response, StatusCode};
use http_body_util::Full;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::faults::{ActiveFaults, FaultEndpoint, FiredFault};
use crate::jwt::Jwt;
use crate::server::{ConnCtx, Reply};
use crate::state::SimState;
use crate::util::{bearer_token, is_uuid, json_response, now_ms, now_secs, uuid_v4, Body};
use crate::Provider;

static APNS_ID: HeaderName = HeaderName::from_static("apns-id");
static APNS_TOPIC: HeaderName = HeaderName::from_static("apns-topic");
static APNS_PUSH_TYPE: HeaderName = HeaderName::from_static("apns-push-type");
static APNS_PRIORITY: HeaderName = HeaderName::from_static("apns-priority");
static APNS_EXPIRATION: HeaderName = HeaderName::from_static("apns-expiration");
static APNS_COLLAPSE_ID: HeaderName = HeaderName::from_static("apns-collapse-id");

/// Maximum payload of every push type but VoIP.
const MAX_PAYLOAD: usize = 4096;
/// Maximum payload of VoIP notifications.
const MAX_VOIP_PAYLOAD: usize = 5120;
/// Provider tokens older than this are expired.
const TOKEN_LIFETIME_SECS: u64 = 3600;
/// Apple refuses a new provider token less than this long after the previous one.
const MIN_TOKEN_REFRESH_SECS: u64 = 20 * 60;
/// Tolerated clock skew for `iat` in the future.
const CLOCK_SKEW_SECS: u64 = 300;
/// Distinct bearer strings remembered per connection.
const AUTH_CACHE_SIZE: usize = 4;

const PUSH_TYPES: &[&str] = &[
    "alert",
    "background",
    "voip",
    "complication",
    "fileprovider",
    "mdm",
    "location",
    "liveactivity",
    "pushtotalk",
    "widgets",
    "controls",
];

/// Topic suffixes a bundle's credentials may also push to.
const TOPIC_SUFFIXES: &[&str] = &[
    ".voip",
    ".complication",
    ".pushkit.fileprovider",
    ".push-type.liveactivity",
    ".voip-ptt",
    ".location-query",
    ".push-type.widgets",
    ".push-type.controls",
];

/// The provider tokens verified on one connection.
#[derive(Default)]
pub(crate) struct AuthCache {
    entries: Mutex<Vec<CachedToken>>,
}

struct CachedToken {
    bearer: HeaderValue,
    bundle: Arc<str>,
    iat: u64,
}

/// An APNs error: status and `reason`.
#[derive(Debug, Clone, Copy)]
struct ApnsError(StatusCode, &'static str);

const INVALID_TOKEN: ApnsError = ApnsError(StatusCode::FORBIDDEN, "InvalidProviderToken");
const EXPIRED_TOKEN: ApnsError = ApnsError(StatusCode::FORBIDDEN, "ExpiredProviderToken");
const TOO_MANY_UPDATES: ApnsError = ApnsError(StatusCode::TOO_MANY_REQUESTS, "TooManyProviderTokenUpdates");

#[derive(Deserialize)]
struct Claims {
    iss: String,
    iat: u64,
}

/// Handles one request to the APNs simulator.
pub(crate) fn handle(
    state: &SimState,
    ctx: &ConnCtx,
    parts: &http::request::Parts,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    let counters = state.counters(Provider::Apns);
    // Every answer carries apns-id: the client's if valid, else a new one.
    let given_id = parts.headers.get(&APNS_ID);
    let apns_id = match given_id {
        Some(v) if is_uuid(v.as_bytes()) => v.clone(),
        _ => uuid_v4(),
    };
    match check(state, ctx, parts, body, faults) {
        Ok(token) => {
            counters.accept(token);
            let mut resp = Response::new(Full::new(Bytes::new()));
            resp.headers_mut().insert(APNS_ID.clone(), apns_id);
            Reply::ok(resp)
        }
        Err(Rejection::Error(ApnsError(status, reason))) => {
            counters.reject(reason);
            Reply { response: error_response(status, reason, apns_id, None), reason: Some(Cow::Borrowed(reason)) }
        }
        Err(Rejection::Unregistered) => {
            counters.reject("Unregistered");
            Reply {
                response: error_response(StatusCode::GONE, "Unregistered", apns_id, Some(now_ms())),
                reason: Some(Cow::Borrowed("Unregistered")),
            }
        }
        Err(Rejection::Fault(f)) => {
            let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let reason: Cow<'static, str> = match f.reason.clone() {
                Some(r) => Cow::Owned(r),
                None => Cow::Borrowed(fault_reason(status)),
            };
            counters.reject(&reason);
            let timestamp = (status == StatusCode::GONE).then(now_ms);
            let resp = error_response(status, &reason, apns_id, timestamp);
            let resp = f.apply(resp);
            Reply { response: resp, reason: Some(reason) }
        }
    }
}

enum Rejection {
    Error(ApnsError),
    Unregistered,
    Fault(FiredFault),
}

impl From<ApnsError> for Rejection {
    fn from(e: ApnsError) -> Self {
        Rejection::Error(e)
    }
}

fn bad(reason: &'static str) -> Rejection {
    Rejection::Error(ApnsError(StatusCode::BAD_REQUEST, reason))
}

/// Validates a request like APNs; returns the device token when it is accepted.
fn check<'a>(
    state: &SimState,
    ctx: &ConnCtx,
    parts: &'a http::request::Parts,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Result<&'a str, Rejection> {
    let Some(token) = parts.uri.path().strip_prefix("/3/device/") else {
        return Err(ApnsError(StatusCode::NOT_FOUND, "BadPath").into());
    };
    if parts.method != Method::POST {
        return Err(ApnsError(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed").into());
    }
    if token.is_empty() {
        return Err(bad("MissingDeviceToken"));
    }
    let headers = &parts.headers;

    // Authentication: a provider token, else the TLS client certificate.
    let (bundle, token_auth) = match headers.get(AUTHORIZATION) {
        Some(bearer) => (verify_bearer(state, ctx, bearer)?, true),
        None => match &ctx.client_bundle {
            Some(bundle) => (bundle.clone(), false),
            None => return Err(ApnsError(StatusCode::FORBIDDEN, "MissingProviderToken").into()),
        },
    };

    let topic = match headers.get(&APNS_TOPIC) {
        Some(t) => t.to_str().map_err(|_| bad("BadTopic"))?,
        // With a certificate, APNs uses the certificate's topic by default.
        None if !token_auth => &*bundle,
        None => return Err(bad("MissingTopic")),
    };
    if !topic_allowed(&bundle, topic) {
        return Err(bad("TopicDisallowed"));
    }

    let mut max_payload = MAX_PAYLOAD;
    if let Some(push_type) = headers.get(&APNS_PUSH_TYPE) {
        let push_type = push_type.as_bytes();
        if !PUSH_TYPES.iter().any(|t| t.as_bytes() == push_type) {
            return Err(bad("InvalidPushType"));
        }
        if push_type == b"voip" {
            max_payload = MAX_VOIP_PAYLOAD;
        }
    }
    if let Some(p) = headers.get(&APNS_PRIORITY) {
        if !matches!(p.as_bytes(), b"10" | b"5" | b"1") {
            return Err(bad("BadPriority"));
        }
    }
    if let Some(e) = headers.get(&APNS_EXPIRATION) {
        let ok = e.to_str().ok().is_some_and(|s| s.trim().parse::<u64>().is_ok());
        if !ok {
            return Err(bad("BadExpirationDate"));
        }
    }
    if let Some(c) = headers.get(&APNS_COLLAPSE_ID) {
        if c.len() > 64 {
            return Err(bad("BadCollapseId"));
        }
    }
    if let Some(id) = headers.get(&APNS_ID) {
        if !is_uuid(id.as_bytes()) {
            return Err(bad("BadMessageId"));
        }
    }

    if token.len() != 64 || !token.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad("BadDeviceToken"));
    }

    let Some(body) = body else {
        return Err(ApnsError(StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge").into());
    };
    if body.is_empty() {
        return Err(bad("PayloadEmpty"));
    }
    if body.len() > max_payload {
        return Err(ApnsError(StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge").into());
    }
    if serde_json::from_slice::<Payload>(body).is_err() {
        return Err(bad("BadRequest"));
    }

    if let Some(f) = faults {
        if f.is_dead(token) {
            return Err(Rejection::Unregistered);
        }
        if let Some(fired) = f.status_for(FaultEndpoint::Send, std::iter::once(token)) {
            return Err(Rejection::Fault(fired));
        }
    }
    if token.len() >= 4 && token[..4].eq_ignore_ascii_case("dead") {
        return Err(Rejection::Unregistered);
    }
    Ok(token)
}

/// Whether credentials for `bundle` may push to `topic`.
fn topic_allowed(bundle: &str, topic: &str) -> bool {
    match topic.strip_prefix(bundle) {
        Some("") => true,
        Some(suffix) => TOPIC_SUFFIXES.contains(&suffix),
        None => false,
    }
}

/// Verifies `authorization: bearer <JWT>`, through the connection's cache.
fn verify_bearer(state: &SimState, ctx: &ConnCtx, bearer: &HeaderValue) -> Result<Arc<str>, ApnsError> {
    let now = now_secs();
    {
        let cache = ctx.auth_cache.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(hit) = cache.iter().find(|e| e.bearer == bearer) {
            if now > hit.iat.saturating_add(TOKEN_LIFETIME_SECS) {
                return Err(EXPIRED_TOKEN);
            }
            return Ok(hit.bundle.clone());
        }
    }

    let token = bearer_token(bearer.as_bytes()).ok_or(INVALID_TOKEN)?;
    let token = std::str::from_utf8(token).map_err(|_| INVALID_TOKEN)?;
    let jwt = Jwt::parse(token).map_err(|_| INVALID_TOKEN)?;
    let kid = jwt.header.kid.as_deref().ok_or(INVALID_TOKEN)?;
    let key = state.registry.apns_key(kid).ok_or(INVALID_TOKEN)?;
    state.counters(Provider::Apns).jwt_verifications.fetch_add(1, Ordering::Relaxed);
    if !jwt.verify_es256(&key.point) {
        return Err(INVALID_TOKEN);
    }
    let claims: Claims = jwt.claims().map_err(|_| INVALID_TOKEN)?;
    if claims.iss != key.team_id {
        return Err(INVALID_TOKEN);
    }
    // `iat` is the peer's: saturate, so a far-future one is refused below, not overflowed.
    if now > claims.iat.saturating_add(TOKEN_LIFETIME_SECS) {
        return Err(EXPIRED_TOKEN);
    }
    if claims.iat > now.saturating_add(CLOCK_SKEW_SECS) {
        return Err(INVALID_TOKEN);
    }
    {
        // Apple: a new token less than 20 minutes after the last one is refused. Older
        // tokens (still within their hour) stay usable, as other connections may hold them.
        let mut last = state.apns_last_iat.lock().unwrap_or_else(|p| p.into_inner());
        match last.get(kid).copied() {
            Some(prev) if claims.iat > prev && claims.iat < prev.saturating_add(MIN_TOKEN_REFRESH_SECS) => {
                return Err(TOO_MANY_UPDATES);
            }
            Some(prev) if claims.iat <= prev => {}
            _ => {
                last.insert(kid.to_owned(), claims.iat);
            }
        }
    }
    let mut cache = ctx.auth_cache.entries.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= AUTH_CACHE_SIZE {
        cache.remove(0);
    }
    cache.push(CachedToken { bearer: bearer.clone(), bundle: key.bundle_id.clone(), iat: claims.iat });
    Ok(key.bundle_id.clone())
}

/// The reason APNs gives for a status injected by a fault.
fn fault_reason(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "BadDeviceToken",
        403 => "InvalidProviderToken",
        404 => "BadPath",
        405 => "MethodNotAllowed",
        410 => "Unregistered",
        413 => "PayloadTooLarge",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        _ => "InternalServerError",
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

fn error_response(status: StatusCode, reason: &str, apns_id: HeaderValue, timestamp: Option<u64>) -> Response<Body> {
    let body = match timestamp {
        Some(ts) => format!(r#"{{"reason":{},"timestamp":{ts}}}"#, json_str(reason)),
        None => format!(r#"{{"reason":{}}}"#, json_str(reason)),
    };
    let mut resp = json_response(status, body);
    resp.headers_mut().insert(APNS_ID.clone(), apns_id);
    resp
}

/// A payload: a JSON object with an `aps` dictionary. Checked without building a tree.
struct Payload;

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PayloadVisitor)
    }
}

struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with an aps dictionary")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Payload, A::Error> {
        let mut has_aps = false;
        while let Some(is_aps) = map.next_key_seed(IsAps)? {
            if is_aps {
                map.next_value::<Dictionary>()?;
                has_aps = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if has_aps {
            Ok(Payload)
        } else {
            Err(de::Error::missing_field("aps"))
        }
    }
}

/// A map key, compared with "aps" without allocating.
struct IsAps;

impl<'de> DeserializeSeed<'de> for IsAps {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(IsApsVisitor)
    }
}

struct IsApsVisitor;

impl Visitor<'_> for IsApsVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == "aps")
    }
}

/// Any JSON object, ignored.
struct Dictionary;

impl<'de> Deserialize<'de> for Dictionary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(DictionaryVisitor)
    }
}

struct DictionaryVisitor;

impl<'de> Visitor<'de> for DictionaryVisitor {
    type Value = Dictionary;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Dictionary, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Dictionary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_shapes() {
        let ok = |s: &str| serde_json::from_str::<Payload>(s).is_ok();
        assert!(ok(r#"{"aps":{"alert":"hi"}}"#));
        assert!(ok(r#"{"x":[1,{"a":2}],"aps":{}}"#));
        assert!(!ok(r#"{"aps":"hi"}"#));
        assert!(!ok(r#"{"x":1}"#));
        assert!(!ok(r#"[1]"#));
        assert!(!ok(r#"{"aps":{}"#));
        assert!(!ok(r#"{"aps":{}} x"#));
    }

    #[test]
    fn topics() {
        assert!(topic_allowed("com.a", "com.a"));
        assert!(topic_allowed("com.a", "com.a.voip"));
        assert!(!topic_allowed("com.a", "com.ab"));
        assert!(!topic_allowed("com.a", "com.b"));
    }
}
