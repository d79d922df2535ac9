//! A tenant's quotas (`PUT /v1/tenants/{t}/limits`, ext, operator only; `GET`
//! for the tenant's admins) and their rules.

use crate::error::{ApiError, ApiResult};
use herald_storage::limits::TenantLimits;
use serde::{Deserialize, Serialize};

/// The highest rate a quota may name (notifications per second).
const MAX_RATE: u32 = 1_000_000;
/// The most stored push tokens a quota may name.
const MAX_TOKENS: u64 = 1_000_000_000;

/// Body of `PUT .../limits`: each quota absent (or `null`) is no limit; the
/// body replaces the tenant's quotas as a whole (`{}` removes them all).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LimitsBody {
    /// One-client and one-user sends per second (each event of a batch
    /// counts), 1 to 1 000 000; past it, 429 with `Retry-After`.
    pub interactive_per_second: Option<u32>,
    /// How many interactive sends may come at once (the bucket's size), 1 to
    /// 1 000 000; default 1: no second sees more than the rate.
    pub interactive_burst: Option<u32>,
    /// Broadcast notifications per second, 1 to 1 000 000: broadcasts are
    /// slowed to it, never refused.
    pub bulk_per_second: Option<u32>,
    /// Broadcasts accepted per UTC day, 0 to 1 000 000; past it, 429 until the next day.
    pub broadcasts_per_day: Option<u32>,
    /// Push tokens stored at most, 0 to 1 000 000 000: registering a new
    /// one past it is refused with 429 (replacing a client's token is not).
    pub push_tokens: Option<u64>,
}

impl LimitsBody {
    /// Checks each quota's range; 400 naming the first offending field.
    pub fn validate(&self) -> ApiResult<()> {
        let rate = |field: &str, v: Option<u32>| match v {
            Some(r) if !(1..=MAX_RATE).contains(&r) => {
                Err(ApiError::field(field, format!("must be from 1 to {MAX_RATE}")))
            }
            _ => Ok(()),
        };
        rate("interactivePerSecond", self.interactive_per_second)?;
        rate("interactiveBurst", self.interactive_burst)?;
        rate("bulkPerSecond", self.bulk_per_second)?;
        if self.interactive_burst.is_some() && self.interactive_per_second.is_none() {
            return Err(ApiError::field("interactiveBurst", "needs interactivePerSecond"));
        }
        if self.broadcasts_per_day.is_some_and(|d| d > MAX_RATE) {
            return Err(ApiError::field("broadcastsPerDay", format!("must be from 0 to {MAX_RATE}")));
        }
        if self.push_tokens.is_some_and(|t| t > MAX_TOKENS) {
            return Err(ApiError::field("pushTokens", format!("must be from 0 to {MAX_TOKENS}")));
        }
        Ok(())
    }

    /// The record stored, stamped `now` (ms).
    pub fn into_record(self, now: u64) -> TenantLimits {
        let LimitsBody { interactive_per_second, interactive_burst, bulk_per_second, broadcasts_per_day, push_tokens } =
            self;
        TenantLimits {
            interactive_per_second,
            interactive_burst,
            bulk_per_second,
            broadcasts_per_day,
            push_tokens,
            updated_ms: now,
        }
    }
}

/// A tenant's quotas (absent: no limit) and what it uses of them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsView {
    /// One-client and one-user sends per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interactive_per_second: Option<u32>,
    /// Interactive sends that may come at once (1 when not set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interactive_burst: Option<u32>,
    /// Broadcast notifications per second broadcasts are slowed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bulk_per_second: Option<u32>,
    /// Broadcasts accepted per UTC day.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broadcasts_per_day: Option<u32>,
    /// Push tokens stored at most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_tokens: Option<u64>,
    /// When the quotas were last set (ms since the Unix epoch); absent when never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// What the tenant uses of them now.
    pub usage: LimitsUsage,
}

/// What a tenant uses of its quotas.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsUsage {
    /// Broadcasts accepted today (UTC), counted while `broadcastsPerDay` is set.
    pub broadcasts_today: u32,
    /// Push tokens stored.
    pub push_tokens: u64,
}

impl LimitsView {
    /// The view of `limits` (`None`: none set) with the tenant's `usage`.
    pub fn new(limits: Option<TenantLimits>, usage: LimitsUsage) -> LimitsView {
        let l = limits.unwrap_or_default();
        LimitsView {
            interactive_per_second: l.interactive_per_second,
            interactive_burst: l.interactive_burst,
            bulk_per_second: l.bulk_per_second,
            broadcasts_per_day: l.broadcasts_per_day,
            push_tokens: l.push_tokens,
            updated_at: (l.updated_ms > 0).then_some(l.updated_ms),
            usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_and_named() {
        let field = |b: LimitsBody| b.validate().unwrap_err().field.unwrap_or_default();
        assert!(LimitsBody::default().validate().is_ok());
        let ok = LimitsBody { interactive_per_second: Some(100), broadcasts_per_day: Some(0), ..Default::default() };
        assert!(ok.validate().is_ok());
        assert_eq!(field(LimitsBody { interactive_per_second: Some(0), ..Default::default() }), "interactivePerSecond");
        assert_eq!(field(LimitsBody { bulk_per_second: Some(MAX_RATE + 1), ..Default::default() }), "bulkPerSecond");
        assert_eq!(field(LimitsBody { interactive_burst: Some(5), ..Default::default() }), "interactiveBurst");
        assert_eq!(field(LimitsBody { push_tokens: Some(MAX_TOKENS + 1), ..Default::default() }), "pushTokens");
    }
}
