//! The one restart policy of every supervisor (`Root` for tenants, `Tenant`
//! for broadcasts, the webhook dispatcher for targets): a failed child is
//! restarted after an exponential backoff, scheduled as a delayed message so
//! the supervisor never sleeps in its handler; after too many restarts in a
//! window it is given up (its job marked failed) instead of looping for ever.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// How a supervisor restarts a failed child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Delay before the first restart; doubled for each further one.
    pub first_delay: Duration,
    /// The cap of the doubling delay.
    pub max_delay: Duration,
    /// Restarts allowed within `window`; the next failure gives the child up.
    pub max_restarts: usize,
    /// The sliding window `max_restarts` is counted in.
    pub window: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            first_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(30),
            max_restarts: 5,
            window: Duration::from_secs(600),
        }
    }
}

/// What to do with a child that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start it again after this delay.
    RestartAfter(Duration),
    /// It failed too often: stop trying, and mark its work failed.
    GiveUp,
}

/// The recent restarts of each child, by a key that outlives the child
/// (a tenant id, a broadcast's id, a webhook).
#[derive(Debug)]
pub struct Restarts<K> {
    policy: RestartPolicy,
    recent: HashMap<K, VecDeque<Instant>>,
}

impl<K: Hash + Eq + Clone> Restarts<K> {
    pub(crate) fn new(policy: RestartPolicy) -> Self {
        Restarts { policy, recent: HashMap::new() }
    }

    /// Records a failure of `key` at `now` and decides.
    pub fn on_failure(&mut self, key: &K, now: Instant) -> Decision {
        let p = self.policy;
        let times = self.recent.entry(key.clone()).or_default();
        while times.front().is_some_and(|t| now.saturating_duration_since(*t) > p.window) {
            times.pop_front();
        }
        if times.len() >= p.max_restarts {
            self.recent.remove(key);
            return Decision::GiveUp;
        }
        let doublings = u32::try_from(times.len()).unwrap_or(u32::MAX).min(16);
        let delay = p.first_delay.saturating_mul(1u32 << doublings).min(p.max_delay);
        times.push_back(now);
        Decision::RestartAfter(delay)
    }

    /// Forgets `key` (its work finished).
    pub fn forget(&mut self, key: &K) {
        self.recent.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RestartPolicy {
        RestartPolicy {
            first_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            max_restarts: 3,
            window: Duration::from_secs(60),
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_then_the_child_is_given_up() {
        let mut r = Restarts::new(policy());
        let t = Instant::now();
        let ms = |n| Decision::RestartAfter(Duration::from_millis(n));
        assert_eq!(r.on_failure(&"job", t), ms(100));
        assert_eq!(r.on_failure(&"job", t), ms(200));
        assert_eq!(r.on_failure(&"job", t), ms(350), "capped");
        assert_eq!(r.on_failure(&"job", t), Decision::GiveUp);
        assert_eq!(r.on_failure(&"job", t), ms(100), "a given-up key starts afresh");
        assert_eq!(r.on_failure(&"other", t), ms(100), "keys are counted apart");
    }

    #[test]
    fn failures_older_than_the_window_are_forgotten() {
        let mut r = Restarts::new(policy());
        let t = Instant::now();
        for _ in 0..3 {
            r.on_failure(&"t", t);
        }
        let later = t + Duration::from_secs(61);
        assert_eq!(r.on_failure(&"t", later), Decision::RestartAfter(Duration::from_millis(100)));
        r.forget(&"t");
        assert!(r.recent.is_empty());
    }
}
