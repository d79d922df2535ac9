//! The `Idempotency-Key` request header of the send routes (ext), and the
//! `Idempotency-Replayed` header of a replayed answer.

use crate::error::{ApiError, ApiResult};

/// The request header naming a request's idempotency key.
pub const HEADER: &str = "Idempotency-Key";

/// The answer header set (`true`) on an answer replayed from the first request's.
pub const REPLAYED: &str = "Idempotency-Replayed";

/// The longest key, in characters.
pub const MAX_LEN: usize = 255;

/// A valid idempotency key: 1 to 255 visible ASCII characters (`!` to `~`),
/// such as a UUID. The draft IETF header sends it as a quoted string
/// (`"8e03978e-..."`): the quotes are not part of the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Checks a key as the caller gave it; the error names the header.
    pub fn parse(raw: &str) -> ApiResult<IdempotencyKey> {
        let raw = raw.trim_matches(|c| c == ' ' || c == '\t');
        let key = raw.strip_prefix('"').and_then(|k| k.strip_suffix('"')).unwrap_or(raw);
        let visible = key.bytes().all(|b| b.is_ascii_graphic() && b != b'"');
        if key.is_empty() || key.len() > MAX_LEN || !visible {
            return Err(ApiError::field(
                HEADER,
                format!("must be 1 to {MAX_LEN} visible ASCII characters (letters, digits, punctuation; no spaces)"),
            ));
        }
        Ok(IdempotencyKey(key.to_string()))
    }

    /// The key of a request's headers: `None` without the header; refused
    /// when it is not text, given twice, or not a valid key.
    pub fn from_headers(headers: &http::HeaderMap) -> ApiResult<Option<IdempotencyKey>> {
        let mut values = headers.get_all(HEADER).iter();
        let Some(first) = values.next() else { return Ok(None) };
        if values.next().is_some() {
            return Err(ApiError::field(HEADER, "must be given once"));
        }
        let text = first.to_str().map_err(|_| ApiError::field(HEADER, "must be visible ASCII"))?;
        Self::parse(text).map(Some)
    }

    /// The key as stored (without quotes).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_up_to_255_and_may_be_quoted() {
        assert_eq!(IdempotencyKey::parse("8e03978e-40d5").unwrap().as_str(), "8e03978e-40d5");
        assert_eq!(IdempotencyKey::parse("\"8e03978e\"").unwrap().as_str(), "8e03978e", "a structured-field string");
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        for bad in ["", "\"\"", "has space", "naïve", &"k".repeat(256), "a\"b"] {
            let e = IdempotencyKey::parse(bad).unwrap_err();
            assert_eq!((e.status.as_u16(), e.field.as_deref()), (400, Some(HEADER)), "{bad:?}");
        }
        let mut h = http::HeaderMap::new();
        assert_eq!(IdempotencyKey::from_headers(&h).unwrap(), None);
        h.append(HEADER, http::HeaderValue::from_static("a"));
        h.append(HEADER, http::HeaderValue::from_static("b"));
        assert!(IdempotencyKey::from_headers(&h).unwrap_err().message.contains("once"));
    }
}
