//! What keeps one client from holding the engine: each connection's
//! watchdog closes it when it has sent no complete request head in time or has
//! been idle too long, and each client address may hold only so many
//! connections.
//!
//! hyper's own header timeout covers a request head that has started to
//! arrive; a socket that connects and says nothing, or an HTTP/2 connection
//! that sends its preface and then nothing, is only closed by the watchdog.

use dashmap::DashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The requests of one connection, as its service sees them.
pub(crate) struct Activity {
    opened: Instant,
    requests: AtomicU64,
    open: AtomicUsize,
    /// Milliseconds after `opened` of the last request's start or end.
    last_ms: AtomicU64,
    /// Wakes the watchdog at the first request, whose deadline it then leaves.
    first_request: tokio::sync::Notify,
}

impl Activity {
    pub(crate) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            requests: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
            first_request: tokio::sync::Notify::new(),
        })
    }

    fn touch(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Release);
    }

    /// A request head has arrived; the request is open until the guard drops.
    pub(crate) fn begin(self: &Arc<Self>) -> RequestGuard {
        self.open.fetch_add(1, Ordering::AcqRel);
        self.touch();
        if self.requests.fetch_add(1, Ordering::AcqRel) == 0 {
            self.first_request.notify_one();
        }
        RequestGuard(self.clone())
    }

    /// Whether any request head has arrived on the connection.
    pub(crate) fn has_served(&self) -> bool {
        self.requests.load(Ordering::Acquire) > 0
    }

    /// Resolves when the connection should be closed: no complete request
    /// head within `first`, or no request open for `idle`.
    pub(crate) async fn expired(&self, first: Duration, idle: Duration) {
        loop {
            let now = self.opened.elapsed();
            let deadline = if self.requests.load(Ordering::Acquire) == 0 {
                first
            } else {
                Duration::from_millis(self.last_ms.load(Ordering::Acquire)).saturating_add(idle)
            };
            let open = self.open.load(Ordering::Acquire);
            if open == 0 && now >= deadline {
                return;
            }
            // While a request is open, look again an idle period after now.
            let wake = if open > 0 { now.saturating_add(idle) } else { deadline };
            // `idle` is at most a day (`Limits` clamps it): now plus it fits.
            #[allow(clippy::arithmetic_side_effects)]
            let sleep =
                tokio::time::sleep_until(self.opened.checked_add(wake).unwrap_or_else(|| Instant::now() + idle));
            if self.has_served() {
                sleep.await;
            } else {
                tokio::select! {
                    _ = sleep => {}
                    _ = self.first_request.notified() => {}
                }
            }
        }
    }
}

/// Marks a request open; dropped when its answer is ready.
pub(crate) struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// Open connections per client address.
#[derive(Clone, Default)]
pub(crate) struct PerIp {
    open: Arc<DashMap<IpAddr, usize>>,
}

impl PerIp {
    /// A slot for one more connection from `ip`, or `None` when it holds `cap`
    /// already (0: no cap).
    pub(crate) fn acquire(&self, ip: IpAddr, cap: usize) -> Option<IpSlot> {
        let mut n = self.open.entry(ip).or_insert(0);
        if cap > 0 && *n >= cap {
            return None;
        }
        *n = n.saturating_add(1);
        Some(IpSlot { per_ip: self.clone(), ip })
    }
}

/// One connection's share of its address's cap, given back on drop.
pub(crate) struct IpSlot {
    per_ip: PerIp,
    ip: IpAddr,
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        self.per_ip.open.remove_if_mut(&self.ip, |_, n| {
            *n = n.saturating_sub(1);
            *n == 0
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_its_cap_and_gets_slots_back() {
        let per_ip = PerIp::default();
        let ip: IpAddr = [127, 0, 0, 1].into();
        let a = per_ip.acquire(ip, 2).unwrap();
        let _b = per_ip.acquire(ip, 2).unwrap();
        assert!(per_ip.acquire(ip, 2).is_none());
        assert!(per_ip.acquire([127, 0, 0, 2].into(), 2).is_some(), "another address is not affected");
        drop(a);
        assert!(per_ip.acquire(ip, 2).is_some());
        assert!(per_ip.acquire(ip, 0).is_some(), "0 is no cap");
    }

    #[test]
    fn slots_of_a_quiet_address_are_forgotten() {
        let per_ip = PerIp::default();
        drop(per_ip.acquire([10, 0, 0, 1].into(), 5).unwrap());
        assert!(per_ip.open.is_empty());
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// Runs `expired(first, idle)` in the background.
    fn watch(a: &Arc<Activity>, first: Duration, idle: Duration) -> tokio::task::JoinHandle<()> {
        let a = a.clone();
        tokio::spawn(async move { a.expired(first, idle).await })
    }

    #[tokio::test]
    async fn a_silent_connection_expires_after_the_first_deadline() {
        let a = Activity::new();
        let t = Instant::now();
        a.expired(MS(200), MS(60_000)).await;
        assert!(t.elapsed() >= MS(200) && t.elapsed() < MS(5_000), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn the_first_request_ends_the_first_deadline() {
        let a = Activity::new();
        let t = Instant::now();
        let closer = watch(&a, MS(60_000), MS(300));
        tokio::time::sleep(MS(100)).await;
        drop(a.begin());
        closer.await.unwrap();
        assert!(t.elapsed() >= MS(400) && t.elapsed() < MS(5_000), "idle after the request: {:?}", t.elapsed());
    }

    #[tokio::test]
    async fn an_open_request_keeps_the_connection_and_idleness_ends_it() {
        let a = Activity::new();
        let guard = a.begin();
        let closer = watch(&a, MS(100), MS(200));
        tokio::time::sleep(MS(1_000)).await;
        assert!(!closer.is_finished(), "a request in progress is never cut by the idle timer");
        let t = Instant::now();
        drop(guard);
        closer.await.unwrap();
        assert!(t.elapsed() >= MS(200) && t.elapsed() < MS(5_000), "an idle period after the end: {:?}", t.elapsed());
    }
}
