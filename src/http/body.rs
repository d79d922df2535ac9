//! Reading a request body against a client that sends it slowly or never
//! stops: a size limit (413), a whole-body deadline, and a minimum rate after
//! a grace period (408), so a stalled body cannot hold a connection.

use crate::config::{AbuseLimits, BODY_GRACE};
use crate::error::{ApiError, ApiResult};
use bytes::Buf;
use http::StatusCode;
use http_body_util::BodyExt;
use std::time::Duration;

/// Reads the whole body within `limit` bytes, the whole-body deadline, and
/// the minimum rate: a body that trickles or stalls is cut off with 408.
pub async fn read<B>(body: B, limit: usize, limits: &AbuseLimits) -> ApiResult<bytes::Bytes>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let started = tokio::time::Instant::now();
    let too_slow = || ApiError::new(StatusCode::REQUEST_TIMEOUT, "the request body arrived too slowly");
    let mut body = std::pin::pin!(body);
    let mut data = bytes::BytesMut::new();
    loop {
        let wait = limits.body_timeout.min(time_for(data.len(), limits.min_body_rate));
        // `body_timeout` is at most a day (`Limits` clamps it): `started` plus it fits.
        #[allow(clippy::arithmetic_side_effects)]
        let deadline = started.checked_add(wait).unwrap_or(started + limits.body_timeout);
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(too_slow()),
            Ok(None) => return Ok(data.freeze()),
            Ok(Some(Err(e))) => {
                return Err(ApiError::bad_request(format!("reading the request body: {}", e.into())));
            }
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(mut chunk) = frame.into_data() {
            if data.len().saturating_add(chunk.remaining()) > limit {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body exceeds {limit} bytes"),
                ));
            }
            data.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
        }
    }
}

/// By when, after the body started, its next byte is due when `received`
/// bytes came so far: the grace period plus what the minimum rate allows.
fn time_for(received: usize, min_rate: u64) -> Duration {
    if min_rate == 0 {
        return Duration::MAX;
    }
    let next = u64::try_from(received).unwrap_or(u64::MAX).saturating_add(1);
    let ms = next.saturating_mul(1000).checked_div(min_rate).unwrap_or(u64::MAX);
    BODY_GRACE.saturating_add(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_byte_is_due_after_the_grace_and_what_the_rate_allows() {
        assert_eq!(time_for(0, 1000), BODY_GRACE + Duration::from_millis(1));
        assert_eq!(time_for(999, 1000), BODY_GRACE + Duration::from_secs(1));
        assert_eq!(time_for(5, 0), Duration::MAX, "no minimum rate");
        assert!(time_for(usize::MAX, 1) > Duration::from_secs(1 << 40), "huge counts saturate, never panic");
    }
}
