//! Brute-force protection of the password grant, with Keycloak's algorithm and
//! defaults (temporary lockout), and the clock it reads (injectable in tests).

use herald_storage::identity::LoginFailure;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Keycloak's brute-force settings of a realm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Failures per wait increment: every `failure_factor` failures add one `wait_increment_seconds` (default 30).
    pub failure_factor: u32,
    /// Lockout added per `failure_factor` failures, in seconds (default 60).
    pub wait_increment_seconds: u64,
    /// Cap on one lockout, in seconds (default 900).
    pub max_failure_wait_seconds: u64,
    /// Failures closer together than this (milliseconds) count as quick (default 1000).
    pub quick_login_check_millis: u64,
    /// Lockout after a quick failure, in seconds, when the increment gives less (default 60).
    pub minimum_quick_login_wait_seconds: u64,
    /// A failure this long after the previous one (seconds) resets the count (default 43 200, 12 hours).
    pub max_delta_time_seconds: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            failure_factor: 30,
            wait_increment_seconds: 60,
            max_failure_wait_seconds: 900,
            quick_login_check_millis: 1000,
            minimum_quick_login_wait_seconds: 60,
            max_delta_time_seconds: 43_200,
        }
    }
}

impl Policy {
    /// Records one failed login at `now` (Keycloak's `DefaultBruteForceProtector.failure`).
    pub fn record_failure(&self, f: &mut LoginFailure, now: u64) {
        let delta = if f.last_failure_ms > 0 { now.saturating_sub(f.last_failure_ms) } else { 0 };
        f.last_failure_ms = now;
        if delta > 0 && delta > self.max_delta_time_seconds.saturating_mul(1000) {
            f.num_failures = 0;
            f.not_before_ms = 0;
        }
        f.num_failures = f.num_failures.saturating_add(1);
        let steps = f.num_failures.checked_div(self.failure_factor.max(1)).unwrap_or(0);
        let mut wait = self.wait_increment_seconds.saturating_mul(u64::from(steps));
        if delta > 0 && delta < self.quick_login_check_millis && wait < self.minimum_quick_login_wait_seconds {
            wait = self.minimum_quick_login_wait_seconds;
        }
        wait = wait.min(self.max_failure_wait_seconds);
        if wait > 0 {
            // Keycloak keeps the instant in whole seconds.
            f.not_before_ms = (now.saturating_add(wait.saturating_mul(1000)) / 1000).saturating_mul(1000);
        }
    }

    /// True while logins of the user are refused.
    pub fn is_locked(f: &LoginFailure, now: u64) -> bool {
        now < f.not_before_ms
    }
}

/// Wall-clock milliseconds, plus an offset, or frozen at an instant: tests move
/// time instead of sleeping.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicU64>,
    /// 0: not frozen.
    frozen_ms: Arc<AtomicU64>,
}

impl Clock {
    /// Milliseconds since the epoch: the wall clock plus the offset, or the frozen instant.
    pub fn now_ms(&self) -> u64 {
        match self.frozen_ms.load(Ordering::SeqCst) {
            0 => herald_storage::now_ms().saturating_add(self.offset_ms.load(Ordering::SeqCst)),
            t => t,
        }
    }

    /// Stops the clock at its current reading.
    pub fn freeze(&self) {
        self.frozen_ms.store(self.now_ms().max(1), Ordering::SeqCst);
    }

    /// Moves the clock forward by `ms` milliseconds, frozen or not.
    pub fn advance(&self, ms: u64) {
        if self.frozen_ms.load(Ordering::SeqCst) == 0 {
            self.offset_ms.fetch_add(ms, Ordering::SeqCst);
        } else {
            self.frozen_ms.fetch_add(ms, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keycloak_defaults_lock_after_thirty_slow_failures() {
        let p = Policy::default();
        let mut f = LoginFailure::default();
        let mut now = 1_000_000_000;
        for _ in 0..29 {
            now += 5_000;
            p.record_failure(&mut f, now);
            assert!(!Policy::is_locked(&f, now));
        }
        now += 5_000;
        p.record_failure(&mut f, now);
        assert!(Policy::is_locked(&f, now));
        assert!(Policy::is_locked(&f, now + 59_000));
        assert!(!Policy::is_locked(&f, now + 60_000));
    }

    #[test]
    fn quick_failures_wait_the_minimum_and_waits_are_capped() {
        let p = Policy::default();
        let mut f = LoginFailure::default();
        p.record_failure(&mut f, 10_000_000);
        assert!(!Policy::is_locked(&f, 10_000_000));
        p.record_failure(&mut f, 10_000_500);
        assert!(Policy::is_locked(&f, 10_000_500 + 59_000));
        assert!(!Policy::is_locked(&f, 10_000_500 + 61_000));
        // 600 failures: 20 increments of 60 s, capped at 900 s.
        let mut f = LoginFailure { num_failures: 599, last_failure_ms: 1, not_before_ms: 0 };
        p.record_failure(&mut f, 20_000_000);
        assert_eq!(f.not_before_ms, 20_000_000 + 900_000);
        // After max delta (12 h) the count starts again.
        let later = 20_000_000 + 43_200_001;
        p.record_failure(&mut f, later);
        assert_eq!(f.num_failures, 1);
    }
}
