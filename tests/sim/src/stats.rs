//! Counters of what each simulator received, and their serialisable snapshot ([`Stats`]).
//!
//! Everything on the send path is an atomic or a sharded map, so counting costs a few
//! relaxed atomic operations per request; only rejections take a (short) lock.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};

use crate::util::now_ms;

/// What the four simulators received (`GET /stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The APNs simulator.
    pub apns: ProviderStats,
    /// The FCM simulator.
    pub fcm: ProviderStats,
    /// The HMS simulator.
    pub hms: ProviderStats,
    /// The Web Push simulator (a notification per subscription; `accepted` once decrypted).
    #[serde(default)]
    pub webpush: ProviderStats,
}

/// What one simulator received since start or the last reset.
///
/// `accepted` and `rejected` count notifications: one per APNs or FCM send request, one per
/// token of an HMS request (which may carry several). OAuth requests count in `requests`
/// and `token_grants` only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderStats {
    /// HTTP requests received (all endpoints, every outcome).
    pub requests: u64,
    /// Notifications accepted (a success answer).
    pub accepted: u64,
    /// Notifications refused (any error answer, injected faults included).
    pub rejected: u64,
    /// Rejections by reason: APNs `reason`, FCM `errorCode` (or `status`), HMS `code`.
    pub by_reason: BTreeMap<String, u64>,
    /// Answers by HTTP status (all endpoints), e.g. `{"200": 10, "410": 1}`.
    pub by_status: BTreeMap<String, u64>,
    /// When the first notification was accepted (ms since the Unix epoch).
    pub first_accepted_ms: Option<u64>,
    /// When the last notification was accepted (ms since the Unix epoch).
    pub last_accepted_ms: Option<u64>,
    /// Distinct tokens accepted (see `GET /accepted`).
    pub distinct_tokens: u64,
    /// TLS connections accepted.
    pub connections: u64,
    /// TLS connections open now (not reset by `reset`).
    pub open_connections: u64,
    /// OAuth access tokens granted (FCM, HMS).
    pub token_grants: u64,
    /// Provider JWTs verified (APNs bearer tokens, once per connection and token thanks to
    /// the cache; FCM assertions).
    pub jwt_verifications: u64,
    /// Connections shut down with GOAWAY by the `goaway_after_streams` fault.
    pub goaways: u64,
    /// Connections dropped by the `reset_connection_rate` fault.
    pub connection_resets: u64,
}

const STATUS_SLOTS: usize = 600;

/// The live counters of one simulator.
pub(crate) struct Counters {
    requests: AtomicU64,
    accepted: AtomicU64,
    rejected: AtomicU64,
    first_accepted_ms: AtomicU64,
    last_accepted_ms: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) open_connections: AtomicU64,
    pub(crate) token_grants: AtomicU64,
    pub(crate) jwt_verifications: AtomicU64,
    pub(crate) goaways: AtomicU64,
    pub(crate) connection_resets: AtomicU64,
    by_status: Box<[AtomicU64]>,
    by_reason: Mutex<HashMap<String, u64>>,
    tokens: DashMap<Box<str>, u64>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            requests: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            first_accepted_ms: AtomicU64::new(0),
            last_accepted_ms: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open_connections: AtomicU64::new(0),
            token_grants: AtomicU64::new(0),
            jwt_verifications: AtomicU64::new(0),
            goaways: AtomicU64::new(0),
            connection_resets: AtomicU64::new(0),
            by_status: (0..STATUS_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            by_reason: Mutex::new(HashMap::new()),
            tokens: DashMap::new(),
        }
    }
}

fn inc(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn request(&self) {
        inc(&self.requests);
    }

    pub(crate) fn status(&self, status: u16) {
        if let Some(slot) = self.by_status.get(status as usize) {
            inc(slot);
        }
    }

    /// Counts one accepted notification to `token`.
    pub(crate) fn accept(&self, token: &str) {
        inc(&self.accepted);
        let now = now_ms();
        let _ = self.first_accepted_ms.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        self.last_accepted_ms.fetch_max(now, Ordering::Relaxed);
        if let Some(mut n) = self.tokens.get_mut(token) {
            *n = n.saturating_add(1);
            return;
        }
        let mut n = self.tokens.entry(token.into()).or_insert(0);
        *n = n.saturating_add(1);
    }

    /// Counts `n` rejected notifications for `reason`.
    pub(crate) fn reject_n(&self, reason: &str, n: u64) {
        self.rejected.fetch_add(n, Ordering::Relaxed);
        let mut map = self.by_reason.lock().unwrap_or_else(|p| p.into_inner());
        match map.get_mut(reason) {
            Some(c) => *c = c.saturating_add(n),
            None => {
                map.insert(reason.to_owned(), n);
            }
        }
    }

    /// Counts one rejected notification for `reason`.
    pub(crate) fn reject(&self, reason: &str) {
        self.reject_n(reason, 1);
    }

    /// Every accepted token with how often it was accepted.
    pub(crate) fn accepted_tokens(&self) -> HashMap<String, u64> {
        self.tokens.iter().map(|e| (e.key().to_string(), *e.value())).collect()
    }

    pub(crate) fn snapshot(&self) -> ProviderStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let nonzero = |v: u64| (v != 0).then_some(v);
        ProviderStats {
            requests: get(&self.requests),
            accepted: get(&self.accepted),
            rejected: get(&self.rejected),
            by_reason: self
                .by_reason
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            by_status: self
                .by_status
                .iter()
                .enumerate()
                .filter_map(|(code, n)| nonzero(get(n)).map(|n| (code.to_string(), n)))
                .collect(),
            first_accepted_ms: nonzero(get(&self.first_accepted_ms)),
            last_accepted_ms: nonzero(get(&self.last_accepted_ms)),
            distinct_tokens: self.tokens.len() as u64,
            connections: get(&self.connections),
            open_connections: get(&self.open_connections),
            token_grants: get(&self.token_grants),
            jwt_verifications: get(&self.jwt_verifications),
            goaways: get(&self.goaways),
            connection_resets: get(&self.connection_resets),
        }
    }

    /// Zeroes everything but the open-connections gauge.
    pub(crate) fn reset(&self) {
        for a in [
            &self.requests,
            &self.accepted,
            &self.rejected,
            &self.first_accepted_ms,
            &self.last_accepted_ms,
            &self.connections,
            &self.token_grants,
            &self.jwt_verifications,
            &self.goaways,
            &self.connection_resets,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        for a in self.by_status.iter() {
            a.store(0, Ordering::Relaxed);
        }
        self.by_reason.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.tokens.clear();
    }
}
