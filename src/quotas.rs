//! Per-tenant quotas the operator sets (`PUT /v1/tenants/{t}/limits`,
//! stored by `herald_storage::limits`): interactive sends per second (a token
//! bucket, refused past it), broadcast notifications per second (paced, never
//! refused), broadcasts per UTC day and stored push tokens (refused past them).
//!
//! As the engine's own rate limits (see `rate_limit`), the buckets live in
//! each engine's memory and each rate is divided among the live engines; the
//! day's broadcast count is kept in the database, so engines count together.
//! Refused requests and paced broadcast notifications are counted per tenant
//! and limit (`herald_quota_refused_total`, `herald_quota_throttled_total`).

use crate::error::{ApiError, ApiResult};
use crate::node::Cluster;
use crate::rate_limit::{share, Buckets};
use herald_storage::limits::TenantLimits;
use herald_storage::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Milliseconds in a day: broadcasts are counted per UTC day.
const DAY_MS: u64 = 86_400_000;

/// A stored push token quota past which `Retry-After` still says something:
/// room is made only by removing tokens.
const PUSH_TOKENS_RETRY_S: u64 = 60;

/// The tenants' quotas as this engine applies them.
pub struct Quotas {
    store: Store,
    cluster: Arc<Cluster>,
    interactive: Buckets,
    bulk: Buckets,
    /// Per broadcast (`tenant/id`): its own `maxPerSecond`.
    broadcast: Buckets,
}

impl Quotas {
    /// The quotas stored in `store`, shared among the live engines of `cluster`.
    pub fn new(store: Store, cluster: Arc<Cluster>) -> Quotas {
        Quotas {
            store,
            cluster,
            interactive: Buckets::default(),
            bulk: Buckets::default(),
            broadcast: Buckets::default(),
        }
    }

    fn limits(&self, tenant: &str) -> ApiResult<Option<TenantLimits>> {
        Ok(self.store.limits().get(tenant)?)
    }

    /// Takes one interactive send (one client or one user) of `tenant`: 429
    /// with `Retry-After` past its `interactivePerSecond`.
    pub fn interactive(&self, tenant: &str) -> ApiResult<()> {
        let Some(l) = self.limits(tenant)? else { return Ok(()) };
        let Some(rate) = l.interactive_per_second.filter(|r| *r > 0) else { return Ok(()) };
        let burst = l.interactive_burst.unwrap_or(1).max(1);
        let (rate, burst) = share(f64::from(rate), f64::from(burst), Some(&self.cluster));
        self.interactive.take(tenant, rate, burst, Instant::now()).map_err(|secs| {
            refused(tenant, "interactivePerSecond", format!("{} a second", l.interactive_per_second.unwrap_or(0)), secs)
        })
    }

    /// Counts one broadcast of `tenant` today: 429 with `Retry-After` (until
    /// the next UTC day) past its `broadcastsPerDay`.
    pub fn broadcast(&self, tenant: &str) -> ApiResult<()> {
        let Some(most) = self.limits(tenant)?.and_then(|l| l.broadcasts_per_day) else { return Ok(()) };
        let now = herald_storage::now_ms();
        let day = now / DAY_MS;
        match self.store.limits().count_broadcast(tenant, day, most)? {
            Some(_) => Ok(()),
            None => {
                let next_day_ms = day.saturating_add(1).saturating_mul(DAY_MS);
                let secs = next_day_ms.saturating_sub(now).div_ceil(1000).max(1);
                Err(refused(tenant, "broadcastsPerDay", format!("{most} a day"), secs))
            }
        }
    }

    /// Whether `tenant` may store one more push token (client `client_id`
    /// has none yet): 429 past its `pushTokens`. Replacing a client's token
    /// is always allowed.
    pub fn push_token(&self, tenant: &str, client_id: &str) -> ApiResult<()> {
        let Some(most) = self.limits(tenant)?.and_then(|l| l.push_tokens) else { return Ok(()) };
        if self.store.push_tokens().get(tenant, client_id)?.is_some() {
            return Ok(());
        }
        if self.store.push_tokens().count_of_tenant(tenant)? >= most {
            return Err(refused(tenant, "pushTokens", format!("{most} stored"), PUSH_TOKENS_RETRY_S));
        }
        Ok(())
    }
}

/// 429 naming the limit, counted in `herald_quota_refused_total`.
fn refused(tenant: &str, limit: &'static str, value: String, secs: u64) -> ApiError {
    metrics::counter!("herald_quota_refused_total", labels(tenant, limit)).increment(1);
    ApiError::too_many_requests(format!("over the tenant's limit {limit} ({value}): retry in {secs} s"), secs)
}

/// The labels of a quota series: the limit, and the tenant as the
/// `--metrics-tenant-label` policy shows it.
fn labels(tenant: &str, limit: &'static str) -> Vec<metrics::Label> {
    labelled(herald_actors::telemetry::tenant(tenant).label.clone(), limit)
}

fn labelled(tenant: Option<metrics::Label>, limit: &'static str) -> Vec<metrics::Label> {
    let mut labels = vec![metrics::Label::new("limit", limit)];
    labels.extend(tenant);
    labels
}

/// Registers the quota series of `tenant` for the quotas `limits` sets, at
/// zero until something is refused or slowed, so the "Tenant quotas" panel
/// shows a tenant with quotas before its first refusal (README "Tenant
/// quotas"). Adds zero: what is already counted stays. Under
/// `--metrics-tenant-label=top:N` only a tenant already seen is registered
/// (registering gives labels in the order tenants are seen).
pub fn export_at_zero(tenant: &str, limits: &TenantLimits) {
    use herald_actors::telemetry::{self, TenantLabel};
    let series = match telemetry::tenant_label() {
        TenantLabel::On => Some(telemetry::tenant(tenant)),
        TenantLabel::Off | TenantLabel::Top(_) => telemetry::known(tenant),
    };
    let Some(series) = series else { return };
    let refused = [
        ("interactivePerSecond", limits.interactive_per_second.is_some()),
        ("broadcastsPerDay", limits.broadcasts_per_day.is_some()),
        ("pushTokens", limits.push_tokens.is_some()),
    ];
    for (limit, _) in refused.into_iter().filter(|(_, set)| *set) {
        metrics::counter!("herald_quota_refused_total", labelled(series.label.clone(), limit)).increment(0);
    }
    if limits.bulk_per_second.is_some() {
        let labels = labelled(series.label.clone(), "bulkPerSecond");
        metrics::counter!("herald_quota_throttled_total", labels).increment(0);
    }
}

/// Burst of a paced broadcast: a twentieth of a second's notifications, so
/// the fan-out sends in small groups rather than one timer per notification.
fn pacing_burst(rate: f64) -> f64 {
    (rate / 20.0).max(1.0)
}

impl herald_actors::delivery::Pacer for Quotas {
    fn reserve(&self, tenant: &str, job: &str, max_per_second: Option<u32>, n: usize) -> Duration {
        let now = Instant::now();
        let bulk = match self.limits(tenant) {
            Ok(l) => l.and_then(|l| l.bulk_per_second).filter(|r| *r > 0),
            Err(e) => {
                tracing::warn!(tenant, error = %e, "could not read the tenant's limits: its broadcast goes unpaced");
                None
            }
        };
        let mut wait = Duration::ZERO;
        let mut pace = |buckets: &Buckets, key: &str, rate: u32, limit: &'static str| {
            let rate = f64::from(rate);
            let (rate, burst) = share(rate, pacing_burst(rate), Some(&self.cluster));
            let w = buckets.reserve(key, rate, burst, n, now);
            if !w.is_zero() {
                metrics::counter!("herald_quota_throttled_total", labels(tenant, limit)).increment(n as u64);
            }
            wait = wait.max(w);
        };
        if let Some(rate) = bulk {
            pace(&self.bulk, tenant, rate, "bulkPerSecond");
        }
        if let Some(rate) = max_per_second.filter(|r| *r > 0) {
            pace(&self.broadcast, &format!("{tenant}/{job}"), rate, "maxPerSecond");
        }
        wait
    }
}
