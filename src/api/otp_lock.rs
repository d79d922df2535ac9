//! The resend-OTP brute-force lock: resends are counted per user within the
//! tenant's window; past the limit the user is locked until the window ends or
//! an admin unlocks (see [`crate::library::realm`]).

use super::users::{envelope, OtpLockEnvelope, OtpResentEnvelope, OtpUnlockedEnvelope};
use crate::error::ApiResult;
use crate::http::{Cx, Response};

const DISABLED: &str = "Resend OTP brute force protection is disabled for this tenant";

/// `POST /users/{userId}/otp/resend` (ext): counts one resend.
pub(crate) async fn resend(cx: Cx) -> ApiResult<Response> {
    let resent = cx.engine.realm().otp_resend(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    OtpResentEnvelope::answer("OTP resend accepted", resent)
}

pub(crate) async fn status(cx: Cx) -> ApiResult<Response> {
    match cx.engine.realm().otp_lock(&cx.caller, cx.tenant(), cx.param("userId")).await? {
        None => OtpLockEnvelope::answer(DISABLED, None),
        Some(s) if s.locked => OtpLockEnvelope::answer("User is locked for resend OTP", Some(s)),
        Some(s) => OtpLockEnvelope::answer("User is not locked for resend OTP", Some(s)),
    }
}

pub(crate) async fn unlock(cx: Cx) -> ApiResult<Response> {
    if !cx.engine.realm().otp_unlock(&cx.caller, cx.tenant(), cx.param("userId")).await? {
        return envelope(DISABLED);
    }
    envelope("User unlocked successfully")
}

pub(crate) async fn unlock_all(cx: Cx) -> ApiResult<Response> {
    match cx.engine.realm().otp_unlock_all(&cx.caller, cx.tenant()).await? {
        None => OtpUnlockedEnvelope::answer(DISABLED, None),
        Some(n) => OtpUnlockedEnvelope::answer("All users unlocked successfully", Some(n)),
    }
}
