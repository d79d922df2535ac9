//! Per-tenant quotas the operator sets, and the day's broadcast count they
//! are checked against.
//!
//! Every send reads its tenant's limits, so each engine caches them; a write
//! drops this engine's entry and tells the others (see `coherence`), which
//! drop theirs within milliseconds.

use crate::keys::{key, Key};
use crate::store::{get, Store};
use crate::{Result, Tx};
use dashmap::DashMap;
use serde::{Deserialize, Serialize};

/// A tenant's quotas; `None`: no limit of that kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantLimits {
    /// One-client and one-user sends per second (a token bucket).
    pub interactive_per_second: Option<u32>,
    /// Sends the interactive bucket holds: how many may come at once.
    pub interactive_burst: Option<u32>,
    /// Broadcast notifications per second: broadcasts are paced to it.
    pub bulk_per_second: Option<u32>,
    /// Broadcasts accepted per UTC day.
    pub broadcasts_per_day: Option<u32>,
    /// Push tokens stored at most: registrations of new ones past it are refused.
    pub push_tokens: Option<u64>,
    /// Last change, ms since the epoch.
    pub updated_ms: u64,
}

/// The broadcasts a tenant was accepted on one UTC day.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayCount {
    /// Days since the Unix epoch (UTC).
    pub day: u64,
    /// Broadcasts accepted that day.
    pub count: u32,
}

/// What each engine caches of the tenants' limits (`None`: none set).
#[derive(Default)]
pub(crate) struct LimitsCache(DashMap<String, Option<TenantLimits>>);

impl LimitsCache {
    /// Drops a tenant's entry: read again on next use.
    pub(crate) fn forget(&self, tenant: &str) {
        self.0.remove(tenant);
    }

    /// Drops every entry (a notification may have been missed).
    pub(crate) fn forget_all(&self) {
        self.0.clear();
    }
}

/// Tenant quotas: reads (cached) and writes.
pub struct Limits<'a>(&'a Store);

impl Store {
    /// The tenants' quotas.
    pub fn limits(&self) -> Limits<'_> {
        Limits(self)
    }
}

fn limits_key(tenant: &str) -> Key {
    key(&[tenant, "limits"])
}

fn day_key(tenant: &str) -> Key {
    key(&[tenant, "broadcasts"])
}

impl Limits<'_> {
    /// The tenant's limits (cached; see the module doc); `None` when none are set.
    pub fn get(&self, tenant: &str) -> Result<Option<TenantLimits>> {
        let cache = &self.0.inner.limits;
        if let Some(hit) = cache.0.get(tenant) {
            return Ok(hit.clone());
        }
        let stored: Option<TenantLimits> = get(&self.0.trees()?.limits, &limits_key(tenant))?;
        cache.0.insert(tenant.to_string(), stored.clone());
        Ok(stored)
    }

    /// Replaces the tenant's limits (`None` removes them), durably, and
    /// drops every engine's cached copy.
    pub fn set(&self, tenant: &str, limits: Option<&TenantLimits>) -> Result<()> {
        self.0.transact(|tx| match limits {
            Some(l) => tx.put(&tx.t.limits, &limits_key(tenant), l),
            None => tx.remove(&tx.t.limits, &limits_key(tenant)).map(drop),
        })?;
        self.0.inner.limits.forget(tenant);
        self.0.publish(crate::coherence::Change::Limits(tenant));
        Ok(())
    }

    /// Counts one more broadcast of `tenant` on `day` (days since the epoch)
    /// unless `most` were counted that day already: answers the count with
    /// it, or `None` when refused. One transaction, so engines sharing the
    /// database count together.
    pub fn count_broadcast(&self, tenant: &str, day: u64, most: u32) -> Result<Option<u32>> {
        self.0.transact(|tx| tx.count_broadcast(tenant, day, most))
    }

    /// The broadcasts counted on `day` (0 when none).
    pub fn broadcasts_on(&self, tenant: &str, day: u64) -> Result<u32> {
        let stored: Option<DayCount> = get(&self.0.trees()?.limits, &day_key(tenant))?;
        Ok(stored.filter(|c| c.day == day).map_or(0, |c| c.count))
    }
}

impl Tx<'_> {
    /// See [`Limits::count_broadcast`]; one record per tenant, reset each day.
    pub fn count_broadcast(&self, tenant: &str, day: u64, most: u32) -> Result<Option<u32>> {
        let k = day_key(tenant);
        let stored: Option<DayCount> = self.get(&self.t.limits, &k)?;
        let count = stored.filter(|c| c.day == day).map_or(0, |c| c.count);
        if count >= most {
            return Ok(None);
        }
        let next = DayCount { day, count: count.saturating_add(1) };
        self.put(&self.t.limits, &k, &next)?;
        Ok(Some(next.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_round_trip_and_broadcasts_are_counted_per_day() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        assert_eq!(store.limits().get("t").unwrap(), None);
        let l = TenantLimits { interactive_per_second: Some(100), broadcasts_per_day: Some(2), ..Default::default() };
        store.limits().set("t", Some(&l)).unwrap();
        assert_eq!(store.limits().get("t").unwrap(), Some(l.clone()), "the cache was dropped on write");
        assert_eq!(store.limits().get("u").unwrap(), None, "another tenant's are its own");
        assert_eq!(store.limits().count_broadcast("t", 10, 2).unwrap(), Some(1));
        assert_eq!(store.limits().count_broadcast("t", 10, 2).unwrap(), Some(2));
        assert_eq!(store.limits().count_broadcast("t", 10, 2).unwrap(), None, "the third of the day is refused");
        assert_eq!(store.limits().count_broadcast("u", 10, 2).unwrap(), Some(1));
        assert_eq!(store.limits().broadcasts_on("t", 10).unwrap(), 2);
        assert_eq!(store.limits().count_broadcast("t", 11, 2).unwrap(), Some(1), "a new day starts at 0");
        store.limits().set("t", None).unwrap();
        assert_eq!(store.limits().get("t").unwrap(), None);
    }
}
