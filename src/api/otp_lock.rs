//! The resend-OTP brute-force lock: resends are counted per user within the
//! tenant's window; past the limit the user is locked until the window ends or
//! an admin unlocks.

use super::users::{envelope, load};
use crate::error::{ApiError, ApiResult};
use crate::http::{Cx, Response};
use herald_storage::identity::{OtpCounter, OtpPolicy};
use serde_json::json;

const DISABLED: &str = "Resend OTP brute force protection is disabled for this tenant";

fn policy(cx: &Cx) -> ApiResult<OtpPolicy> {
    Ok(cx.engine.store.identity().config(cx.tenant(), &["otp-policy"])?.unwrap_or_default())
}

/// The counter as it stands at `now` (an expired window counts from zero).
fn current(cx: &Cx, user_id: &str, p: &OtpPolicy, now: u64) -> ApiResult<OtpCounter> {
    let c: OtpCounter = cx.engine.store.identity().config(cx.tenant(), &["otp", user_id])?.unwrap_or_default();
    if c.locked_until_ms > now || now.saturating_sub(c.window_start_ms) < p.window_seconds * 1000 {
        Ok(c)
    } else {
        Ok(OtpCounter::default())
    }
}

/// `POST /users/{userId}/otp/resend` (ext): counts one resend.
pub async fn resend(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userId")?;
    let p = policy(&cx)?;
    if !p.enabled {
        return envelope("OTP resend accepted", Some(json!({ "locked": false })));
    }
    let now = cx.engine.config.clock.now_ms();
    let mut c = current(&cx, &user.id, &p, now)?;
    if c.locked_until_ms > now {
        return Err(ApiError::new(http::StatusCode::TOO_MANY_REQUESTS, "Resend OTP is locked for this user")
            .with_word("TOO_MANY_REQUESTS"));
    }
    if c.count == 0 {
        c.window_start_ms = now;
    }
    c.count += 1;
    let locked = c.count > p.max_resends;
    if locked {
        c.locked_until_ms = c.window_start_ms + p.window_seconds * 1000;
    }
    cx.engine.store.identity().put_config(cx.tenant(), &["otp", &user.id], &c)?;
    cx.engine.store.durable().await?;
    if locked {
        return Err(ApiError::new(http::StatusCode::TOO_MANY_REQUESTS, "Resend OTP is locked for this user")
            .with_word("TOO_MANY_REQUESTS"));
    }
    envelope(
        "OTP resend accepted",
        Some(json!({ "locked": false, "remainingResends": p.max_resends.saturating_sub(c.count) })),
    )
}

pub async fn status(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userId")?;
    let p = policy(&cx)?;
    if !p.enabled {
        return envelope(DISABLED, None);
    }
    let now = cx.engine.config.clock.now_ms();
    let c = current(&cx, &user.id, &p, now)?;
    let locked = c.locked_until_ms > now;
    envelope(
        if locked { "User is locked for resend OTP" } else { "User is not locked for resend OTP" },
        Some(json!({
            "locked": locked,
            "resendCount": c.count,
            "lockedUntil": if locked { c.locked_until_ms } else { 0 },
        })),
    )
}

pub async fn unlock(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userId")?;
    if !policy(&cx)?.enabled {
        return envelope(DISABLED, None);
    }
    cx.engine.store.identity().delete_config(cx.tenant(), &["otp", &user.id])?;
    cx.engine.store.durable().await?;
    envelope("User unlocked successfully", None)
}

pub async fn unlock_all(cx: Cx) -> ApiResult<Response> {
    if !policy(&cx)?.enabled {
        return envelope(DISABLED, None);
    }
    let n = cx.engine.store.identity().delete_config_prefix(cx.tenant(), &["otp"])?;
    cx.engine.store.durable().await?;
    envelope("All users unlocked successfully", Some(json!({ "unlocked": n })))
}
