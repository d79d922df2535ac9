//! Provider-neutral notifications and the per-provider wire formats.
//!
//! A send builds one [`Notification`]; each provider module turns it into the
//! provider's request once per payload ([`apns`], [`fcm`], [`hms`]), reads the
//! provider's answer into an [`Outcome`], and keeps the provider's auth token
//! fresh. The transport (connections, streams, retries) lives in `pool`.

use bytes::Bytes;
use std::time::Duration;

pub mod apns;
pub mod auth_http;
pub mod fcm;
pub mod hms;

/// Which backend a token is delivered through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    Apns,
    Fcm,
    Hms,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Apns => "apns",
            Backend::Fcm => "fcm",
            Backend::Hms => "hms",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Priority {
    High,
    #[default]
    Normal,
    Low,
}

/// One notification as the providers need it, independent of any of them.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Notification {
    /// The ULID the send API answered with.
    pub id: String,
    /// `chat`, `payment` or `tms`.
    pub category: String,
    pub title: Option<String>,
    pub title_loc_key: Option<String>,
    pub title_loc_args: Vec<String>,
    pub body: Option<String>,
    pub body_loc_key: Option<String>,
    pub body_loc_args: Vec<String>,
    pub sound: Option<String>,
    pub icon: Option<String>,
    pub collapse_key: Option<String>,
    /// Seconds the provider may keep an undelivered notification (capped per provider).
    pub time_to_live: Option<i64>,
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
    pub path: String,
    pub headers: Vec<(http::HeaderName, http::HeaderValue)>,
    pub body: Bytes,
}

/// What a provider's answer means for one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted; the provider's message id when it gave one.
    Sent { id: Option<String> },
    /// The token is dead (unregistered, invalid): mark it invalid, never retry.
    Dead { status: u16, reason: String },
    /// Transient (429, 5xx): retry after the delay when given, else with backoff.
    Retry { status: u16, reason: String, after: Option<Duration> },
    /// Our auth token was refused as expired or revoked: refresh it, then retry.
    AuthRefused { status: u16, reason: String },
    /// A permanent error for this notification (bad payload, topic, credentials).
    Failed { status: u16, reason: String },
}

/// A problem building a request, reported per client (e.g. the 4 KB limit).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FormatError {
    /// The HTTP status the error is reported with (413 for size, 400 otherwise).
    pub status: u16,
    pub message: String,
}

/// The largest payload APNs, FCM and HMS accept.
pub const MAX_PAYLOAD: usize = 4096;

/// Seconds since the Unix epoch, for JWT `iat` and APNs' absolute expirations.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The delay a `retry-after` header asks for. Only the delta-seconds form is
/// read: APNs, FCM and HMS send seconds, and a date we cannot read is no worse
/// than none (the caller backs off on its own).
pub(crate) fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let value = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    value.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(Duration::from_secs_f64)
}

/// Appends `segment` to a URL path, percent-encoding everything but unreserved
/// characters. Device tokens and app ids come from clients and configuration; a
/// `/`, `?` or space in one must not change which route the provider sees (it
/// then answers "bad token", which is the truth).
pub(crate) fn push_path_segment(path: &mut String, segment: &str) {
    use std::fmt::Write;
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':' | b'@') {
            path.push(b as char);
        } else {
            let _ = write!(path, "%{b:02X}");
        }
    }
}

/// A header value from text we were given, or a 400 naming the header.
pub(crate) fn header_value(name: &str, value: &str) -> Result<http::HeaderValue, FormatError> {
    http::HeaderValue::from_str(value).map_err(|_| FormatError {
        status: 400,
        message: format!("{name} contains characters not allowed in an HTTP header"),
    })
}

/// `Authorization: <scheme> <token>`, marked sensitive so it never shows in logs
/// or HPACK's dynamic table.
pub(crate) fn authorization(scheme: &str, token: &str) -> Result<http::HeaderValue, FormatError> {
    let mut v = header_value("the provider auth token", &format!("{scheme} {token}"))?;
    v.set_sensitive(true);
    Ok(v)
}

/// The headers of an OAuth-authenticated JSON POST (FCM, HMS).
pub(crate) fn json_bearer_headers(bearer: &str) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, FormatError> {
    Ok(vec![
        (http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json; charset=UTF-8")),
        (http::header::AUTHORIZATION, authorization("Bearer", bearer)?),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds() {
        let mut h = http::HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        h.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn path_segments_are_escaped() {
        let mut p = String::from("/3/device/");
        push_path_segment(&mut p, "ab12/../x y?z");
        assert_eq!(p, "/3/device/ab12%2F..%2Fx%20y%3Fz");
    }
}
