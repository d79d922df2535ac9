//! Small helpers shared by the simulators: clocks, random identifiers, response builders.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use rand::distr::Alphanumeric;
use rand::Rng;

/// The body type every simulator answers with: responses are small and built in one go.
pub(crate) type Body = Full<Bytes>;

/// Milliseconds since the Unix epoch (the unit of APNs' `timestamp` and of the stats).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Seconds since the Unix epoch (the unit of JWT `iat`/`exp`).
pub(crate) fn now_secs() -> u64 {
    now_ms() / 1000
}

/// `n` random ASCII letters and digits.
pub(crate) fn random_alnum(n: usize) -> String {
    rand::rng().sample_iter(&Alphanumeric).take(n).map(char::from).collect()
}

/// `n` random upper-case letters and digits (the shape of Apple key and team ids).
pub(crate) fn random_upper_alnum(n: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::rng();
    (0..n).map(|_| CHARS[rng.random_range(0..CHARS.len())] as char).collect()
}

/// `n` random lower-case hex digits.
pub(crate) fn random_hex(n: usize) -> String {
    const CHARS: &[u8] = b"0123456789abcdef";
    let mut rng = rand::rng();
    (0..n).map(|_| CHARS[rng.random_range(0..16)] as char).collect()
}

/// `n` random decimal digits, the first one not zero.
pub(crate) fn random_digits(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n)
        .map(|i| {
            let lo = if i == 0 { 1 } else { 0 };
            char::from(b"0123456789"[usize::from(rng.random_range(lo..10u8))])
        })
        .collect()
}

/// A random (version 4) UUID in its canonical upper-case form, as APNs writes `apns-id`.
// `pos` ends at 36 (32 digits, 4 dashes) and the shift `124 - 4 * i` stays
// within 0..=124 for `i < 32`: no arithmetic here can overflow.
#[allow(clippy::arithmetic_side_effects)]
pub(crate) fn uuid_v4() -> HeaderValue {
    let mut v: u128 = rand::rng().random();
    v = (v & !(0xf << 76)) | (0x4 << 76); // version 4
    v = (v & !(0x3 << 62)) | (0x2 << 62); // RFC 4122 variant
    let mut out = [0u8; 36];
    let mut pos = 0;
    for i in 0..32 {
        if matches!(i, 8 | 12 | 16 | 20) {
            out[pos] = b'-';
            pos += 1;
        }
        let nibble = ((v >> (124 - 4 * i)) & 0xf) as usize;
        out[pos] = b"0123456789ABCDEF"[nibble];
        pos += 1;
    }
    // Only ASCII hex digits and dashes: always a valid header value.
    HeaderValue::from_bytes(&out).unwrap_or_else(|_| HeaderValue::from_static("00000000-0000-4000-8000-000000000000"))
}

/// Whether `s` is a UUID in the 8-4-4-4-12 hex form (either case), as APNs requires of `apns-id`.
pub(crate) fn is_uuid(s: &[u8]) -> bool {
    s.len() == 36
        && s.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A JSON response with the given status.
pub(crate) fn json_response(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=UTF-8"));
    resp
}

/// A plain-text response with the given status.
pub(crate) fn text_response(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// Parses `application/x-www-form-urlencoded` bytes into (key, value) pairs.
pub(crate) fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// The value of the first form field named `name`.
pub(crate) fn form_field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The token of an `authorization: Bearer <token>` header (the scheme is case-insensitive).
pub(crate) fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    if value.len() > 7 && value[..7].eq_ignore_ascii_case(b"bearer ") {
        let token = value[7..].trim_ascii();
        (!token.is_empty()).then_some(token)
    } else {
        None
    }
}

/// Whether a duration string is protobuf-JSON shaped (`"3600s"`, `"1.5s"`), as FCM and HMS require of `ttl`.
pub(crate) fn is_duration(s: &str) -> bool {
    let Some(num) = s.strip_suffix('s') else {
        return false;
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (num, None),
    };
    !int.is_empty()
        && int.bytes().all(|c| c.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.len() <= 9 && f.bytes().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        let id = uuid_v4();
        assert!(is_uuid(id.as_bytes()), "{id:?}");
        assert_eq!(id.as_bytes()[14], b'4');
        assert!(!is_uuid(b"not-a-uuid"));
    }

    #[test]
    fn durations() {
        assert!(is_duration("3600s"));
        assert!(is_duration("1.5s"));
        assert!(!is_duration("3600"));
        assert!(!is_duration("s"));
        assert!(!is_duration("-1s"));
        assert!(!is_duration("1.s"));
    }

    #[test]
    fn bearer() {
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer  "), None);
    }
}
