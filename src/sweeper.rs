//! The background sweeper: what expires is deleted by one task, in bounded
//! passes, so that no request pays for it: used nonces every 5 s, ended
//! sessions and idempotency keys past their 24 h every minute, and delivery
//! reports (with finished scheduled sends) and webhook attempt logs past
//! their retention (`--report-retention`, `--event-retention`). Among
//! engines sharing a database, the one holding the `sweeper` lease sweeps.

use crate::auth::brute_force::Clock;
use herald_storage::Store;
use metrics::{counter, gauge};
use std::time::{Duration, Instant};

/// How long records are kept; `None` keeps them for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Reports of sends and their outcomes.
    pub reports: Option<Duration>,
    /// Webhook delivery attempts.
    pub events: Option<Duration>,
}

impl Retention {
    /// Seconds between retention passes: half the shortest retention, so a
    /// record outlives it by at most half again, between 1 s and a minute.
    fn period_s(&self) -> u64 {
        let shortest = [self.reports, self.events].into_iter().flatten().min();
        shortest.map_or(60, |d| (d.as_secs() / 2).clamp(1, 60))
    }
}

/// Starts the sweeper; it runs until `background` stops.
pub(crate) fn spawn(background: &crate::background::Background, store: Store, clock: Clock, retention: Retention) {
    background.spawn(|stop| async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let period = retention.period_s();
        let mut lease = None;
        let mut next_count: Option<Instant> = None;
        for second in 0u64.. {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if store.writable().is_err() {
                continue;
            }
            match store.leases().keep(&mut lease, "sweeper") {
                Ok(true) => {}
                Ok(false) => continue, // another engine sweeps
                Err(e) => {
                    tracing::warn!(error = %e, "could not take the sweeper's lease");
                    continue;
                }
            }
            if second % 5 == 0 {
                if let Err(e) = store.nonces().sweep(clock.now_ms()) {
                    tracing::warn!(error = %e, "nonce sweep failed");
                }
            }
            if second % 60 == 0 {
                if let Err(e) = store.identity().sweep_ended_sessions(herald_storage::now_ms()) {
                    tracing::warn!(error = %e, "ended-session sweep failed");
                }
                match store.idempotency().sweep(herald_storage::now_ms()) {
                    Ok(n) => {
                        counter!("herald_retention_deleted_total", "kind" => "idempotency_key").increment(n as u64)
                    }
                    Err(e) => tracing::warn!(error = %e, "idempotency key sweep failed"),
                }
            }
            if second.checked_rem(period) == Some(0) {
                let store = store.clone();
                let count = next_count.is_none_or(|at| Instant::now() >= at);
                // Many deletions: on a thread of its own rather than a runtime worker.
                let pass = tokio::task::spawn_blocking(move || {
                    retain(&store, retention);
                    count.then(|| count_stored(&store))
                });
                match pass.await {
                    Ok(Some(took)) => next_count = Instant::now().checked_add(count_pause(took, period)),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "retention pass stopped"),
                }
            }
        }
    });
}

/// One retention pass.
fn retain(store: &Store, retention: Retention) {
    let now = herald_storage::now_ms();
    let cutoff = |d: Duration| now.saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    if let Some(keep) = retention.reports {
        match store.sweep_reports(cutoff(keep)) {
            Ok(swept) => {
                counter!("herald_retention_deleted_total", "kind" => "report").increment(swept.reports);
                counter!("herald_retention_deleted_total", "kind" => "outcome").increment(swept.outcomes);
            }
            Err(e) => tracing::warn!(error = %e, "report retention pass failed"),
        }
        match store.schedules().sweep(cutoff(keep)) {
            Ok(n) => counter!("herald_retention_deleted_total", "kind" => "schedule").increment(n),
            Err(e) => tracing::warn!(error = %e, "scheduled-send retention pass failed"),
        }
    }
    if let Some(keep) = retention.events {
        match store.sweep_attempts(cutoff(keep)) {
            Ok(swept) => counter!("herald_retention_deleted_total", "kind" => "attempt").increment(swept.attempts),
            Err(e) => tracing::warn!(error = %e, "webhook attempt retention pass failed"),
        }
    }
}

/// Sets the gauges of what is stored; how long counting took.
fn count_stored(store: &Store) -> Duration {
    let started = Instant::now();
    if let Ok(n) = store.stored_reports() {
        gauge!("herald_stored_reports").set(n as f64);
    }
    if let Ok(n) = store.stored_attempts() {
        gauge!("herald_stored_webhook_attempts").set(n as f64);
    }
    started.elapsed()
}

/// Counting what is stored reads every record (1.6 million reports took
/// 0.17 s of CPU on sled), so on a large store it would become most of a
/// pass. Counts are paced by their own cost instead: the next waits at least
/// [`COUNT_PACE`] times as long as the last took (about 1% of a core), never
/// less than the pass period and never more than a day.
fn count_pause(took: Duration, period_s: u64) -> Duration {
    took.saturating_mul(COUNT_PACE).clamp(Duration::from_secs(period_s), Duration::from_secs(86_400))
}

/// See [`count_pause`].
const COUNT_PACE: u32 = 100;

/// A retention given as a duration (`7d`, `12h`, `30s`, `250ms`); `0` keeps for ever.
pub fn parse_retention(name: &str, text: &str) -> Result<Option<Duration>, String> {
    if text.trim() == "0" {
        return Ok(None);
    }
    match humantime::parse_duration(text.trim()) {
        Ok(d) if d.is_zero() => Ok(None),
        Ok(d) => Ok(Some(d)),
        Err(e) => Err(format!("{name}: not a duration such as 7d, 12h or 30s ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retentions_parse_and_zero_keeps_for_ever() {
        assert_eq!(parse_retention("r", "7d"), Ok(Some(Duration::from_secs(7 * 86_400))));
        assert_eq!(parse_retention("r", "30s"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(parse_retention("r", "0"), Ok(None));
        assert!(parse_retention("report_retention", "soon").unwrap_err().contains("report_retention"));
    }

    #[test]
    fn passes_come_at_half_the_shortest_retention_within_bounds() {
        let r = |reports, events| Retention { reports, events };
        assert_eq!(r(Some(Duration::from_secs(2)), None).period_s(), 1);
        assert_eq!(r(Some(Duration::from_secs(40)), Some(Duration::from_secs(20))).period_s(), 10);
        assert_eq!(r(None, None).period_s(), 60);
        assert_eq!(r(Some(Duration::from_secs(86_400 * 7)), None).period_s(), 60);
    }

    #[test]
    fn a_costly_count_waits_a_hundred_times_its_cost() {
        // A small store is counted at every pass.
        assert_eq!(count_pause(Duration::from_millis(170), 60), Duration::from_secs(60));
        assert_eq!(count_pause(Duration::ZERO, 1), Duration::from_secs(1));
        // One that took 10 s waits 1 000 s.
        assert_eq!(count_pause(Duration::from_secs(10), 60), Duration::from_secs(1_000));
        assert_eq!(count_pause(Duration::MAX, 60), Duration::from_secs(86_400));
    }
}
