//! Leases: how engines sharing a database agree on which one runs a piece of
//! work that must run once (a broadcast's partition, a webhook's deliveries,
//! the sweeper's pass).
//!
//! A lease has a holder (the engine's node id), an expiry and an epoch that
//! grows with every change of holder. The holder renews, with one heartbeat
//! ([`Leases::heartbeat`]), every lease some part of it still holds a
//! [`Lease`] value of: work that ended without letting its lease go (its
//! actor died) stops being renewed, and the lease expires. Another engine
//! may then take it. An engine that was paused past its lease and
//! wakes still believes it holds it: every write it makes under the lease
//! names the lease and epoch it holds (a `Fence`) and is refused with
//! [`Error::Fenced`] once the lease has moved on.
//!
//! On PostgreSQL leases are rows whose expiry the database's clock sets
//! (`pg/leases.rs`). On sled one engine owns the data directory, so leases
//! live in its memory: a lease held by a previous run of the engine is free.

use crate::databases::Engine;
use crate::{Error, Result, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A lease this engine holds: writes under it carry its fence. The
/// heartbeat renews it for as long as a clone of it is alive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// What the lease is for: `part/<tenant>/<job>/<n>`, `webhook/<tenant>/<id>`...
    pub name: String,
    /// The epoch this engine acquired it at.
    pub epoch: u64,
    /// Dropped with the last clone: the heartbeat stops renewing the lease.
    pub alive: Arc<()>,
}

/// What a write under a lease checks: the lease, its holder and epoch.
#[derive(Clone, Debug)]
pub(crate) struct Fence {
    pub(crate) name: String,
    pub(crate) holder: String,
    pub(crate) epoch: u64,
}

/// A change to a lease row made together with record writes.
#[derive(Clone, Debug)]
pub(crate) enum LeaseOp {
    /// Create the lease free, or free it if parked and unheld: any engine may claim it.
    Offer(String),
    /// Create or set the lease parked: nobody claims it until it is offered.
    Park(String),
    /// Free the lease, whoever holds it (the writer's own, under its fence).
    Release(String),
    /// Delete the lease (its work is done).
    Remove(String),
}

/// Leases of this store's engine.
pub struct Leases<'a>(&'a Store);

impl Store {
    /// Leases, held under this engine's node id.
    pub fn leases(&self) -> Leases<'_> {
        Leases(self)
    }

    /// The node id this engine holds leases under.
    pub fn node_id(&self) -> &str {
        &self.inner.opts.node_id
    }

    pub(crate) fn fence(&self, lease: &Lease) -> Fence {
        Fence { name: lease.name.clone(), holder: self.node_id().to_string(), epoch: lease.epoch }
    }
}

impl Store {
    /// Applies `writes` and the lease changes `ops` together, refused with
    /// [`Error::Fenced`] unless `fence` still holds (see [`Fence`]).
    pub(crate) fn write_fenced(
        &self,
        fence: Option<&Fence>,
        writes: Vec<crate::kv::Write<'_>>,
        ops: Vec<LeaseOp>,
    ) -> Result<()> {
        let dbs = self.trees()?;
        match &dbs.engine {
            Engine::Pg(_) => dbs.write_leased(fence.cloned(), writes, ops),
            Engine::Sled { .. } => self.inner.local_leases.fenced(fence, &ops, || match writes.is_empty() {
                true => Ok(()),
                false => dbs.write_all(writes),
            }),
        }
    }
}

impl Leases<'_> {
    fn ttl(&self) -> Duration {
        self.0.inner.opts.lease_ttl
    }

    /// Takes the lease `name` if nobody holds it (or its holder let it expire).
    pub fn acquire(&self, name: &str) -> Result<Option<Lease>> {
        let (node, ttl) = (self.0.node_id(), self.ttl());
        let epoch = match &self.0.trees()?.engine {
            Engine::Pg(pg) => pg.lease_acquire(name, node, ttl)?,
            Engine::Sled { .. } => self.0.inner.local_leases.acquire(name, node, ttl),
        };
        Ok(epoch.map(|epoch| self.held(name.to_string(), epoch)))
    }

    /// Claims the first free lease whose name starts with `prefix` (in name
    /// order), passing over those another engine is claiming at this moment.
    pub fn claim(&self, prefix: &str) -> Result<Option<Lease>> {
        self.claim_avoiding(prefix, &[])
    }

    /// [`Leases::claim`], passing over the names that start with any of
    /// `avoid` too (to share partitions out among tenants).
    pub fn claim_avoiding(&self, prefix: &str, avoid: &[String]) -> Result<Option<Lease>> {
        let (node, ttl) = (self.0.node_id(), self.ttl());
        let claimed = match &self.0.trees()?.engine {
            Engine::Pg(pg) => pg.lease_claim(prefix, avoid, node, ttl)?,
            Engine::Sled { .. } => self.0.inner.local_leases.claim(prefix, avoid, node, ttl),
        };
        Ok(claimed.map(|(name, epoch)| self.held(name, epoch)))
    }

    /// A lease just taken, renewed from now on while a clone of it lives.
    fn held(&self, name: String, epoch: u64) -> Lease {
        let alive = Arc::new(());
        self.0.inner.renewals.lock().unwrap_or_else(|p| p.into_inner()).insert(name.clone(), Arc::downgrade(&alive));
        Lease { name, epoch, alive }
    }

    /// The names of the leases some part of this engine still holds.
    fn alive(&self) -> Vec<String> {
        let mut renewals = self.0.inner.renewals.lock().unwrap_or_else(|p| p.into_inner());
        renewals.retain(|_, token| token.strong_count() > 0);
        renewals.keys().cloned().collect()
    }

    /// How many leases under `prefix` this engine holds (partitions it runs).
    pub fn held_here(&self, prefix: &str) -> usize {
        self.held_names(prefix).len()
    }

    /// The names of the leases under `prefix` this engine holds.
    pub fn held_names(&self, prefix: &str) -> Vec<String> {
        self.alive().into_iter().filter(|n| n.starts_with(prefix)).collect()
    }

    /// Renews every lease this engine holds a [`Lease`] of; answers how many.
    pub fn heartbeat(&self) -> Result<u64> {
        let (node, ttl, names) = (self.0.node_id(), self.ttl(), self.alive());
        match &self.0.trees()?.engine {
            Engine::Pg(pg) => pg.lease_heartbeat(node, &names, ttl),
            Engine::Sled { .. } => Ok(self.0.inner.local_leases.heartbeat(node, &names, ttl)),
        }
    }

    /// Frees every lease held under this engine's node id: called at start,
    /// when they can only be a dead predecessor's.
    pub fn free_all_mine(&self) -> Result<u64> {
        match &self.0.trees()?.engine {
            Engine::Pg(pg) => pg.lease_free_all(self.0.node_id()),
            Engine::Sled { .. } => Ok(self.0.inner.local_leases.free_all(self.0.node_id())),
        }
    }

    /// Keeps `held` (a lease named `name` this engine may hold) or acquires
    /// it: whether this engine holds it now. Work that a node keeps doing
    /// for as long as it lives (the sweeper) or while it has some (a
    /// webhook's deliveries) checks in with this before each round.
    pub fn keep(&self, held: &mut Option<Lease>, name: &str) -> Result<bool> {
        if let Some(l) = held.take() {
            if self.holds(&l)? {
                *held = Some(l);
                return Ok(true);
            }
        }
        *held = self.acquire(name)?;
        Ok(held.is_some())
    }

    /// Frees a lease this engine holds (nothing if it moved on meanwhile).
    pub fn release(&self, lease: &Lease) -> Result<()> {
        self.change(lease, LeaseOp::Release(lease.name.clone()))
    }

    /// Whether this engine still holds `lease` at its epoch.
    pub fn holds(&self, lease: &Lease) -> Result<bool> {
        match self.0.write_fenced(Some(&self.0.fence(lease)), Vec::new(), Vec::new()) {
            Ok(()) => Ok(true),
            Err(Error::Fenced(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Unexpired leases whose name starts with `prefix`: `node/` counts the live engines.
    pub fn count_live(&self, prefix: &str) -> Result<u64> {
        match &self.0.trees()?.engine {
            Engine::Pg(pg) => pg.lease_count(prefix),
            Engine::Sled { .. } => Ok(self.0.inner.local_leases.count_live(prefix)),
        }
    }

    /// The node id holding `name` now, if anyone (operators, tests).
    pub fn holder(&self, name: &str) -> Result<Option<String>> {
        match &self.0.trees()?.engine {
            Engine::Pg(pg) => pg.lease_holder(name),
            Engine::Sled { .. } => Ok(self.0.inner.local_leases.holder(name)),
        }
    }

    /// Applies `op` under `lease`'s fence.
    fn change(&self, lease: &Lease, op: LeaseOp) -> Result<()> {
        self.0.write_fenced(Some(&self.0.fence(lease)), Vec::new(), vec![op])
    }
}

/// When a lease of the sled backend expires.
#[derive(Clone, Copy, Debug)]
enum Until {
    /// Free: never held, or released.
    Free,
    At(Instant),
    /// Nobody claims it until it is offered.
    Parked,
}

#[derive(Clone, Debug)]
pub(crate) struct Local {
    holder: Option<String>,
    epoch: u64,
    until: Until,
}

impl Local {
    fn free(&self, now: Instant) -> bool {
        match self.until {
            Until::Free => true,
            Until::At(t) => t <= now,
            Until::Parked => false,
        }
    }
}

/// The leases of an engine on sled, in memory (one engine owns the data directory).
///
/// Lock order: this table, then sled's transaction lock. A fenced write
/// holds the table across its sled transaction, so that no lease changes
/// between its check and its write. sled's transaction lock is one lock
/// for the whole process: a transaction waiting for the table while holding
/// it would stop every sled write, so [`Store::transact`] takes the table
/// before its transaction starts and checks fences against it ([`LocalTable`]).
#[derive(Default)]
pub(crate) struct LocalLeases(Mutex<HashMap<String, Local>>);

/// The lease table, held (see [`LocalLeases`]).
pub(crate) type LocalTable<'a> = std::sync::MutexGuard<'a, HashMap<String, Local>>;

impl LocalLeases {
    /// Takes the table (see the lock order above).
    pub(crate) fn map(&self) -> LocalTable<'_> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn acquire(&self, name: &str, node: &str, ttl: Duration) -> Option<u64> {
        let now = Instant::now();
        let mut map = self.map();
        let l = map.entry(name.to_string()).or_insert(Local { holder: None, epoch: 0, until: Until::Free });
        if !l.free(now) {
            return None;
        }
        take(l, node, now, ttl);
        Some(l.epoch)
    }

    fn claim(&self, prefix: &str, avoid: &[String], node: &str, ttl: Duration) -> Option<(String, u64)> {
        let now = Instant::now();
        let mut map = self.map();
        let claimable = |n: &str| n.starts_with(prefix) && !avoid.iter().any(|a| n.starts_with(a.as_str()));
        let name = map.iter().filter(|(n, l)| claimable(n) && l.free(now)).map(|(n, _)| n).min()?.clone();
        let l = map.get_mut(&name)?;
        take(l, node, now, ttl);
        Some((name, l.epoch))
    }

    fn heartbeat(&self, node: &str, names: &[String], ttl: Duration) -> u64 {
        let now = Instant::now();
        let mut held = 0u64;
        let mut map = self.map();
        for name in names {
            let Some(l) = map.get_mut(name).filter(|l| l.holder.as_deref() == Some(node)) else { continue };
            if let Until::At(_) = l.until {
                l.until = Until::At(later(now, ttl));
                held = held.saturating_add(1);
            }
        }
        held
    }

    fn free_all(&self, node: &str) -> u64 {
        let mut freed = 0u64;
        for l in self.map().values_mut().filter(|l| l.holder.as_deref() == Some(node)) {
            l.holder = None;
            l.until = Until::Free;
            freed = freed.saturating_add(1);
        }
        freed
    }

    fn count_live(&self, prefix: &str) -> u64 {
        let now = Instant::now();
        let live = self
            .map()
            .iter()
            .filter(|(n, l)| n.starts_with(prefix) && matches!(l.until, Until::At(t) if t > now))
            .count();
        u64::try_from(live).unwrap_or(u64::MAX)
    }

    fn holder(&self, name: &str) -> Option<String> {
        let now = Instant::now();
        self.map().get(name).filter(|l| !l.free(now) && l.holder.is_some()).and_then(|l| l.holder.clone())
    }

    /// Runs `write` if `fence` holds, then applies `ops`, all under the
    /// lock: no lease changes hands in between.
    pub(crate) fn fenced<T>(
        &self,
        fence: Option<&Fence>,
        ops: &[LeaseOp],
        write: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let mut map = self.map();
        if let Some(f) = fence {
            check(&map, f)?;
        }
        let done = write()?;
        for op in ops {
            match op {
                LeaseOp::Offer(name) => {
                    let l = map.entry(name.clone()).or_insert(Local { holder: None, epoch: 0, until: Until::Free });
                    if l.holder.is_none() {
                        l.until = Until::Free;
                    }
                }
                LeaseOp::Park(name) => {
                    let l = map.entry(name.clone()).or_insert(Local { holder: None, epoch: 0, until: Until::Parked });
                    l.holder = None;
                    l.until = Until::Parked;
                }
                LeaseOp::Release(name) => {
                    if let Some(l) = map.get_mut(name) {
                        l.holder = None;
                        l.until = Until::Free;
                    }
                }
                LeaseOp::Remove(name) => {
                    map.remove(name);
                }
            }
        }
        Ok(done)
    }
}

/// Refuses with [`Error::Fenced`] unless `fence` holds in `table`.
pub(crate) fn check(table: &HashMap<String, Local>, fence: &Fence) -> Result<()> {
    let held = table
        .get(&fence.name)
        .is_some_and(|l| l.holder.as_deref() == Some(fence.holder.as_str()) && l.epoch == fence.epoch);
    if held {
        Ok(())
    } else {
        Err(Error::Fenced(fence.name.clone()))
    }
}

fn take(l: &mut Local, node: &str, now: Instant, ttl: Duration) {
    l.holder = Some(node.to_string());
    l.epoch = l.epoch.saturating_add(1);
    l.until = Until::At(later(now, ttl));
}

fn later(now: Instant, ttl: Duration) -> Instant {
    now.checked_add(ttl).unwrap_or(now)
}
