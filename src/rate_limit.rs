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
use std::time::{Duration, Instant};

/// Buckets kept before idle (full) ones are dropped, so distinct keys cannot grow memory without bound.
const PRUNE_ABOVE: usize = 10_000;

/// One token bucket per key: `rate` tokens a second, holding at most `burst`.
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    what: &'static str,
    buckets: Buckets,
    /// The engines sharing the limit; `None`: this engine alone.
    cluster: Option<Arc<Cluster>>,
}

impl RateLimiter {
    /// `rate` requests a second with bursts of `burst`; a rate of 0 disables the limit.
    pub fn new(what: &'static str, rate: u32, burst: u32) -> RateLimiter {
        let rate = f64::from(rate);
        RateLimiter { rate, burst: f64::from(burst.max(1)), what, buckets: Buckets::default(), cluster: None }
    }

    /// This limit shared with the other live engines of `cluster`.
    pub fn shared(self, cluster: Arc<Cluster>) -> RateLimiter {
        RateLimiter { cluster: Some(cluster), ..self }
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
        let (rate, burst) = share(self.rate, self.burst, self.cluster.as_deref());
        self.buckets.take(key, rate, burst, now)
    }

    /// [`Self::take`] now, as an API result: 429 with `Retry-After` when refused.
    pub fn check(&self, key: &str) -> ApiResult<()> {
        self.take(key, Instant::now()).map_err(|secs| {
            metrics::counter!("herald_rate_limited_total", "limit" => self.what).increment(1);
            ApiError::too_many_requests(format!("rate limit of {} exceeded: retry in {secs} s", self.what), secs)
        })
    }
}

/// This engine's share of a rate and a burst shared by the live engines of
/// `cluster` (all of them without one).
pub fn share(rate: f64, burst: f64, cluster: Option<&Cluster>) -> (f64, f64) {
    let nodes = cluster.map_or(1, |c| c.live_nodes()) as f64;
    (rate / nodes, (burst / nodes).max(1.0))
}

/// Token buckets by key, each filled at the rate and to the burst its user
/// gives (limits that differ per key: the tenants' quotas).
#[derive(Default)]
pub struct Buckets(DashMap<String, Bucket>);

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    /// The rate and burst of its last use, to tell when it is full again.
    rate: f64,
    burst: f64,
}

impl Buckets {
    /// `key`'s bucket refilled up to `now`, its rate and burst those given.
    fn refilled(
        &self,
        key: &str,
        rate: f64,
        burst: f64,
        now: Instant,
    ) -> dashmap::mapref::one::RefMut<'_, String, Bucket> {
        if self.0.len() > PRUNE_ABOVE {
            self.prune(now);
        }
        let mut b = self.0.entry(key.to_string()).or_insert(Bucket { tokens: burst, at: now, rate, burst });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        (b.at, b.rate, b.burst) = (now, rate, burst);
        b
    }

    /// Takes one token of `key`'s bucket, or says how many seconds until one is available.
    pub fn take(&self, key: &str, rate: f64, burst: f64, now: Instant) -> Result<(), u64> {
        let mut b = self.refilled(key, rate, burst, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - b.tokens) / rate).ceil().max(1.0) as u64)
        }
    }

    /// Takes `n` tokens of `key`'s bucket, into debt if it holds fewer:
    /// answers how long until the debt is paid, when the `n` may go. Callers
    /// that each wait their answer go at `rate` together.
    pub fn reserve(&self, key: &str, rate: f64, burst: f64, n: usize, now: Instant) -> Duration {
        let mut b = self.refilled(key, rate, burst, now);
        b.tokens -= n as f64;
        match b.tokens < 0.0 {
            true => Duration::try_from_secs_f64(-b.tokens / rate).unwrap_or(Duration::MAX),
            false => Duration::ZERO,
        }
    }

    fn prune(&self, now: Instant) {
        self.0.retain(|_, b| b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * b.rate < b.burst);
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

    /// Reservations past the bucket wait their turn at the rate, in order.
    #[test]
    fn reservations_are_paced_at_the_rate() {
        let b = Buckets::default();
        let t0 = Instant::now();
        assert_eq!(b.reserve("a", 10.0, 2.0, 1, t0), Duration::ZERO);
        assert_eq!(b.reserve("a", 10.0, 2.0, 1, t0), Duration::ZERO, "the burst goes at once");
        let waits: Vec<u128> = (0..3).map(|_| b.reserve("a", 10.0, 2.0, 1, t0).as_millis()).collect();
        assert_eq!(waits, vec![100, 200, 300]);
        assert_eq!(b.reserve("a", 10.0, 2.0, 5, t0 + Duration::from_millis(300)).as_millis(), 500, "five at once");
        assert_eq!(b.reserve("b", 10.0, 2.0, 1, t0), Duration::ZERO, "another key has its own bucket");
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
        assert!(l.buckets.0.len() < 10, "full buckets were dropped: {}", l.buckets.0.len());
    }
}
