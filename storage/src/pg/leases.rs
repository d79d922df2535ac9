//! Leases on PostgreSQL: rows of `herald_leases` (migration 0002), their
//! expiry always computed by the database's clock (`now()`), so engines on
//! machines whose clocks disagree still agree on who holds what.

use super::{fault, pool_error, Pg};
use crate::leases::{Fence, LeaseOp};
use crate::Result;
use std::time::Duration;
use tokio_postgres::GenericClient;

/// The lease is free when it expired: now, or at `-infinity` (never held or released).
const ACQUIRE: &str = "INSERT INTO herald_leases (name, holder, epoch, expires_at) \
     VALUES ($1, $2, 1, now() + $3::float8 * interval '1 millisecond') \
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, epoch = herald_leases.epoch + 1, \
     expires_at = EXCLUDED.expires_at WHERE herald_leases.expires_at < now() RETURNING epoch";

/// The first free lease under a prefix and under none of the prefixes
/// `$4` (`LIKE ANY` escapes with the default backslash), skipping those
/// another engine is claiming or writing under at this moment.
const CLAIM: &str = "UPDATE herald_leases SET holder = $2, epoch = epoch + 1, \
     expires_at = now() + $3::float8 * interval '1 millisecond' \
     WHERE name = (SELECT name FROM herald_leases WHERE name LIKE $1 ESCAPE '\\' AND expires_at < now() \
     AND NOT (name LIKE ANY($4::text[])) \
     ORDER BY name LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING name, epoch";

const HEARTBEAT: &str = "UPDATE herald_leases SET expires_at = now() + $3::float8 * interval '1 millisecond' \
     WHERE holder = $1 AND name = ANY($2) AND expires_at <> 'infinity'";

/// Holds the lease row until the transaction ends, so that no engine takes
/// the lease over between this check and the commit.
pub(crate) const FENCE: &str = "SELECT 1 FROM herald_leases WHERE name = $1 AND holder = $2 AND epoch = $3 FOR SHARE";

const LIVE: &str = "SELECT count(*) FROM herald_leases WHERE name LIKE $1 ESCAPE '\\' AND expires_at > now()";

const FREE_MINE: &str = "UPDATE herald_leases SET holder = NULL, expires_at = '-infinity' WHERE holder = $1";

const HOLDER: &str = "SELECT holder FROM herald_leases WHERE name = $1 AND expires_at > now()";

impl Pg {
    /// Takes the lease `name` if it is free or expired: its new epoch.
    pub(crate) fn lease_acquire(&self, name: &str, holder: &str, ttl: Duration) -> Result<Option<u64>> {
        let (pool, name, holder, ttl) = (self.pool.clone(), name.to_string(), holder.to_string(), millis(ttl));
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let row = c.query_opt(ACQUIRE, &[&name, &holder, &ttl]).await.map_err(fault)?;
            row.map(|r| r.try_get::<_, i64>(0).map(epoch).map_err(fault)).transpose()
        })
    }

    /// Claims the first free lease whose name starts with `prefix`.
    pub(crate) fn lease_claim(
        &self,
        prefix: &str,
        avoid: &[String],
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<(String, u64)>> {
        let (pool, pattern, holder, ttl) = (self.pool.clone(), like(prefix), holder.to_string(), millis(ttl));
        let avoid: Vec<String> = avoid.iter().map(|a| like(a)).collect();
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let row = c.query_opt(CLAIM, &[&pattern, &holder, &ttl, &avoid]).await.map_err(fault)?;
            row.map(|r| Ok((r.try_get(0).map_err(fault)?, epoch(r.try_get(1).map_err(fault)?)))).transpose()
        })
    }

    /// Extends the leases among `names` that `holder` holds; how many.
    pub(crate) fn lease_heartbeat(&self, holder: &str, names: &[String], ttl: Duration) -> Result<u64> {
        let (pool, holder, names, ttl) = (self.pool.clone(), holder.to_string(), names.to_vec(), millis(ttl));
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            c.execute(HEARTBEAT, &[&holder, &names, &ttl]).await.map_err(fault)
        })
    }

    /// Frees every lease `holder` holds (an engine starting again under
    /// its predecessor's name: that one is dead).
    pub(crate) fn lease_free_all(&self, holder: &str) -> Result<u64> {
        let (pool, holder) = (self.pool.clone(), holder.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            c.execute(FREE_MINE, &[&holder]).await.map_err(fault)
        })
    }

    /// Unexpired leases under `prefix`.
    pub(crate) fn lease_count(&self, prefix: &str) -> Result<u64> {
        let (pool, pattern) = (self.pool.clone(), like(prefix));
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let row = c.query_one(LIVE, &[&pattern]).await.map_err(fault)?;
            Ok(u64::try_from(row.try_get::<_, i64>(0).map_err(fault)?).unwrap_or(0))
        })
    }

    /// Who holds `name` now, if anyone.
    pub(crate) fn lease_holder(&self, name: &str) -> Result<Option<String>> {
        let (pool, name) = (self.pool.clone(), name.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            let row = c.query_opt(HOLDER, &[&name]).await.map_err(fault)?;
            Ok(row.and_then(|r| r.try_get::<_, Option<String>>(0).ok().flatten()))
        })
    }
}

/// Whether `fence` still holds, inside the transaction of `c`.
pub(crate) async fn check_fence(
    c: &impl GenericClient,
    fence: &Fence,
) -> std::result::Result<bool, tokio_postgres::Error> {
    let epoch = i64::try_from(fence.epoch).unwrap_or(i64::MAX);
    Ok(c.query_opt(FENCE, &[&fence.name, &fence.holder, &epoch]).await?.is_some())
}

/// Applies `op` inside the transaction of `c`.
pub(crate) async fn apply(c: &impl GenericClient, op: &LeaseOp) -> std::result::Result<u64, tokio_postgres::Error> {
    match op {
        LeaseOp::Offer(name) => {
            c.execute(
                "INSERT INTO herald_leases (name, holder, epoch, expires_at) VALUES ($1, NULL, 0, '-infinity') \
                 ON CONFLICT (name) DO UPDATE SET expires_at = '-infinity' WHERE herald_leases.holder IS NULL",
                &[name],
            )
            .await
        }
        LeaseOp::Park(name) => {
            c.execute(
                "INSERT INTO herald_leases (name, holder, epoch, expires_at) VALUES ($1, NULL, 0, 'infinity') \
                 ON CONFLICT (name) DO UPDATE SET holder = NULL, expires_at = 'infinity'",
                &[name],
            )
            .await
        }
        LeaseOp::Release(name) => {
            c.execute("UPDATE herald_leases SET holder = NULL, expires_at = '-infinity' WHERE name = $1", &[name]).await
        }
        LeaseOp::Remove(name) => c.execute("DELETE FROM herald_leases WHERE name = $1", &[name]).await,
    }
}

/// A lease's lifetime in milliseconds, as the float that multiplies an interval.
fn millis(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

fn epoch(e: i64) -> u64 {
    u64::try_from(e).unwrap_or(0)
}

/// A `LIKE` pattern matching the names that start with `prefix`.
fn like(prefix: &str) -> String {
    let mut p = String::with_capacity(prefix.len().saturating_add(1));
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}
