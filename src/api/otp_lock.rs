//! The resend-OTP brute-force lock: resends are counted per user within the
//! tenant's window; past the limit the user is locked until the window ends or
//! an admin unlocks.

use super::users::{envelope, load};
use crate::error::{ApiError, ApiResult};
use crate::http::{Cx, Response};
use crate::models::user::otp_current;
use crate::ops::realm::{self, Resend};
use herald_storage::identity::OtpPolicy;
use serde_json::json;

const DISABLED: &str = "Resend OTP brute force protection is disabled for this tenant";

fn policy(cx: &Cx) -> ApiResult<OtpPolicy> {
    Ok(cx.engine.store.identity().config(cx.tenant(), &["otp-policy"])?.unwrap_or_default())
}

fn locked() -> ApiError {
    ApiError::new(http::StatusCode::TOO_MANY_REQUESTS, "Resend OTP is locked for this user")
        .with_word("TOO_MANY_REQUESTS")
}

/// `POST /users/{userId}/otp/resend` (ext): counts one resend.
pub async fn resend(cx: Cx) -> ApiResult<Response> {
    match realm::otp_resend(&cx.engine, cx.tenant(), cx.param("userId")).await? {
        Resend::Disabled => envelope("OTP resend accepted", Some(json!({ "locked": false }))),
        Resend::Locked { .. } => Err(locked()),
        Resend::Accepted { remaining } => {
            envelope("OTP resend accepted", Some(json!({ "locked": false, "remainingResends": remaining })))
        }
    }
}

pub async fn status(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userId")?;
    let p = policy(&cx)?;
    if !p.enabled {
        return envelope(DISABLED, None);
    }
    let now = cx.engine.config.clock.now_ms();
    let stored = cx.engine.store.identity().otp_counter(cx.tenant(), &user.id)?.unwrap_or_default();
    let c = otp_current(stored, &p, now);
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
    if !realm::otp_unlock(&cx.engine, cx.tenant(), cx.param("userId")).await? {
        return envelope(DISABLED, None);
    }
    envelope("User unlocked successfully", None)
}

pub async fn unlock_all(cx: Cx) -> ApiResult<Response> {
    match realm::otp_unlock_all(&cx.engine, cx.tenant()).await? {
        None => envelope(DISABLED, None),
        Some(n) => envelope("All users unlocked successfully", Some(json!({ "unlocked": n }))),
    }
}
