//! A provider connection pool: a few HTTP/2 connections to one provider for one
//! credential set, each carrying up to the peer's stream limit.
//!
//! Interactive sends (one client, one user) have a connection of their own,
//! opened on the first one: a request behind a thousand bulk streams on a
//! shared connection waits for the provider to answer them first (tens of
//! milliseconds during a broadcast), on its own connection it does not. When
//! that connection is full or cannot be opened, interactive sends share the
//! bulk connections, where bulk work (broadcasts) may fill a connection only
//! up to its limit minus a reserve that interactive sends may use. So a
//! broadcast that saturates the pool never makes a payment notification wait.

use crate::providers::WireRequest;
use crate::transport::{Connection, Reply, Target, TransportError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Which traffic a request is: interactive sends have their own connection and the
/// reserve of the shared ones, bulk sends (broadcasts) the rest. Indexes per-lane metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// A send to one client or to one user's clients, with a caller waiting.
    Interactive = 0,
    /// A broadcast's sends: they never fill a shared connection's interactive reserve.
    Bulk = 1,
}

impl Lane {
    /// The metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Interactive => "interactive",
            Lane::Bulk => "bulk",
        }
    }
}

/// Tuning of one pool.
#[derive(Clone, Debug)]
pub struct PoolLimits {
    /// Connections opened at most.
    pub max_connections: usize,
    /// Streams per connection at most, whatever the peer allows.
    pub max_streams: usize,
    /// Time for one request (connect excluded).
    pub request_timeout: Duration,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits { max_connections: 4, max_streams: 1000, request_timeout: Duration::from_secs(15) }
    }
}

/// The HTTP/2 connections of one provider channel (one app's credentials), opened on
/// demand up to [`PoolLimits::max_connections`], each carrying many streams.
pub struct Pool {
    target: Target,
    limits: PoolLimits,
    /// `apns`, `fcm` or `hms`: the metrics label.
    provider: &'static str,
    /// Connections both lanes share (at most `max_connections`).
    conns: Mutex<Vec<Arc<Connection>>>,
    /// The interactive lane's own connection, besides those.
    interactive: Mutex<Option<Arc<Connection>>>,
    /// Serialise connection opening, so a burst opens one connection, not fifty.
    opening: tokio::sync::Mutex<()>,
    opening_interactive: tokio::sync::Mutex<()>,
    /// Waiters for a free stream, per lane: a freed stream wakes one
    /// interactive waiter if there is one, else one bulk waiter (not all of
    /// them, which under a broadcast would be thousands of wake-ups per answer).
    freed_interactive: Notify,
    freed_bulk: Notify,
    waiting_interactive: AtomicUsize,
    /// Metric handles, registered once: the hot path only adds.
    streams_gauge: metrics::Gauge,
    connections_gauge: metrics::Gauge,
    /// Provider round trips, per lane.
    request_seconds: [metrics::Histogram; 2],
}

/// A stream slot on one connection, given back on drop.
struct Lease<'a> {
    pool: &'a Pool,
    conn: Arc<Connection>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.conn.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.pool.streams_gauge.decrement(1.0);
        if self.pool.waiting_interactive.load(Ordering::Acquire) > 0 {
            self.pool.freed_interactive.notify_one();
        } else {
            self.pool.freed_bulk.notify_one();
        }
    }
}

impl Drop for Pool {
    /// A replaced pool (new credentials) takes its connections out of the gauge.
    fn drop(&mut self) {
        let shared = self.conns.get_mut().map(|c| c.len()).unwrap_or(0);
        let own = self.interactive.get_mut().map(|c| c.is_some() as usize).unwrap_or(0);
        self.connections_gauge.decrement(shared.saturating_add(own) as f64);
    }
}

impl Pool {
    pub(crate) fn new(provider: &'static str, target: Target, limits: PoolLimits) -> Pool {
        Pool {
            target,
            limits,
            provider,
            conns: Mutex::new(Vec::new()),
            interactive: Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
            opening_interactive: tokio::sync::Mutex::new(()),
            freed_interactive: Notify::new(),
            freed_bulk: Notify::new(),
            waiting_interactive: AtomicUsize::new(0),
            streams_gauge: metrics::gauge!("herald_pool_streams_in_flight", "provider" => provider),
            connections_gauge: metrics::gauge!("herald_pool_connections", "provider" => provider),
            request_seconds: [Lane::Interactive, Lane::Bulk].map(|lane| {
                metrics::histogram!("herald_provider_request_duration_seconds", "provider" => provider, "lane" => lane.as_str())
            }),
        }
    }

    /// Sends one request on a free stream, opening a connection when all are busy.
    pub async fn post(&self, lane: Lane, req: WireRequest) -> Result<Reply, TransportError> {
        let own = match lane {
            Lane::Interactive => self.interactive_stream().await?,
            Lane::Bulk => None,
        };
        let lease = match own {
            Some(lease) => lease,
            None => self.acquire(lane).await?,
        };
        let started = std::time::Instant::now();
        let result = lease.conn.post(req, self.limits.request_timeout).await;
        self.request_seconds[lane as usize].record(started.elapsed().as_secs_f64());
        result
    }

    /// Connections currently open.
    pub fn connections(&self) -> usize {
        let own = self.interactive.lock().map(|c| c.is_some() as usize).unwrap_or(0);
        self.conns.lock().map(|c| c.len()).unwrap_or(0).saturating_add(own)
    }

    /// A stream on the interactive lane's own connection, opening it when
    /// missing or dead; `None` when it is full, being opened, or cannot be
    /// opened while shared connections work (a burst shares those meanwhile
    /// rather than wait).
    async fn interactive_stream(&self) -> Result<Option<Lease<'_>>, TransportError> {
        if let Some(lease) = self.own_stream()? {
            return Ok(Some(lease));
        }
        let Ok(_guard) = self.opening_interactive.try_lock() else { return Ok(None) };
        if self.interactive.lock().map_err(poisoned)?.as_ref().is_some_and(|c| c.is_alive()) {
            return self.own_stream(); // opened while this one looked
        }
        match Connection::open(&self.target).await {
            Ok(conn) => {
                let replaced = self.interactive.lock().map_err(poisoned)?.replace(conn);
                if replaced.is_none() {
                    self.connections_gauge.increment(1.0);
                }
                self.own_stream()
            }
            // With no shared connection either, a second attempt would only
            // double the wait for the same error.
            Err(e) if !self.conns.lock().map_err(poisoned)?.iter().any(|c| c.is_alive()) => Err(e),
            Err(e) => {
                tracing::warn!(provider = self.provider, error = %e, "could not open the interactive connection");
                Ok(None)
            }
        }
    }

    fn own_stream(&self) -> Result<Option<Lease<'_>>, TransportError> {
        let own = self.interactive.lock().map_err(poisoned)?;
        let Some(conn) = own.as_ref().filter(|c| c.is_alive()) else { return Ok(None) };
        if conn.in_flight.load(Ordering::Acquire) >= conn.capacity(self.limits.max_streams) {
            return Ok(None);
        }
        conn.in_flight.fetch_add(1, Ordering::AcqRel);
        self.streams_gauge.increment(1.0);
        Ok(Some(Lease { pool: self, conn: conn.clone() }))
    }

    async fn acquire(&self, lane: Lane) -> Result<Lease<'_>, TransportError> {
        loop {
            let notify = match lane {
                Lane::Interactive => &self.freed_interactive,
                Lane::Bulk => &self.freed_bulk,
            };
            let freed = notify.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let can_open = {
                let mut conns = self.conns.lock().map_err(poisoned)?;
                let before = conns.len();
                conns.retain(|c| c.is_alive());
                if conns.len() != before {
                    self.connections_gauge.decrement(before.saturating_sub(conns.len()) as f64);
                }
                if let Some(conn) = self.free_stream(&conns, lane) {
                    return Ok(Lease { pool: self, conn });
                }
                conns.len() < self.limits.max_connections
            };
            if can_open {
                if let Ok(_guard) = self.opening.try_lock() {
                    let conn = Connection::open(&self.target).await;
                    let mut conns = self.conns.lock().map_err(poisoned)?;
                    match conn {
                        Ok(c) => {
                            self.connections_gauge.increment(1.0);
                            conns.push(c);
                            continue;
                        }
                        Err(e) if conns.is_empty() => return Err(e),
                        Err(e) => {
                            tracing::warn!(provider = self.provider, error = %e, "could not open another connection")
                        }
                    }
                }
            }
            // Wait for a stream to free up.
            if lane == Lane::Interactive {
                self.waiting_interactive.fetch_add(1, Ordering::AcqRel);
            }
            // The timeout also picks up a connection another task opened, and GOAWAYs.
            let _ = tokio::time::timeout(Duration::from_millis(20), freed).await;
            if lane == Lane::Interactive {
                self.waiting_interactive.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    fn free_stream(&self, conns: &[Arc<Connection>], lane: Lane) -> Option<Arc<Connection>> {
        // Fill the least loaded connection first, so load spreads once several are open.
        let mut best: Option<(&Arc<Connection>, usize)> = None;
        for c in conns {
            let cap = c.capacity(self.limits.max_streams);
            let limit = match lane {
                Lane::Interactive => cap,
                Lane::Bulk => cap.saturating_sub((cap / 10).max(1).min(cap.saturating_sub(1))),
            };
            let used = c.in_flight.load(Ordering::Acquire);
            if used < limit && best.is_none_or(|(_, u)| used < u) {
                best = Some((c, used));
            }
        }
        let (conn, _) = best?;
        conn.in_flight.fetch_add(1, Ordering::AcqRel);
        self.streams_gauge.increment(1.0);
        Some(conn.clone())
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> TransportError {
    TransportError::Config("pool lock poisoned".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every request's future carries its pool's `post`, and a broadcast
    /// keeps a thousand of them in flight: opening a connection (TLS and
    /// HTTP/2 handshake state, ~2.9 KiB in a release build), which `post`
    /// awaits only when no stream is free, must be boxed, not inlined.
    #[test]
    fn a_request_does_not_carry_a_connection_opening() {
        let tls = crate::transport::tls_config(b"", None).unwrap();
        let target = Target { authority: http::uri::Authority::from_static("127.0.0.1:9"), tls, public_only: false };
        let pool = Pool::new("apns", target, PoolLimits::default());
        let request = WireRequest {
            authority: None,
            path: "/".into(),
            headers: http::HeaderMap::new(),
            body: bytes::Bytes::new(),
        };
        let open = std::mem::size_of_val(&Connection::open(&pool.target));
        let post = std::mem::size_of_val(&pool.post(Lane::Bulk, request));
        assert!(open <= 512, "opening a connection takes {open} bytes in its caller's future");
        // 2 920 and 3 296 bytes before the box, in test and release builds alike.
        assert!(post <= 2048, "a request's post takes {post} bytes");
    }
}
