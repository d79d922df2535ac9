//! Token-bucket rate limits: per tenant on the send API, per user and per client
//! address on the token endpoint. A refused request gets 429 with `Retry-After`.
//!
//! Engines sharing a database keep their buckets in memory and divide each
//! configured rate and burst by the live engine count (see `node`), so the
//! limits hold across engines behind a load balancer that spreads requests
//! evenly, without a database write per request. (The brute-force lockout of
//! passwords is counted in the database, in the login's transaction.)

use crate::error::{ApiError, ApiResult};
use crate::node::Cluster;
use dashmap::DashMap;
use std::sync::Arc;
use std::time::Instant;

/// Buckets kept before idle (full) ones are dropped, so distinct keys cannot grow memory without bound.
const PRUNE_ABOVE: usize = 10_000;

/// One token bucket per key: `rate` tokens a second, holding at most `burst`.
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    what: &'static str,
    buckets: DashMap<String, Bucket>,
    /// The engines sharing the limit; `None`: this engine alone.
    cluster: Option<Arc<Cluster>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// `rate` requests a second with bursts of `burst`; a rate of 0 disables the limit.
    pub fn new(what: &'static str, rate: u32, burst: u32) -> RateLimiter {
        let rate = f64::from(rate);
        RateLimiter { rate, burst: f64::from(burst.max(1)), what, buckets: DashMap::new(), cluster: None }
    }

    /// This limit shared with the other live engines of `cluster`.
    pub fn shared(self, cluster: Arc<Cluster>) -> RateLimiter {
        RateLimiter { cluster: Some(cluster), ..self }
    }

    /// This engine's share of the rate and the burst.
    fn share(&self) -> (f64, f64) {
        let nodes = self.cluster.as_ref().map_or(1, |c| c.live_nodes()) as f64;
        (self.rate / nodes, (self.burst / nodes).max(1.0))
    }

    /// False when configured with a rate of 0: every request passes.
    pub fn enabled(&self) -> bool {
        self.rate > 0.0
    }

    /// Takes one token of `key`'s bucket, or says how many seconds until one is available.
    pub fn take(&self, key: &str, now: Instant) -> Result<(), u64> {
        if !self.enabled() {
            return Ok(());
        }
        if self.buckets.len() > PRUNE_ABOVE {
            self.prune(now);
        }
        let (rate, burst) = self.share();
        let mut b = self.buckets.entry(key.to_string()).or_insert(Bucket { tokens: burst, at: now });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - b.tokens) / rate).ceil().max(1.0) as u64)
        }
    }

    /// [`Self::take`] now, as an API result: 429 with `Retry-After` when refused.
    pub fn check(&self, key: &str) -> ApiResult<()> {
        self.take(key, Instant::now()).map_err(|secs| {
            metrics::counter!("herald_rate_limited_total", "limit" => self.what).increment(1);
            ApiError::too_many_requests(format!("rate limit of {} exceeded: retry in {secs} s", self.what), secs)
        })
    }

    fn prune(&self, now: Instant) {
        let (rate, burst) = (self.rate, self.burst);
        self.buckets.retain(|_, b| b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * rate < burst);
    }
}

/// The limits of one engine, from the configuration.
pub struct Limits {
    /// Per tenant, on `POST .../push_notification/send`.
    pub send: RateLimiter,
    /// Per tenant and user (or client id), on the token endpoint.
    pub token_user: RateLimiter,
    /// Per client IP address, on the token endpoint.
    pub token_ip: RateLimiter,
}

impl Limits {
    /// The three limiters with the rates and bursts of `c.limits`, shared
    /// among the live engines of `cluster`.
    pub fn from_config(c: &crate::config::Config, cluster: Arc<Cluster>) -> Limits {
        let l = &c.limits;
        let limit = |what, rate, burst| RateLimiter::new(what, rate, burst).shared(cluster.clone());
        Limits {
            send: limit("send", l.send_rate, l.send_burst),
            token_user: limit("token-user", l.token_rate_per_user, l.token_burst_per_user),
            token_ip: limit("token-ip", l.token_rate_per_ip, l.token_burst_per_ip),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn buckets_refill_at_the_rate_and_keys_are_separate() {
        let l = RateLimiter::new("t", 2, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(l.take("a", t0), Ok(()));
        }
        assert_eq!(l.take("a", t0), Err(1));
        assert_eq!(l.take("b", t0), Ok(()), "another key has its own bucket");
        assert_eq!(l.take("a", t0 + Duration::from_millis(500)), Ok(()), "one token after half a second");
        assert!(l.take("a", t0 + Duration::from_millis(500)).is_err());
        let slow = RateLimiter::new("t", 1, 1);
        assert_eq!(slow.take("a", t0), Ok(()));
        assert_eq!(slow.take("a", t0), Err(1));
    }

    #[test]
    fn three_live_engines_each_take_a_third() {
        let cluster = Arc::new(Cluster::of(3));
        let l = RateLimiter::new("t", 30, 9).shared(cluster);
        let t0 = Instant::now();
        assert!((0..3).all(|_| l.take("a", t0).is_ok()), "a third of the burst");
        assert_eq!(l.take("a", t0), Err(1));
        assert!(l.take("a", t0 + Duration::from_millis(100)).is_ok(), "10 a second: one after 100 ms");
    }

    #[test]
    fn zero_disables() {
        let l = RateLimiter::new("t", 0, 0);
        let t0 = Instant::now();
        assert!((0..10_000).all(|_| l.take("a", t0).is_ok()));
    }

    #[test]
    fn idle_buckets_are_pruned() {
        let l = RateLimiter::new("t", 1000, 1000);
        let t0 = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            l.take(&i.to_string(), t0).unwrap();
        }
        l.take("last", t0 + Duration::from_secs(5)).unwrap();
        assert!(l.buckets.len() < 10, "full buckets were dropped: {}", l.buckets.len());
    }
}
