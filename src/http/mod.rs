//! What a handler sees of a request, and how it answers.

pub mod body;

use crate::auth::{Caller, Principal};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::Full;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Arc;

/// What every handler answers: the whole body in memory.
pub type Response = http::Response<Full<Bytes>>;

/// One request, decoded as far as routing and authentication go.
pub struct Cx {
    /// The engine serving the request.
    pub engine: Arc<Engine>,
    /// The request method.
    pub method: Method,
    /// Path parameters by name, in pattern order (see [`Cx::param`]).
    pub params: crate::router::Params,
    /// The raw query string, without `?`; `None` when the URI has none.
    pub query: Option<String>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The whole body, already read within the body limit and timeouts.
    pub body: Bytes,
    /// The verified caller: a tenant's principal on every route that needs
    /// its token, the operator on operator routes.
    pub caller: Caller,
    /// The client's IP address (absent when dispatched in-process).
    pub peer: Option<std::net::IpAddr>,
}

impl Cx {
    /// A path parameter; the router guarantees the names of its patterns.
    pub fn param(&self, name: &str) -> &str {
        self.params.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str()).unwrap_or("")
    }

    /// The tenant of the path.
    pub fn tenant(&self) -> &str {
        self.param("tenantId")
    }

    /// The tenant principal of the token; 401 when the caller is not a tenant's.
    pub fn principal(&self) -> ApiResult<&Principal> {
        match &self.caller {
            Caller::Tenant(p) => Ok(p),
            _ => Err(ApiError::unauthorized("missing bearer token")),
        }
    }

    /// Decodes the JSON body strictly; the error names the field path.
    pub fn json<T: DeserializeOwned>(&self) -> ApiResult<T> {
        decode_json(&self.body)
    }

    /// Query parameters in order (a repeated name appears repeatedly).
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        self.query.as_deref().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default()
    }

    /// The first value of query parameter `name`, percent-decoded; `None` when absent.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query_pairs().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// A header's value; `None` when absent or not visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Decodes a JSON body into `T`: 400 on an empty body, and a 400 naming the
/// failing field path (`request body` for the whole) on a bad one.
pub fn decode_json<T: DeserializeOwned>(body: &[u8]) -> ApiResult<T> {
    if body.is_empty() {
        return Err(ApiError::bad_request("request body: a JSON body is required"));
    }
    decode_tracked(body).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let path = if path == "." { "request body".to_string() } else { path };
        ApiError::field(&path, inner)
    })
}

/// Decodes JSON into `T`, or says which field path failed. Most JSON
/// decodes: the path is tracked (a wrapper around every value) only when
/// decoding again to name the failure.
pub(crate) fn decode_tracked<T: DeserializeOwned>(
    json: &[u8],
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    if let Ok(value) = T::deserialize(&mut serde_json::Deserializer::from_slice(json)) {
        return Ok(value);
    }
    serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(json))
}

/// A JSON answer.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> ApiResult<Response> {
    // Room for a one-client send's answer (about 300 bytes) at once: it
    // grew twice from serde_json's 128 bytes.
    let mut body = Vec::with_capacity(512);
    serde_json::to_writer(&mut body, value).map_err(|e| ApiError::internal(format!("encoding the answer: {e}")))?;
    Ok(with_body(status, "application/json", body.into()))
}

/// An answer with `body` as is, under `content_type`.
pub fn with_body(status: StatusCode, content_type: &'static str, body: Bytes) -> Response {
    let mut r = http::Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// An answer without a body (204, 202 and the like).
pub fn empty(status: StatusCode) -> Response {
    let mut r = http::Response::new(Full::new(Bytes::new()));
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        n: u32,
    }

    #[test]
    fn errors_name_the_field_path() {
        let e = decode_json::<Outer>(br#"{"inner": {"n": "x"}}"#).unwrap_err();
        assert!(e.message.starts_with("inner.n:"), "{}", e.message);
        let e = decode_json::<Outer>(br#"{"inner": {"n": 1, "m": 2}}"#).unwrap_err();
        assert!(e.message.contains("unknown field `m`"), "{}", e.message);
        assert_eq!(decode_json::<Outer>(b"").unwrap_err().status, StatusCode::BAD_REQUEST);
    }
}
