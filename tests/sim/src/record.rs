//! The last requests each simulator received, in full (`GET /requests`).
//!
//! A bounded ring per provider. Requests are stored as received (the header map and body
//! bytes are moved in, not copied) and turned into JSON only when asked for, so recording
//! costs one short lock per request.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use bytes::Bytes;
use http::{HeaderMap, Method, Uri, Version};
use serde::{Deserialize, Serialize};

use crate::Provider;

/// How many requests each simulator keeps.
pub const RECORDED_REQUESTS: usize = 1000;

/// A received request and how it was answered (`GET /requests`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Which simulator received it.
    pub provider: Provider,
    /// When (ms since the Unix epoch).
    pub received_ms: u64,
    /// `"POST"`, …
    pub method: String,
    /// Path and query.
    pub path: String,
    /// `"HTTP/2.0"` or `"HTTP/1.1"`.
    pub version: String,
    /// Every header, lower-case names; repeated headers joined with `", "`. HTTP/2 requests
    /// also show `:authority`.
    pub headers: BTreeMap<String, String>,
    /// The body: parsed JSON, a form as an object of strings, else the text; `null` if empty.
    /// Web Push bodies (encrypted, binary) are base64url, without padding.
    pub body: serde_json::Value,
    /// The HTTP status answered (0 if the connection was dropped instead).
    pub status: u16,
    /// The error reason answered (APNs reason, FCM errorCode, HMS code), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Web Push: the decrypted message of an accepted request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plaintext: Option<String>,
}

/// A request as stored in the ring.
pub(crate) struct RawRequest {
    pub(crate) received_ms: u64,
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) version: Version,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) status: u16,
    pub(crate) reason: Option<Cow<'static, str>>,
    pub(crate) plaintext: Option<String>,
}

impl RawRequest {
    fn to_recorded(&self, provider: Provider) -> RecordedRequest {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &self.headers {
            let v = String::from_utf8_lossy(value.as_bytes());
            headers
                .entry(name.as_str().to_owned())
                .and_modify(|s| {
                    s.push_str(", ");
                    s.push_str(&v);
                })
                .or_insert_with(|| v.into_owned());
        }
        // HTTP/2 carries the host in the `:authority` pseudo-header, kept in the URI.
        if let Some(authority) = self.uri.authority() {
            headers.entry(":authority".to_owned()).or_insert_with(|| authority.as_str().to_owned());
        }
        let is_form = headers.get("content-type").is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"));
        RecordedRequest {
            provider,
            received_ms: self.received_ms,
            method: self.method.to_string(),
            path: self
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_else(|| self.uri.path().to_owned()),
            version: format!("{:?}", self.version),
            headers,
            body: match provider {
                Provider::Webpush if !self.body.is_empty() => {
                    use base64::Engine as _;
                    serde_json::Value::String(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&self.body))
                }
                _ => body_json(&self.body, is_form),
            },
            status: self.status,
            reason: self.reason.as_ref().map(|r| r.to_string()),
            plaintext: self.plaintext.clone(),
        }
    }
}

fn body_json(body: &[u8], is_form: bool) -> serde_json::Value {
    if body.is_empty() {
        return serde_json::Value::Null;
    }
    if let Ok(v) = serde_json::from_slice(body) {
        return v;
    }
    if is_form {
        return serde_json::Value::Object(
            url::form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), serde_json::Value::String(v.into_owned())))
                .collect(),
        );
    }
    serde_json::Value::String(String::from_utf8_lossy(body).into_owned())
}

/// The ring of one simulator.
pub(crate) struct RequestLog {
    ring: Mutex<VecDeque<RawRequest>>,
}

impl Default for RequestLog {
    fn default() -> Self {
        RequestLog { ring: Mutex::new(VecDeque::with_capacity(RECORDED_REQUESTS)) }
    }
}

impl RequestLog {
    pub(crate) fn push(&self, req: RawRequest) {
        let evicted = {
            let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
            let evicted = if ring.len() >= RECORDED_REQUESTS { ring.pop_front() } else { None };
            ring.push_back(req);
            evicted
        };
        // Freed outside the lock.
        drop(evicted);
    }

    /// The last `limit` requests, oldest first.
    pub(crate) fn last(&self, provider: Provider, limit: usize) -> Vec<RecordedRequest> {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let skip = ring.len().saturating_sub(limit);
        ring.iter().skip(skip).map(|r| r.to_recorded(provider)).collect()
    }

    pub(crate) fn clear(&self) {
        let old = std::mem::take(&mut *self.ring.lock().unwrap_or_else(|p| p.into_inner()));
        drop(old);
    }
}
